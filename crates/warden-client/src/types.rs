//! Options and results of the client's calls. Durations are
//! [`std::time::Duration`] on the way in; what the server reports comes back
//! in milliseconds, with `_ms` in the field name.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use warden_proto::v1;

use crate::transport::Connector;

/// How a [`Client`](crate::Client) reaches the nodes, retries and how long
/// it may take.
///
/// Build it from the defaults, `ClientOptions { deadline, ..ClientOptions::default() }`,
/// so that an option added in a later version does not break your code.
#[derive(Debug, Clone)]
pub struct ClientOptions {
    /// Total time a non-waiting call may take, across all retries and leader
    /// changes: 5 s. A waiting acquire gets its wait time plus this. When it
    /// runs out the call fails with [`ClientError::NoQuorum`] or
    /// [`ClientError::Unavailable`](crate::ClientError::Unavailable).
    ///
    /// [`ClientError::NoQuorum`]: crate::ClientError::NoQuorum
    pub deadline: Duration,
    /// Longest wait for one attempt's answer before trying the next endpoint:
    /// 500 ms (also the connect timeout).
    pub attempt_timeout: Duration,
    /// Longest pause between two rounds over the endpoints: 200 ms.
    pub backoff_cap: Duration,
    /// How long a node that answered `Calls` with `Unimplemented` (a
    /// version from before the `Calls` stream) gets unary calls before it is
    /// asked again: 30 s. A rolling upgrade restarts each node on the new
    /// version; this is how soon the client then uses its stream. Zero
    /// asks again on every call (one extra round trip per call to such a
    /// node).
    pub recheck_calls_after: Duration,
    /// Mutual TLS: the certs dir and the principal whose certificate the
    /// client presents. `None` (the default) is plaintext, which only a
    /// cluster started with `--insecure` accepts (a secure node refuses the
    /// connection). Loaded and checked by [`Client::connect`]: a missing,
    /// unreadable, expired or mismatched file, or a user name that is not a
    /// principal, fails there with [`ClientError::Tls`] naming the file, and
    /// nothing is sent. Cannot be combined with [`connector`](Self::connector).
    ///
    /// [`Client::connect`]: crate::Client::connect
    /// [`ClientError::Tls`]: crate::ClientError::Tls
    pub tls: Option<TlsOptions>,
    /// Opens the channels to the nodes, instead of what [`tls`](Self::tls)
    /// says: e.g. a [`warden_tls::ClientTls`] the program reloads itself, or
    /// the simulator's network. Per client, so two clients of one process
    /// may use different networks or credentials. `None` (the default):
    /// [`tls`](Self::tls) decides.
    pub connector: Option<Arc<dyn Connector>>,
    /// Fail a call at once, with [`ClientError::Unavailable`] naming each
    /// endpoint, when every endpoint has refused the connection (nothing
    /// listens there) or answered as no Warden node would (in plaintext,
    /// with something other than HTTP/2: HTTP/1, TLS; over TLS, with
    /// plaintext), instead of retrying until the
    /// [`deadline`](Self::deadline): for one-shot commands, where a wrong
    /// port should say so quickly. False (the default) keeps retrying, as a
    /// session's keep-alive must through a restart of the whole cluster.
    ///
    /// [`ClientError::Unavailable`]: crate::ClientError::Unavailable
    pub fail_fast_when_refused: bool,
}

/// Where a client's TLS files are: `certs_dir/ca.crt` (the CA bundle the
/// nodes' certificates must chain to), `certs_dir/client.USER.crt` and
/// `certs_dir/client.USER.key` (the user's certificate, made by `warden cert
/// create-client USER`). The server takes the principal from the verified
/// certificate only.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsOptions {
    /// The certs dir.
    pub certs_dir: PathBuf,
    /// The principal: 1..=64 bytes of `[A-Za-z0-9._-]`, not `node` or a
    /// node-like name (warden-tls `validate_principal`). The CLI's default
    /// is [`DEFAULT_USER`].
    pub user: String,
}

/// The principal a CLI command acts as unless told otherwise: `root`, which
/// holds `admin` on every resource from the start (as in etcd and
/// CockroachDB).
pub const DEFAULT_USER: &str = "root";

impl TlsOptions {
    /// TLS options for `user`'s certificate in `certs_dir`.
    pub fn new(certs_dir: impl Into<PathBuf>, user: impl Into<String>) -> TlsOptions {
        TlsOptions {
            certs_dir: certs_dir.into(),
            user: user.into(),
        }
    }
}

