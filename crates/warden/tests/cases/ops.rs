//! Operating a cluster, with real processes: replacing a node whose
//! disk was lost, growing 3 → 5 → 3 under load, backup and restore into a new
//! cluster, and a rolling restart under a renewing holder. Each test names
//! the property it defends.

use std::collections::BTreeSet;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use warden_client::ClientError;

use crate::harness::{
    cluster_status_at, free_port, http_get, wait_listening, warden_bin, Api, Cluster, Final,
};

/// Acknowledged grants: (resource, lease id, fencing token), in ack order.
type Acked = Arc<Mutex<Vec<(String, u64, u64)>>>;

/// The CLI against `cluster`'s running nodes, with a membership command's
/// JSON on stdout.
fn cli_running(cluster: &Cluster, args: &[&str]) -> (i32, serde_json::Value, String) {
    let eps: Vec<String> = cluster
        .nodes
        .values()
        .filter(|n| n.child.is_some())
        .map(|n| n.addr.clone())
        .collect();
    cluster.cli_at(&eps.join(","), args)
}

fn api_running(cluster: &Cluster) -> Api {
    Api::new(
        cluster
            .nodes
            .values()
            .filter(|n| n.child.is_some())
            .map(|n| n.addr.clone())
            .collect(),
    )
}

fn ids(v: &serde_json::Value) -> BTreeSet<u64> {
    v.as_array()
        .map(|a| a.iter().filter_map(|x| x.as_u64()).collect())
        .unwrap_or_default()
}

