//! Tests of [`super::principal`]: the mapping from a connection's identity,
//! and a real TLS connection on loopback through a tiny gRPC service that
//! answers with the principal its handler sees.

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
