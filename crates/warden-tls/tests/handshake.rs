//! Real handshakes on loopback: a tonic server over `ServerTls::incoming`,
//! tonic clients over `TlsConnector`, and raw rustls clients presenting
//! what the loaders refuse to build.

mod common;

use std::time::{Duration, Instant, SystemTime};

use common::{
    identity_of, raw_client_config, raw_handshake, sign_custom, who_am_i, Logs, TestServer,
};
use rcgen::ExtendedKeyUsagePurpose as Eku;
use warden_tls::mint::{self, CaOptions, CertOptions, Validity};
use warden_tls::{
    CertIdentity, ClientTls, ConnectError, IdentityError, NodeTls, PrincipalError, ServerTls,
};

const DAY: Duration = Duration::from_secs(24 * 3600);

// The identity a handler sees comes from the verified handshake: a client
// certificate gives Client{principal}, a node certificate Node{id}, no
// certificate Anonymous; and a peer connector insists on the peer it dials.
#[tokio::test]
async fn the_server_sees_client_node_and_anonymous_identities() {
    let root = tempfile::tempdir().unwrap();
    let set = mint::loopback_set(root.path(), &[1, 3], &["alice"]).unwrap();
    let node1 = NodeTls::load(&set.node_dirs[&1], 1).unwrap();
    let server = TestServer::start(node1.server()).await;

    let alice = ClientTls::load_client(&set.client_dir, "alice").unwrap();
    let answer = who_am_i(alice.channel_lazy(&server.addr_text()).unwrap())
        .await
        .unwrap();
    assert_eq!(identity_of(&answer), "client alice", "{answer}");
    assert!(answer.contains("|127.0.0.1:"), "{answer}");

    let node3 = NodeTls::load(&set.node_dirs[&3], 3).unwrap();
    let peer = warden_tls::endpoint(&server.addr_text())
        .unwrap()
        .connect_with_connector_lazy(node3.peer_connector(1));
    assert_eq!(identity_of(&who_am_i(peer).await.unwrap()), "node 3");

    let anonymous = ClientTls::anonymous(&set.client_dir.join("ca.crt")).unwrap();
    let answer = who_am_i(anonymous.channel_lazy(&server.addr_text()).unwrap())
        .await
        .unwrap();
    assert_eq!(identity_of(&answer), "anonymous");

    // Dialling "node 2" at node 1's address: refused after the handshake,
    // before any request.
    let uri: tonic::transport::Uri = format!("http://{}", server.addr).parse().unwrap();
    match node3.peer_connector(2).connect(&uri).await {
        Err(ConnectError::WrongNode {
            expected: 2,
            found: 1,
            ..
        }) => {}
        other => panic!("expected WrongNode, got {other:?}"),
    }
    // By DNS name: the node certificate names localhost too.
    let uri: tonic::transport::Uri = format!("http://localhost:{}", server.addr.port())
        .parse()
        .unwrap();
    assert!(node3.peer_connector(1).connect(&uri).await.is_ok());
}

// Server-name verification: the node certificate's SANs must match the
// host the client dials.
#[tokio::test]
async fn a_host_the_node_certificate_does_not_name_fails_verification() {
    let root = tempfile::tempdir().unwrap();
    let set = mint::loopback_set(root.path(), &[1], &["alice"]).unwrap();
    // A node certificate for another host only.
    mint::create_node(
        &set.node_dirs[&1],
        &set.ca_key,
        1,
        &["db1.example.com"],
        &CertOptions {
            overwrite: true,
            ..CertOptions::default()
        },
    )
    .unwrap();
    let server = TestServer::start(&ServerTls::load(&set.node_dirs[&1], 1).unwrap()).await;
    let alice = ClientTls::load_client(&set.client_dir, "alice").unwrap();
    let uri: tonic::transport::Uri = format!("http://{}", server.addr).parse().unwrap();
    match alice.connector().connect(&uri).await {
        Err(ConnectError::Handshake { source, .. }) => {
            assert!(
                source.to_string().contains("not valid for name"),
                "{source}"
            );
        }
        other => panic!("expected a handshake error, got {other:?}"),
    }
}

