//! `/healthz` and `/readyz` over HTTP on `--admin-listen`, for load
//! balancers and orchestrators. On a node with certificates they are served
//! over TLS 1.3 (ALPN `h2` and `http/1.1`, warden-tls'
//! `ServerTls::listener`, reloaded on SIGHUP with the rest) and need no
//! client certificate: probes have none, and neither endpoint names a lease,
//! a holder or a principal. Anything added here that does must read the
//! caller's `PeerInfo` (`ConnectInfo<PeerInfo>`) and check its permission.
//!
//! - `GET /healthz`: 200 `ok` while the process runs (also while it is
//!   bootstrapping).
//! - `GET /readyz`: 200 when this node is part of a cluster: bootstrapped,
//!   Raft running, its id is a voter or learner in the membership it knows
//!   (openraft's `membership_config`, the latest it has seen), it knows a
//!   leader, and, unless it is the leader, it accepted an AppendEntries
//!   (entries or heartbeat) from a leader within 2 × the maximum election
//!   timeout; and it has applied everything up to the commit index it knows.
//!   Else 503. openraft's metrics say nothing about a follower's contact
//!   with its leader (`millis_since_quorum_ack` exists on leaders only), so
//!   the peer service records it ([`LeaderContact`]). That rule is what makes
//!   a removed or replaced node unready: the leader stops replicating to it
//!   once the change is committed, so either it saw the membership without
//!   itself, or it stops hearing from the leader. Both bodies are one JSON
//!   object:
//!   `{"ready","node_id","leader_id","term","commit_index","applied_index","reason"}`.
//!   A follower can be ready: reads and writes go to the leader anyway; ready
//!   means "this member is caught up and sees a leader".

use std::net::SocketAddr;

use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::routing::get;
use axum::Router;
use tokio::net::TcpListener;
use tokio::sync::watch;

use crate::node::cluster::Readiness;
use crate::node::NodeCell;
use crate::raft::LeaderContact;
use crate::ServerError;

/// The readiness of the node in `cell` (see the module docs).
pub fn readiness(node_id: u64, cell: &NodeCell, contact: &LeaderContact) -> Readiness {
    match cell.get() {
        Ok(node) => node.readiness(contact),
        Err(_) => Readiness::bootstrapping(node_id),
    }
}

#[derive(Clone)]
struct AppState {
    node_id: u64,
    cell: NodeCell,
    contact: LeaderContact,
}

async fn healthz() -> &'static str {
    "ok\n"
}

async fn readyz(
    State(s): State<AppState>,
) -> (StatusCode, [(header::HeaderName, &'static str); 1], String) {
    let r = readiness(s.node_id, &s.cell, &s.contact);
    let code = if r.ready {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    let body = serde_json::to_string(&r).unwrap_or_default() + "\n";
    (code, [(header::CONTENT_TYPE, "application/json")], body)
}

/// Binds `addr` and serves `/healthz` and `/readyz` until `stop` turns true:
/// over TLS with `tls`, plaintext without (an insecure node).
///
/// # Errors
/// `ServerError::Config` naming `--admin-listen` when the address cannot be bound.
pub async fn serve(
    addr: SocketAddr,
    tls: Option<warden_tls::ServerTls>,
    node_id: u64,
    cell: NodeCell,
    contact: LeaderContact,
    mut stop: watch::Receiver<bool>,
) -> Result<tokio::task::JoinHandle<()>, ServerError> {
    let listener = TcpListener::bind(addr)
        .await
        .map_err(|e| ServerError::Config(format!("admin-listen: cannot bind {addr}: {e}")))?;
    let bound = listener
        .local_addr()
        .map(|a| a.to_string())
        .unwrap_or_default();
    let app = Router::new()
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .with_state(AppState {
            node_id,
            cell,
            contact,
        });
    let stopped = async move {
        let _ = stop.wait_for(|s| *s).await;
    };
    let Some(tls) = tls else {
        tracing::info!(addr = %bound, "serving /healthz and /readyz over plaintext HTTP");
        return Ok(tokio::spawn(async move {
            let _ = axum::serve(listener, app)
                .with_graceful_shutdown(stopped)
                .await;
        }));
    };
    let listener = tls
        .listener(listener)
        .map_err(|e| ServerError::Config(format!("admin-listen: {addr}: {e}")))?;
    tracing::info!(addr = %bound, "serving /healthz and /readyz over TLS");
    Ok(tokio::spawn(async move {
        let _ = axum::serve(listener, app)
            .with_graceful_shutdown(stopped)
            .await;
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    // /readyz: a node that has not bootstrapped is alive but not ready.
    #[test]
    fn not_ready_while_bootstrapping() {
        let r = readiness(3, &NodeCell::default(), &LeaderContact::default());
        assert!(!r.ready);
        assert_eq!(r.node_id, 3);
        assert!(r.reason.starts_with("bootstrapping"), "{}", r.reason);
    }
}
