//! The one place the node's typed errors become gRPC statuses.
//!
//! Every refusal names its field and limit in the message, and also carries
//! them as structured error details (`google.rpc.ErrorInfo` with the
//! reason, and `google.rpc.BadRequest` naming the field of an invalid
//! argument), so a client in any language can read them without parsing
//! text. A redirect carries the leader's client address in the
//! `warden-leader` metadata.

use tonic::{Code, Status};
use tonic_types::{ErrorDetails, StatusExt as _};
use warden_core::types::{CommandError, ErrorCode, LeaseId};

use crate::events::Compacted;
use crate::node::membership::MembershipError;
use crate::node::{Bootstrapping, LeaderHint, ReadError, SubmitError};

/// The `google.rpc.ErrorInfo` domain of every Warden error.
pub const ERROR_DOMAIN: &str = "warden.v1";

/// Builds a status with `code`, `message`, an `ErrorInfo` with `reason`
/// and, for an invalid argument or a failed precondition that names a
/// field, a `BadRequest` violation naming `field` (where every client reads
/// the field from); a failed precondition also carries it as the subject
/// of a `PreconditionFailure` violation (AIP-193), e.g. `kind` or `limit`
/// for an acquire of another lock kind.
fn detailed(code: Code, message: String, reason: &str, field: Option<&str>) -> Status {
    let mut details = ErrorDetails::with_error_info(
        reason,
        ERROR_DOMAIN,
        std::collections::HashMap::<String, String>::new(),
    );
    match (code, field) {
        (Code::InvalidArgument, Some(f)) => {
            details.add_bad_request_violation(f, message.clone());
        }
        (Code::FailedPrecondition, Some(f)) if reason == "FAILED_PRECONDITION" => {
            details.add_bad_request_violation(f, message.clone());
            details.add_precondition_failure_violation(reason, f, message.clone());
        }
        _ => {}
    }
    Status::with_error_details(code, message, details)
}

/// Maps a refused command onto a gRPC status. The message names the field
/// and the limit; `request_expired` keeps its prefix so clients can match it.
pub fn command_status(e: &CommandError) -> Status {
    let msg = match &e.field {
        Some(f) => format!("{f}: {}", e.message),
        None => e.message.clone(),
    };
    let field = e.field.as_deref();
    match e.code {
        ErrorCode::InvalidArgument => {
            detailed(Code::InvalidArgument, msg, "INVALID_ARGUMENT", field)
        }
        ErrorCode::NotFound => detailed(Code::NotFound, msg, "NOT_FOUND", field),
        ErrorCode::FailedPrecondition => {
            detailed(Code::FailedPrecondition, msg, "FAILED_PRECONDITION", field)
        }
        ErrorCode::ResourceExhausted => {
            detailed(Code::ResourceExhausted, msg, "RESOURCE_EXHAUSTED", field)
        }
        ErrorCode::PermissionDenied => {
            detailed(Code::PermissionDenied, msg, "PERMISSION_DENIED", field)
        }
        ErrorCode::RequestExpired => detailed(
            Code::FailedPrecondition,
            format!("request_expired: {msg}"),
            "REQUEST_EXPIRED",
            field,
        ),
    }
}

/// `Unavailable` naming the leader, if known, in the `warden-leader` metadata
/// (L3: the client retries there at once); with no leader known, "no quorum".
pub fn not_leader(leader: &LeaderHint) -> Status {
    match leader {
        Some((id, addr)) => {
            let mut s = detailed(
                Code::Unavailable,
                format!("not the leader; the leader is node {id} at {addr}"),
                "NOT_LEADER",
                None,
            );
            if let Ok(v) = addr.parse() {
                s.metadata_mut().insert(warden_proto::LEADER_METADATA, v);
            }
            s
        }
        None => detailed(
            Code::Unavailable,
            "no quorum: no leader is known (election in progress or a majority is down)".into(),
            "NO_LEADER",
            None,
        ),
    }
}

