//! A running node: the one write path for client commands ([`Node::submit`]),
//! the duty path for leader duties, the renew path, the read paths, and the
//! leader's view of the cluster.
//!
//! # Files
//!
//! - `mod.rs`: [`Node`] (every field private), [`NodeCell`], leader lookup,
//!   due lists.
//! - `submit.rs`: [`Node::submit`] (validate, leader check, due list,
//!   propose, typed answer), [`Node::renew`] (through the renew batcher, S4),
//!   the duty path, and the entry write to the local Raft handle.
//! - `read.rs`: the linearizable read path and the views services read
//!   (each method says what it reads).
//! - `top.rs`: `top`, the hottest resources under a prefix (the table's
//!   queues and the hot-locks window, [`crate::hot_locks`]).
//! - `cluster.rs`: the leader's view of the members (`cluster status`) and
//!   this node's readiness (`/readyz`).
//! - `error.rs`: [`SubmitError`], [`ReadError`], [`Bootstrapping`].
//! - `proposer.rs`: packs queued acquires and releases into one entry.
//! - `renew.rs`: the renew batcher (S4).
//! - `duties.rs`: leader duties (Promote, Expire, EndLockDelay, Checkpoint,
//!   DropClients), proposed to the local Raft handle only.
//! - `idle_clients.rs`: the walk that finds idle outcome records (S7) a
//!   slice at a time, for `DropClients`.
//! - `membership.rs`: add, remove and replace members.
//! - `test_node.rs`, `auth_tests.rs` (tests only): a one-node cluster in
//!   this process, and the write, read and renew paths' permission tests
//!   on it with injected principals.

#[cfg(test)]
mod auth_tests;
pub mod cluster;
pub mod duties;
pub mod error;
pub mod idle_clients;
pub mod membership;
pub mod proposer;
pub mod read;
pub mod renew;
pub mod submit;
#[cfg(test)]
pub(crate) mod test_node;
pub mod top;

use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use openraft::async_runtime::WatchReceiver as _;
use openraft::ServerState;
use tokio::sync::mpsc;
use warden_core::types::{Command, DueList, LeaderId};

use crate::config::ServerConfig;
use crate::raft::log_format::LogFormats;
use crate::raft::network::PeerConnector;
use crate::raft::Raft;
use crate::store::Shared;

pub use error::{Bootstrapping, LeaderHint, ReadError, SubmitError, COMMIT_TIMEOUT_MS};
use proposer::{Proposed, Proposer, Sink};
use renew::RenewJob;

/// Who a client command is made for: the principal of the caller's verified
/// certificate, or None on an insecure node (anonymous).
pub type Principal = Option<warden_core::types::Principal>;

/// The node once it has started. The gRPC services hold one from before
/// bootstrap and answer `Unavailable` until it is set.
#[derive(Clone, Debug, Default)]
pub struct NodeCell(Arc<std::sync::OnceLock<Arc<Node>>>);

impl NodeCell {
    /// Sets the node (once; later calls do nothing).
    pub fn set(&self, node: Arc<Node>) {
        let _ = self.0.set(node);
    }

    /// The node, or [`Bootstrapping`] until it has started.
    pub fn get(&self) -> Result<Arc<Node>, Bootstrapping> {
        self.0.get().cloned().ok_or(Bootstrapping)
    }
}

/// A running node.
#[derive(Debug)]
pub struct Node {
    /// This node's id.
    id: u64,
    /// Its configuration.
    config: ServerConfig,
    /// The committed cluster id.
    cluster_id: String,
    /// The Raft handle (proposals go to this local handle only).
    raft: Raft,
    /// The state machine, shared with the log store.
    shared: Arc<Shared>,
    /// The leader id whose `Promote` this node has seen applied while leader.
    /// Leader duties and due lists need it (docs/semantics.md "Time": no
    /// leader duty before the leader's own Promote applied).
    promoted: Mutex<Option<LeaderId>>,
    /// The renew batcher's queue.
    renew_tx: mpsc::Sender<RenewJob>,
    /// Packs queued client commands into one entry (see [`proposer`]).
    proposer: Proposer<RaftSink>,
    /// The log formats the members report: [`Node::submit`] wraps client
    /// commands in `Authorized` only while every member reads them.
    formats: Arc<LogFormats>,
    /// Opens channels to peers (a new member gets the cluster id through it).
    connector: Arc<dyn PeerConnector>,
}