impl Default for ClientOptions {
    fn default() -> Self {
        ClientOptions {
            deadline: Duration::from_secs(5),
            attempt_timeout: Duration::from_millis(500),
            backoff_cap: Duration::from_millis(200),
            recheck_calls_after: Duration::from_secs(30),
            tls: None,
            connector: None,
            fail_fast_when_refused: false,
        }
    }
}

/// What to acquire and how long to wait for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AcquireOptions {
    /// TTL of the new lease the grant hangs on (server bounds: 1 s ..= 1 h).
    /// Ignored when [`lease_id`](Self::lease_id) is set. Sent in whole
    /// milliseconds.
    pub ttl: Duration,
    /// Hang the grant on this existing lease (a session) instead of a new one.
    pub lease_id: Option<u64>,
    /// How long to wait in the server's queue; zero is a try-lock
    /// (server bound: ≤ 1 h).
    pub wait: Duration,
    /// Lock-delay after an involuntary loss of this grant (expiry, forced
    /// release); zero is none (server bound: ≤ 1 min).
    pub lock_delay: Duration,
    /// What kind of grant: a mutex (the default), a read-write lock's
    /// shared or exclusive grant, or one permit of a semaphore.
    pub kind: GrantKind,
    /// Max-hold: the grant ends no later than this after it was granted,
    /// however often its lease is renewed (docs/semantics.md "Max-hold";
    /// server bounds 1 s ..= 24 h, and `wait` must be shorter). Sent in
    /// whole milliseconds; None: no cap. Not for a multi-lock.
    pub max_hold: Option<Duration>,
}

impl AcquireOptions {
    /// A try-lock of a mutex on a new lease with this TTL: no wait, no
    /// lock-delay.
    pub fn with_ttl(ttl: Duration) -> AcquireOptions {
        AcquireOptions {
            ttl,
            lease_id: None,
            wait: Duration::ZERO,
            lock_delay: Duration::ZERO,
            kind: GrantKind::Mutex,
            max_hold: None,
        }
    }
}

/// The kind of grant an acquire asks for (docs/semantics.md, "Lock kinds").
///
/// A resource has one kind while anything is on it (holders, waiters, a
/// lock-delay): a request of another kind, or a semaphore request with
/// another limit, is refused with `FailedPrecondition` naming the current
/// kind. Every grant of every kind takes a fresh fencing token.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum GrantKind {
    /// An exclusive lock (the only kind older clients ask for).
    #[default]
    Mutex,
    /// A read-write lock's reader: granted beside other readers, never
    /// beside a writer, and never ahead of a writer queued before it.
    Shared,
    /// A read-write lock's writer: alone.
    Exclusive,
    /// One permit of a counting semaphore of `limit` permits (1 ..= 10,000):
    /// at most `limit` holders at once, each in its own slot.
    Permit {
        /// The semaphore's number of permits; every holder and waiter of the
        /// resource must ask with the same one.
        limit: u32,
    },
}

impl GrantKind {
    /// The wire's `(mode, limit)` fields for this kind.
    pub(crate) fn wire(self) -> (v1::LockMode, u32) {
        match self {
            GrantKind::Mutex => (v1::LockMode::Unspecified, 0),
            GrantKind::Shared => (v1::LockMode::Shared, 0),
            GrantKind::Exclusive => (v1::LockMode::Exclusive, 0),
            GrantKind::Permit { limit } => (v1::LockMode::Unspecified, limit),
        }
    }
}

/// What a resource is while anything is on it, as `status` reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResourceKind {
    /// An exclusive lock.
    Mutex,
    /// A read-write lock.
    ReadWrite,
    /// A counting semaphore.
    Semaphore {
        /// Its number of permits.
        limit: u32,
    },
}

impl ResourceKind {
    /// The kind a status answer names; `None` for a free resource (empty
    /// `kind`) or a name this client does not know.
    pub(crate) fn from_wire(kind: &str, limit: u32) -> Option<ResourceKind> {
        match kind {
            "mutex" => Some(ResourceKind::Mutex),
            "read_write" => Some(ResourceKind::ReadWrite),
            "semaphore" => Some(ResourceKind::Semaphore { limit }),
            _ => None,
        }
    }
}

