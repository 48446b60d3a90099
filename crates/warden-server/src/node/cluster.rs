//! The leader's view of the cluster (`cluster status`) and this node's
//! readiness (`/readyz`), read from openraft's metrics.

use std::time::Duration;

use openraft::async_runtime::WatchReceiver as _;
use openraft::{Instant as _, RaftMetrics, ServerState};

use super::{Node, ReadError};
use crate::raft::LeaderContact;
use crate::types::TypeConfig;

/// One member as the leader sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemberView {
    /// Its node id.
    pub id: u64,
    /// Its client address.
    pub addr: String,
    /// Its peer address when it serves the peer service apart
    /// (`--peer-listen`); None: the client address serves both.
    pub peer_addr: Option<String>,
    /// leader, follower, learner, candidate, unreachable or unknown.
    pub role: &'static str,
    /// Its applied (for itself) or matched (for a peer) log index.
    pub applied_index: u64,
    /// Milliseconds since the leader last heard from it (0 for itself).
    pub last_contact_ms: u64,
    /// Whether the leader has heard from it at all.
    pub contacted: bool,
    /// Its term as far as this node knows (0: unknown).
    pub term: u64,
    /// Entries it lags behind the leader's last log index.
    pub lag_entries: u64,
}

/// The cluster as this node sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterView {
    /// The committed cluster id.
    pub cluster_id: String,
    /// This node.
    pub node_id: u64,
    /// The leader it knows (0: none).
    pub leader_id: u64,
    /// Its current term.
    pub term: u64,
    /// The highest log index it knows is committed.
    pub commit_index: u64,
    /// Its last log index.
    pub last_log_index: u64,
    /// Every member of the membership it knows.
    pub members: Vec<MemberView>,
}

/// The `/readyz` body.
#[derive(Debug, serde::Serialize, PartialEq, Eq)]
pub struct Readiness {
    /// True when the node serves as a caught-up member.
    pub ready: bool,
    /// This node.
    pub node_id: u64,
    /// The leader it knows (0 = none).
    pub leader_id: u64,
    /// Its current term.
    pub term: u64,
    /// The highest log index it knows is committed.
    pub commit_index: u64,
    /// Its last applied log index.
    pub applied_index: u64,
    /// Why it is not ready ("" when ready).
    pub reason: String,
}

impl Readiness {
    /// A node that has not bootstrapped: alive, not ready.
    pub fn bootstrapping(node_id: u64) -> Readiness {
        Readiness {
            ready: false,
            node_id,
            leader_id: 0,
            term: 0,
            commit_index: 0,
            applied_index: 0,
            reason: "bootstrapping: not part of a cluster yet".into(),
        }
    }
}

/// (term, lag in entries) of member `id` for `cluster status`: the leader's
/// own term for itself and for members that acknowledged it recently (they
/// accepted this term); lag = the leader's last log index − `matched`.
pub fn term_and_lag(m: &RaftMetrics<TypeConfig>, id: u64, role: &str, matched: u64) -> (u64, u64) {
    let last = m.last_log_index.unwrap_or(0);
    if m.current_leader != Some(m.id) {
        // Not the leader: only its own term is known here.
        return (if id == m.id { m.current_term } else { 0 }, 0);
    }
    let term = if id == m.id || (role != "unreachable" && m.replication.is_some()) {
        m.current_term
    } else {
        0
    };
    let lag = if id == m.id {
        0
    } else {
        last.saturating_sub(matched)
    };
    (term, lag)
}

