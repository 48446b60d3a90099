//! Who may call the internal `Peer` service, decided from the request's
//! headers and its connection's verified certificate **before any body is
//! read** (docs/security.md "The peer service").
//!
//! [`PeerGate`] sits in front of the generated `PeerServer` (it is what the
//! node's gRPC server routes `/warden.peer.v1.Peer/*` to). For each call it
//! asks [`PeerAccess::admit`]:
//!
//! - On a node with certificates, only a **node certificate** may call
//!   (warden-tls' `PeerInfo` of the connection, which only its acceptor
//!   builds, after the handshake checked the certificate's cluster name):
//!   none is `Unauthenticated`, a client certificate is `PermissionDenied`,
//!   and a node certificate whose id this node has seen **removed** from the
//!   committed membership is `PermissionDenied`.
//! - Every call but the bootstrap calls and `ConfirmMember` must come from
//!   a node its membership names, voter or learner
//!   ([`crate::raft::member_confirm::KnownMembers`]; any node of the
//!   cluster while it knows none yet). An id it does not name is admitted
//!   only once a majority of the voters it knows, itself counted, confirms
//!   it (`crate::raft::member_confirm`): the call waits for that (at most
//!   [`crate::raft::member_confirm::CONFIRM_WAIT`], body unread), and is
//!   refused `PermissionDenied` when the voters do not confirm it. So a
//!   member that was down while a node was added and its old leader
//!   removed still follows the new leader, and a node certificate of an id
//!   that was never a member is refused.
//! - Raft calls (everything but the bootstrap calls) must carry this node's
//!   cluster id in `warden-cluster-id`; none yet is `Unavailable`, another
//!   is `PermissionDenied`.
//!
//! Only then is the call passed on, with a [`PeerCaller`] in its extensions
//! naming the certificate's node id, so that the handler can check that the
//! id claimed inside the Raft message is that one ([`PeerCaller::check_claim`]).
//!
//! Every refusal that says who may not call (no certificate, a client's, a
//! removed node's, a claim that is not the certificate's, another cluster)
//! is logged by [`PeerAccess::refused`]: one `warn` line naming the remote
//! address, the method and the reason, at most one per reason per
//! [`REFUSAL_LOG_INTERVAL`] with the count of the lines suppressed since
//! (so a scanner cannot fill the log; the same rule as failed handshakes).
//! A refused call's body is never polled: hyper stops reading it at the
//! stream's flow-control window (at most 1 MiB a connection), and tonic
//! never sizes a buffer from it.
//!
//! # Message sizes
//!
//! The gate routes each call to one of three instances of the same service:
//!
//! - AppendEntries, AppendStream and InstallSnapshot decode up to
//!   [`crate::raft::network::MAX_PEER_MESSAGE_BYTES`] (256 MiB): an entry
//!   batch (up to openraft's `max_payload_entries`, 300, of packed commands
//!   each up to the request bound) has no smaller bound that always holds,
//!   and InstallSnapshot (a whole snapshot in one message) is still what a
//!   node from before InstallSnapshotStream sends during a rolling upgrade.
//! - InstallSnapshotStream decodes chunks of up to
//!   [`crate::raft::snapshot_chunks::MAX_SNAPSHOT_CHUNK_MESSAGE_BYTES`]
//!   (1 MiB of data + 64 KiB): a snapshot no longer has to fit one message.
//! - Every other call (votes, transfer-leader, bootstrap, the snapshot
//!   requests) decodes up to [`MAX_PEER_CONTROL_MESSAGE_BYTES`].
//!
//! tonic refuses a message whose length prefix is above the bound
//! (`OutOfRange`) before it reserves room for it, so even an admitted peer
//! cannot make a node buffer a vote of 256 MiB, or a snapshot chunk above
//! its bound.
//!
//! # Removed node ids
//!
//! [`RemovedNodes`] holds the ids that left the **committed** membership
//! (voters and learners) and have not come back, persisted in the data dir's
//! meta table (key [`KEY_REMOVED_NODE_IDS`], fsync'd) so that a restart
//! still refuses them. A node learns a removal from openraft's server metrics
//! ([`follow_members`]): each time the committed membership changes, every
//! id of the previous one that is missing from the new one is added (and
//! every id of the new one dropped from the set). The committed membership,
//! not the latest in the log: an uncommitted change can still be truncated,
//! and the id it dropped would then be a member refused by this node. A
//! node that was down while a member was removed learns it when it catches
//! up (the entries or a snapshot carry the new membership); until then it
//! cannot tell that member's certificate from a live one's: rotate the CA
//! to retire a removed node's certificate everywhere at once.