/// The final answer to an acquire.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AcquireResult {
    /// The lease now holds the resource.
    Granted {
        /// The resource granted.
        resource: String,
        /// The lease holding it; renew it within its TTL to keep the lock.
        lease_id: u64,
        /// This grant's fencing token: larger than every token issued before
        /// for this resource (docs/semantics.md S2). Pass it to the protected resource.
        fencing_token: u64,
        /// The lease's TTL as granted, in milliseconds.
        ttl_ms: u64,
        /// A semaphore permit's slot in `0..limit` (the lowest free one when
        /// granted); `None` for the other kinds. The resource-side fence
        /// checks a permit's token per (resource, slot) (docs/fencing.md):
        /// pass it beside the token.
        slot: Option<u32>,
        /// A multi-lock's grant ([`Client::acquire_all`](crate::Client::acquire_all)):
        /// every resource with its own fencing token, in the request's order
        /// (the first is also `resource` and `fencing_token`). Empty for a
        /// single resource's grant.
        grants: Vec<ResourceToken>,
    },
    /// The resource was not granted; nothing was left behind (no new lease).
    NotGranted {
        /// The resource asked for.
        resource: String,
        /// The lease holding it, when there is one.
        holder_lease_id: Option<u64>,
        /// Why.
        reason: NotGrantedReason,
        /// With [`NotGrantedReason::LockDelay`]: the lock-delay left, in
        /// milliseconds on the serving leader's clock (display only,
        /// rounded up); no grant is made before it ends. `None` for the
        /// other reasons, from a server that does not say, or when the
        /// delay ended as the answer was made.
        lock_delay_remaining_ms: Option<u64>,
    },
}

/// One resource of a multi-lock's grant and its fencing token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceToken {
    /// The resource.
    pub resource: String,
    /// Its fencing token: larger than every token issued before for it (S2).
    pub fencing_token: u64,
}

/// Why an acquire was not granted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NotGrantedReason {
    /// Another lease holds the resource (try-lock).
    Held,
    /// The resource is in lock-delay after an involuntary loss.
    LockDelay,
    /// The wait ran out; the waiter's removal has committed.
    WaitTimeout,
    /// Its caller took it back with a cancel before it applied
    /// ([`Client::cancel_wait`](crate::Client::cancel_wait)).
    Cancelled,
    /// A try-lock on a free resource kept for a waiting multi-lock at the
    /// head of its queue (docs/semantics.md "Multi-locks").
    Reserved,
    /// A reason this client version does not know, as the server sent it.
    Other(String),
}

impl NotGrantedReason {
    fn from_wire(reason: &str) -> NotGrantedReason {
        match reason {
            "held" => NotGrantedReason::Held,
            "lock_delay" => NotGrantedReason::LockDelay,
            "wait_timeout" => NotGrantedReason::WaitTimeout,
            "cancelled" => NotGrantedReason::Cancelled,
            "reserved" => NotGrantedReason::Reserved,
            other => NotGrantedReason::Other(other.to_string()),
        }
    }

    /// The wire form: `held`, `lock_delay`, `wait_timeout`, `cancelled`,
    /// `reserved` or the unknown reason as sent.
    pub fn as_str(&self) -> &str {
        match self {
            NotGrantedReason::Held => "held",
            NotGrantedReason::LockDelay => "lock_delay",
            NotGrantedReason::WaitTimeout => "wait_timeout",
            NotGrantedReason::Cancelled => "cancelled",
            NotGrantedReason::Reserved => "reserved",
            NotGrantedReason::Other(other) => other,
        }
    }
}

impl std::fmt::Display for NotGrantedReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A progress message of a waiting acquire: one when it is queued, then
/// one whenever its position or what it waits behind changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Queued {
    /// Place in the queue; 1 = next in line.
    pub position: u64,
    /// The lease the waiter hangs on.
    pub lease_id: u64,
    /// What it waits behind.
    pub behind: QueueBehind,
}

/// What a waiting acquire waits behind ([`Queued::behind`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QueueBehind {
    /// Next in line; the resource is held by this lease.
    Holder {
        /// The holding lease.
        lease_id: u64,
    },
    /// Next in line; the resource is in its lock-delay after an involuntary
    /// loss (expiry, forced release), granted to nobody until it ends.
    LockDelay {
        /// The lock-delay left, in milliseconds on the serving leader's
        /// clock (display only, rounded up; 0 when it has just run out).
        remaining_ms: u64,
    },
    /// Behind this many earlier waiters (position - 1).
    Waiters {
        /// Waiters ahead.
        count: u64,
    },
    /// Not said: a server from before these reports, or a moment between
    /// two entries.
    Unknown,
}

