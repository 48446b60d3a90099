//! The server-side fair queue (S8), lock-delay, sessions with many locks and
//! lock administration, with real processes.
//!
//! Waiting acquires use the raw gRPC API: a dropped stream is not a cancel
//! (S8), so after a leader change a waiter re-attaches with the same request
//! id. Queued leases are kept alive by a background renewer. Every wait is a
//! poll with a deadline.

use std::collections::BTreeSet;
use std::future::Future;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::mpsc;
use tonic::{Code, Status};
use warden_client::ClientError;
use warden_proto::v1 as pb;
use warden_proto::v1::acquire_response::Event;
use warden_proto::v1::admin_client::AdminClient;
use warden_proto::v1::lock_client::LockClient;

use crate::harness::{self, call_leader, Cluster};
use crate::E;

#[derive(Debug, Clone, PartialEq, Eq)]
enum Outcome {
    Granted {
        lease_id: u64,
        token: u64,
        log_index: u64,
    },
    NotGranted {
        reason: String,
    },
}

impl Outcome {
    fn grant(&self) -> (u64, u64) {
        match self {
            Outcome::Granted {
                lease_id, token, ..
            } => (*lease_id, *token),
            other => panic!("expected a grant, got {other:?}"),
        }
    }
}

fn header(client_id: u64, request_id: u64) -> Option<pb::RequestHeader> {
    Some(pb::RequestHeader {
        client_id,
        request_id,
        acked_request_id: 0,
    })
}

/// An acquire request: `ttl_ms` for a new lease, or `lease_id` for a session.
fn req(
    client: u64,
    resource: &str,
    ttl_ms: u64,
    lease_id: u64,
    wait_ms: u64,
) -> pb::AcquireRequest {
    pb::AcquireRequest {
        header: header(client, 1),
        resource: resource.into(),
        ttl_ms,
        lease_id,
        wait_timeout_ms: wait_ms,
        lock_delay_ms: 0,
        ..Default::default()
    }
}

/// Sends one acquire and follows it to its final message; a dropped stream
/// (leader change) re-attaches with the same request id (S7, S8). Each
/// `Queued` message's lease id and position go to `queued`.
async fn acquire(
    eps: &[String],
    r: pb::AcquireRequest,
    queued: Option<mpsc::UnboundedSender<(u64, u64)>>,
) -> Result<Outcome, ClientError> {
    call_leader(eps, Duration::from_secs(60), |ch| {
        let r = r.clone();
        let queued = queued.clone();
        async move {
            let mut s = LockClient::new(ch).acquire(r).await?.into_inner();
            loop {
                match s.message().await? {
                    None => return Err(Status::unavailable("stream ended")),
                    Some(m) => match m.event {
                        Some(Event::Queued(q)) => {
                            if let Some(tx) = &queued {
                                let _ = tx.send((q.lease_id, q.position));
                            }
                        }
                        Some(Event::Granted(g)) => {
                            return Ok(Outcome::Granted {
                                lease_id: g.lease_id,
                                token: g.fencing_token,
                                log_index: g.log_index,
                            })
                        }
                        Some(Event::NotGranted(n)) => {
                            return Ok(Outcome::NotGranted { reason: n.reason })
                        }
                        None => {}
                    },
                }
            }
        }
    })
    .await
}

/// Starts a waiting acquire in a task; returns once the server has queued it
/// (so enqueue order is the order of calls), with the waiter's lease.
async fn enqueue(
    eps: &[String],
    r: pb::AcquireRequest,
) -> (u64, tokio::task::JoinHandle<Result<Outcome, ClientError>>) {
    let (tx, mut rx) = mpsc::unbounded_channel();
    let eps = eps.to_vec();
    let task = tokio::spawn(async move { acquire(&eps, r, Some(tx)).await });
    let lease = tokio::time::timeout(Duration::from_secs(10), rx.recv())
        .await
        .expect("queued within 10 s")
        .expect("a queued message")
        .0;
    (lease, task)
}

async fn release(
    eps: &[String],
    client: u64,
    request: u64,
    resource: &str,
    lease_id: u64,
    token: u64,
) -> Result<(), ClientError> {
    call_leader(eps, Duration::from_secs(20), |ch| {
        let resource = resource.to_string();
        async move {
            LockClient::new(ch)
                .release(pb::ReleaseRequest {
                    header: header(client, request),
                    resource,
                    lease_id,
                    fencing_token: token,
                })
                .await?;
            Ok(())
        }
    })
    .await
}

async fn status(eps: &[String], resource: &str) -> pb::StatusResponse {
    call_leader(eps, Duration::from_secs(20), |ch| {
        let resource = resource.to_string();
        async move {
            Ok(LockClient::new(ch)
                .status(pb::StatusRequest { resource })
                .await?
                .into_inner())
        }
    })
    .await
    .expect("status")
}

