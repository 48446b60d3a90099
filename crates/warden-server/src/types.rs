//! Warden's openraft type configuration. Every openraft type the server uses is
//! named here, so an openraft upgrade touches this module and its neighbours
//! (`store`, `network`, `peer`) only.

use std::fmt;

use serde::{Deserialize, Serialize};
use warden_core::types::{LeaderId, LogEntry, Response};

/// The application payload of a Raft log entry: one versioned Warden command.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
#[serde(transparent)]
pub struct Request(pub LogEntry);

impl fmt::Display for Request {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            LogEntry::V1(cmd) => write!(f, "v1:{}", command_name(cmd)),
        }
    }
}

/// A short name for logs.
pub fn command_name(cmd: &warden_core::types::Command) -> &'static str {
    use warden_core::types::Command::*;
    match cmd {
        Acquire(_) => "acquire",
        Release(_) => "release",
        RenewBatch(_) => "renew_batch",
        LeaseGrant(_) => "lease_grant",
        Revoke(_) => "revoke",
        Promote(_) => "promote",
        Checkpoint(_) => "checkpoint",
        Expire(_) => "expire",
        EndLockDelay(_) => "end_lock_delay",
        DropClients(_) => "drop_clients",
        ForceRelease(_) => "force_release",
        Noop => "noop",
        RaiseTokenFloor(_) => "raise_token_floor",
        Proclaim(_) => "proclaim",
        Batch(_) => "batch",
        Authorized(a) => command_name(&a.command),
        AuthChange(_) => "auth_change",
        CancelWait(_) => "cancel_wait",
    }
}

openraft::declare_raft_types!(
    /// Warden's Raft types: u64 node ids, `BasicNode { addr }`, the advanced
    /// leader id (term, node id) so that every log id names its leader.
    pub TypeConfig:
        D = Request,
        R = Response,
        NodeId = u64,
        Node = openraft::BasicNode,
        AsyncRuntime = Rt,
);

/// openraft's runtime: tokio, with openraft's randomness (election timeouts)
/// drawn from a generator seeded per node (`inject::Injected::rng_seed`), so
/// the simulator replays a run from its seed (DEPENDENCIES.md). Every node
/// runs inside `Rt::scope(seed, ..)` (see `run_injected`).
pub type Rt = openraft_rt::deterministic_rng::DeterministicRng<openraft_rt_tokio::TokioRuntime>;

/// Log id.
pub type LogId = openraft::alias::LogIdOf<TypeConfig>;
/// Vote.
pub type Vote = openraft::alias::VoteOf<TypeConfig>;
/// Entry.
pub type Entry = openraft::alias::EntryOf<TypeConfig>;
/// Stored membership.
pub type StoredMembership = openraft::alias::StoredMembershipOf<TypeConfig>;
/// Snapshot meta.
pub type SnapshotMeta = openraft::alias::SnapshotMetaOf<TypeConfig>;
/// Snapshot with Warden's snapshot bytes.
pub type Snapshot = openraft::alias::SnapshotOf<TypeConfig, Vec<u8>>;

/// The leader id (term, node id) inside a log id.
pub fn leader_of(log_id: &LogId) -> LeaderId {
    let l = log_id.committed_leader_id();
    LeaderId {
        term: l.term,
        node_id: l.node_id,
    }
}