impl QueueBehind {
    /// From the wire's `Queued` (`behind`: "holder", "lock_delay",
    /// "waiters"; anything else is [`QueueBehind::Unknown`]).
    pub(crate) fn from_wire(q: &v1::Queued) -> QueueBehind {
        match q.behind.as_str() {
            "holder" => QueueBehind::Holder {
                lease_id: q.holder_lease_id,
            },
            "lock_delay" => QueueBehind::LockDelay {
                remaining_ms: q.lock_delay_remaining_ms,
            },
            "waiters" => QueueBehind::Waiters {
                count: q.position.saturating_sub(1),
            },
            _ => QueueBehind::Unknown,
        }
    }
}

impl From<v1::Queued> for Queued {
    fn from(q: v1::Queued) -> Self {
        Queued {
            position: q.position,
            lease_id: q.lease_id,
            behind: QueueBehind::from_wire(&q),
        }
    }
}

/// An acknowledged renew: the lease's countdown restarted with `ttl_ms` once
/// the renew committed (docs/semantics.md S4).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RenewResult {
    /// The lease renewed.
    pub lease_id: u64,
    /// Its TTL, in milliseconds.
    pub ttl_ms: u64,
    /// The sequence number of the attempt this acknowledges (echoed by the
    /// server, S5).
    pub sequence: u64,
}

/// A session created by [`crate::Client::lease_grant`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LeaseGrantResult {
    /// The new lease.
    pub lease_id: u64,
    /// Its TTL, in milliseconds.
    pub ttl_ms: u64,
}

/// A lease as [`crate::Client::lease_time_to_live`] reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaseInfo {
    /// The lease.
    pub lease_id: u64,
    /// Its TTL, in milliseconds.
    pub ttl_ms: u64,
    /// Time left on the serving leader's clock, in milliseconds.
    pub ttl_remaining_ms: u64,
    /// Resources it holds, in name order.
    pub locks: Vec<String>,
    /// Resources it waits on, in name order.
    pub waits: Vec<String>,
    /// True when a leader change's grace was given since its last renew.
    pub graced: bool,
}

/// The answer to a release.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReleaseResult {
    /// The resource released.
    pub resource: String,
    /// The lease that held it.
    pub lease_id: u64,
    /// True when the grant was released by this request (or its first
    /// attempt).
    pub released: bool,
}

/// What a [`Client::cancel_wait`](crate::Client::cancel_wait) did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CancelWaitOutcome {
    /// The waiter left the queue.
    Removed,
    /// The grant had won the race; it was released (the next waiter is
    /// granted in the same entry).
    Released {
        /// The released grant's token.
        fencing_token: u64,
    },
    /// The acquire had not applied yet; it is refused ("cancelled") when
    /// it does, queueing nothing.
    Preempted,
    /// Nothing to cancel: the acquire had already ended (granted and
    /// released, timed out, refused, or its lease ended).
    Nothing,
}

/// The holder of a resource.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Holder {
    /// The lease holding the resource.
    pub lease_id: u64,
    /// The grant's fencing token.
    pub fencing_token: u64,
    /// Time left before the lease expires, as seen by the serving leader, in
    /// milliseconds.
    pub ttl_remaining_ms: u64,
    /// The lease's full TTL, in milliseconds.
    pub ttl_ms: u64,
    /// The value the holding lease published on this resource
    /// ([`Leadership::proclaim`](crate::Leadership::proclaim) /
    /// [`Election::campaign`](crate::Election::campaign)); empty if none.
    pub value: String,
    /// [`GrantKind::Shared`] or [`GrantKind::Exclusive`] for a read-write
    /// lock's holder, [`GrantKind::Mutex`] for a mutex's holder or a permit
    /// (whose [`slot`](Holder::slot) is set).
    pub mode: GrantKind,
    /// A permit's slot; `None` for the other kinds.
    pub slot: Option<u32>,
}

