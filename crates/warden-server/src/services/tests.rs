//! Tests of [`super::principal`]: the mapping from a connection's identity,
//! and a real TLS connection on loopback through a tiny gRPC service that
//! answers with the principal its handler sees; and tests of the public
//! services through their real gRPC edge on loopback ([`serve_node`]).

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use tonic::codegen::http;
use tonic::Code;
use warden_tls::{ClientTls, Identity, NodeTls};

use super::{principal, principal_of};

// "What bad input gets" and the identity rules (docs/security.md): each
// identity maps to one principal; no certificate on a TLS connection is
// Unauthenticated; no TLS is the insecure node's anonymous caller.
#[test]
fn identities_map_to_principals() {
    assert_eq!(principal_of(None).expect("insecure"), None);
    let e = principal_of(Some(&Identity::Anonymous)).expect_err("anonymous");
    assert_eq!(e.code(), Code::Unauthenticated);
    assert!(
        e.message().contains("no client certificate"),
        "{}",
        e.message()
    );
    assert!(e.message().contains("--certs-dir"), "{}", e.message());
    let alice = principal_of(Some(&Identity::Client {
        principal: "alice".into(),
    }))
    .expect("alice");
    assert_eq!(alice.as_ref().map(|p| p.as_str()), Some("alice"));
    let node = principal_of(Some(&Identity::Node { node_id: 3 })).expect("node");
    assert_eq!(node.as_ref().map(|p| p.as_str()), Some("node.3"));
}

/// Answers every call with the principal [`principal`] returns ("-" for
/// none), or its error.
#[derive(Clone, Debug)]
struct WhoAmI;

impl tonic::server::NamedService for WhoAmI {
    const NAME: &'static str = "test.WhoAmI";
}

struct Unary;

impl tonic::server::UnaryService<String> for Unary {
    type Response = String;
    type Future = std::future::Ready<Result<tonic::Response<String>, tonic::Status>>;

    fn call(&mut self, request: tonic::Request<String>) -> Self::Future {
        let answer = principal(&request).map(|p| {
            tonic::Response::new(p.map_or_else(|| "-".to_string(), |p| p.as_str().to_string()))
        });
        std::future::ready(answer)
    }
}

impl tower::Service<http::Request<tonic::body::Body>> for WhoAmI {
    type Response = http::Response<tonic::body::Body>;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, Infallible>> + Send>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: http::Request<tonic::body::Body>) -> Self::Future {
        Box::pin(async move {
            let codec = tonic_prost::ProstCodec::<String, String>::default();
            Ok(tonic::server::Grpc::new(codec).unary(Unary, request).await)
        })
    }
}

/// Calls [`WhoAmI`] with `metadata` on the request.
async fn who_am_i(
    channel: tonic::transport::Channel,
    metadata: &[(&'static str, &'static str)],
) -> Result<String, tonic::Status> {
    let mut grpc = tonic::client::Grpc::new(channel);
    grpc.ready()
        .await
        .map_err(|e| tonic::Status::unavailable(e.to_string()))?;
    let mut request = tonic::Request::new(String::new());
    for (k, v) in metadata {
        request
            .metadata_mut()
            .insert(*k, tonic::metadata::MetadataValue::from_static(v));
    }
    let path = http::uri::PathAndQuery::from_static("/test.WhoAmI/Get");
    let codec = tonic_prost::ProstCodec::<String, String>::default();
    Ok(grpc.unary(request, path, codec).await?.into_inner())
}

/// Serves [`WhoAmI`] on 127.0.0.1:0, over `tls` when given.
async fn serve(tls: Option<&NodeTls>) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr").to_string();
    let router = tonic::transport::Server::builder().add_service(WhoAmI);
    match tls {
        Some(tls) => {
            let incoming = tls
                .server()
                .incoming(tokio_stream::wrappers::TcpListenerStream::new(listener));
            tokio::spawn(router.serve_with_incoming(incoming));
        }
        None => {
            let incoming = tokio_stream::wrappers::TcpListenerStream::new(listener);
            tokio::spawn(router.serve_with_incoming(incoming));
        }
    }
    addr
}

// docs/security.md "The principal": the principal comes from the verified
// certificate only. A header naming another principal changes nothing
// (alice stays alice, an anonymous caller stays refused, an insecure
// node's caller stays anonymous), and a node certificate is `node.N`.
#[tokio::test]
async fn the_principal_comes_from_the_certificate_only() {
    let root = tempfile::tempdir().expect("tempdir");
    let set = warden_tls::mint::loopback_set(root.path(), &[1, 2], &["alice"]).expect("mint");
    let node1 = NodeTls::load(&set.node_dirs[&1], 1).expect("node 1");
    let addr = serve(Some(&node1)).await;
    let forged = [("x-warden-principal", "root"), ("x-warden-user", "root")];

    let alice = ClientTls::load_client(&set.client_dir, "alice").expect("alice");
    let channel = alice.channel_lazy(&addr).expect("channel");
    assert_eq!(
        who_am_i(channel.clone(), &[]).await.expect("alice"),
        "alice"
    );
    assert_eq!(who_am_i(channel, &forged).await.expect("alice"), "alice");

    let anonymous = ClientTls::anonymous(&set.client_dir.join("ca.crt")).expect("anonymous");
    let e = who_am_i(anonymous.channel_lazy(&addr).expect("channel"), &forged)
        .await
        .expect_err("no certificate");
    assert_eq!(e.code(), Code::Unauthenticated, "{e:?}");

    let node2 = NodeTls::load(&set.node_dirs[&2], 2).expect("node 2");
    let peer = warden_tls::endpoint(&addr)
        .expect("endpoint")
        .connect_with_connector_lazy(node2.peer_connector(1));
    assert_eq!(who_am_i(peer, &forged).await.expect("node 2"), "node.2");

    let plain = serve(None).await;
    let channel = tonic::transport::Endpoint::from_shared(format!("http://{plain}"))
        .expect("endpoint")
        .connect_lazy();
    assert_eq!(who_am_i(channel, &forged).await.expect("insecure"), "-");
}