/// Polls `check` every 20 ms until it holds; panics naming `what` after `timeout`.
async fn until<F, Fut>(what: &str, timeout: Duration, check: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = bool>,
{
    let deadline = Instant::now() + timeout;
    while !check().await {
        assert!(Instant::now() < deadline, "{what}: not within {timeout:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Keeps the leases in the set alive (every `every`, all at once); a lease
/// that is gone is dropped from the set.
struct Renewer {
    leases: Arc<Mutex<BTreeSet<u64>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Renewer {
    fn start(eps: &[String], every: Duration) -> Renewer {
        let leases: Arc<Mutex<BTreeSet<u64>>> = Arc::default();
        let set = leases.clone();
        let eps = eps.to_vec();
        let task = tokio::spawn(async move {
            let mut tick = tokio::time::interval(every);
            loop {
                tick.tick().await;
                let ids: Vec<u64> = set.lock().unwrap().iter().copied().collect();
                let mut jobs = tokio::task::JoinSet::new();
                for id in ids {
                    let eps = eps.clone();
                    jobs.spawn(async move {
                        let r = call_leader(&eps, Duration::from_secs(3), |ch| async move {
                            LockClient::new(ch)
                                .renew(pb::RenewRequest {
                                    lease_id: id,
                                    client_id: 1,
                                    sequence: 1,
                                })
                                .await
                        })
                        .await;
                        (id, matches!(r, Err(ClientError::NotFound { .. })))
                    });
                }
                while let Some(Ok((id, gone))) = jobs.join_next().await {
                    if gone {
                        set.lock().unwrap().remove(&id);
                    }
                }
            }
        });
        Renewer { leases, task }
    }

    fn add(&self, id: u64) {
        self.leases.lock().unwrap().insert(id);
    }

    fn remove(&self, id: u64) {
        self.leases.lock().unwrap().remove(&id);
    }
}

impl Drop for Renewer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// S8, S2, S1 ("16 clients ... a leader change in the middle keeps
/// the order"): 16 waiters are granted in their enqueue order, each exactly
/// once, with strictly growing tokens, although the leader is killed after
/// half of them were served (their streams drop; they re-attach with the same
/// request id and the queue keeps its order).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sixteen_waiters_are_granted_in_enqueue_order_across_a_leader_change() {
    let mut cluster = Cluster::start(3, &[]).await;
    let eps = cluster.api().endpoints;
    let renewer = Renewer::start(&eps, Duration::from_millis(400));
    let (holder, t0) = acquire(&eps, req(100, "q16", 3_000, 0, 0), None)
        .await
        .expect("holder")
        .grant();
    renewer.add(holder);

    let served: Arc<Mutex<Vec<(u64, u64)>>> = Arc::default();
    let mut tasks = Vec::new();
    for i in 0..16u64 {
        let (lease, task) = enqueue(&eps, req(200 + i, "q16", 3_000, 0, 60_000)).await;
        renewer.add(lease);
        let eps2 = eps.clone();
        let served2 = served.clone();
        tasks.push(tokio::spawn(async move {
            let (lease_id, token) = task.await.expect("join").expect("acquire").grant();
            assert_eq!(lease_id, lease);
            served2.lock().unwrap().push((i, token));
            release(&eps2, 200 + i, 2, "q16", lease_id, token)
                .await
                .expect("release");
        }));
    }
    assert_eq!(status(&eps, "q16").await.waiters, 16);
    release(&eps, 100, 2, "q16", holder, t0)
        .await
        .expect("release the holder");

    let half = served.clone();
    until(
        "half of the waiters served",
        Duration::from_secs(20),
        || {
            let n = half.lock().unwrap().len();
            async move { n >= 8 }
        },
    )
    .await;
    let leader = cluster.wait_leader(Duration::from_secs(10)).await;
    cluster.kill(leader);

    for t in tasks {
        tokio::time::timeout(Duration::from_secs(60), t)
            .await
            .expect("every waiter served within 60 s")
            .expect("waiter task");
    }
    let served = served.lock().unwrap().clone();
    let order: Vec<u64> = served.iter().map(|(i, _)| *i).collect();
    assert_eq!(order, (0..16).collect::<Vec<_>>(), "S8: FIFO by enqueue");
    let mut prev = t0;
    for (i, token) in &served {
        assert!(*token > prev, "S2: waiter {i} token {token} > {prev}");
        prev = *token;
    }
}

/// The Acquire stream's contract (warden.proto: `queued` messages, then one
/// final message) under the report throttle
/// (`QUEUE_POSITION_REPORT_INTERVAL`, docs/performance.md "Contended"): the
/// first `queued` message comes at once and names the waiter's lease, each
/// move up the queue is reported, and the grant follows (S8 order).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiter_is_told_each_move_up_the_queue() {
    let cluster = Cluster::start(3, &[]).await;
    let eps = cluster.api().endpoints;
    let renewer = Renewer::start(&eps, Duration::from_millis(400));
    let (holder, t0) = acquire(&eps, req(400, "qpos", 3_000, 0, 0), None)
        .await
        .expect("holder")
        .grant();
    renewer.add(holder);
    let (l1, w1) = enqueue(&eps, req(401, "qpos", 3_000, 0, 60_000)).await;
    let (l2, w2) = enqueue(&eps, req(402, "qpos", 3_000, 0, 60_000)).await;
    renewer.add(l1);
    renewer.add(l2);
    let (tx, mut reports) = mpsc::unbounded_channel();
    let eps3 = eps.clone();
    let w3 =
        tokio::spawn(
            async move { acquire(&eps3, req(403, "qpos", 3_000, 0, 60_000), Some(tx)).await },
        );
    // The next report, within 10 s (the throttle holds one back ≤ 100 ms).
    async fn next(rx: &mut mpsc::UnboundedReceiver<(u64, u64)>) -> (u64, u64) {
        tokio::time::timeout(Duration::from_secs(10), rx.recv())
            .await
            .expect("a queued report within 10 s")
            .expect("stream open")
    }
    let (l3, first) = next(&mut reports).await;
    renewer.add(l3);
    assert_eq!(first, 3, "third in line behind two waiters");

    // Client `client` releases its grant (lease, token); `waiter` is granted
    // next, on `expect_lease`: its token.
    let hand_off = |client,
                    lease,
                    token,
                    waiter: tokio::task::JoinHandle<Result<Outcome, ClientError>>,
                    expect_lease| {
        let eps = eps.clone();
        async move {
            release(&eps, client, 2, "qpos", lease, token)
                .await
                .expect("release");
            let (granted, token) = waiter.await.expect("join").expect("waiter").grant();
            assert_eq!(granted, expect_lease);
            token
        }
    };
    let token = hand_off(400, holder, t0, w1, l1).await;
    assert_eq!(next(&mut reports).await, (l3, 2));
    let token = hand_off(401, l1, token, w2, l2).await;
    assert_eq!(next(&mut reports).await, (l3, 1));
    hand_off(402, l2, token, w3, l3).await;
    assert!(
        reports.try_recv().is_err(),
        "nothing reported after the grant"
    );
}

/// S8 (etcd 3.4.3 Jepsen finding): a waiter whose lease expires while it
/// waits is removed and never granted; the next live waiter is.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waiter_whose_lease_expires_is_never_granted() {
    let cluster = Cluster::start(3, &[]).await;
    let eps = cluster.api().endpoints;
    let renewer = Renewer::start(&eps, Duration::from_millis(300));
    let (holder, token) = acquire(&eps, req(1, "qx", 3_000, 0, 0), None)
        .await
        .expect("holder")
        .grant();
    renewer.add(holder);
    // A: 1 s lease, never renewed. B: renewed.
    let (_a_lease, a) = enqueue(&eps, req(2, "qx", 1_000, 0, 30_000)).await;
    let (b_lease, b) = enqueue(&eps, req(3, "qx", 3_000, 0, 30_000)).await;
    renewer.add(b_lease);

    let a_out = tokio::time::timeout(Duration::from_secs(1) + E + Duration::from_secs(2), a)
        .await
        .expect("A is told within TTL + E")
        .expect("join")
        .expect("acquire A");
    assert!(
        matches!(a_out, Outcome::NotGranted { .. }),
        "S8: A must never be granted: {a_out:?}"
    );
    assert_eq!(status(&eps, "qx").await.waiters, 1, "only B waits");
    release(&eps, 1, 2, "qx", holder, token)
        .await
        .expect("release");
    let (lease, t_b) = tokio::time::timeout(Duration::from_secs(5), b)
        .await
        .expect("B granted")
        .expect("join")
        .expect("acquire B")
        .grant();
    assert_eq!(lease, b_lease, "the next live waiter is granted");
    assert!(t_b > token, "S2");
}

/// S8: a waiter whose timeout passes leaves the queue before it is told
/// (the removal has committed when the stream says `wait_timeout`); a
/// cancelled waiter (its lease revoked) leaves at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn timed_out_waiter_leaves_before_it_is_told_and_cancelled_waiter_at_once() {
    let cluster = Cluster::start(3, &[]).await;
    let eps = cluster.api().endpoints;
    let renewer = Renewer::start(&eps, Duration::from_millis(300));
    let (holder, _) = acquire(&eps, req(1, "qt", 3_000, 0, 0), None)
        .await
        .expect("holder")
        .grant();
    renewer.add(holder);
    let queued_at = Instant::now();
    let (w_lease, w) = enqueue(&eps, req(2, "qt", 3_000, 0, 1_000)).await;
    renewer.add(w_lease);
    let out = tokio::time::timeout(Duration::from_secs(5), w)
        .await
        .expect("told within 5 s")
        .expect("join")
        .expect("acquire");
    assert_eq!(
        out,
        Outcome::NotGranted {
            reason: "wait_timeout".into()
        }
    );
    assert!(
        queued_at.elapsed() >= Duration::from_millis(1_000),
        "not early"
    );
    // Linearizable read right after being told: the removal is committed.
    let s = status(&eps, "qt").await;
    assert_eq!(s.waiters, 0, "S8: removed before it was told");
    assert_eq!(s.holder.map(|h| h.lease_id), Some(holder));

    // Cancel: revoke the waiter's lease; it leaves at once (well within a TTL).
    let (c_lease, c) = enqueue(&eps, req(3, "qt", 3_000, 0, 30_000)).await;
    let t = Instant::now();
    call_leader(&eps, Duration::from_secs(10), |ch| async move {
        LockClient::new(ch)
            .lease_revoke(pb::LeaseRevokeRequest {
                header: header(3, 2),
                lease_id: c_lease,
            })
            .await
    })
    .await
    .expect("revoke");
    let out = tokio::time::timeout(Duration::from_secs(2), c)
        .await
        .expect("told at once")
        .expect("join")
        .expect("acquire");
    assert!(matches!(out, Outcome::NotGranted { .. }), "{out:?}");
    assert!(t.elapsed() < Duration::from_secs(2));
    assert_eq!(status(&eps, "qt").await.waiters, 0);
}

/// S8: a killed client's waiter (the CLI, SIGKILLed while it waits) leaves
/// the queue when its lease expires, and is never granted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_clients_waiter_leaves_when_its_lease_expires() {
    let cluster = Cluster::start(3, &[]).await;
    let eps = cluster.api().endpoints;
    let renewer = Renewer::start(&eps, Duration::from_millis(300));
    let (holder, token) = acquire(&eps, req(1, "qk", 3_000, 0, 0), None)
        .await
        .expect("holder")
        .grant();
    renewer.add(holder);
    let mut child = cluster
        .cli_command(
            "root",
            &[
                "acquire", "qk", "--ttl", "1s", "--wait", "30s", "--output", "json",
            ],
        )
        .arg("--endpoints")
        .arg(cluster.endpoints())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn warden acquire");
    let e2 = eps.clone();
    until("the CLI's wait is queued", Duration::from_secs(10), || {
        let e2 = e2.clone();
        async move { status(&e2, "qk").await.waiters == 1 }
    })
    .await;
    let _ = child.kill();
    let _ = child.wait();
    let killed = Instant::now();
    let e2 = eps.clone();
    until(
        "the dead client's waiter leaves",
        Duration::from_secs(1) + E + Duration::from_secs(2),
        || {
            let e2 = e2.clone();
            async move { status(&e2, "qk").await.waiters == 0 }
        },
    )
    .await;
    assert!(killed.elapsed() < Duration::from_secs(1) + E + Duration::from_secs(2));
    release(&eps, 1, 2, "qk", holder, token)
        .await
        .expect("release");
    assert!(
        status(&eps, "qk").await.holder.is_none(),
        "S8: the dead waiter was not granted"
    );
}

