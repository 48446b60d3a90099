//! The client over mutual TLS against a tonic server behind warden-tls'
//! acceptor (loopback, port 0, certificates minted in a temp dir): the
//! principal the server sees comes from the certificate named by
//! `ClientOptions::tls`; bad certs dirs are typed errors naming the file;
//! a server the client must not trust is refused with the reason.

use std::path::Path;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use futures::Stream;
use tokio_stream::wrappers::TcpListenerStream;
use tonic::{Request, Response, Status};
use warden_client::{Client, ClientError, ClientOptions, TlsOptions};
use warden_proto::v1;
use warden_proto::v1::lock_server::{Lock, LockServer};
use warden_tls::mint::{self, CertOptions};
use warden_tls::{ClientTls, NodeTls};

/// A `Lock` service whose `ClusterStatus` answers with the identity the
/// TLS handshake gave the call (in `cluster_id`); nothing else is served.
#[derive(Clone)]
struct WhoAmI;

type AcquireStream = Pin<Box<dyn Stream<Item = Result<v1::AcquireResponse, Status>> + Send>>;
type CallsStream = Pin<Box<dyn Stream<Item = Result<v1::CallResponse, Status>> + Send>>;

fn none<T>() -> Result<T, Status> {
    Err(Status::unimplemented("test server: ClusterStatus only"))
}

#[tonic::async_trait]
impl Lock for WhoAmI {
    type AcquireStream = AcquireStream;
    type CallsStream = CallsStream;

    async fn calls(
        &self,
        _: Request<tonic::Streaming<v1::CallRequest>>,
    ) -> Result<Response<CallsStream>, Status> {
        none()
    }
    async fn acquire(
        &self,
        _: Request<v1::AcquireRequest>,
    ) -> Result<Response<AcquireStream>, Status> {
        none()
    }
    async fn renew(
        &self,
        _: Request<v1::RenewRequest>,
    ) -> Result<Response<v1::RenewResponse>, Status> {
        none()
    }
    async fn release(
        &self,
        _: Request<v1::ReleaseRequest>,
    ) -> Result<Response<v1::ReleaseResponse>, Status> {
        none()
    }
    async fn status(
        &self,
        _: Request<v1::StatusRequest>,
    ) -> Result<Response<v1::StatusResponse>, Status> {
        none()
    }
    async fn validate(
        &self,
        _: Request<v1::ValidateRequest>,
    ) -> Result<Response<v1::ValidateResponse>, Status> {
        none()
    }
    async fn lease_revoke(
        &self,
        _: Request<v1::LeaseRevokeRequest>,
    ) -> Result<Response<v1::LeaseRevokeResponse>, Status> {
        none()
    }
    async fn proclaim(
        &self,
        _: Request<v1::ProclaimRequest>,
    ) -> Result<Response<v1::ProclaimResponse>, Status> {
        none()
    }
    async fn cancel_wait(
        &self,
        _: Request<v1::CancelWaitRequest>,
    ) -> Result<Response<v1::CancelWaitResponse>, Status> {
        none()
    }
    async fn cluster_status(
        &self,
        request: Request<v1::ClusterStatusRequest>,
    ) -> Result<Response<v1::ClusterStatusResponse>, Status> {
        let identity = match warden_tls::peer_identity(&request) {
            Some(identity) => identity.to_string(),
            None => "no TLS".to_string(),
        };
        Ok(Response::new(v1::ClusterStatusResponse {
            cluster_id: identity,
            leader_id: 1,
            node_id: 1,
            ..Default::default()
        }))
    }
}

/// Serves [`WhoAmI`] over node `id`'s certificate in `dir`; returns its
/// `127.0.0.1:port`.
async fn serve(dir: &Path, id: u64) -> String {
    let tls = NodeTls::load(dir, id).expect("node certs");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let incoming = tls.server().incoming(TcpListenerStream::new(listener));
    tokio::spawn(async move {
        tonic::transport::Server::builder()
            .add_service(LockServer::new(WhoAmI))
            .serve_with_incoming(incoming)
            .await
    });
    addr
}

fn tls_options(dir: &Path, user: &str) -> ClientOptions {
    ClientOptions {
        tls: Some(TlsOptions::new(dir, user)),
        deadline: Duration::from_secs(2),
        ..ClientOptions::default()
    }
}