/// Serves the public `Lock`, `Lease` and `Watch` services of `node` on
/// 127.0.0.1:0 (plaintext: an insecure node's anonymous caller), for tests
/// that go through the real gRPC edge; returns a channel to it.
pub(super) async fn serve_node(
    node: std::sync::Arc<crate::node::Node>,
) -> tonic::transport::Channel {
    let cell = crate::node::NodeCell::default();
    cell.set(node);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    let (_stop, stopping) = tokio::sync::watch::channel(false);
    let router = tonic::transport::Server::builder()
        .add_service(warden_proto::v1::lock_server::LockServer::new(
            super::lock::LockService::new(cell.clone(), stopping),
        ))
        .add_service(warden_proto::v1::lease_server::LeaseServer::new(
            super::lease::LeaseService::new(cell.clone()),
        ))
        .add_service(warden_proto::v1::watch_server::WatchServer::new(
            super::watch::WatchService::new(cell),
        ));
    tokio::spawn(async move {
        let _stop = _stop;
        router
            .serve_with_incoming(tokio_stream::wrappers::TcpListenerStream::new(listener))
            .await
    });
    tonic::transport::Endpoint::from_shared(format!("http://{addr}"))
        .expect("endpoint")
        .connect_lazy()
}

mod lease_ids {
    use std::time::Duration;

    use futures::StreamExt as _;
    use tokio::sync::mpsc;
    use tokio_stream::wrappers::ReceiverStream;
    use tonic::{Code, Status};
    use warden_core::limits::MAX_ID;
    use warden_proto::v1 as pb;
    use warden_proto::v1::lease_client::LeaseClient;
    use warden_proto::v1::lock_client::LockClient;

    use super::serve_node;
    use crate::node::test_node::{Setup, TestNode};
    /// Asserts `status` is the refusal of a lease id out of range: its
    /// field and the limit named.
    fn assert_out_of_range(what: &str, id: u64, status: &Status) {
        assert_eq!(
            status.code(),
            Code::InvalidArgument,
            "{what} {id}: {status:?}"
        );
        assert_eq!(
            status.message(),
            format!("lease_id: lease_id must be within 1..={MAX_ID}; got {id}"),
            "{what}"
        );
    }

    async fn within<T>(f: impl std::future::Future<Output = T>) -> T {
        tokio::time::timeout(Duration::from_secs(10), f)
            .await
            .expect("an answer within 10 s")
    }

    /// Opens a keep-alive stream, sends one keep-alive for `lease_id`, and
    /// returns the first answer (a reply, or the status the stream ends with).
    async fn first_keep_alive_answer(
        lease: &mut LeaseClient<tonic::transport::Channel>,
        lease_id: u64,
        sequence: u64,
    ) -> Result<pb::LeaseKeepAliveResponse, Status> {
        let (tx, rx) = mpsc::channel(1);
        tx.send(pb::LeaseKeepAliveRequest { lease_id, sequence })
            .await
            .unwrap();
        let mut replies = within(lease.lease_keep_alive(ReceiverStream::new(rx)))
            .await
            .expect("the stream opens")
            .into_inner();
        let answer = within(replies.next())
            .await
            .expect("an answer, not the end of the stream");
        drop(tx);
        answer
    }

    fn header(request_id: u64) -> Option<pb::RequestHeader> {
        Some(pb::RequestHeader {
            client_id: 9,
            request_id,
            acked_request_id: 0,
        })
    }

    // Lease ids come from the replicated counter, 1..=MAX_ID (2^53 - 1;
    // warden_core::validate::lease_id), and every lease id taken from the
    // network is checked against that range before anything is read or
    // proposed (public bug: a keep-alive for lease id u64::MAX was reported
    // to answer `live = false`, as if it named a lease that had ended). Over
    // the real gRPC edge: 0, MAX_ID + 1 and u64::MAX get InvalidArgument
    // naming `lease_id` and the limit from a keep-alive stream (no
    // `live = false` reply; the stream ends with the refusal), `Renew`,
    // `LeaseRevoke`, `LeaseTimeToLive`, `Acquire` with a lease, `Release`
    // and `Proclaim`; MAX_ID itself is a lease id some lease could have, so
    // it is only not live (`live = false`, NotFound).
    #[tokio::test]
    async fn a_lease_id_no_lease_can_have_is_refused_by_every_call() {
        let t = TestNode::start(Setup::default()).await;
        let channel = serve_node(t.node.clone()).await;
        let mut lease = LeaseClient::new(channel.clone());
        let mut lock = LockClient::new(channel);
        let mut request_id = 0;
        for id in [0, MAX_ID + 1, u64::MAX] {
            let refused = first_keep_alive_answer(&mut lease, id, 1).await;
            assert_out_of_range(
                "keep-alive",
                id,
                &refused.expect_err("no live = false reply"),
            );

            let e = within(lock.renew(pb::RenewRequest {
                lease_id: id,
                client_id: 9,
                sequence: 1,
            }))
            .await
            .expect_err("renew");
            assert_out_of_range("renew", id, &e);

            request_id += 1;
            let e = within(lock.lease_revoke(pb::LeaseRevokeRequest {
                header: header(request_id),
                lease_id: id,
            }))
            .await
            .expect_err("revoke");
            assert_out_of_range("revoke", id, &e);

            let e = within(lease.lease_time_to_live(pb::LeaseTimeToLiveRequest { lease_id: id }))
                .await
                .expect_err("ttl");
            assert_out_of_range("lease ttl", id, &e);

            request_id += 1;
            let e = within(lock.release(pb::ReleaseRequest {
                header: header(request_id),
                resource: "l/1".into(),
                lease_id: id,
                ..Default::default()
            }))
            .await
            .expect_err("release");
            assert_out_of_range("release", id, &e);

            let e = within(lock.proclaim(pb::ProclaimRequest {
                resource: "l/1".into(),
                lease_id: id,
                ..Default::default()
            }))
            .await
            .expect_err("proclaim");
            assert_out_of_range("proclaim", id, &e);

            if id != 0 {
                // 0 asks for a new lease: acquire's own rule.
                request_id += 1;
                let e = within(lock.acquire(pb::AcquireRequest {
                    header: header(request_id),
                    resource: "l/1".into(),
                    lease_id: id,
                    ..Default::default()
                }))
                .await
                .expect_err("acquire");
                assert_out_of_range("acquire", id, &e);
            }
        }
        assert_eq!(t.table(|m| m.holder("l/1")), None, "nothing was proposed");

        // MAX_ID is in range: not live, not refused.
        let reply = first_keep_alive_answer(&mut lease, MAX_ID, 7)
            .await
            .expect("not refused");
        assert_eq!(
            (reply.lease_id, reply.live, reply.ttl_ms, reply.sequence),
            (MAX_ID, false, 0, 7)
        );
        let e = within(lock.renew(pb::RenewRequest {
            lease_id: MAX_ID,
            client_id: 9,
            sequence: 1,
        }))
        .await
        .expect_err("not live");
        assert_eq!(e.code(), Code::NotFound, "{e:?}");
    }
}

