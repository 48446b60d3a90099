//! The gRPC and HTTP edge: each public service turns requests into node
//! calls and the node's typed answers and errors into wire messages
//! ([`status`] is the one place an error becomes a gRPC status).
//!
//! # Files (imports run down this list)
//!
//! - `lock.rs`, `lease.rs`, `watch.rs`, `admin/` (its tests in `admin/tests.rs`): the public services.
//! - `health.rs`: `/healthz` and `/readyz` over HTTP, and the admin
//!   listener that also serves the dashboard.
//! - `dashboard/`: the read-only `/ui` page and its JSON (`/ui/api/*`),
//!   assets embedded from `dashboard/assets/`.
//! - `calls.rs`: acquire and release, unary or on a `Calls` stream.
//! - `call_ids.rs`: the call ids in flight on one `Calls` stream.
//! - `waiter.rs`: a queued acquire's stream of positions and its answer.
//! - `convert.rs`: wire messages to commands, answers to wire messages.
//! - `status.rs`: typed errors to gRPC statuses.
//! - `trace.rs`: the span each public request is served in (method,
//!   principal, resource, request ids).
//! - `injected.rs`: simulator only, the layer that puts an injected
//!   identity where a TLS handshake would put one.
//! - this file: [`principal`], the caller's principal from its TLS
//!   handshake (tests in `tests.rs`).

pub mod admin;
mod call_ids;
mod calls;
mod convert;
pub mod dashboard;
pub mod grpc_metrics;
pub mod health;
pub mod injected;
pub mod lease;
pub mod lock;
pub mod status;
pub mod trace;
mod waiter;
pub mod watch;

pub use calls::MAX_CALLS_IN_PROGRESS;
pub use waiter::QUEUE_POSITION_REPORT_INTERVAL;

use warden_tls::Identity;

use crate::node::Principal;

/// What a node certificate's principal starts with: node N's calls to the
/// public services (a joining node reads `ClusterStatus`) are made as
/// principal `node.N`. No client certificate can carry such a name
/// (`warden_tls::validate_principal` refuses anything that reads like a
/// node), so `node.N` holds only what is granted to it by that name.
pub const NODE_PRINCIPAL_PREFIX: &str = "node.";

/// The principal of node `node_id`'s certificate: `node.N`.
pub fn node_principal(node_id: u64) -> String {
    format!("{NODE_PRINCIPAL_PREFIX}{node_id}")
}

/// The principal a request is made for, from the verified TLS handshake of
/// its connection only (warden-tls' `PeerInfo`, which only its acceptor
/// builds); no request field or metadata is read, so nothing a caller sends
/// can set or override it (docs/security.md):
///
/// - a client certificate: `Some(its principal)`;
/// - a node certificate: `Some("node.N")` ([`node_principal`]);
/// - no certificate on a TLS connection: `Unauthenticated`;
/// - no TLS at all: `Ok(None)`, anonymous. Only an insecure node serves
///   plaintext connections: a node with certificates accepts TLS
///   connections only (`start.rs`), so every request it serves has a
///   `PeerInfo`.
///
/// The simulator's nodes (plaintext, no certificates) read the identity
/// its `IdentitySource` gave the connection instead ([`injected`]), by the
/// same rules; no other node has one, and a node with certificates never
/// installs a source, so for it the TLS handshake alone decides.
///
/// # Errors
/// `Unauthenticated` when a secure node's caller presented no certificate.
fn principal<T>(req: &tonic::Request<T>) -> Result<Principal, tonic::Status> {
    principal_of(warden_tls::peer_identity(req).or_else(|| injected::injected_identity(req)))
}

/// The caller's address: the TLS connection's (warden-tls' `PeerInfo`), or
/// the plaintext connection's; None when neither is known.
fn remote_addr<T>(req: &tonic::Request<T>) -> Option<std::net::SocketAddr> {
    warden_tls::peer_info(req)
        .map(warden_tls::PeerInfo::remote_addr)
        .or_else(|| req.remote_addr())
}