impl From<SubmitError> for Status {
    /// The one mapping of a write's failure: a redirect names the leader;
    /// what was not proposed, or whose outcome is unknown, is `Unavailable`
    /// (retry with the same request id, S7); a refusal keeps its code; a
    /// fatal failure says the outcome is unknown and the node is failing.
    fn from(e: SubmitError) -> Status {
        match e {
            SubmitError::NotLeader { leader } => not_leader(&leader),
            SubmitError::NotProposed { reason } => detailed(
                Code::Unavailable,
                format!("{reason}; nothing was proposed: retry at another node"),
                "NOT_PROPOSED",
                None,
            ),
            SubmitError::Unknown { reason } => detailed(
                Code::Unavailable,
                format!("{reason}; retry with the same request id"),
                "OUTCOME_UNKNOWN",
                None,
            ),
            SubmitError::Refused(e) => command_status(&e),
            SubmitError::Fatal { source } => detailed(
                Code::Unavailable,
                format!(
                    "this node failed ({source}); the outcome is unknown: retry at another node \
                     with the same request id"
                ),
                "NODE_FAILED",
                None,
            ),
        }
    }
}

impl From<ReadError> for Status {
    /// The one mapping of a read's failure.
    fn from(e: ReadError) -> Status {
        match e {
            ReadError::NotLeader { leader } => not_leader(&leader),
            ReadError::NoQuorum { reason } => detailed(
                Code::Unavailable,
                format!("no quorum: {reason}"),
                "NO_QUORUM",
                None,
            ),
            ReadError::Refused(e) => command_status(&e),
            e @ ReadError::BeyondCommit { .. } => detailed(
                Code::OutOfRange,
                format!(
                    "{e}; no event can be at or after it yet: resume a watch at most at the \
                     index after the last event seen"
                ),
                "BEYOND_COMMIT",
                None,
            ),
            ReadError::NotServing { reason } => {
                detailed(Code::Unavailable, reason, "NOT_SERVING", None)
            }
        }
    }
}

impl From<Bootstrapping> for Status {
    fn from(e: Bootstrapping) -> Status {
        detailed(Code::Unavailable, e.to_string(), "BOOTSTRAPPING", None)
    }
}

impl From<MembershipError> for Status {
    /// The one mapping of a membership change's failure.
    fn from(e: MembershipError) -> Status {
        match e {
            MembershipError::Refused(e) => command_status(&e),
            MembershipError::LeadershipMoved { former, leader } => {
                let mut s = detailed(
                    Code::Unavailable,
                    format!(
                        "node {former} was the leader; leadership moved before the change: \
                         retry on the new leader"
                    ),
                    "NOT_LEADER",
                    None,
                );
                if let Some(addr) = leader.and_then(|(_, addr)| addr.parse().ok()) {
                    s.metadata_mut().insert(warden_proto::LEADER_METADATA, addr);
                }
                s
            }
            MembershipError::CatchUpTimeout { node_id, secs } => detailed(
                Code::DeadlineExceeded,
                format!(
                    "node {node_id} did not catch up within {secs} s; it stays a learner: retry \
                     the same command to resume, or remove it"
                ),
                "CATCH_UP_TIMEOUT",
                None,
            ),
            MembershipError::NotCommitted { secs } => detailed(
                Code::Unavailable,
                format!(
                    "the membership change did not commit within {secs} s; check `warden cluster \
                     status`"
                ),
                "NOT_COMMITTED",
                None,
            ),
            MembershipError::Raft(e) => e.into(),
        }
    }
}

/// Metadata key carrying the oldest retained index on a `compacted` error.
pub const OLDEST_INDEX_METADATA: &str = "warden-oldest-index";

/// `OutOfRange` for a watch start index (or a cursor) below the retained
/// window: the message starts `compacted` and names the oldest retained
/// index, which also rides in the `warden-oldest-index` metadata.
pub fn compacted(c: Compacted, asked: u64) -> Status {
    let mut s = detailed(
        Code::OutOfRange,
        format!(
            "compacted: index {asked} is no longer retained by this node; the oldest retained \
             index is {}",
            c.oldest
        ),
        "COMPACTED",
        None,
    );
    if let Ok(v) = c.oldest.to_string().parse() {
        s.metadata_mut().insert(OLDEST_INDEX_METADATA, v);
    }
    s
}

