//! A running node: the one write path for client commands ([`Node::submit`]),
//! the duty path for leader duties, the renew path, the read paths, and the
//! leader's view of the cluster.
//!
//! # Files
//!
//! - `mod.rs`: [`Node`] (every field private), [`NodeCell`], leader lookup.
//! - `submit.rs`: [`Node::submit`] (validate, leader check, log-format
//!   gate, propose, typed answer), [`Node::renew`] (through the renew
//!   batcher, S4), the duty path, and the entry write to the local Raft
//!   handle.
//! - `read/`: the linearizable read path and the views services read;
//!   `read/waiter.rs` a queued acquire's progress, `read/auth.rs` the auth
//!   table's reads (each method says what it reads).
//! - `top.rs`: `top`, the hottest resources under a prefix (the table's
//!   queues and the hot-locks window, [`crate::hot_locks`]).
//! - `cluster.rs`: the leader's view of the members (`cluster status`) and
//!   this node's readiness (`/readyz`).
//! - `error.rs`: [`SubmitError`], [`ReadError`], [`Bootstrapping`].
//! - `proposer.rs`: packs queued acquires and releases into one entry.
//! - `renew.rs`: the renew batcher (S4).
//! - `duties.rs`: leader duties (Promote, Tick, DropClients), proposed to
//!   the local Raft handle only.
//! - `idle_clients.rs`: the walk that finds idle outcome records (S7) a
//!   slice at a time, for `DropClients`.
//! - `membership.rs`: add, remove and replace members.
//! - `refusals.rs`: the refused-request rate limit, per principal.
//! - `watch_quota.rs`: the `watches` quota (open watch streams of a
//!   principal on this node).
//! - `deny_sync.rs`: hands the applied deny list to this node's TLS, which
//!   refuses denied certificates and closes their connections.
//! - `test_node.rs`, `auth_tests.rs` (tests only): a one-node cluster in
//!   this process, and the write, read and renew paths' permission tests
//!   on it with injected principals.

#[cfg(test)]
mod auth_tests;
pub mod cluster;
pub mod deny_sync;
pub mod duties;
pub mod error;
#[cfg(test)]
mod expiry_tests;
pub mod idle_clients;
pub mod membership;
pub mod proposer;
pub mod read;
pub mod refusals;
pub mod renew;
mod stamp;
pub mod submit;
#[cfg(test)]
pub(crate) mod test_node;
pub mod top;
pub mod watch_quota;

use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use openraft::async_runtime::WatchReceiver as _;
use openraft::ServerState;
use tokio::sync::mpsc;
use warden_core::types::{Command, LeaderId};

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
    /// Leader duties need it (docs/semantics.md "Time": no
    /// leader duty before the leader's own Promote applied).
    promoted: Mutex<Option<LeaderId>>,
    /// The renew batcher's queue.
    renew_tx: mpsc::Sender<RenewJob>,
    /// Packs queued client commands into one entry (see [`proposer`]).
    proposer: Proposer<RaftSink>,
    /// The log formats the members report: [`Node::submit`] proposes a
    /// command of a newer format only while every member reads it
    /// ([`LogFormats::may_propose`]).
    formats: Arc<LogFormats>,
    /// Opens channels to peers (a new member gets the cluster id through it).
    connector: Arc<dyn PeerConnector>,
    /// Its TLS (None: insecure or simulated identities): the deny list is
    /// enforced there ([`deny_sync`]).
    tls: Option<warden_tls::NodeTls>,
    /// The refused-request rate limit, per principal ([`refusals`]).
    refusals: refusals::RefusalBudget,
    /// The peer gate's state (None in tests without a peer service): the
    /// peer ids it refuses as unconfirmed.
    peer_access: Option<Arc<crate::raft::peer_access::PeerAccess>>,
    /// Open watch streams by principal (the `watches` quota, [`watch_quota`]).
    watch_counts: Arc<watch_quota::WatchCounts>,
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
    /// The log formats the peers report (the write path's log-format gate).
    pub formats: Arc<LogFormats>,
    /// Opens channels to peers.
    pub connector: Arc<dyn PeerConnector>,
    /// The renew batcher's queue (its receiver goes to [`renew::run`]).
    pub renew_tx: mpsc::Sender<RenewJob>,
    /// Its TLS, if it has certificates.
    pub tls: Option<warden_tls::NodeTls>,
    /// The peer gate's state, if it serves peers.
    pub peer_access: Option<Arc<crate::raft::peer_access::PeerAccess>>,
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
}

impl Node {
    /// The newest log format every member has been seen to read, as this
    /// node knows it (0: none yet; `raft::log_format`, the members' floor).
    pub fn members_log_format(&self) -> u32 {
        self.formats.members_read_format()
    }

    /// Assembles a node around its Raft handle and state machine.
    pub fn new(parts: NodeParts) -> Arc<Node> {
        let parts_refusals = parts.config.conn_limits.refused_requests_per_sec;
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
                proposer::MAX_IN_FLIGHT,
                Duration::from_millis(COMMIT_TIMEOUT_MS),
            ),
            formats: parts.formats,
            connector: parts.connector,
            tls: parts.tls,
            refusals: refusals::RefusalBudget::new(parts_refusals),
            peer_access: parts.peer_access,
            watch_counts: Arc::default(),
        })
    }

    /// Peer ids whose Raft calls this node refuses as unconfirmed members
    /// (`raft::member_confirm`), by id.
    pub fn unconfirmed_peers(&self) -> Vec<u64> {
        self.peer_access
            .as_ref()
            .map(|a| a.unconfirmed().into_iter().collect())
            .unwrap_or_default()
    }

    /// This node's TLS, if it has certificates.
    pub fn tls(&self) -> Option<&warden_tls::NodeTls> {
        self.tls.as_ref()
    }

    /// The deny list of this node's deny file (empty without certificates).
    pub fn deny_file(&self) -> warden_tls::DenyList {
        self.tls
            .as_ref()
            .map(|t| t.server().file_denied())
            .unwrap_or_default()
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
    /// it no longer leads (None): leader duties start only after it
    /// (docs/semantics.md "Time").
    pub(crate) fn set_promoted(&self, leader: Option<LeaderId>) {
        if let Ok(mut p) = self.promoted.lock() {
            *p = leader;
        }
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
