//! The write paths: [`Node::submit`] for every client command, [`Node::renew`]
//! for keep-alives (through the renew batcher, S4), and the duty path for
//! leader duties. All three end in one entry proposed to the **local** Raft
//! handle, never forwarded (etcd issue 15247), answered only after it
//! committed on a quorum and applied here (S3).
//!
//! # Identities
//!
//! [`Node::submit`] proposes every client command as
//! `Command::Authorized { principal, command }` once every member reads
//! that entry (the log-format gate, [`crate::raft::log_format`]): the
//! table then decides permission, lease ownership and quotas when the entry
//! applies, against the auth table at that index (`warden_core::auth`). The
//! server never decides a write's permission itself: a retried request
//! whose outcome is recorded must get that outcome even after a revoke (S7).
//! While the gate is closed, a secure node (principal `Some`) proposes
//! nothing and answers `Unavailable`; an insecure node (principal `None`)
//! proposes the command unwrapped, as before identities existed (an auth
//! change, which only exists wrapped, waits like a secure node's command).
//!
//! [`Node::renew`] is not wrapped (renews are batched by the leader): the
//! batcher checks that the caller owns each lease (`warden_core::auth`,
//! "Leases have owners"; etcd PR 8031) before the lease goes into a batch.

use std::time::Duration;

use openraft::errors::{ClientWriteError, Fatal, RaftError};
use tokio::sync::oneshot;
use warden_core::types::{
    AcquireReply, Authorized, Command, FencingToken, LeaseId, LogEntry, ResourceToken, Response,
};
use warden_core::validate;

use super::renew::RenewJob;
use super::{Node, Principal, SubmitError, COMMIT_TIMEOUT_MS};
use crate::types::{LogId, Request, TypeConfig};

/// The typed answer a client command expects from the state machine. A
/// reply of another kind is a bug ([`SubmitError::Fatal`]), decided here
/// once for every service.
pub trait Reply: Sized {
    /// The answer in `response`, or the response back when it is of
    /// another kind.
    fn from_response(response: Response) -> Result<Self, Response>;
}

impl Reply for AcquireReply {
    fn from_response(response: Response) -> Result<Self, Response> {
        match response {
            Response::Acquire(a) => Ok(a),
            other => Err(other),
        }
    }
}

/// The answer to any acquire: a mutex's (`Command::Acquire`), another
/// kind's (`Command::AcquireKind`, docs/semantics.md "Lock kinds") or a
/// multi-lock's (`Command::AcquireMulti`, "Multi-locks").
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AcquireAnswer {
    /// The reply, as for a mutex.
    pub reply: AcquireReply,
    /// The slot of the semaphore permit the lease holds now, if any.
    pub slot: Option<u32>,
    /// A multi-lock's resources and tokens while its lease holds them;
    /// empty otherwise.
    pub grants: Vec<ResourceToken>,
}

impl Reply for AcquireAnswer {
    fn from_response(response: Response) -> Result<Self, Response> {
        match response {
            Response::Acquire(reply) => Ok(AcquireAnswer {
                reply,
                slot: None,
                grants: Vec::new(),
            }),
            Response::AcquireKind { reply, slot } => Ok(AcquireAnswer {
                reply,
                slot,
                grants: Vec::new(),
            }),
            Response::AcquireMulti { reply, grants } => Ok(AcquireAnswer {
                reply,
                slot: None,
                grants,
            }),
            other => Err(other),
        }
    }
}

/// A release or forced release that freed a grant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Released {
    /// The resource released.
    pub resource: String,
    /// The lease that held it.
    pub lease_id: LeaseId,
    /// The grant released.
    pub fencing_token: FencingToken,
}

impl Reply for Released {
    fn from_response(response: Response) -> Result<Self, Response> {
        match response {
            Response::Released {
                resource,
                lease_id,
                fencing_token,
            } => Ok(Released {
                resource,
                lease_id,
                fencing_token,
            }),
            other => Err(other),
        }
    }
}

/// A lease created without a lock (a session).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LeaseGranted {
    /// The new lease.
    pub lease_id: LeaseId,
    /// Its TTL in milliseconds.
    pub ttl_ms: u64,
}

impl Reply for LeaseGranted {
    fn from_response(response: Response) -> Result<Self, Response> {
        match response {
            Response::LeaseGranted { lease_id, ttl_ms } => Ok(LeaseGranted { lease_id, ttl_ms }),
            other => Err(other),
        }
    }
}

/// A revoked lease.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Revoked {
    /// The lease revoked.
    pub lease_id: LeaseId,
}

impl Reply for Revoked {
    fn from_response(response: Response) -> Result<Self, Response> {
        match response {
            Response::Revoked { lease_id } => Ok(Revoked { lease_id }),
            other => Err(other),
        }
    }
}

