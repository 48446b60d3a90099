//! `/metrics` on a real three-node cluster over mutual TLS
//! (docs/operations.md "Metrics"): who may scrape, and that the lock-side
//! series follow apply on every node.

use std::time::{Duration, Instant};

use crate::harness::transport::http_get_as;
use crate::harness::Cluster;

/// One scrape of node `id`'s `/metrics` as `user` (None: no certificate):
/// (status, body).
async fn scrape(cluster: &Cluster, id: u64, user: Option<&str>) -> (u16, String) {
    let r = http_get_as(
        &cluster.admin_addr(id),
        "/metrics",
        user,
        Duration::from_secs(5),
    )
    .await
    .expect("GET /metrics");
    (r.status, r.body)
}

/// The value of the series written exactly as `series` in `text`, if any.
fn value(text: &str, series: &str) -> Option<f64> {
    text.lines().find_map(|l| {
        l.strip_prefix(series)
            .and_then(|rest| rest.strip_prefix(' '))
            .and_then(|v| v.trim().parse().ok())
    })
}

/// Polls node `id`'s scrape until `series` satisfies `ok` (deadline 15 s);
/// returns the value.
async fn until(cluster: &Cluster, id: u64, series: &str, ok: impl Fn(f64) -> bool) -> f64 {
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let (status, body) = scrape(cluster, id, Some("root")).await;
        assert_eq!(status, 200, "{body}");
        let v = value(&body, series);
        if let Some(v) = v.filter(|v| ok(*v)) {
            return v;
        }
        assert!(
            Instant::now() < deadline,
            "node {id}: {series} is {v:?}:\n{body}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

// Security (docs/security.md): `/metrics` needs a client certificate whose
// principal has `read` on "" (401 without a certificate, 403 for mallory,
// who has no role), while /healthz stays open to probes.
// Metrics: after 5 acquires `warden_locks_held` is 5 on every node once
// applied; an expiry adds 1 to `warden_lock_frees_total{reason="expire"}`
// everywhere; a queued waiter's grant adds a wait sample at least as long
// as it was seen waiting; killing the leader adds 1 to
// `warden_raft_leader_changes_total` on the survivors.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_need_read_and_follow_apply_on_every_node() {
    let mut cluster = Cluster::prepare(3, &[]);
    cluster.use_admin_ports();
    for id in 1..=3 {
        cluster.spawn(id);
    }
    let leader = cluster.wait_leader(Duration::from_secs(20)).await;

    let (status, body) = scrape(&cluster, leader, None).await;
    assert_eq!(status, 401, "{body}");
    let (status, body) = scrape(&cluster, leader, Some("mallory")).await;
    assert_eq!(status, 403, "{body}");
    assert!(body.contains("read"), "{body}");
    let health = http_get_as(
        &cluster.admin_addr(leader),
        "/healthz",
        None,
        Duration::from_secs(5),
    )
    .await
    .expect("healthz");
    assert_eq!(health.status, 200);

    let api = cluster.api();
    for i in 0..5u64 {
        api.acquire(900, i + 1, &format!("m/{i}"), 60_000)
            .await
            .expect("acquire")
            .grant();
    }
    let held = r#"warden_locks_held{group="other"}"#;
    for id in 1..=3 {
        until(&cluster, id, held, |v| v == 5.0).await;
    }

    // A waiter queued behind m/0's holder, granted when it is released.
    let (holder_lease, holder_token) = api
        .status("m/0")
        .await
        .expect("status")
        .holder
        .map(|h| (h.lease_id, h.fencing_token))
        .expect("held");
    let wait_count = r#"warden_wait_duration_seconds_count{group="other"}"#;
    let wait_sum = r#"warden_wait_duration_seconds_sum{group="other"}"#;
    let waiter = {
        let api = cluster.api();
        tokio::spawn(async move { api.acquire_waiting(901, 1, "m/0", 60_000, 30_000).await })
    };
    let deadline = Instant::now() + Duration::from_secs(10);
    while api.status("m/0").await.expect("status").waiters != 1 {
        assert!(Instant::now() < deadline, "the waiter never queued");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let seen_waiting = Instant::now();

    // Meanwhile, a lease that expires: one more free for reason "expire".
    let expire = r#"warden_lock_frees_total{group="other",reason="expire"}"#;
    let before: Vec<f64> = {
        let mut v = Vec::new();
        for id in 1..=3 {
            v.push(until(&cluster, id, expire, |_| true).await);
        }
        v
    };
    api.acquire(902, 1, "m/expires", 1_000)
        .await
        .expect("acquire")
        .grant();
    for id in 1..=3 {
        let was = before[id as usize - 1];
        until(&cluster, id, expire, |v| v == was + 1.0).await;
    }

    let waited_at_least = seen_waiting.elapsed().as_secs_f64();
    api.release(900, 10, "m/0", holder_lease, holder_token)
        .await
        .expect("release");
    waiter.await.expect("waiter task").expect("granted").grant();
    for id in 1..=3 {
        until(&cluster, id, wait_count, |v| v == 1.0).await;
        let (_, body) = scrape(&cluster, id, Some("root")).await;
        let sum = value(&body, wait_sum).expect("wait sum");
        assert!(
            sum >= waited_at_least,
            "node {id}: the wait sample {sum} s is shorter than the {waited_at_least} s it was seen waiting"
        );
    }
    // The grant count moved with it: 5 + the waiter's + the expired one.
    until(
        &cluster,
        leader,
        r#"warden_grants_total{group="other"}"#,
        |v| v == 7.0,
    )
    .await;

    // A leader kill: one more leader change on each survivor.
    let changes = "warden_raft_leader_changes_total";
    let survivors: Vec<u64> = (1..=3).filter(|id| *id != leader).collect();
    let mut before = Vec::new();
    for id in &survivors {
        before.push(until(&cluster, *id, changes, |v| v >= 1.0).await);
    }
    cluster.kill(leader);
    for (id, was) in survivors.iter().zip(before) {
        until(&cluster, *id, changes, |v| v >= was + 1.0).await;
    }
    let new_leader = cluster.wait_leader(Duration::from_secs(20)).await;
    until(&cluster, new_leader, "warden_raft_is_leader", |v| v == 1.0).await;
}