use std::collections::{BTreeMap, BTreeSet};
use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use tokio::sync::watch;
use tonic::body::Body;
use tonic::codegen::http;
use tonic::server::NamedService;
use tonic::{Code, Status};
use warden_tls::{Identity, PeerInfo};

use crate::raft::member_confirm::{Confirmations, Decision, KnownMembers, Unconfirmed};
use crate::raft::network::PeerConnector;
use crate::raft::snapshot_chunks::ChunkError;
use crate::store::Db;

/// Largest message of a Peer call that carries no entries and no snapshot
/// (votes, transfer-leader, bootstrap, the snapshot request): 64 KiB.
pub const MAX_PEER_CONTROL_MESSAGE_BYTES: usize = 64 * 1024;

/// Meta key of the removed node ids (decimal ids, comma-separated).
pub const KEY_REMOVED_NODE_IDS: &str = "removed_node_ids";

/// At most one `warn` line per refusal reason in this interval (module docs).
pub const REFUSAL_LOG_INTERVAL: Duration = Duration::from_secs(1);

/// The gRPC name of the Peer service, as routed.
const PEER_PATH_PREFIX: &str = "/warden.peer.v1.Peer/";

/// Why a Peer call was refused. Every refusal of the peer service is one
/// of these, and [`peer_status`] is the one place it becomes a gRPC status.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PeerRefusal {
    /// A TLS connection without a client certificate.
    #[error("the peer service needs a node certificate; the caller presented none")]
    NoCertificate,
    /// A client certificate (or any identity that is not a node's).
    #[error("the peer service admits node certificates only; the caller is {identity}")]
    NotANode {
        /// What the certificate names.
        identity: String,
    },
    /// A node certificate of a node removed from the membership.
    #[error(
        "node {node_id} was removed from this cluster's membership; its certificate is \
         refused (stop it, wipe its data dir, and add it back under a new id if needed)"
    )]
    Removed {
        /// The removed node.
        node_id: u64,
    },
    /// The Raft message names another sender than the certificate.
    #[error(
        "the caller's certificate is node {certificate}'s, but the message is from node {claimed}"
    )]
    ClaimMismatch {
        /// The certificate's node id.
        certificate: u64,
        /// The node id inside the message.
        claimed: u64,
    },
    /// A node certificate whose id this node's membership does not name,
    /// and that a majority of the voters it knows did not confirm.
    #[error(
        "node {node_id} is not in this node's membership, and a majority of the {voters} \
         voters it knows did not confirm it ({yes} of the {needed} needed, this node \
         counted): refused (a certificate of an id that was never a member, or of another \
         cluster; a member this node cannot confirm means this node lags: wipe its data dir \
         and add it back)"
    )]
    Unconfirmed {
        /// The sender.
        node_id: u64,
        /// Voters that confirmed it, this node counted when it is one.
        yes: usize,
        /// A majority of `voters`.
        needed: usize,
        /// Voters this node knows.
        voters: usize,
    },
    /// A node certificate whose id this node's membership does not name,
    /// still being confirmed.
    #[error(
        "node {node_id} is not in this node's membership; asking the voters it knows whether \
         it is a member (retry)"
    )]
    Confirming {
        /// The sender.
        node_id: u64,
    },
    /// Insecure mode: the sender is not in the membership this node knows.
    #[error(
        "node {node_id} is not a member of this cluster (removed or never added); \
         stop it, wipe its data dir, and add it back under a new id if needed"
    )]
    NotAMember {
        /// The sender.
        node_id: u64,
    },
    /// A Raft call from this node itself.
    #[error(
        "a Raft call from node {node_id} reached node {node_id} itself: another member's \
         address points at this node; give each member its own address in --peers"
    )]
    FromItself {
        /// This node.
        node_id: u64,
    },
    /// This node has no committed cluster id yet.
    #[error("bootstrapping: no cluster id yet")]
    Bootstrapping,
    /// Raft is not running yet.
    #[error("raft not started yet")]
    RaftNotStarted,
    /// Another cluster id, or none.
    #[error("cluster id mismatch: this node belongs to cluster {mine}, the caller sent {theirs}")]
    ClusterMismatch {
        /// This node's cluster id.
        mine: String,
        /// The caller's (`none` without the header).
        theirs: String,
    },
    /// A payload that does not decode, or a bad field.
    #[error("bad payload: {0}")]
    BadPayload(String),
    /// A payload above its bound (the message names the field and the limit).
    #[error("too large: {0}")]
    TooLarge(String),
    /// The request cannot be served now (Raft stopped, a snapshot timed out).
    #[error("{0}")]
    Unavailable(String),
    /// Another bootstrap state than the call needs.
    #[error("{0}")]
    Precondition(String),
    /// A local failure (storage).
    #[error("{0}")]
    Internal(String),
}

