//! Errors at the gRPC boundary: every typed error maps onto one status code
//! here, in one place.

use openraft::errors::{ClientWriteError, RaftError};
use tonic::{Code, Status};
use warden_core::types::{CommandError, ErrorCode};

use crate::raft_types::TypeConfig;

/// How long a proposal may take to commit before the caller is told there is
/// no quorum (L3: fail clearly within the caller's deadline, never hang).
pub const COMMIT_TIMEOUT_MS: u64 = 3_000;

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
