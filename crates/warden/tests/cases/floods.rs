//! One principal against the others, with real processes over mutual TLS
//! (docs/security.md "Quotas and limits", "Refused before the log"): a
//! value flood, a queue flood and a flood of refused writes each stop at
//! the flooder's own bound while the others are served.

use std::time::{Duration, Instant};

use warden_client::ClientError;

use crate::harness::{cluster_status_at, Cluster, Final};

/// As root: a role named after `user` with `permission` on each of
/// `prefixes`, given to it.
fn grant(cluster: &Cluster, user: &str, prefixes: &[&str], permission: &str) {
    for prefix in prefixes {
        let (code, _, err) = cluster.cli(&[
            "role",
            "grant",
            user,
            "--prefix",
            prefix,
            "--permission",
            permission,
        ]);
        assert_eq!(code, 0, "{err}");
    }
    let (code, _, err) = cluster.cli(&["user", "grant-role", user, user]);
    assert_eq!(code, 0, "{err}");
}

fn exhausted(e: &ClientError, needle: &str) -> bool {
    matches!(e, ClientError::ResourceExhausted { message } if message.contains(needle))
}

/// The election-value flood (one principal with one lease once published
/// 100,000 values, the table's cap, and every other principal's proclaim
/// failed; each node grew by about 1.8 GB with 4 KB values): mallory, with
/// `lock` on the elections `m-*`, publishes 4,000-byte candidate values on
/// one election after another until the cluster refuses her at her default
/// `value_bytes` quota (1 MiB: 262 values); alice still proclaims, and
/// the leader's resident memory grew by far less than the flood's cap
/// would allow (bounded by the quota, not by the table).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_value_flood_stops_at_its_quota_and_others_still_proclaim() {
    let cluster = Cluster::start(3, &[]).await;
    grant(&cluster, "mallory", &["election:m-"], "lock");
    grant(&cluster, "alice", &["election:a-"], "lock");
    let leader = cluster.wait_leader(Duration::from_secs(10)).await;
    let pid = cluster.nodes[&leader].child.as_ref().expect("running").id();
    let before = crate::harness::resident_bytes(pid);
    let mallory = cluster.client_as("mallory").await;
    let lease = mallory
        .lease_grant(Duration::from_secs(120))
        .await
        .expect("mallory's lease")
        .lease_id;
    let value = "v".repeat(4_000);
    let mut published = 0u64;
    let refusal = loop {
        let key = warden_client::election_key(&format!("m-{published}"));
        match mallory.proclaim(key, lease, 0, value.clone()).await {
            Ok(()) => published += 1,
            Err(e) => break e,
        }
        assert!(published <= 1_000, "mallory went past her quotas");
    };
    assert!(
        exhausted(&refusal, "quota value_bytes of principal mallory"),
        "{refusal:?}"
    );
    assert_eq!(published, (1 << 20) / 4_000, "1 MiB of 4,000-byte values");
    let alice = cluster.client_as("alice").await;
    let hers = alice
        .lease_grant(Duration::from_secs(60))
        .await
        .expect("alice's lease")
        .lease_id;
    alice
        .proclaim(warden_client::election_key("a-1"), hers, 0, value.clone())
        .await
        .expect("alice still proclaims");
    let grown = crate::harness::resident_bytes(pid).saturating_sub(before);
    println!(
        "leader RSS grew by {} KiB over {published} values",
        grown / 1024
    );
    assert!(
        grown < 64 << 20,
        "the leader grew by {grown} bytes: bounded by her quota, not the table's cap"
    );
}