/// A linearizable read of one resource.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatusResult {
    /// The resource read.
    pub resource: String,
    /// Its exclusive holder (a mutex's or a read-write lock's writer);
    /// `None` when free or held by readers or permits (see
    /// [`holders`](StatusResult::holders)).
    pub holder: Option<Holder>,
    /// Every holder: the exclusive one, or each reader or permit, by lease
    /// id. Empty when free (or from a server that predates lock kinds and
    /// reports only `holder`; then this is that one holder).
    pub holders: Vec<Holder>,
    /// The resource's kind while anything is on it; `None` when it is free.
    pub kind: Option<ResourceKind>,
    /// Waiters queued on it.
    pub waiters: u64,
    /// The log index the read was served at.
    pub read_index: u64,
    /// When it is free because of a lock-delay after an involuntary loss
    /// (expiry, forced release): the lock-delay left, in milliseconds on the
    /// serving leader's clock (display only, rounded up, as
    /// [`Holder::ttl_remaining_ms`]); no grant is made before it ends.
    /// `None`: no lock-delay (or a server that does not say).
    pub lock_delay_remaining_ms: Option<u64>,
}

/// A token's standing, as [`Client::validate`](crate::Client::validate) reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenState {
    /// The resource's current holder holds the grant with this token.
    Current,
    /// The cluster issued this token, and it is not the resource's current
    /// grant: refuse writes that carry it.
    Stale,
    /// The cluster never issued this token.
    Unknown,
}

impl TokenState {
    /// `current`, `stale` or `unknown`.
    pub fn as_str(self) -> &'static str {
        match self {
            TokenState::Current => "current",
            TokenState::Stale => "stale",
            TokenState::Unknown => "unknown",
        }
    }
}

/// The reply to a validate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ValidateResult {
    /// The resource read.
    pub resource: String,
    /// The token checked.
    pub fencing_token: u64,
    /// Its standing.
    pub state: TokenState,
    /// The current holder's token; `None` when the resource is free.
    pub holder_token: Option<u64>,
    /// The log index the read was served at.
    pub read_index: u64,
}

impl From<v1::ValidateResponse> for ValidateResult {
    fn from(v: v1::ValidateResponse) -> Self {
        let state = match v1::TokenState::try_from(v.state) {
            Ok(v1::TokenState::Current) => TokenState::Current,
            Ok(v1::TokenState::Stale) => TokenState::Stale,
            // An unspecified or newer state is not "current": treat it as unknown.
            _ => TokenState::Unknown,
        };
        ValidateResult {
            resource: v.resource,
            fencing_token: v.fencing_token,
            state,
            holder_token: (v.holder_token != 0).then_some(v.holder_token),
            read_index: v.read_index,
        }
    }
}

/// One member of the cluster, as the leader sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    /// Node id.
    pub id: u64,
    /// Client address, `host:port` (also its peer address unless
    /// `peer_addr` is given).
    pub addr: String,
    /// Its peer (Raft) service's own address, when it serves that apart
    /// (`warden server --peer-listen`); clients never use it.
    pub peer_addr: Option<String>,
    /// `leader`, `follower`, `learner`, `candidate` or `unknown`.
    pub role: String,
    /// Last log index applied to its lock table.
    pub applied_index: u64,
    /// Milliseconds since the leader last heard from it (0 for the answering
    /// node itself); `None` when never heard from, or unknown (a follower
    /// answered).
    pub last_contact_ms: Option<u64>,
    /// Last log index known to match the leader's; 0 if unknown.
    pub matched_index: u64,
    /// The member's term as the leader knows it (the leader's own term for
    /// itself and for every member that acknowledged it recently); 0 if
    /// unknown.
    pub term: u64,
    /// Replication lag in log entries: the leader's last log index minus
    /// the member's matched index (0 for the leader itself).
    pub lag_entries: u64,
}

/// The cluster's timing parameters, limits and derived bounds, in
/// milliseconds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Timing {
    /// The `--timing` preset the answering node's values started from
    /// (`lan` or `wan`; "" from a server that does not say). The fields
    /// below are the values in effect, after any explicit flag.
    pub preset: String,
    /// Raft heartbeat interval.
    pub heartbeat_ms: u64,
    /// Election timeout, lower bound.
    pub election_timeout_min_ms: u64,
    /// Election timeout, upper bound.
    pub election_timeout_max_ms: u64,
    /// Grace a new leader gives each lease once.
    pub promotion_grace_ms: u64,
    /// Window in which renewals are batched into one entry.
    pub renew_batch_window_ms: u64,
    /// Shortest TTL.
    pub min_ttl_ms: u64,
    /// Longest TTL.
    pub max_ttl_ms: u64,
    /// Longest wait timeout.
    pub max_wait_timeout_ms: u64,
    /// Longest lock-delay.
    pub max_lock_delay_ms: u64,
    /// E: the most a lease may outlive its TTL before it is ended and its
    /// locks handed on (promotion grace + max election timeout + duty
    /// interval + heartbeat).
    pub bound_e_ms: u64,
    /// G: the grace a new leader gives each lease once (L4).
    pub bound_g_ms: u64,
    /// The shortest timeout of a peer call: half the minimum election
    /// timeout (0 from a server that does not say).
    pub call_timeout_floor_ms: u64,
}

