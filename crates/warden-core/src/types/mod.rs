//! Identifiers, the versioned log entry, its commands and their responses.
//!
//! Everything here is replicated: it is encoded with postcard into Raft log
//! entries and snapshots, so field order and enum variant order are part of the
//! on-disk format. Add new variants at the end of an enum only; never reorder.
//! The auth table's changes, quotas and limits are in `auth.rs`.

use serde::{Deserialize, Serialize};

mod auth;

pub use auth::{AuthAuditRecord, AuthChange, AuthOp, Authorized, ClusterLimits, DenyTarget, Quota};

/// A lease id, from the replicated `next_lease_id` counter; never reused, < 2^53.
pub type LeaseId = u64;
/// A fencing token, from the replicated `next_token` counter (S2); < 2^53.
pub type FencingToken = u64;
/// A Raft log index.
pub type LogIndex = u64;
/// A client instance's id, chosen by the client at random (never 0).
pub type ClientId = u64;
/// A request id, unique per client, growing by one per new request (never 0).
pub type RequestId = u64;

/// The leader of one term: its term and node id. A stamp names the leader
/// that made it; apply compares it with the leader id in the entry's own
/// log id and ignores a stamp on a mismatch (docs/semantics.md "Time").
#[derive(
    Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default,
)]
pub struct LeaderId {
    /// Raft term.
    pub term: u64,
    /// Node id of the leader of that term.
    pub node_id: u64,
}

/// Identifies a mutating request for exactly-once effect (S7).
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct RequestHeader {
    /// Chosen by the client; never 0.
    pub client_id: ClientId,
    /// Grows by one per new request; a retry reuses it; never 0.
    pub request_id: RequestId,
    /// Every request id <= this has been answered to the client: the table may
    /// forget those outcomes.
    pub acked_request_id: RequestId,
}

/// Cluster time as the proposing leader read it (docs/semantics.md "Time"):
/// milliseconds on the cluster clock, rounded down, and the leader whose
/// clock it is. Apply moves the table's `now` to `max(now, at_ms)` when
/// `leader` is the leader in the entry's own log id, and ignores the stamp
/// otherwise.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Stamp {
    /// The leader that read its clock.
    pub leader: LeaderId,
    /// Cluster time in milliseconds.
    pub at_ms: u64,
}

/// One Raft log entry's payload (log format 1): the stamp and the command.
/// A packed batch ([`Command::Batch`]) shares its entry's one stamp, and
/// S7's comparison of a retried command never sees it.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct LogEntry {
    /// The proposer's cluster time.
    pub stamp: Stamp,
    /// What to apply.
    pub command: Command,
}

/// A state-machine command. A later log format appends variants at the end
/// only, and the leader proposes one only once every member reads it.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub enum Command {
    /// Acquire a lock of any kind, or a multi-lock, creating a lease or
    /// using an existing one ([`Acquire`] says which shape is which and
    /// how each is answered).
    Acquire(Acquire),
    /// Release one exact grant (S6).
    Release(Release),
    /// Renew every named lease (S4: renewals are committed, in batches).
    RenewBatch(RenewBatch),
    /// Create a lease (a session) with no lock.
    LeaseGrant(LeaseGrant),
    /// Revoke a lease: frees all its locks and waits.
    Revoke(Revoke),
    /// A new leader's first entry (L4): no lease renewed since the previous
    /// leader's promote ends before `no_expiry_before_ms`.
    Promote(Promote),
    /// Drops idle clients' outcome records (S7).
    DropClients(DropClients),
    /// Admin: release someone else's grant (an involuntary loss: lock-delay applies).
    ForceRelease(ForceRelease),
    /// Changes nothing but what every entry does: moves cluster time and
    /// ends due items (docs/semantics.md "Time"). The leader's tick, and a
    /// barrier.
    Tick,
    /// Operator: raise the fencing-token counter above a floor (docs/semantics.md
    /// "Membership and data loss").
    RaiseTokenFloor(RaiseTokenFloor),
    /// Publish a value for a lease on a resource (an election's candidate or
    /// leader value, etcd's `Proclaim`).
    Proclaim(Proclaim),
    /// Several commands packed by the leader into one entry when they queued
    /// at the same moment (docs/performance.md). Applied as each command in
    /// order, all at this entry's log index and stamp, each with its
    /// own response in [`Response::Batch`]; one command's refusal neither
    /// fails nor undoes the others. 1..=[`crate::limits::MAX_BATCH_COMMANDS`]
    /// commands, none of them a `Batch`; otherwise the whole entry is refused
    /// (field `commands`) and nothing changes. A batch may hold
    /// [`Command::Authorized`] commands, each checked on its own.
    Batch(Vec<Command>),
    /// A client command made on behalf of a principal (or of an anonymous
    /// caller in an insecure cluster). Apply checks permission, lease
    /// ownership and quotas against the table at this entry's index; see
    /// [`crate::auth`] for the rules and their order.
    Authorized(Authorized),
    /// A change of roles, grants, quotas or limits. Valid only inside
    /// [`Command::Authorized`] (the principal must be known); alone it is
    /// refused (InvalidArgument, field `command`). Needs admin on `""`.
    AuthChange(AuthChange),
    /// Takes back a waiting acquire its caller abandoned (S8: a waiter whose
    /// client cancelled is removed and never granted): removes the waiter,
    /// or, if the grant won the race, releases that grant; an acquire that
    /// has not applied yet is refused when it does. Exactly-once with its own
    /// request header (S7). Needs no permission: it names the caller's own
    /// acquire (same principal and client id).
    CancelWait(CancelWait),
}

