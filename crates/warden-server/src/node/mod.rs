//! A running node: the Raft handle, the shared state machine, and the helpers
//! every service uses (propose, leader lookup, due lists).

pub mod duties;
pub mod membership;
pub mod proposer;
pub mod renew;

use openraft::async_runtime::WatchReceiver as _;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use openraft::errors::{ClientWriteError, RaftError};
use openraft::ServerState;
use tokio::sync::mpsc;
use tonic::Status;
use warden_core::types::{Command, DueList, LeaderId, LogEntry, Response};

use crate::config::ServerConfig;
use crate::node::proposer::{Proposed, Proposer, Sink};
use crate::node::renew::RenewJob;
use crate::raft::Raft;
use crate::services::status::{not_leader, write_error, COMMIT_TIMEOUT_MS};
use crate::store::Shared;
use crate::types::{LogId, Request};

/// The node once it has started. The gRPC services hold one from before
/// bootstrap and answer `Unavailable` until it is set.
#[derive(Clone, Debug, Default)]
pub struct NodeCell(Arc<std::sync::OnceLock<Arc<Node>>>);

impl NodeCell {
    /// Sets the node (once; later calls do nothing).
    pub fn set(&self, node: Arc<Node>) {
        let _ = self.0.set(node);
    }

    /// The node, or `Unavailable` while it is bootstrapping.
    pub fn get(&self) -> Result<Arc<Node>, Status> {
        self.0
            .get()
            .cloned()
            .ok_or_else(|| Status::unavailable("node is bootstrapping; retry shortly"))
    }
}

/// A running node.
#[derive(Debug)]
pub struct Node {
    /// This node's id.
    pub id: u64,
    /// Its configuration.
    pub config: ServerConfig,
    /// The committed cluster id.
    pub cluster_id: String,
    /// The Raft handle (proposals go to this local handle only).
    pub raft: Raft,
    /// The state machine, shared with the services.
    pub shared: Arc<Shared>,
    /// The leader id whose `Promote` this node has seen applied while leader.
    /// Leader duties and due lists need it (SEMANTICS "Time": no leader duty
    /// before the leader's own Promote applied).
    pub promoted: Mutex<Option<LeaderId>>,
    /// The renew batcher's queue.
    pub renew_tx: mpsc::Sender<RenewJob>,
    /// Packs queued client commands into one entry (see [`crate::node::proposer`]).
    pub proposer: Proposer<RaftSink>,
    /// Opens channels to peers (a new member gets the cluster id through it).
    pub connector: Arc<dyn crate::raft::network::PeerConnector>,
}

/// The production sink of the [`Proposer`]: this node's Raft handle.
#[derive(Debug)]
pub struct RaftSink(pub Weak<Node>);

impl Sink for RaftSink {
    async fn write(&self, cmd: Command) -> Proposed {
        let Some(node) = self.0.upgrade() else {
            return Err(Status::unavailable("node stopping"));
        };
        node.write_entry(cmd).await
    }

    fn refresh(&self, cmds: &mut [Command]) {
        if let Some(node) = self.0.upgrade() {
            node.refresh_due(cmds);
        }
    }
}

impl Node {
    /// The leader as this node knows it: (id, client address).
    pub fn leader(&self) -> Option<(u64, String)> {
        // Read in place: cloning the whole metrics per request is needless.
        let rx = self.raft.metrics();
        let m = rx.borrow_watched();
        let id = m.current_leader?;
        let addr = m
            .membership_config
            .membership()
            .get_node(&id)
            .map(|n| n.addr.clone())
            .or_else(|| self.config.peers.get(&id).cloned())?;
        Some((id, addr))
    }

    /// This node's leader id if it is the leader now.
    pub fn leader_id_if_leader(&self) -> Option<LeaderId> {
        let rx = self.raft.metrics();
        let m = rx.borrow_watched();
        if m.state == ServerState::Leader && m.current_leader == Some(self.id) {
            Some(LeaderId {
                term: m.current_term,
                node_id: self.id,
            })
        } else {
            None
        }
    }

