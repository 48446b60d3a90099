//! Transport security with real processes (docs/security.md): a node refuses
//! to start without `--certs-dir` or `--insecure`; a TLS cluster serves a
//! client certificate of its CA and refuses everyone else; the peer
//! service refuses client certificates; certificates rotate on SIGHUP one
//! node at a time while a holder keeps its lock.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use tonic::transport::{Channel, Endpoint};
use tonic::Code;
use warden_client::{AcquireOptions, AcquireResult, Client, ClientOptions};
use warden_proto::peer::peer_client::PeerClient;
use warden_proto::peer::Blob;
use warden_proto::v1 as pb;
use warden_proto::v1::lock_client::LockClient;
use warden_tls::mint::{self, CaOptions, CertOptions, Validity};
use warden_tls::ClientTls;

use crate::harness::{self, Cluster};

/// warden-client over a certificate (until `ClientOptions` takes TLS).
#[derive(Debug)]
struct Tls(ClientTls);

impl warden_client::transport::Connector for Tls {
    fn channel(&self, endpoint: Endpoint) -> Channel {
        endpoint.connect_with_connector_lazy(self.0.connector())
    }
}

fn client_tls(dir: &Path, user: &str) -> ClientTls {
    ClientTls::load_client(dir, user).expect("client certificate")
}

async fn client(cluster: &Cluster, tls: &ClientTls) -> Client {
    let endpoints = cluster.endpoints().split(',').map(String::from).collect();
    Client::connect(
        endpoints,
        ClientOptions {
            connector: Some(Arc::new(Tls(tls.clone()))),
            ..ClientOptions::default()
        },
    )
    .await
    .expect("client")
}

/// `ClusterStatus` of the node at `addr` over `tls` (one attempt, 2 s).
async fn status_at(
    tls: &ClientTls,
    addr: &str,
) -> Result<pb::ClusterStatusResponse, tonic::Status> {
    let mut c = LockClient::new(tls.channel_lazy(addr).expect("channel"));
    let mut req = tonic::Request::new(pb::ClusterStatusRequest {});
    req.set_timeout(Duration::from_secs(2));
    Ok(c.cluster_status(req).await?.into_inner())
}