/// Membership, roles and indexes, as seen by the leader.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterStatus {
    /// The cluster's id, minted at bootstrap.
    pub cluster_id: String,
    /// The leader's node id; 0 if none is known.
    pub leader_id: u64,
    /// The current Raft term.
    pub term: u64,
    /// The leader's commit index.
    pub commit_index: u64,
    /// Every member, ordered by id as the server sent them.
    pub members: Vec<Member>,
    /// Timing, limits and bounds; `None` if the server sent none.
    pub timing: Option<Timing>,
    /// The node that answered.
    pub node_id: u64,
    /// The leader's last log index (lag is measured against it).
    pub last_log_index: u64,
    /// The node that answered runs without certificates (`warden server
    /// --insecure`): plaintext, every caller anonymous.
    pub insecure: bool,
    /// The prefix of every election's resource key, as the server names it
    /// ("" from a server that does not say).
    pub election_prefix: String,
    /// Mutating requests a client may have in flight beyond its
    /// acknowledged watermark (0 from a server that does not say).
    pub max_requests_in_flight: u64,
    /// The oldest log format among the members, each as the answering node
    /// knows it (0 while one is unknown): the formats its leader-side gates
    /// count on (docs/operations.md, "Rolling restart").
    pub members_log_format: u32,
    /// Node ids whose Raft calls the answering node refuses as unconfirmed
    /// members (its membership does not name them and a majority of the
    /// voters it knows did not confirm them); empty from a server that does
    /// not say.
    pub unconfirmed_peers: Vec<u64>,
}

impl From<v1::Granted> for AcquireResult {
    fn from(g: v1::Granted) -> Self {
        AcquireResult::Granted {
            resource: g.resource,
            lease_id: g.lease_id,
            fencing_token: g.fencing_token,
            ttl_ms: g.ttl_ms,
            slot: g.slot,
            grants: g
                .grants
                .into_iter()
                .map(|t| ResourceToken {
                    resource: t.resource,
                    fencing_token: t.fencing_token,
                })
                .collect(),
        }
    }
}

impl From<v1::NotGranted> for AcquireResult {
    fn from(n: v1::NotGranted) -> Self {
        AcquireResult::NotGranted {
            resource: n.resource,
            holder_lease_id: (n.holder_lease_id != 0).then_some(n.holder_lease_id),
            reason: NotGrantedReason::from_wire(&n.reason),
            lock_delay_remaining_ms: (n.lock_delay_remaining_ms != 0)
                .then_some(n.lock_delay_remaining_ms),
        }
    }
}

/// A holder's wire `LockMode` as a [`GrantKind`]: `Shared` or `Exclusive`
/// for a read-write lock's holder, `Mutex` for a mutex's or a permit.
pub(crate) fn grant_mode_of(mode: i32) -> GrantKind {
    match v1::LockMode::try_from(mode) {
        Ok(v1::LockMode::Shared) => GrantKind::Shared,
        Ok(v1::LockMode::Exclusive) => GrantKind::Exclusive,
        _ => GrantKind::Mutex,
    }
}

impl From<v1::Holder> for Holder {
    fn from(h: v1::Holder) -> Self {
        let mode = grant_mode_of(h.mode);
        Holder {
            lease_id: h.lease_id,
            fencing_token: h.fencing_token,
            ttl_remaining_ms: h.ttl_remaining_ms,
            ttl_ms: h.ttl_ms,
            value: h.value,
            mode,
            slot: h.slot,
        }
    }
}

