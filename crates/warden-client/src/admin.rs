//! [`Admin`]: the operator's calls (`warden.v1.Admin`) on the client's one
//! leader-following loop, each with its retry class, and their results.
//!
//! | call | retried after | why |
//! |---|---|---|
//! | [`list`](Admin::list), [`audit_trail`](Admin::audit_trail), [`save_snapshot`](Admin::save_snapshot) | any failure that is not a final answer | reads (read-index): repeating one changes nothing |
//! | [`force_release`](Admin::force_release) | any failure that is not a final answer | carries this client's id and a request id that every attempt reuses: the server applies it once (S7) |
//! | [`add_node`](Admin::add_node), [`remove_node`](Admin::remove_node), [`replace_node`](Admin::replace_node) | only an attempt that certainly did nothing: the connection never opened (refused, connect timeout), a redirect (`Unavailable` naming the leader), `Unimplemented`; and only while a whole attempt fits before the deadline | no request id: a repeated attempt is a second change. An attempt that timed out, a dropped connection, or `Unavailable` without a redirect ("did not commit within 10 s", "no quorum") may have been applied: the call ends with [`ClientError::OutcomeUnknown`] |
//!
//! Every call follows the leader like the lock calls (L3): a follower's
//! `warden-leader` hint is followed at once, unreachable nodes are skipped,
//! and the call fails with `NoQuorum` / `Unavailable` at its deadline.

use std::time::Duration;

use tokio::time::Instant;
use warden_proto::v1::{self, admin_client::AdminClient};

use crate::client::{checked_deadline, within, Client, Retry};
use crate::ClientError;

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

/// Largest snapshot [`Admin::save_snapshot`] accepts: 256 MiB (the
/// server's peer message limit).
pub const MAX_SNAPSHOT_BYTES: usize = 256 * 1024 * 1024;

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
    /// its applied index, after a read-index confirmation. At most
    /// [`MAX_SNAPSHOT_BYTES`].
    ///
    /// # Errors
    ///
    /// `Transport` for a snapshot over the limit; `NoQuorum` / `Unavailable`.
    pub async fn save_snapshot(&self) -> Result<SavedSnapshot, ClientError> {
        self.call("save snapshot", move |admin| async move {
            let mut admin = admin.max_decoding_message_size(MAX_SNAPSHOT_BYTES);
            let reply = within(
                ADMIN_ATTEMPT_TIMEOUT,
                admin.save_snapshot(v1::SaveSnapshotRequest {}),
            )
            .await?;
            Ok(SavedSnapshot {
                cluster_id: reply.cluster_id,
                applied_index: reply.applied_index,
                term: reply.term,
                leader_node_id: reply.leader_node_id,
                node_id: reply.node_id,
                data: reply.data,
            })
        })
        .await
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
        let request = v1::AddNodeRequest {
            node_id,
            addr: addr.into(),
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
        let request = v1::ReplaceNodeRequest {
            old_node_id,
            new_node_id,
            addr: addr.into(),
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
    /// Its holder; `None` when nobody holds it (waiters during a
    /// lock-delay).
    pub holder: Option<ListedHolder>,
    /// Its waiters, the next to be granted first.
    pub waiters: Vec<ListedWaiter>,
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
}

/// A waiter of a [`ListedLock`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ListedWaiter {
    /// The waiting lease.
    pub lease_id: u64,
    /// Milliseconds since its enqueue reached the serving node; display only.
    pub age_ms: u64,
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
                    holder: l.holder.map(|h| ListedHolder {
                        lease_id: h.lease_id,
                        fencing_token: h.fencing_token,
                        age_ms: h.age_ms,
                        ttl_remaining_ms: h.ttl_remaining_ms,
                    }),
                    waiters: l
                        .waiters
                        .into_iter()
                        .map(|w| ListedWaiter {
                            lease_id: w.lease_id,
                            age_ms: w.age_ms,
                        })
                        .collect(),
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
