//! [`Admin`]: the operator's calls (`warden.v1.Admin`) on the client's one
//! leader-following loop, each with its retry class, and their results.
//!
//! | call | retried after | why |
//! |---|---|---|
//! | [`list`](Admin::list), [`top_locks`](Admin::top_locks), [`audit_trail`](Admin::audit_trail), [`save_snapshot`](Admin::save_snapshot), [`roles`](Admin::roles), [`users`](Admin::users), [`limits`](Admin::limits), [`auth_audit_trail`](Admin::auth_audit_trail), [`denied`](Admin::denied) | any failure that is not a final answer | reads (read-index): repeating one changes nothing |
//! | [`force_release`](Admin::force_release), [`grant_permission`](Admin::grant_permission), [`revoke_permission`](Admin::revoke_permission), [`delete_role`](Admin::delete_role), [`grant_role`](Admin::grant_role), [`revoke_role`](Admin::revoke_role), [`set_role_quota`](Admin::set_role_quota), [`set_limits`](Admin::set_limits), [`deny`](Admin::deny), [`undeny`](Admin::undeny) | any failure that is not a final answer | carries this client's id and a request id that every attempt reuses: the server applies it once (S7) |
//! | [`add_node`](Admin::add_node), [`remove_node`](Admin::remove_node), [`replace_node`](Admin::replace_node) | only an attempt that certainly did nothing: the connection never opened (refused, connect timeout), a redirect (`Unavailable` naming the leader), `Unimplemented`; and only while a whole attempt fits before the deadline | no request id: a repeated attempt is a second change. An attempt that timed out, a dropped connection, or `Unavailable` without a redirect ("did not commit within 10 s", "no quorum") may have been applied: the call ends with [`ClientError::OutcomeUnknown`] |
//!
//! Every call follows the leader like the lock calls (L3): a follower's
//! `warden-leader` hint is followed at once, unreachable nodes are skipped,
//! and the call fails with `NoQuorum` / `Unavailable` at its deadline.
//!
//! Permissions: each call needs the permission its method names (the
//! caller is the principal of the client's certificate); without it the
//! call fails with [`ClientError::PermissionDenied`], whose message names
//! the principal, the permission and the prefix, and nothing changed. On an
//! insecure cluster every caller is anonymous and passes every check, but
//! the calls that change something (and the snapshot) are refused unless
//! the serving node runs with `--insecure --allow-admin`.

use std::time::Duration;

use tokio::time::Instant;
use warden_proto::v1::{self, admin_client::AdminClient};

use crate::client::{checked_deadline, within, Client, Retry};
use crate::snapshot_stream::{
    Assembly, SnapshotStreamError, MAX_SNAPSHOT_CHUNK_MESSAGE_BYTES, MAX_UNARY_SNAPSHOT_BYTES,
};
use crate::ClientError;

mod auth;
mod deny;

pub use auth::{
    AuthAuditRecord, AuthAuditTrail, AuthChange, ClusterLimits, Limits, Permission, Quota,
    QuotaUsage, RoleGrant, RoleInfo, Roles, UserInfo, Users,
};
pub use deny::{DenyList, DenyTarget};

/// Longest wait for one attempt of a read or a forced release: 4 s (a
/// whole-table read or a snapshot may take longer than a lock call's
/// [`ClientOptions::attempt_timeout`](crate::ClientOptions::attempt_timeout)).
/// The call as a whole keeps the client's
/// [`deadline`](crate::ClientOptions::deadline).
pub const ADMIN_ATTEMPT_TIMEOUT: Duration = Duration::from_secs(4);

/// Longest wait for one attempt of a membership change: 45 s (the server
/// bounds a learner's catch-up by 30 s and the change's commit by 10 s).
pub const MEMBERSHIP_ATTEMPT_TIMEOUT: Duration = Duration::from_secs(45);

/// How long a membership change may take in all, redirects included: 60 s.
/// An attempt starts only while a whole [`MEMBERSHIP_ATTEMPT_TIMEOUT`] fits
/// before it, so redirects and connections that never opened are retried
/// during the first 15 s, and the deadline never cuts an attempt that may
/// have reached the leader.
pub const MEMBERSHIP_DEADLINE: Duration = Duration::from_secs(60);