impl From<v1::StatusResponse> for StatusResult {
    fn from(s: v1::StatusResponse) -> Self {
        let holder = s.holder.map(Holder::from);
        let mut holders: Vec<Holder> = s.holders.into_iter().map(Holder::from).collect();
        if holders.is_empty() {
            // A server that predates lock kinds names only the one holder.
            holders.extend(holder.clone());
        }
        StatusResult {
            resource: s.resource,
            holder,
            holders,
            kind: ResourceKind::from_wire(&s.kind, s.limit),
            waiters: s.waiters,
            read_index: s.read_index,
            lock_delay_remaining_ms: (s.lock_delay_remaining_ms != 0)
                .then_some(s.lock_delay_remaining_ms),
        }
    }
}

impl From<v1::Timing> for Timing {
    fn from(t: v1::Timing) -> Self {
        Timing {
            heartbeat_ms: t.heartbeat_ms,
            election_timeout_min_ms: t.election_timeout_min_ms,
            election_timeout_max_ms: t.election_timeout_max_ms,
            promotion_grace_ms: t.promotion_grace_ms,
            renew_batch_window_ms: t.renew_batch_window_ms,
            min_ttl_ms: t.min_ttl_ms,
            max_ttl_ms: t.max_ttl_ms,
            max_wait_timeout_ms: t.max_wait_timeout_ms,
            max_lock_delay_ms: t.max_lock_delay_ms,
            bound_e_ms: t.bound_e_ms,
            bound_g_ms: t.bound_g_ms,
            preset: t.preset,
            call_timeout_floor_ms: t.call_timeout_floor_ms,
        }
    }
}

impl From<v1::ClusterStatusResponse> for ClusterStatus {
    fn from(c: v1::ClusterStatusResponse) -> Self {
        ClusterStatus {
            cluster_id: c.cluster_id,
            leader_id: c.leader_id,
            term: c.term,
            commit_index: c.commit_index,
            members: c
                .members
                .into_iter()
                .map(|m| Member {
                    id: m.id,
                    addr: m.addr,
                    peer_addr: (!m.peer_addr.is_empty()).then_some(m.peer_addr),
                    role: m.role,
                    applied_index: m.applied_index,
                    last_contact_ms: m.contacted.then_some(m.last_contact_ms),
                    matched_index: m.matched_index,
                    term: m.term,
                    lag_entries: m.lag_entries,
                })
                .collect(),
            timing: c.timing.map(Timing::from),
            node_id: c.node_id,
            last_log_index: c.last_log_index,
            insecure: c.insecure,
            election_prefix: c.election_prefix,
            max_requests_in_flight: c.max_requests_in_flight,
            members_log_format: c.members_log_format,
            unconfirmed_peers: c.unconfirmed_peers,
        }
    }
}

/// Whole milliseconds of `d`, saturating (the server refuses what is out of
/// bounds, naming the field and the limit).
pub(crate) fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    // The wire's lock-delay fields (warden.proto): 0 is "none", and a
    // `Queued` report says what it waits behind; an unknown or missing
    // `behind` (an older server) is Unknown, never a guess.
    #[test]
    fn lock_delay_and_queue_fields_from_the_wire() {
        let refused = AcquireResult::from(v1::NotGranted {
            resource: "r".into(),
            holder_lease_id: 0,
            reason: "lock_delay".into(),
            lock_delay_remaining_ms: 3_900,
        });
        assert_eq!(
            refused,
            AcquireResult::NotGranted {
                resource: "r".into(),
                holder_lease_id: None,
                reason: NotGrantedReason::LockDelay,
                lock_delay_remaining_ms: Some(3_900),
            }
        );
        let status = StatusResult::from(v1::StatusResponse {
            resource: "r".into(),
            holder: None,
            waiters: 1,
            read_index: 9,
            lock_delay_remaining_ms: 0,
            ..Default::default()
        });
        assert_eq!(status.lock_delay_remaining_ms, None);
        let queued = |behind: &str, position| {
            Queued::from(v1::Queued {
                position,
                lease_id: 8,
                behind: behind.into(),
                holder_lease_id: if behind == "holder" { 7 } else { 0 },
                lock_delay_remaining_ms: if behind == "lock_delay" { 2_000 } else { 0 },
            })
            .behind
        };
        assert_eq!(queued("holder", 1), QueueBehind::Holder { lease_id: 7 });
        assert_eq!(
            queued("lock_delay", 1),
            QueueBehind::LockDelay {
                remaining_ms: 2_000
            }
        );
        assert_eq!(queued("waiters", 4), QueueBehind::Waiters { count: 3 });
        assert_eq!(queued("", 1), QueueBehind::Unknown);
        assert_eq!(queued("a later kind", 1), QueueBehind::Unknown);
    }
}