impl Command {
    /// The acquire of a [`Command::Acquire`] (also inside a
    /// [`Command::Authorized`]).
    pub fn acquire(&self) -> Option<&Acquire> {
        match self.unwrapped() {
            Command::Acquire(a) => Some(a),
            _ => None,
        }
    }

    /// The command a client asked for: the inner command of a
    /// [`Command::Authorized`], else the command itself.
    pub fn unwrapped(&self) -> &Command {
        match self {
            Command::Authorized(w) => &w.command,
            c => c,
        }
    }

    /// The principal a [`Command::Authorized`] names (None for an anonymous
    /// caller and for any other command).
    pub fn principal(&self) -> Option<&Principal> {
        match self {
            Command::Authorized(w) => w.principal.as_ref(),
            _ => None,
        }
    }

    /// The request header (S7) of a client command (`Acquire`, `Release`,
    /// `Revoke`, `LeaseGrant`, `ForceRelease`, `AuthChange`), also inside a
    /// [`Command::Authorized`].
    pub fn request_header(&self) -> Option<&RequestHeader> {
        match self.unwrapped() {
            Command::Acquire(a) => Some(&a.header),
            Command::Release(r) => Some(&r.header),
            Command::Revoke(r) => Some(&r.header),
            Command::LeaseGrant(g) => Some(&g.header),
            Command::ForceRelease(f) => Some(&f.header),
            Command::AuthChange(c) => Some(&c.header),
            Command::CancelWait(c) => Some(&c.header),
            _ => None,
        }
    }
}

/// How an acquire gets its lease.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
pub enum LeaseSpec {
    /// Create a lease with this TTL; it dies with the release of its last lock.
    New {
        /// TTL in milliseconds, within [`crate::limits::MIN_TTL_MS`]..=[`crate::limits::MAX_TTL_MS`].
        ttl_ms: u64,
    },
    /// Use an existing live lease (a session).
    Existing {
        /// The lease.
        lease_id: LeaseId,
    },
}

/// An acquire: of one lock of any kind (`resources` empty), or of a
/// multi-lock of mutexes (docs/semantics.md "Multi-locks"). The shapes and
/// their answers:
///
/// - a mutex, (`Mutex`, `Exclusive`) with `max_hold_ms` 0: answered with
///   [`Response::Acquire`];
/// - another kind, or any kind with a max-hold: answered with
///   [`Response::AcquireKind`] (the semaphore slot beside the reply);
/// - a multi-lock, `resources` set (its first is `resource`), a mutex with
///   no max-hold: answered with [`Response::AcquireMulti`].
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct Acquire {
    /// Exactly-once header.
    pub header: RequestHeader,
    /// 1..=512 bytes of UTF-8, no control characters; a multi-lock's first
    /// resource.
    pub resource: String,
    /// Empty for one lock; a multi-lock's every resource, in the caller's
    /// order: 1..=[`crate::limits::MAX_MULTI_RESOURCES`], no duplicates,
    /// the first equal to `resource`.
    pub resources: Vec<String>,
    /// The kind of lock the caller expects the resource to be.
    pub kind: LockKind,
    /// How the grant holds it: (`ReadWrite`, `Shared`) for a reader,
    /// (`ReadWrite`, `Exclusive`) for a writer, (`Semaphore`, `Shared`) for
    /// a permit, (`Mutex`, `Exclusive`) for a mutex; every other pairing is
    /// refused (field `mode`).
    pub mode: Mode,
    /// The lease to grant on.
    pub lease: LeaseSpec,
    /// 0 = try-lock; at most [`crate::limits::MAX_WAIT_TIMEOUT_MS`].
    pub wait_timeout_ms: u64,
    /// Lock-delay after an involuntary loss of this grant; at most
    /// [`crate::limits::MAX_LOCK_DELAY_MS`].
    pub lock_delay_ms: u64,
    /// 0 = none; else the most the grant may be held, in milliseconds,
    /// counted from the entry that makes it, however often its lease is
    /// renewed (docs/semantics.md "Max-hold"):
    /// [`crate::limits::MIN_MAX_HOLD_MS`]..=[`crate::limits::MAX_MAX_HOLD_MS`],
    /// and above the wait timeout. Not for a multi-lock.
    pub max_hold_ms: u64,
}