    /// Err(Unavailable + leader address) unless this node is the leader.
    pub fn require_leader(&self) -> Result<LeaderId, Status> {
        self.leader_id_if_leader()
            .ok_or_else(|| not_leader(self.leader()))
    }

    /// This node's leader id if it is the leader and its `Promote` has applied.
    pub fn promoted_leader(&self) -> Option<LeaderId> {
        let now = self.leader_id_if_leader()?;
        let p = *self.promoted.lock().ok()?;
        (p == Some(now)).then_some(now)
    }

    /// The leases and waiters this leader sees as due, to ride in an entry
    /// that can hand a resource off (S8). None unless promoted.
    pub fn due_list(&self) -> Option<DueList> {
        let leader = self.promoted_leader()?;
        let now = self.shared.clock.now();
        let m = self.shared.machine.lock().ok()?;
        let due = m.deadlines.due(&m.table, leader, now);
        (!due.leases.is_empty() || !due.waiters.is_empty()).then_some(due)
    }

    /// The state machine, for a short read or write (never across an await).
    pub fn machine(&self) -> Result<std::sync::MutexGuard<'_, crate::store::Machine>, Status> {
        self.shared
            .machine
            .lock()
            .map_err(|_| Status::internal("state poisoned"))
    }

    /// [`Self::propose`] for a client command: a refusal from the table
    /// becomes its gRPC status here, once, for every service.
    pub async fn propose_command(&self, cmd: Command) -> Result<Response, Status> {
        match self.propose(cmd).await?.0 {
            Response::Error(e) => Err(crate::services::status::command_status(&e)),
            r => Ok(r),
        }
    }

    /// Proposes `cmd` to the local Raft handle and waits for it to commit and
    /// apply (S3: the reply is sent only after a quorum has it on disk).
    /// Never forwards: a non-leader answers `Unavailable` with the leader.
    ///
    /// Acquires and releases go through the [`Proposer`]: alone and at once
    /// when none of its entries is uncommitted, else packed with whatever
    /// queues meanwhile into one `Batch` entry; always alone while some
    /// member has not reported a log format that reads packed entries
    /// ([`crate::raft::log_format`]). The caller's answer and its
    /// errors are the same either way, and it waits at most
    /// [`COMMIT_TIMEOUT_MS`] in all.
    pub async fn propose(&self, cmd: Command) -> Result<(Response, LogId), Status> {
        // The proposer sends what it does not pack straight to its sink.
        self.proposer.propose(cmd).await
    }

    /// Commands that waited in the proposer's queue, about to go out as one
    /// entry: the due list as this leader sees it now rides in the first
    /// command that can carry one, and no other command carries one. Each
    /// command's own list was taken when its request arrived, possibly a
    /// commit round ago; this one is fresh, and apply removes what it names
    /// before anything in the entry is handed off (S8).
    fn refresh_due(&self, cmds: &mut [Command]) {
        place_due(self.due_list(), cmds);
    }

    /// One entry holding `cmd`, proposed to the local Raft handle; waits for
    /// it to commit and apply, at most [`COMMIT_TIMEOUT_MS`].
    async fn write_entry(&self, cmd: Command) -> Result<(Response, LogId), Status> {
        let fut = self.raft.client_write(Request(LogEntry::V1(cmd)));
        match tokio::time::timeout(Duration::from_millis(COMMIT_TIMEOUT_MS), fut).await {
            Err(_) => Err(crate::services::status::no_quorum()),
            Ok(Err(RaftError::APIError(ClientWriteError::ForwardToLeader(f)))) => {
                let leader = f
                    .leader_id
                    .zip(f.leader_node.map(|n| n.addr))
                    .or_else(|| self.leader());
                Err(not_leader(leader))
            }
            Ok(Err(e)) => Err(write_error(&e)),
            Ok(Ok(r)) => Ok((r.data, r.log_id)),
        }
    }

    /// Waits until this node has applied `index` or `timeout` passes.
    pub async fn wait_applied(&self, index: u64, timeout: Duration) -> Result<(), Status> {
        let mut rx = self.shared.applied.subscribe();
        let fut = async {
            loop {
                if *rx.borrow_and_update() >= index {
                    return Ok(());
                }
                if rx.changed().await.is_err() {
                    return Err(Status::unavailable("node stopping"));
                }
            }
        };
        tokio::time::timeout(timeout, fut)
            .await
            .map_err(|_| Status::unavailable("apply did not catch up in time"))?
    }
}