/// What a node is made of (see [`Node::new`]).
pub struct NodeParts {
    /// This node's id.
    pub id: u64,
    /// Its configuration.
    pub config: ServerConfig,
    /// The committed cluster id.
    pub cluster_id: String,
    /// The Raft handle.
    pub raft: Raft,
    /// The state machine's shared state.
    pub shared: Arc<Shared>,
    /// The log formats the peers report (the proposer's packing gate).
    pub formats: Arc<LogFormats>,
    /// Opens channels to peers.
    pub connector: Arc<dyn PeerConnector>,
    /// The renew batcher's queue (its receiver goes to [`renew::run`]).
    pub renew_tx: mpsc::Sender<RenewJob>,
}

/// The production sink of the [`Proposer`]: this node's Raft handle.
#[derive(Debug)]
pub struct RaftSink(Weak<Node>);

impl Sink for RaftSink {
    async fn write(&self, cmd: Command) -> Proposed {
        let Some(node) = self.0.upgrade() else {
            return Err(SubmitError::NotProposed {
                reason: "node stopping".into(),
            });
        };
        let commands = match &cmd {
            Command::Batch(cmds) => cmds.len(),
            _ => 1,
        };
        let raft = &node.shared.metrics.raft;
        raft.commands_per_entry.record(commands as f64);
        let started = tokio::time::Instant::now();
        let out = node.write_entry(cmd).await;
        raft.proposal_duration
            .record(started.elapsed().as_secs_f64());
        out
    }

    fn refresh(&self, cmds: &mut [Command]) {
        if let Some(node) = self.0.upgrade() {
            node.refresh_due(cmds);
        }
    }
}

impl Node {
    /// The newest log format every member has been seen to read, as this
    /// node knows it (0: none yet; `raft::log_format`, the members' floor).
    pub fn members_log_format(&self) -> u32 {
        self.formats.members_read_format()
    }

    /// Assembles a node around its Raft handle and state machine.
    pub fn new(parts: NodeParts) -> Arc<Node> {
        Arc::new_cyclic(|me| Node {
            id: parts.id,
            config: parts.config,
            cluster_id: parts.cluster_id,
            raft: parts.raft,
            shared: parts.shared,
            promoted: Mutex::new(None),
            renew_tx: parts.renew_tx,
            proposer: Proposer::new(
                RaftSink(me.clone()),
                parts.formats.clone(),
                proposer::MAX_IN_FLIGHT,
                Duration::from_millis(COMMIT_TIMEOUT_MS),
            ),
            formats: parts.formats,
            connector: parts.connector,
        })
    }

    /// This node's metrics.
    pub fn metrics(&self) -> &crate::metrics::Metrics {
        &self.shared.metrics
    }

    /// This node's id.
    pub fn id(&self) -> u64 {
        self.id
    }

    /// Its configuration.
    pub fn config(&self) -> &ServerConfig {
        &self.config
    }

    /// The committed cluster id.
    pub fn cluster_id(&self) -> &str {
        &self.cluster_id
    }

    /// The leader as this node knows it: (id, client address).
    pub fn leader(&self) -> LeaderHint {
        // Read in place: cloning the whole metrics per request is needless.
        let rx = self.raft.metrics();
        let m = rx.borrow_watched();
        let id = m.current_leader?;
        let addr = m
            .membership_config
            .membership()
            .get_node(&id)
            .map(|n| n.client_addr().to_string())
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

    /// [`SubmitError::NotLeader`] (naming the leader) unless this node leads.
    pub fn require_leader(&self) -> Result<LeaderId, SubmitError> {
        self.leader_id_if_leader()
            .ok_or_else(|| SubmitError::NotLeader {
                leader: self.leader(),
            })
    }

    /// This node's leader id if it is the leader and its `Promote` has applied.
    pub fn promoted_leader(&self) -> Option<LeaderId> {
        let now = self.leader_id_if_leader()?;
        let p = *self.promoted.lock().ok()?;
        (p == Some(now)).then_some(now)
    }

    /// Records that this leader's own `Promote` has applied (Some), or that
    /// it no longer leads (None): leader duties and due lists start only
    /// after it (docs/semantics.md "Time").
    pub(crate) fn set_promoted(&self, leader: Option<LeaderId>) {
        if let Ok(mut p) = self.promoted.lock() {
            *p = leader;
        }
    }

    /// The leases and waiters this leader sees as due, to ride in an entry
    /// of `cmds` that can hand a resource off (S8;
    /// [`warden_core::Deadlines::client_due`]). None unless promoted.
    pub fn due_list(&self, cmds: &[Command]) -> Option<DueList> {
        let leader = self.promoted_leader()?;
        let now = self.shared.clock.now();
        let m = self.shared.machine.lock().ok()?;
        m.deadlines.client_due(&m.table, leader, now, cmds)
    }

    /// Puts the due list as this leader sees it now into the first of
    /// `cmds` that can carry one ([`Command::due_mut`]), and none into the
    /// others: a client command as it is submitted, a lock-delay or
    /// max-hold end the leader proposes, and the commands that waited in
    /// the proposer's queue as they go out as one entry (each one's own list
    /// was taken when its request arrived, possibly a commit round ago; this
    /// one is fresh). Apply removes what it names before anything in the
    /// entry is handed off (S8).
    pub(crate) fn refresh_due(&self, cmds: &mut [Command]) {
        place_due(self.due_list(cmds), cmds);
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
            let _ = Node::propose_duty(&self, cmd).await;
        })
    }
}