impl Acquire {
    /// A mutex acquire of `resource`.
    pub fn mutex(
        header: RequestHeader,
        resource: impl Into<String>,
        lease: LeaseSpec,
        wait_timeout_ms: u64,
        lock_delay_ms: u64,
    ) -> Self {
        Acquire {
            header,
            resource: resource.into(),
            resources: Vec::new(),
            kind: LockKind::Mutex,
            mode: Mode::Exclusive,
            lease,
            wait_timeout_ms,
            lock_delay_ms,
            max_hold_ms: 0,
        }
    }

    /// A multi-lock of `resources` (its `resource` is their first, or "").
    pub fn multi(
        header: RequestHeader,
        resources: Vec<String>,
        lease: LeaseSpec,
        wait_timeout_ms: u64,
        lock_delay_ms: u64,
    ) -> Self {
        let first = resources.first().cloned().unwrap_or_default();
        Acquire {
            resources,
            ..Acquire::mutex(header, first, lease, wait_timeout_ms, lock_delay_ms)
        }
    }

    /// This acquire as one of `kind` held in `mode`.
    pub fn of_kind(self, kind: LockKind, mode: Mode) -> Self {
        Acquire { kind, mode, ..self }
    }

    /// This acquire with a max-hold of `max_hold_ms`.
    pub fn with_max_hold(self, max_hold_ms: u64) -> Self {
        Acquire {
            max_hold_ms,
            ..self
        }
    }

    /// True for a multi-lock.
    pub fn is_multi(&self) -> bool {
        !self.resources.is_empty()
    }

    /// True for a mutex with no max-hold (answered with
    /// [`Response::Acquire`]).
    pub fn is_plain_mutex(&self) -> bool {
        !self.is_multi()
            && self.kind == LockKind::Mutex
            && self.mode == Mode::Exclusive
            && self.max_hold_ms == 0
    }
}

/// What kind of lock a resource is (docs/semantics.md "Lock kinds"). A
/// resource keeps one kind while it has holders, waiters or a lock-delay;
/// an acquire of another kind (or another limit) is refused with
/// FailedPrecondition naming the current kind.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Default, PartialOrd, Ord)]
pub enum LockKind {
    /// One exclusive holder.
    #[default]
    Mutex,
    /// Shared holders together, or one exclusive holder.
    ReadWrite,
    /// At most `limit` holders, each with a slot in `0..limit`.
    Semaphore {
        /// 1..=[`crate::limits::MAX_SEMAPHORE_LIMIT`].
        limit: u32,
    },
}

impl std::fmt::Display for LockKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LockKind::Mutex => f.write_str("mutex"),
            LockKind::ReadWrite => f.write_str("read-write lock"),
            LockKind::Semaphore { limit } => write!(f, "semaphore of {limit} permits"),
        }
    }
}

/// How a grant (or a waiter) holds its resource.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Default, PartialOrd, Ord)]
pub enum Mode {
    /// Alone: a mutex, or a read-write lock's writer.
    #[default]
    Exclusive,
    /// Beside others: a read-write lock's reader, or a semaphore permit.
    Shared,
}

impl std::fmt::Display for Mode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Mode::Exclusive => "exclusive",
            Mode::Shared => "shared",
        })
    }
}

/// One resource of a multi-grant and its own fencing token.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct ResourceToken {
    /// The resource.
    pub resource: String,
    /// The token of its grant (S2).
    pub fencing_token: FencingToken,
}

