//! Peers far apart, with real processes (docs/operations.md "Latency
//! between nodes"): three nodes with `--timing wan` whose peer links each
//! cross a delaying proxy of 50 ms one way (100 ms round trip; clients reach
//! the client ports directly). The cluster elects, commits, serves
//! linearizable reads, keeps a renewed lease, and after its leader's kill
//! elects again and still ends the unrenewed lease within its TTL + E.

use std::process::Stdio;
use std::time::{Duration, Instant};

use warden_client::Client;

use crate::harness::{take, Cluster};

/// One-way latency of every peer link.
const ONE_WAY: Duration = Duration::from_millis(50);
/// E of the `wan` preset: promotion grace 2 s + maximum election timeout
/// 2 s + duty interval 50 ms + heartbeat 250 ms (docs/semantics.md "E,
/// term by term").
const WAN_E: Duration = Duration::from_millis(4_300);
/// The held lease's TTL.
const TTL: Duration = Duration::from_secs(2);
/// How long a status read may take to observe a change: a client round
/// trip plus the read's heartbeat round over the delayed links.
const OBSERVE: Duration = Duration::from_millis(500);

/// `warden cluster status --output FORMAT` against `endpoints`, run off the
/// runtime (the proxies' tasks must keep running meanwhile).
async fn cluster_status_cli(cluster: &Cluster, format: &str) -> String {
    let mut cmd = cluster.cli_command("root", &["cluster", "status"]);
    cmd.arg("--endpoints")
        .arg(cluster.endpoints())
        .arg("--output")
        .arg(format)
        .stdin(Stdio::null());
    let out = tokio::task::spawn_blocking(move || cmd.output().expect("run warden cli"))
        .await
        .expect("cli task");
    assert!(out.status.success(), "{out:?}");
    String::from_utf8(out.stdout).expect("utf-8")
}

/// Polls `resource` until a linearizable read shows it without a holder;
/// returns the instant just before the first such read was sent. Fails at
/// `deadline`.
async fn wait_free(client: &Client, resource: &str, deadline: Instant) -> Instant {
    loop {
        let sent = Instant::now();
        if let Ok(s) = client.status(resource).await {
            if s.holder.is_none() && s.holders.is_empty() {
                return sent;
            }
        }
        assert!(
            Instant::now() < deadline,
            "{resource} still held (or unreadable) at the deadline"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

// docs/operations.md "Latency between nodes" with the `wan` preset; L3
// (writes and linearizable reads are served at a 100 ms peer round trip),
// S4 (a renewed lease outlives its TTL; no expiry before TTL × 0.99 after
// the last renew's send) and L1/L2 (after the leader's kill, the new
// leader ends the lease within TTL + E of its last committed renew, plus
// the time without a leader, with the wan E of 4.3 s). `cluster status`
// names the preset and reports its values and bounds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wan_cluster_at_50ms_one_way_commits_reads_and_expires() {
    let mut cluster = Cluster::prepare(3, &["--timing", "wan"]);
    let _proxies = cluster.delay_peer_links(ONE_WAY).await;
    for id in 1..=3 {
        cluster.spawn(id);
    }
    let leader = cluster.wait_leader(Duration::from_secs(20)).await;

    // `cluster status` reports the effective timing of the preset.
    let json: serde_json::Value =
        serde_json::from_str(cluster_status_cli(&cluster, "json").await.trim()).expect("json");
    let t = &json["timing"];
    assert_eq!(t["preset"], "wan", "{json}");
    assert_eq!(t["heartbeat_ms"], 250);
    assert_eq!(t["election_timeout_min_ms"], 1_000);
    assert_eq!(t["election_timeout_max_ms"], 2_000);
    assert_eq!(t["call_timeout_floor_ms"], 500);
    assert_eq!(t["bound_e_ms"], WAN_E.as_millis() as u64);
    assert_eq!(t["bound_g_ms"], 2_000);
    let text = cluster_status_cli(&cluster, "text").await;
    assert!(
        text.contains(
            "timing: wan preset, heartbeat 250ms, election timeout 1s–2s, peer call floor 500ms,"
        ),
        "{text}"
    );
    assert!(text.contains("E = 4s 300ms"), "{text}");

    // An acquire and a release commit. The acquire's commit needs a
    // follower's answer, so it cannot be acknowledged before one peer
    // round trip: this checks that the proxies' delay applies to the peer
    // links (a property of the test setup, not a speed assertion).
    let client = cluster.client_as("root").await;
    let sent = Instant::now();
    let (lease, token) = take(&client, "wan-a", TTL).await;
    let took = sent.elapsed();
    assert!(
        took >= 2 * ONE_WAY,
        "acquire acknowledged after {took:?}, within one peer round trip: the delay is not applied"
    );
    let released = client
        .release(lease, Some("wan-a".into()), Some(token))
        .await
        .expect("release");
    assert!(released.released);

    // A linearizable read is served (its heartbeat round fits in the wan
    // preset's 250 ms heartbeat).
    let s = client.status("wan-a").await.expect("status read");
    assert!(s.holder.is_none(), "{s:?}");
    assert!(s.read_index > 0, "{s:?}");

    // Renewals keep a lease past its TTL: renew every TTL/3 (the holder's
    // pace, as a session's keep-alive) until 2 × TTL have passed.
    let (held, held_token) = take(&client, "held", TTL).await;
    let acquired = Instant::now();
    let mut next = acquired;
    let (mut last_sent, mut last_acked) = (acquired, acquired);
    while acquired.elapsed() < 2 * TTL {
        next += TTL / 3;
        tokio::time::sleep_until(next.into()).await;
        let sent = Instant::now();
        let r = client.renew(held).await.expect("renew");
        assert_eq!(r.ttl_ms, TTL.as_millis() as u64);
        (last_sent, last_acked) = (sent, Instant::now());
    }
    let s = client.status("held").await.expect("status read");
    assert_eq!(
        s.holder.as_ref().map(|h| (h.lease_id, h.fencing_token)),
        Some((held, held_token)),
        "the renewed lease holds past its TTL: {s:?}"
    );

    // The leader dies right after the last renew; a new one is elected.
    let killed_at = Instant::now();
    cluster.kill(leader);
    let new_leader = cluster.wait_leader(Duration::from_secs(20)).await;
    let leaderless = killed_at.elapsed();
    assert_ne!(new_leader, leader);

    // L1/L2: the new leader ends the lease within TTL + E of its last
    // committed renew (acknowledged by `last_acked`), plus the time without
    // a leader; S4: not before TTL × (1 − ρ) after that renew's send.
    let bound = last_acked + TTL + WAN_E + leaderless + OBSERVE;
    let freed = wait_free(&client, "held", bound).await;
    assert!(
        freed >= last_sent + TTL.mul_f64(0.99),
        "freed {:?} after the last renew's send, before TTL × 0.99 (S4)",
        freed - last_sent
    );
}
