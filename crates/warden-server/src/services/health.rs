//! `/healthz` and `/readyz` over HTTP on `--admin-listen`, for load
//! balancers and orchestrators, beside `/metrics` and the dashboard. On a node with certificates they are served
//! over TLS 1.3 (ALPN `h2` and `http/1.1`, warden-tls'
//! `ServerTls::listener`, reloaded on SIGHUP with the rest) and need no
//! client certificate: probes have none, and neither endpoint names a lease,
//! a holder or a principal. Anything added here that does must read the
//! caller's `PeerInfo` (`ConnectInfo<PeerInfo>`) and check its permission.
//!
//! | endpoint | needs |
//! |---|---|
//! | `GET /healthz`, `GET /readyz` | nothing (no client certificate either) |
//! | `GET /metrics` | with certificates: a client certificate (else 401) whose principal has `read` on `""` (else 403); insecure node: nothing |
//! | `GET /ui`, `/ui/app.js`, `/ui/app.css`, `/ui/api/*` (the dashboard, [`super::dashboard`]) | with certificates: a client certificate (else 401) whose principal has `read` on `""` (else 403); insecure node: nothing |
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
//!
//! - `GET /metrics`: this node's metrics in the Prometheus text format
//!   (`crate::metrics` lists the series). On a node with certificates it
//!   needs a client certificate (401 without one) whose principal has
//!   `read` on `""` in this node's applied table (403 without it; 503 while
//!   the node is bootstrapping and has no table to check against):
//!   Prometheus scrapes with a client certificate (`tls_config` with
//!   `cert_file` and `key_file`). On an insecure node it is open, like
//!   everything else there. A scrape reads atomics only: it never takes the
//!   state machine's lock.
//!
//! On the client port, gRPC's standard `grpc.health.v1.Health` says the
//! same ([`grpc_health`]): service `""` (and each public service) is
//! SERVING exactly when `/readyz` would answer 200, re-read every
//! [`GRPC_HEALTH_INTERVAL`]. Like `/readyz` it needs TLS on a secure node
//! but no client certificate and no permission (`grpc_health_probe -tls`
//! has none). Server reflection (`grpc.reflection.v1`, for `grpcurl`)
//! lists the public API only, whose `.proto` files are public; it needs no
//! permission either.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use tokio::net::TcpListener;
use tokio::sync::watch;
use warden_tls::PeerInfo;

use crate::metrics::Metrics;
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
    metrics: Arc<Metrics>,
    /// Served over TLS: every request has the handshake's `PeerInfo`.
    secure: bool,
}

async fn metrics_text(State(s): State<AppState>, request: Request) -> Response {
    if let Err(refused) = super::http_reader(&s.cell, s.secure, request.extensions()) {
        let (code, why) = refused.answer("/metrics");
        return (code, why + "\n").into_response();
    }
    (
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        s.metrics.render(),
    )
        .into_response()
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

/// Binds `addr` and serves `/healthz`, `/readyz` and `/metrics` until `stop`
/// turns true: over TLS with `tls`, plaintext without (an insecure node).
///
/// # Errors
/// `ServerError::Config` naming `--admin-listen` when the address cannot be bound.
pub async fn serve(
    addr: SocketAddr,
    tls: Option<warden_tls::ServerTls>,
    node_id: u64,
    cell: NodeCell,
    contact: LeaderContact,
    metrics: Arc<Metrics>,
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
        .route("/metrics", get(metrics_text))
        .with_state(AppState {
            node_id,
            cell: cell.clone(),
            contact,
            metrics,
            secure: tls.is_some(),
        })
        .merge(super::dashboard::router(cell, tls.is_some()));
    let stopped = async move {
        let _ = stop.wait_for(|s| *s).await;
    };
    let Some(tls) = tls else {
        tracing::info!(addr = %bound, "serving /healthz, /readyz, /metrics and /ui over plaintext HTTP");
        return Ok(tokio::spawn(async move {
            let _ = axum::serve(listener, app)
                .with_graceful_shutdown(stopped)
                .await;
        }));
    };
    let listener = tls
        .listener(listener)
        .map_err(|e| ServerError::Config(format!("admin-listen: {addr}: {e}")))?;
    tracing::info!(addr = %bound, "serving /healthz, /readyz, /metrics and /ui over TLS");
    Ok(tokio::spawn(async move {
        let _ = axum::serve(
            listener,
            app.into_make_service_with_connect_info::<PeerInfo>(),
        )
        .with_graceful_shutdown(stopped)
        .await;
    }))
}

/// How often the gRPC health status is re-read from the readiness rule.
pub const GRPC_HEALTH_INTERVAL: std::time::Duration = std::time::Duration::from_millis(200);

/// The public services whose gRPC health follows the node's readiness, as
/// well as the whole server's (`""`).
const HEALTH_SERVICES: [&str; 5] = [
    "",
    "warden.v1.Lock",
    "warden.v1.Lease",
    "warden.v1.Watch",
    "warden.v1.Admin",
];

/// `grpc.health.v1.Health` for the client port, and the task that keeps it
/// equal to [`readiness`] until `stop` turns true (see the module docs).
pub fn grpc_health(
    node_id: u64,
    cell: NodeCell,
    contact: LeaderContact,
    mut stop: watch::Receiver<bool>,
) -> (
    tonic_health::pb::health_server::HealthServer<impl tonic_health::pb::health_server::Health>,
    tokio::task::JoinHandle<()>,
) {
    use tonic_health::ServingStatus;
    let (reporter, service) = tonic_health::server::health_reporter();
    let task = tokio::spawn(async move {
        let mut last = None;
        let mut tick = tokio::time::interval(GRPC_HEALTH_INTERVAL);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            let ready = readiness(node_id, &cell, &contact).ready;
            if last != Some(ready) {
                let status = if ready {
                    ServingStatus::Serving
                } else {
                    ServingStatus::NotServing
                };
                for name in HEALTH_SERVICES {
                    reporter.set_service_status(name, status).await;
                }
                last = Some(ready);
            }
            tokio::select! {
                _ = tick.tick() => {}
                _ = stop.wait_for(|s| *s) => return,
            }
        }
    });
    (service, task)
}

/// gRPC server reflection (`grpc.reflection.v1`) over the public API's
/// descriptors ([`warden_proto::FILE_DESCRIPTOR_SET`]).
///
/// # Errors
/// `ServerError::Other` if the embedded descriptors do not decode (a build
/// defect).
pub fn grpc_reflection() -> Result<
    tonic_reflection::server::v1::ServerReflectionServer<
        impl tonic_reflection::server::v1::ServerReflection,
    >,
    ServerError,
> {
    tonic_reflection::server::Builder::configure()
        .register_encoded_file_descriptor_set(warden_proto::FILE_DESCRIPTOR_SET)
        .build_v1()
        .map_err(|e| ServerError::Other(format!("gRPC reflection: {e}")))
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