mod watch_start {
    use std::time::Duration;

    use tonic::Code;
    use warden_core::types::{Acquire, AcquireReply, Command, LeaseSpec};
    use warden_proto::v1 as pb;
    use warden_proto::v1::watch_client::WatchClient;

    use super::serve_node;
    use crate::node::test_node::{header, Setup, TestNode};
    use crate::node::ReadError;

    fn applied(t: &TestNode) -> u64 {
        *t.node.applied().borrow()
    }

    fn watch_from(start_index: u64) -> pb::WatchRequest {
        pb::WatchRequest {
            target: Some(pb::watch_request::Target::Prefix("w/".into())),
            start_index,
        }
    }

    // A watch from an index no entry can reach is refused, not left waiting
    // for ever (public bug: a watch from start_index 1000000 on a cluster at
    // index ~40 waited with no event and no error): over the real gRPC edge
    // it gets OutOfRange naming the index and the commit index the leader
    // confirmed; a watch from exactly the commit index + 1 opens, waits, and
    // gets the next entry's event.
    #[tokio::test]
    async fn a_watch_beyond_the_commit_index_is_refused_and_one_at_the_next_entry_waits() {
        let t = TestNode::start(Setup::default()).await;
        let mut watch = WatchClient::new(serve_node(t.node.clone()).await);
        let before = applied(&t);
        let refused =
            tokio::time::timeout(Duration::from_secs(10), watch.watch(watch_from(1_000_000)))
                .await
                .expect("an answer within 10 s")
                .expect_err("refused");
        assert_eq!(refused.code(), Code::OutOfRange, "{refused:?}");
        let prefix = "start_index 1000000 is beyond the cluster's commit index ";
        let commit: u64 = refused
            .message()
            .strip_prefix(prefix)
            .and_then(|rest| rest.split(' ').next())
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("{}", refused.message()));
        assert!(commit >= before, "{commit} < {before}");
        assert!(
            refused
                .message()
                .contains(&format!("commit index {commit} + 1")),
            "{}",
            refused.message()
        );

        let next = applied(&t) + 1;
        let mut events =
            tokio::time::timeout(Duration::from_secs(10), watch.watch(watch_from(next)))
                .await
                .expect("an answer within 10 s")
                .expect("the next entry is waited for")
                .into_inner();
        let _: AcquireReply = t
            .node
            .submit(
                &None,
                Command::Acquire(Acquire::mutex(
                    header(50, 1),
                    "w/1",
                    LeaseSpec::New { ttl_ms: 30_000 },
                    0,
                    0,
                )),
            )
            .await
            .expect("acquire");
        let event = tokio::time::timeout(Duration::from_secs(10), events.message())
            .await
            .expect("an event within 10 s")
            .expect("not an error")
            .expect("an event");
        assert_eq!(
            (event.resource.as_str(), event.event.as_str()),
            ("w/1", "granted")
        );
        assert!(event.index >= next, "{} < {next}", event.index);
    }

    // The bound is exactly the commit index + 1: on the leader, the index
    // two past its commit index is refused naming that commit index (the
    // read-index path; an entry a leader duty commits meanwhile moves the
    // bound, so the check is retried then), the index one past is served.
    #[tokio::test]
    async fn the_leader_refuses_the_index_two_past_its_commit_index() {
        let t = TestNode::start(Setup::default()).await;
        let mut checked = false;
        for _ in 0..5 {
            let commit = applied(&t);
            t.node
                .check_watch_start(commit + 1)
                .await
                .expect("the next entry");
            match t.node.check_watch_start(commit + 2).await {
                Err(ReadError::BeyondCommit {
                    start_index,
                    commit_index,
                }) if commit_index == commit => {
                    assert_eq!(start_index, commit + 2);
                    checked = true;
                    break;
                }
                Err(ReadError::BeyondCommit { commit_index, .. }) => {
                    assert!(commit_index > commit, "{commit_index} < {commit}")
                }
                Ok(()) => assert!(applied(&t) > commit, "served with no new entry"),
                Err(e) => panic!("{e}"),
            }
        }
        assert!(checked, "an entry committed during each of 5 checks");
    }
}

/// Semaphores and read-write locks over the real gRPC edge
/// (docs/semantics.md "Lock kinds").
mod kinds {
    use std::time::Duration;