/// The retry class of membership changes.
const MEMBERSHIP_RETRY: Retry = Retry::IfCertainlyNotApplied {
    attempt_timeout: MEMBERSHIP_ATTEMPT_TIMEOUT,
};

// The first attempt must fit before the deadline.
const _: () = assert!(MEMBERSHIP_ATTEMPT_TIMEOUT.as_secs() < MEMBERSHIP_DEADLINE.as_secs());

/// Longest wait for each message of a snapshot stream after the first
/// ([`Admin::save_snapshot`]): 4 s. A stream that stalls longer is refused
/// ([`SnapshotStreamError::Stalled`]).
pub const SNAPSHOT_MESSAGE_TIMEOUT: Duration = Duration::from_secs(4);

/// The operator's calls, on the leader; see the module's table for which of
/// them are retried after what. Made by [`Client::admin`]; cheap to clone.
#[derive(Debug, Clone)]
pub struct Admin {
    client: Client,
}

impl Client {
    /// The operator's calls ([`Admin`]) on this client: same endpoints,
    /// leader cache, client id and request ids.
    pub fn admin(&self) -> Admin {
        Admin {
            client: self.clone(),
        }
    }
}

impl Admin {
    /// Every resource whose name starts with `prefix` (empty: all), with its
    /// holder and its waiters in queue order; a linearizable read. Election
    /// keys are listed too ([`ListedLock::election`] names them).
    ///
    /// # Errors
    ///
    /// [`ClientError::InvalidArgument`] for a prefix over 512 bytes (or a
    /// request over the server's size limit); `NoQuorum` / `Unavailable`.
    pub async fn list(&self, prefix: impl Into<String>) -> Result<Listing, ClientError> {
        let request = v1::ListRequest {
            prefix: prefix.into(),
        };
        let request = &request;
        self.call("list", move |mut admin| async move {
            let reply = within(ADMIN_ATTEMPT_TIMEOUT, admin.list(request.clone())).await?;
            Ok(Listing::from(reply))
        })
        .await
    }

    /// The `limit` most contended resources whose name starts with
    /// `prefix` (empty: all), hottest first: by queue length, then the
    /// oldest waiter's age, then grants in the last minute; a linearizable
    /// read (the last minute's counts come from the leader's node-local
    /// window: display only). `limit` is 1 to 1,000.
    ///
    /// # Errors
    ///
    /// [`ClientError::InvalidArgument`] naming `limit` (0 or over 1,000) or
    /// `prefix` (over 512 bytes); `PermissionDenied` without `read` on a
    /// prefix of `prefix`; `NoQuorum` / `Unavailable`.
    pub async fn top_locks(
        &self,
        prefix: impl Into<String>,
        limit: u32,
    ) -> Result<TopLocks, ClientError> {
        let request = v1::TopLocksRequest {
            prefix: prefix.into(),
            limit,
        };
        let request = &request;
        self.call("top locks", move |mut admin| async move {
            let reply = within(ADMIN_ATTEMPT_TIMEOUT, admin.top_locks(request.clone())).await?;
            Ok(TopLocks {
                read_index: reply.read_index,
                locks: reply
                    .locks
                    .into_iter()
                    .map(|h| HotLock {
                        resource: h.resource,
                        queue_length: h.queue_length,
                        oldest_waiter_age_ms: h.oldest_waiter_age_ms,
                        grants_last_minute: h.grants_last_minute,
                        expiries_last_minute: h.expiries_last_minute,
                        wait_p99_ms: h.wait_p99_ms,
                    })
                    .collect(),
            })
        })
        .await
    }

