//! The Rust client's side of the client conformance suite
//! (`clients/conformance/scenarios.md`), through `warden_client` against
//! real processes. Each test carries its scenario's marker; C05, C06 and
//! C07 are the session tests in `session.rs` (marked there).

use std::time::{Duration, Instant};

use tonic_health::pb::health_check_response::ServingStatus;
use tonic_health::pb::health_client::HealthClient;
use tonic_health::pb::HealthCheckRequest;
use tonic_reflection::pb::v1::server_reflection_client::ServerReflectionClient;
use tonic_reflection::pb::v1::server_reflection_request::MessageRequest;
use tonic_reflection::pb::v1::server_reflection_response::MessageResponse;
use tonic_reflection::pb::v1::ServerReflectionRequest;
use warden_client::{AcquireOptions, AcquireResult, ClientError, NotGrantedReason, WatchTarget};
use warden_tls::ClientTls;

use crate::harness::{certs, Cluster};

/// Polls `resource`'s status (as root) until `done` holds, within 10 s.
async fn until_status(
    client: &warden_client::Client,
    resource: &str,
    what: &str,
    done: impl Fn(&warden_client::StatusResult) -> bool,
) -> warden_client::StatusResult {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let st = client.status(resource).await.expect("status");
        if done(&st) {
            return st;
        }
        assert!(
            Instant::now() < deadline,
            "{resource}: never {what}: {st:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// conformance: C11-abandoned-wait-leaves-no-waiter. S8: a caller that
/// drops its waiting `Session::lock` future takes its wait back (the client
/// sends a committed CancelWait): the queue empties while the holder still
/// holds, the holder's release then leaves the resource free (nobody is
/// granted behind it), and the waiter's session holds and waits on
/// nothing, although its keep-alive keeps its lease alive.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_abandoned_session_lock_leaves_no_waiter() {
    let cluster = Cluster::start(3, &[]).await;
    let holder = cluster.client_as("root").await;
    let warden_client::AcquireResult::Granted {
        lease_id: holder_lease,
        fencing_token,
        ..
    } = holder
        .acquire("c11-r", AcquireOptions::with_ttl(Duration::from_secs(30)))
        .await
        .expect("holder acquires")
    else {
        panic!("the holder is not granted");
    };

    let waiter = cluster.client_as("root").await;
    let session = waiter
        .session(Duration::from_secs(10))
        .await
        .expect("session");
    let waiting = {
        let session = session.clone();
        tokio::spawn(async move { session.lock("c11-r").await })
    };
    until_status(&holder, "c11-r", "one waiter", |st| st.waiters == 1).await;
    waiting.abort();
    assert!(waiting.await.expect_err("aborted").is_cancelled());

    let st = until_status(&holder, "c11-r", "an empty queue", |st| st.waiters == 0).await;
    assert_eq!(
        st.holder.as_ref().map(|h| (h.lease_id, h.fencing_token)),
        Some((holder_lease, fencing_token)),
        "the holder still holds"
    );
    holder
        .release(holder_lease, Some("c11-r".into()), Some(fencing_token))
        .await
        .expect("release");
    let st = holder.status("c11-r").await.expect("status");
    assert!(
        st.holder.is_none(),
        "nobody was granted behind the cancelled wait: {st:?}"
    );
    let info = waiter
        .lease_time_to_live(session.lease_id())
        .await
        .expect("the waiter's session lives on");
    assert!(info.locks.is_empty() && info.waits.is_empty(), "{info:?}");
    session.close().await.expect("close");
}

/// One reflection request on `channel`: the names of the services listed.
async fn reflected_services(channel: tonic::transport::Channel) -> Vec<String> {
    let mut client = ServerReflectionClient::new(channel);
    let request = ServerReflectionRequest {
        host: String::new(),
        message_request: Some(MessageRequest::ListServices(String::new())),
    };
    let mut answers = client
        .server_reflection_info(tokio_stream::iter([request]))
        .await
        .expect("reflection")
        .into_inner();
    let answer = answers
        .message()
        .await
        .expect("reflection answer")
        .expect("one answer");
    match answer.message_response {
        Some(MessageResponse::ListServicesResponse(list)) => {
            list.service.into_iter().map(|s| s.name).collect()
        }
        other => panic!("not a service list: {other:?}"),
    }
}

/// conformance: C13-grpc-health-and-reflection. docs/operations.md "Health
/// checks": every node of a TLS cluster answers `grpc.health.v1.Health/Check`
/// (service "") with SERVING once it is ready, over TLS without a client
/// certificate (as `grpc_health_probe -tls` asks); the health of a node that
/// has lost its leader is NOT_SERVING until it is ready again; server
/// reflection lists the four public services and not the peer service.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grpc_health_and_reflection_answer_without_a_client_certificate() {
    let mut cluster = Cluster::start(3, &[]).await;
    let anonymous =
        ClientTls::anonymous(&certs().client_dir.join("ca.crt")).expect("the CA bundle");
    let check = |addr: String| {
        let channel = anonymous.channel_lazy(&addr).expect("channel");
        async move {
            HealthClient::new(channel)
                .check(HealthCheckRequest {
                    service: String::new(),
                })
                .await
                .map(|r| r.into_inner().status())
        }
    };
    for id in 1..=3u64 {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            match check(cluster.addr(id)).await {
                Ok(ServingStatus::Serving) => break,
                other => assert!(
                    Instant::now() < deadline,
                    "node {id} never SERVING: {other:?}"
                ),
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    let unknown = HealthClient::new(anonymous.channel_lazy(&cluster.addr(1)).expect("channel"))
        .check(HealthCheckRequest {
            service: "warden.peer.v1.Peer".into(),
        })
        .await
        .expect_err("the peer service has no health of its own");
    assert_eq!(unknown.code(), tonic::Code::NotFound, "{unknown:?}");

    let mut services =
        reflected_services(anonymous.channel_lazy(&cluster.addr(2)).expect("channel")).await;
    services.sort();
    for public in [
        "warden.v1.Admin",
        "warden.v1.Lease",
        "warden.v1.Lock",
        "warden.v1.Watch",
    ] {
        assert!(
            services.iter().any(|s| s == public),
            "{public} not in {services:?}"
        );
    }
    assert!(
        !services.iter().any(|s| s.starts_with("warden.peer")),
        "{services:?}"
    );

    // The leader and another node down: the follower left sees no leader
    // and is not SERVING; it is again once the others are back.
    let leader = cluster.wait_leader(Duration::from_secs(10)).await;
    let survivor = (1..=3u64).find(|id| *id != leader).expect("a follower");
    let others: Vec<u64> = (1..=3u64).filter(|id| *id != survivor).collect();
    for id in &others {
        cluster.kill(*id);
    }
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        if let Ok(ServingStatus::NotServing) = check(cluster.addr(survivor)).await {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "node {survivor} stayed SERVING without a leader"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    for id in &others {
        cluster.spawn(*id);
    }
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Ok(ServingStatus::Serving) = check(cluster.addr(survivor)).await {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "node {survivor} never SERVING again"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A client of the cluster as `root`.
async fn root(cluster: &Cluster) -> warden_client::Client {
    cluster.client_as("root").await
}

/// Options for an acquire on the existing lease `lease_id`, waiting `wait`.
fn on_lease(lease_id: u64, wait: Duration) -> AcquireOptions {
    AcquireOptions {
        ttl: Duration::ZERO,
        lease_id: Some(lease_id),
        wait,
        lock_delay: Duration::ZERO,
        kind: warden_client::GrantKind::Mutex,
        max_hold: None,
    }
}

/// conformance: C01-acquire-renew-release. S3, S4, S6: a session's lock
/// has a token and a lease, Status names them while held; valid_until lies
/// after the lock's send and before send + TTL, and moves forward with a
/// renew; after release the resource is free; closing the session revokes
/// its lease.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn c01_acquire_renew_release() {
    let cluster = Cluster::start(3, &[]).await;
    let client = root(&cluster).await;
    let ttl = Duration::from_secs(5);
    let session = client.session(ttl).await.expect("session");
    let sent = session.clock().now().expect("clock");
    let guard = session
        .try_lock("c01-orders")
        .await
        .expect("try-lock")
        .expect("granted");
    assert!(guard.fencing_token() >= 1 && guard.lease_id() >= 1);
    let st = client.status("c01-orders").await.expect("status");
    assert_eq!(
        st.holder.as_ref().map(|h| (h.lease_id, h.fencing_token)),
        Some((guard.lease_id(), guard.fencing_token()))
    );
    let first = guard.valid_until();
    assert!(first < sent + ttl, "{first:?} vs {sent:?} + {ttl:?}");
    // The background keep-alive renews every TTL/3: valid_until moves.
    let deadline = Instant::now() + Duration::from_secs(10);
    while guard.valid_until() <= first {
        assert!(Instant::now() < deadline, "valid_until never moved");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    guard.check().expect("valid");
    let lease_id = guard.lease_id();
    let released = guard.release().await.expect("release");
    assert!(released.released, "{released:?}");
    let st = client.status("c01-orders").await.expect("status");
    assert!(st.holder.is_none(), "{st:?}");
    session.close().await.expect("close");
    let gone = client.lease_time_to_live(lease_id).await;
    assert!(
        matches!(gone, Err(ClientError::NotFound { .. })),
        "{gone:?}"
    );
}

/// conformance: C02-held-not-granted. S1: a try-lock of a held resource is
/// a typed NotGranted (held) naming the holder's lease; the holder keeps it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn c02_held_not_granted() {
    let cluster = Cluster::start(3, &[]).await;
    let (a, b) = (root(&cluster).await, root(&cluster).await);
    let sa = a.session(Duration::from_secs(10)).await.expect("session A");
    let sb = b.session(Duration::from_secs(10)).await.expect("session B");
    let guard = sa.lock("c02-r").await.expect("A locks");
    let answer = b
        .acquire("c02-r", on_lease(sb.lease_id(), Duration::ZERO))
        .await
        .expect("B's try-lock answers");
    assert_eq!(
        answer,
        AcquireResult::NotGranted {
            resource: "c02-r".into(),
            holder_lease_id: Some(sa.lease_id()),
            reason: NotGrantedReason::Held,
            lock_delay_remaining_ms: None,
        }
    );
    let st = a.status("c02-r").await.expect("status");
    assert_eq!(
        st.holder.map(|h| h.fencing_token),
        Some(guard.fencing_token())
    );
}

/// conformance: C03-fifo-five-waiters. S2, S8: five waiters queued one
/// after another are granted in that order with growing tokens, all above
/// the holder's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn c03_fifo_five_waiters() {
    let cluster = Cluster::start(3, &[]).await;
    let h = root(&cluster).await;
    let hs = h.session(Duration::from_secs(10)).await.expect("session H");
    let held = hs.lock("c03-r").await.expect("H locks");
    let (granted_tx, mut granted_rx) = tokio::sync::mpsc::unbounded_channel();
    let mut waiters = Vec::new();
    for i in 1..=5u64 {
        let w = root(&cluster).await;
        let session = w.session(Duration::from_secs(10)).await.expect("session");
        let tx = granted_tx.clone();
        waiters.push(tokio::spawn(async move {
            let guard = session.lock("c03-r").await.expect("granted");
            tx.send((i, guard.fencing_token())).expect("report");
            guard.release().await.expect("release");
            session.close().await.expect("close");
        }));
        until_status(&h, "c03-r", "queued", |st| st.waiters == i).await;
    }
    let first_token = held.fencing_token();
    held.release().await.expect("H releases");
    let mut order = Vec::new();
    for _ in 0..5 {
        let got = tokio::time::timeout(Duration::from_secs(20), granted_rx.recv())
            .await
            .expect("a grant within 20 s")
            .expect("a grant");
        order.push(got);
    }
    assert_eq!(
        order.iter().map(|o| o.0).collect::<Vec<_>>(),
        vec![1, 2, 3, 4, 5]
    );
    let tokens: Vec<u64> = order.iter().map(|o| o.1).collect();
    assert!(tokens[0] > first_token, "{tokens:?} vs {first_token}");
    assert!(tokens.windows(2).all(|w| w[0] < w[1]), "{tokens:?}");
    for w in waiters {
        w.await.expect("waiter");
    }
}

/// conformance: C04-wait-timeout-leaves-no-waiter. S8: a wait of 1 s on a
/// held resource ends in a typed NotGranted (wait timeout) after at least
/// 1 s, with no waiter left, and the holder still holds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn c04_wait_timeout_leaves_no_waiter() {
    let cluster = Cluster::start(3, &[]).await;
    let (h, w) = (root(&cluster).await, root(&cluster).await);
    let hs = h.session(Duration::from_secs(10)).await.expect("session H");
    let held = hs.lock("c04-r").await.expect("H locks");
    let ws = w.session(Duration::from_secs(10)).await.expect("session W");
    let started = Instant::now();
    let answer = ws
        .lock_with_timeout("c04-r", Duration::from_secs(1))
        .await
        .expect("answered");
    assert!(answer.is_none(), "granted while held: {answer:?}");
    assert!(started.elapsed() >= Duration::from_secs(1));
    let st = h.status("c04-r").await.expect("status");
    assert_eq!(st.waiters, 0, "{st:?}");
    assert_eq!(
        st.holder.map(|x| x.fencing_token),
        Some(held.fencing_token())
    );
}

/// conformance: C08-election-failover-larger-token. S2, L1: B waits behind
/// elected A; A resigns; B is elected with a larger token, the observer saw
/// a then b, and the election's leader is b.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn c08_election_failover_larger_token() {
    let cluster = Cluster::start(3, &[]).await;
    let (a, b, o) = (
        root(&cluster).await,
        root(&cluster).await,
        root(&cluster).await,
    );
    let sa = a.session(Duration::from_secs(3)).await.expect("session A");
    let sb = b.session(Duration::from_secs(3)).await.expect("session B");
    let ea = warden_client::Election::new(sa, "c08-e");
    let eb = warden_client::Election::new(sb, "c08-e");
    let a_term = ea.campaign("a").await.expect("A elected");
    let mut observer = warden_client::Observer::start(o.clone(), "c08-e")
        .await
        .expect("observe");
    let first = tokio::time::timeout(Duration::from_secs(10), observer.next())
        .await
        .expect("the observer reports")
        .expect("a leader");
    assert_eq!(
        (first.value.as_str(), first.fencing_token),
        ("a", a_term.fencing_token())
    );
    let b_campaign = tokio::spawn(async move { eb.campaign("b").await });
    until_status(
        &o,
        &warden_client::election_key("c08-e"),
        "B queued",
        |st| st.waiters == 1,
    )
    .await;
    a_term.resign().await.expect("A resigns");
    let b_term = tokio::time::timeout(Duration::from_secs(10), b_campaign)
        .await
        .expect("B elected within 10 s")
        .expect("task")
        .expect("B elected");
    assert!(b_term.fencing_token() > first.fencing_token);
    let second = tokio::time::timeout(Duration::from_secs(10), observer.next())
        .await
        .expect("the observer reports again")
        .expect("a leader");
    assert_eq!(
        (second.value.as_str(), second.fencing_token),
        ("b", b_term.fencing_token())
    );
    let leader = warden_client::Election::new(
        o.session(Duration::from_secs(3)).await.expect("session"),
        "c08-e",
    )
    .leader()
    .await
    .expect("leader")
    .expect("a leader");
    assert_eq!(leader.value, "b");
}

/// conformance: C09-watch-every-grant-in-order. A watcher on the prefix
/// sees four grants in commit order with growing tokens, each followed by
/// its release. (A start below the retained window is the Compacted error:
/// `watch.rs` `start_index_below_the_window_is_compacted` arranges it.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn c09_watch_every_grant_in_order() {
    let cluster = Cluster::start(3, &[]).await;
    let client = root(&cluster).await;
    let mut watcher = client
        .watch(WatchTarget::Prefix("c09-".into()), 0)
        .await
        .expect("watch");
    let session = client
        .session(Duration::from_secs(10))
        .await
        .expect("session");
    for resource in ["c09-a", "c09-a", "c09-a", "c09-b"] {
        let guard = session.lock(resource).await.expect("lock");
        guard.release().await.expect("release");
    }
    let mut events = Vec::new();
    while events.len() < 8 {
        let e = tokio::time::timeout(Duration::from_secs(10), watcher.next())
            .await
            .expect("an event within 10 s")
            .expect("event");
        if e.event == "granted" || e.event == "released" {
            events.push(e);
        }
    }
    let kinds: Vec<&str> = events.iter().map(|e| e.event.as_str()).collect();
    assert_eq!(kinds, ["granted", "released"].repeat(4));
    assert!(
        events.windows(2).all(|w| w[0].index < w[1].index),
        "{events:?}"
    );
    let grants: Vec<(String, u64)> = events
        .iter()
        .filter(|e| e.event == "granted")
        .map(|e| (e.resource.clone(), e.fencing_token))
        .collect();
    let names: Vec<&str> = grants.iter().map(|g| g.0.as_str()).collect();
    assert_eq!(names, ["c09-a", "c09-a", "c09-a", "c09-b"]);
    assert!(
        grants[..3].windows(2).all(|w| w[0].1 < w[1].1),
        "{grants:?}"
    );
    for pair in events.chunks(2) {
        assert_eq!(
            (&pair[0].resource, pair[0].fencing_token),
            (&pair[1].resource, pair[1].fencing_token),
            "each grant is followed by its own release"
        );
    }
}