/// [`principal`] from the connection's identity (None: not TLS).
fn principal_of(identity: Option<&Identity>) -> Result<Principal, tonic::Status> {
    let name = match identity {
        None => return Ok(None),
        Some(Identity::Anonymous) => return Err(status::unauthenticated("no client certificate")),
        Some(Identity::Client { principal }) => principal.clone(),
        Some(Identity::Node { node_id }) => node_principal(*node_id),
    };
    // warden-tls' rules are stricter than the core's, so this holds for
    // every certificate the handshake accepted; refuse rather than guess.
    warden_core::types::Principal::new(&name)
        .map(Some)
        .map_err(|e| status::unauthenticated(&format!("certificate name {name:?}: {e}")))
}

/// Why an HTTP request on the admin listener was refused by [`http_reader`].
#[derive(Debug)]
pub(crate) enum HttpRefused {
    /// A secure node's caller without a client certificate (401).
    Unauthenticated(String),
    /// A secure node that has not bootstrapped: no table to check (503).
    Bootstrapping(String),
    /// The check itself: PermissionDenied (403) or a failed read.
    Read(crate::node::ReadError),
}

impl HttpRefused {
    /// The answer to the caller, for the endpoint named `what`: 401 with
    /// what it needs, 403 for a missing permission, 400 for bad input, 503
    /// while the node cannot check.
    pub(crate) fn answer(self, what: &str) -> (axum::http::StatusCode, String) {
        use axum::http::StatusCode;
        match self {
            HttpRefused::Unauthenticated(why) => (
                StatusCode::UNAUTHORIZED,
                format!(
                    "{why}: {what} needs a client certificate whose principal has read on \"\""
                ),
            ),
            HttpRefused::Bootstrapping(why) => (StatusCode::SERVICE_UNAVAILABLE, why),
            HttpRefused::Read(crate::node::ReadError::Refused(e))
                if e.code == warden_core::types::ErrorCode::PermissionDenied =>
            {
                (StatusCode::FORBIDDEN, e.message)
            }
            HttpRefused::Read(crate::node::ReadError::Refused(e)) => {
                (StatusCode::BAD_REQUEST, e.message)
            }
            HttpRefused::Read(e) => (StatusCode::SERVICE_UNAVAILABLE, e.to_string()),
        }
    }
}

/// The caller of an HTTP request on the admin listener (`/metrics`, the
/// dashboard), if it holds `read` on `""` in this node's applied table:
/// its principal from the TLS handshake of its connection
/// (`ConnectInfo<PeerInfo>`, as [`principal`] reads it for gRPC) and the
/// node (None: an insecure node still bootstrapping, which checks nothing).
/// On an insecure node (`secure` false) every caller is anonymous.
pub(crate) fn http_reader(
    cell: &crate::node::NodeCell,
    secure: bool,
    extensions: &axum::http::Extensions,
) -> Result<(Option<std::sync::Arc<crate::node::Node>>, Principal), HttpRefused> {
    let principal = if secure {
        let identity = extensions
            .get::<axum::extract::ConnectInfo<warden_tls::PeerInfo>>()
            .map(|c| c.0.identity())
            .ok_or_else(|| {
                // A secure node serves these over TLS only; refuse rather than guess.
                HttpRefused::Unauthenticated("no TLS identity on this connection".into())
            })?;
        principal_of(Some(identity))
            .map_err(|s| HttpRefused::Unauthenticated(s.message().to_string()))?
    } else {
        None
    };
    let node = match cell.get() {
        Ok(node) => node,
        Err(_) if !secure => return Ok((None, principal)),
        Err(e) => return Err(HttpRefused::Bootstrapping(e.to_string())),
    };
    node.check_applied(
        &principal,
        warden_core::types::Permission::Read,
        warden_core::auth::Target::Prefix(""),
        None,
    )
    .map_err(HttpRefused::Read)?;
    Ok((Some(node), principal))
}

#[cfg(test)]
mod tests;
