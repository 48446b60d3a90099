//! The dashboard on an insecure node, over a real loopback socket: open to
//! anyone (like everything on such a node), the CSP on every answer, and a
//! bad resource name refused naming the field ("What bad input gets"). The
//! secure node's 401/403 need a TLS handshake: `crates/warden/tests/cases/top.rs`.

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::{router, CONTENT_SECURITY_POLICY};
use crate::node::test_node::{Setup, TestNode};
use crate::node::NodeCell;

/// One `GET path` on `addr`: (status, lower-cased head, body).
async fn get(addr: std::net::SocketAddr, path: &str) -> (u16, String, String) {
    let mut tcp = tokio::net::TcpStream::connect(addr).await.expect("connect");
    tcp.write_all(
        format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").as_bytes(),
    )
    .await
    .expect("write");
    let mut raw = Vec::new();
    tokio::time::timeout(Duration::from_secs(5), tcp.read_to_end(&mut raw))
        .await
        .expect("a reply in time")
        .expect("read");
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").expect("head and body");
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .expect("status line");
    (status, head.to_ascii_lowercase(), body.to_string())
}

// Dashboard on an insecure node (docs/operations.md "Dashboard"): every
// path answers without any identity, with the CSP; the page references its
// script and style as files (no inline script); a resource name with a
// control character gets 400 naming `resource`.
#[tokio::test]
async fn an_insecure_node_serves_the_dashboard_to_anyone() {
    let t = TestNode::start(Setup::default()).await;
    let cell = NodeCell::default();
    cell.set(t.node.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    let server = tokio::spawn(async move {
        let _ = axum::serve(listener, router(cell, false)).await;
    });
    let csp = format!("content-security-policy: {CONTENT_SECURITY_POLICY}");
    for (path, kind) in [
        ("/ui", "text/html"),
        ("/ui/app.js", "text/javascript"),
        ("/ui/app.css", "text/css"),
        ("/ui/api/cluster", "application/json"),
        ("/ui/api/locks", "application/json"),
        ("/ui/api/top", "application/json"),
        ("/ui/api/events/some%2Flock", "application/json"),
    ] {
        let (status, head, body) = get(addr, path).await;
        assert_eq!(status, 200, "{path}: {body}");
        assert!(head.contains(&csp), "{path}: {head}");
        assert!(
            head.contains(&format!("content-type: {kind}")),
            "{path}: {head}"
        );
    }
    let (_, _, page) = get(addr, "/ui").await;
    assert!(page.contains("<script src=\"/ui/app.js\""), "{page}");
    assert!(
        !page.contains("<script>") && !page.contains("style="),
        "{page}"
    );
    let (_, _, events) = get(addr, "/ui/api/events/some%2Flock").await;
    let events: serde_json::Value = serde_json::from_str(&events).expect("json");
    assert_eq!(events["resource"], "some/lock");
    assert_eq!(events["events"], serde_json::json!([]));
    let (status, head, body) = get(addr, "/ui/api/events/bad%01name").await;
    assert_eq!(status, 400, "{body}");
    assert!(head.contains(&csp), "{head}");
    let body: serde_json::Value = serde_json::from_str(&body).expect("json");
    assert_eq!(body["field"], "resource", "{body}");
    server.abort();
}

// "Lock kinds" (`status` and `list` show every holder; the dashboard too):
// a semaphore's permits are in `holders` with their slots, `holder` stays
// null for them, and the kind and limit are named.
#[test]
fn the_locks_api_lists_every_holder_of_a_semaphore() {
    use crate::node::read::{ListedHolder, ListedLock};
    use warden_core::types::{LockKind, Mode};
    let permit = |lease_id, slot| ListedHolder {
        lease_id,
        fencing_token: lease_id + 10,
        age_ms: 5,
        ttl_remaining_ms: 900,
        owner: Some("alice".into()),
        mode: Mode::Shared,
        slot: Some(slot),
    };
    let locks = vec![ListedLock {
        resource: "pool".into(),
        holders: vec![permit(1, 0), permit(2, 1)],
        kind: LockKind::Semaphore { limit: 4 },
        waiters: vec![],
        lock_delay_remaining_ms: 0,
    }];
    let v = super::locks_json(7, &locks);
    let pool = &v["locks"][0];
    assert_eq!(pool["holder"], serde_json::Value::Null);
    assert_eq!(
        (&pool["kind"], &pool["limit"]),
        (&serde_json::json!("semaphore"), &serde_json::json!(4))
    );
    assert_eq!(pool["holders"][1]["slot"], 1);
    assert_eq!(pool["holders"][1]["fencing_token"], 12);
    assert_eq!(pool["holders"][0]["principal"], "alice");
}