/// Puts `due` into the first of `cmds` that can carry a due list (seeing
/// through `Command::Authorized`) and clears every later one's (see
/// [`Node::refresh_due`], S8).
fn place_due(due: Option<DueList>, cmds: &mut [Command]) {
    let mut due = Some(due);
    for c in cmds {
        if let Some(slot) = c.due_mut() {
            *slot = due.take().flatten();
        }
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
            .filter(|c| matches!(c.unwrapped(), Command::Acquire(_) | Command::Revoke(_)))
            .map(|c| c.client_due().map(|d| d.leases[0].lease_id))
            .collect()
    }

    fn wrapped(principal: &str, cmd: Command) -> Command {
        Command::Authorized(warden_core::types::Authorized {
            principal: Some(warden_core::types::Principal::new(principal).expect("principal")),
            command: Box::new(cmd),
        })
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

    // S8 for the leader's own hand-offs (docs/semantics.md S8:
    // "`EndLockDelay` and `EndMaxHold` carry the leader's due list like a
    // client entry"): the duty loop fills an ended lock-delay's and an ended
    // max-hold's slot through the same placement (`Node::refresh_due`), and
    // `Command::due` reads it back, as the simulator's S8 checker does.
    #[test]
    fn a_lock_delay_or_max_hold_end_carries_the_fresh_due_list() {
        let leader = LeaderId {
            term: 1,
            node_id: 1,
        };
        let ends = [
            Command::EndLockDelay(warden_core::types::EndLockDelay {
                leader,
                resource: "r".into(),
                start_index: 4,
                due: Some(due(7)),
            }),
            Command::EndMaxHold(warden_core::types::EndMaxHold {
                leader,
                grants: vec![],
                due: None,
            }),
        ];
        for end in ends {
            let mut cmd = [end];
            place_due(Some(due(42)), &mut cmd);
            assert_eq!(
                cmd[0].due().map(|d| d.leases[0].lease_id),
                Some(42),
                "{:?}",
                cmd[0]
            );
            place_due(None, &mut cmd);
            assert_eq!(cmd[0].due(), None, "a stale list is cleared");
        }
    }

    // S8 with identities: the due list rides inside `Command::Authorized`
    // too (apply reads the inner command's list), so a packed entry of
    // wrapped acquires still carries the leader's fresh list, once.
    #[test]
    fn the_fresh_due_list_rides_inside_an_authorized_command() {
        let mut cmds = vec![
            wrapped(
                "alice",
                Command::LeaseGrant(warden_core::types::LeaseGrant {
                    header: header(9),
                    ttl_ms: 5_000,
                }),
            ),
            wrapped("alice", acquire(1, Some(due(7)))),
            wrapped("bob", acquire(2, Some(due(7)))),
        ];
        place_due(Some(due(42)), &mut cmds);
        assert_eq!(dues(&cmds), vec![Some(42), None]);
        assert!(
            matches!(&cmds[1], Command::Authorized(w) if w.principal.as_ref().map(|p| p.as_str()) == Some("alice")),
            "still wrapped, principal kept: {:?}",
            cmds[1]
        );
    }
}