/// Waits until the leader reports exactly `want` as members, every one of
/// them a leader or follower that has applied the commit index.
async fn wait_healthy_members(cluster: &Cluster, want: &BTreeSet<u64>, timeout: Duration) {
    let deadline = Instant::now() + timeout;
    loop {
        let leader = cluster.wait_leader(timeout).await;
        if let Ok(s) = cluster_status_at(&cluster.addr(leader)).await {
            let got: BTreeSet<u64> = s.members.iter().map(|m| m.id).collect();
            let healthy = s.members.iter().all(|m| {
                (m.role == "leader" || m.role == "follower") && m.applied_index >= s.commit_index
            });
            if got == *want && healthy {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "members never became {want:?} and healthy: {:?}",
                s.members
                    .iter()
                    .map(|m| (m.id, m.role.clone(), m.applied_index))
                    .collect::<Vec<_>>()
            );
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

// docs/semantics.md "Membership and data loss": a node whose data
// dir was wiped refuses to start ("lost its data"); `replace-node` with a
// fresh node (a new id, started with --join) catches it up by snapshot and
// restores three healthy members; every lock and token survives (S1, S2),
// the new member counts towards quorum, and /healthz and /readyz report it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wiped_node_is_replaced_and_every_lock_survives() {
    let mut cluster = Cluster::start(3, &["--snapshot-threshold", "20"]).await;
    let api = cluster.api();
    let mut held = Vec::new();
    for i in 0..5u64 {
        let (lease, token) = api
            .acquire(700 + i, 1, &format!("r{i}"), 60_000)
            .await
            .expect("acquire")
            .grant();
        held.push((format!("r{i}"), lease, token));
    }
    // Enough entries that the log is compacted: the newcomer needs a snapshot.
    for _ in 0..60 {
        api.renew(held[0].1).await.expect("renew");
    }
    let leader = cluster.wait_leader(Duration::from_secs(10)).await;
    let victim = (1..=3).find(|id| *id != leader).expect("follower");
    cluster.kill(victim);
    cluster.wipe(victim);
    let (code, stderr) = cluster.run_to_exit(victim, Duration::from_secs(20));
    assert_eq!(code, Some(65), "lost data: {stderr}");
    assert!(stderr.contains("lost its data"), "{stderr}");
    cluster.nodes.remove(&victim);

    let http = format!("127.0.0.1:{}", free_port());
    let addr = cluster.spawn_joiner(4, &["--admin-listen".into(), http.clone()]);
    wait_listening(&http);
    let get = |path: &'static str| {
        let http = http.clone();
        async move {
            http_get(&http, path, Duration::from_secs(2))
                .await
                .expect("http")
        }
    };
    assert_eq!(get("/healthz").await.status, 200);
    let r = get("/readyz").await;
    assert_eq!(r.status, 503, "{}", r.body);
    assert_eq!(r.json()["ready"], false);

    let victim_s = victim.to_string();
    let (code, j, err) = cli_running(
        &cluster,
        &[
            "cluster",
            "replace-node",
            &victim_s,
            "--id",
            "4",
            "--addr",
            &addr,
        ],
    );
    assert_eq!(code, 0, "{err}");
    let mut want: BTreeSet<u64> = (1..=3).filter(|id| *id != victim).collect();
    want.insert(4);
    assert_eq!(ids(&j["voters"]), want, "{j}");
    assert!(ids(&j["learners"]).is_empty(), "{j}");
    wait_healthy_members(&cluster, &want, Duration::from_secs(20)).await;

    let (code, s, err) = cli_running(&cluster, &["cluster", "status"]);
    assert_eq!(code, 0, "{err}");
    for m in s["members"].as_array().expect("members") {
        assert!(m["term"].as_u64().unwrap_or(0) > 0, "{m}");
        assert!(m["lag_entries"].as_u64().is_some(), "{m}");
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let r = get("/readyz").await;
        if r.status == 200 {
            assert_eq!(r.json()["node_id"], 4);
            break;
        }
        assert!(Instant::now() < deadline, "node 4 never ready: {}", r.body);
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    // Every lock and token survived.
    let api = api_running(&cluster);
    for (resource, lease, token) in &held {
        let s = api.status(resource).await.expect("status");
        let h = s.holder.expect("still held");
        assert_eq!(
            (h.lease_id, h.fencing_token),
            (*lease, *token),
            "{resource}"
        );
    }
    // The newcomer is a voter that counts: with one original member stopped,
    // the cluster still commits (node 4 makes the majority).
    let leader = cluster.wait_leader(Duration::from_secs(10)).await;
    let other = want
        .iter()
        .copied()
        .find(|id| *id != leader && *id != 4)
        .expect("other original");
    cluster.kill(other);
    let (_, token) = api_running(&cluster)
        .acquire(800, 1, "after-replace", 10_000)
        .await
        .expect("acquire with node 4 in the quorum")
        .grant();
    assert!(held.iter().all(|(_, _, t)| token > *t), "token {token}");
}

// docs/operations.md "Changing membership", S3 (acknowledged means committed): growing 3 → 5 and
// shrinking back to 3, one change at a time and removing the leader itself,
// under a client that keeps acquiring, loses no acknowledged grant; tokens
// stay increasing (S2); a change that would lose quorum is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_to_five_to_three_under_load_loses_nothing() {
    let mut cluster = Cluster::start(3, &[]).await;
    let http4 = format!("127.0.0.1:{}", free_port());
    let a4 = cluster.spawn_joiner(4, &["--admin-listen".into(), http4.clone()]);
    wait_listening(&http4);
    let a5 = cluster.spawn_joiner(5, &[]);

    let stop = Arc::new(AtomicBool::new(false));
    let acked: Acked = Arc::default();
    let load = {
        let api = Api::new((1..=5).map(|id| cluster.addr(id)).collect());
        let (stop, acked) = (stop.clone(), acked.clone());
        tokio::spawn(async move {
            let mut i = 0u64;
            while !stop.load(Ordering::Relaxed) {
                i += 1;
                let resource = format!("load-{i}");
                if let Ok(Final::Granted {
                    lease_id,
                    fencing_token,
                    ..
                }) = api.acquire(900, i, &resource, 60_000).await
                {
                    acked
                        .lock()
                        .expect("acked")
                        .push((resource, lease_id, fencing_token));
                }
            }
        })
    };
    let acked_now = |acked: &Acked| acked.lock().expect("acked").len();

    let (code, j, err) = cli_running(&cluster, &["cluster", "add-node", "4", "--addr", &a4]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(ids(&j["voters"]), BTreeSet::from([1, 2, 3, 4]));
    let (code, j, err) = cli_running(&cluster, &["cluster", "add-node", "5", "--addr", &a5]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(ids(&j["voters"]), BTreeSet::from([1, 2, 3, 4, 5]));
    // An id that is already a member is refused.
    let (code, _, err) = cli_running(&cluster, &["cluster", "add-node", "5", "--addr", &a5]);
    assert_eq!(code, 1);
    assert!(err.contains("already a voter"), "{err}");
    wait_healthy_members(
        &cluster,
        &BTreeSet::from([1, 2, 3, 4, 5]),
        Duration::from_secs(20),
    )
    .await;

    // Shrink: first the leader itself (it hands leadership over, the CLI
    // follows), then node 4.
    let leader = cluster.wait_leader(Duration::from_secs(10)).await;
    let l = leader.to_string();
    let (code, j, err) = cli_running(&cluster, &["cluster", "remove-node", &l]);
    assert_eq!(code, 0, "{err}");
    assert!(!ids(&j["voters"]).contains(&leader), "{j}");
    cluster.terminate(leader, Duration::from_secs(10));
    // Node 4 is a ready member until it is removed (public bug: /readyz
    // still answered 200 on a removed node).
    readyz_until(&http4, true).await;
    let (code, j, err) = cli_running(&cluster, &["cluster", "remove-node", "4"]);
    assert_eq!(code, 0, "{err}");
    let remaining: BTreeSet<u64> = [1, 2, 3, 5]
        .into_iter()
        .filter(|id| *id != leader)
        .collect();
    assert_eq!(ids(&j["voters"]), remaining);
    let removed = readyz_until(&http4, false).await;
    assert_eq!(removed.json()["node_id"], 4, "{}", removed.body);
    cluster.terminate(4, Duration::from_secs(10));
    wait_healthy_members(&cluster, &remaining, Duration::from_secs(20)).await;

    // Let the load run on the final membership too, then stop it.
    let before = acked_now(&acked);
    let deadline = Instant::now() + Duration::from_secs(20);
    while acked_now(&acked) < before + 5 {
        assert!(Instant::now() < deadline, "load stalled after the shrink");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    stop.store(true, Ordering::Relaxed);
    load.await.expect("load task");

    // Refused: removing a voter when the rest would have no reachable
    // majority (one of the three is down: removing another would leave the
    // leader and the dead one).
    let leader = cluster.wait_leader(Duration::from_secs(10)).await;
    let followers: Vec<u64> = remaining
        .iter()
        .copied()
        .filter(|id| *id != leader)
        .collect();
    let (down, target) = (followers[0], followers[1]);
    cluster.kill(down);
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let s = cluster_status_at(&cluster.addr(leader))
            .await
            .expect("status");
        if s.members
            .iter()
            .any(|m| m.id == down && m.role == "unreachable")
        {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "node {down} never shown unreachable"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let (code, _, err) = cli_running(&cluster, &["cluster", "remove-node", &target.to_string()]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("majority"), "{err}");
    cluster.spawn(down);

    let acked = acked.lock().expect("acked").clone();
    assert!(
        acked.len() >= 10,
        "only {} acquires acknowledged",
        acked.len()
    );
    assert!(
        acked.windows(2).all(|w| w[0].2 < w[1].2),
        "tokens not increasing"
    );
    let api = api_running(&cluster);
    for (resource, lease, token) in &acked {
        let s = api.status(resource).await.expect("status");
        let h = s
            .holder
            .unwrap_or_else(|| panic!("acknowledged grant of {resource} lost"));
        assert_eq!(
            (h.lease_id, h.fencing_token),
            (*lease, *token),
            "{resource}"
        );
    }
}

// docs/operations.md "Backup and restore", S2 with docs/semantics.md "Membership and data loss": a saved
// snapshot restored into a NEW cluster (new cluster id) shows the same
// holders with the same tokens; their leases can be renewed; the first new
// grant's token is above every token in the snapshot (by the safety gap).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn save_and_restore_into_a_new_cluster() {
    // `snapshot save` needs admin on "" (the harness's CLI calls run as
    // root, which holds it; docs/security.md).
    let mut old = Cluster::start(3, &[]).await;
    let api = old.api();
    let mut held = Vec::new();
    for i in 0..3u64 {
        let (lease, token) = api
            .acquire(600 + i, 1, &format!("backup-{i}"), 30_000)
            .await
            .expect("acquire")
            .grant();
        held.push((format!("backup-{i}"), lease, token));
    }
    let file = old.tmp.path().join("backup.wsnap");
    let file_s = file.display().to_string();
    let (code, saved, err) = old.cli(&["snapshot", "save", &file_s]);
    assert_eq!(code, 0, "{err}");
    let max_token = held.iter().map(|h| h.2).max().expect("tokens");
    assert_eq!(saved["max_token"].as_u64(), Some(max_token), "{saved}");
    assert_eq!(saved["held"].as_u64(), Some(3));
    let old_id = saved["cluster_id"].as_str().expect("id").to_string();
    for id in 1..=3 {
        old.kill(id);
    }

    // `snapshot inspect` (offline) reads back what `save` reported, and a
    // flipped byte is refused by the checksum.
    let out = Command::new(warden_bin())
        .args(["snapshot", "inspect", &file_s, "--output", "json"])
        .output()
        .expect("inspect");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let inspected: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    for field in [
        "cluster_id",
        "applied_index",
        "held",
        "max_token",
        "next_token",
        "leases",
        "bytes",
    ] {
        assert_eq!(inspected[field], saved[field], "{field}: {inspected}");
    }
    assert_eq!(
        inspected["sha256"].as_str().map(str::len),
        Some(64),
        "{inspected}"
    );
    let mut bytes = std::fs::read(&file).expect("read");
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0xff;
    let corrupt = old.tmp.path().join("corrupt.wsnap");
    std::fs::write(&corrupt, &bytes).expect("write");
    let out = Command::new(warden_bin())
        .args(["snapshot", "inspect"])
        .arg(&corrupt)
        .output()
        .expect("inspect");
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("checksum mismatch"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    // Restore every member of the new cluster from the same file.
    let mut new = Cluster::prepare(3, &[]);
    let mut cluster_id = String::new();
    for id in 1..=3u64 {
        let mut cmd = Command::new(warden_bin());
        cmd.args(["snapshot", "restore", &file_s, "--data-dir"])
            .arg(&new.nodes[&id].dir)
            .args([
                "--id",
                &id.to_string(),
                "--peers",
                &new.peers(),
                "--output",
                "json",
            ]);
        if id > 1 {
            cmd.args(["--cluster-id", &cluster_id]);
        }
        let out = cmd.output().expect("restore");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let j: serde_json::Value = serde_json::from_str(stdout.trim()).expect("json");
        assert_eq!(j["max_token_in_snapshot"].as_u64(), Some(max_token));
        assert!(
            j["next_token"].as_u64().expect("next") > max_token + 999_999,
            "{j}"
        );
        if id == 1 {
            cluster_id = j["cluster_id"].as_str().expect("id").to_string();
        }
        assert_eq!(j["cluster_id"], cluster_id.as_str());
    }
    assert_ne!(cluster_id, old_id);
    // Every restored deadline is set after this instant (the nodes load the
    // snapshot when they start).
    let spawned = Instant::now();
    for id in 1..=3 {
        new.spawn(id);
    }
    let leader = new.wait_leader(Duration::from_secs(20)).await;
    let status = cluster_status_at(&new.addr(leader)).await.expect("status");
    assert_eq!(status.cluster_id, cluster_id);

    let api = new.api();
    for (resource, lease, token) in &held {
        let s = api.status(resource).await.expect("status");
        let h = s.holder.expect("holder visible after restore");
        assert_eq!(
            (h.lease_id, h.fencing_token),
            (*lease, *token),
            "{resource}"
        );
        // A restored lease starts over with its full TTL (counted from when
        // the new cluster loaded it, so at least TTL − time since spawn is
        // left), not with what was left of it in the old cluster.
        assert_eq!(h.ttl_ms, 30_000, "{resource}");
        let since_spawn = spawned.elapsed().as_millis() as u64;
        assert!(
            h.ttl_remaining_ms + since_spawn >= 30_000,
            "{resource}: {} ms left {since_spawn} ms after the restored nodes started",
            h.ttl_remaining_ms
        );
        // The holder's lease lives on in the new cluster.
        assert_eq!(api.renew(*lease).await.expect("renew"), 30_000);
        // Nobody else gets it.
        let other = api
            .acquire(650, 1 + *lease, resource, 10_000)
            .await
            .expect("try");
        assert!(matches!(other, Final::NotGranted { .. }), "{other:?}");
    }
    // A restored held resource has a lock-delay (its lease's TTL): ended
    // involuntarily (force-release), it is not granted to anyone at once.
    let (code, j, err) = new.cli(&["release", "--force", "backup-0"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(j["lease_id"].as_u64(), Some(held[0].1), "{j}");
    match api
        .acquire(670, 1, "backup-0", 10_000)
        .await
        .expect("try after force-release")
    {
        Final::NotGranted { reason, .. } => assert_eq!(reason, "lock_delay"),
        other => panic!("granted during the restored lock-delay: {other:?}"),
    }
    let (_, first) = api
        .acquire(660, 1, "after-restore", 10_000)
        .await
        .expect("acquire")
        .grant();
    assert!(first > max_token, "first new token {first} <= {max_token}");
    assert!(first >= max_token + 1_000_000, "gap not applied: {first}");

    // A corrupt file is refused with a typed error, and a used data dir too.
    let mut bytes = std::fs::read(&file).expect("read");
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0xff;
    let bad = new.tmp.path().join("bad.wsnap");
    std::fs::write(&bad, &bytes).expect("write");
    let out = Command::new(warden_bin())
        .args([
            "snapshot",
            "restore",
            &bad.display().to_string(),
            "--data-dir",
        ])
        .arg(new.tmp.path().join("fresh"))
        .args(["--id", "1", "--peers", &new.peers()])
        .output()
        .expect("restore");
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("checksum mismatch"), "{err}");
    let out = Command::new(warden_bin())
        .args(["snapshot", "restore", &file_s, "--data-dir"])
        .arg(&new.nodes[&1].dir)
        .args(["--id", "1", "--peers", &new.peers()])
        .output()
        .expect("restore");
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--data-dir"), "{err}");
}

// docs/operations.md "Rolling restart", L2/L4 and S1: restarting all three nodes one at a time
// with SIGTERM (a leader hands leadership over first) under a holder that
// renews every 500 ms (TTL 2 s, so the lease lives only through its renews):
// its lease is never lost and nobody else is granted its lock.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rolling_restart_keeps_a_renewing_holders_lock() {
    const TTL_MS: u64 = 2_000;
    let mut cluster = Cluster::start(3, &[]).await;
    let api = cluster.api();
    let (lease, token) = api
        .acquire(1, 1, "rolling", TTL_MS)
        .await
        .expect("acquire")
        .grant();
    let stop = Arc::new(AtomicBool::new(false));
    let renew_errors: Arc<Mutex<Vec<String>>> = Arc::default();
    let renews = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let renewer = {
        let (api, stop, errors, renews) = (
            api.clone(),
            stop.clone(),
            renew_errors.clone(),
            renews.clone(),
        );
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_millis(500));
            while !stop.load(Ordering::Relaxed) {
                tick.tick().await;
                match api.renew(lease).await {
                    Ok(TTL_MS) => {
                        renews.fetch_add(1, Ordering::Relaxed);
                    }
                    Ok(ttl) => errors.lock().expect("e").push(format!("ttl {ttl}")),
                    Err(s) => errors.lock().expect("e").push(format!("{s:?}")),
                }
            }
        })
    };
    let stolen: Arc<Mutex<Vec<Final>>> = Arc::default();
    let contender = {
        let (api, stop, stolen) = (api.clone(), stop.clone(), stolen.clone());
        tokio::spawn(async move {
            let mut i = 0;
            let mut tick = tokio::time::interval(Duration::from_millis(300));
            while !stop.load(Ordering::Relaxed) {
                tick.tick().await;
                i += 1;
                if let Ok(f @ Final::Granted { .. }) = api.acquire(2, i, "rolling", TTL_MS).await {
                    stolen.lock().expect("s").push(f);
                }
            }
        })
    };
    for id in 1..=3 {
        cluster.terminate(id, Duration::from_secs(10));
        cluster.spawn(id);
        cluster.wait_applied(id, Duration::from_secs(20)).await;
    }
    // At least two TTLs' worth of renews: the lease outlived its TTL only
    // because they committed.
    let deadline = Instant::now() + Duration::from_secs(20);
    while renews.load(Ordering::Relaxed) < 2 * TTL_MS / 500 {
        assert!(Instant::now() < deadline, "renews stalled");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    stop.store(true, Ordering::Relaxed);
    renewer.await.expect("renewer");
    contender.await.expect("contender");
    assert!(
        renew_errors.lock().expect("e").is_empty(),
        "renews failed: {:?}",
        renew_errors.lock().expect("e")
    );
    assert!(
        stolen.lock().expect("s").is_empty(),
        "{:?}",
        stolen.lock().expect("s")
    );
    let s = api.status("rolling").await.expect("status");
    let h = s.holder.expect("still held");
    assert_eq!((h.lease_id, h.fencing_token), (lease, token));
    let e = api.renew(lease + 1000).await.expect_err("unknown lease");
    assert!(matches!(e, ClientError::NotFound { .. }), "{e:?}");
}

/// Polls `GET /readyz` at `http` until it is 200 (`ready`) or 503 (not),
/// deadline 10 s; returns that answer.
async fn readyz_until(http: &str, ready: bool) -> warden_fence::http::client::Reply {
    let want = if ready { 200 } else { 503 };
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let r = http_get(http, "/readyz", Duration::from_secs(2))
            .await
            .expect("http");
        if r.status == want {
            assert_eq!(r.json()["ready"], ready, "{}", r.body);
            return r;
        }
        assert!(
            Instant::now() < deadline,
            "{http}/readyz never answered {want}: {} {}",
            r.status,
            r.body
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Waits (deadline 20 s) for `child` to exit; returns its exit code and stderr.
fn exit_of(mut child: std::process::Child, mut poke: impl FnMut()) -> (Option<i32>, String) {
    use std::io::Read;
    let deadline = Instant::now() + Duration::from_secs(20);
    let status = loop {
        if let Some(s) = child.try_wait().expect("wait") {
            break s;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("the CLI did not exit within 20 s");
        }
        poke();
        std::thread::sleep(Duration::from_millis(50));
    };
    let mut stderr = String::new();
    if let Some(mut e) = child.stderr.take() {
        let _ = e.read_to_string(&mut stderr);
    }
    (status.code(), stderr)
}

// Public bug: `warden cluster status | true` and `warden watch ... | head -1`
// panicked with "failed printing to stdout: Broken pipe" (exit 101). A closed
// stdout now stops a one-shot command and a stream quietly with exit 0.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cli_stops_quietly_when_its_stdout_is_closed() {
    let cluster = Cluster::start(1, &[]).await;
    let spawn = |args: &[&str]| {
        let mut child = cluster
            .cli_command("root", args)
            .args(["--endpoints", &cluster.endpoints()])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn warden");
        // Close the read end before the CLI has connected, let alone printed.
        drop(child.stdout.take());
        child
    };
    for format in ["text", "json"] {
        let status = spawn(&["cluster", "status", "--output", format]);
        let (code, err) = exit_of(status, || {});
        assert_eq!(code, Some(0), "cluster status --output {format}: {err}");
        assert!(!err.contains("panicked"), "{err}");
    }

    // A stream ends at its first event that finds stdout closed. The watch
    // subscribes at the current index, so grants are made until it exits.
    let watch = spawn(&["watch", "--prefix", ""]);
    let mut n = 0;
    let (code, err) = exit_of(watch, || {
        n += 1;
        let (code, _, err) = cluster.cli(&["acquire", &format!("pipe-{n}"), "--ttl", "30s"]);
        assert_eq!(code, 0, "{err}");
    });
    assert_eq!(code, Some(0), "watch: {err}");
    assert!(!err.contains("panicked"), "{err}");
}