/// S8 ("expiring a session with 100 locks frees them all in one
/// committed entry and grants their waiters"), S2: one lease holds 100
/// locks; another lease waits on all 100; when the first expires, all 100
/// grants come from one entry, with distinct, larger tokens.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn expiring_a_session_with_100_locks_hands_all_off_in_one_entry() {
    let cluster = Cluster::start(3, &[]).await;
    let eps = cluster.api().endpoints;
    let renewer = Renewer::start(&eps, Duration::from_millis(300));
    let name = |i: usize| format!("s/{i:03}");
    let (session, first) = acquire(&eps, req(1, &name(0), 2_000, 0, 0), None)
        .await
        .expect("session")
        .grant();
    renewer.add(session);
    let mut max_token = first;
    for i in 1..100 {
        let mut r = req(1, &name(i), 0, session, 0);
        r.header = header(1, i as u64 + 1);
        let (_, t) = acquire(&eps, r, None).await.expect("lock").grant();
        max_token = max_token.max(t);
    }
    let (waiter, _) = acquire(&eps, req(2, "w/anchor", 3_000, 0, 0), None)
        .await
        .expect("waiter lease")
        .grant();
    renewer.add(waiter);
    let mut tasks = Vec::new();
    for i in 0..100 {
        let mut r = req(2, &name(i), 0, waiter, 30_000);
        r.header = header(2, i as u64 + 2);
        let (lease, task) = enqueue(&eps, r).await;
        assert_eq!(lease, waiter);
        tasks.push(task);
    }
    // Stop renewing the session: it expires.
    renewer.remove(session);
    let mut indexes = BTreeSet::new();
    let mut tokens = BTreeSet::new();
    for t in tasks {
        match tokio::time::timeout(Duration::from_secs(2) + E + Duration::from_secs(5), t)
            .await
            .expect("granted after the session expired")
            .expect("join")
            .expect("acquire")
        {
            Outcome::Granted {
                lease_id,
                token,
                log_index,
            } => {
                assert_eq!(lease_id, waiter);
                assert!(token > max_token, "S2: {token} > {max_token}");
                tokens.insert(token);
                indexes.insert(log_index);
            }
            other => panic!("expected a grant, got {other:?}"),
        }
    }
    assert_eq!(tokens.len(), 100, "S2: distinct tokens");
    assert_eq!(indexes.len(), 1, "one committed entry: {indexes:?}");
}