    /// Releases whoever holds `resource` (only the grant with
    /// `fencing_token`, when given): an involuntary loss, so the holder's
    /// lock-delay applies and the next grant gets a larger token (S2).
    /// Recorded in the audit trail with `requested_by` (free text, at most
    /// 200 bytes; the server appends the caller's address). Retried with one
    /// request id (S7).
    ///
    /// # Errors
    ///
    /// [`ClientError::NotFound`] when nobody holds it (or not that grant);
    /// [`ClientError::PermissionDenied`] on a node without `--allow-admin`;
    /// `InvalidArgument` naming the field; `NoQuorum` / `Unavailable`;
    /// `RequestExpired`.
    pub async fn force_release(
        &self,
        resource: impl Into<String>,
        fencing_token: Option<u64>,
        requested_by: impl Into<String>,
    ) -> Result<ForceReleased, ClientError> {
        let in_flight = self.client.begin_request().await;
        let request = v1::ForceReleaseRequest {
            header: Some(self.client.header(&in_flight)),
            resource: resource.into(),
            fencing_token: fencing_token.unwrap_or(0),
            requested_by: requested_by.into(),
        };
        let request = &request;
        let result = self
            .call("force release", move |mut admin| async move {
                let reply =
                    within(ADMIN_ATTEMPT_TIMEOUT, admin.force_release(request.clone())).await?;
                Ok(ForceReleased {
                    resource: reply.resource,
                    lease_id: reply.lease_id,
                    fencing_token: reply.fencing_token,
                })
            })
            .await;
        drop(in_flight);
        result
    }

    /// The replicated trail of forced releases (the last 1,000), oldest
    /// first; a linearizable read.
    ///
    /// # Errors
    ///
    /// `NoQuorum` / `Unavailable`.
    pub async fn audit_trail(&self) -> Result<AuditTrail, ClientError> {
        self.call("audit trail", move |mut admin| async move {
            let reply = within(
                ADMIN_ATTEMPT_TIMEOUT,
                admin.audit_trail(v1::AuditTrailRequest {}),
            )
            .await?;
            Ok(AuditTrail::from(reply))
        })
        .await
    }

    /// A consistent snapshot of the lock table: the leader's state machine at
    /// its applied index, after a read-index confirmation. Needs `admin` on
    /// `""`.
    ///
    /// Asks for `SaveSnapshotStream`: a head with the metadata and the
    /// length, then the data in messages of at most
    /// [`MAX_SNAPSHOT_CHUNK_BYTES`](crate::MAX_SNAPSHOT_CHUNK_BYTES) (1 MiB),
    /// the last marked done; at most
    /// [`MAX_SNAPSHOT_BYTES`](crate::MAX_SNAPSHOT_BYTES) (4 GiB) in all.
    /// Finding the leader and its head is retried like any read, within the
    /// client's deadline and [`ADMIN_ATTEMPT_TIMEOUT`] per attempt; the data
    /// then flows as long as each message comes within
    /// [`SNAPSHOT_MESSAGE_TIMEOUT`] (so a large snapshot is not cut by the
    /// deadline). A node that answers `Unimplemented` (from before the
    /// stream) is asked the one-message `SaveSnapshot` instead, up to
    /// [`MAX_UNARY_SNAPSHOT_BYTES`](crate::MAX_UNARY_SNAPSHOT_BYTES)
    /// (256 MiB).
    ///
    /// # Errors
    ///
    /// [`ClientError::SnapshotStream`] for a stream that breaks its rules
    /// (cut off before done, more or fewer bytes than declared, a bound
    /// exceeded, a failure or a stall mid-way); `PermissionDenied` without
    /// `admin` on `""` (or on an insecure node without `--allow-admin`);
    /// `InvalidArgument` for an older node's snapshot over 256 MiB;
    /// `NoQuorum` / `Unavailable`.
    pub async fn save_snapshot(&self) -> Result<SavedSnapshot, ClientError> {
        let opened = self
            .call("save snapshot", move |admin| async move {
                let mut streaming = admin
                    .clone()
                    .max_decoding_message_size(MAX_SNAPSHOT_CHUNK_MESSAGE_BYTES);
                let opened = within(
                    ADMIN_ATTEMPT_TIMEOUT,
                    streaming.save_snapshot_stream(v1::SaveSnapshotRequest {}),
                )
                .await;
                match opened {
                    Ok(mut stream) => {
                        let first = tokio::time::timeout(ADMIN_ATTEMPT_TIMEOUT, stream.message())
                            .await
                            .map_err(|_| {
                                tonic::Status::deadline_exceeded(format!(
                                    "no snapshot head within {} ms",
                                    ADMIN_ATTEMPT_TIMEOUT.as_millis()
                                ))
                            })??;
                        Ok(Opened::Stream {
                            first,
                            stream: Box::new(stream),
                        })
                    }
                    Err(status) if status.code() == tonic::Code::Unimplemented => {
                        let mut unary = admin.max_decoding_message_size(MAX_UNARY_SNAPSHOT_BYTES);
                        let reply = within(
                            ADMIN_ATTEMPT_TIMEOUT,
                            unary.save_snapshot(v1::SaveSnapshotRequest {}),
                        )
                        .await?;
                        Ok(Opened::Unary(reply))
                    }
                    Err(status) => Err(status),
                }
            })
            .await?;
        let (first, mut stream) = match opened {
            Opened::Unary(reply) => return Ok(SavedSnapshot::from(reply)),
            Opened::Stream { first, stream } => (first, stream),
        };
        let refused = |error| ClientError::SnapshotStream { error };
        let mut assembly = Assembly::start(first).map_err(refused)?;
        // Up to the message marked done, then the end of the stream (a
        // message after done is refused too).
        loop {
            let next = tokio::time::timeout(SNAPSHOT_MESSAGE_TIMEOUT, stream.message()).await;
            let (received, declared) = (assembly.received(), assembly.declared());
            match next {
                Err(_) => {
                    return Err(refused(SnapshotStreamError::Stalled {
                        received,
                        declared,
                        timeout_ms: SNAPSHOT_MESSAGE_TIMEOUT.as_millis() as u64,
                    }))
                }
                Ok(Err(status)) => {
                    return Err(refused(SnapshotStreamError::Broken {
                        received,
                        declared,
                        reason: crate::error::describe(&status),
                    }))
                }
                Ok(Ok(None)) => break,
                Ok(Ok(Some(chunk))) => assembly.push(chunk).map_err(refused)?,
            }
        }
        let (head, data) = assembly.finish().map_err(refused)?;
        Ok(SavedSnapshot {
            cluster_id: head.cluster_id,
            applied_index: head.applied_index,
            term: head.term,
            leader_node_id: head.leader_node_id,
            node_id: head.node_id,
            data,
        })
    }