// Identity: the principal a node sees comes from the verified handshake, so
// a client with `tls` set must present its user's certificate: the server
// names that principal (by IP and by host name); a `ClientTls` passed as
// the connector does the same.
#[tokio::test]
async fn the_server_sees_the_principal_of_the_options_certificate() {
    let root = tempfile::tempdir().unwrap();
    let set = mint::loopback_set(root.path(), &[1], &["root", "alice"]).unwrap();
    let addr = serve(&set.node_dirs[&1], 1).await;

    for user in ["root", "alice"] {
        let client = Client::connect(vec![addr.clone()], tls_options(&set.client_dir, user))
            .await
            .unwrap();
        let status = client.cluster_status().await.unwrap();
        assert_eq!(status.cluster_id, format!("client {user}"));
    }

    // By host name too: the node certificate names localhost.
    let port = addr.rsplit(':').next().unwrap();
    let by_name = Client::connect(
        vec![format!("localhost:{port}")],
        tls_options(&set.client_dir, "alice"),
    )
    .await
    .unwrap();
    assert_eq!(
        by_name.cluster_status().await.unwrap().cluster_id,
        "client alice"
    );

    let own = ClientTls::load_client(&set.client_dir, "alice").unwrap();
    let client = Client::connect(
        vec![addr.clone()],
        ClientOptions {
            connector: Some(Arc::new(own)),
            ..ClientOptions::default()
        },
    )
    .await
    .unwrap();
    assert_eq!(
        client.cluster_status().await.unwrap().cluster_id,
        "client alice"
    );
}

/// The `file` and message of a [`ClientError::Tls`]; panics otherwise.
async fn tls_error(options: ClientOptions) -> (Option<std::path::PathBuf>, String) {
    match Client::connect(vec!["127.0.0.1:1".into()], options).await {
        Err(ClientError::Tls { file, message }) => (file, message),
        other => panic!("expected ClientError::Tls, got {other:?}"),
    }
}

// "What bad input gets": a certs dir with a missing, unreadable, broken or
// mismatched file fails `connect` with ClientError::Tls naming that file
// (never a panic, nothing sent); a user name that is no principal names
// `user`; TLS options and a connector together are refused.
#[tokio::test]
async fn bad_certs_dirs_fail_connect_naming_the_file() {
    let root = tempfile::tempdir().unwrap();
    let set = mint::loopback_set(root.path(), &[1], &["alice", "bob"]).unwrap();
    let dir = &set.client_dir;

    // No such dir: the CA bundle is the first file read.
    let nowhere = root.path().join("nowhere");
    let (file, message) = tls_error(tls_options(&nowhere, "alice")).await;
    assert_eq!(file, Some(nowhere.join("ca.crt")));
    assert!(message.contains("nowhere/ca.crt: missing"), "{message}");

    // A user without a certificate.
    let (file, message) = tls_error(tls_options(dir, "carol")).await;
    assert_eq!(file, Some(dir.join("client.carol.crt")));
    assert!(message.contains("client.carol.crt: missing"), "{message}");

    // Not PEM.
    let broken = root.path().join("broken");
    std::fs::create_dir(&broken).unwrap();
    std::fs::copy(dir.join("ca.crt"), broken.join("ca.crt")).unwrap();
    std::fs::write(broken.join("client.alice.crt"), "not a certificate").unwrap();
    std::fs::copy(
        dir.join("client.alice.key"),
        broken.join("client.alice.key"),
    )
    .unwrap();
    let (file, message) = tls_error(tls_options(&broken, "alice")).await;
    assert_eq!(file, Some(broken.join("client.alice.crt")));
    assert!(message.contains("client.alice.crt"), "{message}");

    // bob's key beside alice's certificate: the key is named.
    std::fs::copy(
        dir.join("client.alice.crt"),
        broken.join("client.alice.crt"),
    )
    .unwrap();
    std::fs::copy(dir.join("client.bob.key"), broken.join("client.alice.key")).unwrap();
    let (file, message) = tls_error(tls_options(&broken, "alice")).await;
    assert_eq!(file, Some(broken.join("client.alice.key")));
    assert!(message.contains("does not match"), "{message}");

    // A CA bundle of another CA: alice's certificate does not chain to it.
    let other = tempfile::tempdir().unwrap();
    let other_set = mint::loopback_set(other.path(), &[], &[]).unwrap();
    std::fs::copy(other_set.client_dir.join("ca.crt"), broken.join("ca.crt")).unwrap();
    std::fs::copy(
        dir.join("client.alice.key"),
        broken.join("client.alice.key"),
    )
    .unwrap();
    let (file, message) = tls_error(tls_options(&broken, "alice")).await;
    assert_eq!(file, Some(broken.join("client.alice.crt")));
    assert!(message.contains("not signed by any CA"), "{message}");

    // A node certificate offered as a client's: refused before use.
    let node_dir = &set.node_dirs[&1];
    std::fs::copy(node_dir.join("node.crt"), broken.join("client.node1.crt")).unwrap();
    std::fs::copy(node_dir.join("node.key"), broken.join("client.node1.key")).unwrap();
    std::fs::copy(dir.join("ca.crt"), broken.join("ca.crt")).unwrap();
    let (_, message) = tls_error(tls_options(&broken, "node1")).await;
    assert!(message.contains("node"), "{message}");

    // Not a principal: `user`, and no file.
    for user in ["", "node", "a b", &"x".repeat(65)] {
        let (file, message) = tls_error(tls_options(dir, user)).await;
        assert_eq!(file, None, "{user:?}");
        assert!(message.starts_with("user: "), "{user:?}: {message}");
    }

    // An expired certificate.
    mint::create_client(
        dir,
        &set.ca_key,
        "dave",
        &CertOptions {
            validity: Some(mint::Validity {
                not_before: std::time::SystemTime::now() - Duration::from_secs(7200),
                not_after: std::time::SystemTime::now() - Duration::from_secs(3600),
            }),
            ..CertOptions::default()
        },
    )
    .unwrap();
    let (file, message) = tls_error(tls_options(dir, "dave")).await;
    assert_eq!(file, Some(dir.join("client.dave.crt")));
    assert!(message.contains("expired"), "{message}");

    // Both ways of opening channels at once.
    let both = ClientOptions {
        connector: Some(Arc::new(warden_client::transport::TcpConnector)),
        ..tls_options(dir, "alice")
    };
    match Client::connect(vec!["127.0.0.1:1".into()], both).await {
        Err(ClientError::InvalidArgument { message }) => {
            assert!(message.contains("tls and connector"), "{message}")
        }
        other => panic!("expected InvalidArgument, got {other:?}"),
    }
}

