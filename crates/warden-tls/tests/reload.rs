//! Reloading a node's certs dir while it serves.

mod common;

use common::{identity_of, who_am_i, TestServer};
use warden_tls::mint::{self, CaOptions, CertOptions};
use warden_tls::{ClientTls, LoadError, NodeTls};

const OVERWRITE: CertOptions = CertOptions {
    overwrite: true,
    validity: None,
    cluster: None,
};

// CA rotation, one node at a time: after ca.crt becomes an old+new bundle
// and node.crt is re-minted by the new CA, reload makes new handshakes use
// the new files while an established connection keeps working; a broken
// new set is refused with its error and the old set stays in use.
#[tokio::test]
async fn reload_uses_new_files_keeps_connections_and_refuses_a_broken_set() {
    let root = tempfile::tempdir().unwrap();
    let set = mint::loopback_set(root.path(), &[1], &["alice"]).unwrap();
    let node_dir = &set.node_dirs[&1];
    let tls = NodeTls::load(node_dir, 1).unwrap();
    let server = TestServer::start(tls.server()).await;
    let addr = server.addr_text();

    // An established connection (alice, old CA).
    let alice = ClientTls::load_client(&set.client_dir, "alice").unwrap();
    let alice_channel = alice.channel_lazy(&addr).unwrap();
    let first = who_am_i(alice_channel.clone()).await.unwrap();
    assert_eq!(identity_of(&first), "client alice");

    // A new CA, appended to the node's ca.crt; a client "bob" of the new CA
    // whose own ca.crt holds only the new CA.
    let new_key = root.path().join("new-ca.key");
    let bob_dir = root.path().join("bob");
    let new_ca = mint::create_ca(&bob_dir, &new_key, &CaOptions::default()).unwrap();
    assert_eq!(new_ca.cas_in_bundle, 1);
    mint::create_client(&bob_dir, &new_key, "bob", &CertOptions::default()).unwrap();
    let node_bundle = {
        let mut old = std::fs::read(node_dir.join("ca.crt")).unwrap();
        old.extend(std::fs::read(bob_dir.join("ca.crt")).unwrap());
        old
    };
    let bob = ClientTls::load_client(&bob_dir, "bob").unwrap();

    // Before the reload the node presents the old CA's certificate: bob,
    // who trusts only the new CA, cannot verify it.
    assert!(who_am_i(bob.channel_lazy(&addr).unwrap()).await.is_err());

    std::fs::write(node_dir.join("ca.crt"), &node_bundle).unwrap();
    mint::create_node(node_dir, &new_key, 1, &mint::LOOPBACK_HOSTS, &OVERWRITE).unwrap();
    let installed = tls.reload().unwrap();
    assert_eq!((installed.node_id, installed.cas), (1, 2));

    // New handshakes use the new files: bob verifies the new node
    // certificate and the node trusts bob's CA.
    let answer = who_am_i(bob.channel_lazy(&addr).unwrap()).await.unwrap();
    assert_eq!(identity_of(&answer), "client bob");
    // The established connection goes on: same connection (same remote
    // port), still alice.
    let again = who_am_i(alice_channel.clone()).await.unwrap();
    assert_eq!(again, first);

    // A broken new set: node.key replaced by another key. Refused, naming
    // the file; the old set stays in use.
    let other_dir = root.path().join("other-node");
    std::fs::create_dir_all(&other_dir).unwrap();
    std::fs::copy(node_dir.join("ca.crt"), other_dir.join("ca.crt")).unwrap();
    mint::create_node(
        &other_dir,
        &new_key,
        1,
        &mint::LOOPBACK_HOSTS,
        &CertOptions::default(),
    )
    .unwrap();
    std::fs::copy(other_dir.join("node.key"), node_dir.join("node.key")).unwrap();
    match tls.reload() {
        Err(LoadError::KeyMismatch { key, .. }) => assert_eq!(key, node_dir.join("node.key")),
        other => panic!("expected KeyMismatch, got {other:?}"),
    }
    std::fs::write(node_dir.join("ca.crt"), b"garbage").unwrap();
    let e = tls.reload().unwrap_err();
    assert!(matches!(e, LoadError::NotPem { .. }), "{e}");
    assert!(e.to_string().contains("ca.crt"), "{e}");
    let answer = who_am_i(bob.channel_lazy(&addr).unwrap()).await.unwrap();
    assert_eq!(identity_of(&answer), "client bob");
    assert_eq!(tls.server().installed().cas, 2);
}

// A node's certs dir must be its own: another node's certificate is refused
// at load and at reload (the lead wires --id to the certificate's id).
#[tokio::test]
async fn a_node_refuses_another_nodes_certificate() {
    let root = tempfile::tempdir().unwrap();
    let set = mint::loopback_set(root.path(), &[1, 2], &[]).unwrap();
    match NodeTls::load(&set.node_dirs[&2], 1) {
        Err(LoadError::WrongNode {
            expected: 1,
            found: 2,
            ..
        }) => {}
        other => panic!("expected WrongNode, got {other:?}"),
    }
    let tls = NodeTls::load(&set.node_dirs[&1], 1).unwrap();
    for file in ["node.crt", "node.key"] {
        std::fs::copy(set.node_dirs[&2].join(file), set.node_dirs[&1].join(file)).unwrap();
    }
    assert!(matches!(
        tls.reload(),
        Err(LoadError::WrongNode {
            expected: 1,
            found: 2,
            ..
        })
    ));
    assert_eq!(tls.server().installed().node_id, 1);
}
