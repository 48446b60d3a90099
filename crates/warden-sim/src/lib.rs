//! `warden-sim`: a deterministic simulation of a Warden cluster on turmoil.
//! The production server (`warden_server::run_injected`) and client
//! (`warden_client::Client`) run unchanged; the simulator injects the
//! network, each host's clock, each machine's disk and openraft's seed, so
//! one seed replays one run. See docs/testing.md.
//!
//! # Map
//!
//! - [`run`]: one run: cluster, workload, faults, healing phase, checkers.
//! - [`faults`]: the fault schedule (partitions, one-way partitions, an
//!   isolated leader, crash/restart, pauses, slow links).
//! - [`scenarios`]: named scenarios, each after a public bug, with their
//!   default lengths.
//! - [`history`]: the observer every node's state machine calls after each
//!   apply: records it and calls the checkers in a fixed order.
//! - [`checkers`]: one checker per property of docs/semantics.md (S1–S8,
//!   the fence, L2), each in its own file.
//! - [`world`]: what several of the above share: the record of a run
//!   ([`world::History`]), host names and timings, the clients' bookkeeping.
//! - [`bugs`]: the `--inject-bug` switches ([`Bugs`], [`BUG_NAMES`]).
//! - [`env`]: the injected network (tonic over turmoil TCP), clocks (own
//!   origin, own rate within ρ) and disks (unsynced writes lost on a crash).
//!
//! The runner (`src/main.rs`): `--seed-start S --seeds N` runs seeds
//! S..S+N−1 and exits 0 only if every checker passed on every seed, printing
//! the replay command of each failing seed.
//!
//! # Layers
//!
//! Imports run one way, from a module to the ones below it, never up or
//! sideways (`crate::` paths included):
//!
//! ```text
//! main.rs, lib.rs
//! run
//! faults          (reads the scenario; asks history's observer for the
//!                  leader, tells it of a crash)
//! scenarios
//! history
//! checkers/
//! world
//! bugs, env
//! ```

pub mod bugs;
pub mod checkers;
pub mod env;
pub mod faults;
pub mod history;
pub mod run;
pub mod scenarios;
pub mod world;

pub use bugs::{Bugs, BUG_NAMES};
pub use run::{run, Outcome, RunConfig};
pub use scenarios::Scenario;