impl PeerRefusal {
    /// The reason's name in log lines (one rate-limit window each), or None
    /// for a refusal that says nothing about who called (a node starting
    /// up, a bad payload, a local failure): those are logged at debug only.
    pub fn reason(&self) -> Option<&'static str> {
        match self {
            PeerRefusal::NoCertificate => Some("no_certificate"),
            PeerRefusal::NotANode { .. } => Some("not_a_node"),
            PeerRefusal::Removed { .. } => Some("removed_node"),
            PeerRefusal::ClaimMismatch { .. } => Some("claim_mismatch"),
            PeerRefusal::NotAMember { .. } => Some("not_a_member"),
            PeerRefusal::Unconfirmed { .. } => Some("unconfirmed_member"),
            PeerRefusal::FromItself { .. } => Some("from_itself"),
            PeerRefusal::ClusterMismatch { .. } => Some("cluster_mismatch"),
            PeerRefusal::Bootstrapping
            | PeerRefusal::Confirming { .. }
            | PeerRefusal::RaftNotStarted
            | PeerRefusal::BadPayload(_)
            | PeerRefusal::TooLarge(_)
            | PeerRefusal::Unavailable(_)
            | PeerRefusal::Precondition(_)
            | PeerRefusal::Internal(_) => None,
        }
    }
}

/// The one place a [`PeerRefusal`] becomes a gRPC status (the peer
/// service's own wire; the public services' statuses are built in
/// `services::status`).
pub fn peer_status(refusal: PeerRefusal) -> Status {
    let code = match &refusal {
        PeerRefusal::NoCertificate => Code::Unauthenticated,
        PeerRefusal::NotANode { .. }
        | PeerRefusal::Removed { .. }
        | PeerRefusal::ClaimMismatch { .. }
        | PeerRefusal::NotAMember { .. }
        | PeerRefusal::Unconfirmed { .. }
        | PeerRefusal::ClusterMismatch { .. } => Code::PermissionDenied,
        PeerRefusal::FromItself { .. } | PeerRefusal::Precondition(_) => Code::FailedPrecondition,
        PeerRefusal::Bootstrapping
        | PeerRefusal::RaftNotStarted
        | PeerRefusal::Confirming { .. }
        | PeerRefusal::Unavailable(_) => Code::Unavailable,
        PeerRefusal::BadPayload(_) => Code::InvalidArgument,
        PeerRefusal::TooLarge(_) => Code::OutOfRange,
        PeerRefusal::Internal(_) => Code::Internal,
    };
    Status::new(code, refusal.to_string())
}