    /// Adds node `node_id` (running with `--join`, serving peers at `addr`)
    /// as a learner, waits until it has caught up, then makes it a voter.
    /// Repeated only after an attempt that certainly did nothing (see the
    /// module's table).
    ///
    /// # Errors
    ///
    /// `FailedPrecondition` (already a member, another change running, no
    /// reachable majority after the change, the node refused the cluster
    /// id); `PermissionDenied` without `--allow-admin`; `InvalidArgument`;
    /// [`ClientError::OutcomeUnknown`] when an attempt may have applied it
    /// (e.g. the catch-up timed out: the node stays a learner, and the same
    /// call resumes it); `NoQuorum` / `Unavailable`.
    pub async fn add_node(
        &self,
        node_id: u64,
        addr: impl Into<String>,
    ) -> Result<Membership, ClientError> {
        self.add_node_with_peer_addr(node_id, addr, None).await
    }

    /// [`add_node`](Admin::add_node) for a node that serves its peer (Raft)
    /// service on a port of its own (`warden server --peer-listen`): `addr`
    /// is its client address, `peer_addr` (None: `addr` serves both) where
    /// its peers reach it.
    ///
    /// # Errors
    ///
    /// As [`add_node`](Admin::add_node); `InvalidArgument` (field
    /// `peer_addr`) when it is not `HOST:PORT` or equals `addr`.
    pub async fn add_node_with_peer_addr(
        &self,
        node_id: u64,
        addr: impl Into<String>,
        peer_addr: Option<String>,
    ) -> Result<Membership, ClientError> {
        let request = v1::AddNodeRequest {
            node_id,
            addr: addr.into(),
            peer_addr: peer_addr.unwrap_or_default(),
        };
        let request = &request;
        self.membership("add node", move |mut admin| async move {
            within(MEMBERSHIP_ATTEMPT_TIMEOUT, admin.add_node(request.clone())).await
        })
        .await
    }

    /// Removes voter or learner `node_id`. Removing the leader first hands
    /// leadership to another voter, which the call follows (a redirect).
    ///
    /// # Errors
    ///
    /// As [`add_node`](Admin::add_node); `NotFound` for a node that is not a
    /// member.
    pub async fn remove_node(&self, node_id: u64) -> Result<Membership, ClientError> {
        self.membership("remove node", move |mut admin| async move {
            within(
                MEMBERSHIP_ATTEMPT_TIMEOUT,
                admin.remove_node(v1::RemoveNodeRequest { node_id }),
            )
            .await
        })
        .await
    }

