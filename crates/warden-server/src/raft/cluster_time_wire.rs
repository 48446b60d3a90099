//! Cluster time on the replication path (docs/semantics.md "Time"): every
//! AppendEntries a leader sends, over its `AppendStream` or as a unary call
//! (heartbeats included), carries the leader's cluster time when it sent
//! it ([`TimedAppend`]); a follower keeps the largest it heard from a call
//! it accepted, with its own clock then (`crate::cluster_time`), so a new
//! leader's clock continues from the old one's.

use std::sync::Arc;

use openraft::raft::AppendEntriesRequest;
use serde::{Deserialize, Serialize};
use warden_core::types::LeaderId;

use crate::store::Shared;
use crate::types::{TypeConfig, Vote};

/// An AppendEntries as it travels between peers: the sending leader's
/// cluster time (ms; None while its clock has no base yet) and the request.
#[derive(Serialize, Deserialize)]
pub struct TimedAppend {
    /// The leader's cluster time when it sent the request.
    pub cluster_time_ms: Option<u64>,
    /// The request.
    pub rpc: AppendEntriesRequest<TypeConfig>,
}

/// Where a node's cluster clock lives: its state machine's shared state
/// (None in tests that run a network without one: nothing is sent).
pub type ClusterTimeSource = Option<Arc<Shared>>;

/// Records cluster time `at_ms` heard from the leader of `term` in an
/// accepted call on `shared`'s cluster clock, with this node's clock now.
pub fn heard(shared: &Shared, at_ms: u64, term: u64) {
    shared.cluster_clock.heard(at_ms, term, shared.clock.now());
}

/// The leader a request's vote names.
pub fn leader_of_vote(vote: &Vote) -> LeaderId {
    LeaderId {
        term: vote.leader_id.term,
        node_id: vote.leader_id.node_id,
    }
}

/// `rpc` with the cluster time `source` gives for its leader.
pub fn timed(source: &ClusterTimeSource, rpc: AppendEntriesRequest<TypeConfig>) -> TimedAppend {
    let cluster_time_ms = source.as_ref().and_then(|shared| {
        shared
            .cluster_clock
            .now_ms(leader_of_vote(&rpc.vote), shared.clock.now())
    });
    TimedAppend {
        cluster_time_ms,
        rpc,
    }
}
