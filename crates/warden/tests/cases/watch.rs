//! `warden watch`, with real processes: a watcher sees every
//! grant of a contended resource in token order, resumes without gaps or
//! duplicates (from `last index + 1` after a disconnect, and by itself when
//! its node dies), a start index below a node's window gets `compacted`, and
//! one beyond the cluster's commit index + 1 is refused on a follower too.
//! The window logic itself is unit-tested in `warden_server::services::watch`,
//! the leader's commit bound in `warden_server::services::tests`.

use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, BufReader, Lines};
use tokio::process::{Child, ChildStdout, Command};
use tonic::Code;
use warden_proto::v1 as pb;
use warden_proto::v1::watch_client::WatchClient;

use super::harness::{self, Cluster};

/// How long any single expected thing may take to show up.
const WAIT: Duration = Duration::from_secs(20);

/// A `warden watch --output json` child; killed when dropped.
struct WatchProc {
    child: Child,
    lines: Lines<BufReader<ChildStdout>>,
}

impl WatchProc {
    fn spawn(endpoints: &str, args: &[&str]) -> WatchProc {
        let mut watch = vec!["watch"];
        watch.extend_from_slice(args);
        watch.extend_from_slice(&["--output", "json"]);
        let mut child = Command::from(harness::cli_command_at("root", endpoints, &watch))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .expect("spawn warden watch");
        let stdout = child.stdout.take().expect("stdout");
        WatchProc {
            child,
            lines: BufReader::new(stdout).lines(),
        }
    }

    /// The next event line, parsed; fails the test after `WAIT`.
    async fn event(&mut self) -> Value {
        let line = tokio::time::timeout(WAIT, self.lines.next_line())
            .await
            .expect("an event line in time")
            .expect("read stdout")
            .expect("warden watch exited early");
        let v: Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line:?}"));
        for key in ["index", "resource", "event", "lease_id", "fencing_token"] {
            assert!(v.get(key).is_some(), "CLI contract: {key} missing in {v}");
        }
        v
    }

    /// Reads events until one matches `stop` (inclusive); returns them all.
    async fn until(&mut self, stop: impl Fn(&Value) -> bool) -> Vec<Value> {
        let mut out = Vec::new();
        loop {
            let e = self.event().await;
            let done = stop(&e);
            out.push(e);
            if done {
                return out;
            }
        }
    }

    async fn kill(mut self) {
        let _ = self.child.kill().await;
    }
}

fn is(event: &Value, kind: &str, token: u64) -> bool {
    event["event"] == kind && event["fencing_token"].as_u64() == Some(token)
}

