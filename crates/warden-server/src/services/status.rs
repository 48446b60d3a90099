//! Errors at the gRPC boundary: every typed error maps onto one status code
//! here, in one place.

use openraft::errors::{ClientWriteError, RaftError};
use tonic::{Code, Status};
use warden_core::types::{CommandError, ErrorCode};

use crate::types::TypeConfig;

/// How long a proposal may take to commit before the caller is told there is
/// no quorum (L3: fail clearly within the caller's deadline, never hang).
pub const COMMIT_TIMEOUT_MS: u64 = 3_000;

/// A change that did not commit within [`COMMIT_TIMEOUT_MS`] (L3).
pub fn no_quorum() -> Status {
    Status::unavailable(format!(
        "no quorum: the change did not commit within {COMMIT_TIMEOUT_MS} ms; retry with the same request id"
    ))
}

/// Maps a refused command onto a gRPC status. The message names the field and
/// the limit; `request_expired` keeps its prefix so clients can match it.
pub fn command_status(e: &CommandError) -> Status {
    let msg = match &e.field {
        Some(f) => format!("{f}: {}", e.message),
        None => e.message.clone(),
    };
    match e.code {
        ErrorCode::InvalidArgument => Status::invalid_argument(msg),
        ErrorCode::NotFound => Status::not_found(msg),
        ErrorCode::FailedPrecondition => Status::failed_precondition(msg),
        ErrorCode::ResourceExhausted => Status::resource_exhausted(msg),
        ErrorCode::RequestExpired => Status::failed_precondition(format!("request_expired: {msg}")),
    }
}

/// `NotFound` for a lease that is not live.
pub fn lease_not_live(lease_id: u64) -> Status {
    Status::not_found(format!(
        "lease_id: lease {lease_id} is not live (expired, revoked, released or never granted)"
    ))
}

/// A reply of an unexpected kind from the state machine (a bug, not input).
pub fn unexpected(reply: &warden_core::types::Response) -> Status {
    Status::internal(format!("unexpected reply {reply:?}"))
}

/// `Unavailable` naming the leader, if known, in the `warden-leader` metadata.
pub fn not_leader(leader: Option<(u64, String)>) -> Status {
    match leader {
        Some((id, addr)) => {
            let mut s = Status::new(
                Code::Unavailable,
                format!("not the leader; the leader is node {id} at {addr}"),
            );
            if let Ok(v) = addr.parse() {
                s.metadata_mut().insert(warden_proto::LEADER_METADATA, v);
            }
            s
        }
        None => Status::unavailable(
            "no quorum: no leader is known (election in progress or a majority is down)",
        ),
    }
}

/// A write error from openraft that is not a redirect.
pub fn write_error(e: &RaftError<TypeConfig, ClientWriteError<TypeConfig>>) -> Status {
    Status::unavailable(format!("no quorum: {e}"))
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

    // L3 / redirects: a follower names the leader in `warden-leader`; with no
    // leader known the error says "no quorum".
    #[test]
    fn not_leader_carries_the_leader_address() {
        let s = not_leader(Some((3, "127.0.0.1:7003".into())));
        assert_eq!(s.code(), Code::Unavailable);
        assert_eq!(
            s.metadata()
                .get(warden_proto::LEADER_METADATA)
                .and_then(|v| v.to_str().ok()),
            Some("127.0.0.1:7003")
        );
        let none = not_leader(None);
        assert_eq!(none.code(), Code::Unavailable);
        assert!(none.message().starts_with("no quorum"));
        assert!(none.metadata().get(warden_proto::LEADER_METADATA).is_none());
    }
}