    /// Adds `new_node_id` (running with `--join` at `addr`; a new id, never a
    /// reused one) as a learner, waits until it has caught up, then swaps it
    /// for voter `old_node_id` in one joint-consensus change.
    ///
    /// # Errors
    ///
    /// As [`add_node`](Admin::add_node); `NotFound` when `old_node_id` is
    /// not a voter; `InvalidArgument` when the two ids are equal.
    pub async fn replace_node(
        &self,
        old_node_id: u64,
        new_node_id: u64,
        addr: impl Into<String>,
    ) -> Result<Membership, ClientError> {
        self.replace_node_with_peer_addr(old_node_id, new_node_id, addr, None)
            .await
    }

    /// [`replace_node`](Admin::replace_node) with the new node's own peer
    /// address, as [`add_node_with_peer_addr`](Admin::add_node_with_peer_addr).
    ///
    /// # Errors
    ///
    /// As [`replace_node`](Admin::replace_node) and
    /// [`add_node_with_peer_addr`](Admin::add_node_with_peer_addr).
    pub async fn replace_node_with_peer_addr(
        &self,
        old_node_id: u64,
        new_node_id: u64,
        addr: impl Into<String>,
        peer_addr: Option<String>,
    ) -> Result<Membership, ClientError> {
        let request = v1::ReplaceNodeRequest {
            old_node_id,
            new_node_id,
            addr: addr.into(),
            peer_addr: peer_addr.unwrap_or_default(),
        };
        let request = &request;
        self.membership("replace node", move |mut admin| async move {
            within(
                MEMBERSHIP_ATTEMPT_TIMEOUT,
                admin.replace_node(request.clone()),
            )
            .await
        })
        .await
    }

    /// An auth change: one request id for every attempt (S7), retried like
    /// a forced release. `request` builds the message around the header;
    /// `send` makes one attempt.
    async fn change<Req, B, S, Fut>(
        &self,
        op: &'static str,
        request: B,
        send: S,
    ) -> Result<(), ClientError>
    where
        Req: Clone + Send + Sync,
        B: FnOnce(v1::RequestHeader) -> Req,
        S: Fn(AdminClient<tonic::transport::Channel>, Req) -> Fut + Send + Sync,
        Fut: std::future::Future<
            Output = Result<tonic::Response<v1::AuthChangeResponse>, tonic::Status>,
        >,
    {
        let in_flight = self.client.begin_request().await;
        let request = request(self.client.header(&in_flight));
        let (request, send) = (&request, &send);
        let result = self
            .call(op, move |admin| async move {
                within(ADMIN_ATTEMPT_TIMEOUT, send(admin, request.clone())).await?;
                Ok(())
            })
            .await;
        drop(in_flight);
        result
    }

    /// A read or a forced release: retried after any failure that is not a
    /// final answer, within the client's deadline.
    async fn call<T, F, Fut>(&self, op: &'static str, mut attempt: F) -> Result<T, ClientError>
    where
        F: FnMut(AdminClient<tonic::transport::Channel>) -> Fut,
        Fut: std::future::Future<Output = Result<T, tonic::Status>>,
    {
        let deadline = checked_deadline(Instant::now(), self.client.options().deadline);
        self.client
            .call_channel_retrying(op, deadline, Retry::Always, move |channel| {
                attempt(AdminClient::new(channel))
            })
            .await
    }

    /// A membership change: repeated only after an attempt that certainly
    /// did nothing, within [`MEMBERSHIP_DEADLINE`].
    async fn membership<F, Fut>(
        &self,
        op: &'static str,
        mut attempt: F,
    ) -> Result<Membership, ClientError>
    where
        F: FnMut(AdminClient<tonic::transport::Channel>) -> Fut,
        Fut: std::future::Future<Output = Result<v1::MembershipResponse, tonic::Status>>,
    {
        let deadline = checked_deadline(Instant::now(), MEMBERSHIP_DEADLINE);
        let reply = self
            .client
            .call_channel_retrying(op, deadline, MEMBERSHIP_RETRY, move |channel| {
                attempt(AdminClient::new(channel))
            })
            .await?;
        Ok(Membership {
            voters: reply.voters,
            learners: reply.learners,
            log_index: reply.log_index,
        })
    }
}

/// The answer to [`Admin::list`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listing {
    /// The resources, in name order.
    pub locks: Vec<ListedLock>,
    /// The log index the read was served at.
    pub read_index: u64,
}

