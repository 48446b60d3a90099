//! Loading errors (each names the file) and what the mint writes and refuses.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::{Duration, SystemTime};

use warden_tls::inspect::{self, CertKind};
use warden_tls::mint::{self, CaOptions, CertOptions, MintError, Validity};
use warden_tls::{ClientCerts, LoadError, NodeCerts, PrincipalError};

const DAY: Duration = Duration::from_secs(24 * 3600);

fn mode(file: &Path) -> u32 {
    std::fs::metadata(file).unwrap().permissions().mode() & 0o777
}

/// A CA in `root/certs` (key `root/ca.key`) with node 1 and client alice.
fn minted(root: &Path) -> (std::path::PathBuf, std::path::PathBuf) {
    let dir = root.join("certs");
    let key = root.join("ca.key");
    mint::create_ca(&dir, &key, &CaOptions::default()).unwrap();
    mint::create_node(&dir, &key, 1, &["127.0.0.1"], &CertOptions::default()).unwrap();
    mint::create_client(&dir, &key, "alice", &CertOptions::default()).unwrap();
    (dir, key)
}

fn assert_names(e: &LoadError, file: &Path) {
    let text = e.to_string();
    assert!(
        text.contains(&file.display().to_string()),
        "{text:?} does not name {}",
        file.display()
    );
}