/// conformance: C10-bad-input-typed-error. docs/semantics.md "What bad
/// input gets": TTL below the minimum, a 600-byte resource and a 2 h wait
/// each get InvalidArgument with the field read from the status's
/// BadRequest details (not from the text), and nothing is created.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn c10_bad_input_typed_error() {
    let cluster = Cluster::start(3, &[]).await;
    let client = root(&cluster).await;
    let long = format!("c10-{}", "x".repeat(596));
    let cases = [
        (
            "c10-r".to_string(),
            AcquireOptions::with_ttl(Duration::from_millis(500)),
            "ttl_ms",
        ),
        (
            long,
            AcquireOptions::with_ttl(Duration::from_secs(5)),
            "resource",
        ),
        (
            "c10-r".to_string(),
            AcquireOptions {
                wait: Duration::from_secs(2 * 3600),
                ..AcquireOptions::with_ttl(Duration::from_secs(5))
            },
            "wait_timeout_ms",
        ),
    ];
    for (resource, options, field) in cases {
        match client.acquire(resource, options).await {
            Err(ClientError::InvalidArgument { field: Some(f), .. }) => assert_eq!(f, field),
            other => panic!("{field}: not a typed invalid argument: {other:?}"),
        }
    }
    let listing = client.admin().list("c10-").await.expect("list");
    assert!(listing.locks.is_empty(), "{listing:?}");
}