/// One resource of a [`Listing`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListedLock {
    /// The resource's key: a lock's name, or an election's key
    /// ([`election`](ListedLock::election) gives its name).
    pub resource: String,
    /// Its exclusive holder (a mutex's, or a read-write lock's writer);
    /// `None` when nobody holds it exclusively (free, in a lock-delay, or
    /// held by readers or permits: see [`holders`](ListedLock::holders)).
    pub holder: Option<ListedHolder>,
    /// Every holder: the exclusive one, or each reader or permit, by lease
    /// id (from a server that predates lock kinds: `holder` alone).
    pub holders: Vec<ListedHolder>,
    /// Its kind while anything is on it; `None` from a server that does
    /// not say.
    pub kind: Option<crate::ResourceKind>,
    /// Its waiters, the next to be granted first.
    pub waiters: Vec<ListedWaiter>,
    /// When nobody holds it because of a lock-delay after an involuntary
    /// loss: the lock-delay left, in milliseconds on the serving node's
    /// clock (display only, rounded up, as
    /// [`ListedHolder::ttl_remaining_ms`]). `None`: no lock-delay (or a
    /// server that does not say).
    pub lock_delay_remaining_ms: Option<u64>,
}

impl ListedLock {
    /// The election's name when this key is an election's
    /// ([`election_key`](crate::election_key)); `None` for a lock.
    pub fn election(&self) -> Option<&str> {
        self.resource.strip_prefix(crate::ELECTION_PREFIX)
    }
}

/// The holder of a [`ListedLock`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ListedHolder {
    /// The holding lease.
    pub lease_id: u64,
    /// Its grant's fencing token.
    pub fencing_token: u64,
    /// Milliseconds since the serving node applied the grant (or loaded its
    /// table); display only.
    pub age_ms: u64,
    /// The lease's remaining TTL on the serving node, in milliseconds.
    pub ttl_remaining_ms: u64,
    /// A read-write lock's reader ([`GrantKind::Shared`](crate::GrantKind))
    /// or writer (`Exclusive`); `Mutex` for a mutex's holder or a permit.
    pub mode: crate::GrantKind,
    /// A permit's slot; `None` for the other kinds.
    pub slot: Option<u32>,
}

impl From<v1::ListHolder> for ListedHolder {
    fn from(h: v1::ListHolder) -> Self {
        ListedHolder {
            lease_id: h.lease_id,
            fencing_token: h.fencing_token,
            age_ms: h.age_ms,
            ttl_remaining_ms: h.ttl_remaining_ms,
            mode: crate::types::grant_mode_of(h.mode),
            slot: h.slot,
        }
    }
}

/// A waiter of a [`ListedLock`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ListedWaiter {
    /// The waiting lease.
    pub lease_id: u64,
    /// Milliseconds since its enqueue reached the serving node; display only.
    pub age_ms: u64,
}

/// The answer to [`Admin::top_locks`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopLocks {
    /// Hottest first.
    pub locks: Vec<HotLock>,
    /// The log index the read was served at.
    pub read_index: u64,
}

/// One resource of [`TopLocks`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HotLock {
    /// The resource's key (an election's key for elections).
    pub resource: String,
    /// Waiters queued on it now.
    pub queue_length: u64,
    /// How long the oldest waiter has waited, in milliseconds on the
    /// serving node's clock (0: none); display only.
    pub oldest_waiter_age_ms: u64,
    /// Grants in the last minute.
    pub grants_last_minute: u64,
    /// Holders whose lease expired in the last minute.
    pub expiries_last_minute: u64,
    /// The 99th percentile of the waits, in milliseconds, of the last
    /// minute's grants that came from the queue; `None`: none did.
    pub wait_p99_ms: Option<u64>,
}