/// Lock-delay (Chubby, Consul): after an expiry nobody gets
/// the lock for `lock_delay` (a try-lock meanwhile is told `lock_delay`);
/// after a clean release the next waiter gets it at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lock_delay_after_expiry_but_not_after_a_clean_release() {
    let cluster = Cluster::start(3, &[]).await;
    let eps = cluster.api().endpoints;
    let renewer = Renewer::start(&eps, Duration::from_millis(300));
    // Expiry: a 1 s lease with a 2 s lock-delay, never renewed.
    let mut r = req(1, "ld", 1_000, 0, 0);
    r.lock_delay_ms = 2_000;
    let (_, t1) = acquire(&eps, r, None).await.expect("holder").grant();
    let (b_lease, b) = enqueue(&eps, req(2, "ld", 3_000, 0, 30_000)).await;
    renewer.add(b_lease);
    let e2 = eps.clone();
    until(
        "the holder expires",
        Duration::from_secs(1) + E + Duration::from_secs(1),
        || {
            let e2 = e2.clone();
            async move { status(&e2, "ld").await.holder.is_none() }
        },
    )
    .await;
    let freed = Instant::now();
    match acquire(&eps, req(3, "ld", 3_000, 0, 0), None)
        .await
        .expect("try")
    {
        Outcome::NotGranted { reason } => assert_eq!(reason, "lock_delay"),
        other => panic!("granted during lock-delay: {other:?}"),
    }
    let (lease, t2) = tokio::time::timeout(Duration::from_secs(10), b)
        .await
        .expect("granted after the delay")
        .expect("join")
        .expect("acquire")
        .grant();
    let waited = freed.elapsed();
    assert_eq!(lease, b_lease);
    assert!(t2 > t1, "S2");
    // `freed` is observed after the expiry applied (one poll late at most).
    assert!(
        waited >= Duration::from_millis(1_800),
        "lock-delay shortened: granted {waited:?} after the expiry"
    );

    // Clean release: no delay even though the grant asked for one.
    let (c_lease, c) = enqueue(&eps, {
        let mut r = req(4, "ld", 3_000, 0, 30_000);
        r.lock_delay_ms = 2_000;
        r
    })
    .await;
    renewer.add(c_lease);
    let released = Instant::now();
    release(&eps, 2, 2, "ld", b_lease, t2)
        .await
        .expect("release");
    let (lease, _) = tokio::time::timeout(Duration::from_secs(5), c)
        .await
        .expect("granted")
        .expect("join")
        .expect("acquire")
        .grant();
    assert_eq!(lease, c_lease);
    assert!(
        released.elapsed() < Duration::from_millis(1_000),
        "a clean release hands off at once: {:?}",
        released.elapsed()
    );
}

/// Lock-delay is visible (docs/semantics.md "Words", lock-delay): while a
/// resource is in its lock-delay after an expiry, `warden status` (JSON and
/// text), `warden list`, a try-lock's refusal and a waiting acquire's queue
/// message each say so, with a time left in (0, lock-delay]; the waiter is
/// granted once it ends. A newcomer saw `"R" is free`, `no holder (reason:
/// lock_delay)` and `queued behind the holder` when there was no holder.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lock_delay_is_shown_by_status_list_refusal_and_queue() {
    let cluster = Cluster::start(3, &[]).await;
    let eps = cluster.api().endpoints;
    let text = |args: &[&str]| {
        let out = cluster
            .cli_command("root", args)
            .arg("--endpoints")
            .arg(cluster.endpoints())
            .stdin(Stdio::null())
            .output()
            .expect("run warden cli");
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).to_string(),
            String::from_utf8_lossy(&out.stderr).to_string(),
        )
    };
    let in_delay = |v: &serde_json::Value| v.as_u64().is_some_and(|ms| ms > 0 && ms <= 5_000);
    // A 1 s lease with a 5 s lock-delay; the CLI does not keep it alive.
    let (code, held, err) = cluster.cli(&["acquire", "ldv", "--ttl", "1s", "--lock-delay", "5s"]);
    assert_eq!(code, 0, "{err}");
    let holder = held["lease_id"].as_u64().expect("lease");
    let fresh = status(&eps, "ldv").await;
    assert_eq!(
        (
            fresh.holder.map(|h| h.lease_id),
            fresh.lock_delay_remaining_ms
        ),
        (Some(holder), 0),
        "held: no lock-delay"
    );
    let e2 = eps.clone();
    until(
        "the holder expires into its lock-delay",
        Duration::from_secs(2) + E + Duration::from_secs(1),
        || {
            let e2 = e2.clone();
            async move {
                let s = status(&e2, "ldv").await;
                s.holder.is_none() && s.lock_delay_remaining_ms > 0
            }
        },
    )
    .await;

    let (code, st, err) = cluster.cli(&["status", "ldv"]);
    assert_eq!(code, 0, "{err}");
    assert!(st["holder"].is_null(), "{st}");
    assert!(in_delay(&st["lock_delay_remaining_ms"]), "{st}");

    let (code, refused, err) = cluster.cli(&["acquire", "ldv", "--ttl", "3s"]);
    assert_eq!(code, 2, "{err}");
    assert_eq!(refused["reason"], "lock_delay", "{refused}");
    assert!(in_delay(&refused["lock_delay_remaining_ms"]), "{refused}");
    assert!(
        err.contains("not granted: \"ldv\" is in its lock-delay (") && err.contains(" left)"),
        "{err}"
    );

    let (code, out, err) = text(&["status", "ldv"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.starts_with("\"ldv\" is free (lock-delay: ") && out.contains(" left"),
        "{out}"
    );
    let (code, listed, err) = cluster.cli(&["list", "ldv"]);
    assert_eq!(code, 0, "{err}");
    assert!(in_delay(&listed[0]["lock_delay_remaining_ms"]), "{listed}");
    let (code, out, err) = text(&["list", "ldv"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.starts_with("\"ldv\": free (lock-delay: "), "{out}");

    // A waiter queues behind the lock-delay, and is granted when it ends.
    let (code, granted, err) = cluster.cli(&["acquire", "ldv", "--ttl", "3s", "--wait", "30s"]);
    assert_eq!(code, 0, "{err}");
    assert!(granted["fencing_token"].as_u64().is_some(), "{granted}");
    assert!(
        err.contains("queued behind the lock-delay (") && err.contains("left): position 1"),
        "{err}"
    );
}

/// Lock-delay, docs/semantics.md "Time" ("a leader change in between does
/// not shorten the delay"): the leader is killed right after the expiry; the
/// new leader ends the delay no earlier than its own apply + lock_delay.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leader_change_does_not_shorten_lock_delay() {
    let mut cluster = Cluster::start(3, &[]).await;
    let eps = cluster.api().endpoints;
    let renewer = Renewer::start(&eps, Duration::from_millis(300));
    let mut r = req(1, "ldl", 1_000, 0, 0);
    r.lock_delay_ms = 3_000;
    acquire(&eps, r, None).await.expect("holder").grant();
    let (b_lease, b) = enqueue(&eps, req(2, "ldl", 3_000, 0, 30_000)).await;
    renewer.add(b_lease);
    let e2 = eps.clone();
    until(
        "the holder expires",
        Duration::from_secs(1) + E + Duration::from_secs(1),
        || {
            let e2 = e2.clone();
            async move { status(&e2, "ldl").await.holder.is_none() }
        },
    )
    .await;
    let freed = Instant::now();
    let leader = cluster.wait_leader(Duration::from_secs(5)).await;
    cluster.kill(leader);
    let (lease, _) = tokio::time::timeout(Duration::from_secs(20), b)
        .await
        .expect("granted after the delay")
        .expect("join")
        .expect("acquire")
        .grant();
    let waited = freed.elapsed();
    assert_eq!(lease, b_lease);
    assert!(
        waited >= Duration::from_millis(2_700),
        "lock-delay shortened by the leader change: granted {waited:?} after the expiry"
    );
}

