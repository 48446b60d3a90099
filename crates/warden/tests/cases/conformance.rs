//! The Rust client's side of the client conformance suite
//! (`clients/conformance/scenarios.md`) where no other cluster test already
//! covers a scenario: an abandoned wait (C11) and gRPC's standard services
//! (C13). Each test carries its scenario's marker.

use std::time::{Duration, Instant};

use tonic_health::pb::health_check_response::ServingStatus;
use tonic_health::pb::health_client::HealthClient;
use tonic_health::pb::HealthCheckRequest;
use tonic_reflection::pb::v1::server_reflection_client::ServerReflectionClient;
use tonic_reflection::pb::v1::server_reflection_request::MessageRequest;
use tonic_reflection::pb::v1::server_reflection_response::MessageResponse;
use tonic_reflection::pb::v1::ServerReflectionRequest;
use warden_client::AcquireOptions;
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