impl HotLock {
    /// The election's name when this key is an election's
    /// ([`election_key`](crate::election_key)); `None` for a lock.
    pub fn election(&self) -> Option<&str> {
        self.resource.strip_prefix(crate::ELECTION_PREFIX)
    }
}

/// The grant a forced release ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ForceReleased {
    /// The resource released.
    pub resource: String,
    /// The lease that held it.
    pub lease_id: u64,
    /// The grant that ended.
    pub fencing_token: u64,
}

/// The answer to [`Admin::audit_trail`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditTrail {
    /// Forced releases, oldest first (the last 1,000).
    pub records: Vec<AuditRecord>,
    /// The log index the read was served at.
    pub read_index: u64,
}

/// One forced release.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditRecord {
    /// Log index of its entry.
    pub index: u64,
    /// The resource released.
    pub resource: String,
    /// The lease that held it.
    pub lease_id: u64,
    /// The grant that ended.
    pub fencing_token: u64,
    /// Who asked, with the caller's address.
    pub requested_by: String,
    /// The proposing server's wall clock, in ms since the Unix epoch;
    /// display only.
    pub at_unix_ms: u64,
}

/// The membership after a change, as committed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Membership {
    /// Voter ids.
    pub voters: Vec<u64>,
    /// Learner ids.
    pub learners: Vec<u64>,
    /// Log index of the last membership entry.
    pub log_index: u64,
}

/// What one attempt of [`Admin::save_snapshot`] got: a stream and its
/// first message, or an older node's whole answer.
enum Opened {
    Stream {
        first: Option<v1::SaveSnapshotChunk>,
        stream: Box<tonic::Streaming<v1::SaveSnapshotChunk>>,
    },
    Unary(v1::SaveSnapshotResponse),
}

impl From<v1::SaveSnapshotResponse> for SavedSnapshot {
    fn from(reply: v1::SaveSnapshotResponse) -> Self {
        SavedSnapshot {
            cluster_id: reply.cluster_id,
            applied_index: reply.applied_index,
            term: reply.term,
            leader_node_id: reply.leader_node_id,
            node_id: reply.node_id,
            data: reply.data,
        }
    }
}

/// The answer to [`Admin::save_snapshot`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SavedSnapshot {
    /// The cluster's id.
    pub cluster_id: String,
    /// The log index the snapshot covers.
    pub applied_index: u64,
    /// Term of the entry at `applied_index`.
    pub term: u64,
    /// Node id of the leader that proposed the entry at `applied_index`.
    pub leader_node_id: u64,
    /// The node that served it (the leader).
    pub node_id: u64,
    /// The lock table's snapshot bytes (warden-core's snapshot format).
    pub data: Vec<u8>,
}

impl From<v1::ListResponse> for Listing {
    fn from(r: v1::ListResponse) -> Self {
        Listing {
            locks: r
                .locks
                .into_iter()
                .map(|l| ListedLock {
                    resource: l.resource,
                    holders: if l.holders.is_empty() {
                        l.holder.map(ListedHolder::from).into_iter().collect()
                    } else {
                        l.holders.into_iter().map(ListedHolder::from).collect()
                    },
                    kind: crate::types::ResourceKind::from_wire(&l.kind, l.limit),
                    holder: l.holder.map(ListedHolder::from),
                    waiters: l
                        .waiters
                        .into_iter()
                        .map(|w| ListedWaiter {
                            lease_id: w.lease_id,
                            age_ms: w.age_ms,
                        })
                        .collect(),
                    lock_delay_remaining_ms: (l.lock_delay_remaining_ms != 0)
                        .then_some(l.lock_delay_remaining_ms),
                })
                .collect(),
            read_index: r.read_index,
        }
    }
}

impl From<v1::AuditTrailResponse> for AuditTrail {
    fn from(r: v1::AuditTrailResponse) -> Self {
        AuditTrail {
            records: r
                .records
                .into_iter()
                .map(|a| AuditRecord {
                    index: a.index,
                    resource: a.resource,
                    lease_id: a.lease_id,
                    fencing_token: a.fencing_token,
                    requested_by: a.requested_by,
                    at_unix_ms: a.at_unix_ms,
                })
                .collect(),
            read_index: r.read_index,
        }
    }
}
