//! Key revocation on the TLS side: the deny lists (file and replicated) at
//! the handshake, on established connections and on a node's peer side,
//! with real sockets on 127.0.0.1 (ports from :0).

mod common;

use std::path::Path;
use std::time::Duration;

use common::{identity_of, raw_client_config, who_am_i, Logs, TestServer};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tonic::transport::Uri;
use warden_tls::mint;
use warden_tls::{
    endpoint, serial_of, ClientTls, ConnectError, DenyError, DenyList, LoadError, NodeTls,
    DENY_FILE,
};

/// The normalized serial of the first certificate in `file`.
fn serial_of_file(file: &Path) -> String {
    serial_of(&CertificateDer::from_pem_file(file).unwrap()).unwrap()
}

fn client_serial(set: &mint::LoopbackSet, user: &str) -> String {
    serial_of_file(&set.client_dir.join(format!("client.{user}.crt")))
}

fn deny(principals: &[&str], serials: &[&str]) -> DenyList {
    DenyList::from_entries(principals, serials).unwrap()
}

/// Whether `user` gets an answer from the server at `addr` on a new
/// connection (a refused certificate fails the call: TLS 1.3 refuses it
/// after the client's side of the handshake).
async fn connects(set: &mint::LoopbackSet, user: &str, addr: &str) -> bool {
    let tls = ClientTls::load_client(&set.client_dir, user).unwrap();
    who_am_i(tls.channel_lazy(addr).unwrap()).await.is_ok()
}

// `warden cert list` prints exactly what `warden cert revoke` and the
// deny file take: serial_of of a minted certificate is the listing's
// serial, and normalizing the colon form x509-parser prints gives it back.
#[test]
fn serial_of_a_minted_certificate_is_what_cert_list_prints() {
    let root = tempfile::tempdir().unwrap();
    let set = mint::loopback_set(root.path(), &[1], &["alice"]).unwrap();
    let file = set.client_dir.join("client.alice.crt");
    let serial = serial_of_file(&file);
    let listing = warden_tls::inspect::list(&set.client_dir).unwrap();
    let listed = listing.certs.iter().find(|c| c.file == file).unwrap();
    assert_eq!(listed.serial, serial);
    assert!(!serial.starts_with('0') && serial.len() <= 40, "{serial}");
    assert!(serial.chars().all(|c| matches!(c, '0'..='9' | 'a'..='f')));
    let der = CertificateDer::from_pem_file(&file).unwrap();
    let (_, parsed) = x509_parser::parse_x509_certificate(&der).unwrap();
    let colons = parsed.raw_serial_as_string().to_uppercase();
    assert_eq!(warden_tls::normalize_serial(&colons).unwrap(), serial);
}