    use futures::StreamExt as _;
    use tonic::Code;
    use warden_proto::v1 as pb;
    use warden_proto::v1::lock_client::LockClient;

    use super::serve_node;
    use crate::node::test_node::{Setup, TestNode};

    type Lock = LockClient<tonic::transport::Channel>;

    fn request(
        client_id: u64,
        resource: &str,
        mode: pb::LockMode,
        limit: u32,
    ) -> pb::AcquireRequest {
        pb::AcquireRequest {
            header: Some(pb::RequestHeader {
                client_id,
                request_id: 1,
                acked_request_id: 0,
            }),
            resource: resource.into(),
            ttl_ms: 30_000,
            wait_timeout_ms: 0,
            mode: mode as i32,
            limit,
            ..Default::default()
        }
    }

    /// The first answer of an Acquire stream, or its status.
    async fn first(
        lock: &mut Lock,
        r: pb::AcquireRequest,
    ) -> Result<pb::acquire_response::Event, tonic::Status> {
        let answer = async {
            let mut stream = lock.acquire(r).await?.into_inner();
            match stream.next().await {
                Some(Ok(pb::AcquireResponse { event: Some(e) })) => Ok(e),
                Some(Err(s)) => Err(s),
                other => panic!("no answer: {other:?}"),
            }
        };
        tokio::time::timeout(Duration::from_secs(10), answer)
            .await
            .expect("an answer within 10 s")
    }

    fn granted(e: Result<pb::acquire_response::Event, tonic::Status>) -> pb::Granted {
        match e {
            Ok(pb::acquire_response::Event::Granted(g)) => g,
            other => panic!("expected a grant, got {other:?}"),
        }
    }

    // A semaphore of 2 (`limit`): two permits in slots 0 and 1, each with its
    // own larger token; the third is not granted; `status` names the kind,
    // the limit and both holders (the old `holder` field stays empty, which
    // `kind` explains to a newer client); a mutex acquire of the same name is
    // refused FailedPrecondition naming the kind.
    #[tokio::test]
    async fn permits_carry_slots_and_status_shows_every_holder() {
        let t = TestNode::start(Setup::default()).await;
        let mut lock = LockClient::new(serve_node(t.node.clone()).await);
        let a = granted(first(&mut lock, request(1, "pool", pb::LockMode::Unspecified, 2)).await);
        let b = granted(first(&mut lock, request(2, "pool", pb::LockMode::Unspecified, 2)).await);
        assert_eq!((a.slot, b.slot), (Some(0), Some(1)));
        assert!(b.fencing_token > a.fencing_token);
        match first(&mut lock, request(3, "pool", pb::LockMode::Unspecified, 2)).await {
            Ok(pb::acquire_response::Event::NotGranted(n)) => assert_eq!(n.reason, "held"),
            other => panic!("expected not granted, got {other:?}"),
        }
        let status = lock
            .status(pb::StatusRequest {
                resource: "pool".into(),
            })
            .await
            .expect("status")
            .into_inner();
        assert_eq!((status.kind.as_str(), status.limit), ("semaphore", 2));
        assert_eq!(status.holder, None);
        assert_eq!(
            status
                .holders
                .iter()
                .map(|h| (h.fencing_token, h.slot))
                .collect::<Vec<_>>(),
            vec![(a.fencing_token, Some(0)), (b.fencing_token, Some(1))]
        );
        let e = first(&mut lock, request(4, "pool", pb::LockMode::Unspecified, 0))
            .await
            .expect_err("a mutex acquire of a semaphore");
        assert_eq!(e.code(), Code::FailedPrecondition);
        assert!(
            e.message().contains("semaphore of 2 permits"),
            "{}",
            e.message()
        );
    }

    // Read-write: two readers are granted together, each answer in mode
    // SHARED; a writer's try-lock is not granted while they hold. Bad input:
    // a mode together with a limit, an unknown mode and a limit over 10,000
    // are refused InvalidArgument naming the field, and nothing is held.
    #[tokio::test]
    async fn readers_share_and_bad_kinds_name_their_field() {
        let t = TestNode::start(Setup::default()).await;
        let mut lock = LockClient::new(serve_node(t.node.clone()).await);
        for client in [1, 2] {
            let g =
                granted(first(&mut lock, request(client, "doc", pb::LockMode::Shared, 0)).await);
            assert_eq!(g.mode, pb::LockMode::Shared as i32);
            assert_eq!(g.slot, None);
        }
        match first(&mut lock, request(3, "doc", pb::LockMode::Exclusive, 0)).await {
            Ok(pb::acquire_response::Event::NotGranted(n)) => assert_eq!(n.reason, "held"),
            other => panic!("expected not granted, got {other:?}"),
        }
        let bad = [
            (request(4, "x", pb::LockMode::Shared, 3), "mode: "),
            (
                pb::AcquireRequest {
                    mode: 9,
                    ..request(5, "x", pb::LockMode::Unspecified, 0)
                },
                "mode: ",
            ),
            (
                request(6, "x", pb::LockMode::Unspecified, 10_001),
                "limit: ",
            ),
        ];
        for (r, field) in bad {
            let e = first(&mut lock, r).await.expect_err("refused");
            assert_eq!(e.code(), Code::InvalidArgument, "{e:?}");
            assert!(e.message().starts_with(field), "{}", e.message());
        }
        let status = lock
            .status(pb::StatusRequest {
                resource: "x".into(),
            })
            .await
            .expect("status")
            .into_inner();
        assert_eq!((status.kind.as_str(), status.holders.len()), ("", 0));
    }
}

/// Multi-locks over the real gRPC edge (docs/semantics.md "Multi-locks").
mod multi {
    use std::time::Duration;