/// Release one grant.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct Release {
    /// Exactly-once header.
    pub header: RequestHeader,
    /// None = the lease's single lock (refused if it holds more than one).
    pub resource: Option<String>,
    /// The lease holding it.
    pub lease_id: LeaseId,
    /// None = whatever grant the lease holds on the resource; Some = exactly this one.
    pub fencing_token: Option<FencingToken>,
}

/// Renew leases: each named lease that is still live restarts its countdown
/// with its full TTL, and loses its used grace (`graced = false`).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct RenewBatch {
    /// Leases renewed in this batch window (deduplicated, sorted).
    pub lease_ids: Vec<LeaseId>,
}

/// Create a lease with no lock (a session).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct LeaseGrant {
    /// Exactly-once header.
    pub header: RequestHeader,
    /// TTL in milliseconds.
    pub ttl_ms: u64,
}

/// Revoke a lease: its owner's (a clean end: no lock-delay), or, by a
/// principal with `admin` on `""`, anyone's (an involuntary loss of every
/// grant it holds, each with its own audit record, as a forced release:
/// docs/security.md "Undoing a principal").
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct Revoke {
    /// Exactly-once header.
    pub header: RequestHeader,
    /// The lease.
    pub lease_id: LeaseId,
    /// The proposer's wall clock, display only: the audit records of an
    /// admin's revoke of another principal's lease carry it.
    pub at_unix_ms: u64,
}

/// A new leader's first entry (docs/semantics.md "Time", L4). Applied only
/// when its stamp is its own log id's leader's.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
pub struct Promote {
    /// The leader's base time plus the grace G, in cluster-time
    /// milliseconds: a lease granted or renewed after the previous promote
    /// does not end before it.
    pub no_expiry_before_ms: u64,
}

/// Drops idle clients' outcome records.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct DropClients {
    /// The proposer.
    pub leader: LeaderId,
    /// (client, the `last_index` of its record as the proposer saw it).
    pub clients: Vec<(ClientId, LogIndex)>,
}

/// Raises the fencing-token counter after a restore from backup or a total
/// loss, so that new tokens are above any token ever issued (S2).
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
pub struct RaiseTokenFloor {
    /// Every later grant's token is greater than `floor`. Never lowers the
    /// counter (a lower floor changes nothing). At most
    /// [`crate::limits::MAX_ID`] − 1.
    pub floor: FencingToken,
}

/// Takes back the waiting acquire `acquire_request_id` of the same client
/// (see [`Command::CancelWait`]).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct CancelWait {
    /// Exactly-once header of the cancel itself; its `request_id` is above
    /// `acquire_request_id` (the cancel follows the acquire).
    pub header: RequestHeader,
    /// The request id of the acquire to take back (same client id).
    pub acquire_request_id: RequestId,
    /// The resource that acquire asked for; a mismatch is refused.
    pub resource: String,
}

/// What a [`CancelWait`] did.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
pub enum CancelOutcome {
    /// The acquire was queued: its waiter left the queue.
    Removed,
    /// The acquire had been granted (it won the race): that grant was
    /// released (a clean release: no lock-delay; the next waiter is granted
    /// in the same entry).
    Released,
    /// The acquire had not applied yet: it will be refused when it applies
    /// (`NotGranted`, reason `Cancelled`), queueing nothing.
    Preempted,
    /// The acquire no longer waits or holds (it timed out, was refused, or
    /// its lease ended): nothing changed.
    NothingToCancel,
}

/// Publishes `value` for `lease_id` on `resource` (elections: the value a
/// campaigner stands with, and that `leader` and `observe` report while it
/// holds). Idempotent: a retry sets the same value again. The value lives
/// until the lease ends, the grant it was published under ends, or a later
/// `Proclaim` replaces it.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct Proclaim {
    /// The resource (usually an election key, see
    /// [`crate::limits::ELECTION_PREFIX`]).
    pub resource: String,
    /// The live lease publishing the value.
    pub lease_id: LeaseId,
    /// None: a candidate's value, published before it holds (the lease need
    /// not hold or wait). Some: the lease must hold `resource` with exactly
    /// this grant, else FailedPrecondition (a deposed leader cannot proclaim).
    pub fencing_token: Option<FencingToken>,
    /// At most [`crate::limits::MAX_VALUE_BYTES`] bytes of UTF-8.
    pub value: String,
}