impl crate::sim_hooks::SimNode for Node {
    fn node_id(&self) -> u64 {
        self.id
    }

    fn leader_id_if_leader(&self) -> Option<LeaderId> {
        Node::leader_id_if_leader(self)
    }

    fn propose_duty(
        self: Arc<Self>,
        cmd: Command,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>> {
        Box::pin(async move {
            let _ = self.propose(cmd).await;
        })
    }
}

/// Puts `due` into the first of `cmds` that can carry a due list and clears
/// every later one's (see [`Node::refresh_due`], S8).
fn place_due(due: Option<DueList>, cmds: &mut [Command]) {
    let mut due = Some(due);
    for c in cmds {
        let slot = match c {
            Command::Acquire(a) => &mut a.due,
            Command::Release(r) => &mut r.due,
            Command::Revoke(r) => &mut r.due,
            _ => continue,
        };
        *slot = due.take().flatten();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use warden_core::types::{Acquire, DueLease, LeaseSpec, RenewBatch, RequestHeader, Revoke};

    fn due(lease_id: u64) -> DueList {
        DueList {
            leader: LeaderId {
                term: 1,
                node_id: 1,
            },
            leases: vec![DueLease {
                lease_id,
                last_index: 3,
            }],
            waiters: vec![],
        }
    }

    fn header(request_id: u64) -> RequestHeader {
        RequestHeader {
            client_id: 1,
            request_id,
            acked_request_id: 0,
        }
    }

    fn acquire(request_id: u64, stale: Option<DueList>) -> Command {
        Command::Acquire(Acquire {
            header: header(request_id),
            resource: format!("r{request_id}"),
            lease: LeaseSpec::New { ttl_ms: 5_000 },
            wait_timeout_ms: 0,
            lock_delay_ms: 0,
            due: stale,
        })
    }

    fn dues(cmds: &[Command]) -> Vec<Option<u64>> {
        cmds.iter()
            .filter_map(|c| match c {
                Command::Acquire(a) => Some(&a.due),
                Command::Revoke(r) => Some(&r.due),
                _ => None,
            })
            .map(|d| d.as_ref().map(|d| d.leases[0].lease_id))
            .collect()
    }

    // S8 (expiry before hand-off): commands that waited in the proposer's
    // queue carry the leader's due list as it is now, once, in the first
    // command that can carry one; the lists they took on arrival (possibly a
    // commit round old) are cleared, and commands without a due list are
    // skipped.
    #[test]
    fn the_fresh_due_list_rides_in_the_first_command_that_carries_one() {
        let mut cmds = vec![
            Command::RenewBatch(RenewBatch { lease_ids: vec![9] }),
            acquire(1, Some(due(7))),
            Command::Revoke(Revoke {
                header: header(2),
                lease_id: 5,
                due: Some(due(7)),
            }),
            acquire(3, None),
        ];
        place_due(Some(due(42)), &mut cmds);
        assert_eq!(dues(&cmds), vec![Some(42), None, None]);
        // Nothing due now: every stale list is cleared all the same.
        place_due(None, &mut cmds);
        assert_eq!(dues(&cmds), vec![None, None, None]);
    }
}