/// Mints a second, unrelated CA with a client certificate `mallory`.
fn other_ca_client(root: &std::path::Path) -> (std::path::PathBuf, std::path::PathBuf) {
    let dir = root.join("other");
    let key = root.join("other-ca.key");
    mint::create_ca(&dir, &key, &CaOptions::default()).unwrap();
    let m = mint::create_client(&dir, &key, "mallory", &CertOptions::default()).unwrap();
    (m.cert_file, m.key_file)
}

// A certificate from another CA, and an expired one, fail the handshake,
// and the server logs one warn line naming the remote address and reason.
#[tokio::test]
async fn another_ca_and_an_expired_certificate_fail_with_one_warn_line_each() {
    let (logs, _guard) = Logs::capture();
    let root = tempfile::tempdir().unwrap();
    let set = mint::loopback_set(root.path(), &[1], &["alice"]).unwrap();
    let server = TestServer::start(&ServerTls::load(&set.node_dirs[&1], 1).unwrap()).await;
    let ca_file = set.client_dir.join("ca.crt");

    let (cert, key) = other_ca_client(root.path());
    let config = raw_client_config(&ca_file, Some((&cert, &key)), &[b"h2"]);
    assert!(raw_handshake(server.addr, config).await.is_err());
    let lines = logs.wait_for_warns("not signed by a trusted CA", 1).await;
    assert_eq!(lines.len(), 1, "{}", logs.text());
    assert!(lines[0].contains("TLS handshake failed"), "{}", lines[0]);
    assert!(lines[0].contains("remote=127.0.0.1:"), "{}", lines[0]);

    let now = SystemTime::now();
    let expired = mint::create_client(
        &set.client_dir,
        &set.ca_key,
        "bob",
        &CertOptions {
            overwrite: false,
            validity: Some(Validity {
                not_before: now - 2 * DAY,
                not_after: now - DAY,
            }),
            cluster: None,
        },
    )
    .unwrap();
    let config = raw_client_config(
        &ca_file,
        Some((&expired.cert_file, &expired.key_file)),
        &[b"h2"],
    );
    assert!(raw_handshake(server.addr, config).await.is_err());
    let lines = logs.wait_for_warns("certificate expired", 1).await;
    assert_eq!(lines.len(), 1, "{}", logs.text());

    // No key material in the log.
    let text = logs.text();
    assert!(!text.contains("PRIVATE KEY"), "{text}");
    // Alice still gets in.
    let alice = ClientTls::load_client(&set.client_dir, "alice").unwrap();
    let answer = who_am_i(alice.channel_lazy(&server.addr_text()).unwrap())
        .await
        .unwrap();
    assert_eq!(identity_of(&answer), "client alice");
}

