//! Semaphores, read-write locks and multi-locks with real processes
//! (docs/semantics.md, "Lock kinds", "Multi-locks"): a semaphore's permits,
//! a read-write lock's grants and multi-grants through the client library
//! and the CLI, across a leader kill.
//!
//! Every wait is a poll with a deadline.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use tokio::task::JoinHandle;
use warden_client::{
    AcquireOptions, AcquireResult, Client, ClientError, GrantKind, LockGuard, ResourceKind,
    Session, StatusResult,
};

use crate::harness::Cluster;
use crate::E;

async fn client(cluster: &Cluster) -> Client {
    crate::harness::client_of(cluster.endpoints().split(',').map(str::to_owned).collect()).await
}

/// A linearizable read of `resource`, retried across a leader change.
async fn status(c: &Client, resource: &str) -> StatusResult {
    c.status(resource).await.expect("status")
}

/// Polls `resource`'s status until `cond` holds, failing the test after
/// `limit`; returns the status that satisfied it.
async fn until_status(
    c: &Client,
    resource: &str,
    limit: Duration,
    what: &str,
    cond: impl Fn(&StatusResult) -> bool,
) -> StatusResult {
    let deadline = Instant::now() + limit;
    loop {
        let s = status(c, resource).await;
        if cond(&s) {
            return s;
        }
        assert!(
            Instant::now() < deadline,
            "timed out waiting for {what}; last status {s:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Waits for a spawned acquire to finish, failing the test after `limit`.
async fn granted(
    task: &mut JoinHandle<Result<LockGuard, ClientError>>,
    limit: Duration,
) -> LockGuard {
    tokio::time::timeout(limit, task)
        .await
        .expect("the waiter was not granted in time")
        .expect("the acquire task")
        .expect("the acquire")
}

/// Kills the leader and waits until the other two elect one.
async fn kill_leader(cluster: &mut Cluster) {
    let leader = cluster.wait_leader(Duration::from_secs(10)).await;
    cluster.kill(leader);
    cluster.wait_leader(Duration::from_secs(20)).await;
}

/// conformance: C14-semaphore-permits-in-slots.
/// Lock kinds, semaphore (docs/semantics.md "Lock kinds", S1, S2, S8): a
/// semaphore of 3 with 5 clients never has more than 3 holders, each in its
/// own slot with a fresh fencing token; the two that must wait are granted
/// in the order they queued; a permit whose lease expires is handed to the
/// oldest waiter, in its slot, with a larger token — across a leader kill
/// taken while both waited.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn semaphore_of_three_with_five_clients() {
    let mut cluster = Cluster::start(3, &[]).await;
    let c = client(&cluster).await;
    let permit = GrantKind::Permit { limit: 3 };
    // Client 0's permit hangs on a lease nobody renews: it expires.
    let expiring = match c
        .acquire(
            "pool",
            AcquireOptions {
                kind: permit,
                ..AcquireOptions::with_ttl(Duration::from_secs(5))
            },
        )
        .await
        .expect("acquire")
    {
        AcquireResult::Granted {
            lease_id,
            fencing_token,
            slot,
            ..
        } => (lease_id, fencing_token, slot),
        other => panic!("expected a permit, got {other:?}"),
    };
    assert_eq!(expiring.2, Some(0), "the first permit takes slot 0");
    let mut sessions: Vec<Session> = Vec::new();
    for _ in 1..5 {
        sessions.push(c.session(Duration::from_secs(10)).await.expect("session"));
    }
    let g1 = sessions[0]
        .semaphore("pool", 3)
        .acquire()
        .await
        .expect("permit 1");
    let g2 = sessions[1]
        .semaphore("pool", 3)
        .acquire()
        .await
        .expect("permit 2");
    assert_eq!((g1.slot(), g2.slot()), (Some(1), Some(2)));
    assert!(expiring.1 < g1.fencing_token() && g1.fencing_token() < g2.fencing_token());
    // The fourth and fifth queue, in that order.
    let s3 = sessions[2].clone();
    let mut w3 = tokio::spawn(async move { s3.semaphore("pool", 3).acquire().await });
    until_status(&c, "pool", Duration::from_secs(5), "the 4th queued", |s| {
        s.waiters == 1
    })
    .await;
    let s4 = sessions[3].clone();
    let mut w4 = tokio::spawn(async move { s4.semaphore("pool", 3).acquire().await });
    let full = until_status(&c, "pool", Duration::from_secs(5), "the 5th queued", |s| {
        s.waiters == 2
    })
    .await;
    assert_eq!(full.kind, Some(ResourceKind::Semaphore { limit: 3 }));
    assert_eq!(full.holder, None, "permits are not an exclusive holder");
    let leases: BTreeSet<u64> = full.holders.iter().map(|h| h.lease_id).collect();
    assert!(
        leases.contains(&expiring.0),
        "both waiters queued before the first permit expired: {full:?}"
    );
    assert_eq!(full.holders.len(), 3);
    kill_leader(&mut cluster).await;
    // The unrenewed lease expires; its slot goes to the oldest waiter.
    let g3 = granted(&mut w3, Duration::from_secs(30)).await;
    assert_eq!(g3.slot(), Some(0), "the expired permit's slot is reused");
    assert!(
        g3.fencing_token() > g2.fencing_token(),
        "a fresh, larger token"
    );
    assert!(!w4.is_finished(), "the 5th still waits: 3 permits are held");
    let s = until_status(
        &c,
        "pool",
        Duration::from_secs(5),
        "3 holders, 1 waiter",
        |s| s.waiters == 1,
    )
    .await;
    assert_eq!(s.holders.len(), 3, "never more than 3 holders: {s:?}");
    // A release hands slot 1 to the last waiter in the same entry.
    g1.release().await.expect("release permit 1");
    let g4 = granted(&mut w4, Duration::from_secs(10)).await;
    assert_eq!(g4.slot(), Some(1));
    assert!(g4.fencing_token() > g3.fencing_token());
    let s = status(&c, "pool").await;
    assert_eq!((s.holders.len(), s.waiters), (3, 0), "{s:?}");
    let mut slots: Vec<Option<u32>> = s.holders.iter().map(|h| h.slot).collect();
    slots.sort();
    assert_eq!(slots, [Some(0), Some(1), Some(2)]);
}

/// conformance: C15-readers-share-writer-waits.
/// Lock kinds, read-write (docs/semantics.md "Lock kinds", S1, S2, S8):
/// readers share; a writer queued behind them stops a later reader from
/// overtaking it; when the readers release, the writer is granted alone with
/// a larger token, and the later reader only after the writer releases —
/// across a leader kill taken while both waited.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readers_and_a_queued_writer() {
    let mut cluster = Cluster::start(3, &[]).await;
    let c = client(&cluster).await;
    let mut sessions: Vec<Session> = Vec::new();
    for _ in 0..4 {
        sessions.push(c.session(Duration::from_secs(10)).await.expect("session"));
    }
    let r1 = sessions[0].read_lock("doc").await.expect("reader 1");
    let r2 = sessions[1].read_lock("doc").await.expect("reader 2");
    assert!(
        r1.fencing_token() < r2.fencing_token(),
        "every grant takes a fresh token"
    );
    assert_eq!((r1.kind(), r1.slot()), (GrantKind::Shared, None));
    let two = status(&c, "doc").await;
    assert_eq!(two.kind, Some(ResourceKind::ReadWrite));
    assert_eq!(
        (two.holder.clone(), two.holders.len()),
        (None, 2),
        "{two:?}"
    );
    let w = sessions[2].clone();
    let mut writer = tokio::spawn(async move { w.write_lock("doc").await });
    until_status(
        &c,
        "doc",
        Duration::from_secs(5),
        "the writer queued",
        |s| s.waiters == 1,
    )
    .await;
    let r = sessions[3].clone();
    let mut late_reader = tokio::spawn(async move { r.read_lock("doc").await });
    let s = until_status(
        &c,
        "doc",
        Duration::from_secs(5),
        "the late reader queued",
        |s| s.waiters == 2,
    )
    .await;
    assert_eq!(
        s.holders.len(),
        2,
        "the late reader did not overtake the writer: {s:?}"
    );
    kill_leader(&mut cluster).await;
    assert!(!writer.is_finished() && !late_reader.is_finished());
    r1.release().await.expect("release reader 1");
    let s = status(&c, "doc").await;
    assert_eq!(
        (s.holders.len(), s.waiters),
        (1, 2),
        "one reader still holds: {s:?}"
    );
    let r2_token = r2.fencing_token();
    r2.release().await.expect("release reader 2");
    let wg = granted(&mut writer, Duration::from_secs(10)).await;
    assert_eq!(wg.kind(), GrantKind::Exclusive);
    assert!(wg.fencing_token() > r2_token);
    let s = status(&c, "doc").await;
    let holder = s
        .holder
        .clone()
        .expect("the writer is the exclusive holder");
    assert_eq!(
        (holder.fencing_token, s.holders.len(), s.waiters),
        (wg.fencing_token(), 1, 1)
    );
    assert!(!late_reader.is_finished(), "no reader beside the writer");
    let wg_token = wg.fencing_token();
    wg.release().await.expect("release the writer");
    let rg = granted(&mut late_reader, Duration::from_secs(10)).await;
    assert!(rg.fencing_token() > wg_token);
}

/// Availability (L3: a majority serves) of the other lock kinds before any
/// was used: the leader is killed, and the node that takes over grants a
/// first semaphore permit and a first shared grant without waiting for the
/// dead member (the README's session does this; every kind is in the one
/// log format, so no member's report is waited for).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_first_semaphore_after_the_leader_died() {
    let mut cluster = Cluster::start(3, &[]).await;
    kill_leader(&mut cluster).await;
    let c = client(&cluster).await;
    let session = c.session(Duration::from_secs(10)).await.expect("session");
    let permit = session
        .semaphore("first", 2)
        .acquire()
        .await
        .expect("a first permit");
    assert_eq!(permit.slot(), Some(0));
    let shared = session
        .read_lock("first-rw")
        .await
        .expect("a first shared grant");
    assert!(shared.fencing_token() > 0);
}