/// `NotFound` for a lease that is not live.
pub fn lease_not_live(lease_id: LeaseId) -> Status {
    detailed(
        Code::NotFound,
        format!(
            "lease_id: lease {lease_id} is not live (expired, revoked, released or never granted)"
        ),
        "LEASE_NOT_LIVE",
        Some("lease_id"),
    )
}

/// `Unavailable` when this node stops serving: a stream ends with it and
/// the client retries elsewhere (S7; a queued waiter stays queued, S8).
pub fn shutting_down() -> Status {
    detailed(
        Code::Unavailable,
        "this node is shutting down; retry at another node".into(),
        "SHUTTING_DOWN",
        None,
    )
}

/// `Unauthenticated` for a call to a node with certificates whose caller
/// presented no client certificate (or one whose name is not a principal);
/// `reason` says which. Nothing was read from the request.
pub fn unauthenticated(reason: &str) -> Status {
    detailed(
        Code::Unauthenticated,
        format!(
            "{reason}: this node serves TLS with client certificates; connect with \
             --certs-dir DIR --user NAME (or WARDEN_CERTS_DIR, WARDEN_USER) holding \
             ca.crt and client.NAME.crt/.key (warden cert create-client)"
        ),
        "UNAUTHENTICATED",
        None,
    )
}

/// `PermissionDenied` on a queued acquire's stream when a hand-off removed
/// the waiter because its principal no longer had `lock` on `resource` (the
/// permission was revoked after it queued; the next waiter was granted
/// instead). Not a timeout: waiting again needs the permission back.
pub fn wait_permission_revoked(resource: &str, lease_id: LeaseId) -> Status {
    detailed(
        Code::PermissionDenied,
        format!(
            "resource: the wait of lease {lease_id} on {resource:?} was removed: its principal \
             no longer has lock permission on it (revoked while it waited)"
        ),
        "PERMISSION_REVOKED",
        Some("resource"),
    )
}