/// S2: `warden list` shows the holder and the waiters in
/// queue order with the JSON contract; `warden release --force` (with
/// admin on "", as root) frees the resource, the next waiter's grant has a larger
/// token, and `warden audit` shows who did it; a request above
/// --max-request-bytes is refused before any handler.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn force_release_is_audited_and_the_next_token_is_larger() {
    let cluster = Cluster::start(3, &["--max-request-bytes", "4096"]).await;
    let eps = cluster.api().endpoints;
    let renewer = Renewer::start(&eps, Duration::from_millis(300));
    let (holder, token) = acquire(&eps, req(1, "adm/a", 3_000, 0, 0), None)
        .await
        .expect("holder")
        .grant();
    renewer.add(holder);
    let (w1, t1) = enqueue(&eps, req(2, "adm/a", 3_000, 0, 30_000)).await;
    let (w2, t2) = enqueue(&eps, req(3, "adm/a", 3_000, 0, 30_000)).await;
    renewer.add(w1);
    renewer.add(w2);
    acquire(&eps, req(4, "other", 3_000, 0, 0), None)
        .await
        .expect("other")
        .grant();

    let (code, list, err) = cluster.cli(&["list", "adm/"]);
    assert_eq!(code, 0, "{err}");
    let locks = list.as_array().expect("an array");
    assert_eq!(locks.len(), 1, "prefix filter: {list}");
    assert_eq!(locks[0]["resource"], "adm/a");
    assert_eq!(locks[0]["holder"]["lease_id"].as_u64(), Some(holder));
    assert_eq!(locks[0]["holder"]["fencing_token"].as_u64(), Some(token));
    assert!(locks[0]["holder"]["age_ms"].is_u64());
    let ttl_left = locks[0]["holder"]["ttl_remaining_ms"]
        .as_u64()
        .expect("ttl");
    assert!(ttl_left > 0 && ttl_left <= 3_000, "{ttl_left}");
    let waiters: Vec<u64> = locks[0]["waiters"]
        .as_array()
        .expect("waiters")
        .iter()
        .map(|w| w["lease_id"].as_u64().expect("lease_id"))
        .collect();
    assert_eq!(waiters, vec![w1, w2], "queue order");
    assert!(locks[0]["waiters"][0]["age_ms"].as_u64() >= locks[0]["waiters"][1]["age_ms"].as_u64());
    let (_, all, _) = cluster.cli(&["list"]);
    assert_eq!(all.as_array().map(Vec::len), Some(2));

    let (code, j, err) = cluster.cli(&["release", "--force", "adm/a"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(j["lease_id"].as_u64(), Some(holder));
    assert_eq!(j["fencing_token"].as_u64(), Some(token));
    let (lease, next) = tokio::time::timeout(Duration::from_secs(5), t1)
        .await
        .expect("next waiter granted")
        .expect("join")
        .expect("acquire")
        .grant();
    assert_eq!(lease, w1);
    assert!(next > token, "S2: {next} > {token}");
    t2.abort();

    let (code, audit, err) = cluster.cli(&["audit"]);
    assert_eq!(code, 0, "{err}");
    let records = audit.as_array().expect("an array");
    assert_eq!(records.len(), 1, "{audit}");
    assert_eq!(records[0]["resource"], "adm/a");
    assert_eq!(records[0]["lease_id"].as_u64(), Some(holder));
    assert_eq!(records[0]["fencing_token"].as_u64(), Some(token));
    assert!(records[0]["index"].as_u64() > Some(0));
    assert!(
        records[0]["requested_by"]
            .as_str()
            .is_some_and(|s| s.starts_with("root (")
                && s.contains("--force")
                && s.contains("127.0.0.1")),
        "who asked is the caller's principal, then its text: {audit}"
    );
    assert!(records[0]["at_unix_ms"].as_u64() > Some(1_600_000_000_000));

    // A second force-release of a free resource: NotFound, exit 1.
    let (code, _, err) = cluster.cli(&["release", "--force", "adm/none"]);
    assert_eq!(code, 1);
    assert!(err.contains("not found"), "{err}");

    // "What bad input gets": a request above --max-request-bytes (4096) is refused
    // before it reaches a handler.
    let big = "x".repeat(8_192);
    let e = call_leader(&eps, Duration::from_secs(10), |ch| {
        let prefix = big.clone();
        let mut c = AdminClient::new(ch);
        async move { c.list(pb::ListRequest { prefix }).await }
    })
    .await
    .expect_err("too large");
    // OutOfRange, mapped by the client like InvalidArgument.
    match &e {
        ClientError::InvalidArgument { message, .. } => {
            assert!(message.contains("too large"), "{message}")
        }
        other => panic!("expected InvalidArgument (OutOfRange), got {other:?}"),
    }
}

/// docs/operations.md: an insecure node started without --allow-admin
/// refuses force-release with a clear PermissionDenied and nothing changes;
/// List still works. (With certificates, `admin` decides instead.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn force_release_without_allow_admin_is_refused() {
    let cluster = Cluster::start_insecure(3, &[]).await;
    let eps = cluster.api().endpoints;
    let (holder, token) = acquire(&eps, req(1, "na", 5_000, 0, 0), None)
        .await
        .expect("holder")
        .grant();
    let (code, j, err) = cluster.cli(&["release", "--force", "na"]);
    assert_eq!(code, 1, "{j}");
    assert!(
        err.contains("permission denied") && err.contains("--allow-admin"),
        "{err}"
    );
    let h = status(&eps, "na").await.holder.expect("still held");
    assert_eq!((h.lease_id, h.fencing_token), (holder, token));
    let (code, audit, _) = cluster.cli(&["audit"]);
    assert_eq!(code, 0);
    assert_eq!(audit, serde_json::json!([]));
    let (code, list, _) = cluster.cli(&["list"]);
    assert_eq!(code, 0);
    assert_eq!(list[0]["holder"]["lease_id"].as_u64(), Some(holder));
    assert_eq!(list[0]["waiters"], serde_json::json!([]));
}

