//! The write paths: [`Node::submit`] for every client command, [`Node::renew`]
//! for keep-alives (through the renew batcher, S4), and the duty path for
//! leader duties. All three end in one entry proposed to the **local** Raft
//! handle, never forwarded (etcd issue 15247), answered only after it
//! committed on a quorum and applied here (S3).
//!
//! # Identities
//!
//! [`Node::submit`] proposes every client command as
//! `Command::Authorized { principal, command }` (principal `None` on an
//! insecure node): the table decides permission, lease ownership and quotas
//! when the entry applies, against the auth table at that index
//! (`warden_core::auth`). The server never decides a write's permission
//! itself: a retried request whose outcome is recorded must get that
//! outcome even after a revoke (S7).
//!
//! # Log formats
//!
//! Before proposing, [`Node::submit`] asks the log-format gate
//! ([`crate::raft::log_format`]) whether every member reads the entry's
//! format ([`crate::types::entry_log_format`]); a command of a format some
//! member has not reported is refused with `FailedPrecondition`, naming
//! those members, and nothing is proposed. The duty path asks the same.
//! Every command of log format 1 passes.
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
/// kind's (docs/semantics.md "Lock kinds") or a multi-lock's
/// ("Multi-locks"): see `warden_core::types::Acquire`.
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

impl Node {
    /// The one write path for client commands: validates `cmd` (a bad field
    /// is refused naming the field and the limit; nothing is proposed),
    /// checks that this node leads, wraps it with `principal`, checks that
    /// every member reads its log format, proposes it through the proposer,
    /// and returns the state machine's typed answer after the entry
    /// committed and applied (S3). A refusal by the table comes back as
    /// [`SubmitError::Refused`].
    ///
    /// `principal` is who the command is made for; it is carried to apply
    /// in `Command::Authorized` (the module docs), where permissions, lease
    /// ownership and quotas are decided against the table at that index.
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
        // A principal that floods refused requests is refused at once
        // (`refusals`, docs/security.md "Refused before the log").
        self.refusals.admit(principal)?;
        self.await_promoted().await?;
        // Refused before the log (docs/security.md): what this table already
        // refuses never becomes an entry; apply still decides the rest.
        if let Some(e) = self.refusal_before_log(&wrapped) {
            self.refusals.spend(principal);
            return Err(SubmitError::Refused(e));
        }
        let cmd = Command::Authorized(wrapped);
        self.may_propose(&cmd)?;
        let (response, _) = self.proposer.propose(cmd).await?;
        match response {
            Response::Error(e) => {
                self.refusals.spend(principal);
                Err(SubmitError::Refused(e))
            }
            r => R::from_response(r)
                .map_err(|other| SubmitError::fatal(format!("unexpected reply {other:?}"))),
        }
    }

    /// The table's refusal of `w` before it is proposed, if any (a
    /// poisoned state machine refuses nothing here: apply decides).
    fn refusal_before_log(&self, w: &Authorized) -> Option<warden_core::types::CommandError> {
        let m = self.shared.machine.lock().ok()?;
        m.table.refusal_before_log(w)
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
        self.await_promoted().await?;
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
    /// local Raft handle and waits for it to commit and apply. No
    /// validation: the proposer built the command itself. The log-format
    /// gate holds as for a client command.
    pub(crate) async fn propose_duty(
        &self,
        cmd: Command,
    ) -> Result<(Response, LogId), SubmitError> {
        self.may_propose(&cmd)?;
        self.proposer.propose(cmd).await
    }

    /// The log-format gate for `cmd` (the module docs, "Log formats"):
    /// `FailedPrecondition` naming the members that have not reported its
    /// format; nothing is proposed.
    fn may_propose(&self, cmd: &Command) -> Result<(), SubmitError> {
        self.formats
            .may_propose(crate::types::entry_log_format(cmd))
            .map_err(|behind| {
                SubmitError::refused(
                    warden_core::types::ErrorCode::FailedPrecondition,
                    None,
                    behind.to_string(),
                )
            })
    }

    /// One entry holding `cmd`, proposed to the local Raft handle; waits for
    /// it to commit and apply, at most [`COMMIT_TIMEOUT_MS`].
    pub(super) async fn write_entry(&self, cmd: Command) -> Result<(Response, LogId), SubmitError> {
        let entry = LogEntry {
            stamp: self.stamp_for(&cmd)?,
            command: cmd,
        };
        let fut = self.raft.client_write(Request(entry));
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
