//! A stolen key, with real processes over mutual TLS (docs/security.md "A
//! key was stolen"): the replicated deny list cuts off a principal or one
//! certificate on every node, closes its open connections, ends its waits,
//! and leaves its leases for an admin to revoke.

use std::time::{Duration, Instant};

use warden_client::WatchTarget;

use crate::harness::Cluster;

/// As root: a role named after `user` with `lock` on `prefix`, given to it.
fn grant_lock(cluster: &Cluster, user: &str, prefix: &str) {
    let (code, _, err) = cluster.cli(&[
        "role",
        "grant",
        user,
        "--prefix",
        prefix,
        "--permission",
        "lock",
    ]);
    assert_eq!(code, 0, "{err}");
    let (code, _, err) = cluster.cli(&["user", "grant-role", user, user]);
    assert_eq!(code, 0, "{err}");
}

/// Polls `check` every 20 ms until it holds; panics naming `what` once
/// `within` has passed since `since`.
async fn until(since: Instant, within: Duration, what: &str, mut check: impl FnMut() -> bool) {
    while !check() {
        assert!(since.elapsed() < within, "{what} not within {within:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// How many connections node `id` says it closed for the deny list (the
/// sum over its `deny list changed` lines' `closed_connections`).
fn closed_logged(cluster: &Cluster, id: u64) -> u64 {
    let log = std::fs::read_to_string(&cluster.nodes[&id].log).unwrap_or_default();
    log.lines()
        .filter(|l| l.contains("deny list changed"))
        .filter_map(|l| {
            let rest = &l[l.find("closed_connections")? + "closed_connections".len()..];
            let digits: String = rest
                .trim_start_matches(['=', '"', ':', ' '])
                .chars()
                .take_while(char::is_ascii_digit)
                .collect();
            digits.parse::<u64>().ok()
        })
        .sum()
}

/// A stolen client key, denied by principal: mallory holds `jobs/1` and
/// waits on `jobs/2` (held by alice) and has a watch stream open; root runs
/// `warden user deny mallory`. Within a second of the CLI's answer the
/// nodes have closed her open connections (their logs count them) and her
/// watch stream has ended, her wait is gone from the queue, and a new
/// connection of hers fails its handshake; alice is
/// served throughout. Her grant stays until root revokes her lease
/// (admin may revoke any lease). `user list` marks her denied, and
/// `user undeny` lets her connect again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_denied_principal_is_cut_off_within_a_second_and_its_lease_is_revocable() {
    let cluster = Cluster::start(3, &[]).await;
    grant_lock(&cluster, "alice", "jobs/");
    grant_lock(&cluster, "mallory", "jobs/");
    let root = cluster.api();
    let alice = cluster.api_as("alice");
    let mallory = cluster.api_as("mallory");
    let (held_by_alice, _) = alice
        .acquire(1, 1, "jobs/2", 60_000)
        .await
        .expect("alice")
        .grant();
    let (mallorys_lease, _) = mallory
        .acquire(2, 1, "jobs/1", 60_000)
        .await
        .expect("mallory")
        .grant();
    let waiting = mallory.clone();
    let wait = tokio::spawn(async move {
        waiting
            .acquire_waiting(2, 2, "jobs/2", 60_000, 30_000)
            .await
    });
    let deadline = Instant::now() + Duration::from_secs(10);
    while root.status("jobs/2").await.expect("status").waiters != 1 {
        assert!(Instant::now() < deadline, "mallory never queued");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let mut watch = cluster
        .client_as("mallory")
        .await
        .watch(WatchTarget::Prefix("jobs/".into()), 0)
        .await
        .expect("mallory's watch");

    let (code, j, err) = cluster.cli(&["user", "deny", "mallory"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        (&j["user"], &j["denied"]),
        (&"mallory".into(), &true.into())
    );
    let denied_at = Instant::now();

    // Her open connections are closed by the nodes that hold them (each
    // logs how many it closed), and her open stream ends.
    let mut closed = 0;
    until(
        denied_at,
        Duration::from_secs(1),
        "mallory's connections closed",
        || {
            closed = cluster
                .nodes
                .keys()
                .map(|id| closed_logged(&cluster, *id))
                .sum();
            closed >= 1
        },
    )
    .await;
    eprintln!(
        "{closed} connections of mallory closed within {:?} of the deny",
        denied_at.elapsed()
    );
    let ended = tokio::time::timeout(Duration::from_secs(1), async {
        loop {
            match watch.next().await {
                Ok(_) => continue,
                Err(e) => return e,
            }
        }
    })
    .await
    .expect("mallory's open watch stream ends within a second of the deny");
    eprintln!("mallory's watch ended: {ended}");
    // Her wait is gone (ended at the deny's entry), her grant stays.
    let st = root.status("jobs/2").await.expect("status");
    assert_eq!(
        (st.waiters, st.holder.map(|h| h.lease_id)),
        (0, Some(held_by_alice))
    );
    let st = root.status("jobs/1").await.expect("status");
    assert_eq!(st.holder.map(|h| h.lease_id), Some(mallorys_lease));
    let answer = tokio::time::timeout(Duration::from_secs(30), wait)
        .await
        .expect("her waiting acquire ends")
        .expect("join");
    assert!(
        answer.is_err(),
        "a denied principal is not granted: {answer:?}"
    );
    // A new connection of hers fails its handshake, on every node.
    let (code, _, err) = cluster.cli_as("mallory", &["status", "jobs/1"]);
    assert_ne!(code, 0, "a denied principal's new connection is refused");
    assert!(denied_at.elapsed() < Duration::from_secs(30), "{err}");
    // Alice is served.
    alice.status("jobs/1").await.expect("alice is served");
    // The user list marks her; root revokes her lease (audited).
    let (code, users, err) = cluster.cli(&["user", "list"]);
    assert_eq!(code, 0, "{err}");
    let me = users
        .as_array()
        .and_then(|u| u.iter().find(|u| u["user"] == "mallory"))
        .cloned()
        .expect("mallory listed");
    assert_eq!(me["denied"], true);
    let (code, _, err) = cluster.cli(&["lease", "revoke", &mallorys_lease.to_string()]);
    assert_eq!(code, 0, "{err}");
    assert!(root
        .status("jobs/1")
        .await
        .expect("status")
        .holder
        .is_none());
    // Undenied, she connects again.
    let (code, _, err) = cluster.cli(&["user", "undeny", "mallory"]);
    assert_eq!(code, 0, "{err}");
    let since = Instant::now();
    let mut last = String::new();
    until(
        since,
        Duration::from_secs(5),
        "mallory reconnecting after undeny",
        || {
            let (code, _, err) = cluster.cli_as("mallory", &["status", "jobs/1"]);
            last = err;
            code == 0
        },
    )
    .await;
}

/// A stolen certificate, denied by serial: `warden cert revoke --cert
/// FILE` refuses that one certificate's handshakes while the principal's
/// new certificate is served; `user denied` lists the serial as `warden
/// cert list` prints it; `cert unrevoke` takes it back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_revoked_certificate_is_refused_and_a_new_one_of_the_principal_is_served() {
    let cluster = Cluster::start(3, &[]).await;
    grant_lock(&cluster, "dave", "d/");
    let dir = crate::harness::certs::certs()
        .client_dir_with("dave")
        .to_path_buf();
    let stolen = dir.join("client.dave.crt");
    let (code, _, err) = cluster.cli_as("dave", &["status", "d/1"]);
    assert_eq!(code, 0, "{err}");
    let (code, j, err) = cluster.cli(&["cert", "revoke", "--cert", stolen.to_str().expect("path")]);
    assert_eq!(code, 0, "{err}");
    let serial = j["serial"].as_str().expect("serial").to_owned();
    let (code, listed, err) = cluster.cli(&["user", "denied"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(listed["serials"], serde_json::json!([serial]));
    let since = Instant::now();
    until(
        since,
        Duration::from_secs(1),
        "the revoked certificate refused",
        || cluster.cli_as("dave", &["status", "d/1"]).0 != 0,
    )
    .await;
    // A new certificate for dave (a new serial) is served.
    let fresh = tempfile::tempdir().expect("tempdir");
    std::fs::copy(dir.join("ca.crt"), fresh.path().join("ca.crt")).expect("ca");
    warden_tls::mint::create_client(
        fresh.path(),
        &crate::harness::certs::certs().ca_key,
        "dave",
        &warden_tls::mint::CertOptions::default(),
    )
    .expect("mint dave's new certificate");
    let endpoints = cluster.endpoints();
    let out = std::process::Command::new(crate::harness::warden_bin())
        .args(["status", "d/1", "--output", "json", "--user", "dave"])
        .args(["--endpoints", &endpoints])
        .arg("--certs-dir")
        .arg(fresh.path())
        .output()
        .expect("run warden");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (code, _, err) = cluster.cli(&["cert", "unrevoke", &serial]);
    assert_eq!(code, 0, "{err}");
    let since = Instant::now();
    until(
        since,
        Duration::from_secs(5),
        "the unrevoked certificate served",
        || cluster.cli_as("dave", &["status", "d/1"]).0 == 0,
    )
    .await;
}