    use futures::StreamExt as _;
    use tonic::Code;
    use warden_proto::v1 as pb;
    use warden_proto::v1::lock_client::LockClient;

    use super::serve_node;
    use crate::node::test_node::{Setup, TestNode};

    type Lock = LockClient<tonic::transport::Channel>;

    fn header(client_id: u64, request_id: u64) -> Option<pb::RequestHeader> {
        Some(pb::RequestHeader {
            client_id,
            request_id,
            acked_request_id: 0,
        })
    }

    fn request(client_id: u64, resources: &[&str], wait_timeout_ms: u64) -> pb::AcquireRequest {
        pb::AcquireRequest {
            header: header(client_id, 1),
            resources: resources.iter().map(|r| (*r).to_owned()).collect(),
            ttl_ms: 30_000,
            wait_timeout_ms,
            ..Default::default()
        }
    }

    fn single(client_id: u64, resource: &str, wait_timeout_ms: u64) -> pb::AcquireRequest {
        pb::AcquireRequest {
            header: header(client_id, 1),
            resource: resource.into(),
            ttl_ms: 30_000,
            wait_timeout_ms,
            ..Default::default()
        }
    }

    async fn within<T>(f: impl std::future::Future<Output = T>) -> T {
        tokio::time::timeout(Duration::from_secs(10), f)
            .await
            .expect("an answer within 10 s")
    }

    /// The answers of an Acquire stream: the first one and the stream.
    async fn open(
        lock: &mut Lock,
        r: pb::AcquireRequest,
    ) -> Result<
        (
            pb::acquire_response::Event,
            tonic::Streaming<pb::AcquireResponse>,
        ),
        tonic::Status,
    > {
        let mut stream = within(lock.acquire(r)).await?.into_inner();
        match within(stream.next()).await {
            Some(Ok(pb::AcquireResponse { event: Some(e) })) => Ok((e, stream)),
            Some(Err(s)) => Err(s),
            other => panic!("no answer: {other:?}"),
        }
    }

    fn tokens(g: &pb::Granted) -> Vec<(&str, u64)> {
        g.grants
            .iter()
            .map(|t| (t.resource.as_str(), t.fencing_token))
            .collect()
    }

    async fn holder(lock: &mut Lock, resource: &str) -> Option<(u64, u64)> {
        within(lock.status(pb::StatusRequest {
            resource: resource.into(),
        }))
        .await
        .expect("status")
        .into_inner()
        .holder
        .map(|h| (h.lease_id, h.fencing_token))
    }

    // "Multi-locks": free resources are granted in one answer with a token
    // per resource (`Granted.grants`; `resource` and `fencing_token` are the
    // first's), `status` shows each resource's holder as for a mutex, and a
    // release naming the second resource frees both.
    #[tokio::test]
    async fn free_resources_are_granted_together_and_released_together() {
        let t = TestNode::start(Setup::default()).await;
        let mut lock = LockClient::new(serve_node(t.node.clone()).await);
        let (e, _) = open(&mut lock, request(1, &["a", "b", "c"], 0))
            .await
            .expect("acquire");
        let pb::acquire_response::Event::Granted(g) = e else {
            panic!("expected a grant, got {e:?}")
        };
        assert_eq!(g.resource, "a");
        let (t1, t2, t3) = (g.fencing_token, g.fencing_token + 1, g.fencing_token + 2);
        assert_eq!(tokens(&g), vec![("a", t1), ("b", t2), ("c", t3)]);
        for (r, token) in [("a", t1), ("b", t2), ("c", t3)] {
            assert_eq!(holder(&mut lock, r).await, Some((g.lease_id, token)));
        }
        let released = within(lock.release(pb::ReleaseRequest {
            header: header(1, 2),
            resource: "b".into(),
            lease_id: g.lease_id,
            fencing_token: t2,
        }))
        .await
        .expect("release")
        .into_inner();
        assert!(released.released && released.resource == "b");
        for r in ["a", "b", "c"] {
            assert_eq!(holder(&mut lock, r).await, None, "{r} freed");
        }
    }

    // "Multi-locks", S8: a waiting multi-lock is answered on its stream when
    // the entry that frees its last blocked resource grants all of them; a
    // try-lock on its free, reserved resource meanwhile is not granted with
    // reason "reserved".
    #[tokio::test]
    async fn a_queued_multi_lock_is_granted_on_its_stream_and_reserves_its_free_resource() {
        let t = TestNode::start(Setup::default()).await;
        let mut lock = LockClient::new(serve_node(t.node.clone()).await);
        let (e, _) = open(&mut lock, single(1, "b", 0)).await.expect("hold b");
        let pb::acquire_response::Event::Granted(b) = e else {
            panic!("{e:?}")
        };
        let (e, mut waiting) = open(&mut lock, request(2, &["a", "b"], 60_000))
            .await
            .expect("queue");
        assert!(
            matches!(e, pb::acquire_response::Event::Queued(ref q) if q.position == 1),
            "{e:?}"
        );
        let (e, _) = open(&mut lock, single(3, "a", 0)).await.expect("try-lock");
        match e {
            pb::acquire_response::Event::NotGranted(n) => {
                assert_eq!((n.resource.as_str(), n.reason.as_str()), ("a", "reserved"))
            }
            other => panic!("expected not granted, got {other:?}"),
        }
        within(lock.release(pb::ReleaseRequest {
            header: header(1, 2),
            resource: "b".into(),
            lease_id: b.lease_id,
            fencing_token: b.fencing_token,
        }))
        .await
        .expect("release b");
        let g = loop {
            match within(waiting.next()).await {
                Some(Ok(pb::AcquireResponse {
                    event: Some(pb::acquire_response::Event::Granted(g)),
                })) => break g,
                Some(Ok(pb::AcquireResponse {
                    event: Some(pb::acquire_response::Event::Queued(_)),
                })) => continue,
                other => panic!("expected the grant, got {other:?}"),
            }
        };
        assert_eq!(g.resource, "a");
        assert_eq!(
            tokens(&g),
            vec![("a", b.fencing_token + 1), ("b", b.fencing_token + 2)]
        );
        assert_eq!(
            holder(&mut lock, "b").await,
            Some((g.lease_id, b.fencing_token + 2))
        );
    }

