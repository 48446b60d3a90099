//! Sessions (docs/semantics.md "Words": a session is a lease that holds
//! several locks): `warden lease grant | keep-alive | ttl | revoke`, the
//! keep-alive stream's echoed sequence numbers (S5), and `valid_for_ms`.

use std::time::Duration;

use tokio_stream::StreamExt;
use warden_proto::v1 as pb;
use warden_proto::v1::lease_client::LeaseClient;

use crate::harness::Cluster;

/// A session holds several locks through one lease; releasing one keeps the
/// session; revoking it frees every lock in one entry; it is gone afterwards
/// (S6: revoke acts on exactly the lease named).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn session_holds_many_locks_and_revoke_frees_them() {
    let cluster = Cluster::start(3, &[]).await;
    let (code, g, err) = cluster.cli(&["lease", "grant", "--ttl", "10s"]);
    assert_eq!(code, 0, "{err}");
    let lease = g["lease_id"].as_u64().expect("lease_id");
    assert_eq!(g["ttl_ms"], 10_000);
    let lease_s = lease.to_string();
    let mut tokens = Vec::new();
    for r in ["s1", "s2", "s3"] {
        let (code, a, err) = cluster.cli(&["acquire", r, "--lease", &lease_s]);
        assert_eq!(code, 0, "{err}");
        assert_eq!(a["lease_id"].as_u64(), Some(lease));
        tokens.push(a["fencing_token"].as_u64().expect("token"));
    }
    assert!(tokens.windows(2).all(|w| w[0] < w[1]), "S2: {tokens:?}");
    let (code, t, _) = cluster.cli(&["lease", "ttl", &lease_s]);
    assert_eq!(code, 0);
    assert_eq!(t["locks"], serde_json::json!(["s1", "s2", "s3"]));
    assert!(t["ttl_remaining_ms"].as_u64().expect("remaining") <= 10_000);

    // Releasing one lock keeps the session alive (it is not an acquire's lease).
    let (code, _, err) = cluster.cli(&["release", &lease_s, "s2"]);
    assert_eq!(code, 0, "{err}");
    let (code, k, err) = cluster.cli(&["lease", "keep-alive", &lease_s, "--count", "1"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(k["lease_id"].as_u64(), Some(lease));
    // Counted from 1 for the reader (the wire sequence is the client's own).
    assert_eq!(k["renewal"].as_u64(), Some(1), "{k}");

    let (code, v, err) = cluster.cli(&["lease", "revoke", &lease_s]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(v["revoked"], true);
    for r in ["s1", "s3"] {
        let (_, s, _) = cluster.cli(&["status", r]);
        assert!(s["holder"].is_null(), "{r}: {s}");
    }
    let (code, _, err) = cluster.cli(&["lease", "ttl", &lease_s]);
    assert_eq!(code, 1);
    assert!(
        err.contains("not live") || err.contains("not found"),
        "{err}"
    );
}

/// S5: keep-alive replies echo each request's sequence number; a lease that
/// is not live is reported as such and the stream goes on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keep_alive_stream_echoes_sequence_numbers() {
    let cluster = Cluster::start(3, &[]).await;
    let leader = cluster.wait_leader(Duration::from_secs(10)).await;
    let (code, g, _) = cluster.cli(&["lease", "grant", "--ttl", "5s"]);
    assert_eq!(code, 0);
    let lease = g["lease_id"].as_u64().expect("lease");
    let mut client = LeaseClient::new(
        crate::harness::channel(&cluster.addr(leader), None)
            .await
            .expect("connect"),
    );
    let requests = tokio_stream::iter(vec![
        pb::LeaseKeepAliveRequest {
            lease_id: lease,
            sequence: 5,
        },
        pb::LeaseKeepAliveRequest {
            lease_id: lease,
            sequence: 9,
        },
        pb::LeaseKeepAliveRequest {
            lease_id: 999_999,
            sequence: 11,
        },
    ]);
    let mut replies = client
        .lease_keep_alive(requests)
        .await
        .expect("stream")
        .into_inner();
    let mut got = Vec::new();
    while got.len() < 3 {
        let r = tokio::time::timeout(Duration::from_secs(5), replies.next())
            .await
            .expect("a reply in time")
            .expect("not closed")
            .expect("ok");
        got.push((r.sequence, r.lease_id, r.live, r.ttl_ms));
    }
    got.sort_unstable();
    assert_eq!(
        got,
        vec![
            (5, lease, true, 5_000),
            (9, lease, true, 5_000),
            (11, 999_999, false, 0)
        ]
    );
}

/// S5: `acquire` reports how long its grant can be trusted, counted from the
/// send of its follow-up renew: never more than TTL × 0.98 − 50 ms.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acquire_reports_valid_for_from_the_renew_send() {
    let cluster = Cluster::start(3, &[]).await;
    let (code, a, err) = cluster.cli(&["acquire", "v", "--ttl", "10s"]);
    assert_eq!(code, 0, "{err}");
    let valid = a["valid_for_ms"].as_u64().expect("valid_for_ms");
    assert!(valid <= 9_750, "{valid}");
    assert!(valid > 5_000, "{valid}");
}

/// S4: renewals are committed in batches (one entry per short window naming
/// every lease renewed in it), never one entry each: 50 keep-alives sent at
/// once take far fewer than 50 log entries, and each is acknowledged.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keep_alives_are_committed_in_batches() {
    let cluster = Cluster::start(3, &[]).await;
    let leader = cluster.wait_leader(Duration::from_secs(10)).await;
    let mut client = LeaseClient::new(
        crate::harness::channel(&cluster.addr(leader), None)
            .await
            .expect("connect"),
    );
    let mut leases = Vec::new();
    for i in 0..50u64 {
        let g = client
            .lease_grant(pb::LeaseGrantRequest {
                header: Some(pb::RequestHeader {
                    client_id: 131,
                    request_id: i + 1,
                    acked_request_id: i,
                }),
                ttl_ms: 30_000,
            })
            .await
            .expect("grant")
            .into_inner();
        leases.push(g.lease_id);
    }
    let before = crate::harness::cluster_status_at(&cluster.addr(leader))
        .await
        .expect("status")
        .commit_index;
    let requests: Vec<pb::LeaseKeepAliveRequest> = leases
        .iter()
        .enumerate()
        .map(|(i, id)| pb::LeaseKeepAliveRequest {
            lease_id: *id,
            sequence: i as u64 + 1,
        })
        .collect();
    let mut replies = client
        .lease_keep_alive(tokio_stream::iter(requests))
        .await
        .expect("stream")
        .into_inner();
    let mut acked = 0;
    while acked < leases.len() {
        let r = tokio::time::timeout(Duration::from_secs(5), replies.next())
            .await
            .expect("a reply in time")
            .expect("open")
            .expect("ok");
        assert!(r.live, "{r:?}");
        acked += 1;
    }
    let after = crate::harness::cluster_status_at(&cluster.addr(leader))
        .await
        .expect("status")
        .commit_index;
    eprintln!("50 keep-alives: {} log entries", after - before);
    // Renew batches plus at most a few ticks in that time.
    assert!(
        after - before < 25,
        "50 keep-alives took {} entries",
        after - before
    );
}