// What bad input gets: every bad certs dir is a typed error naming the file
// and the problem (missing, unreadable, not PEM, no certificate, no key,
// mismatched key, wrong CA, expired, not a CA in ca.crt, a client file in
// node.crt, a node file as a client's), and nothing panics.
#[test]
fn load_errors_name_the_file() {
    let root = tempfile::tempdir().unwrap();
    let (dir, key) = minted(root.path());
    let node = NodeCerts::load(&dir).unwrap();
    assert_eq!(node.node_id(), 1);
    assert_eq!(ClientCerts::load(&dir, "alice").unwrap().user(), "alice");
    let fresh = |name: &str| {
        let d = root.path().join(name);
        std::fs::create_dir_all(&d).unwrap();
        for f in [
            "ca.crt",
            "node.crt",
            "node.key",
            "client.alice.crt",
            "client.alice.key",
        ] {
            std::fs::copy(dir.join(f), d.join(f)).unwrap();
        }
        d
    };

    // Missing.
    let d = root.path().join("empty");
    std::fs::create_dir_all(&d).unwrap();
    let e = NodeCerts::load(&d).unwrap_err();
    assert!(matches!(e, LoadError::Missing { .. }), "{e}");
    assert_names(&e, &d.join("ca.crt"));
    let d = fresh("no-key");
    std::fs::remove_file(d.join("node.key")).unwrap();
    let e = NodeCerts::load(&d).unwrap_err();
    assert!(matches!(e, LoadError::Missing { .. }), "{e}");
    assert_names(&e, &d.join("node.key"));

    // Unreadable (a directory where the file should be).
    let d = fresh("unreadable");
    std::fs::remove_file(d.join("node.crt")).unwrap();
    std::fs::create_dir(d.join("node.crt")).unwrap();
    let e = NodeCerts::load(&d).unwrap_err();
    assert!(matches!(e, LoadError::Unreadable { .. }), "{e}");
    assert_names(&e, &d.join("node.crt"));

    // Garbage: not PEM.
    let d = fresh("garbage");
    std::fs::write(d.join("node.crt"), [0u8, 159, 146, 150, 7, 7]).unwrap();
    let e = NodeCerts::load(&d).unwrap_err();
    assert!(matches!(e, LoadError::NotPem { .. }), "{e}");
    assert_names(&e, &d.join("node.crt"));
    let d = fresh("truncated");
    let pem = std::fs::read_to_string(d.join("node.crt")).unwrap();
    std::fs::write(d.join("node.crt"), &pem[..pem.len() / 2]).unwrap();
    let e = NodeCerts::load(&d).unwrap_err();
    assert!(matches!(e, LoadError::NotPem { .. }), "{e}");

    // PEM, but the wrong sections.
    let d = fresh("swapped");
    std::fs::copy(d.join("node.key"), d.join("node.crt")).unwrap();
    let e = NodeCerts::load(&d).unwrap_err();
    assert!(matches!(e, LoadError::NoCertificate { .. }), "{e}");
    assert_names(&e, &d.join("node.crt"));
    let d = fresh("cert-as-key");
    std::fs::copy(d.join("node.crt"), d.join("node.key")).unwrap();
    let e = NodeCerts::load(&d).unwrap_err();
    assert!(matches!(e, LoadError::NoKey { .. }), "{e}");
    assert_names(&e, &d.join("node.key"));

    // The key of another certificate.
    let d = fresh("mismatch");
    std::fs::copy(d.join("client.alice.key"), d.join("node.key")).unwrap();
    let e = NodeCerts::load(&d).unwrap_err();
    assert!(matches!(e, LoadError::KeyMismatch { .. }), "{e}");
    assert_names(&e, &d.join("node.key"));
    assert_names(&e, &d.join("node.crt"));

    // Signed by another CA than ca.crt's.
    let d = fresh("wrong-ca");
    let other = root.path().join("other");
    mint::create_ca(
        &other,
        &root.path().join("other.key"),
        &CaOptions::default(),
    )
    .unwrap();
    std::fs::copy(other.join("ca.crt"), d.join("ca.crt")).unwrap();
    let e = NodeCerts::load(&d).unwrap_err();
    assert!(matches!(e, LoadError::NotSignedByCa { .. }), "{e}");
    assert_names(&e, &d.join("node.crt"));
    assert_names(&e, &d.join("ca.crt"));

    // Expired.
    let d = fresh("expired");
    let now = SystemTime::now();
    mint::create_node(
        &d,
        &key,
        1,
        &["127.0.0.1"],
        &CertOptions {
            overwrite: true,
            validity: Some(Validity {
                not_before: now - 3 * DAY,
                not_after: now - DAY,
            }),
            cluster: None,
        },
    )
    .unwrap();
    let e = NodeCerts::load(&d).unwrap_err();
    assert!(matches!(e, LoadError::Expired { .. }), "{e}");
    assert_names(&e, &d.join("node.crt"));
    assert!(e.to_string().contains("expired at"), "{e}");

    // A leaf in ca.crt.
    let d = fresh("leaf-as-ca");
    std::fs::copy(d.join("node.crt"), d.join("ca.crt")).unwrap();
    let e = NodeCerts::load(&d).unwrap_err();
    assert!(matches!(e, LoadError::BadCertificate { .. }), "{e}");
    assert_names(&e, &d.join("ca.crt"));

    // A client's certificate in node.crt: no node id.
    let d = fresh("client-as-node");
    std::fs::copy(d.join("client.alice.crt"), d.join("node.crt")).unwrap();
    std::fs::copy(d.join("client.alice.key"), d.join("node.key")).unwrap();
    let e = NodeCerts::load(&d).unwrap_err();
    assert!(matches!(e, LoadError::NoNodeId { .. }), "{e}");
    assert_names(&e, &d.join("node.crt"));

    // A node's certificate as a client's: it carries the node URI.
    let d = fresh("node-as-client");
    std::fs::copy(d.join("node.crt"), d.join("client.bob.crt")).unwrap();
    std::fs::copy(d.join("node.key"), d.join("client.bob.key")).unwrap();
    let e = ClientCerts::load(&d, "bob").unwrap_err();
    assert!(matches!(e, LoadError::ClientHasNodeUri { .. }), "{e}");
    assert_names(&e, &d.join("client.bob.crt"));

    // alice's certificate under another user's name.
    std::fs::copy(d.join("client.alice.crt"), d.join("client.carol.crt")).unwrap();
    std::fs::copy(d.join("client.alice.key"), d.join("client.carol.key")).unwrap();
    let e = ClientCerts::load(&d, "carol").unwrap_err();
    assert!(matches!(e, LoadError::BadIdentity { .. }), "{e}");
    assert_names(&e, &d.join("client.carol.crt"));

    // A user name that is no principal (no path tricks): nothing is read.
    for bad in ["../alice", "", "node"] {
        let e = ClientCerts::load(&d, bad).unwrap_err();
        assert!(matches!(e, LoadError::BadUser(_)), "{bad:?}: {e}");
        assert!(e.to_string().starts_with("user: "), "{e}");
    }
}