    // "What bad input gets", "Multi-locks": a duplicate, more than 64
    // resources, a `resource` other than the first and a mode are refused
    // InvalidArgument naming the field; a lease that already holds one of
    // the resources is refused FailedPrecondition (field `resources`).
    #[tokio::test]
    async fn bad_multi_locks_are_refused_naming_the_field() {
        let t = TestNode::start(Setup::default()).await;
        let mut lock = LockClient::new(serve_node(t.node.clone()).await);
        let many: Vec<String> = (0..65).map(|i| format!("r{i}")).collect();
        let many: Vec<&str> = many.iter().map(String::as_str).collect();
        let bad = [
            (request(1, &["a", "a"], 0), "resources: ", "twice"),
            (request(2, &many, 0), "resources: ", "1..=64"),
            (
                pb::AcquireRequest {
                    resource: "b".into(),
                    ..request(3, &["a", "b"], 0)
                },
                "resource: ",
                "first",
            ),
            (
                pb::AcquireRequest {
                    mode: pb::LockMode::Shared as i32,
                    ..request(4, &["a", "b"], 0)
                },
                "mode: ",
                "mutexes",
            ),
        ];
        for (r, field, says) in bad {
            let e = open(&mut lock, r).await.expect_err("refused");
            assert_eq!(e.code(), Code::InvalidArgument, "{e:?}");
            assert!(e.message().starts_with(field), "{}", e.message());
            assert!(e.message().contains(says), "{}", e.message());
        }
        let (e, _) = open(&mut lock, single(5, "a", 0)).await.expect("hold a");
        let pb::acquire_response::Event::Granted(a) = e else {
            panic!("{e:?}")
        };
        let e = open(
            &mut lock,
            pb::AcquireRequest {
                header: header(5, 2),
                resources: vec!["b".into(), "a".into()],
                lease_id: a.lease_id,
                ..Default::default()
            },
        )
        .await
        .expect_err("its lease holds a");
        assert_eq!(e.code(), Code::FailedPrecondition, "{e:?}");
        assert!(e.message().starts_with("resources: "), "{}", e.message());
        assert_eq!(holder(&mut lock, "b").await, None);
    }
}

/// Max-hold through the gRPC edge (docs/semantics.md "Max-hold").
mod max_hold {
    use std::time::Duration;

    use futures::StreamExt as _;
    use tonic::Code;
    use warden_proto::v1 as pb;
    use warden_proto::v1::lock_client::LockClient;

    use super::serve_node;
    use crate::node::test_node::{Setup, TestNode};

    type Lock = LockClient<tonic::transport::Channel>;

    fn request(
        client_id: u64,
        resource: &str,
        wait_timeout_ms: u64,
        max_hold_ms: u64,
    ) -> pb::AcquireRequest {
        pb::AcquireRequest {
            header: Some(pb::RequestHeader {
                client_id,
                request_id: 1,
                acked_request_id: 0,
            }),
            resource: resource.into(),
            ttl_ms: 2_000,
            wait_timeout_ms,
            max_hold_ms,
            ..Default::default()
        }
    }

    /// The first answer of an Acquire stream and the stream, or its status.
    async fn open(
        lock: &mut Lock,
        r: pb::AcquireRequest,
    ) -> Result<
        (
            pb::acquire_response::Event,
            tonic::Streaming<pb::AcquireResponse>,
        ),
        tonic::Status,
    > {
        let answer = async {
            let mut stream = lock.acquire(r).await?.into_inner();
            match stream.next().await {
                Some(Ok(pb::AcquireResponse { event: Some(e) })) => Ok((e, stream)),
                Some(Err(s)) => Err(s),
                other => panic!("no answer: {other:?}"),
            }
        };
        tokio::time::timeout(Duration::from_secs(10), answer)
            .await
            .expect("an answer within 10 s")
    }