/// As root through the CLI: a role named `user` with `lock` on `prefix`,
/// given to `user`.
fn grant_lock(cluster: &Cluster, user: &str, prefix: &str) {
    let (code, _, err) = cluster.cli(&[
        "role",
        "grant",
        user,
        "--prefix",
        prefix,
        "--permission",
        "lock",
    ]);
    assert_eq!(code, 0, "{err}");
    let (code, _, err) = cluster.cli(&["user", "grant-role", user, user]);
    assert_eq!(code, 0, "{err}");
}

/// conformance: C12-other-principal-lease-refused. Leases have owners
/// (docs/security.md; etcd PR 8031), and a lease id is no liveness oracle:
/// bob, with alice's exact lease id and token, gets for release, renew,
/// revoke and an acquire on her lease exactly the answer the same call gets
/// on a lease that does not exist (release and acquire: not found); alice
/// still holds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn c12_other_principal_lease_refused() {
    let cluster = Cluster::start(3, &[]).await;
    grant_lock(&cluster, "alice", "c12-");
    grant_lock(&cluster, "bob", "c12-");
    let alice = cluster.client_as("alice").await;
    let bob = cluster.client_as("bob").await;
    let AcquireResult::Granted {
        lease_id,
        fencing_token,
        ..
    } = alice
        .acquire("c12-r", AcquireOptions::with_ttl(Duration::from_secs(30)))
        .await
        .expect("alice acquires")
    else {
        panic!("alice is not granted");
    };
    let absent = lease_id + 1_000_000;
    // An answer as text, the id of the lease asked about written as "ID".
    let answer = |r: Result<String, ClientError>, id: u64| match r {
        Ok(v) => format!("ok {v}").replace(&id.to_string(), "ID"),
        Err(e) => format!("{e:?}").replace(&id.to_string(), "ID"),
    };
    let release = |id| bob.release(id, Some("c12-r".into()), Some(fencing_token));
    let (owned, none) = (release(lease_id).await, release(absent).await);
    assert!(
        matches!(owned, Err(ClientError::NotFound { .. })),
        "release: {owned:?}"
    );
    assert_eq!(
        answer(owned.map(|v| format!("{v:?}")), lease_id),
        answer(none.map(|v| format!("{v:?}")), absent)
    );
    let (owned, none) = (bob.renew(lease_id).await, bob.renew(absent).await);
    assert!(owned.is_err(), "renew: {owned:?}");
    assert_eq!(
        answer(owned.map(|v| format!("{v:?}")), lease_id),
        answer(none.map(|v| format!("{v:?}")), absent)
    );
    let (owned, none) = (bob.revoke(lease_id).await, bob.revoke(absent).await);
    assert_eq!(
        answer(owned.map(|v| format!("{v:?}")), lease_id),
        answer(none.map(|v| format!("{v:?}")), absent)
    );
    let hang = |id| bob.acquire("c12-other", on_lease(id, Duration::ZERO));
    let (owned, none) = (hang(lease_id).await, hang(absent).await);
    assert!(
        matches!(owned, Err(ClientError::NotFound { .. })),
        "acquire: {owned:?}"
    );
    assert_eq!(
        answer(owned.map(|v| format!("{v:?}")), lease_id),
        answer(none.map(|v| format!("{v:?}")), absent)
    );
    let st = alice.status("c12-r").await.expect("status");
    assert_eq!(
        st.holder.map(|h| (h.lease_id, h.fencing_token)),
        Some((lease_id, fencing_token))
    );
}