// Security of key files: keys are created with mode 0600 (certificates are
// not writable by others), and the CA key cannot be written into the certs
// dir, however the path is spelled.
#[test]
fn keys_are_0600_and_the_ca_key_stays_out_of_the_certs_dir() {
    let root = tempfile::tempdir().unwrap();
    let (dir, key) = minted(root.path());
    for k in [
        key.clone(),
        dir.join("node.key"),
        dir.join("client.alice.key"),
    ] {
        assert_eq!(mode(&k), 0o600, "{}", k.display());
    }
    for c in ["ca.crt", "node.crt", "client.alice.crt"] {
        let m = mode(&dir.join(c));
        assert_eq!(m & 0o022, 0, "{c}: {m:o}");
        assert_eq!(m & 0o400, 0o400, "{c}: {m:o}");
    }

    let fresh = root.path().join("fresh");
    std::fs::create_dir_all(&fresh).unwrap();
    std::os::unix::fs::symlink(&fresh, root.path().join("link")).unwrap();
    for inside in [
        fresh.join("ca.key"),
        fresh.join("sub/ca.key"),
        root.path().join("fresh/../fresh/ca.key"),
        root.path().join("link/ca.key"),
    ] {
        match mint::create_ca(&fresh, &inside, &CaOptions::default()) {
            Err(MintError::KeyInsideCertsDir { key, certs_dir }) => {
                assert_eq!(
                    (key, certs_dir.as_path()),
                    (inside.clone(), fresh.as_path())
                );
            }
            other => panic!("{}: expected a refusal, got {other:?}", inside.display()),
        }
        assert!(!inside.exists());
        assert!(!fresh.join("ca.crt").exists());
    }
    let e = mint::create_node(
        &dir,
        &dir.join("ca.key"),
        2,
        &["h"],
        &CertOptions::default(),
    )
    .unwrap_err();
    assert!(matches!(e, MintError::KeyInsideCertsDir { .. }), "{e}");
}

// CockroachDB's create-ca --overwrite: an existing CA key is not replaced
// without it; with it (or with a new key path) the new CA is appended to
// ca.crt, and new certificates are signed by the CA matching the key.
#[test]
fn create_ca_refuses_to_overwrite_and_appends_a_bundle() {
    let root = tempfile::tempdir().unwrap();
    let (dir, key) = minted(root.path());
    let old_key = std::fs::read(&key).unwrap();
    let e = mint::create_ca(&dir, &key, &CaOptions::default()).unwrap_err();
    assert!(matches!(e, MintError::CaKeyExists { .. }), "{e}");
    assert!(e.to_string().contains("--overwrite"), "{e}");
    assert_eq!(std::fs::read(&key).unwrap(), old_key);

    let ca = mint::create_ca(
        &dir,
        &key,
        &CaOptions {
            overwrite: true,
            validity: None,
            cluster: None,
        },
    )
    .unwrap();
    assert_eq!(ca.cas_in_bundle, 2);
    assert_ne!(std::fs::read(&key).unwrap(), old_key);
    assert_eq!(mode(&key), 0o600);
    let listing = inspect::list(&dir).unwrap();
    let cas: Vec<_> = listing
        .certs
        .iter()
        .filter(|c| c.kind == CertKind::Ca)
        .collect();
    assert_eq!(cas.len(), 2);
    assert_ne!(cas[0].subject, cas[1].subject);
    assert!(
        cas[1].subject.contains(&ca.common_name),
        "{}",
        cas[1].subject
    );

    // The old node certificate still loads against the bundle; a new one is
    // signed by the new CA.
    assert_eq!(NodeCerts::load(&dir).unwrap().node_id(), 1);
    let e = mint::create_node(&dir, &key, 1, &["127.0.0.1"], &CertOptions::default()).unwrap_err();
    assert!(matches!(e, MintError::Exists { .. }), "{e}");
    mint::create_node(
        &dir,
        &key,
        1,
        &["127.0.0.1"],
        &CertOptions {
            overwrite: true,
            validity: None,
            cluster: None,
        },
    )
    .unwrap();
    let listing = inspect::list(&dir).unwrap();
    let node = listing
        .certs
        .iter()
        .find(|c| c.kind == CertKind::Node(1))
        .unwrap();
    assert!(node.issuer.contains(&ca.common_name), "{}", node.issuer);

    // A CA key whose certificate is not in ca.crt.
    let other = root.path().join("other");
    let other_key = root.path().join("other.key");
    mint::create_ca(&other, &other_key, &CaOptions::default()).unwrap();
    let e = mint::create_client(&dir, &other_key, "bob", &CertOptions::default()).unwrap_err();
    assert!(matches!(e, MintError::KeyNotInBundle { .. }), "{e}");
}