    // "Max-hold": a grant with max_hold_ms = D on a session lease renewed
    // every 200 ms (TTL 2 s, so renewals alone would keep it for ever)
    // answers `Granted.max_hold_ms` = D and ends no earlier than D and no
    // later than D + E after it was granted: the waiter queued behind it is
    // granted then, with a larger token, while the session lease is still
    // live (only the grant ended). A wait on the event with a deadline, no
    // sleep to synchronise.
    #[tokio::test]
    async fn a_renewed_grant_ends_at_its_max_hold_and_the_waiter_gets_it() {
        const D: u64 = 1_000;
        const E: u64 = 2_500;
        let t = TestNode::start(Setup::default()).await;
        let channel = serve_node(t.node.clone()).await;
        let mut lock = LockClient::new(channel.clone());
        let mut leases = warden_proto::v1::lease_client::LeaseClient::new(channel.clone());
        let session = leases
            .lease_grant(pb::LeaseGrantRequest {
                header: Some(pb::RequestHeader {
                    client_id: 1,
                    request_id: 1,
                    acked_request_id: 0,
                }),
                ttl_ms: 2_000,
            })
            .await
            .expect("lease grant")
            .into_inner()
            .lease_id;
        let started = tokio::time::Instant::now();
        let held = pb::AcquireRequest {
            header: Some(pb::RequestHeader {
                client_id: 1,
                request_id: 2,
                acked_request_id: 0,
            }),
            ttl_ms: 0,
            lease_id: session,
            ..request(1, "job", 0, D)
        };
        let (first, _held) = open(&mut lock, held).await.expect("acquire");
        let pb::acquire_response::Event::Granted(g) = first else {
            panic!("expected a grant, got {first:?}")
        };
        assert_eq!((g.lease_id, g.max_hold_ms), (session, D));
        let (queued, mut waiting) = open(&mut lock, request(2, "job", 30_000, 0))
            .await
            .expect("queue");
        assert!(
            matches!(queued, pb::acquire_response::Event::Queued(_)),
            "{queued:?}"
        );
        // Renew the session until the waiter is granted (and after).
        let mut renewer = LockClient::new(channel);
        let renewing = tokio::spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_millis(200));
            for sequence in 1.. {
                tick.tick().await;
                let r = renewer
                    .renew(pb::RenewRequest {
                        lease_id: session,
                        client_id: 1,
                        sequence,
                    })
                    .await;
                if let Err(e) = r {
                    return Err((sequence, e));
                }
            }
            Ok(())
        });
        let next = tokio::time::timeout(Duration::from_millis(D + E + 2_000), async {
            loop {
                match waiting.next().await {
                    Some(Ok(pb::AcquireResponse {
                        event: Some(pb::acquire_response::Event::Granted(n)),
                    })) => return n,
                    Some(Ok(_)) => continue,
                    other => panic!("the waiter's stream ended: {other:?}"),
                }
            }
        })
        .await
        .expect("the waiter is granted within D + E");
        let held_for = started.elapsed();
        assert!(next.fencing_token > g.fencing_token, "S2");
        assert_eq!(next.max_hold_ms, 0, "the waiter asked for no max-hold");
        assert!(
            held_for >= Duration::from_millis(D),
            "ended after {held_for:?}, before its max-hold"
        );
        assert!(
            held_for <= Duration::from_millis(D + E),
            "ended after {held_for:?}, later than D + E"
        );
        // The session lives on: only the grant ended.
        assert!(!renewing.is_finished(), "a renewal failed: {renewing:?}");
        renewing.abort();
        let ttl = leases
            .lease_time_to_live(pb::LeaseTimeToLiveRequest { lease_id: session })
            .await
            .expect("time to live")
            .into_inner();
        assert!(ttl.ttl_remaining_ms > 0 && ttl.locks.is_empty(), "{ttl:?}");
    }

    // "What bad input gets" (docs/semantics.md "Max-hold"): a max-hold under
    // 1 s, over 24 h, with a wait as long, or on a multi-lock is refused
    // with InvalidArgument naming the field and the limit; nothing is held.
    #[tokio::test]
    async fn bad_max_holds_are_refused_naming_the_field() {
        let t = TestNode::start(Setup::default()).await;
        let mut lock = LockClient::new(serve_node(t.node.clone()).await);
        let cases = [
            (request(1, "r", 0, 999), "max_hold_ms", "1000"),
            (request(2, "r", 0, 86_400_001), "max_hold_ms", "86400000"),
            (request(3, "r", 5_000, 5_000), "wait_timeout_ms", "5000"),
            (
                pb::AcquireRequest {
                    resource: String::new(),
                    resources: vec!["a".into(), "b".into()],
                    ..request(4, "", 0, 5_000)
                },
                "max_hold_ms",
                "multi-lock",
            ),
        ];
        for (r, field, limit) in cases {
            let e = open(&mut lock, r).await.expect_err("refused");
            assert_eq!(e.code(), Code::InvalidArgument, "{e:?}");
            assert!(e.message().contains(field), "{}", e.message());
            assert!(e.message().contains(limit), "{}", e.message());
        }
        // Nothing was held: a try-lock of each name is granted.
        for (client, name) in [(10, "r"), (11, "a"), (12, "b")] {
            let (e, _) = open(&mut lock, request(client, name, 0, 0))
                .await
                .expect("try-lock");
            assert!(
                matches!(e, pb::acquire_response::Event::Granted(_)),
                "{e:?}"
            );
        }
    }
}

mod save_snapshot_stream {
    use std::sync::Arc;
    use std::time::Duration;

    use futures::StreamExt as _;
    use tonic::{Code, Status};
    use warden_core::types::Permission;
    use warden_proto::v1 as pb;
    use warden_proto::v1::admin_client::AdminClient;
    use warden_tls::{ClientTls, NodeTls};

    use crate::node::test_node::{header, Setup, TestNode};
    use crate::services::admin::AdminService;

    /// Data bytes per stream message in these tests: small, so a small
    /// table travels as several messages.
    const CHUNK_BYTES: usize = 64;

    async fn within<T>(f: impl std::future::Future<Output = T>) -> T {
        tokio::time::timeout(Duration::from_secs(10), f)
            .await
            .expect("an answer within 10 s")
    }

    /// Serves the Admin service of `node` on 127.0.0.1:0 over `tls`
    /// (principals from client certificates), cutting snapshot streams
    /// into [`CHUNK_BYTES`]; returns the address.
    async fn serve_admin(node: Arc<crate::node::Node>, tls: &NodeTls) -> String {
        let cell = crate::node::NodeCell::default();
        cell.set(node);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let addr = listener.local_addr().expect("addr").to_string();
        let admin = AdminService::new(cell).with_snapshot_chunk_bytes(CHUNK_BYTES);
        let router = tonic::transport::Server::builder()
            .add_service(pb::admin_server::AdminServer::new(admin));
        let incoming = tls
            .server()
            .incoming(tokio_stream::wrappers::TcpListenerStream::new(listener));
        tokio::spawn(router.serve_with_incoming(incoming));
        addr
    }

    /// Every message of a `SaveSnapshotStream`, or the status it failed with.
    async fn stream(
        admin: &mut AdminClient<tonic::transport::Channel>,
    ) -> Result<Vec<pb::SaveSnapshotChunk>, Status> {
        let replies = within(admin.save_snapshot_stream(pb::SaveSnapshotRequest {}))
            .await?
            .into_inner();
        within(replies.collect::<Vec<_>>())
            .await
            .into_iter()
            .collect()
    }