// The server must be a node of the client's CA: a node certificate of
// another CA fails the handshake, the call ends at its deadline as
// Unavailable, and the error quotes why (rustls' verdict), not just
// "transport error".
#[tokio::test]
async fn a_server_of_another_ca_is_refused_with_the_reason() {
    let ours = tempfile::tempdir().unwrap();
    let ours = mint::loopback_set(ours.path(), &[], &["alice"]).unwrap();
    let theirs = tempfile::tempdir().unwrap();
    let theirs = mint::loopback_set(theirs.path(), &[1], &[]).unwrap();
    let addr = serve(&theirs.node_dirs[&1], 1).await;

    let client = Client::connect(
        vec![addr.clone()],
        ClientOptions {
            deadline: Duration::from_millis(600),
            ..tls_options(&ours.client_dir, "alice")
        },
    )
    .await
    .unwrap();
    match client.cluster_status().await {
        Err(ClientError::Unavailable {
            tried, last_error, ..
        }) => {
            assert_eq!(tried, vec![addr.clone()]);
            assert!(
                last_error.contains("TLS handshake failed") && last_error.contains("UnknownIssuer"),
                "{last_error}"
            );
        }
        other => panic!("expected Unavailable, got {other:?}"),
    }
}

// Plaintext is only for insecure clusters: a client without `tls` gets no
// answer from a TLS node (the handshake it never starts is refused).
#[tokio::test]
async fn a_plaintext_client_gets_no_answer_from_a_tls_node() {
    let root = tempfile::tempdir().unwrap();
    let set = mint::loopback_set(root.path(), &[1], &[]).unwrap();
    let addr = serve(&set.node_dirs[&1], 1).await;
    let client = Client::connect(
        vec![addr],
        ClientOptions {
            deadline: Duration::from_millis(600),
            ..ClientOptions::default()
        },
    )
    .await
    .unwrap();
    let e = client.cluster_status().await.unwrap_err();
    assert!(e.is_unavailable(), "{e}");
}