// What bad input gets: node ids, hosts and client names are checked before
// anything is written; a certificate never outlives its CA.
#[test]
fn mint_checks_its_input() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("certs");
    let key = root.path().join("ca.key");
    mint::create_ca(
        &dir,
        &key,
        &CaOptions {
            overwrite: false,
            validity: Some(Validity::lifetime(10 * DAY)),
            cluster: None,
        },
    )
    .unwrap();
    let opts = CertOptions::default();
    assert!(matches!(
        mint::create_node(&dir, &key, 0, &["h"], &opts),
        Err(MintError::BadNodeId { id: 0 })
    ));
    assert!(matches!(
        mint::create_node(&dir, &key, 1 << 53, &["h"], &opts),
        Err(MintError::BadNodeId { .. })
    ));
    assert!(matches!(
        mint::create_node::<&str>(&dir, &key, 1, &[], &opts),
        Err(MintError::NoHosts)
    ));
    for bad in ["bad host", "a..b", "", "x/y"] {
        assert!(
            matches!(
                mint::create_node(&dir, &key, 1, &[bad], &opts),
                Err(MintError::BadHost { .. })
            ),
            "{bad:?}"
        );
    }
    assert!(!dir.join("node.crt").exists());
    for (bad, reason) in [
        ("", "1..=64"),
        (".hidden", "start"),
        ("a b", "contains"),
        ("node7", "reserved"),
    ] {
        let e = mint::create_client(&dir, &key, bad, &opts).unwrap_err();
        assert!(matches!(e, MintError::BadName(_)), "{bad:?}: {e}");
        assert!(e.to_string().contains(reason), "{bad:?}: {e}");
    }
    let e = mint::create_client(&dir, &key, &"a".repeat(65), &opts).unwrap_err();
    assert!(
        matches!(
            e,
            MintError::BadName(PrincipalError::Length { len: 65, .. })
        ),
        "{e}"
    );

    let node = mint::create_node(
        &dir,
        &key,
        7,
        &["127.0.0.1", "[::1]", "db-7.example.com"],
        &opts,
    )
    .unwrap();
    assert_eq!(
        node.sans,
        [
            "IP:127.0.0.1",
            "IP:::1",
            "DNS:db-7.example.com",
            "URI:warden://node/7"
        ]
    );
    assert!(node.cut_to_ca);
    assert!(node.not_after <= SystemTime::now() + 10 * DAY);
    let client = mint::create_client(&dir, &key, "svc@orders", &opts).unwrap();
    assert_eq!(client.sans, ["URI:warden://principal/svc@orders"]);
    assert_eq!(client.common_name, "svc@orders");
}

// `warden cert list`: every certificate with its kind, subject, SANs,
// validity and whether it expired; unreadable files and loose key modes
// are reported, not fatal.
#[test]
fn list_describes_every_certificate() {
    let root = tempfile::tempdir().unwrap();
    let (dir, key) = minted(root.path());
    let now = SystemTime::now();
    mint::create_client(
        &dir,
        &key,
        "old",
        &CertOptions {
            overwrite: false,
            validity: Some(Validity {
                not_before: now - 3 * DAY,
                not_after: now - DAY,
            }),
            cluster: None,
        },
    )
    .unwrap();
    std::fs::write(dir.join("junk.crt"), "not a certificate").unwrap();
    std::fs::write(dir.join("loose.key"), "x").unwrap();
    std::fs::set_permissions(
        dir.join("loose.key"),
        std::fs::Permissions::from_mode(0o644),
    )
    .unwrap();
    let listing = inspect::list(&dir).unwrap();
    let kinds: Vec<(String, CertKind, bool)> = listing
        .certs
        .iter()
        .map(|c| {
            (
                c.file.file_name().unwrap().to_string_lossy().into_owned(),
                c.kind.clone(),
                c.expired,
            )
        })
        .collect();
    assert_eq!(
        kinds,
        [
            ("ca.crt".to_string(), CertKind::Ca, false),
            (
                "client.alice.crt".to_string(),
                CertKind::Client("alice".into()),
                false
            ),
            (
                "client.old.crt".to_string(),
                CertKind::Client("old".into()),
                true
            ),
            ("node.crt".to_string(), CertKind::Node(1), false),
        ]
    );
    let node = &listing.certs[3];
    assert_eq!(node.subject, "CN=node");
    assert_eq!(node.sans, ["IP:127.0.0.1", "URI:warden://node/1"]);
    assert!(node.not_before < now && node.not_after > now + 1800 * DAY);
    assert_eq!(listing.problems.len(), 2, "{:?}", listing.problems);
    assert!(listing
        .problems
        .iter()
        .any(|p| p.to_string().contains("junk.crt")));
    assert!(listing
        .problems
        .iter()
        .any(|p| p.to_string().contains("loose.key")));
    assert!(matches!(
        inspect::list(&root.path().join("nope")),
        Err(LoadError::Missing { .. })
    ));
}