/// What a `CancelWait` did (`warden_core::types::CancelOutcome`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WaitCancelled {
    /// The resource.
    pub resource: String,
    /// The acquire's lease (0 when the acquire had not applied).
    pub lease_id: LeaseId,
    /// What the cancel did.
    pub outcome: warden_core::types::CancelOutcome,
    /// The grant released, for `CancelOutcome::Released`.
    pub fencing_token: Option<FencingToken>,
}

impl Reply for WaitCancelled {
    fn from_response(response: Response) -> Result<Self, Response> {
        match response {
            Response::WaitCancelled {
                resource,
                lease_id,
                outcome,
                fencing_token,
            } => Ok(WaitCancelled {
                resource,
                lease_id,
                outcome,
                fencing_token,
            }),
            other => Err(other),
        }
    }
}

/// A published value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Proclaimed {
    /// The resource.
    pub resource: String,
    /// The lease.
    pub lease_id: LeaseId,
}

impl Reply for Proclaimed {
    fn from_response(response: Response) -> Result<Self, Response> {
        match response {
            Response::Proclaimed { resource, lease_id } => Ok(Proclaimed { resource, lease_id }),
            other => Err(other),
        }
    }
}

/// `Done`: the command changed what it names and has nothing to report.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Done;

impl Reply for Done {
    fn from_response(response: Response) -> Result<Self, Response> {
        match response {
            Response::Done => Ok(Done),
            other => Err(other),
        }
    }
}

/// `AuthChanged`: an auth change applied (and is in the auth audit trail).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AuthChanged;

impl Reply for AuthChanged {
    fn from_response(response: Response) -> Result<Self, Response> {
        match response {
            Response::AuthChanged => Ok(AuthChanged),
            other => Err(other),
        }
    }
}

/// What the write path says while some member cannot read authorized
/// entries (the gate of [`crate::raft::log_format`]).
pub const WAITING_FOR_LOG_FORMAT_3: &str =
    "waiting for every member to report log format 3 (authorized entries)";

/// The entry [`Node::submit`] proposes for the client command `w.command`
/// made by `w.principal` (see the module docs, "Identities"): `w` itself
/// when `may_wrap`; otherwise the bare command for an anonymous caller, and
/// `NotProposed` (retryable: nothing was proposed) for a named caller and
/// for an auth change.
///
/// # Errors
/// [`SubmitError::NotProposed`] while the gate is closed, as above.
pub fn authorize(w: Authorized, may_wrap: bool) -> Result<Command, SubmitError> {
    if may_wrap {
        return Ok(Command::Authorized(w));
    }
    let reason = match (&w.principal, &*w.command) {
        (None, Command::AuthChange(_)) => {
            format!("{WAITING_FOR_LOG_FORMAT_3}: an auth change needs them")
        }
        (None, _) => return Ok(*w.command),
        (Some(_), _) => format!(
            "{WAITING_FOR_LOG_FORMAT_3}: a secure node proposes no client command without its \
             principal"
        ),
    };
    Err(SubmitError::NotProposed { reason })
}

impl Node {
    /// The one write path for client commands: validates `cmd` (a bad field
    /// is refused naming the field and the limit; nothing is proposed),
    /// checks that this node leads, wraps it with `principal`, attaches the leader's due list where the
    /// command can hand a resource off (S8), proposes it through the
    /// proposer, and returns the state machine's typed answer after the
    /// entry committed and applied (S3). A refusal by the table comes back
    /// as [`SubmitError::Refused`].
    ///
    /// `principal` is who the command is made for; it is carried to apply
    /// in `Command::Authorized` ([`authorize`], the module docs), where
    /// permissions, lease ownership and quotas are decided against the
    /// table at that index.
    pub async fn submit<R: Reply>(
        &self,
        principal: &Principal,
        cmd: Command,
    ) -> Result<R, SubmitError> {
        let wrapped = Authorized {
            principal: principal.clone(),
            command: Box::new(cmd),
        };
        // The inner command's fields, and that it is a client command (a
        // leader duty or an already wrapped command is refused).
        validate::authorized(&wrapped)?;
        self.require_leader()?;
        if matches!(&*wrapped.command, Command::AcquireKind(_)) && !self.formats.may_use_kinds() {
            return Err(SubmitError::Refused(super::error::command_error(
                warden_core::types::ErrorCode::FailedPrecondition,
                Some("kind"),
                format!(
                    "semaphores and read-write locks need every member to read log format 5; \
                     members {:?} have not reported it (upgrade them, or take a mutex)",
                    self.formats.lagging_kind_readers()
                ),
            )));
        }
        if matches!(&*wrapped.command, Command::AcquireMulti(_)) && !self.formats.may_use_multi() {
            return Err(SubmitError::Refused(super::error::command_error(
                warden_core::types::ErrorCode::FailedPrecondition,
                Some("resources"),
                format!(
                    "multi-locks need every member to read log format 6; members {:?} have \
                     not reported it (upgrade them, or take the locks one by one)",
                    self.formats.lagging_multi_readers()
                ),
            )));
        }
        if matches!(&*wrapped.command, Command::AcquireBounded(_))
            && !self.formats.may_use_max_hold()
        {
            return Err(SubmitError::Refused(super::error::command_error(
                warden_core::types::ErrorCode::FailedPrecondition,
                Some("max_hold_ms"),
                format!(
                    "max_hold_ms needs every member to read log format 7; members {:?} have \
                     not reported it (upgrade them, or acquire without a max-hold)",
                    self.formats.lagging_max_hold_readers()
                ),
            )));
        }
        let mut cmd = authorize(wrapped, self.formats.may_wrap())?;
        self.refresh_due(std::slice::from_mut(&mut cmd));
        let (response, _) = self.proposer.propose(cmd).await?;
        match response {
            Response::Error(e) => Err(SubmitError::Refused(e)),
            r => R::from_response(r)
                .map_err(|other| SubmitError::fatal(format!("unexpected reply {other:?}"))),
        }
    }

