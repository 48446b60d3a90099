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
//!   lease and wait changes) for waiting clients, watchers and metrics.
//! * [`snapshot`]: [`LockTable::to_snapshot`] / [`LockTable::from_snapshot`],
//!   a version byte then postcard; byte-identical for equal tables.
//! * [`expiry`]: cluster time in the table: every instant (a lease's end,
//!   a wait's deadline, a lock-delay's and a max-hold's end), the one
//!   liveness predicate every decision uses, the sweep that ends due items
//!   (a work bound), and L4's promote.
//! * [`values`]: published values (`Proclaim`, elections), their bounds
//!   and the owner's value quotas.
//! * [`restore`]: the transformation of a backup's table for a new cluster
//!   (token counter above every old token plus a gap, full TTLs, lock-delay
//!   on every held resource).
//!
//! # The path of a command
//!
//! 1. The server builds a [`types::Command`] from a client request, wraps it
//!    in [`types::Command::Authorized`] with the caller's principal, and
//!    checks it with [`validate::command`]; the leader refuses what its
//!    table already refuses ([`LockTable::refusal_before_log`]).
//! 2. The leader stamps the entry with its cluster time
//!    ([`types::LogEntry`]: [`types::Stamp`]) and openraft commits it.
//! 3. Every node calls [`LockTable::apply`] with the entry's index, the
//!    leader id from its log id and the stamp. Apply moves cluster time,
//!    ends due items (at most [`expiry::MAX_SWEEP_PER_ENTRY`]), validates
//!    again, consults the outcome table, checks permission, ownership and
//!    quotas (wrapped commands), ends what has ended on the resources the
//!    command touches, executes, and returns an [`Applied`]: the
//!    [`types::Response`] for the client and the [`Effect`]s.
//! 4. The leader proposes a [`types::Command::Tick`] while
//!    [`LockTable::next_instant_ms`] is due on its clock, and after a second
//!    without an entry while the table holds any instant.
//!
//! # What this crate does not do
//!
//! No IO, no networking, no Raft (it knows nothing of openraft), no clock
//! (time arrives only as the stamp of an entry), no
//! randomness, no threads, no `HashMap` (iteration order must be the same on
//! every replica). Apply never panics on any input: bad input gets a
//! [`types::CommandError`] and changes nothing.

#![warn(missing_docs)]

pub mod auth;
pub mod effect;
pub mod expiry;
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
pub mod values;

pub use auth::{AuthTable, QuotaField, RoleView, Target, Usage};
pub use effect::{Effect, FreeReason, LeaseEndReason, WaiterRemovedReason};
pub use expiry::{Promotion, MAX_SWEEP_PER_ENTRY};
pub use max_hold::{MaxHold, MaxHoldView};
pub use multi::{MultiLock, MultiLockView};
pub use query::{ClientView, HolderView, LockDelayView, OutcomeStats, TokenState, WaiterView};
pub use resource::{DelayScope, Grant, LockDelay, ResourceState, Waiter};
pub use snapshot::{SnapshotError, SNAPSHOT_VERSION};
pub use table::{Applied, LeaseRecord, LockTable};

#[cfg(test)]
mod tests;
