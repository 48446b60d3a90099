//! Warden's lock table: the pure, deterministic core of a replicated lock
//! service.
//!
//! The contract is docs/semantics.md (properties S1–S8, L1–L4 and the "Time"
//! section); doc comments here cite those numbers.
//!
//! # Modules
//!
//! * [`types`]: ids, the versioned [`types::LogEntry`], every
//!   [`types::Command`] and [`types::Response`]. This is the log and snapshot
//!   format: append-only enums, postcard-encoded.
//! * [`limits`]: the documented bound on every name, duration and table that
//!   input can grow.
//! * [`validate`]: checks a command against [`limits`] and returns a typed
//!   error naming the field. The server calls it before proposing; apply calls
//!   it again.
//! * [`resource`]: one resource's state ([`ResourceState`]: its kind, its
//!   exclusive or shared grants, FIFO waiters, lock-delay and what the delay
//!   withholds) and the rule that says which mode it admits now.
//! * [`multi`]: multi-locks, several mutexes granted together in one entry
//!   or not at all, and what ends them (docs/semantics.md "Multi-locks").
//! * [`table`]: the replicated [`LockTable`] (leases and their owners,
//!   resources, the fencing-token and lease-id
//!   counters, the auth table, the audit trails) and [`LockTable::apply`],
//!   the state machine.
//! * [`query`]: read-only views of the table (holders, waiters, lock-delays,
//!   counters, permission checks, lease owners, roles, quotas and usage) and
//!   [`LockTable::check_invariants`].
//! * [`auth`]: identities: principals, roles and their grants, permissions
//!   and prefix matching, the cluster-wide limits and per-principal quotas,
//!   and the rules apply follows for [`types::Command::Authorized`] (order of
//!   checks, lease ownership, quotas, upgrade behaviour).
//! * [`outcome`]: the replicated, bounded outcome table, keyed by
//!   (principal, client id), that gives client commands exactly-once effect
//!   (S7).
//! * [`effect`]: the [`Effect`]s an applied entry reports (grants, frees,
//!   lease and wait changes) for the deadline table and for watchers.
//! * [`snapshot`]: [`LockTable::to_snapshot`] / [`LockTable::from_snapshot`],
//!   a version byte then postcard; byte-identical for equal tables.
//! * [`duty_clock`]: the replicated duty clock that the leader advances a
//!   few times each checkpoint interval; remaining TTLs, waits and
//!   lock-delays are derived from it rather than named in the log.
//! * [`deadline`]: the node-local, non-replicated [`Deadlines`] that turns
//!   durations into instants on the node's own clock (passed in, never read)
//!   and tells the leader what is due (from a time index: O(log n + due),
//!   `examples/due_bench.rs` measures it) and what to checkpoint.
//! * [`restore`]: the transformation of a backup's table for a new cluster
//!   (token counter above every old token plus a gap, full TTLs, lock-delay
//!   on every held resource).
//!
//! # The path of a command
//!
//! 1. The server builds a [`types::Command`] from a client request, wraps it
//!    in [`types::Command::Authorized`] with the caller's principal (once
//!    every member reads that format), and checks it with
//!    [`validate::command`]. As leader it attaches the due list from
//!    [`Deadlines::due`] to commands that can hand a resource off.
//! 2. openraft commits a [`types::LogEntry::V1`]; every node stamps the entry
//!    when it reaches its local log.
//! 3. Every node calls [`LockTable::apply`] with the entry's index and the
//!    leader id from its log id. Apply removes due leases and waiters (when the
//!    leader ids match), validates again, consults the outcome table, checks
//!    permission, ownership and quotas (wrapped commands), executes, and
//!    returns an [`Applied`]: the [`types::Response`] for the client and the
//!    [`Effect`]s.
//! 4. Every node feeds the effects to its [`Deadlines`] with the entry's stamp
//!    and the apply time. The leader (after its own promotion has applied:
//!    one `Promote`, or `PromoteSlice` entries whose last ends it) asks
//!    [`Deadlines::due`], [`Deadlines::due_lock_delays`] and
//!    [`Deadlines::checkpoint`] (or, once every member reads it, advances
//!    the [`duty_clock`]) what to propose next.
//!
//! # What this crate does not do
//!
//! No IO, no networking, no Raft (it knows nothing of openraft), no clock (all
//! times are passed in as `Duration`s since a node-local origin), no
//! randomness, no threads, no `HashMap` (iteration order must be the same on
//! every replica). Apply never panics on any input: bad input gets a
//! [`types::CommandError`] and changes nothing.

#![warn(missing_docs)]

pub mod auth;
pub mod deadline;
pub mod duty_clock;
pub mod effect;
pub mod limits;
pub mod max_hold;
pub mod multi;
pub mod outcome;
pub mod query;
pub mod resource;
pub mod restore;
pub mod snapshot;
pub mod table;
pub mod types;
pub mod validate;

pub use auth::{AuthTable, QuotaField, RoleView, Target, Usage};
pub use deadline::Deadlines;
pub use duty_clock::DutyClock;
pub use effect::{Effect, FreeReason, LeaseEndReason, WaiterRemovedReason};
pub use max_hold::{MaxHold, MaxHoldView};
pub use multi::{MultiLock, MultiLockView};
pub use query::{ClientView, HolderView, LockDelayView, OutcomeStats, TokenState, WaiterView};
pub use resource::{DelayScope, Grant, LockDelay, ResourceState, Waiter};
pub use snapshot::{SnapshotError, SNAPSHOT_VERSION};
pub use table::{Applied, LeaseRecord, LockTable};

#[cfg(test)]
mod tests;
