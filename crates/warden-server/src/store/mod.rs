//! Durable storage: the Raft log (a write-ahead file folded into redb) and
//! vote in redb, and the in-memory state machine (the lock table).
//!
//! What is on disk when each method returns:
//! - [`LogStore`] `append`: returns once the entries are readable (an
//!   in-memory tail) and queued for the log-writer thread, which writes every
//!   queued append as one record of the log's write-ahead file and fsyncs it
//!   (one `write` and one `fdatasync` per group: group commit, see
//!   [`crate::store::wal`]) and only then fires each IO callback, so Raft never
//!   counts this node towards a quorum for an entry it could lose (S3). Every
//!   4 MiB of records the file is folded into redb in one transaction and
//!   starts over; opening the data dir folds whatever it holds. A write error
//!   reaches openraft through the callback and is fatal for the node. On an
//!   injected disk (the simulator) the write is committed inline before
//!   `append` returns, on a write-ahead file of the injected disk.
//! - `save_vote`, `truncate_after`, `purge`: committed (fsync'd) before
//!   returning (truncate and purge through the writer's queue, in order:
//!   the write-ahead file is folded first, then they run in redb, so the
//!   file only ever holds appends).
//! - `save_committed`: written without an fsync (see the method).
//! - [`StateMachineStore`] keeps the table in memory; applying needs no fsync.
//!   Snapshots are written to redb (fsync'd, in rows of at most 1 MiB, on
//!   tokio's blocking pool) when built or installed; on start the last one is
//!   loaded and openraft re-applies the committed log after it. A build holds
//!   the machine's lock only to record the applied log id, the membership
//!   and the lease deadlines; the table at that id is rebuilt off the lock
//!   from the stored snapshot and the log after it (`replay.rs`).
//!
//! Every entry carries its proposing leader's cluster time inside it
//! ([`warden_core::types::Stamp`]); nothing about time is node-local here.
//! The log store keeps the largest stamp it has seen (uncommitted entries
//! included), which a new leader's clock starts from (docs/semantics.md
//! "Time", [`crate::cluster_time`]).
//!
//! # Files
//!
//! - `db.rs`: the redb database of a data dir ([`Db`]): open (fold the
//!   write-ahead file, refuse an older layout), meta values, seeding a
//!   restored data dir; [`DiskFactory`] for an injected disk.
//! - `rows.rs`: the log row codec.
//! - `wal.rs`: the log's write-ahead file (format and recovery).
//! - `log_writer.rs`: group commit into the write-ahead file, folds into
//!   redb, the in-memory tail.
//! - `log_store.rs`: [`LogStore`], openraft's `RaftLogStorage`.
//! - `state_machine.rs`: [`StateMachineStore`], openraft's
//!   `RaftStateMachine` over [`Machine`] (the lock table).
//! - `replay.rs`: a snapshot's table rebuilt from the stored snapshot and
//!   the log after it (the one apply call both paths share).
//! - `snapshot_store.rs`: the stored snapshot's layout (a head and 1 MiB
//!   chunks).
//! - `log_growth.rs`: [`LogGrowth`], log bytes appended since the last
//!   snapshot and its size (the snapshot rule's inputs).

use std::io;

use redb::TableDefinition;
use serde::{Deserialize, Serialize};

mod db;
mod log_growth;
mod log_store;
mod log_writer;
mod replay;
mod rows;
mod snapshot_store;
mod state_machine;
mod wal;

#[cfg(test)]
mod attack_tests;
#[cfg(test)]
mod cluster_time_tests;
#[cfg(test)]
mod suite;
#[cfg(test)]
mod test_support;

pub use db::{Db, DiskFactory};
pub use log_growth::LogGrowth;
pub use log_store::LogStore;
pub use log_store::MaxStamp;
pub use log_writer::WAL_FILE;
pub use state_machine::{Machine, RemovedWaiters, Shared, StateMachineStore, MAX_REMOVED_WAITERS};

/// Log index → one row: the entry (see `rows.rs`).
pub(super) const LOG: TableDefinition<u64, &[u8]> = TableDefinition::new("log");
pub(super) const META: TableDefinition<&str, &[u8]> = TableDefinition::new("meta");

pub(super) const KEY_VOTE: &str = "vote";
pub(super) const KEY_COMMITTED: &str = "committed";
pub(super) const KEY_PURGED: &str = "last_purged";
/// The node id this data dir belongs to.
pub const KEY_NODE_ID: &str = "node_id";
/// The committed cluster id (docs/semantics.md "Membership").
pub const KEY_CLUSTER_ID: &str = "cluster_id";
/// A cluster id proposed in bootstrap phase 1, not yet committed.
pub const KEY_PREPARED_CLUSTER_ID: &str = "prepared_cluster_id";

pub(super) fn io_err(e: impl std::fmt::Display) -> io::Error {
    io::Error::other(e.to_string())
}

pub(super) fn encode<T: Serialize>(v: &T) -> Result<Vec<u8>, io::Error> {
    postcard::to_allocvec(v).map_err(io_err)
}

pub(super) fn decode<'a, T: Deserialize<'a>>(b: &'a [u8]) -> Result<T, io::Error> {
    postcard::from_bytes(b).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e.to_string()))
}

#[derive(Serialize, Deserialize)]
/// A snapshot as the meta table keeps it.
pub(super) struct StoredSnapshot {
    pub(super) meta: crate::types::SnapshotMeta,
    pub(super) data: Vec<u8>,
}