/// Admin release of any holder's grant.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct ForceRelease {
    /// Exactly-once header.
    pub header: RequestHeader,
    /// The resource.
    pub resource: String,
    /// None = whoever holds it; Some = only this grant.
    pub fencing_token: Option<FencingToken>,
    /// Who asked, for the audit trail: 1..=[`crate::limits::MAX_REQUESTED_BY_BYTES`]
    /// bytes of UTF-8 without control characters (the proposing server fills
    /// it from the request and the caller's address).
    pub requested_by: String,
    /// Wall-clock time (ms since the Unix epoch) on the proposing server when
    /// it proposed the entry. DISPLAY ONLY (docs/semantics.md "Time": wall-clock stamps
    /// may ride in entries for audit): never compared, never used in logic,
    /// ignored by the S7 fingerprint.
    pub at_unix_ms: u64,
}

/// One forced release, as the replicated audit trail keeps it.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct AuditRecord {
    /// Index of the entry: a `ForceRelease`, or an admin's `Revoke` of
    /// another principal's lease.
    pub index: LogIndex,
    /// The resource.
    pub resource: String,
    /// The lease that held it.
    pub lease_id: LeaseId,
    /// The grant that was ended.
    pub fencing_token: FencingToken,
    /// Who asked (see [`ForceRelease::requested_by`]). For a forced release
    /// wrapped in [`Command::Authorized`] with a principal, the principal's
    /// name, followed by the request's `requested_by` in parentheses when
    /// that differs from the name (`alice (ops console 10.0.0.7)`).
    pub requested_by: String,
    /// The proposer's wall clock, display only (see [`ForceRelease::at_unix_ms`]).
    pub at_unix_ms: u64,
}

/// What applying a command answers.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub enum Response {
    /// For a mutex acquire (first or retried).
    Acquire(AcquireReply),
    /// For a release or force-release.
    Released {
        /// The resource released.
        resource: String,
        /// The lease that held it.
        lease_id: LeaseId,
        /// The grant released.
        fencing_token: FencingToken,
    },
    /// For a renew batch: per lease, its TTL if it was live and is now renewed,
    /// or None if it was unknown (expired, revoked or never existed).
    Renewed(Vec<(LeaseId, Option<u64>)>),
    /// For a lease grant.
    LeaseGranted {
        /// The new lease.
        lease_id: LeaseId,
        /// Its TTL in milliseconds.
        ttl_ms: u64,
    },
    /// For a revoke.
    Revoked {
        /// The lease revoked.
        lease_id: LeaseId,
    },
    /// For leader-duty entries, noop and membership entries.
    Done,
    /// The command was refused; nothing changed.
    Error(CommandError),
    /// For a proclaim: the value is published.
    Proclaimed {
        /// The resource.
        resource: String,
        /// The lease.
        lease_id: LeaseId,
    },
    /// For a [`Command::Batch`]: one response per command, in order.
    Batch(Vec<Response>),
    /// For an [`AuthChange`]: the change is applied and in the auth audit trail.
    AuthChanged,
    /// For a [`CancelWait`].
    WaitCancelled {
        /// The resource.
        resource: String,
        /// The acquire's lease (0 when the acquire had not applied).
        lease_id: LeaseId,
        /// What the cancel did.
        outcome: CancelOutcome,
        /// The grant released, for [`CancelOutcome::Released`].
        fencing_token: Option<FencingToken>,
    },
    /// For an acquire of another kind than a mutex, or with a max-hold
    /// (first or retried): the reply, and the
    /// slot of a semaphore permit the lease holds now (the resource-side
    /// fence checks a permit's token per slot: docs/fencing.md).
    AcquireKind {
        /// As for a mutex acquire.
        reply: AcquireReply,
        /// The permit's slot in `0..limit`, while the lease holds one.
        slot: Option<u32>,
    },
    /// For a multi-lock's acquire (first or retried): the reply (its
    /// outcome names the first resource), and one token per resource, in
    /// the request's order, while the lease holds the multi-grant.
    AcquireMulti {
        /// As for a mutex acquire, of the first resource.
        reply: AcquireReply,
        /// Every resource and its token, while granted; empty otherwise.
        grants: Vec<ResourceToken>,
    },
}

/// An acquire's answer.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct AcquireReply {
    /// The outcome recorded when the acquire first applied.
    pub outcome: AcquireOutcome,
    /// True when this is a retry answered from the outcome table (S7).
    pub retried: bool,
    /// The lease's current state when the reply was made.
    pub lease_live: bool,
    /// The token the lease currently holds on the resource, if any.
    pub current_token: Option<FencingToken>,
}

