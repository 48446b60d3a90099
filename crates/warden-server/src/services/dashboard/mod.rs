//! The dashboard: one read-only page at `/ui` on the admin listener
//! (`--admin-listen`), with the JSON it polls under `/ui/api/`. Everything
//! it serves is compiled into the binary (`assets/`: `index.html`, `app.js`,
//! `app.css`); nothing is fetched from the network.
//!
//! | path | what |
//! |---|---|
//! | `GET /ui`, `/ui/` | the page |
//! | `GET /ui/app.js`, `/ui/app.css` | its script and style |
//! | `GET /favicon.ico` | 204, empty (browsers ask for it by themselves) |
//! | `GET /ui/api/cluster` | the members: role, term, applied index, lag, last contact |
//! | `GET /ui/api/locks` | every held or waited-on resource: holder lease, principal, fencing token, TTL left, every holder (readers and permits with mode and slot), kind and limit, waiters with ages, lock-delay left |
//! | `GET /ui/api/top` | the 20 hottest resources ([`crate::node::top`]) |
//! | `GET /ui/api/events/{resource}` | the last [`TIMELINE_EVENTS`] events of one resource (percent-encoded name) from this node's event log ([`crate::events`]) |
//!
//! # Permission
//!
//! On a node with certificates, every `/ui` path (the page and its assets
//! too) needs a client certificate whose principal holds `read` on `""`
//! (checked against the table this node has applied, `warden_core::auth`):
//! without a certificate 401, without the permission 403, with a plain-text
//! reason and nothing else. The caller's identity is the TLS handshake's
//! (`ConnectInfo<warden_tls::PeerInfo>`) and nothing in the request. On an
//! insecure node everything is open, like the node's other endpoints.
//!
//! # Browser safety
//!
//! Resource names are anyone's input: the script renders every value with
//! `textContent` (never as HTML), and every `/ui` answer carries
//! `Content-Security-Policy: default-src 'self'` (no inline script or
//! style, nothing from another origin), `X-Content-Type-Options: nosniff`,
//! `Referrer-Policy: no-referrer` and `Cache-Control: no-store`.
//!
//! # Reads
//!
//! The lock, hot-lock and cluster reads are the leader's (linearizable,
//! like `warden list`); a follower's dashboard answers 503 with
//! `{"error","leader_id","leader_addr"}` naming the leader it knows, which
//! the page shows. The timeline is this node's event log (any member; a
//! follower may lag). Ages and TTLs are display only (docs/semantics.md
//! "Time").

use std::sync::Arc;

use axum::extract::{Path, Request, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Extension, Router};
use serde_json::{json, Value};
use warden_core::types::ErrorCode;

use super::http_reader;
use crate::events::Filter;
use crate::node::{Node, NodeCell, Principal, ReadError};

/// How many events of one resource the timeline shows (the newest).
pub const TIMELINE_EVENTS: usize = 50;

/// How many hot locks the dashboard shows.
const TOP_LIMIT: u32 = 20;

/// The Content-Security-Policy of every `/ui` answer.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'self'";

const INDEX_HTML: &str = include_str!("assets/index.html");
const APP_JS: &str = include_str!("assets/app.js");
const APP_CSS: &str = include_str!("assets/app.css");

#[derive(Clone)]
struct Ui {
    cell: NodeCell,
    /// A node with certificates: every caller must show one.
    secure: bool,
}

/// The `/ui` routes (see the module docs). `secure`: the node serves TLS
/// with certificates, so callers are checked; the router must then be
/// served with `into_make_service_with_connect_info::<PeerInfo>()`.
pub fn router(cell: NodeCell, secure: bool) -> Router {
    let ui = Ui { cell, secure };
    Router::new()
        .route("/ui", get(index))
        .route("/ui/", get(index))
        .route("/ui/app.js", get(app_js))
        .route("/ui/app.css", get(app_css))
        // Browsers ask for it on their own; an empty answer keeps a 404
        // out of the page's console.
        .route("/favicon.ico", get(|| async { StatusCode::NO_CONTENT }))
        .route("/ui/api/cluster", get(cluster))
        .route("/ui/api/locks", get(locks))
        .route("/ui/api/top", get(top))
        .route("/ui/api/events/{*resource}", get(events))
        .route_layer(middleware::from_fn_with_state(ui.clone(), gate))
        .layer(middleware::map_response(headers))
        .with_state(ui)
}