impl From<ChunkError> for PeerRefusal {
    fn from(e: ChunkError) -> PeerRefusal {
        match e {
            ChunkError::ChunkTooLarge { .. } | ChunkError::SnapshotTooLarge { .. } => {
                PeerRefusal::TooLarge(e.to_string())
            }
            e => PeerRefusal::BadPayload(e.to_string()),
        }
    }
}

impl From<PeerRefusal> for Status {
    fn from(refusal: PeerRefusal) -> Status {
        peer_status(refusal)
    }
}

/// Who called, as the gate admitted it: put into every admitted request's
/// extensions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PeerCaller {
    /// The node id of the caller's certificate; None on an insecure node.
    pub node_id: Option<u64>,
    /// The caller's address, when the connection told it (for log lines).
    pub remote: Option<SocketAddr>,
}

impl PeerCaller {
    /// The caller of a request the gate admitted. A request that did not
    /// pass the gate (a test calling a handler directly) has no caller and
    /// counts as an insecure one.
    pub fn of<T>(request: &tonic::Request<T>) -> PeerCaller {
        request
            .extensions()
            .get::<PeerCaller>()
            .copied()
            .unwrap_or(PeerCaller {
                node_id: None,
                remote: None,
            })
    }

    /// With a certificate, the node id `claimed` inside a Raft message (the
    /// vote's leader or candidate, a bootstrap call's sender) must be the
    /// certificate's.
    ///
    /// # Errors
    /// [`PeerRefusal::ClaimMismatch`].
    pub fn check_claim(&self, claimed: u64) -> Result<(), PeerRefusal> {
        match self.node_id {
            Some(certificate) if certificate != claimed => Err(PeerRefusal::ClaimMismatch {
                certificate,
                claimed,
            }),
            _ => Ok(()),
        }
    }
}

/// The ids removed from the committed membership (see the module docs).
#[derive(Debug)]
pub struct RemovedNodes {
    db: Db,
    inner: Mutex<Removed>,
}

#[derive(Debug, Default)]
struct Removed {
    /// Removed and not back.
    ids: BTreeSet<u64>,
    /// The committed membership last observed (None before the first).
    members: Option<BTreeSet<u64>>,
}

fn parse_ids(text: &str) -> BTreeSet<u64> {
    text.split(',')
        .filter_map(|id| id.trim().parse().ok())
        .collect()
}

fn format_ids(ids: &BTreeSet<u64>) -> String {
    ids.iter().map(u64::to_string).collect::<Vec<_>>().join(",")
}