/// An acquire's outcome.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub enum AcquireOutcome {
    /// Granted now (or already held by this lease: the existing grant, unchanged).
    Granted {
        /// The resource.
        resource: String,
        /// The lease holding it.
        lease_id: LeaseId,
        /// The grant's token.
        fencing_token: FencingToken,
        /// The lease's TTL in milliseconds.
        ttl_ms: u64,
        /// Index of the entry that made the grant.
        grant_index: LogIndex,
    },
    /// Enqueued; a later entry grants it or cancels it.
    Queued {
        /// The resource.
        resource: String,
        /// The lease waiting.
        lease_id: LeaseId,
        /// 1 = next in line.
        position: u64,
        /// Index of the enqueue entry.
        enqueue_index: LogIndex,
        /// TTL of the lease in milliseconds.
        ttl_ms: u64,
    },
    /// Not granted and not queued (try-lock on a held resource, or lock-delay).
    /// A lease created by this acquire is not kept.
    NotGranted {
        /// The resource.
        resource: String,
        /// The holder's lease, if held.
        holder_lease_id: Option<LeaseId>,
        /// Why.
        reason: NotGrantedReason,
    },
}

/// Why an acquire was not granted.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
pub enum NotGrantedReason {
    /// Another lease holds the resource.
    Held,
    /// The resource is in lock-delay.
    LockDelay,
    /// The wait timed out.
    WaitTimeout,
    /// Its caller took it back with a [`CancelWait`] before it applied.
    Cancelled,
    /// The resource is free but reserved: the head of its queue is a
    /// multi-lock still waiting for its other resources (docs/semantics.md
    /// "Multi-locks"), and nobody overtakes it.
    Reserved,
}

/// A refused command. Nothing changed in the table.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{code:?}: {message}")]
pub struct CommandError {
    /// The category, mapped one-to-one onto a gRPC status code.
    pub code: ErrorCode,
    /// The request field at fault, if any (e.g. "resource", "ttl_ms").
    pub field: Option<String>,
    /// Human-readable, names the limit where there is one.
    pub message: String,
}

/// Error categories; the server maps each onto one gRPC code.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorCode {
    /// Bad input: gRPC InvalidArgument.
    InvalidArgument,
    /// Unknown lease, resource or grant: gRPC NotFound.
    NotFound,
    /// Wrong state (stale token, wrong holder, several locks): gRPC FailedPrecondition.
    FailedPrecondition,
    /// A bound was reached: gRPC ResourceExhausted.
    ResourceExhausted,
    /// A retry whose outcome record is gone (S7): gRPC FailedPrecondition with
    /// message prefix `request_expired`.
    RequestExpired,
    /// The principal lacks the permission: gRPC PermissionDenied.
    PermissionDenied,
}

// ---------------------------------------------------------------- identities

/// A principal: the name of a client certificate (mutual TLS), 1..=64 bytes of
/// ASCII letters, digits, `.`, `_`, `-`, `@`, not starting with `.` or `-`
/// (it becomes a file name, `client.NAME.crt`). Build one with
/// [`Principal::new`] (defined in [`crate::validate`]); a principal decoded
/// from a log entry is checked again at apply, one from a snapshot on load.
/// The principal `root` holds admin on `""` always (see [`crate::auth`]).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Principal(String);

impl Principal {
    /// Wraps a name the caller has validated.
    pub(crate) fn from_checked(name: String) -> Self {
        Self(name)
    }

    /// The name.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::borrow::Borrow<str> for Principal {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for Principal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// What a grant allows. Each level includes the ones before it:
/// `Admin` ⊇ `Lock` ⊇ `Read` (the derived order: `Read < Lock < Admin`).
#[derive(
    Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default,
)]
pub enum Permission {
    /// List, watch, read holders and values.
    #[default]
    Read,
    /// Also acquire, wait, create leases, campaign and proclaim.
    Lock,
    /// Also force-release and change roles, grants, quotas and limits.
    Admin,
}

impl Permission {
    /// True when `self` includes `other` (`Admin` includes everything).
    pub fn includes(self, other: Permission) -> bool {
        self >= other
    }

    /// `read`, `lock` or `admin`.
    pub fn name(self) -> &'static str {
        match self {
            Permission::Read => "read",
            Permission::Lock => "lock",
            Permission::Admin => "admin",
        }
    }
}

impl std::fmt::Display for Permission {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}