/// The queue flood (one principal with the holder's role queued 10,000
/// waits on a resource, its cap, after which even root was refused a wait
/// there): with mallory's `waits_per_resource` set to 5, her sixth wait on
/// `q/1` (held by alice) is refused naming that quota, while carol and root
/// still queue there behind her five.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_queue_flood_stops_at_its_quota_and_others_still_queue() {
    let cluster = Cluster::start(3, &[]).await;
    for user in ["alice", "mallory", "carol"] {
        grant(&cluster, user, &["q/"], "lock");
    }
    let (code, _, err) = cluster.cli(&["role", "quota", "mallory", "--waits-per-resource", "5"]);
    assert_eq!(code, 0, "{err}");
    let alice = cluster.api_as("alice");
    let held = alice
        .acquire(1, 1, "q/1", 60_000)
        .await
        .expect("alice holds q/1");
    assert!(matches!(held, Final::Granted { .. }), "{held:?}");
    let root = cluster.api();
    let waiters_are = |n: u64| {
        let root = root.clone();
        async move {
            let deadline = Instant::now() + Duration::from_secs(10);
            loop {
                let w = root.status("q/1").await.expect("status").waiters;
                if w == n {
                    return;
                }
                assert!(
                    Instant::now() < deadline,
                    "q/1 never had {n} waiters (has {w})"
                );
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
    };
    let mut waits = Vec::new();
    for i in 0..5u64 {
        let mallory = cluster.api_as("mallory");
        waits.push(tokio::spawn(async move {
            mallory
                .acquire_waiting(100 + i, 1, "q/1", 60_000, 30_000)
                .await
        }));
        waiters_are(i + 1).await;
    }
    let sixth = cluster
        .api_as("mallory")
        .acquire_waiting(200, 1, "q/1", 60_000, 30_000)
        .await
        .expect_err("her sixth wait is refused");
    assert!(
        exhausted(&sixth, "quota waits_per_resource of principal mallory"),
        "{sixth:?}"
    );
    for (user, client) in [("carol", 300u64), ("root", 400)] {
        let api = cluster.api_as(user);
        waits.push(tokio::spawn(async move {
            api.acquire_waiting(client, 1, "q/1", 60_000, 30_000).await
        }));
    }
    waiters_are(7).await;
    for w in waits {
        w.abort();
    }
}

/// The refused-write flood (a principal with no roles once added an entry
/// per refused acquire: 17 MB per node in 20 s, and everyone's commits
/// slowed): 500 acquires from mallory, who holds no role, on a cluster
/// whose refused-request rate limit is 10 a second (20 at once). Each is
/// refused, PermissionDenied while her bucket lasts and then
/// ResourceExhausted naming the rate limit, without any check; the
/// leader's log grows by at most the one entry of her client id's first
/// request plus the leader's own ticks; alice is served throughout.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refused_writes_do_not_reach_the_log_and_are_rate_limited() {
    let cluster = Cluster::start(3, &["--refused-requests-per-sec", "10"]).await;
    grant(&cluster, "alice", &["a/"], "lock");
    let leader = cluster.wait_leader(Duration::from_secs(10)).await;
    let addr = cluster.nodes[&leader].addr.clone();
    let before = cluster_status_at(&addr)
        .await
        .expect("status")
        .last_log_index;
    let started = Instant::now();
    let mallory = cluster.api_as("mallory");
    let (mut denied, mut limited) = (0u64, 0u64);
    for request in 1..=500u64 {
        let e = mallory
            .acquire(7, request, &format!("x/{request}"), 10_000)
            .await
            .expect_err("refused");
        match &e {
            ClientError::PermissionDenied { .. } => denied += 1,
            e if exhausted(e, "refused-request rate limit") => limited += 1,
            e => panic!("{request}: {e:?}"),
        }
    }
    let elapsed = started.elapsed();
    let after = cluster_status_at(&addr)
        .await
        .expect("status")
        .last_log_index;
    let alice = cluster.api_as("alice");
    let served = alice.acquire(1, 1, "a/1", 10_000).await.expect("alice");
    assert!(matches!(served, Final::Granted { .. }), "{served:?}");
    let ticks = elapsed.as_secs() + 2;
    println!(
        "500 refused acquires in {elapsed:?}: {denied} refused by the table, {limited} by the rate limit; the log grew by {} entries",
        after - before
    );
    assert!(
        after - before <= 1 + ticks,
        "the log grew by {} entries for 500 refused acquires",
        after - before
    );
    // Her bucket: 20 at once, then 10 a second.
    let allowed = 20 + 10 * (elapsed.as_secs() + 1);
    assert!(
        denied >= 20 && denied <= allowed,
        "{denied} refused by the table in {elapsed:?}"
    );
    assert_eq!(denied + limited, 500);
}

/// Raises this process's open-file soft limit to `want` (or the hard
/// limit, if lower); returns the soft limit in force.
fn raise_open_files(want: u64) -> u64 {
    use nix::sys::resource::{getrlimit, setrlimit, Resource};
    let (soft, hard) = getrlimit(Resource::RLIMIT_NOFILE).expect("getrlimit");
    let target = want.min(hard);
    if soft < target && setrlimit(Resource::RLIMIT_NOFILE, target, hard).is_ok() {
        return target;
    }
    soft
}

/// The silent-socket flood on a real node (about 1,100 silent TCP
/// connections per port once held every one of the 1,024 handshake slots,
/// and new client connections to the leader failed 8 times in 10): 1,100
/// connections to the leader's client port that never send a byte, kept
/// coming as the node closes them, while a CLI call as alice (a new TLS
/// connection each time, from the same address) is answered within a
/// second, five times in a row (docs/security.md "Connection limits").
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn silent_sockets_never_keep_a_client_out_of_a_node() {
    const SILENT: usize = 1_100;
    let limit = raise_open_files(4_096);
    if limit < SILENT as u64 + 256 {
        println!("SKIPPED: the open-file limit is {limit}; this test holds {SILENT} sockets");
        return;
    }
    let cluster = Cluster::start(3, &[]).await;
    grant(&cluster, "alice", &["a/"], "lock");
    let leader = cluster.wait_leader(Duration::from_secs(10)).await;
    let addr: std::net::SocketAddr = cluster.nodes[&leader].addr.parse().expect("addr");
    let mut held = std::collections::VecDeque::new();
    while held.len() < SILENT {
        if let Ok(s) = tokio::net::TcpStream::connect(addr).await {
            held.push_back(s);
        }
    }
    let flood = tokio::spawn(async move {
        let mut pace = tokio::time::interval(Duration::from_millis(2));
        loop {
            pace.tick().await;
            if let Ok(s) = tokio::net::TcpStream::connect(addr).await {
                held.push_back(s);
                held.pop_front();
            }
        }
    });
    let endpoint = cluster.nodes[&leader].addr.clone();
    let alice =
        warden_tls::ClientTls::load_client(&crate::harness::certs::certs().client_dir, "alice")
            .expect("alice's certificate");
    for attempt in 0..5 {
        // A new channel: a new TCP connection and TLS handshake each time.
        let channel = alice.channel_lazy(&endpoint).expect("channel");
        let mut lock = warden_proto::v1::lock_client::LockClient::new(channel);
        let started = Instant::now();
        let answer = tokio::time::timeout(
            Duration::from_secs(1),
            lock.cluster_status(warden_proto::v1::ClusterStatusRequest {}),
        )
        .await;
        println!("attempt {attempt}: answered in {:?}", started.elapsed());
        let answer = answer
            .unwrap_or_else(|_| {
                panic!("attempt {attempt}: no answer within 1 s behind {SILENT} silent sockets")
            })
            .unwrap_or_else(|e| panic!("attempt {attempt}: {e}"));
        assert_eq!(answer.into_inner().node_id, leader);
    }
    flood.abort();
}
