//! `warden-sim`: a deterministic simulation of a Warden cluster on turmoil.
//! The production server (`warden_server::run_injected`) and client
//! (`warden_client::Client`) run unchanged; the simulator injects the
//! network, each host's clock, each machine's disk, openraft's seed and,
//! where a TLS handshake would put it, each connection's identity (every
//! run has principals on), so one seed replays one run. See docs/testing.md.
//!
//! # Map
//!
//! - [`run`](mod@run): one run: the cluster, `root` granting every client
//!   principal its role, the scenario's clients, the fault schedule, the
//!   healing phase, the end-of-run checkers; [`RunConfig`], [`Outcome`], the
//!   regression seeds.
//! - [`scenarios`]: the shapes of a run ([`Scenario`]): the random workload,
//!   the same over every lock kind (`kinds`: mutexes, read-write locks,
//!   semaphores) and the named scenarios, each after a public bug, one
//!   function each, with its default length and fault script, listed in one
//!   table.
//! - [`faults`]: the fault schedule (partitions, one-way partitions, an
//!   isolated leader, crash/restart, pauses, slow links): drawn from the
//!   seed or following a scenario's script.
//! - [`history`]: the observer every node's state machine calls after each
//!   apply: records it and calls the checkers in a fixed order.
//! - [`checkers`]: one checker per property of docs/semantics.md (S1–S8,
//!   the fence, L2; for the lock kinds SEMAPHORE, RW and FIFO) and OWNERS (docs/security.md "Leases have owners": no
//!   command of one principal changes another's lease), each in its own file.
//! - [`world`]: what several of the above share: the record of a run
//!   ([`world::History`]), host names and timings, each client host's
//!   principal, the clients' bookkeeping.
//! - [`bugs`]: the `--inject-bug` switches ([`Bugs`], [`BUG_NAMES`]).
//! - [`env`](mod@env): the injected network (tonic over turmoil TCP), the
//!   identity each connection would have after a TLS handshake
//!   ([`env::SimIdentities`]), clocks (own origin, own rate within ρ) and
//!   disks (unsynced writes lost on a crash).
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
//! scenarios/      (names the fault scripts of faults)
//! faults          (asks history's observer for the leader, tells it of a crash)
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