impl RemovedNodes {
    /// The removed ids persisted in `db` (none in a new data dir).
    ///
    /// # Errors
    /// The meta table cannot be read.
    pub fn open(db: Db) -> io::Result<RemovedNodes> {
        let ids = db
            .get_meta_string(KEY_REMOVED_NODE_IDS)?
            .map(|text| parse_ids(&text))
            .unwrap_or_default();
        Ok(RemovedNodes {
            db,
            inner: Mutex::new(Removed { ids, members: None }),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Removed> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Whether `node_id` was removed and has not come back.
    pub fn contains(&self, node_id: u64) -> bool {
        self.lock().ids.contains(&node_id)
    }

    /// Every removed id.
    pub fn ids(&self) -> BTreeSet<u64> {
        self.lock().ids.clone()
    }

    /// The committed membership is now `members` (voters and learners):
    /// every id of the one observed before that is missing is removed, every
    /// id of `members` is not. Persists (fsync) before it returns when the
    /// set changed, and returns the ids newly removed.
    ///
    /// # Errors
    /// The meta table cannot be written; the set is unchanged then.
    pub fn observe(&self, members: BTreeSet<u64>) -> io::Result<Vec<u64>> {
        let mut inner = self.lock();
        let mut ids = inner.ids.clone();
        let gone: Vec<u64> = inner
            .members
            .as_ref()
            .map(|before| before.difference(&members).copied().collect())
            .unwrap_or_default();
        ids.extend(gone.iter().copied());
        ids.retain(|id| !members.contains(id));
        if ids != inner.ids {
            self.db
                .put_meta(KEY_REMOVED_NODE_IDS, format_ids(&ids).as_bytes())?;
            inner.ids = ids;
        }
        inner.members = Some(members);
        debug_assert!(inner
            .members
            .as_ref()
            .is_some_and(|m| m.is_disjoint(&inner.ids)));
        Ok(gone)
    }
}

/// The rate limit of refusal lines: one per reason per interval (module
/// docs).
#[derive(Debug)]
pub struct RefusalLog {
    interval: Duration,
    /// Per reason: when its last line was written, and how many refusals
    /// were not written since.
    windows: Mutex<BTreeMap<&'static str, (Instant, u64)>>,
}

impl RefusalLog {
    /// A log allowing one line per reason per `interval`.
    pub fn new(interval: Duration) -> RefusalLog {
        RefusalLog {
            interval,
            windows: Mutex::new(BTreeMap::new()),
        }
    }

    /// Whether a refusal for `reason` at `now` gets a line: `Some(n)` with
    /// the number suppressed since the previous line, or `None` (counted).
    pub fn admit(&self, reason: &'static str, now: Instant) -> Option<u64> {
        let mut windows = self.windows.lock().unwrap_or_else(PoisonError::into_inner);
        match windows.get_mut(reason) {
            None => {
                windows.insert(reason, (now, 0));
                Some(0)
            }
            Some((last, suppressed)) if now.saturating_duration_since(*last) >= self.interval => {
                let n = *suppressed;
                *last = now;
                *suppressed = 0;
                Some(n)
            }
            Some((_, suppressed)) => {
                *suppressed += 1;
                None
            }
        }
    }
}

/// The remote address of a request's connection: the TLS acceptor's
/// [`PeerInfo`], else tonic's TCP connection info (insecure mode).
fn remote_of(extensions: &http::Extensions) -> Option<SocketAddr> {
    extensions
        .get::<PeerInfo>()
        .map(PeerInfo::remote_addr)
        .or_else(|| {
            extensions
                .get::<tonic::transport::server::TcpConnectInfo>()
                .and_then(tonic::transport::server::TcpConnectInfo::remote_addr)
        })
}

/// What the gate decides with: this node's mode, its cluster id, the
/// removed ids, the membership it knows and the confirmations of ids it
/// does not know.
#[derive(Debug)]
pub struct PeerAccess {
    /// True on a node with certificates.
    secure: bool,
    /// The committed cluster id, once known.
    cluster_id: watch::Receiver<Option<String>>,
    /// Ids removed from the committed membership.
    pub removed: RemovedNodes,
    /// The membership this node's log or snapshot holds ([`follow_members`]).
    known: std::sync::RwLock<KnownMembers>,
    /// Confirmations of ids it does not name; None: such ids are refused
    /// without asking.
    confirmations: Option<Arc<Confirmations>>,
    /// The rate limit of refusal lines.
    log: RefusalLog,
}

/// Whether a Peer method is a bootstrap call (sent before a cluster id
/// exists, so it carries none).
fn is_bootstrap(method: &str) -> bool {
    matches!(
        method,
        "BootstrapState" | "BootstrapPrepare" | "BootstrapCommit"
    )
}

/// Whether a Peer method needs a caller this node's membership names (or
/// confirmed): every one but the bootstrap calls (a joining node has no
/// membership to be named in yet) and `ConfirmMember` (it only reads the
/// answering node's membership, which `cluster status` shows any client).
fn needs_member(method: &str) -> bool {
    !is_bootstrap(method) && method != "ConfirmMember"
}

/// A call the gate admitted: who called, and the id to confirm first when
/// this node's membership does not name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Admitted {
    /// Who called.
    pub caller: PeerCaller,
    /// Confirm this id before the call goes on.
    pub confirm: Option<u64>,
}

/// Which of the gate's instances serves a Peer method (module docs,
/// "Message sizes").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Bound {
    /// Entry batches and whole snapshots.
    Bulk,
    /// Snapshot chunks.
    Chunk,
    /// Everything else.
    Control,
}

fn bound_of(method: &str) -> Bound {
    match method {
        "AppendEntries" | "AppendStream" | "InstallSnapshot" => Bound::Bulk,
        "InstallSnapshotStream" => Bound::Chunk,
        _ => Bound::Control,
    }
}

impl PeerAccess {
    /// The access rules of a node: `secure` with certificates.
    pub fn new(
        secure: bool,
        cluster_id: watch::Receiver<Option<String>>,
        removed: RemovedNodes,
    ) -> PeerAccess {
        PeerAccess {
            secure,
            cluster_id,
            removed,
            known: std::sync::RwLock::new(KnownMembers::default()),
            confirmations: None,
            log: RefusalLog::new(REFUSAL_LOG_INTERVAL),
        }
    }

