//! `warden dev`, the README's first command: it starts a local three-node
//! cluster, serves locks through it, stops on SIGINT, and comes back with its
//! state when run again on the same directory (S2, S3 through the user's
//! eyes). Real processes; ports picked from :0 by `warden dev` itself.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

fn warden() -> Command {
    Command::new(env!("CARGO_BIN_EXE_warden"))
}

/// Starts `warden dev` on `dir`; returns the child and the endpoints once it
/// printed `ready` (deadline 60 s).
fn start_dev(dir: &std::path::Path) -> (Child, String) {
    let mut child = warden()
        .args(["dev", "--data-dir"])
        .arg(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn warden dev");
    let stdout = child.stdout.take().expect("stdout");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut endpoints = None;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let line = rx
            .recv_timeout(left)
            .expect("warden dev printed ready in time");
        if let Some(e) = line.strip_prefix("export WARDEN_ENDPOINTS=") {
            endpoints = Some(e.trim().to_string());
        }
        if line.trim() == "ready" {
            break;
        }
    }
    (child, endpoints.expect("endpoints line"))
}

fn stop_dev(mut child: Child) {
    let pid = nix::unistd::Pid::from_raw(child.id() as i32);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGINT).expect("SIGINT");
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(status) = child.try_wait().expect("wait") {
            assert!(status.success(), "warden dev exited with {status}");
            return;
        }
        assert!(
            Instant::now() < deadline,
            "warden dev did not stop on SIGINT"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn cli(endpoints: &str, args: &[&str]) -> (i32, serde_json::Value) {
    let out = warden()
        .args(args)
        .args(["--endpoints", endpoints, "--output", "json"])
        .output()
        .expect("cli");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let v = serde_json::from_str(stdout.trim()).unwrap_or(serde_json::Value::Null);
    (out.status.code().unwrap_or(-1), v)
}

/// S2, S3: locks taken on a `warden dev` cluster survive its restart, and the
/// next token is larger.
#[test]
fn dev_cluster_serves_and_comes_back_with_its_state() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("dev");
    let (child, endpoints) = start_dev(&dir);
    let (code, g) = cli(&endpoints, &["acquire", "orders", "--ttl", "1h"]);
    assert_eq!(code, 0, "{g}");
    let lease = g["lease_id"].as_u64().expect("lease");
    let token = g["fencing_token"].as_u64().expect("token");
    stop_dev(child);

    let (child, endpoints2) = start_dev(&dir);
    assert_eq!(endpoints, endpoints2, "same ports on the same dir");
    let (code, s) = cli(&endpoints2, &["status", "orders"]);
    assert_eq!(code, 0, "{s}");
    assert_eq!(s["holder"]["lease_id"].as_u64(), Some(lease));
    assert_eq!(s["holder"]["fencing_token"].as_u64(), Some(token));
    let (code, g2) = cli(&endpoints2, &["acquire", "payments", "--ttl", "10s"]);
    assert_eq!(code, 0, "{g2}");
    assert!(g2["fencing_token"].as_u64().expect("token") > token);
    stop_dev(child);
}