/// The leader every running node names, read over TLS, within `within`.
async fn wait_leader(
    cluster: &Cluster,
    tls: &ClientTls,
    within: Duration,
) -> pb::ClusterStatusResponse {
    let deadline = Instant::now() + within;
    loop {
        for n in cluster.nodes.values().filter(|n| n.child.is_some()) {
            if let Ok(s) = status_at(tls, &n.addr).await {
                if s.leader_id == s.node_id && s.leader_id != 0 {
                    return s;
                }
            }
        }
        assert!(Instant::now() < deadline, "no leader within {within:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Runs `warden server` for node 1 of `cluster` with `args` (and the
/// cluster's addresses) until it exits; (exit code, stderr).
fn run_server(cluster: &Cluster, args: &[&str]) -> (Option<i32>, String) {
    let n = &cluster.nodes[&1];
    let out = std::process::Command::new(harness::warden_bin())
        .args([
            "server",
            "--id",
            "1",
            "--listen",
            &n.addr,
            "--peers",
            &cluster.peers(),
        ])
        .arg("--data-dir")
        .arg(&n.dir)
        .args(args)
        .env("WARDEN_INSECURE", "true")
        .env("WARDEN_ALLOW_ADMIN", "true")
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run warden server");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// docs/security.md "Insecure mode", "What bad input gets": without
/// `--certs-dir` or `--insecure` the server exits 1 naming both flags (the
/// environment cannot turn security off); `--allow-admin` without
/// `--insecure` is refused naming both; a certs dir missing its key is
/// refused naming the file.
#[test]
fn a_server_needs_certs_or_insecure() {
    let cluster = Cluster::prepare_secure(1, &[], &[], &[]);
    let (code, stderr) = run_server(&cluster, &[]);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains("no --certs-dir") && stderr.contains("--insecure"),
        "{stderr}"
    );
    let certs = cluster.certs.as_ref().expect("certs").node_dirs[&1].clone();
    let certs_text = certs.to_str().expect("utf-8 path");
    let (code, stderr) = run_server(&cluster, &["--certs-dir", certs_text, "--allow-admin"]);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains("--allow-admin: only with --insecure"),
        "{stderr}"
    );
    std::fs::remove_file(certs.join("node.key")).expect("remove the key");
    let (code, stderr) = run_server(&cluster, &["--certs-dir", certs_text]);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stderr.contains("node.key"), "{stderr}");
}

/// docs/security.md "Certificates" and "The peer service": a TLS cluster
/// serves `root`'s certificate and says it is not insecure; no certificate
/// is Unauthenticated; another CA's and an expired certificate fail the
/// handshake (and each node logs the failed handshake with the caller's
/// address); a client certificate calling AppendEntries, Vote or
/// InstallSnapshot directly is refused and no term or leader moves; a node
/// certificate from another CA cannot reach the peer service.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tls_cluster_serves_its_clients_and_refuses_the_rest() {
    let mut cluster = Cluster::prepare_secure(3, &[], &["root", "alice"], &[]);
    for id in 1..=3 {
        cluster.spawn(id);
    }
    let set = cluster.certs.as_ref().expect("certs");
    let root = client_tls(&set.client_dir, "root");
    let before = wait_leader(&cluster, &root, Duration::from_secs(20)).await;
    assert!(!before.insecure);
    let api = client(&cluster, &root).await;
    let granted = api
        .acquire("secured", AcquireOptions::with_ttl(Duration::from_secs(30)))
        .await
        .expect("root acquires");
    assert!(
        matches!(granted, AcquireResult::Granted { .. }),
        "{granted:?}"
    );

    // No certificate: Unauthenticated, nothing created.
    let leader_addr = cluster.addr(before.leader_id);
    let anonymous = ClientTls::anonymous(&set.client_dir.join("ca.crt")).expect("anonymous");
    let mut c = LockClient::new(anonymous.channel_lazy(&leader_addr).expect("channel"));
    let e = c
        .acquire(pb::AcquireRequest {
            resource: "anonymous".into(),
            ttl_ms: 10_000,
            ..Default::default()
        })
        .await
        .expect_err("anonymous acquire");
    assert_eq!(e.code(), Code::Unauthenticated, "{e:?}");
    let st = api.status("anonymous").await.expect("status");
    assert!(st.holder.is_none(), "{st:?}");

    // Another CA's root, and an expired root of this CA: no handshake.
    let stranger = tempfile::tempdir().expect("tempdir");
    let other = mint::loopback_set(stranger.path(), &[1], &["root"]).expect("mint");
    let other_root = client_tls(&other.client_dir, "root");
    let e = status_at(&other_root, &leader_addr)
        .await
        .expect_err("another CA");
    assert_eq!(e.code(), Code::Unavailable, "{e:?}");
    let expired_dir = stranger.path().join("expired");
    std::fs::create_dir_all(&expired_dir).expect("dir");
    std::fs::copy(set.client_dir.join("ca.crt"), expired_dir.join("ca.crt")).expect("ca");
    let day = Duration::from_secs(24 * 3600);
    let now = SystemTime::now();
    mint::create_client(
        &expired_dir,
        &set.ca_key,
        "root",
        &CertOptions {
            overwrite: false,
            validity: Some(Validity {
                not_before: now - 3 * day,
                not_after: now - day,
            }),
        },
    )
    .expect("expired root");
    // warden-tls' loader refuses it; a raw client presents it anyway.
    let e = ClientTls::load_client(&expired_dir, "root").expect_err("expired");
    assert!(e.to_string().contains("expired"), "{e}");
    raw_handshake_is_refused(&expired_dir, "root", &leader_addr).await;
    let deadline = Instant::now() + Duration::from_secs(5);
    while !cluster.logged(before.leader_id, "TLS handshake failed") {
        assert!(Instant::now() < deadline, "no handshake failure logged");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    // alice's client certificate at the peer service.
    let alice = client_tls(&set.client_dir, "alice");
    for id in 1..=3u64 {
        let mut peer = PeerClient::new(alice.channel_lazy(&cluster.addr(id)).expect("channel"));
        let stamp = |blob: Blob| {
            let mut r = tonic::Request::new(blob);
            r.metadata_mut().insert(
                warden_proto::CLUSTER_ID_METADATA,
                before.cluster_id.parse().expect("ascii"),
            );
            r
        };
        let junk = || Blob { data: vec![0; 64] };
        for e in [
            peer.append_entries(stamp(junk()))
                .await
                .expect_err("append"),
            peer.vote(stamp(junk())).await.expect_err("vote"),
            peer.pre_vote(stamp(junk())).await.expect_err("pre-vote"),
            peer.install_snapshot(stamp(junk()))
                .await
                .expect_err("snapshot"),
        ] {
            assert_eq!(e.code(), Code::PermissionDenied, "node {id}: {e:?}");
            assert!(
                e.message().contains("node certificates only"),
                "{}",
                e.message()
            );
        }
    }
    // A node certificate of another CA: no handshake with any node.
    let stranger_node = warden_tls::NodeTls::load(&other.node_dirs[&1], 1).expect("node");
    let channel = warden_tls::endpoint(&leader_addr)
        .expect("endpoint")
        .connect_with_connector_lazy(stranger_node.peer_connector(before.leader_id));
    let e = PeerClient::new(channel)
        .bootstrap_state(warden_proto::peer::BootstrapStateRequest { from_node_id: 1 })
        .await
        .expect_err("another CA's node");
    assert_eq!(e.code(), Code::Unavailable, "{e:?}");

    let after = wait_leader(&cluster, &root, Duration::from_secs(5)).await;
    assert_eq!(
        (after.leader_id, after.term),
        (before.leader_id, before.term),
        "a refused peer call moved the leader or the term"
    );
    for id in 1..=3 {
        cluster.kill(id);
    }
}

/// A raw rustls client (TLS 1.3, ALPN h2) presenting `client.USER.crt`
/// from `dir`, whatever it is: the server must refuse it (the handshake or
/// the first read fails).
async fn raw_handshake_is_refused(dir: &Path, user: &str, addr: &str) {
    use rustls_pki_types::pem::PemObject as _;
    use rustls_pki_types::{CertificateDer, PrivateKeyDer, ServerName};
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut roots = rustls::RootCertStore::empty();
    for ca in CertificateDer::pem_file_iter(dir.join("ca.crt")).expect("ca.crt") {
        roots.add(ca.expect("ca")).expect("root");
    }
    let chain: Vec<CertificateDer<'static>> =
        CertificateDer::pem_file_iter(dir.join(format!("client.{user}.crt")))
            .expect("crt")
            .map(|c| c.expect("cert"))
            .collect();
    let key = PrivateKeyDer::from_pem_file(dir.join(format!("client.{user}.key"))).expect("key");
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13])
        .expect("tls 1.3")
        .with_root_certificates(roots)
        .with_client_auth_cert(chain, key)
        .expect("client auth");
    config.alpn_protocols = vec![b"h2".to_vec()];
    let tcp = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let connector = tokio_rustls::TlsConnector::from(Arc::new(config));
    let name = ServerName::try_from("127.0.0.1").expect("name");
    let refused = match connector.connect(name, tcp).await {
        Err(_) => true,
        Ok(mut stream) => {
            // TLS 1.3: the server's verdict on the client certificate
            // arrives after the client's handshake finished.
            let _ = stream.write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n").await;
            let mut buf = [0u8; 64];
            let read = tokio::time::timeout(Duration::from_secs(5), stream.read(&mut buf))
                .await
                .expect("the server answers or closes");
            matches!(read, Err(_) | Ok(0))
        }
    };
    assert!(
        refused,
        "the server accepted {user}'s certificate from {}",
        dir.display()
    );
}

