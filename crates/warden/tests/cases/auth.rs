//! Identities and permissions with real processes over mutual TLS
//! (docs/security.md): roles on prefixes granted with the CLI as `root`,
//! calls made as `alice`, `bob`, `carol` and `mallory` with their own
//! client certificates (minted once per test binary by the harness).

use std::time::{Duration, Instant};

use warden_client::{AcquireResult, ClientError, WatchTarget};

use crate::harness::{Cluster, Final};
use crate::{E, OBSERVE};

/// As root: a role named after `user` with `permission` on `prefix`, given
/// to `user`, through the CLI (JSON answers checked).
fn grant(cluster: &Cluster, user: &str, prefix: &str, permission: &str) {
    let (code, j, err) = cluster.cli(&[
        "role",
        "grant",
        user,
        "--prefix",
        prefix,
        "--permission",
        permission,
    ]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        (&j["role"], &j["prefix"], &j["granted"]),
        (&user.into(), &prefix.into(), &true.into())
    );
    let (code, j, err) = cluster.cli(&["user", "grant-role", user, user]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(j["granted"], true);
}

/// As root: takes `user`'s role's grant on `prefix` away.
fn revoke(cluster: &Cluster, user: &str, prefix: &str) {
    let (code, j, err) = cluster.cli(&["role", "revoke", user, "--prefix", prefix]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(j["revoked"], true);
}

fn permission_denied(e: &ClientError, needle: &str) -> bool {
    matches!(e, ClientError::PermissionDenied { message } if message.contains(needle))
}

/// Waits (polling with a deadline) until root's status of `resource` shows
/// `waiters` waiters.
async fn until_waiters(cluster: &Cluster, resource: &str, waiters: u64) {
    let api = cluster.api();
    let deadline = Instant::now() + Duration::from_secs(10);
    while api.status(resource).await.expect("status").waiters != waiters {
        assert!(
            Instant::now() < deadline,
            "{resource} never had {waiters} waiters"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Identity and permissions, leases have owners (etcd PR 8031): alice with
/// `lock` on `jobs/` takes `jobs/1` and is refused `orders/1` (which stays
/// free, and no lease is left behind); bob, also with `lock` on `jobs/`, gets
/// for renew, release, revoke, lease ttl and an acquire on alice's lease with
/// her exact id and token the answer to a lease that does not exist
/// (NotFound naming it), and alice still holds with nothing of his;
/// alice is refused the admin commands (one line naming the permission and
/// the prefix); once her `lock` is revoked her next acquire is refused while
/// her existing lease still expires on time (L1: within TTL + E).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_principal_locks_its_prefix_only_and_nobody_touches_its_lease() {
    let cluster = Cluster::start(3, &[]).await;
    grant(&cluster, "alice", "jobs/", "lock");
    grant(&cluster, "bob", "jobs/", "lock");
    let alice = cluster.client_as("alice").await;
    let bob = cluster.client_as("bob").await;
    let root = cluster.api();

    let ttl = Duration::from_millis(60_000);
    let (lease, token) = match alice
        .acquire("jobs/1", warden_client::AcquireOptions::with_ttl(ttl))
        .await
        .expect("alice acquires jobs/1")
    {
        AcquireResult::Granted {
            lease_id,
            fencing_token,
            ..
        } => (lease_id, fencing_token),
        other => panic!("not granted: {other:?}"),
    };
    let e = alice
        .acquire("orders/1", warden_client::AcquireOptions::with_ttl(ttl))
        .await
        .expect_err("orders/ is not alice's");
    assert!(
        permission_denied(&e, "principal alice has no lock permission on \"orders/1\""),
        "{e:?}"
    );
    assert!(root
        .status("orders/1")
        .await
        .expect("status")
        .holder
        .is_none());
    let (code, users, err) = cluster.cli(&["user", "list"]);
    assert_eq!(code, 0, "{err}");
    let usage = users
        .as_array()
        .expect("array")
        .iter()
        .find(|u| u["user"] == "alice")
        .map(|u| u["usage"].clone())
        .expect("alice listed");
    assert_eq!(
        usage["leases"], 1,
        "the refused acquire left no lease: {users}"
    );

    // No liveness oracle: each is answered as a lease that does not exist.
    let lease_named = format!("lease {lease}");
    let not_found = |e: &ClientError| matches!(e, ClientError::NotFound { message } if message.contains(&lease_named));
    let e = bob
        .renew(lease)
        .await
        .expect_err("bob renews alice's lease");
    assert!(not_found(&e), "{e:?}");
    let e = bob
        .release(lease, Some("jobs/1".into()), Some(token))
        .await
        .expect_err("bob releases alice's grant");
    assert!(not_found(&e), "{e:?}");
    let e = bob
        .revoke(lease)
        .await
        .expect_err("bob revokes alice's lease");
    assert!(not_found(&e), "{e:?}");
    let e = bob
        .lease_time_to_live(lease)
        .await
        .expect_err("bob reads alice's lease");
    assert!(not_found(&e), "{e:?}");
    let e = cluster
        .api_as("bob")
        .acquire_on_lease(900, 1, "jobs/2", lease)
        .await
        .expect_err("bob hangs a grant on alice's lease");
    assert!(not_found(&e), "{e:?}");
    let st = root.status("jobs/1").await.expect("status");
    assert_eq!(
        st.holder.map(|h| (h.lease_id, h.fencing_token)),
        Some((lease, token)),
        "alice still holds"
    );
    assert!(root
        .status("jobs/2")
        .await
        .expect("status")
        .holder
        .is_none());
    let own = alice.lease_time_to_live(lease).await.expect("alice's ttl");
    assert_eq!(own.locks, vec!["jobs/1".to_string()], "nothing of bob's");

    // The admin commands are root's: one line naming the permission and prefix.
    for args in [
        &["role", "list"][..],
        &["user", "grant-role", "alice", "bob"][..],
        &["release", "--force", "jobs/1"][..],
        &["cluster", "limits"][..],
    ] {
        let (code, _, err) = cluster.cli_as("alice", args);
        assert_eq!(code, 1, "{args:?}: {err}");
        assert_eq!(
            err.trim(),
            "error: permission denied: principal alice has no admin permission on prefix \"\"",
            "{args:?}"
        );
    }

    // Revoking `lock` stops new acquires; a held lease still expires on time.
    let short = Duration::from_millis(3_000);
    let short_lease = match alice
        .acquire("jobs/9", warden_client::AcquireOptions::with_ttl(short))
        .await
        .expect("alice acquires jobs/9")
    {
        AcquireResult::Granted { lease_id, .. } => lease_id,
        other => panic!("not granted: {other:?}"),
    };
    alice.renew(short_lease).await.expect("renew");
    let renew_acked = Instant::now();
    revoke(&cluster, "alice", "jobs/");
    let e = alice
        .acquire("jobs/3", warden_client::AcquireOptions::with_ttl(short))
        .await
        .expect_err("revoked");
    assert!(
        permission_denied(&e, "no lock permission on \"jobs/3\""),
        "{e:?}"
    );
    let ttl = short;
    loop {
        let sent = Instant::now();
        let st = root.status("jobs/9").await.expect("status");
        if st.holder.is_none() {
            break;
        }
        assert!(
            sent < renew_acked + ttl + E + OBSERVE,
            "L1: alice's lease outlived TTL + E by {:?} after her lock was revoked",
            sent - (renew_acked + ttl + E)
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A revoked waiter never blocks the queue: alice and carol wait behind
/// root's grant of `q/1`; alice's `lock` is revoked, which ends her wait
/// (her stream ends with PermissionDenied, not a timeout); when root
/// releases, carol is granted in the same entry as the release (the watch
/// shows both at one log index), with a larger token (S2).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiter_whose_lock_is_revoked_is_refused_and_the_next_is_granted() {
    let cluster = Cluster::start(3, &[]).await;
    grant(&cluster, "alice", "q/", "lock");
    grant(&cluster, "carol", "q/", "lock");
    let root = cluster.api();
    let (holder, token) = root
        .acquire(10, 1, "q/1", 30_000)
        .await
        .expect("root holds q/1")
        .grant();
    let alice = cluster.api_as("alice");
    let alice_wait =
        tokio::spawn(async move { alice.acquire_waiting(20, 1, "q/1", 30_000, 8_000).await });
    until_waiters(&cluster, "q/1", 1).await;
    let carol = cluster.api_as("carol");
    let carol_wait =
        tokio::spawn(async move { carol.acquire_waiting(30, 1, "q/1", 30_000, 8_000).await });
    until_waiters(&cluster, "q/1", 2).await;
    let mut watcher = root
        .client()
        .await
        .watch(WatchTarget::Resource("q/1".into()), 0)
        .await
        .expect("watch");
    let (code, _, err) = cluster.cli(&["user", "revoke-role", "alice", "alice"]);
    assert_eq!(code, 0, "{err}");
    root.release(10, 2, "q/1", holder, token)
        .await
        .expect("release");

    let e = alice_wait
        .await
        .expect("join")
        .expect_err("alice is not granted");
    assert!(permission_denied(&e, "\"q/1\""), "{e:?}");
    let (carol_lease, carol_token) = carol_wait
        .await
        .expect("join")
        .expect("carol's answer")
        .grant();
    assert!(carol_token > token, "S2: {carol_token} > {token}");
    let (mut released_at, mut granted_at) = (None, None);
    let deadline = Instant::now() + Duration::from_secs(10);
    while released_at.is_none() || granted_at.is_none() {
        assert!(Instant::now() < deadline, "the watch missed the hand-off");
        let e = tokio::time::timeout(Duration::from_secs(10), watcher.next())
            .await
            .expect("an event")
            .expect("event");
        match e.event.as_str() {
            "released" if e.lease_id == holder => released_at = Some(e.index),
            "granted" if e.lease_id == carol_lease => granted_at = Some(e.index),
            _ => {}
        }
    }
    assert_eq!(
        released_at, granted_at,
        "carol is granted in the release's own entry"
    );
    let st = root.status("q/1").await.expect("status");
    assert_eq!(st.holder.map(|h| h.lease_id), Some(carol_lease));
    assert_eq!(st.waiters, 0, "alice's wait is gone");
}

/// Exactly-once comes first (S7): alice's acquire is granted, her `lock` is
/// revoked, and her retry with the same request id gets the same grant
/// back, which she can release; a new acquire of hers is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_granted_acquire_retried_after_a_revoke_gets_its_grant_back() {
    let cluster = Cluster::start(3, &[]).await;
    grant(&cluster, "alice", "r/", "lock");
    let alice = cluster.api_as("alice");
    let first = alice.acquire(40, 1, "r/1", 30_000).await.expect("granted");
    let (lease, token) = first.grant();
    revoke(&cluster, "alice", "r/");
    let again = alice.acquire(40, 1, "r/1", 30_000).await.expect("retry");
    assert_eq!(again, first, "the recorded grant, not a second execution");
    alice
        .release(40, 2, "r/1", lease, token)
        .await
        .expect("she can release it");
    assert!(cluster
        .api()
        .status("r/1")
        .await
        .expect("status")
        .holder
        .is_none());
    let e = alice
        .acquire(40, 3, "r/2", 30_000)
        .await
        .expect_err("a new acquire is refused");
    assert!(
        permission_denied(&e, "no lock permission on \"r/2\""),
        "{e:?}"
    );
}

/// Quotas and limits: mallory, whose role's quota allows 20 leases,
/// creating leases in a loop is refused the 21st with ResourceExhausted
/// naming the quota, her principal and the limit, while alice still
/// acquires; 16,500 one-shot client ids from mallory (more than the 16,384
/// records that once let a flood evict a victim's record) take her to her
/// `clients` quota and no further, and alice's retry of a granted acquire
/// answers with that grant (S7: it does not run twice).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mallorys_quotas_stop_her_while_alice_is_served() {
    // The refused-request rate limit off (in effect): this floods refusals
    // on purpose, to reach the quotas behind it.
    let cluster = Cluster::start(3, &["--refused-requests-per-sec", "1000000"]).await;
    grant(&cluster, "alice", "a/", "lock");
    grant(&cluster, "mallory", "m/", "lock");
    let (code, j, err) = cluster.cli(&["role", "quota", "mallory", "--leases", "20"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(j["quota"]["leases"], 20);
    assert_eq!(
        j["quota"]["clients"], 4_096,
        "the other fields keep the default"
    );

    let alice = cluster.api_as("alice");
    // Long enough to outlive the flood below.
    let first = alice.acquire(50, 1, "a/1", 600_000).await.expect("alice");
    let mallory = cluster.client_as("mallory").await;
    let mut created = 0u64;
    let refusal = loop {
        match mallory.lease_grant(Duration::from_secs(60)).await {
            Ok(_) => created += 1,
            Err(e) => break e,
        }
        assert!(created <= 20, "mallory went past her quota");
    };
    assert_eq!(created, 20);
    assert!(
        matches!(&refusal, ClientError::ResourceExhausted { message }
            if message.contains("quota leases of principal mallory reached: 20")),
        "{refusal:?}"
    );
    let second = alice
        .acquire(50, 2, "a/2", 60_000)
        .await
        .expect("alice still acquires");
    assert!(matches!(second, Final::Granted { .. }), "{second:?}");

    // 16,500 new client ids, each one request (an acquire of m/1, hers to
    // lock, on a new lease: refused at apply, her lease quota being spent, so
    // each makes a record until her `clients` quota), on `Calls` streams of
    // mallory's connection: four at a time, 250 calls each. (An acquire she
    // may not make at all is refused before the log and makes no record.)
    let flood = cluster.api_as("mallory").client().await;
    const IDS: u64 = 16_500;
    const STREAMS: u64 = 4;
    const CALLS_PER_STREAM: usize = 250;
    let started = Instant::now();
    let mut jobs = tokio::task::JoinSet::new();
    for s in 0..STREAMS {
        let flood = flood.clone();
        let ids: Vec<u64> = (s..IDS)
            .step_by(STREAMS as usize)
            .map(|i| 1_000_000 + i)
            .collect();
        jobs.spawn(async move {
            let (mut denied, mut exhausted) = (0, 0);
            for chunk in ids.chunks(CALLS_PER_STREAM) {
                let (d, x) = denied_or_exhausted(&flood, chunk.to_vec()).await?;
                denied += d;
                exhausted += x;
            }
            Ok::<_, ClientError>((denied, exhausted))
        });
    }
    let (mut denied, mut exhausted) = (0, 0);
    while let Some(r) = jobs.join_next().await {
        let (d, x) = r.expect("join").expect("the flood's streams");
        denied += d;
        exhausted += x;
    }
    println!("{IDS} client ids in {:?}", started.elapsed());
    assert_eq!(denied + exhausted, IDS);
    let (code, users, err) = cluster.cli(&["user", "list"]);
    assert_eq!(code, 0, "{err}");
    let clients = users
        .as_array()
        .expect("array")
        .iter()
        .find(|u| u["user"] == "mallory")
        .map(|u| u["usage"]["clients"].clone())
        .expect("mallory listed");
    assert_eq!(clients, 4_096, "her records stop at her quota: {users}");
    assert_eq!(exhausted, IDS - 4_095, "her lease grants used one record");

    let retried = alice.acquire(50, 1, "a/1", 600_000).await.expect("retry");
    assert_eq!(
        retried, first,
        "S7: alice's retry got its grant, it did not run twice"
    );
}

/// Sends one acquire of `m/1` on a new lease (mallory may lock it, but her
/// lease quota is spent) from each client id in `ids` on one `Calls` stream
/// of `client`'s connection, and counts the answers: (ResourceExhausted
/// naming her `leases` quota, ResourceExhausted naming her `clients`
/// quota). A redirect retries the whole stream at the leader (the same
/// request ids: recorded refusals are replayed, S7).
async fn denied_or_exhausted(
    client: &warden_client::Client,
    ids: Vec<u64>,
) -> Result<(u64, u64), ClientError> {
    use warden_proto::v1 as pb;
    use warden_proto::v1::call_response::Answer;
    let ids = &ids;
    client
        .call_raw(
            "flood",
            Duration::from_secs(60),
            move |channel| async move {
                let calls: Vec<pb::CallRequest> = ids
                    .iter()
                    .zip(1u64..)
                    .map(|(client_id, call_id)| pb::CallRequest {
                        call_id,
                        call: Some(pb::call_request::Call::Acquire(pb::AcquireRequest {
                            header: Some(pb::RequestHeader {
                                client_id: *client_id,
                                request_id: 1,
                                acked_request_id: 0,
                            }),
                            resource: "m/1".into(),
                            ttl_ms: 5_000,
                            ..Default::default()
                        })),
                    })
                    .collect();
                let mut lock = pb::lock_client::LockClient::new(channel);
                let mut answers = lock.calls(tokio_stream::iter(calls)).await?.into_inner();
                let (mut denied, mut exhausted) = (0u64, 0u64);
                while let Some(answer) = answers.message().await? {
                    match answer.answer {
                        Some(Answer::Error(e)) => match tonic::Code::from_i32(e.code) {
                            tonic::Code::ResourceExhausted
                                if e.message.contains("quota leases of principal mallory") =>
                            {
                                denied += 1
                            }
                            tonic::Code::ResourceExhausted => {
                                assert!(
                                    e.message.contains(
                                        "quota clients of principal mallory reached: 4096"
                                    ),
                                    "{}",
                                    e.message
                                );
                                exhausted += 1;
                            }
                            _ => return Err(warden_proto::call_error_status(e)),
                        },
                        other => panic!("an acquire of m/1 by mallory answered {other:?}"),
                    }
                }
                assert_eq!(denied + exhausted, ids.len() as u64, "every call answered");
                Ok((denied, exhausted))
            },
        )
        .await
}

/// L1 with identities: a holder (alice, over TLS) that stops renewing loses
/// the lock within TTL + E of its last acknowledged renew, and after a
/// leader kill too (L2: the new leader does not restart its countdown);
/// the next grant's token is larger (S2).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_auth_on_a_holder_that_stops_renewing_loses_its_lock_within_ttl_plus_e() {
    let mut cluster = Cluster::start(3, &[]).await;
    grant(&cluster, "alice", "l/", "lock");
    let alice = cluster.api_as("alice");
    let root = cluster.api();
    let ttl = Duration::from_millis(3_000);
    for (round, kill_leader) in [(1u64, false), (2, true)] {
        let resource = format!("l/{round}");
        let (lease, token) = alice
            .acquire(60, round * 10, &resource, ttl.as_millis() as u64)
            .await
            .expect("acquire")
            .grant();
        alice.renew(lease).await.expect("renew");
        let acked = Instant::now();
        if kill_leader {
            let leader = cluster.wait_leader(Duration::from_secs(10)).await;
            cluster.kill(leader);
            let next = cluster.wait_leader(Duration::from_secs(10)).await;
            assert_ne!(next, leader);
        }
        loop {
            let sent = Instant::now();
            match root.status(&resource).await {
                Ok(st) if st.holder.is_none() => break,
                Ok(st) => assert_eq!(st.holder.map(|h| h.lease_id), Some(lease)),
                Err(e) => assert!(e.is_unavailable(), "{e:?}"),
            }
            assert!(
                sent < acked + ttl + E + OBSERVE,
                "L1 (round {round}): lease outlived TTL + E by {:?}",
                sent - (acked + ttl + E)
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let (_, next) = root
            .acquire(61, round, &resource, 5_000)
            .await
            .expect("the next holder")
            .grant();
        assert!(next > token, "S2: {next} > {token}");
    }
}
