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
    // No client profile (not the real home's): an empty config home.
    let config = tempfile::tempdir().expect("config home");
    cmd.env("XDG_CONFIG_HOME", config.path())
        .args(args)
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

/// `warden server`'s exit code for a refused start (docs/operations.md
/// "Server exit codes"; `server_exit.rs`).
const EXIT_REFUSED_START: i32 = 78;
/// ... for lost or foreign data.
const EXIT_DATA: i32 = 65;

// docs/operations.md "Server exit codes": a server that will never start as
// configured exits 78 (so systemd's RestartPreventExitStatus does not
// restart it), whether the flags, the config file or the certificates are
// wrong; a client command's usage error stays 1.
#[test]
fn a_refused_server_start_exits_78() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let data = data.to_str().unwrap();
    let node = ["server", "--id", "1", "--listen", "127.0.0.1:0"];
    let peers = ["--peers", "1=127.0.0.1:7001", "--data-dir", data];
    // Neither --certs-dir nor --insecure.
    let out = warden(&[&node[..], &peers[..]].concat(), &[]);
    assert_eq!(out.status.code(), Some(EXIT_REFUSED_START), "{out:?}");
    assert!(stderr(&out).starts_with("error: no --certs-dir"), "{out:?}");
    // A flag clap refuses.
    let out = warden(&["server", "--heartbeat", "soon"], &[]);
    assert_eq!(out.status.code(), Some(EXIT_REFUSED_START), "{out:?}");
    // A config file with an unknown key.
    let config = dir.path().join("warden.toml");
    std::fs::write(&config, "hearbeat = \"50ms\"\n").unwrap();
    let out = warden(
        &[
            &node[..],
            &peers[..],
            &["--insecure", "--config", config.to_str().unwrap()],
        ]
        .concat(),
        &[],
    );
    assert_eq!(out.status.code(), Some(EXIT_REFUSED_START), "{out:?}");
    assert!(stderr(&out).contains("hearbeat"), "{out:?}");
    // A certs dir without its files.
    let out = warden(
        &[&node[..], &peers[..], &["--certs-dir", data]].concat(),
        &[],
    );
    assert_eq!(out.status.code(), Some(EXIT_REFUSED_START), "{out:?}");
    // Not the server: a usage error is 1 as before.
    let out = warden(&["status", "--bogus"], &[]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
}

/// Runs `warden server ARGS` until its stderr has a line containing
/// `ready_line` (30 s deadline); returns the child and the lines read.
fn server_until(
    args: &[&str],
    ready_line: &str,
) -> (
    std::process::Child,
    std::sync::mpsc::Receiver<String>,
    Vec<String>,
) {
    use std::io::BufRead as _;
    let mut child = Command::new(env!("CARGO_BIN_EXE_warden"))
        .args(args)
        .env_remove("RUST_LOG")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run warden server");
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stderr)
            .lines()
            .map_while(Result::ok)
        {
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let mut lines = Vec::new();
    loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        match rx.recv_timeout(left) {
            Ok(line) => {
                let ready = line.contains(ready_line);
                lines.push(line);
                if ready {
                    return (child, rx, lines);
                }
            }
            Err(e) => {
                let _ = child.kill();
                let _ = child.wait();
                panic!("no {ready_line:?} line from the server ({e}): {lines:?}");
            }
        }
    }
}

/// Sends SIGTERM and waits (30 s deadline) for the exit code.
fn terminate(mut child: std::process::Child) -> Option<i32> {
    let pid = nix::unistd::Pid::from_raw(child.id() as i32);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).expect("SIGTERM");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        if let Some(status) = child.try_wait().expect("wait") {
            return status.code();
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("the server did not stop within 30 s of SIGTERM");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

// docs/operations.md "Server exit codes" and "Logs": SIGTERM is a clean
// stop (0), even while the node waits for its peers; a data dir that
// belongs to another node is lost/foreign data (65), and with
// --log-format json that last word is a JSON line naming the exit code.
#[test]
fn a_clean_stop_exits_0_and_another_nodes_data_dir_exits_65() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let data = data.to_str().unwrap();
    let (a, b) = (refused_port(), refused_port());
    let peers = format!("1={a},2={b}");
    // Node 1 takes the data dir, then waits for node 2 (never started).
    let (child, _rx, _) = server_until(
        &[
            "server",
            "--insecure",
            "--id",
            "1",
            "--listen",
            &a,
            "--peers",
            &peers,
            "--data-dir",
            data,
        ],
        "insecure mode",
    );
    assert_eq!(terminate(child), Some(0));
    // Node 2 on node 1's data dir.
    let out = warden(
        &[
            "server",
            "--insecure",
            "--id",
            "2",
            "--listen",
            &b,
            "--peers",
            &peers,
            "--data-dir",
            data,
            "--log-format",
            "json",
        ],
        &[],
    );
    assert_eq!(out.status.code(), Some(EXIT_DATA), "{out:?}");
    let last = stderr(&out).lines().last().unwrap_or_default().to_string();
    let line: serde_json::Value = serde_json::from_str(&last).expect("a JSON log line");
    assert_eq!(line["level"], "ERROR", "{last}");
    assert_eq!(line["fields"]["exit_code"], EXIT_DATA, "{last}");
    let message = line["fields"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("belongs to node 1"), "{last}");
}

// docs/operations.md "Environment": every server flag but --insecure and
// --allow-admin can come from `WARDEN_SERVER_<FLAG>`, and the CLI's own
// `WARDEN_*` variables never change how a server starts: a shell set up for
// the CLI (WARDEN_INSECURE, WARDEN_CERTS_DIR) still gets the refusal that
// names both flags, and WARDEN_SERVER_INSECURE is not read at all.
#[test]
fn server_flags_come_from_warden_server_variables_only() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let data = data.to_str().unwrap();
    let base = [
        ("WARDEN_SERVER_LISTEN", "127.0.0.1:0"),
        ("WARDEN_SERVER_PEERS", "1=127.0.0.1:7001"),
        ("WARDEN_SERVER_DATA_DIR", data),
    ];
    // The id from the environment, checked like the flag.
    let mut env = base.to_vec();
    env.push(("WARDEN_SERVER_ID", "0"));
    let out = warden(&["server", "--insecure"], &env);
    assert_eq!(out.status.code(), Some(EXIT_REFUSED_START), "{out:?}");
    assert!(stderr(&out).contains("--id: 0 is out of range"), "{out:?}");
    // A flag beats its variable.
    let out = warden(
        &["server", "--insecure", "--id", "1", "--heartbeat", "0ms"],
        &env,
    );
    assert_eq!(out.status.code(), Some(EXIT_REFUSED_START), "{out:?}");
    assert!(stderr(&out).contains("heartbeat"), "{out:?}");
    // The client's variables, and a made-up WARDEN_SERVER_INSECURE, do not
    // make a server insecure.
    let mut env = base.to_vec();
    env.extend([
        ("WARDEN_SERVER_ID", "1"),
        ("WARDEN_INSECURE", "1"),
        ("WARDEN_SERVER_INSECURE", "true"),
        ("WARDEN_SERVER_ALLOW_ADMIN", "true"),
    ]);
    let out = warden(&["server"], &env);
    assert_eq!(out.status.code(), Some(EXIT_REFUSED_START), "{out:?}");
    assert!(stderr(&out).starts_with("error: no --certs-dir"), "{out:?}");
}