/// Appends `extra` (PEM) to the CA bundle `ca_file`.
fn append_ca(ca_file: &Path, extra: &[u8]) {
    let mut bundle = std::fs::read(ca_file).expect("read ca.crt");
    bundle.extend_from_slice(extra);
    std::fs::write(ca_file, bundle).expect("write ca.crt");
}

fn sighup(cluster: &Cluster, id: u64) {
    let child = cluster.nodes[&id].child.as_ref().expect("running");
    let pid = nix::unistd::Pid::from_raw(child.id() as i32);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGHUP).expect("SIGHUP");
}

/// Waits until node `id`'s log says `text` `n` times or more.
async fn wait_logged(cluster: &Cluster, id: u64, text: &str, n: usize) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let log = std::fs::read_to_string(&cluster.nodes[&id].log).expect("log");
        if log.matches(text).count() >= n {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "node {id} never logged {text:?} {n} times"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// docs/security.md "Rotation": a new CA goes into every bundle (SIGHUP
/// each node), then each node gets a certificate of the new CA and a SIGHUP,
/// one at a time; a holder renewing throughout keeps its lock, the nodes
/// keep one leader, and a client that knows only the new CA connects. A
/// broken set is refused with a log line and the node goes on serving.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn certificates_rotate_on_sighup_one_node_at_a_time() {
    let mut cluster = Cluster::prepare_secure(3, &[], &["root"], &[]);
    for id in 1..=3 {
        cluster.spawn(id);
    }
    let set = cluster.certs.as_ref().expect("certs");
    // 0. A new CA, and the clients' bundle holding old and new (clients
    // get it first, so they trust a node whichever CA signed it).
    let new_ca_dir = cluster.tmp.path().join("new-ca");
    let new_key = cluster.tmp.path().join("new-ca.key");
    mint::create_ca(&new_ca_dir, &new_key, &CaOptions::default()).expect("new CA");
    let new_ca = std::fs::read(new_ca_dir.join("ca.crt")).expect("new ca.crt");
    append_ca(&set.client_dir.join("ca.crt"), &new_ca);
    let root = client_tls(&set.client_dir, "root");
    wait_leader(&cluster, &root, Duration::from_secs(20)).await;
    let api = client(&cluster, &root).await;
    let ttl = Duration::from_secs(3);
    let AcquireResult::Granted {
        lease_id,
        fencing_token,
        ..
    } = api
        .acquire("rotated", AcquireOptions::with_ttl(ttl))
        .await
        .expect("acquire")
    else {
        panic!("not granted");
    };
    // The holder renews every 300 ms until told to stop; any failure ends
    // it. `renewed` counts its acknowledged renewals.
    let renewed = std::sync::Arc::new(std::sync::atomic::AtomicU32::new(0));
    let (stop, mut stopped) = tokio::sync::watch::channel(false);
    let holder = {
        let api = api.clone();
        let renewed = renewed.clone();
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    _ = stopped.changed() => return Ok::<(), String>(()),
                    _ = tokio::time::sleep(Duration::from_millis(300)) => {}
                }
                api.renew(lease_id).await.map_err(|e| format!("{e:?}"))?;
                renewed.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            }
        })
    };

    // A broken set (a key that is not the certificate's) is refused; the
    // node keeps serving with the old one.
    let node1 = set.node_dirs[&1].clone();
    let key = std::fs::read(node1.join("node.key")).expect("key");
    std::fs::copy(set.node_dirs[&2].join("node.key"), node1.join("node.key")).expect("swap");
    sighup(&cluster, 1);
    wait_logged(&cluster, 1, "the certificates in use stay", 1).await;
    std::fs::write(node1.join("node.key"), key).expect("restore");
    status_at(&root, &cluster.addr(1))
        .await
        .expect("node 1 serves");

    // 1. The new CA joins every node's bundle.
    for id in 1..=3u64 {
        append_ca(&set.node_dirs[&id].join("ca.crt"), &new_ca);
        sighup(&cluster, id);
        wait_logged(&cluster, id, "SIGHUP: reloaded the certs dir", 1).await;
    }
    // 2. Each node gets a certificate of the new CA, one at a time.
    for id in 1..=3u64 {
        mint::create_node(
            &set.node_dirs[&id],
            &new_key,
            id,
            &mint::LOOPBACK_HOSTS,
            &CertOptions {
                overwrite: true,
                validity: None,
            },
        )
        .expect("new node certificate");
        sighup(&cluster, id);
        wait_logged(&cluster, id, "SIGHUP: reloaded the certs dir", 2).await;
        wait_leader(&cluster, &root, Duration::from_secs(10)).await;
    }
    // 3. A client of the new CA only.
    mint::create_client(&new_ca_dir, &new_key, "root", &CertOptions::default()).expect("new root");
    let new_root = client_tls(&new_ca_dir, "root");
    let fresh = client(&cluster, &new_root).await;
    let st = fresh.status("rotated").await.expect("new client reads");
    assert_eq!(
        st.holder.as_ref().map(|h| (h.lease_id, h.fencing_token)),
        Some((lease_id, fencing_token)),
        "the holder kept its lock"
    );
    // Node-to-node traffic now runs on the new certificates: a new
    // connection between two nodes needs them (a leader change makes some).
    let leader = wait_leader(&cluster, &new_root, Duration::from_secs(10)).await;
    cluster.terminate(leader.leader_id, Duration::from_secs(5));
    let next = wait_leader(&cluster, &new_root, Duration::from_secs(15)).await;
    assert_ne!(next.leader_id, leader.leader_id);
    // The holder goes on renewing on the new certificates (two more
    // acknowledged renewals after the leader change, within 10 s).
    let after = renewed.load(std::sync::atomic::Ordering::SeqCst);
    let deadline = Instant::now() + Duration::from_secs(10);
    while renewed.load(std::sync::atomic::Ordering::SeqCst) < after + 2 {
        assert!(
            !holder.is_finished(),
            "the holder's renewal failed: {:?}",
            holder.await
        );
        assert!(
            Instant::now() < deadline,
            "no renewal after the leader change"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let _ = stop.send(true);
    holder
        .await
        .expect("holder")
        .expect("every renewal succeeded");
    let st = fresh.status("rotated").await.expect("status");
    assert_eq!(st.holder.map(|h| h.lease_id), Some(lease_id));
    for id in 1..=3 {
        cluster.kill(id);
    }
}