impl Node {
    /// The cluster as this node sees it: from the leader (which has the
    /// replication progress), or from a node that knows no leader. A
    /// follower that knows the leader answers [`ReadError::NotLeader`].
    pub fn cluster_view(&self) -> Result<ClusterView, ReadError> {
        // A copy: the borrow is a read lock on the watch, and `leader()`
        // below borrows again (rare call; not worth holding the lock).
        let m = self.raft.metrics().borrow_watched().clone();
        if m.current_leader.is_some() && m.current_leader != Some(self.id) {
            return Err(ReadError::NotLeader {
                leader: self.leader(),
            });
        }
        let timing = &self.config.timing;
        let membership = m.membership_config.membership().clone();
        let voters: Vec<u64> = membership.voter_ids().collect();
        let mut members = Vec::new();
        for (id, n) in membership.nodes() {
            let role = if Some(*id) == m.current_leader {
                "leader"
            } else if !voters.contains(id) {
                "learner"
            } else if *id == self.id && m.state == ServerState::Candidate {
                "candidate"
            } else if m.current_leader.is_some() || *id == self.id {
                "follower"
            } else {
                "unknown"
            };
            let applied_index = if *id == self.id {
                m.last_applied.as_ref().map(|l| l.index()).unwrap_or(0)
            } else {
                m.replication
                    .as_ref()
                    .and_then(|r| r.get(id).cloned().flatten())
                    .map(|l| l.index())
                    .unwrap_or(0)
            };
            let last_contact = if *id == self.id {
                Some(0)
            } else {
                m.heartbeat
                    .as_ref()
                    .and_then(|h| h.get(id).cloned().flatten())
                    .map(|t| t.elapsed().as_millis() as u64)
            };
            // A member the leader has not heard from within two election
            // timeouts is shown as unreachable.
            let unreachable_after_ms = 2 * timing.election_timeout_max_ms;
            let role = match last_contact {
                Some(ms) if ms <= unreachable_after_ms => role,
                _ if m.state == ServerState::Leader => "unreachable",
                _ => role,
            };
            let (term, lag_entries) = term_and_lag(&m, *id, role, applied_index);
            members.push(MemberView {
                id: *id,
                addr: n.client_addr().to_string(),
                peer_addr: n.peer_addr().map(str::to_string),
                role,
                applied_index,
                last_contact_ms: last_contact.unwrap_or(0),
                contacted: last_contact.is_some(),
                term,
                lag_entries,
            });
        }
        Ok(ClusterView {
            cluster_id: self.cluster_id.clone(),
            node_id: self.id,
            leader_id: m.current_leader.unwrap_or(0),
            term: m.current_term,
            commit_index: m.local_committed.as_ref().map(|l| l.index()).unwrap_or(0),
            last_log_index: m.last_log_index.unwrap_or(0),
            members,
        })
    }

    /// This node's readiness: bootstrapped, Raft running, a member of the
    /// membership it knows, a leader known, (unless leader) an AppendEntries
    /// from it within 2 × the maximum election timeout (`contact`), and
    /// everything it knows committed applied.
    pub fn readiness(&self, contact: &LeaderContact) -> Readiness {
        let node_id = self.id;
        let rx = self.raft.metrics();
        let m = rx.borrow_watched();
        let commit_index = m.local_committed.as_ref().map(|l| l.index()).unwrap_or(0);
        let applied_index = m.last_applied.as_ref().map(|l| l.index()).unwrap_or(0);
        let leader_id = m.current_leader.unwrap_or(0);
        let contact_limit = Duration::from_millis(2 * self.config.timing.election_timeout_max_ms);
        let reason = if m.running_state.is_err() {
            "raft stopped".to_string()
        } else if m.membership_config.get_node(&node_id).is_none() {
            format!("node {node_id} is not a member (removed or replaced)")
        } else if m.current_leader.is_none() {
            "no known leader".to_string()
        } else if m.state != ServerState::Leader
            && contact.since().is_none_or(|since| since > contact_limit)
        {
            format!(
                "no AppendEntries from leader {leader_id} within {} ms",
                contact_limit.as_millis()
            )
        } else if applied_index < commit_index {
            format!("applied index {applied_index} is behind the commit index {commit_index}")
        } else {
            String::new()
        };
        Readiness {
            ready: reason.is_empty(),
            node_id,
            leader_id,
            term: m.current_term,
            commit_index,
            applied_index,
            reason,
        }
    }

    /// On shutdown, a leader hands leadership to the most up-to-date voter and
    /// waits (bounded by `leader_transfer_timeout_ms`) until another node leads,
    /// so a rolling restart loses nothing.
    pub async fn transfer_leadership(&self) {
        // The metrics borrow is a read lock on the watch: release it before any
        // await, or openraft cannot publish the leader change we wait for.
        let target = {
            let rx = self.raft.metrics();
            let m = rx.borrow_watched();
            if m.current_leader != Some(self.id) {
                return;
            }
            m.replication.as_ref().and_then(|r| {
                r.iter()
                    .filter(|(id, _)| **id != self.id)
                    .max_by_key(|(_, l)| l.as_ref().map(|l| l.index()))
                    .map(|(id, _)| *id)
            })
        };
        let Some(target) = target else { return };
        tracing::info!(target, "transferring leadership before exit");
        if self.raft.trigger().transfer_leader(target).await.is_err() {
            return;
        }
        let mut rx = self.raft.metrics();
        let me = self.id;
        let wait = async {
            loop {
                let leader = rx.borrow_watched().current_leader;
                if leader.is_some() && leader != Some(me) {
                    return;
                }
                if rx.changed().await.is_err() {
                    return;
                }
            }
        };
        let _ = tokio::time::timeout(
            Duration::from_millis(self.config.timing.leader_transfer_timeout_ms),
            wait,
        )
        .await;
    }
}