/// A `Calls` answer: (call_id, the answer).
type CallAnswer = (u64, pb::call_response::Answer);

/// The lease id of call `id`'s `queued` report among `seen`.
fn queued_lease(seen: &[CallAnswer], id: u64) -> u64 {
    seen.iter()
        .find_map(|(i, a)| match a {
            pb::call_response::Answer::Acquire(pb::AcquireResponse {
                event: Some(Event::Queued(q)),
            }) if *i == id => Some(q.lease_id),
            _ => None,
        })
        .unwrap_or_else(|| panic!("call {id} queued: {seen:?}"))
}

/// The (lease id, fencing token) of call `id`'s grant among `seen`.
fn granted_to(seen: &[CallAnswer], id: u64) -> (u64, u64) {
    seen.iter()
        .find_map(|(i, a)| match a {
            pb::call_response::Answer::Acquire(pb::AcquireResponse {
                event: Some(Event::Granted(g)),
            }) if *i == id => Some((g.lease_id, g.fencing_token)),
            _ => None,
        })
        .unwrap_or_else(|| panic!("call {id} granted: {seen:?}"))
}

/// Reads `Calls` answers until `done` says the collected ones suffice (at
/// most 10 s).
async fn call_answers(
    answers: &mut tonic::Streaming<pb::CallResponse>,
    done: impl Fn(&[CallAnswer]) -> bool,
) -> Vec<CallAnswer> {
    let mut seen = Vec::new();
    while !done(&seen) {
        let message = tokio::time::timeout(Duration::from_secs(10), answers.message())
            .await
            .unwrap_or_else(|_| panic!("no answer within 10 s; so far {seen:?}"))
            .expect("stream")
            .expect("stream ended early");
        seen.push((message.call_id, message.answer.expect("an answer")));
    }
    seen
}

/// Opens a `Calls` stream to `addr`; returns where to send calls and the
/// answers. `what` names the node in a failure.
async fn open_calls(
    addr: &str,
    what: &str,
) -> (
    mpsc::UnboundedSender<pb::CallRequest>,
    tonic::Streaming<pb::CallResponse>,
) {
    let (tx, rx) = mpsc::unbounded_channel();
    let channel = harness::channel(addr, None).await.expect("channel");
    let answers = LockClient::new(channel)
        .calls(tokio_stream::wrappers::UnboundedReceiverStream::new(rx))
        .await
        .unwrap_or_else(|e| panic!("{what}: {e}"))
        .into_inner();
    (tx, answers)
}

fn call(call_id: u64, call: pb::call_request::Call) -> pb::CallRequest {
    pb::CallRequest {
        call_id,
        call: Some(call),
    }
}

/// The `Calls` stream's contract (warden.proto), with real processes: calls
/// are answered by id; a bad call (empty resource, call_id 0) gets its own
/// InvalidArgument naming the field and leaves the stream and the other calls
/// running; a waiter on the stream is told `queued` and is granted at the
/// holder's release with a larger token (S8, S2); a follower answers each call
/// with Unavailable naming the leader (L3 redirects).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_stream_answers_by_id_and_a_bad_call_leaves_it_running() {
    use pb::call_request::Call;
    use pb::call_response::Answer;

    let cluster = Cluster::start(3, &[]).await;
    let leader = cluster.wait_leader(Duration::from_secs(10)).await;
    let (tx, mut answers) = open_calls(&cluster.addr(leader), "Calls on the leader").await;

    tx.send(call(1, Call::Acquire(req(301, "calls-r", 5_000, 0, 0))))
        .unwrap();
    tx.send(call(2, Call::Acquire(req(302, "", 5_000, 0, 0))))
        .unwrap();
    tx.send(call(0, Call::Acquire(req(303, "calls-s", 5_000, 0, 0))))
        .unwrap();
    tx.send(call(
        3,
        Call::Acquire(req(304, "calls-r", 5_000, 0, 10_000)),
    ))
    .unwrap();
    let first = call_answers(&mut answers, |seen| {
        [0, 1, 2, 3]
            .iter()
            .all(|id| seen.iter().any(|(i, _)| i == id))
    })
    .await;
    let answer = |id: u64| {
        first
            .iter()
            .find(|(i, _)| *i == id)
            .map(|(_, a)| a.clone())
            .unwrap()
    };
    let (holder, t1) = match answer(1) {
        Answer::Acquire(pb::AcquireResponse {
            event: Some(Event::Granted(g)),
        }) => (g.lease_id, g.fencing_token),
        other => panic!("call 1: expected a grant, got {other:?}"),
    };
    match answer(2) {
        Answer::Error(e) => {
            assert_eq!(e.code, Code::InvalidArgument as i32);
            assert!(e.message.starts_with("resource:"), "{}", e.message);
        }
        other => panic!("call 2: expected InvalidArgument, got {other:?}"),
    }
    match answer(0) {
        Answer::Error(e) => {
            assert_eq!(e.code, Code::InvalidArgument as i32);
            assert!(e.message.starts_with("call_id:"), "{}", e.message);
        }
        other => panic!("call 0: expected InvalidArgument, got {other:?}"),
    }
    let waiter = match answer(3) {
        Answer::Acquire(pb::AcquireResponse {
            event: Some(Event::Queued(q)),
        }) => {
            assert_eq!(q.position, 1);
            q.lease_id
        }
        other => panic!("call 3: expected queued, got {other:?}"),
    };
    assert_eq!(
        status(&cluster.api().endpoints, "calls-s").await.holder,
        None,
        "the call with id 0 changed nothing"
    );

    // The holder's release (call 4) hands the resource to call 3's waiter.
    tx.send(call(
        4,
        Call::Release(pb::ReleaseRequest {
            header: header(301, 2),
            resource: "calls-r".into(),
            lease_id: holder,
            fencing_token: t1,
        }),
    ))
    .unwrap();
    let rest = call_answers(&mut answers, |seen| {
        seen.iter().any(|(i, _)| *i == 4)
            && seen.iter().any(|(i, a)| {
                *i == 3
                    && !matches!(
                        a,
                        Answer::Acquire(pb::AcquireResponse {
                            event: Some(Event::Queued(_))
                        })
                    )
            })
    })
    .await;
    for (id, answer) in rest {
        match (id, answer) {
            (4, Answer::Release(r)) => assert!(r.released && r.lease_id == holder, "{r:?}"),
            (
                3,
                Answer::Acquire(pb::AcquireResponse {
                    event: Some(Event::Queued(_)),
                }),
            ) => {}
            (
                3,
                Answer::Acquire(pb::AcquireResponse {
                    event: Some(Event::Granted(g)),
                }),
            ) => {
                assert_eq!(g.lease_id, waiter);
                assert!(g.fencing_token > t1, "S2: {} > {t1}", g.fencing_token);
            }
            other => panic!("unexpected answer {other:?}"),
        }
    }

    // A follower answers in-band with the leader's address.
    let follower = (1..=3).find(|id| *id != leader).unwrap();
    let (ftx, mut fanswers) = open_calls(&cluster.addr(follower), "Calls on a follower").await;
    ftx.send(call(7, Call::Acquire(req(305, "calls-t", 5_000, 0, 0))))
        .unwrap();
    let seen = call_answers(&mut fanswers, |seen| !seen.is_empty()).await;
    match &seen[0] {
        (7, Answer::Error(e)) => {
            assert_eq!(e.code, Code::Unavailable as i32, "{e:?}");
            assert_eq!(e.leader, cluster.addr(leader));
        }
        other => panic!("follower: expected Unavailable naming the leader, got {other:?}"),
    }
}

