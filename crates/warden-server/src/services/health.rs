//! `/healthz` and `/readyz` over HTTP on `--admin-listen` (issue 8), for load
//! balancers and orchestrators.
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
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::routing::get;
use axum::Router;
use openraft::async_runtime::WatchReceiver as _;
use openraft::ServerState;
use serde::Serialize;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::time::Instant;

use crate::node::NodeCell;
use crate::ServerError;

/// The `/readyz` body.
#[derive(Debug, Serialize, PartialEq, Eq)]
pub struct Readiness {
    /// True when the node serves as a caught-up member.
    pub ready: bool,
    /// This node.
    pub node_id: u64,
    /// The leader it knows (0 = none).
    pub leader_id: u64,
    /// Its current term.
    pub term: u64,
    /// The highest log index it knows is committed.
    pub commit_index: u64,
    /// Its last applied log index.
    pub applied_index: u64,
    /// Why it is not ready ("" when ready).
    pub reason: String,
}

/// When this node last accepted an AppendEntries from a leader (the peer
/// service touches it; `/readyz` reads it).
#[derive(Debug, Clone, Default)]
pub struct LeaderContact(Arc<Mutex<Option<Instant>>>);

impl LeaderContact {
    /// Records an AppendEntries accepted now.
    pub fn touch(&self) {
        self.touch_at(Instant::now());
    }

    fn touch_at(&self, at: Instant) {
        if let Ok(mut last) = self.0.lock() {
            *last = Some(at);
        }
    }

    /// When the last AppendEntries was accepted; `None` when never.
    pub fn last(&self) -> Option<Instant> {
        self.0.lock().ok().and_then(|last| *last)
    }

    /// Time since the last accepted AppendEntries; `None` when never.
    pub fn since(&self) -> Option<Duration> {
        self.since_at(Instant::now())
    }

    fn since_at(&self, now: Instant) -> Option<Duration> {
        self.last().map(|t| now.saturating_duration_since(t))
    }
}

/// The readiness of the node in `cell` (see the module docs).
pub fn readiness(node_id: u64, cell: &NodeCell, contact: &LeaderContact) -> Readiness {
    let Ok(node) = cell.get() else {
        return Readiness {
            ready: false,
            node_id,
            leader_id: 0,
            term: 0,
            commit_index: 0,
            applied_index: 0,
            reason: "bootstrapping: not part of a cluster yet".into(),
        };
    };
    let rx = node.raft.metrics();
    let m = rx.borrow_watched();
    let commit_index = m.local_committed.as_ref().map(|l| l.index()).unwrap_or(0);
    let applied_index = m.last_applied.as_ref().map(|l| l.index()).unwrap_or(0);
    let leader_id = m.current_leader.unwrap_or(0);
    let contact_limit = Duration::from_millis(2 * node.config.timing.election_timeout_max_ms);
    let reason = if m.running_state.is_err() {
        "raft stopped".to_string()
    } else if m.membership_config.get_node(&node_id).is_none() {
        format!("node {node_id} is not a member (removed or replaced)")
    } else if m.current_leader.is_none() {
        "no known leader".to_string()
    } else if m.state != ServerState::Leader
        && contact.since().is_none_or(|since| since > contact_limit)
    {
        format!(
            "no AppendEntries from leader {leader_id} within {} ms",
            contact_limit.as_millis()
        )
    } else if applied_index < commit_index {
        format!("applied index {applied_index} is behind the commit index {commit_index}")
    } else {
        String::new()
    };
    Readiness {
        ready: reason.is_empty(),
        node_id,
        leader_id,
        term: m.current_term,
        commit_index,
        applied_index,
        reason,
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

/// Binds `addr` and serves `/healthz` and `/readyz` until `stop` turns true.
///
/// # Errors
/// `ServerError::Config` naming `--admin-listen` when the address cannot be bound.
pub async fn serve(
    addr: SocketAddr,
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
    tracing::info!(addr = %bound, "serving /healthz and /readyz");
    let app = Router::new()
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .with_state(AppState {
            node_id,
            cell,
            contact,
        });
    Ok(tokio::spawn(async move {
        let _ = axum::serve(listener, app)
            .with_graceful_shutdown(async move {
                let _ = stop.wait_for(|s| *s).await;
            })
            .await;
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    // Issue 8: a node that has not bootstrapped is alive but not ready.
    #[test]
    fn not_ready_while_bootstrapping() {
        let r = readiness(3, &NodeCell::default(), &LeaderContact::default());
        assert!(!r.ready);
        assert_eq!(r.node_id, 3);
        assert!(r.reason.starts_with("bootstrapping"), "{}", r.reason);
    }

    // Issue 8 (/readyz of a removed node): contact with the leader is
    // "never" until an AppendEntries is accepted, then counts from it.
    #[test]
    fn leader_contact_counts_from_the_last_append() {
        let contact = LeaderContact::default();
        assert_eq!(contact.since(), None);
        let t0 = Instant::now();
        contact.touch_at(t0);
        let ms = Duration::from_millis;
        assert_eq!(contact.since_at(t0 + ms(700)), Some(ms(700)));
        // A clone shares the record (the peer service and /readyz).
        contact.clone().touch_at(t0 + ms(700));
        assert_eq!(contact.since_at(t0 + ms(1_000)), Some(ms(300)));
    }
}