// A revoked client cannot connect: a denied principal and a denied serial
// each fail the handshake (one rate-limited warn line with the reason and
// the entry, no key material), while another client of the same CA still
// connects.
#[tokio::test]
async fn a_denied_principal_or_serial_fails_the_handshake_and_others_connect() {
    let (logs, _guard) = Logs::capture();
    let root = tempfile::tempdir().unwrap();
    let set = mint::loopback_set(root.path(), &[1], &["alice", "mallory", "bob"]).unwrap();
    let tls = NodeTls::load(&set.node_dirs[&1], 1).unwrap();
    let server = TestServer::start(tls.server()).await;
    let addr = server.addr_text();
    let mallory = ClientTls::load_client(&set.client_dir, "mallory").unwrap();
    let held = mallory.channel_lazy(&addr).unwrap();
    who_am_i(held.clone()).await.unwrap();

    let bob_serial = client_serial(&set, "bob");
    // The one connection mallory holds is closed.
    assert_eq!(tls.set_denied(deny(&["mallory"], &[&bob_serial])), 1);
    assert_eq!(tls.server().denied(), deny(&["mallory"], &[&bob_serial]));
    assert!(tls.server().file_denied().is_empty());

    assert!(!connects(&set, "mallory", &addr).await);
    let lines = logs.wait_for_warns("certificate denied (revoked)", 1).await;
    assert!(
        lines[0].contains(r#"detail=principal "mallory" is on the deny list"#),
        "{lines:?}"
    );
    assert!(!connects(&set, "bob", &addr).await);
    let answer = who_am_i(
        ClientTls::load_client(&set.client_dir, "alice")
            .unwrap()
            .channel_lazy(&addr)
            .unwrap(),
    )
    .await
    .unwrap();
    assert_eq!(identity_of(&answer), "client alice");
    assert!(!logs.text().contains("PRIVATE KEY"));
}

/// A raw TLS connection of `user` that sent the HTTP/2 preface and read
/// the server's first flight: established and admitted, then idle.
async fn idle_connection(
    set: &mint::LoopbackSet,
    user: &str,
    addr: std::net::SocketAddr,
) -> tokio_rustls::client::TlsStream<TcpStream> {
    let dir = &set.client_dir;
    let config = raw_client_config(
        &dir.join("ca.crt"),
        Some((
            &dir.join(format!("client.{user}.crt")),
            &dir.join(format!("client.{user}.key")),
        )),
        &[b"h2"],
    );
    let tcp = TcpStream::connect(addr).await.unwrap();
    let mut tls = tokio_rustls::TlsConnector::from(config)
        .connect(ServerName::try_from("127.0.0.1").unwrap(), tcp)
        .await
        .unwrap();
    tls.write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\0\0\0\x04\0\0\0\0\0")
        .await
        .unwrap();
    let mut buf = [0u8; 64];
    let n = tokio::time::timeout(Duration::from_secs(5), tls.read(&mut buf))
        .await
        .expect("the server's SETTINGS within 5 s")
        .unwrap();
    assert!(n > 0, "the server answered the preface");
    tls
}

/// Reads until the connection ends (EOF or an error) within 5 s.
async fn ends_within_5s(tls: &mut tokio_rustls::client::TlsStream<TcpStream>) -> bool {
    let mut buf = [0u8; 256];
    let read_to_end = async {
        loop {
            match tls.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(5), read_to_end)
        .await
        .is_ok()
}

// Revocation reaches live connections: set_denied closes every
// established connection of the denied principal before it returns (an
// idle raw one ends, a tonic channel's call fails) and says how many,
// while another client's connection goes on (the same connection: same
// remote port in the answer).
#[tokio::test]
async fn set_denied_closes_the_denied_principals_connections_and_no_other() {
    let (logs, _guard) = Logs::capture();
    let root = tempfile::tempdir().unwrap();
    let set = mint::loopback_set(root.path(), &[1], &["alice", "mallory"]).unwrap();
    let tls = NodeTls::load(&set.node_dirs[&1], 1).unwrap();
    let server = TestServer::start(tls.server()).await;
    let addr = server.addr_text();

    let mut raw = idle_connection(&set, "mallory", server.addr).await;
    let mallory = ClientTls::load_client(&set.client_dir, "mallory").unwrap();
    let mallory_channel = mallory.channel_lazy(&addr).unwrap();
    assert_eq!(
        identity_of(&who_am_i(mallory_channel.clone()).await.unwrap()),
        "client mallory"
    );
    let alice = ClientTls::load_client(&set.client_dir, "alice").unwrap();
    let alice_channel = alice.channel_lazy(&addr).unwrap();
    let before = who_am_i(alice_channel.clone()).await.unwrap();

    assert_eq!(tls.set_denied(deny(&["mallory"], &[])), 2);
    assert!(
        ends_within_5s(&mut raw).await,
        "mallory's idle connection ended"
    );
    assert!(who_am_i(mallory_channel).await.is_err());
    assert_eq!(who_am_i(alice_channel.clone()).await.unwrap(), before);
    assert!(
        logs.text().contains("TLS deny list changed") && logs.text().contains("closed=2"),
        "{}",
        logs.text()
    );
    // The same list again changes nothing and closes nothing.
    assert_eq!(tls.set_denied(deny(&["mallory"], &[])), 0);
    assert_eq!(who_am_i(alice_channel).await.unwrap(), before);
}

// An operator's deny file is in force from the load: `deny.toml` in the
// certs dir refuses its principal at the first handshake.
#[tokio::test]
async fn a_deny_file_denies_from_the_load() {
    let root = tempfile::tempdir().unwrap();
    let set = mint::loopback_set(root.path(), &[1], &["alice", "mallory"]).unwrap();
    let dir = &set.node_dirs[&1];
    std::fs::write(dir.join(DENY_FILE), "principals = [\"mallory\"]\n").unwrap();
    let tls = NodeTls::load(dir, 1).unwrap();
    assert_eq!(tls.server().file_denied(), deny(&["mallory"], &[]));
    assert_eq!(tls.server().installed().denied_in_file, 1);
    let server = TestServer::start(tls.server()).await;
    assert!(!connects(&set, "mallory", &server.addr_text()).await);
    assert!(connects(&set, "alice", &server.addr_text()).await);
}

/// Expects a deny file error naming `deny.toml` and `entry`.
fn assert_deny_file_error(result: Result<impl std::fmt::Debug, LoadError>, entry: &str) {
    match result {
        Err(e @ LoadError::DenyFile { .. }) => {
            let text = e.to_string();
            assert!(text.contains(&format!("deny.toml: {entry}")), "{text}");
        }
        other => panic!("expected DenyFile naming {entry}, got {other:?}"),
    }
}

// A broken deny file is refused like a broken certificate, naming the
// file and the entry (a bad serial, an unknown key, too many entries):
// at load, and at reload, where the old lists stay in use; a good reload
// closes the connections its new list denies.
#[tokio::test]
async fn a_bad_deny_file_refuses_load_and_reload_and_the_old_lists_stay() {
    let root = tempfile::tempdir().unwrap();
    let set = mint::loopback_set(root.path(), &[1], &["alice", "mallory", "bob"]).unwrap();
    let dir = &set.node_dirs[&1];
    let file = dir.join(DENY_FILE);

    std::fs::write(&file, "serials = [\"1a\", \"2b\", \"0xnope\"]\n").unwrap();
    let e = NodeTls::load(dir, 1).unwrap_err();
    assert!(
        matches!(&e, LoadError::DenyFile { file: f, source: DenyError::Serial { index: 2, .. } } if *f == file),
        "{e:?}"
    );
    assert_deny_file_error(NodeTls::load(dir, 1), "serials[2]: serial \"0xnope\"");
    std::fs::write(&file, "principals = []\nrevoked = [\"x\"]\n").unwrap();
    assert_deny_file_error(
        NodeTls::load(dir, 1),
        "line 2, column 1: unknown field `revoked`",
    );
    let many: Vec<String> = (1..=10_001).map(|i| format!("\"{i:x}\"")).collect();
    std::fs::write(&file, format!("serials = [{}]\n", many.join(","))).unwrap();
    assert_deny_file_error(
        NodeTls::load(dir, 1),
        "10001 entries (principals and serials together); at most 10000",
    );

    std::fs::write(&file, "principals = [\"mallory\"]\n").unwrap();
    let tls = NodeTls::load(dir, 1).unwrap();
    let bob_serial = client_serial(&set, "bob");
    tls.set_denied(deny(&[], &[&bob_serial]));
    let server = TestServer::start(tls.server()).await;
    let addr = server.addr_text();
    let alice = ClientTls::load_client(&set.client_dir, "alice").unwrap();
    let alice_channel = alice.channel_lazy(&addr).unwrap();
    let before = who_am_i(alice_channel.clone()).await.unwrap();

    std::fs::write(&file, "principals = [\"alice\", \"node-2\"]\n").unwrap();
    assert_deny_file_error(tls.reload(), "principals[1]: ");
    assert_eq!(tls.server().file_denied(), deny(&["mallory"], &[]));
    assert_eq!(tls.denied(), deny(&["mallory"], &[&bob_serial]));
    assert_eq!(who_am_i(alice_channel.clone()).await.unwrap(), before);
    assert!(!connects(&set, "mallory", &addr).await);
    assert!(!connects(&set, "bob", &addr).await);

    // Fixed: alice's serial instead of mallory. The reload closes alice's
    // connection; mallory may connect again; bob stays denied (replicated).
    let alice_serial = client_serial(&set, "alice");
    std::fs::write(&file, format!("serials = [\"{alice_serial}\"]\n")).unwrap();
    let installed = tls.reload().unwrap();
    assert_eq!((installed.denied_in_file, installed.closed_denied), (1, 1));
    assert!(who_am_i(alice_channel).await.is_err());
    assert!(connects(&set, "mallory", &addr).await);
    assert!(!connects(&set, "bob", &addr).await);
    // Without the file, an empty file list.
    std::fs::remove_file(&file).unwrap();
    assert_eq!(tls.reload().unwrap().denied_in_file, 0);
    assert!(connects(&set, "alice", &addr).await);
}

/// Dials node `peer` at `addr` with `tls`'s peer connector.
async fn dial_peer(tls: &NodeTls, peer: u64, addr: &str) -> Result<(), ConnectError> {
    let uri: Uri = format!("http://{addr}").parse().unwrap();
    tls.peer_connector(peer).connect(&uri).await.map(drop)
}

// A stolen node key cannot pose as a peer: once node 2's serial is denied
// (replicated, or in the deny file at a reload), node 1's peer connector
// refuses node 2's server, and node 1's server refuses node 2 as a client.
#[tokio::test]
async fn a_peer_connector_refuses_a_server_whose_node_serial_is_denied() {
    let root = tempfile::tempdir().unwrap();
    let set = mint::loopback_set(root.path(), &[1, 2], &[]).unwrap();
    let one = NodeTls::load(&set.node_dirs[&1], 1).unwrap();
    let two = NodeTls::load(&set.node_dirs[&2], 2).unwrap();
    let server_one = TestServer::start(one.server()).await;
    let server_two = TestServer::start(two.server()).await;
    let two_serial = serial_of_file(&set.node_dirs[&2].join("node.crt"));
    dial_peer(&one, 2, &server_two.addr_text()).await.unwrap();

    one.set_denied(deny(&[], &[&two_serial]));
    assert_eq!(one.peers().denied(), deny(&[], &[&two_serial]));
    match dial_peer(&one, 2, &server_two.addr_text()).await {
        Err(ConnectError::Denied { reason, .. }) => {
            assert_eq!(reason, warden_tls::Denied::Serial(two_serial.clone()))
        }
        other => panic!("expected Denied, got {other:?}"),
    }
    // Node 2 dialling node 1: its certificate is refused at node 1's
    // handshake, so its first call fails.
    let channel = endpoint(&server_one.addr_text())
        .unwrap()
        .connect_with_connector_lazy(two.peer_connector(1));
    assert!(who_am_i(channel).await.is_err());

    one.set_denied(DenyList::default());
    dial_peer(&one, 2, &server_two.addr_text()).await.unwrap();
    let channel = endpoint(&server_one.addr_text())
        .unwrap()
        .connect_with_connector_lazy(two.peer_connector(1));
    assert_eq!(identity_of(&who_am_i(channel).await.unwrap()), "node 2");

    // The deny file, at a reload, reaches the peer side too.
    std::fs::write(
        set.node_dirs[&1].join(DENY_FILE),
        format!("serials = [\"{two_serial}\"]\n"),
    )
    .unwrap();
    one.reload().unwrap();
    assert!(matches!(
        dial_peer(&one, 2, &server_two.addr_text()).await,
        Err(ConnectError::Denied { .. })
    ));
}

// A revoked node that a peer already talks to is cut off too: node 1's
// channel to node 2, open and answering, is closed when node 2's serial is
// denied (counted in set_denied's answer), and its next call fails
// (found by attack: a leader kept replicating to, and counting the quorum
// with, a follower whose certificate was revoked).
#[tokio::test]
async fn an_open_peer_connection_to_a_denied_node_is_closed() {
    let root = tempfile::tempdir().unwrap();
    let set = mint::loopback_set(root.path(), &[1, 2], &[]).unwrap();
    let one = NodeTls::load(&set.node_dirs[&1], 1).unwrap();
    let two = NodeTls::load(&set.node_dirs[&2], 2).unwrap();
    let server_two = TestServer::start(two.server()).await;
    let two_serial = serial_of_file(&set.node_dirs[&2].join("node.crt"));
    let channel = endpoint(&server_two.addr_text())
        .unwrap()
        .connect_with_connector_lazy(one.peer_connector(2));
    assert_eq!(
        identity_of(&who_am_i(channel.clone()).await.unwrap()),
        "node 1"
    );
    assert_eq!(
        one.set_denied(deny(&[], &[&two_serial])),
        1,
        "the open peer connection"
    );
    assert!(who_am_i(channel).await.is_err(), "its next call fails");
}