/// Request size limit over `Calls` (docs/operations.md): an
/// acquire above --max-request-bytes is refused to its caller alone, at once,
/// as the unary call refuses it (OutOfRange, not retried), and a waiter
/// queued on the same client's stream is still granted with a larger token
/// at the holder's release (S8, S2). The stream used to die with the
/// oversized message and the client re-sent it until its deadline.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_oversized_call_is_refused_alone_and_the_stream_keeps_serving() {
    use warden_client::{AcquireOptions, AcquireResult, Client};

    let cluster = Cluster::start(3, &["--max-request-bytes", "4096"]).await;
    cluster.wait_leader(Duration::from_secs(10)).await;
    let client = Client::connect(cluster.api().endpoints, cluster.client_options())
        .await
        .expect("client");
    let ttl = Duration::from_secs(10);
    let (holder, t1) = match client
        .acquire("calls-big", AcquireOptions::with_ttl(ttl))
        .await
        .expect("holder")
    {
        AcquireResult::Granted {
            lease_id,
            fencing_token,
            ..
        } => (lease_id, fencing_token),
        other => panic!("expected a grant, got {other:?}"),
    };
    let (queued_tx, mut queued_rx) = mpsc::unbounded_channel();
    let waiter = {
        let client = client.clone();
        tokio::spawn(async move {
            let options = AcquireOptions {
                wait: Duration::from_secs(20),
                ..AcquireOptions::with_ttl(ttl)
            };
            client
                .acquire_with_progress("calls-big", options, move |q| {
                    let _ = queued_tx.send(q.lease_id);
                })
                .await
        })
    };
    let waiter_lease = tokio::time::timeout(Duration::from_secs(10), queued_rx.recv())
        .await
        .expect("queued within 10 s")
        .expect("a queued report");

    let big = "x".repeat(8_192);
    let e = tokio::time::timeout(
        Duration::from_secs(3),
        client.acquire(big, AcquireOptions::with_ttl(ttl)),
    )
    .await
    .expect("refused without retrying until the deadline")
    .expect_err("too large");
    match &e {
        ClientError::InvalidArgument { message, .. } => {
            assert!(message.contains("too large"), "{message}")
        }
        other => panic!("expected InvalidArgument (OutOfRange), got {other:?}"),
    }

    let released = client
        .release(holder, Some("calls-big".into()), Some(t1))
        .await
        .expect("release");
    assert!(released.released);
    match tokio::time::timeout(Duration::from_secs(10), waiter)
        .await
        .expect("waiter answered within 10 s")
        .expect("join")
        .expect("waiter acquire")
    {
        AcquireResult::Granted {
            lease_id,
            fencing_token,
            ..
        } => {
            assert_eq!(lease_id, waiter_lease);
            assert!(fencing_token > t1, "S2: {fencing_token} > {t1}");
        }
        other => panic!("waiter: expected a grant, got {other:?}"),
    }
}