/// The security headers of every `/ui` answer (refusals included).
async fn headers(mut r: Response) -> Response {
    let h = r.headers_mut();
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CONTENT_SECURITY_POLICY),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    r
}

fn text(code: StatusCode, body: impl Into<String>) -> Response {
    (
        code,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        body.into() + "\n",
    )
        .into_response()
}

fn json_response(code: StatusCode, v: Value) -> Response {
    (
        code,
        [(header::CONTENT_TYPE, "application/json")],
        v.to_string(),
    )
        .into_response()
}

/// What [`gate`] hands the handlers (in the request's extensions): the node
/// and the caller's principal (None on an insecure node).
#[derive(Clone, Debug)]
struct Caller {
    node: Arc<Node>,
    principal: Principal,
}

/// Checks the caller's certificate and its `read` on `""` (see the module
/// docs), then passes the request on with its [`Caller`].
async fn gate(State(ui): State<Ui>, mut req: Request, next: Next) -> Response {
    let (node, principal) = match http_reader(&ui.cell, ui.secure, req.extensions()) {
        Ok((Some(node), principal)) => (node, principal),
        Ok((None, _)) => {
            return text(
                StatusCode::SERVICE_UNAVAILABLE,
                "bootstrapping: this node has not joined a cluster yet",
            )
        }
        Err(refused) => {
            let (code, why) = refused.answer("the dashboard");
            return text(code, why);
        }
    };
    req.extensions_mut().insert(Caller { node, principal });
    next.run(req).await
}

/// A failed read as an answer: 403 for a refused permission, 400 for bad
/// input, 503 naming the leader for a follower, 503 otherwise.
fn read_error(e: ReadError) -> Response {
    match e {
        ReadError::Refused(c) if c.code == ErrorCode::PermissionDenied => {
            text(StatusCode::FORBIDDEN, c.message)
        }
        ReadError::Refused(c) => json_response(
            StatusCode::BAD_REQUEST,
            json!({"error": c.message, "field": c.field}),
        ),
        ReadError::NotLeader { leader } => json_response(
            StatusCode::SERVICE_UNAVAILABLE,
            json!({
                "error": "this node is not the leader: open the leader's dashboard",
                "leader_id": leader.as_ref().map(|l| l.0),
                "leader_addr": leader.as_ref().map(|l| l.1.clone()),
            }),
        ),
        other => json_response(
            StatusCode::SERVICE_UNAVAILABLE,
            json!({"error": other.to_string()}),
        ),
    }
}

fn asset(content_type: &'static str, body: &'static str) -> Response {
    ([(header::CONTENT_TYPE, content_type)], body).into_response()
}

async fn index() -> Response {
    asset("text/html; charset=utf-8", INDEX_HTML)
}

async fn app_js() -> Response {
    asset("text/javascript; charset=utf-8", APP_JS)
}

async fn app_css() -> Response {
    asset("text/css; charset=utf-8", APP_CSS)
}

async fn cluster(Extension(caller): Extension<Caller>) -> Response {
    let node = caller.node;
    let view = match node.cluster_view() {
        Ok(v) => v,
        Err(e) => return read_error(e),
    };
    json_response(
        StatusCode::OK,
        json!({
            "cluster_id": view.cluster_id,
            "node_id": view.node_id,
            "leader_id": view.leader_id,
            "term": view.term,
            "commit_index": view.commit_index,
            "last_log_index": view.last_log_index,
            "members": view.members.iter().map(|m| json!({
                "id": m.id,
                "addr": m.addr,
                "role": m.role,
                "term": m.term,
                "applied_index": m.applied_index,
                "lag_entries": m.lag_entries,
                "last_contact_ms": m.contacted.then_some(m.last_contact_ms),
            })).collect::<Vec<_>>(),
        }),
    )
}