    // admin.proto SaveSnapshotStream, over the real gRPC edge with mutual
    // TLS: root (admin on "" always) gets a head with the same metadata as
    // the one-message SaveSnapshot and `data_bytes` = the data's length,
    // then more than 3 data messages of at most the chunk size, only the
    // last marked done, whose bytes are byte for byte the unary call's
    // (the same cut: nothing applied in between). The same permission as
    // SaveSnapshot, checked in the same place before anything is sent: a
    // principal with read but not admin is refused PermissionDenied naming
    // itself and the admin permission, an anonymous caller (no client
    // certificate) Unauthenticated; neither gets a message.
    #[tokio::test]
    async fn the_stream_carries_the_unary_snapshot_and_needs_admin() {
        let root = tempfile::tempdir().expect("tempdir");
        let set =
            warden_tls::mint::loopback_set(root.path(), &[1], &["root", "alice"]).expect("mint");
        let t = TestNode::start(Setup::default()).await;
        t.grant("alice", "", Permission::Read).await;
        for (client_id, resource) in [(11, "orders/1"), (12, "orders/2"), (13, "payments/7")] {
            let _: warden_core::types::AcquireReply = t
                .node
                .submit(
                    &None,
                    warden_core::types::Command::Acquire(warden_core::types::Acquire::mutex(
                        header(client_id, 1),
                        resource,
                        warden_core::types::LeaseSpec::New { ttl_ms: 60_000 },
                        0,
                        0,
                    )),
                )
                .await
                .expect("acquire");
        }
        let node_tls = NodeTls::load(&set.node_dirs[&1], 1).expect("node 1");
        let addr = serve_admin(t.node.clone(), &node_tls).await;

        let root_tls = ClientTls::load_client(&set.client_dir, "root").expect("root");
        let mut admin = AdminClient::new(root_tls.channel_lazy(&addr).expect("channel"));
        let unary = within(admin.save_snapshot(pb::SaveSnapshotRequest {}))
            .await
            .expect("unary save")
            .into_inner();
        let messages = stream(&mut admin).await.expect("stream save");
        let head = messages[0]
            .head
            .clone()
            .expect("the first message is the head");
        assert_eq!(
            head,
            pb::SaveSnapshotHead {
                cluster_id: unary.cluster_id.clone(),
                applied_index: unary.applied_index,
                term: unary.term,
                leader_node_id: unary.leader_node_id,
                node_id: unary.node_id,
                data_bytes: unary.data.len() as u64,
            }
        );
        assert!(messages[0].data.is_empty() && !messages[0].done);
        let data = &messages[1..];
        assert!(data.len() > 3, "{} data messages", data.len());
        assert_eq!(data.len(), unary.data.len().div_ceil(CHUNK_BYTES));
        assert!(data.iter().all(|m| m.head.is_none()));
        assert!(data.iter().all(|m| m.data.len() <= CHUNK_BYTES));
        assert_eq!(
            data.iter().map(|m| m.done).collect::<Vec<_>>(),
            (0..data.len())
                .map(|i| i + 1 == data.len())
                .collect::<Vec<_>>()
        );
        let joined: Vec<u8> = data.iter().flat_map(|m| m.data.clone()).collect();
        assert_eq!(joined, unary.data);
        assert!(warden_core::table::LockTable::from_snapshot(&joined).is_ok());

        let alice_tls = ClientTls::load_client(&set.client_dir, "alice").expect("alice");
        let mut alice = AdminClient::new(alice_tls.channel_lazy(&addr).expect("channel"));
        let e = stream(&mut alice).await.expect_err("alice has no admin");
        assert_eq!(e.code(), Code::PermissionDenied, "{e:?}");
        assert!(
            e.message().contains("principal alice") && e.message().contains("admin permission"),
            "{}",
            e.message()
        );
        let unary_refusal = within(alice.save_snapshot(pb::SaveSnapshotRequest {}))
            .await
            .expect_err("alice has no admin (unary)");
        assert_eq!(unary_refusal.message(), e.message());

        let anonymous = ClientTls::anonymous(&set.client_dir.join("ca.crt")).expect("anonymous");
        let mut nobody = AdminClient::new(anonymous.channel_lazy(&addr).expect("channel"));
        let e = stream(&mut nobody).await.expect_err("no certificate");
        assert_eq!(e.code(), Code::Unauthenticated, "{e:?}");
    }

    // An insecure node (every caller anonymous) refuses the stream as it
    // refuses SaveSnapshot without --insecure --allow-admin:
    // PermissionDenied naming the flag, no message sent.
    #[tokio::test]
    async fn an_insecure_node_refuses_the_stream_without_allow_admin() {
        let t = TestNode::start(Setup::default()).await;
        let mut admin = AdminClient::new({
            let cell = crate::node::NodeCell::default();
            cell.set(t.node.clone());
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
                .await
                .expect("bind");
            let addr = listener.local_addr().expect("addr");
            let router = tonic::transport::Server::builder()
                .add_service(pb::admin_server::AdminServer::new(AdminService::new(cell)));
            tokio::spawn(
                router
                    .serve_with_incoming(tokio_stream::wrappers::TcpListenerStream::new(listener)),
            );
            tonic::transport::Endpoint::from_shared(format!("http://{addr}"))
                .expect("endpoint")
                .connect_lazy()
        });
        let e = stream(&mut admin).await.expect_err("insecure");
        assert_eq!(e.code(), Code::PermissionDenied, "{e:?}");
        assert!(
            e.message().starts_with("snapshot save") && e.message().contains("--allow-admin"),
            "{}",
            e.message()
        );
    }
}