/// Request size limit on `Calls` (docs/operations.md), for a client other
/// than warden-client: a message over --max-request-bytes ends the stream
/// with OutOfRange, also while a waiter queued on it holds it open; the
/// waiter stays queued (a dropped stream is not a cancel, S8). The node used
/// to stop reading and leave the stream open, unread, for the whole wait.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreadable_calls_stream_ends_with_its_status_and_the_waiter_stays() {
    use pb::call_request::Call;

    let cluster = Cluster::start(3, &["--max-request-bytes", "4096"]).await;
    let leader = cluster.wait_leader(Duration::from_secs(10)).await;
    let (tx, mut answers) = open_calls(&cluster.addr(leader), "Calls on the leader").await;
    tx.send(call(1, Call::Acquire(req(311, "calls-u", 10_000, 0, 0))))
        .unwrap();
    tx.send(call(
        2,
        Call::Acquire(req(312, "calls-u", 10_000, 0, 30_000)),
    ))
    .unwrap();
    let seen = call_answers(&mut answers, |seen| {
        [1, 2].iter().all(|id| seen.iter().any(|(i, _)| i == id))
    })
    .await;
    let waiter = queued_lease(&seen, 2);

    tx.send(call(
        3,
        Call::Acquire(req(313, &"x".repeat(8_192), 10_000, 0, 0)),
    ))
    .unwrap();
    let end = loop {
        match tokio::time::timeout(Duration::from_secs(10), answers.message())
            .await
            .expect("the stream ended within 10 s")
        {
            Ok(Some(m)) => assert_eq!(m.call_id, 2, "only the waiter reports: {m:?}"),
            Ok(None) => panic!("the stream ended without a status"),
            Err(status) => break status,
        }
    };
    assert_eq!(end.code(), Code::OutOfRange, "{end:?}");
    assert!(end.message().contains("too large"), "{end:?}");
    assert_eq!(
        status(&cluster.api().endpoints, "calls-u").await.waiters,
        1,
        "the waiter is still queued"
    );
    let (code, list, err) = cluster.cli(&["list", "calls-u"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(list[0]["waiters"][0]["lease_id"].as_u64(), Some(waiter));
}

/// Graceful stop with `Calls` (docs/operations.md, rolling restarts): a
/// SIGTERM'd node ends its open `Calls` streams with Unavailable, so clients
/// retry elsewhere at once. A client never ends its stream, and the server's
/// graceful stop waited for it until its 2 s cut-off, then the process exited
/// under the stream (a node with one connected client took 2 s to stop, not
/// 20 ms).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopping_node_ends_its_calls_streams_with_unavailable() {
    use pb::call_request::Call;
    use pb::call_response::Answer;

    let mut cluster = Cluster::start(3, &[]).await;
    let leader = cluster.wait_leader(Duration::from_secs(10)).await;
    let follower = (1..=3).find(|id| *id != leader).unwrap();
    let (tx, mut answers) = open_calls(&cluster.addr(follower), "Calls on a follower").await;
    tx.send(call(1, Call::Acquire(req(321, "calls-stop", 5_000, 0, 0))))
        .unwrap();
    let seen = call_answers(&mut answers, |seen| !seen.is_empty()).await;
    assert!(
        matches!(&seen[0], (1, Answer::Error(e)) if e.code == Code::Unavailable as i32),
        "the stream is up: {seen:?}"
    );
    let end = tokio::spawn(async move {
        let end = tokio::time::timeout(Duration::from_secs(20), answers.message())
            .await
            .expect("the stream ended");
        drop(tx);
        end
    });
    tokio::task::block_in_place(|| cluster.terminate(follower, Duration::from_secs(10)));
    match end.await.expect("join") {
        Err(status) => {
            assert_eq!(status.code(), Code::Unavailable, "{status:?}");
            assert!(status.message().contains("shutting down"), "{status:?}");
        }
        Ok(other) => panic!("expected the stream to end with Unavailable, got {other:?}"),
    }
}

/// HTTP/2 keep-alive (docs/operations.md) and S8: a client that answers the
/// node's pings keeps its idle connection; one that vanishes silently (the
/// network black-holes) loses it within keep-alive interval + timeout,
/// instead of holding the node's connection and stream tasks until TCP gives
/// up, and its waiter stays queued (a dropped stream cancels no waiter) and
/// is granted at the holder's release with a larger token (S2). Insecure:
/// the proxy counts the node's PING frames, which TLS would hide.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_vanished_clients_connection_is_closed_and_its_waiter_stays() {
    use crate::harness::proxy::{Mode, Proxy};
    use pb::call_request::Call;

    let cluster = Cluster::start_insecure(
        3,
        &[
            "--grpc-keepalive-interval",
            "1s",
            "--grpc-keepalive-timeout",
            "1s",
        ],
    )
    .await;
    let leader = cluster.wait_leader(Duration::from_secs(10)).await;
    let eps = cluster.api().endpoints;
    let proxy = Proxy::start(&cluster.addr(leader)).await;
    let (tx, mut answers) = open_calls(&proxy.addr, "Calls through the proxy").await;
    tx.send(call(1, Call::Acquire(req(331, "calls-ka", 30_000, 0, 0))))
        .unwrap();
    tx.send(call(
        2,
        Call::Acquire(req(332, "calls-ka", 30_000, 0, 60_000)),
    ))
    .unwrap();
    let seen = call_answers(&mut answers, |seen| {
        [1, 2].iter().all(|id| seen.iter().any(|(i, _)| i == id))
    })
    .await;
    let (holder, t1) = granted_to(&seen, 1);
    let waiter = queued_lease(&seen, 2);

    // Idle but answering: the node pings again only after the client's ACK
    // of the last ping, so a second ping means the first was answered.
    let pings = proxy.pings_from_node();
    until(
        "the node pings the idle client twice",
        Duration::from_secs(10),
        || {
            let now = proxy.pings_from_node();
            async move { now >= pings + 2 }
        },
    )
    .await;
    assert_eq!(proxy.closed_by_node(), 0, "an answering client stays");

    proxy.set(Mode::Blackhole);
    let cut_at = Instant::now();
    until(
        "the node closes the silent client's connection",
        Duration::from_secs(10),
        || {
            let closed = proxy.closed_by_node();
            async move { closed == 1 }
        },
    )
    .await;
    println!("closed {:?} after the black-hole", cut_at.elapsed());

    let st = status(&eps, "calls-ka").await;
    assert_eq!(st.holder.map(|h| h.lease_id), Some(holder));
    assert_eq!(st.waiters, 1, "S8: the waiter is still queued");
    release(&eps, 331, 2, "calls-ka", holder, t1)
        .await
        .expect("release");
    until("the waiter is granted", Duration::from_secs(10), || async {
        status(&eps, "calls-ka")
            .await
            .holder
            .is_some_and(|h| h.lease_id == waiter)
    })
    .await;
    let st = status(&eps, "calls-ka").await;
    let token = st.holder.expect("holder").fencing_token;
    assert!(token > t1, "S2: {token} > {t1}");
    drop(tx);
}

// S2, S7 with packed entries (one log format: a batch shares one stamp):
// 32 concurrent acquires of distinct resources, packed or not, are each
// granted exactly once, with 32 distinct fencing tokens.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_acquires_are_each_granted_once_with_distinct_tokens() {
    let cluster = Cluster::start(3, &[]).await;
    let api = cluster.api();
    let mut jobs = tokio::task::JoinSet::new();
    for i in 0..32u64 {
        let api = api.clone();
        jobs.spawn(async move { api.acquire(300 + i, 1, &format!("pack-{i}"), 30_000).await });
    }
    let mut tokens = BTreeSet::new();
    while let Some(r) = jobs.join_next().await {
        match r.expect("join").expect("acquire") {
            harness::Final::Granted { fencing_token, .. } => {
                assert!(tokens.insert(fencing_token), "token {fencing_token} twice");
            }
            other => panic!("a free resource was not granted: {other:?}"),
        }
    }
    assert_eq!(tokens.len(), 32);
}