async fn locks(Extension(caller): Extension<Caller>) -> Response {
    let Caller { node, principal } = caller;
    let (read_index, locks) = match node.list(&principal, "").await {
        Ok(l) => l,
        Err(e) => return read_error(e),
    };
    json_response(StatusCode::OK, locks_json(read_index, &locks))
}

/// The body of `GET /ui/api/locks`: per resource its exclusive `holder`
/// (null for readers or permits), every holder in `holders` (with `mode`
/// and a permit's `slot`), its `kind` and a semaphore's `limit`
/// (docs/semantics.md "Lock kinds"), its waiters and lock-delay.
fn locks_json(read_index: u64, locks: &[crate::node::read::ListedLock]) -> Value {
    let holder = |h: &crate::node::read::ListedHolder| {
        let mut v = json!({
            "lease_id": h.lease_id,
            "principal": h.owner,
            "fencing_token": h.fencing_token,
            "age_ms": h.age_ms,
            "ttl_remaining_ms": h.ttl_remaining_ms,
            "mode": match h.mode {
                warden_core::types::Mode::Shared => "shared",
                warden_core::types::Mode::Exclusive => "exclusive",
            },
        });
        if let Some(slot) = h.slot {
            v["slot"] = json!(slot);
        }
        v
    };
    json!({
        "read_index": read_index,
        "locks": locks.iter().map(|l| {
            let (kind, limit) = super::convert::kind_name(Some(l.kind));
            json!({
                "resource": l.resource,
                "holder": l.holder().map(holder),
                "holders": l.holders.iter().map(holder).collect::<Vec<_>>(),
                "kind": kind,
                "limit": (limit > 0).then_some(limit),
                "waiters": l.waiters.iter().map(|w| json!({
                    "lease_id": w.lease_id,
                    "age_ms": w.age_ms,
                })).collect::<Vec<_>>(),
                "lock_delay_remaining_ms": l.lock_delay_remaining_ms,
            })
        }).collect::<Vec<_>>(),
    })
}

async fn top(Extension(caller): Extension<Caller>) -> Response {
    let Caller { node, principal } = caller;
    let (read_index, hot) = match node.top_locks(&principal, "", TOP_LIMIT).await {
        Ok(t) => t,
        Err(e) => return read_error(e),
    };
    json_response(
        StatusCode::OK,
        json!({
            "read_index": read_index,
            "locks": hot.iter().map(|h| json!({
                "resource": h.resource,
                "queue_length": h.queue.queue_length,
                "oldest_waiter_age_ms": h.queue.oldest_waiter_age_ms,
                "grants_last_minute": h.recent.grants,
                "expiries_last_minute": h.recent.expiries,
                "wait_p99_ms": h.recent.wait_p99_ms,
            })).collect::<Vec<_>>(),
        }),
    )
}

async fn events(Extension(caller): Extension<Caller>, Path(resource): Path<String>) -> Response {
    let node = caller.node;
    if let Err(e) = warden_core::validate::resource(&resource) {
        return read_error(ReadError::Refused(e));
    }
    let log = node.events();
    let last = log.last_matching(&Filter::Resource(resource.clone()), TIMELINE_EVENTS);
    json_response(
        StatusCode::OK,
        json!({
            "resource": resource,
            "oldest_index": log.oldest_index(),
            "events": last.iter().map(|e| json!({
                "index": e.index,
                "event": e.kind.as_str(),
                "lease_id": e.lease_id,
                "fencing_token": e.fencing_token,
            })).collect::<Vec<_>>(),
        }),
    )
}

#[cfg(test)]
mod tests;