/// The current holder of `resource` once it differs from `previous` token.
async fn next_holder(api: &harness::Api, resource: &str, previous: u64) -> (u64, u64) {
    let deadline = Instant::now() + WAIT;
    loop {
        let st = api.status(resource).await.expect("status");
        if let Some(h) = st.holder {
            if h.fencing_token != previous {
                return (h.lease_id, h.fencing_token);
            }
        }
        assert!(Instant::now() < deadline, "no handoff after {previous}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Releases the last grant in `grants` (request id = its position) and waits
/// for the server to hand the resource to the next waiter.
async fn hand_off(api: &harness::Api, grants: &[(u64, u64)]) -> (u64, u64) {
    let (l, t) = *grants.last().expect("a holder");
    api.release(302, grants.len() as u64, "contended", l, t)
        .await
        .expect("release");
    next_holder(api, "contended", t).await
}

/// S8 and watch (docs/operations.md): every grant of a contended resource (a holder and
/// four queued waiters, handed off on the server at each release) reaches
/// the watcher, in token order, each lease once. A watcher killed after a
/// grant and restarted with `--start-index last+1`, and then cut off by its
/// node's death (it reconnects by itself), together print exactly what a
/// full replay from index 1 prints: no gap, no duplicate.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watcher_sees_every_grant_in_token_order_and_resumes_without_gaps() {
    let mut cluster = Cluster::start(3, &[]).await;
    let api = cluster.api();
    let leader = cluster.wait_leader(WAIT).await;
    let follower = (1..=3).find(|id| *id != leader).expect("a follower");
    // The watchers start at a follower (Watch is served by every node).
    let mut order = vec![cluster.addr(follower)];
    order.extend(
        (1..=3)
            .filter(|id| *id != follower)
            .map(|id| cluster.addr(id)),
    );
    let follower_first = order.join(",");
    let survivors = order[1..].join(",");

    let mut w1 = WatchProc::spawn(&follower_first, &["contended", "--start-index", "1"]);

    let (l0, t0) = api
        .acquire(301, 1, "contended", 30_000)
        .await
        .expect("holder")
        .grant();
    let mut waiters = Vec::new();
    for _ in 0..4 {
        waiters.push(
            Command::from(harness::cli_command_at(
                "root",
                &cluster.endpoints(),
                &[
                    "acquire",
                    "contended",
                    "--ttl",
                    "30s",
                    "--wait",
                    "60s",
                    "--output",
                    "json",
                ],
            ))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("spawn waiter"),
        );
    }
    let deadline = Instant::now() + WAIT;
    while api.status("contended").await.expect("status").waiters != 4 {
        assert!(Instant::now() < deadline, "the waiters were never queued");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    // Hand off twice: release the holder; the server grants the next waiter.
    let mut grants = vec![(l0, t0)];
    for _ in 0..2 {
        let g = hand_off(&api, &grants).await;
        grants.push(g);
    }

    // The first watcher reads up to the third grant, then goes away.
    let t2 = grants[2].1;
    let part1 = w1.until(|e| is(e, "granted", t2)).await;
    w1.kill().await;
    let last = part1.last().expect("events")["index"]
        .as_u64()
        .expect("index");

    // A new watcher resumes from last + 1 ...
    let mut w2 = WatchProc::spawn(
        &follower_first,
        &["contended", "--start-index", &(last + 1).to_string()],
    );
    let g = hand_off(&api, &grants).await;
    grants.push(g);
    let t3 = grants[3].1;
    let mut part2 = w2.until(|e| is(e, "granted", t3)).await;
    // ... and its node dies under it: it moves to another node by itself.
    cluster.kill(follower);
    let g = hand_off(&api, &grants).await;
    grants.push(g);
    let (l4, t4) = grants[4];
    api.release(302, 100, "contended", l4, t4)
        .await
        .expect("release the last holder");
    part2.extend(w2.until(|e| is(e, "released", t4)).await);
    w2.kill().await;

    let seen: Vec<Value> = part1.iter().chain(part2.iter()).cloned().collect();
    // A full replay from index 1 prints exactly the same events.
    let mut w3 = WatchProc::spawn(
        &survivors,
        &[
            "contended",
            "--start-index",
            "1",
            "--count",
            &seen.len().to_string(),
        ],
    );
    let mut replay = Vec::new();
    for _ in 0..seen.len() {
        replay.push(w3.event().await);
    }
    let status = tokio::time::timeout(WAIT, w3.child.wait())
        .await
        .expect("watch --count exits")
        .expect("wait");
    assert_eq!(status.code(), Some(0));
    assert_eq!(
        seen, replay,
        "watch: resumed streams differ from a full replay (gap or duplicate)"
    );

    // Commit order, and every grant in token order, each lease once.
    let indexes: Vec<u64> = seen
        .iter()
        .map(|e| e["index"].as_u64().expect("index"))
        .collect();
    assert!(indexes.windows(2).all(|w| w[0] <= w[1]), "{indexes:?}");
    assert!(seen.iter().all(|e| e["resource"] == "contended"));
    let granted: Vec<(u64, u64)> = seen
        .iter()
        .filter(|e| e["event"] == "granted")
        .map(|e| {
            (
                e["lease_id"].as_u64().expect("lease"),
                e["fencing_token"].as_u64().expect("token"),
            )
        })
        .collect();
    assert_eq!(granted, grants, "S8, watch: every grant, in order");
    assert!(
        granted.windows(2).all(|w| w[0].1 < w[1].1),
        "S2: {granted:?}"
    );
    let mut leases: Vec<u64> = granted.iter().map(|g| g.0).collect();
    leases.sort_unstable();
    leases.dedup();
    assert_eq!(leases.len(), 5, "each lease granted once: {granted:?}");
    let queued = seen.iter().filter(|e| e["event"] == "queued").count();
    let released = seen.iter().filter(|e| e["event"] == "released").count();
    assert_eq!((queued, released), (4, 5), "{seen:#?}");
    // Each handoff is one entry: the release and the next grant share an index.
    for w in seen.windows(2) {
        if w[0]["event"] == "released" && w[1]["event"] == "granted" {
            assert_eq!(
                w[0]["index"], w[1]["index"],
                "S8: handoff in the same entry"
            );
        }
    }
    for mut w in waiters {
        let _ = w.kill().await;
    }
}

/// Watch (docs/operations.md): events of entries applied before a node process started
/// (it loaded them from its snapshot) are not in its window: a start index
/// below it gets OutOfRange `compacted` naming the oldest retained index
/// (message and `warden-oldest-index` metadata), through gRPC and the CLI;
/// from that index on, the watch is served.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn start_index_below_the_window_is_compacted() {
    let mut cluster = Cluster::start(3, &[]).await;
    let api = cluster.api();
    for i in 0..5u64 {
        let (l, t) = api
            .acquire(401, 2 * i + 1, "old", 5_000)
            .await
            .expect("acquire")
            .grant();
        api.release(401, 2 * i + 2, "old", l, t)
            .await
            .expect("release");
    }
    let snaps = cluster.snapshots_at_same_index(WAIT).await;
    let snap_index = snaps[0].0;
    let leader = cluster.wait_leader(WAIT).await;
    let node = (1..=3).find(|id| *id != leader).expect("a follower");
    cluster.kill(node);
    cluster.spawn(node);
    cluster.wait_applied(node, WAIT).await;
    let addr = cluster.addr(node);

    let deadline = Instant::now() + WAIT;
    let status = loop {
        let mut c = WatchClient::new(harness::channel(&addr, None).await.expect("connect"));
        let req = pb::WatchRequest {
            target: Some(pb::watch_request::Target::Resource("old".into())),
            start_index: 1,
        };
        match c.watch(req).await {
            Err(s) if s.code() == Code::Unavailable && Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            Err(s) => break s,
            Ok(_) => panic!("index 1 was served by a node that started from a snapshot"),
        }
    };
    assert_eq!(status.code(), Code::OutOfRange, "{status:?}");
    assert!(status.message().starts_with("compacted"), "{status:?}");
    let oldest = snap_index + 1;
    assert!(status.message().contains(&oldest.to_string()), "{status:?}");
    assert_eq!(
        status
            .metadata()
            .get("warden-oldest-index")
            .and_then(|v| v.to_str().ok()),
        Some(oldest.to_string().as_str())
    );

    // The CLI says the same and exits 1.
    let out = harness::cli_command_at(
        "root",
        &addr,
        &["watch", "old", "--start-index", "1", "--output", "json"],
    )
    .stdin(Stdio::null())
    .output()
    .expect("run warden watch");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("compacted"), "{stderr}");
    assert!(stderr.contains(&oldest.to_string()), "{stderr}");
    assert!(out.stdout.is_empty());

    // From the oldest retained index on, the node serves the watch, and
    // later events arrive.
    let mut w = WatchProc::spawn(&addr, &["old", "--start-index", &oldest.to_string()]);
    let (l, t) = api
        .acquire(402, 1, "old", 5_000)
        .await
        .expect("acquire")
        .grant();
    let e = w.until(|e| e["event"] == "granted").await;
    let last = e.last().expect("event");
    assert_eq!(
        (last["lease_id"].as_u64(), last["fencing_token"].as_u64()),
        (Some(l), Some(t))
    );
    assert!(last["index"].as_u64().expect("index") >= oldest);
    w.kill().await;
}

/// A watch far beyond the log is refused, not left waiting (public bug: a
/// watch from start_index 1000000 waited for ever with no event and no
/// error), and a follower still serves a legitimate resume: at a follower,
/// start_index 1000000 is referred to the leader (Unavailable naming it in
/// `warden-leader`: only the leader can confirm the commit index), where
/// the CLI, following the hint, gets OutOfRange naming the index; a watch
/// at the follower from the leader's commit index + 1 opens there and gets
/// the next entry's event.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn start_index_beyond_the_commit_index_is_refused_on_a_follower_too() {
    let cluster = Cluster::start(3, &[]).await;
    let api = cluster.api();
    let (l, t) = api
        .acquire(501, 1, "far", 5_000)
        .await
        .expect("acquire")
        .grant();
    api.release(501, 2, "far", l, t).await.expect("release");
    let leader = cluster.wait_leader(WAIT).await;
    let follower = (1..=3).find(|id| *id != leader).expect("a follower");
    cluster.wait_applied(follower, WAIT).await;
    let addr = cluster.addr(follower);
    let request = |start_index| pb::WatchRequest {
        target: Some(pb::watch_request::Target::Resource("far".into())),
        start_index,
    };

    let mut c = WatchClient::new(harness::channel(&addr, None).await.expect("connect"));
    let status = tokio::time::timeout(WAIT, c.watch(request(1_000_000)))
        .await
        .expect("an answer in time")
        .expect_err("not served");
    assert_eq!(status.code(), Code::Unavailable, "{status:?}");
    assert_eq!(
        status
            .metadata()
            .get("warden-leader")
            .and_then(|v| v.to_str().ok()),
        Some(cluster.addr(leader).as_str()),
        "{status:?}"
    );

    let out = harness::cli_command_at(
        "root",
        &addr,
        &[
            "watch",
            "far",
            "--start-index",
            "1000000",
            "--output",
            "json",
        ],
    )
    .stdin(Stdio::null())
    .output()
    .expect("run warden watch");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_ne!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("start_index 1000000 is beyond the cluster's commit index"),
        "{stderr}"
    );
    assert!(out.stdout.is_empty());

    let commit = harness::cluster_status_at(&cluster.addr(leader))
        .await
        .expect("cluster status")
        .commit_index;
    let mut events = tokio::time::timeout(WAIT, c.watch(request(commit + 1)))
        .await
        .expect("an answer in time")
        .expect("served at the follower")
        .into_inner();
    let (l, _) = api
        .acquire(501, 3, "far", 5_000)
        .await
        .expect("acquire")
        .grant();
    let e = tokio::time::timeout(WAIT, events.message())
        .await
        .expect("an event in time")
        .expect("not an error")
        .expect("an event");
    assert_eq!((e.event.as_str(), e.lease_id), ("granted", l));
    assert!(e.index > commit, "{} <= {commit}", e.index);
}