// docs/security.md "Certificates", cluster names: `create-ca --cluster`
// writes `warden://cluster/NAME` on the CA; node and client certificates
// it signs inherit it, `--cluster` overrides it (one CA, several
// clusters), the loaders and `cert list` read it back, and a bad name is
// refused naming the flag, with nothing written.
#[test]
fn certificates_carry_their_cluster_name() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("certs");
    let key = root.path().join("ca.key");
    let named = |n: &str| Some(n.to_string());
    let ca = mint::create_ca(
        &dir,
        &key,
        &CaOptions {
            cluster: named("prod"),
            ..CaOptions::default()
        },
    )
    .unwrap();
    assert_eq!(ca.cluster.as_deref(), Some("prod"));
    let node = mint::create_node(&dir, &key, 1, &["127.0.0.1"], &CertOptions::default()).unwrap();
    assert_eq!(node.cluster.as_deref(), Some("prod"));
    assert!(
        node.sans.contains(&"URI:warden://cluster/prod".to_string()),
        "{:?}",
        node.sans
    );
    let alice = mint::create_client(
        &dir,
        &key,
        "alice",
        &CertOptions {
            cluster: named("staging"),
            ..CertOptions::default()
        },
    )
    .unwrap();
    assert_eq!(alice.cluster.as_deref(), Some("staging"));
    assert_eq!(NodeCerts::load(&dir).unwrap().cluster(), Some("prod"));
    assert_eq!(
        ClientCerts::load(&dir, "alice").unwrap().cluster(),
        Some("staging")
    );
    let listing = inspect::list(&dir).unwrap();
    let clusters: Vec<(CertKind, Option<String>)> = listing
        .certs
        .iter()
        .map(|c| (c.kind.clone(), c.cluster.clone()))
        .collect();
    assert_eq!(
        clusters,
        vec![
            (CertKind::Ca, named("prod")),
            (CertKind::Client("alice".into()), named("staging")),
            (CertKind::Node(1), named("prod")),
        ]
    );

    // Bad names: refused before anything is written.
    let e = mint::create_client(
        &dir,
        &key,
        "bob",
        &CertOptions {
            cluster: named("Prod"),
            ..CertOptions::default()
        },
    )
    .unwrap_err();
    assert!(matches!(e, MintError::BadCluster(_)), "{e:?}");
    assert!(e.to_string().starts_with("--cluster: "), "{e}");
    assert!(!dir.join("client.bob.crt").exists());
    let e = mint::create_ca(
        &root.path().join("other"),
        &root.path().join("other.key"),
        &CaOptions {
            cluster: named("a/b"),
            ..CaOptions::default()
        },
    )
    .unwrap_err();
    assert!(matches!(e, MintError::BadCluster(_)), "{e:?}");
    assert!(!root.path().join("other.key").exists());

    // A CA without a name signs certificates without one unless told.
    let (plain, plain_key) = minted(&root.path().join("plain"));
    assert_eq!(NodeCerts::load(&plain).unwrap().cluster(), None);
    let m = mint::create_node(
        &plain,
        &plain_key,
        2,
        &["127.0.0.1"],
        &CertOptions {
            overwrite: true,
            cluster: named("blue"),
            ..CertOptions::default()
        },
    )
    .unwrap();
    assert_eq!(m.cluster.as_deref(), Some("blue"));
    assert_eq!(NodeCerts::load(&plain).unwrap().cluster(), Some("blue"));
}