/// Lock kinds through the CLI (docs/semantics.md "Lock kinds"; the
/// `consul lock -n N` surface): `warden acquire --limit 2` hands out slots 0
/// and 1 and refuses a third try (exit 2), `status` shows the kind, the
/// limit and both holders, another limit or a mutex request on it is
/// refused naming the current kind, bad flags are refused before anything is
/// sent, and `warden exec --limit` gives CMD its slot.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cli_semaphore_and_shared_grants() {
    let cluster = Cluster::start(3, &[]).await;
    let acquire = |extra: &[&str]| {
        let mut args = vec!["acquire", "jobs", "--ttl", "30s"];
        args.extend_from_slice(extra);
        cluster.cli(&args)
    };
    let (code, first, err) = acquire(&["--limit", "2"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(first["slot"], 0);
    let (code, second, err) = acquire(&["--limit", "2"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(second["slot"], 1);
    assert!(second["fencing_token"].as_u64() > first["fencing_token"].as_u64());
    let (code, _, _) = acquire(&["--limit", "2"]);
    assert_eq!(code, 2, "both permits held: not granted");
    let (code, s, err) = cluster.cli(&["status", "jobs"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        (s["kind"].as_str(), s["limit"].as_u64()),
        (Some("semaphore"), Some(2))
    );
    assert_eq!(s["holder"], serde_json::Value::Null);
    let slots: BTreeSet<u64> = s["holders"]
        .as_array()
        .expect("holders")
        .iter()
        .map(|h| h["slot"].as_u64().expect("a permit's slot"))
        .collect();
    assert_eq!(slots, BTreeSet::from([0, 1]));
    // Another limit, or a mutex, on a semaphore: FailedPrecondition naming the kind.
    for extra in [&["--limit", "3"][..], &[]] {
        let (code, _, err) = acquire(extra);
        assert_eq!(code, 1, "refused: {err}");
        assert!(err.contains("semaphore"), "names the current kind: {err}");
    }
    // Bad flags, refused before anything is sent.
    let (code, _, err) = acquire(&["--limit", "0"]);
    assert_eq!(code, 1);
    assert!(err.contains("--limit") && err.contains("10000"), "{err}");
    let out = cluster
        .cli_command("root", &["acquire", "jobs", "--limit", "2", "--shared"])
        .output()
        .expect("run warden");
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--shared"));
    // Shared grants of a read-write lock from two CLI calls coexist.
    let (code, a, err) = cluster.cli(&["acquire", "docs", "--ttl", "30s", "--shared"]);
    assert_eq!(code, 0, "{err}");
    let (code, b, err) = cluster.cli(&["acquire", "docs", "--ttl", "30s", "--shared"]);
    assert_eq!(code, 0, "{err}");
    assert!(b["fencing_token"].as_u64() > a["fencing_token"].as_u64());
    let (code, _, _) = cluster.cli(&["acquire", "docs", "--ttl", "30s", "--exclusive"]);
    assert_eq!(code, 2, "a writer is not granted beside readers");
    // warden exec --limit: CMD sees its permit's slot.
    let out = crate::exec::exec(
        &cluster,
        &["batch", "--limit", "4"],
        &["sh", "-c", "echo \"$WARDEN_SLOT $WARDEN_FENCING_TOKEN\""],
    )
    .output()
    .expect("run warden exec");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let line = String::from_utf8_lossy(&out.stdout);
    let mut words = line.split_whitespace();
    assert_eq!(
        words.next(),
        Some("0"),
        "slot 0 of a fresh semaphore: {line:?}"
    );
    assert!(
        words.next().and_then(|t| t.parse::<u64>().ok()).is_some(),
        "{line:?}"
    );
}

/// conformance: C16-multi-lock-all-or-none.
/// Multi-locks (docs/semantics.md "Multi-locks", S1, S2, S8; the deadlock
/// of two clients taking the same locks in opposite orders, which Curator's
/// `InterProcessMultiLock` leaves to the caller): two sessions loop taking
/// {a, b} and {b, a}; both finish every round, every grant holds both
/// resources with a fresh token each, and a leader killed in the middle
/// stops neither.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn opposite_orders_do_not_deadlock() {
    const ROUNDS: usize = 12;
    let mut cluster = Cluster::start(3, &[]).await;
    let c = client(&cluster).await;
    let (halfway_tx, halfway_rx) = tokio::sync::oneshot::channel::<()>();
    let mut tasks = Vec::new();
    let mut halfway_tx = Some(halfway_tx);
    for order in [["a", "b"], ["b", "a"]] {
        let session = c.session(Duration::from_secs(10)).await.expect("session");
        let halfway = if order[0] == "a" {
            halfway_tx.take()
        } else {
            None
        };
        tasks.push(tokio::spawn(async move {
            let mut halfway = halfway;
            let mut seen: Vec<(u64, u64)> = Vec::new();
            for round in 0..ROUNDS {
                let guard = session.lock_all(&order).await.expect("lock_all");
                let (a, b) = (
                    guard.fencing_token("a").expect("a held"),
                    guard.fencing_token("b").expect("b held"),
                );
                assert_eq!(guard.grants().len(), 2);
                guard.check().expect("valid while held");
                seen.push((a, b));
                if round == ROUNDS / 2 {
                    if let Some(tx) = halfway.take() {
                        let _ = tx.send(());
                    }
                }
                guard.release().await.expect("release both");
            }
            seen
        }));
    }
    halfway_rx.await.expect("the first loop reached half way");
    kill_leader(&mut cluster).await;
    let mut all_a = BTreeSet::new();
    let mut all_b = BTreeSet::new();
    for task in tasks {
        let seen = tokio::time::timeout(Duration::from_secs(90), task)
            .await
            .expect("a loop did not finish: deadlock or a stuck waiter")
            .expect("the loop");
        assert_eq!(seen.len(), ROUNDS);
        for pair in seen.windows(2) {
            assert!(pair[1].0 > pair[0].0 && pair[1].1 > pair[0].1, "{seen:?}");
        }
        for (a, b) in seen {
            assert!(all_a.insert(a) && all_b.insert(b), "a token given twice");
        }
    }
    let s = status(&c, "a").await;
    assert_eq!((s.holder, s.waiters), (None, 0), "both released");
}

/// Multi-locks through the CLI (docs/semantics.md "Multi-locks"): `warden
/// acquire a b c` takes all three with a token each (JSON `grants`), a
/// single acquire of one of them is then not granted (exit 2), a release
/// naming one frees all three, and a duplicate name is refused before
/// anything is sent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cli_multi_lock() {
    let cluster = Cluster::start(3, &[]).await;
    let (code, j, err) = cluster.cli(&["acquire", "m1", "m2", "m3", "--ttl", "30s"]);
    assert_eq!(code, 0, "{err}");
    let grants = j["grants"].as_array().expect("grants").clone();
    let names: Vec<&str> = grants
        .iter()
        .map(|g| g["resource"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["m1", "m2", "m3"]);
    let tokens: BTreeSet<u64> = grants
        .iter()
        .map(|g| g["fencing_token"].as_u64().unwrap())
        .collect();
    assert_eq!(tokens.len(), 3, "a fresh token per resource");
    let lease = j["lease_id"].as_u64().unwrap().to_string();
    let (code, _, _) = cluster.cli(&["acquire", "m2", "--ttl", "30s"]);
    assert_eq!(code, 2, "m2 is held by the multi-lock");
    let m1_token = grants[0]["fencing_token"].as_u64().unwrap().to_string();
    let (code, _, err) = cluster.cli(&["release", &lease, "m1", "--token", &m1_token]);
    assert_eq!(code, 0, "{err}");
    for r in ["m1", "m2", "m3"] {
        let (code, s, err) = cluster.cli(&["status", r]);
        assert_eq!(code, 0, "{err}");
        assert_eq!(
            s["holder"],
            serde_json::Value::Null,
            "{r} freed with the others"
        );
    }
    let (code, _, err) = cluster.cli(&["acquire", "m1", "m1", "--ttl", "30s"]);
    assert_eq!(code, 1);
    assert!(err.contains("twice"), "{err}");
    // warden exec holds a multi-lock and gives CMD every token.
    let out = crate::exec::exec(
        &cluster,
        &["x1", "x2"],
        &["sh", "-c", "echo \"$WARDEN_FENCING_TOKENS\""],
    )
    .output()
    .expect("run warden exec");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let line = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    let items: Vec<(&str, u64)> = line
        .split(',')
        .map(|i| {
            let (r, t) = i.split_once('=').expect("RESOURCE=TOKEN");
            (r, t.parse().expect("a token"))
        })
        .collect();
    assert_eq!(
        items.iter().map(|i| i.0).collect::<Vec<_>>(),
        ["x1", "x2"],
        "{line}"
    );
    assert!(
        items[1].1 > items[0].1,
        "a fresh token each, in order: {line}"
    );
}

/// conformance: C17-max-hold-ends-a-renewed-grant.
/// Max-hold (docs/semantics.md "Max-hold"; asked for in CURATOR-28): a grant
/// with a max-hold of 2 s whose session keeps renewing is freed no later
/// than 2 s + E after its acquire was sent and no earlier than the 2 s
/// (less the clock-rate drift), the waiter gets it with a larger token, the
/// guard says it ran out while the session stays valid — across a leader
/// kill right after the grant; the CLI refuses a max-hold outside 1 s ..=
/// 24 h, or a wait as long as it, naming the flag.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn max_hold_ends_a_renewing_holder() {
    let mut cluster = Cluster::start(3, &[]).await;
    let c = client(&cluster).await;
    let holder = c.session(Duration::from_secs(10)).await.expect("session");
    let waiter = c.session(Duration::from_secs(10)).await.expect("session");
    let max_hold = Duration::from_secs(2);
    let sent = Instant::now();
    let guard = holder
        .lock_with(
            "capped",
            warden_client::LockOptions {
                wait: Some(Duration::from_secs(1)),
                lock_delay: Duration::ZERO,
                max_hold: Some(max_hold),
            },
        )
        .await
        .expect("lock_with")
        .expect("granted");
    assert!(guard.valid_until() <= holder.valid_until());
    assert!(guard.max_hold_until().is_some());
    let w = waiter.clone();
    let mut next = tokio::spawn(async move { w.lock("capped").await });
    until_status(
        &c,
        "capped",
        Duration::from_secs(5),
        "the waiter queued",
        |s| s.waiters == 1,
    )
    .await;
    kill_leader(&mut cluster).await;
    let handed = granted(&mut next, Duration::from_secs(15)).await;
    let took = sent.elapsed();
    assert!(
        took >= Duration::from_millis(1_900) && took <= max_hold + E + Duration::from_millis(500),
        "freed {took:?} after the acquire's send (max-hold {max_hold:?}, E {E:?})"
    );
    assert!(handed.fencing_token() > guard.fencing_token());
    assert!(
        matches!(guard.check(), Err(warden_client::Lost::MaxHold { .. })),
        "the old guard says its max-hold ran out: {:?}",
        guard.check()
    );
    holder.check().expect("the session itself is still valid");
    // Bad input, refused before anything is sent.
    let (code, _, err) = cluster.cli(&["acquire", "c2", "--ttl", "30s", "--max-hold", "500ms"]);
    assert_eq!(code, 1);
    assert!(err.contains("--max-hold") && err.contains("24h"), "{err}");
    let (code, _, err) = cluster.cli(&[
        "acquire",
        "c2",
        "--ttl",
        "30s",
        "--max-hold",
        "2s",
        "--wait",
        "2s",
    ]);
    assert_eq!(code, 1);
    assert!(err.contains("--wait"), "{err}");
    let (code, j, err) = cluster.cli(&["acquire", "c2", "--ttl", "30s", "--max-hold", "2s"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        j["valid_for_ms"].as_u64().expect("valid_for_ms") < 2_000,
        "{j}"
    );
}