/// `FailedPrecondition` for a retried acquire whose grant has ended since
/// (S7: the first outcome, but the lease no longer holds it).
pub fn grant_ended(fencing_token: u64, lease_id: LeaseId) -> Status {
    detailed(
        Code::FailedPrecondition,
        format!(
            "request_expired: this acquire was granted token {fencing_token} on lease \
             {lease_id}, which no longer holds it"
        ),
        "REQUEST_EXPIRED",
        None,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    // "What bad input gets": each typed error maps to one gRPC code, and the
    // message names the field; `request_expired` keeps its prefix (S7).
    #[test]
    fn command_errors_map_to_one_code_each() {
        let e = |code, field: Option<&str>| CommandError {
            code,
            field: field.map(str::to_owned),
            message: "ttl_ms must be within 1000..=3600000 ms; got 5".into(),
        };
        let s = command_status(&e(ErrorCode::InvalidArgument, Some("ttl_ms")));
        assert_eq!(s.code(), Code::InvalidArgument);
        assert_eq!(
            s.message(),
            "ttl_ms: ttl_ms must be within 1000..=3600000 ms; got 5"
        );
        assert_eq!(
            command_status(&e(ErrorCode::NotFound, None)).code(),
            Code::NotFound
        );
        assert_eq!(
            command_status(&e(ErrorCode::FailedPrecondition, None)).code(),
            Code::FailedPrecondition
        );
        assert_eq!(
            command_status(&e(ErrorCode::ResourceExhausted, None)).code(),
            Code::ResourceExhausted
        );
        let expired = command_status(&e(ErrorCode::RequestExpired, Some("request_id")));
        assert_eq!(expired.code(), Code::FailedPrecondition);
        assert!(expired
            .message()
            .starts_with("request_expired: request_id: "));
    }

    // "Lock kinds" (one kind per resource), for clients in any language: an
    // acquire of another kind is refused FAILED_PRECONDITION with the field
    // (`kind` or `limit`) in a google.rpc.BadRequest, where clients read
    // fields, and as the subject of a google.rpc.PreconditionFailure; a
    // refusal without a field carries neither.
    #[test]
    fn a_failed_precondition_names_its_field_in_the_details() {
        use tonic_types::StatusExt as _;
        let s = command_status(&CommandError {
            code: ErrorCode::FailedPrecondition,
            field: Some("kind".into()),
            message: "\"r\" is a semaphore of 3 while it has holders".into(),
        });
        let details = s.get_error_details();
        let bad = details.bad_request().expect("a BadRequest");
        assert_eq!(bad.field_violations[0].field, "kind");
        let pre = details
            .precondition_failure()
            .expect("a PreconditionFailure");
        assert_eq!(pre.violations[0].subject, "kind");
        let none = command_status(&CommandError {
            code: ErrorCode::FailedPrecondition,
            field: None,
            message: "lease 7 holds several locks".into(),
        });
        let details = none.get_error_details();
        assert!(details.bad_request().is_none() && details.precondition_failure().is_none());
    }

    // "What bad input gets", for clients in any language: an invalid
    // argument carries the field in a google.rpc.BadRequest and the reason
    // in a google.rpc.ErrorInfo, not only in the message text.
    #[test]
    fn an_invalid_argument_carries_its_field_as_structured_details() {
        let s = command_status(&CommandError {
            code: ErrorCode::InvalidArgument,
            field: Some("wait_timeout_ms".into()),
            message: "wait_timeout_ms must be at most 3600000 ms; got 3600001".into(),
        });
        let details = s.get_error_details();
        let bad = details.bad_request().expect("a BadRequest detail");
        assert_eq!(bad.field_violations.len(), 1);
        assert_eq!(bad.field_violations[0].field, "wait_timeout_ms");
        let info = details.error_info().expect("an ErrorInfo detail");
        assert_eq!(info.reason, "INVALID_ARGUMENT");
        assert_eq!(info.domain, ERROR_DOMAIN);
        let expired = command_status(&CommandError {
            code: ErrorCode::RequestExpired,
            field: Some("request_id".into()),
            message: "gone".into(),
        });
        assert_eq!(
            expired
                .get_error_details()
                .error_info()
                .map(|i| i.reason.clone()),
            Some("REQUEST_EXPIRED".into())
        );
        assert!(expired.get_error_details().bad_request().is_none());
    }

    // L3 / redirects: a follower names the leader in `warden-leader`; with no
    // leader known the error says "no quorum".
    #[test]
    fn not_leader_carries_the_leader_address() {
        let s = not_leader(&Some((3, "127.0.0.1:7003".into())));
        assert_eq!(s.code(), Code::Unavailable);
        assert_eq!(
            s.metadata()
                .get(warden_proto::LEADER_METADATA)
                .and_then(|v| v.to_str().ok()),
            Some("127.0.0.1:7003")
        );
        let none = not_leader(&None);
        assert_eq!(none.code(), Code::Unavailable);
        assert!(none.message().starts_with("no quorum"));
        assert!(none.metadata().get(warden_proto::LEADER_METADATA).is_none());
    }

    // L3 and S7: a write whose commit was not seen says so and tells the
    // caller to retry with the same request id; a storage failure is not
    // reported as "no quorum".
    #[test]
    fn unknown_outcomes_and_fatal_failures_say_what_happened() {
        let s = Status::from(SubmitError::Unknown {
            reason: "no quorum: the change did not commit within 3000 ms".into(),
        });
        assert_eq!(s.code(), Code::Unavailable);
        assert_eq!(
            s.message(),
            "no quorum: the change did not commit within 3000 ms; retry with the same request id"
        );
        let fatal = Status::from(SubmitError::fatal("storage: disk full"));
        assert_eq!(fatal.code(), Code::Unavailable);
        assert!(
            !fatal.message().contains("no quorum"),
            "{}",
            fatal.message()
        );
        assert!(fatal.message().contains("storage: disk full"));
    }

    // Watch below the retained window: `compacted`, naming the oldest
    // retained index in the message and the `warden-oldest-index` metadata.
    #[test]
    fn compacted_names_the_oldest_retained_index() {
        let s = compacted(Compacted { oldest: 3 }, 2);
        assert_eq!(s.code(), Code::OutOfRange);
        assert!(s.message().starts_with("compacted"));
        assert!(s.message().contains("oldest retained index is 3"));
        assert_eq!(
            s.metadata()
                .get(OLDEST_INDEX_METADATA)
                .and_then(|v| v.to_str().ok()),
            Some("3")
        );
    }
}