    /// Renews `lease_id` through the renew batcher: one `RenewBatch` entry per
    /// short window, acknowledged only after it commits (S4). `Some(ttl_ms)`
    /// renewed; `None` not live. The batcher renews only a lease `principal`
    /// owns (see [`super::renew`]).
    ///
    /// # Errors
    /// PermissionDenied (field `lease_id`, naming the lease) for a live
    /// lease of another principal; the errors of any write.
    pub async fn renew(
        &self,
        principal: &Principal,
        lease_id: LeaseId,
    ) -> Result<Option<u64>, SubmitError> {
        validate::lease_id(lease_id)?;
        self.require_leader()?;
        let stopping = || SubmitError::NotProposed {
            reason: "node stopping".into(),
        };
        let (reply, rx) = oneshot::channel();
        self.renew_tx
            .send(RenewJob {
                lease_id,
                principal: principal.clone(),
                reply,
            })
            .await
            .map_err(|_| stopping())?;
        rx.await.map_err(|_| SubmitError::Unknown {
            reason: "node stopping".into(),
        })?
    }

    /// The duty path: proposes `cmd` (a leader duty or a renew batch) to the
    /// local Raft handle and waits for it to commit and apply. No validation
    /// and no due list: the proposer built the command itself.
    pub(crate) async fn propose_duty(
        &self,
        cmd: Command,
    ) -> Result<(Response, LogId), SubmitError> {
        self.proposer.propose(cmd).await
    }

    /// One entry holding `cmd`, proposed to the local Raft handle; waits for
    /// it to commit and apply, at most [`COMMIT_TIMEOUT_MS`].
    pub(super) async fn write_entry(&self, cmd: Command) -> Result<(Response, LogId), SubmitError> {
        let fut = self.raft.client_write(Request(LogEntry::V1(cmd)));
        match tokio::time::timeout(Duration::from_millis(COMMIT_TIMEOUT_MS), fut).await {
            Err(_) => Err(no_quorum()),
            Ok(Err(e)) => Err(self.write_error(e)),
            Ok(Ok(r)) => Ok((r.data, r.log_id)),
        }
    }

    /// A failed `client_write`, typed: a redirect names the leader; a stopped
    /// Raft leaves the outcome unknown; a storage failure is fatal.
    pub(crate) fn write_error(
        &self,
        e: RaftError<TypeConfig, ClientWriteError<TypeConfig>>,
    ) -> SubmitError {
        match e {
            RaftError::APIError(ClientWriteError::ForwardToLeader(f)) => SubmitError::NotLeader {
                leader: f
                    .leader_id
                    .zip(f.leader_node.map(|n| n.client_addr().to_string()))
                    .or_else(|| self.leader()),
            },
            RaftError::APIError(ClientWriteError::LogEntryDiscarded(f)) => SubmitError::Unknown {
                reason: format!(
                    "the entry was discarded when this node followed another leader ({f})"
                ),
            },
            RaftError::APIError(ClientWriteError::PreconditionFailed(e)) => SubmitError::refused(
                warden_core::types::ErrorCode::FailedPrecondition,
                None,
                e.to_string(),
            ),
            RaftError::APIError(ClientWriteError::ChangeMembershipError(e)) => {
                SubmitError::refused(
                    warden_core::types::ErrorCode::FailedPrecondition,
                    None,
                    e.to_string(),
                )
            }
            RaftError::Fatal(Fatal::Stopped) => SubmitError::Unknown {
                reason: "raft stopped on this node".into(),
            },
            RaftError::Fatal(f) => SubmitError::Fatal {
                source: std::sync::Arc::new(f),
            },
        }
    }
}

/// A proposal whose commit was not seen within [`COMMIT_TIMEOUT_MS`] (L3).
pub(crate) fn no_quorum() -> SubmitError {
    SubmitError::Unknown {
        reason: format!("no quorum: the change did not commit within {COMMIT_TIMEOUT_MS} ms"),
    }
}