    /// The same rules, confirming unknown ids as node `node_id` with the
    /// voters it knows, dialled through `connector`
    /// (`crate::raft::member_confirm`). Without this, an unknown id is
    /// refused without asking.
    pub fn confirming_with(mut self, node_id: u64, connector: Arc<dyn PeerConnector>) -> Self {
        self.confirmations = Some(Arc::new(Confirmations::new(node_id, connector)));
        self
    }

    /// The membership this node knows now.
    pub fn known(&self) -> KnownMembers {
        self.known
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Replaces the membership this node knows ([`follow_members`]).
    pub fn set_known(&self, known: KnownMembers) {
        *self.known.write().unwrap_or_else(PoisonError::into_inner) = known;
    }

    /// Whether this node's own membership names `node_id` (voter or
    /// learner) and it was not removed: the `ConfirmMember` answer. Never
    /// from a confirmation.
    pub fn is_member(&self, node_id: u64) -> bool {
        self.known
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .members
            .contains(&node_id)
            && !self.removed.contains(node_id)
    }

    /// The ids whose last confirmation failed: refused now.
    pub fn unconfirmed(&self) -> BTreeSet<u64> {
        self.confirmations
            .as_ref()
            .map(|c| c.refused())
            .unwrap_or_default()
    }

    /// Confirms `node_id`, which the membership this node knows does not
    /// name, with its voters (waits at most
    /// [`crate::raft::member_confirm::CONFIRM_WAIT`]).
    ///
    /// # Errors
    /// [`PeerRefusal::Unconfirmed`], or [`PeerRefusal::Confirming`] when it
    /// did not finish in time.
    pub async fn confirm(&self, node_id: u64) -> Result<(), PeerRefusal> {
        let known = self.known();
        let voters = known.voters.len();
        let refused = |yes| PeerRefusal::Unconfirmed {
            node_id,
            yes,
            needed: voters / 2 + 1,
            voters,
        };
        let Some(confirmations) = &self.confirmations else {
            return Err(refused(0));
        };
        let Some(cluster_id) = self.cluster_id.borrow().clone() else {
            return Err(PeerRefusal::Bootstrapping);
        };
        match confirmations.confirm(node_id, &known, &cluster_id).await {
            Ok(()) => Ok(()),
            Err(Unconfirmed::Refused(tally)) => Err(refused(tally.yes)),
            Err(Unconfirmed::TooMany) => Err(refused(0)),
            Err(Unconfirmed::Pending) => Err(PeerRefusal::Confirming { node_id }),
        }
    }

    /// Logs the refusal of a call to `method` from `remote`: a `warn` line
    /// (rate-limited, see the module docs) when it says who may not call,
    /// else a debug line.
    pub fn refused(&self, remote: Option<SocketAddr>, method: &str, refusal: &PeerRefusal) {
        let remote = remote.map_or_else(|| "unknown".to_string(), |a| a.to_string());
        let Some(reason) = refusal.reason() else {
            tracing::debug!(%remote, method, "peer call refused: {refusal}");
            return;
        };
        if let Some(suppressed) = self.log.admit(reason, Instant::now()) {
            tracing::warn!(
                %remote,
                method,
                reason,
                suppressed,
                "peer call refused: {refusal}"
            );
        }
    }

    /// True on a node with certificates.
    pub fn secure(&self) -> bool {
        self.secure
    }

    /// Decides a call to `path` from its headers and its connection's
    /// identity alone (see the module docs).
    ///
    /// # Errors
    /// The refusal; nothing of the body was read.
    pub fn admit(
        &self,
        path: &str,
        headers: &http::HeaderMap,
        extensions: &http::Extensions,
    ) -> Result<Admitted, PeerRefusal> {
        let node_id = if self.secure {
            let id = extensions.get::<PeerInfo>().map(PeerInfo::identity);
            match id {
                None | Some(Identity::Anonymous) => return Err(PeerRefusal::NoCertificate),
                Some(Identity::Client { principal }) => {
                    return Err(PeerRefusal::NotANode {
                        identity: format!("client {principal}"),
                    })
                }
                Some(Identity::Node { node_id }) => {
                    if self.removed.contains(*node_id) {
                        return Err(PeerRefusal::Removed { node_id: *node_id });
                    }
                    Some(*node_id)
                }
            }
        } else {
            None
        };
        let method = path.strip_prefix(PEER_PATH_PREFIX).unwrap_or("");
        if !is_bootstrap(method) {
            self.check_cluster(headers)?;
        }
        let confirm = match node_id {
            Some(id) if needs_member(method) => {
                match self
                    .known
                    .read()
                    .unwrap_or_else(PoisonError::into_inner)
                    .decide(id)
                {
                    Decision::Admit => None,
                    Decision::Confirm => Some(id),
                    Decision::NotStarted => return Err(PeerRefusal::RaftNotStarted),
                }
            }
            _ => None,
        };
        Ok(Admitted {
            caller: PeerCaller {
                node_id,
                remote: remote_of(extensions),
            },
            confirm,
        })
    }

    /// The call's `warden-cluster-id` must be this node's committed id.
    ///
    /// # Errors
    /// [`PeerRefusal::Bootstrapping`] before the id is known,
    /// [`PeerRefusal::ClusterMismatch`] for another id or none.
    pub fn check_cluster(&self, headers: &http::HeaderMap) -> Result<(), PeerRefusal> {
        let mine = self.cluster_id.borrow();
        let Some(mine) = mine.as_deref() else {
            return Err(PeerRefusal::Bootstrapping);
        };
        let theirs = headers
            .get(warden_proto::CLUSTER_ID_METADATA)
            .and_then(|v| v.to_str().ok());
        if theirs != Some(mine) {
            return Err(PeerRefusal::ClusterMismatch {
                mine: mine.to_string(),
                theirs: theirs.unwrap_or("none").to_string(),
            });
        }
        Ok(())
    }
}

/// The Peer service behind its gate (see the module docs): `bulk` decodes
/// up to the large bound, `chunk` up to
/// [`crate::raft::snapshot_chunks::MAX_SNAPSHOT_CHUNK_MESSAGE_BYTES`],
/// `control` up to [`MAX_PEER_CONTROL_MESSAGE_BYTES`]; all three are the
/// same service.
#[derive(Debug, Clone)]
pub struct PeerGate<S> {
    access: Arc<PeerAccess>,
    bulk: S,
    chunk: S,
    control: S,
}

impl<S> PeerGate<S> {
    /// `bulk`, `chunk` and `control` behind the rules of `access`.
    pub fn new(access: Arc<PeerAccess>, bulk: S, chunk: S, control: S) -> PeerGate<S> {
        PeerGate {
            access,
            bulk,
            chunk,
            control,
        }
    }
}

impl<S: NamedService> NamedService for PeerGate<S> {
    const NAME: &'static str = S::NAME;
}

impl<S> tower::Service<http::Request<Body>> for PeerGate<S>
where
    S: tower::Service<http::Request<Body>, Response = http::Response<Body>, Error = Infallible>
        + Clone
        + Send
        + 'static,
    S::Future: Send + 'static,
{
    type Response = http::Response<Body>;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<http::Response<Body>, Infallible>> + Send>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        // tonic's generated servers are always ready.
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, mut request: http::Request<Body>) -> Self::Future {
        let path = request.uri().path();
        let bound = bound_of(path.strip_prefix(PEER_PATH_PREFIX).unwrap_or(""));
        let admitted = self
            .access
            .admit(path, request.headers(), request.extensions());
        match admitted {
            Err(refusal) => {
                let method = path.strip_prefix(PEER_PATH_PREFIX).unwrap_or(path);
                self.access
                    .refused(remote_of(request.extensions()), method, &refusal);
                let response = peer_status(refusal).into_http();
                Box::pin(std::future::ready(Ok(response)))
            }
            Ok(admitted) => {
                let method = admitted.confirm.map(|_| {
                    path.strip_prefix(PEER_PATH_PREFIX)
                        .unwrap_or(path)
                        .to_string()
                });
                request.extensions_mut().insert(admitted.caller);
                let mut inner = match bound {
                    Bound::Bulk => self.bulk.clone(),
                    Bound::Chunk => self.chunk.clone(),
                    Bound::Control => self.control.clone(),
                };
                let Some(node_id) = admitted.confirm else {
                    return Box::pin(async move { inner.call(request).await });
                };
                // An id this node's membership does not name: its voters
                // confirm it first (the body stays unread meanwhile).
                let access = self.access.clone();
                let method = method.unwrap_or_default();
                Box::pin(async move {
                    match access.confirm(node_id).await {
                        Ok(()) => inner.call(request).await,
                        Err(refusal) => {
                            access.refused(admitted.caller.remote, &method, &refusal);
                            Ok(peer_status(refusal).into_http())
                        }
                    }
                })
            }
        }
    }
}

/// Feeds [`PeerAccess`] from openraft's server metrics until Raft stops:
/// the membership this node knows ([`KnownMembers`]: every voter and
/// learner of the latest and of the committed membership, the latest's
/// voters with their peer addresses) on every change, and [`RemovedNodes`]
/// on each change of the committed membership (module docs). Start it as
/// soon as Raft runs: until its first read, Raft calls that need a member
/// are refused `Unavailable`.
pub async fn follow_members(raft: crate::raft::Raft, access: Arc<PeerAccess>) {
    use openraft::async_runtime::WatchReceiver as _;
    let mut rx = raft.server_metrics();
    let mut seen = None;
    loop {
        let (known, members) = {
            let m = rx.borrow_watched();
            let latest = m.membership_config.membership();
            let committed = &m.committed_membership_config;
            let known = KnownMembers {
                observed: true,
                members: latest
                    .nodes()
                    .chain(committed.nodes())
                    .map(|(id, _)| *id)
                    .collect(),
                voters: latest
                    .voter_ids()
                    .filter_map(|id| {
                        latest
                            .get_node(&id)
                            .map(|node| (id, node.dial_addr().to_string()))
                    })
                    .collect(),
                config: *m.membership_config.log_id(),
            };
            let log_id = *committed.log_id();
            let changed = seen != Some(log_id);
            seen = Some(log_id);
            let members = changed.then(|| {
                committed
                    .nodes()
                    .map(|(id, _)| *id)
                    .collect::<BTreeSet<u64>>()
            });
            (known, members)
        };
        access.set_known(known);
        // An empty membership is a node that has not joined a cluster yet.
        if let Some(members) = members.filter(|m| !m.is_empty()) {
            let observe = {
                let db = access.removed.db.clone();
                let access = access.clone();
                db.blocking(move || access.removed.observe(members)).await
            };
            match observe {
                Ok(Ok(gone)) if !gone.is_empty() => tracing::info!(
                    ?gone,
                    "nodes left the committed membership: their certificates are refused from now on"
                ),
                Ok(Ok(_)) => {}
                Ok(Err(e)) => tracing::error!("cannot record removed node ids: {e}"),
                Err(e) => tracing::error!("recording removed node ids failed: {e}"),
            }
        }
        if rx.changed().await.is_err() {
            return;
        }
    }
}

#[cfg(test)]
mod tests;