// What bad input gets (a scanner): many failed handshakes give at most one
// line per reason per second, not one per connection; garbage that is not
// TLS is one of those reasons.
#[tokio::test]
async fn many_failures_give_few_lines() {
    let (logs, _guard) = Logs::capture();
    let root = tempfile::tempdir().unwrap();
    let set = mint::loopback_set(root.path(), &[1], &[]).unwrap();
    let server = TestServer::start(&ServerTls::load(&set.node_dirs[&1], 1).unwrap()).await;
    let (cert, key) = other_ca_client(root.path());
    let config = raw_client_config(
        &set.client_dir.join("ca.crt"),
        Some((&cert, &key)),
        &[b"h2"],
    );
    let started = Instant::now();
    let attempts = 30;
    for _ in 0..attempts {
        assert!(raw_handshake(server.addr, config.clone()).await.is_err());
    }
    for _ in 0..attempts {
        let mut tcp = tokio::net::TcpStream::connect(server.addr).await.unwrap();
        tokio::io::AsyncWriteExt::write_all(&mut tcp, b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
            .await
            .unwrap();
        let mut buf = Vec::new();
        // The server closes after its alert.
        let _ = tokio::time::timeout(
            Duration::from_secs(5),
            tokio::io::AsyncReadExt::read_to_end(&mut tcp, &mut buf),
        )
        .await;
    }
    let elapsed = started.elapsed();
    let unknown_ca = logs.wait_for_warns("not signed by a trusted CA", 1).await;
    let not_tls = logs.wait_for_warns("reason=\"not TLS\"", 1).await;
    let allowed = elapsed.as_secs() as usize + 2;
    assert!(
        (1..=allowed).contains(&unknown_ca.len()),
        "{} lines for {attempts} failures in {elapsed:?}",
        unknown_ca.len()
    );
    assert!(
        (1..=allowed).contains(&not_tls.len()),
        "{} lines for {attempts} failures in {elapsed:?}:\n{}",
        not_tls.len(),
        logs.text()
    );
}

// A client certificate never yields Identity::Node: a CA-signed certificate
// whose common name reads like a node, or that carries a node URI without
// the node's serverAuth usage, carries no identity and fails the
// handshake; the mint refuses to make a client called `node`.
#[tokio::test]
async fn a_client_certificate_never_passes_for_a_node() {
    let (logs, _guard) = Logs::capture();
    let root = tempfile::tempdir().unwrap();
    let set = mint::loopback_set(root.path(), &[1], &[]).unwrap();
    let dir = &set.client_dir;
    let ca_file = dir.join("ca.crt");

    for name in ["node", "Node", "node-1", "node.3"] {
        match mint::create_client(dir, &set.ca_key, name, &CertOptions::default()) {
            Err(mint::MintError::BadName(PrincipalError::NodeLike { .. })) => {}
            other => panic!("{name}: expected a refusal, got {other:?}"),
        }
        assert!(!dir.join(format!("client.{name}.crt")).exists());
    }

    let (cn_node, cn_node_key) = sign_custom(
        dir,
        &set.ca_key,
        "node",
        &[],
        &[Eku::ClientAuth],
        root.path(),
        "cn-node",
    );
    let (uri_node, uri_node_key) = sign_custom(
        dir,
        &set.ca_key,
        "mallory",
        &["warden://node/1"],
        &[Eku::ClientAuth],
        root.path(),
        "uri-node",
    );
    let der = |file: &std::path::Path| {
        use rustls::pki_types::pem::PemObject;
        rustls::pki_types::CertificateDer::from_pem_file(file).unwrap()
    };
    assert!(matches!(
        CertIdentity::of(&der(&cn_node)),
        Err(IdentityError::BadPrincipal(PrincipalError::NodeLike { .. }))
    ));
    assert_eq!(
        CertIdentity::of(&der(&uri_node)),
        Err(IdentityError::NodeWithoutBothUsages)
    );

    let server = TestServer::start(&ServerTls::load(&set.node_dirs[&1], 1).unwrap()).await;
    for (cert, key) in [(&cn_node, &cn_node_key), (&uri_node, &uri_node_key)] {
        let config = raw_client_config(&ca_file, Some((cert, key)), &[b"h2"]);
        assert!(
            raw_handshake(server.addr, config).await.is_err(),
            "{} was accepted",
            cert.display()
        );
    }
    let lines = logs.wait_for_warns("no valid identity", 1).await;
    assert!(!lines.is_empty(), "{}", logs.text());
    assert!(!logs.text().contains("node 1|"), "{}", logs.text());
}

// The admin listener: the same reloadable config serves an axum Router over
// TLS with ALPN http/1.1, and /healthz works without a client certificate.
#[tokio::test]
async fn healthz_over_tls_without_a_client_certificate() {
    use axum::extract::ConnectInfo;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use warden_tls::PeerInfo;

    let root = tempfile::tempdir().unwrap();
    let set = mint::loopback_set(root.path(), &[1], &["alice"]).unwrap();
    let tls = ServerTls::load(&set.node_dirs[&1], 1).unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let app = axum::Router::new().route(
        "/healthz",
        axum::routing::get(|ConnectInfo(peer): ConnectInfo<PeerInfo>| async move {
            format!("ok {}", peer.identity())
        }),
    );
    let serve = tokio::spawn(async move {
        axum::serve(
            tls.listener(listener).unwrap(),
            app.into_make_service_with_connect_info::<PeerInfo>(),
        )
        .await
        .unwrap();
    });

    let get = |config: std::sync::Arc<rustls::ClientConfig>| async move {
        let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
        let mut tls = tokio_rustls::TlsConnector::from(config)
            .connect(
                rustls::pki_types::ServerName::try_from("127.0.0.1").unwrap(),
                tcp,
            )
            .await
            .unwrap();
        assert_eq!(tls.get_ref().1.alpn_protocol(), Some(&b"http/1.1"[..]));
        tls.write_all(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
            .await
            .unwrap();
        let mut response = String::new();
        tls.read_to_string(&mut response).await.unwrap();
        response
    };
    let ca_file = set.client_dir.join("ca.crt");
    let response = get(raw_client_config(&ca_file, None, &[b"http/1.1"])).await;
    assert!(response.starts_with("HTTP/1.1 200"), "{response}");
    assert!(response.ends_with("ok anonymous"), "{response}");

    let alice = (
        set.client_dir.join("client.alice.crt"),
        set.client_dir.join("client.alice.key"),
    );
    let response = get(raw_client_config(
        &ca_file,
        Some((&alice.0, &alice.1)),
        &[b"http/1.1"],
    ))
    .await;
    assert!(response.ends_with("ok client alice"), "{response}");
    serve.abort();
}

// Handshakes run concurrently: a client that connects and never sends a
// byte does not block others, and is closed at the handshake timeout.
#[tokio::test]
async fn a_silent_client_does_not_block_others_and_times_out() {
    let (logs, _guard) = Logs::capture();
    let root = tempfile::tempdir().unwrap();
    let set = mint::loopback_set(root.path(), &[1], &["alice"]).unwrap();
    let tls = ServerTls::load(&set.node_dirs[&1], 1).unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let incoming = tls.incoming_with(
        tokio_stream::wrappers::TcpListenerStream::new(listener),
        warden_tls::AcceptOptions {
            handshake_timeout: Duration::from_millis(500),
            ..warden_tls::AcceptOptions::default()
        },
    );
    let server = tokio::spawn(
        tonic::transport::Server::builder()
            .add_service(common::WhoAmI)
            .serve_with_incoming(incoming),
    );
    let mut silent = tokio::net::TcpStream::connect(addr).await.unwrap();
    let alice = ClientTls::load_client(&set.client_dir, "alice").unwrap();
    let answer = who_am_i(alice.channel_lazy(&addr.to_string()).unwrap())
        .await
        .unwrap();
    assert_eq!(identity_of(&answer), "client alice");
    // The silent one is closed by the timeout.
    let mut buf = [0u8; 1];
    let read = tokio::time::timeout(
        Duration::from_secs(5),
        tokio::io::AsyncReadExt::read(&mut silent, &mut buf),
    )
    .await
    .expect("closed within 5 s");
    assert!(matches!(read, Ok(0) | Err(_)), "{read:?}");
    let lines = logs.wait_for_warns("handshake timed out", 1).await;
    assert_eq!(lines.len(), 1, "{}", logs.text());
    server.abort();
}

// Clients and peers talk only to nodes: a server whose certificate chains
// to the CA and names the host, but carries no warden://node/ URI, is
// refused after the handshake, before any request is sent.
#[tokio::test]
async fn a_server_without_a_node_certificate_is_refused() {
    use rustls::pki_types::pem::PemObject;
    use std::sync::Arc;

    let root = tempfile::tempdir().unwrap();
    let set = mint::loopback_set(root.path(), &[1], &["alice"]).unwrap();
    let (cert, key) = common::sign_with_sans(
        &set.client_dir,
        &set.ca_key,
        "imposter",
        vec![rcgen::SanType::IpAddress("127.0.0.1".parse().unwrap())],
        &[Eku::ServerAuth],
        root.path(),
        "imposter",
    );
    let config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_protocol_versions(&[&rustls::version::TLS13])
    .unwrap()
    .with_no_client_auth()
    .with_single_cert(
        vec![rustls::pki_types::CertificateDer::from_pem_file(&cert).unwrap()],
        rustls::pki_types::PrivateKeyDer::from_pem_file(&key).unwrap(),
    )
    .unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let server = tokio::spawn(async move {
        let (tcp, _) = listener.accept().await.unwrap();
        let mut tls = acceptor.accept(tcp).await.unwrap();
        // Nothing must arrive: the client refuses before sending a byte.
        let mut buf = Vec::new();
        let _ = tokio::io::AsyncReadExt::read_to_end(&mut tls, &mut buf).await;
        buf
    });
    let alice = ClientTls::load_client(&set.client_dir, "alice").unwrap();
    let uri: tonic::transport::Uri = format!("http://{addr}").parse().unwrap();
    match alice.connector().connect(&uri).await {
        Err(ConnectError::NotANode { reason, .. }) => {
            assert!(reason.contains("imposter"), "{reason}")
        }
        other => panic!("expected NotANode, got {other:?}"),
    }
    let received = tokio::time::timeout(Duration::from_secs(5), server)
        .await
        .unwrap()
        .unwrap();
    assert!(
        received.is_empty(),
        "{} bytes reached the imposter",
        received.len()
    );
}

// docs/security.md "Certificates", cluster names (one CA serving several
// clusters): a node whose certificate names cluster "blue" serves a client
// and a peer of "blue" and fails the handshake of a client certificate of
// "green" from the same CA, of one that names no cluster, and of a node
// certificate of "green", with one warn line naming the reason. A client
// of "blue" refuses a node of "green" after the handshake. A node whose
// certificate names no cluster takes any of the CA's certificates, as
// before cluster names.
#[tokio::test]
async fn a_node_refuses_certificates_of_another_cluster_from_the_same_ca() {
    let (logs, _guard) = Logs::capture();
    let root = tempfile::tempdir().unwrap();
    let set = mint::loopback_set_in(root.path(), Some("blue"), &[1, 2], &["alice"]).unwrap();
    let ca = &set.ca_key;
    let other = |name: &str| CertOptions {
        cluster: Some(name.to_string()),
        ..CertOptions::default()
    };
    // Same CA, another cluster: client "mallory" and node 3 of "green".
    mint::create_client(&set.client_dir, ca, "mallory", &other("green")).unwrap();
    let green_node = root.path().join("green-node-3");
    std::fs::create_dir_all(&green_node).unwrap();
    std::fs::copy(set.client_dir.join("ca.crt"), green_node.join("ca.crt")).unwrap();
    mint::create_node(&green_node, ca, 3, &mint::LOOPBACK_HOSTS, &other("green")).unwrap();
    // A client certificate that names no cluster: a second CA without a
    // name, trusted by node 1 beside the first.
    let plain_dir = root.path().join("plain");
    let plain_ca = root.path().join("plain-ca.key");
    std::fs::create_dir_all(&plain_dir).unwrap();
    std::fs::copy(set.client_dir.join("ca.crt"), plain_dir.join("ca.crt")).unwrap();
    mint::create_ca(&plain_dir, &plain_ca, &CaOptions::default()).unwrap();
    mint::create_client(&plain_dir, &plain_ca, "unnamed", &CertOptions::default()).unwrap();
    std::fs::copy(plain_dir.join("ca.crt"), set.node_dirs[&1].join("ca.crt")).unwrap();

    let node1 = NodeTls::load(&set.node_dirs[&1], 1).unwrap();
    assert_eq!(node1.server().installed().cluster.as_deref(), Some("blue"));
    let server = TestServer::start(node1.server()).await;
    let addr = server.addr_text();

    let alice = ClientTls::load_client(&set.client_dir, "alice").unwrap();
    assert_eq!(alice.cluster().as_deref(), Some("blue"));
    let answer = who_am_i(alice.channel_lazy(&addr).unwrap()).await.unwrap();
    assert_eq!(identity_of(&answer), "client alice");
    let node2 = NodeTls::load(&set.node_dirs[&2], 2).unwrap();
    let peer = warden_tls::endpoint(&addr)
        .unwrap()
        .connect_with_connector_lazy(node2.peer_connector(1));
    assert_eq!(identity_of(&who_am_i(peer).await.unwrap()), "node 2");

    // The server's own check, with clients that check nothing themselves
    // (raw rustls): green's client and node certificates, and one naming no
    // cluster, all signed by the same CA, fail the handshake.
    let ca_file = set.client_dir.join("ca.crt");
    let green_client = (
        set.client_dir.join("client.mallory.crt"),
        set.client_dir.join("client.mallory.key"),
    );
    let green_peer = (green_node.join("node.crt"), green_node.join("node.key"));
    let no_cluster = (
        plain_dir.join("client.unnamed.crt"),
        plain_dir.join("client.unnamed.key"),
    );
    for (who, (cert, key), bundle) in [
        ("unnamed", &no_cluster, plain_dir.join("ca.crt")),
        ("mallory", &green_client, ca_file.clone()),
        ("green node 3", &green_peer, ca_file.clone()),
    ] {
        let config = raw_client_config(&bundle, Some((cert, key)), &[b"h2"]);
        assert!(
            raw_handshake(server.addr, config).await.is_err(),
            "{who} was served"
        );
    }
    // One line per reason per second: the first refusal's, naming why.
    let lines = logs
        .wait_for_warns("certificate of another cluster", 1)
        .await;
    assert!(!lines.is_empty(), "{}", logs.text());
    assert!(
        lines[0].contains("names no cluster") && lines[0].contains("\"blue\""),
        "{}",
        lines[0]
    );
    // warden-tls' own connectors: green's refuses node 1 itself (both name
    // a cluster, not the same) before a request is sent.
    let unnamed = ClientTls::load_client(&plain_dir, "unnamed").unwrap();
    assert_eq!(unnamed.cluster(), None);
    let mallory = ClientTls::load_client(&set.client_dir, "mallory").unwrap();
    assert_eq!(mallory.cluster().as_deref(), Some("green"));
    let uri: tonic::transport::Uri = format!("http://{}", server.addr).parse().unwrap();
    match mallory.connector().connect(&uri).await {
        Err(ConnectError::OtherCluster { reason, .. }) => {
            assert!(reason.to_string().contains("\"blue\""), "{reason}");
        }
        other => panic!("expected OtherCluster, got {other:?}"),
    }
    assert!(who_am_i(unnamed.channel_lazy(&addr).unwrap())
        .await
        .is_err());

    // The other way round: a client of "blue" refuses a node of "green"
    // after the handshake, before a request, naming both clusters.
    let green3 = NodeTls::load(&green_node, 3).unwrap();
    let green_server = TestServer::start(green3.server()).await;
    let green_uri: tonic::transport::Uri = format!("http://{}", green_server.addr).parse().unwrap();
    match alice.connector().connect(&green_uri).await {
        Err(ConnectError::OtherCluster { reason, .. }) => {
            assert!(reason.to_string().contains("\"green\""), "{reason}");
        }
        // Or the green node refused alice's certificate first.
        Err(ConnectError::Handshake { .. }) => {}
        other => panic!("expected OtherCluster, got {other:?}"),
    }

    // A leaf minted without --cluster by a CA that names one inherits it.
    mint::create_node(
        &set.node_dirs[&2],
        ca,
        2,
        &mint::LOOPBACK_HOSTS,
        &CertOptions {
            overwrite: true,
            ..CertOptions::default()
        },
    )
    .unwrap();
    let inherited = NodeTls::load(&set.node_dirs[&2], 2).unwrap();
    assert_eq!(
        inherited.server().installed().cluster.as_deref(),
        Some("blue")
    );

    // A node whose certificate names no cluster (from a CA without a name,
    // in a bundle that trusts both CAs) takes any certificate of its CAs,
    // as before cluster names existed; and a client of "blue" accepts such
    // a node (only a node naming another cluster is refused client-side),
    // so clients can move to named certificates before the nodes do.
    let plain_node = root.path().join("plain-node-4");
    std::fs::create_dir_all(&plain_node).unwrap();
    std::fs::copy(set.client_dir.join("ca.crt"), plain_node.join("ca.crt")).unwrap();
    let unnamed_ca = root.path().join("unnamed-ca.key");
    mint::create_ca(&plain_node, &unnamed_ca, &CaOptions::default()).unwrap();
    mint::create_node(
        &plain_node,
        &unnamed_ca,
        4,
        &mint::LOOPBACK_HOSTS,
        &CertOptions::default(),
    )
    .unwrap();
    let node4 = NodeTls::load(&plain_node, 4).unwrap();
    assert_eq!(node4.server().installed().cluster, None);
    let unbound = TestServer::start(node4.server()).await;
    // alice's bundle must trust node 4's CA too.
    std::fs::copy(plain_node.join("ca.crt"), set.client_dir.join("ca.crt")).unwrap();
    alice.reload().unwrap();
    let answer = who_am_i(alice.channel_lazy(&unbound.addr_text()).unwrap())
        .await
        .unwrap();
    assert_eq!(identity_of(&answer), "client alice");
}
