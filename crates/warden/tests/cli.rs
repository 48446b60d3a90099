//! The client commands' TLS flags and variables, with the real binary and
//! no cluster: what a command says and how it exits before it sends
//! anything. Each process gets a clean environment (no `WARDEN_*` of the
//! caller's shell), so the variables are exercised as a user sets them.

use std::process::{Command, Output};

fn warden(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_warden"));
    for (name, _) in std::env::vars() {
        if name.starts_with("WARDEN_") {
            cmd.env_remove(name);
        }
    }
    cmd.args(args)
        .envs(env.iter().copied())
        .output()
        .expect("run warden")
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).trim().to_string()
}

// "What bad input gets": with neither --certs-dir nor --insecure (flag or
// variable) a client command exits 1 with one line naming both ways, and
// prints nothing on stdout (a JSON reader sees no half answer).
#[test]
fn without_credentials_a_command_names_both_ways() {
    for args in [
        &["status", "orders", "--endpoints", "127.0.0.1:1"][..],
        &[
            "cluster",
            "status",
            "--endpoints",
            "127.0.0.1:1",
            "--output",
            "json",
        ],
        &["exec", "orders", "--endpoints", "127.0.0.1:1", "--", "true"],
    ] {
        let out = warden(args, &[]);
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        let err = stderr(&out);
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        for needle in [
            "--certs-dir",
            "WARDEN_CERTS_DIR",
            "--insecure",
            "WARDEN_INSECURE=true",
        ] {
            assert!(err.contains(needle), "{args:?}: {needle}: {err}");
        }
        assert!(out.stdout.is_empty(), "{args:?}");
    }
    // WARDEN_INSECURE=false is not insecure.
    let out = warden(
        &["status", "orders", "--endpoints", "127.0.0.1:1"],
        &[("WARDEN_INSECURE", "false")],
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("no credentials"), "{}", stderr(&out));
}

// "What bad input gets": a certs dir that cannot be used (from the flag or
// WARDEN_CERTS_DIR) exits 1 naming the file; WARDEN_USER picks the
// certificate; a user name that is no principal names --user.
#[test]
fn a_bad_certs_dir_exits_one_naming_the_file() {
    let root = tempfile::tempdir().unwrap();
    let missing = root.path().join("nowhere");
    let out = warden(
        &["status", "orders", "--endpoints", "127.0.0.1:1"],
        &[("WARDEN_CERTS_DIR", missing.to_str().unwrap())],
    );
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        stderr(&out),
        format!(
            "error: --certs-dir: {}: missing (no such file)",
            missing.join("ca.crt").display()
        )
    );

    let set = warden_tls::mint::loopback_set(root.path(), &[], &["root"]).unwrap();
    let dir = set.client_dir.to_str().unwrap();
    let out = warden(
        &[
            "status",
            "orders",
            "--endpoints",
            "127.0.0.1:1",
            "--certs-dir",
            dir,
        ],
        &[("WARDEN_USER", "alice")],
    );
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(
        err.starts_with("error: --certs-dir: ")
            && err.contains(&format!("{dir}/client.alice.crt: missing")),
        "{err}"
    );

    let out = warden(
        &[
            "lease",
            "grant",
            "--ttl",
            "10s",
            "--endpoints",
            "127.0.0.1:1",
            "--user",
            "node",
        ],
        &[("WARDEN_CERTS_DIR", dir)],
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).starts_with("error: --user \"node\": "),
        "{}",
        stderr(&out)
    );
}

// A certs dir is never dropped silently for plaintext: WARDEN_INSECURE=true
// (the variable is read) together with a certs dir is refused, naming both.
#[test]
fn insecure_and_a_certs_dir_together_are_refused() {
    let out = warden(
        &[
            "status",
            "orders",
            "--endpoints",
            "127.0.0.1:1",
            "--certs-dir",
            "/c",
        ],
        &[("WARDEN_INSECURE", "true")],
    );
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(
        err.contains("--insecure and --certs-dir /c are both given"),
        "{err}"
    );
}

// The fenced store authenticates no writer: it refuses a --listen that is
// not loopback unless --insecure, naming both, before binding or creating
// anything.
#[test]
fn the_fenced_store_serves_loopback_only_unless_insecure() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("store");
    let out = warden(
        &[
            "fenced-store",
            "--listen",
            "0.0.0.0:0",
            "--data-dir",
            dir.to_str().unwrap(),
        ],
        &[],
    );
    assert!(!dir.exists(), "refused, yet the data dir was made");
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(
        err.contains("--listen 0.0.0.0:0: 0.0.0.0 is not a loopback address")
            && err.contains("--insecure"),
        "{err}"
    );
}

/// A loopback port nothing listens on (bound, then closed).
fn refused_port() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().to_string()
}

// A one-shot command pointed where no node can be fails with the reason
// for each endpoint (docs/operations.md "Exit codes"): every endpoint
// refused (each one named, not only the last), or no host name resolves.
#[test]
fn a_wrong_endpoint_is_named_with_its_reason() {
    let (a, b) = (refused_port(), refused_port());
    let endpoints = format!("{a},{b}");
    let out = warden(
        &["status", "orders", "--insecure", "--endpoints", &endpoints],
        &[],
    );
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert_eq!(err.lines().count(), 1, "{err}");
    for endpoint in [&a, &b] {
        assert!(err.contains(&format!("{endpoint}: ")), "{endpoint}: {err}");
    }
    assert_eq!(err.matches("Connection refused").count(), 2, "{err}");

    let out = warden(
        &[
            "status",
            "orders",
            "--insecure",
            "--endpoints",
            "no-such-host.invalid:7001",
        ],
        &[],
    );
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(
        err.contains("--endpoints: no-such-host.invalid:7001: cannot resolve the host name"),
        "{err}"
    );
    assert!(out.stdout.is_empty());
}
