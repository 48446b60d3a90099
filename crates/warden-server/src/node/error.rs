//! The node's typed errors. Each says what happened to the caller's request
//! (was it proposed? did it commit?), so the service edge can give the one
//! right answer; `services::status` turns them into gRPC statuses, in one
//! place.

use std::sync::Arc;

use warden_core::types::{CommandError, ErrorCode, LogIndex};

/// How long a proposal may take to commit before the caller is told there is
/// no quorum (L3: fail clearly within the caller's deadline, never hang).
pub const COMMIT_TIMEOUT_MS: u64 = 3_000;

/// The leader as a node knows it: its id and its client address.
pub type LeaderHint = Option<(u64, String)>;

/// Why a client command (or a leader duty) did not get its answer.
#[derive(Debug, Clone, thiserror::Error)]
pub enum SubmitError {
    /// This node is not the leader; nothing was proposed. `leader` names the
    /// leader when one is known (the client retries there at once).
    #[error("not the leader")]
    NotLeader {
        /// The leader this node knows of.
        leader: LeaderHint,
    },
    /// Nothing was proposed (the node is bootstrapping or stopping): safe to
    /// send again anywhere.
    #[error("not proposed: {reason}")]
    NotProposed {
        /// Why.
        reason: String,
    },
    /// Proposed, but its commit was not seen (no quorum within
    /// [`COMMIT_TIMEOUT_MS`], or the node stopped meanwhile): the outcome is
    /// unknown; retry with the same request id (S7 answers it once).
    #[error("outcome unknown: {reason}")]
    Unknown {
        /// Why.
        reason: String,
    },
    /// Refused by validation or by the lock table: nothing changed. The
    /// error names the field and the limit.
    #[error("refused: {0}")]
    Refused(CommandError),
    /// The node cannot go on (a storage failure, a broken invariant): the
    /// request's outcome is unknown and this node will stop.
    #[error("fatal: {source}")]
    Fatal {
        /// The failure.
        source: Arc<dyn std::error::Error + Send + Sync>,
    },
}

impl SubmitError {
    /// A refusal of `field` for bad input.
    pub fn invalid(field: &str, message: impl Into<String>) -> SubmitError {
        SubmitError::Refused(command_error(
            ErrorCode::InvalidArgument,
            Some(field),
            message,
        ))
    }

    /// A refusal with `code`, `field` (if any) and `message`.
    pub fn refused(code: ErrorCode, field: Option<&str>, message: impl Into<String>) -> Self {
        SubmitError::Refused(command_error(code, field, message))
    }

    /// A fatal failure with `message` (a reply of the wrong kind from the
    /// state machine: a bug, not input).
    pub fn fatal(message: impl Into<String>) -> SubmitError {
        SubmitError::Fatal {
            source: Arc::new(Internal(message.into())),
        }
    }
}

/// A [`CommandError`] with `code`, `field` (if any) and `message`.
pub fn command_error(
    code: ErrorCode,
    field: Option<&str>,
    message: impl Into<String>,
) -> CommandError {
    CommandError {
        code,
        field: field.map(str::to_owned),
        message: message.into(),
    }
}

impl From<CommandError> for SubmitError {
    fn from(e: CommandError) -> Self {
        SubmitError::Refused(e)
    }
}

/// A failure inside the server (a bug, not input), as an error source.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct Internal(pub String);

/// Why a linearizable read was not served.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ReadError {
    /// Only the leader serves linearizable reads.
    #[error("not the leader")]
    NotLeader {
        /// The leader this node knows of.
        leader: LeaderHint,
    },
    /// The read-index round with a quorum, or this node's apply, did not
    /// finish in time (L3).
    #[error("no quorum: {reason}")]
    NoQuorum {
        /// Why.
        reason: String,
    },
    /// Bad input, named by field.
    #[error("refused: {0}")]
    Refused(CommandError),
    /// A watch's `start_index` beyond the cluster's commit index + 1 (the
    /// next entry): no event will ever be at or after it that a client could
    /// have resumed from, so the watch is refused rather than left waiting.
    #[error("start_index {start_index} is beyond the cluster's commit index {commit_index} + 1")]
    BeyondCommit {
        /// The index asked for.
        start_index: LogIndex,
        /// The commit index the leader confirmed with a quorum.
        commit_index: LogIndex,
    },
    /// The node is stopping or its state is unusable.
    #[error("not serving: {reason}")]
    NotServing {
        /// Why.
        reason: String,
    },
}

impl From<CommandError> for ReadError {
    fn from(e: CommandError) -> Self {
        ReadError::Refused(e)
    }
}

/// The node is not serving yet (it is bootstrapping).
#[derive(Debug, Clone, Copy, thiserror::Error)]
#[error("node is bootstrapping; retry shortly")]
pub struct Bootstrapping;
