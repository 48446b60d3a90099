//! `warden dev`, the README's first command: it starts a local three-node
//! cluster, secure by default, serves locks through it to a client that
//! pastes the two printed export lines (and refuses one without a
//! certificate), stops on SIGINT, and comes back with its state and its
//! certificates when run again on the same directory (S2, S3 through the
//! user's eyes). `--insecure` keeps the plaintext cluster. Real processes;
//! ports picked from :0 by `warden dev` itself.

use std::process::Command;
use std::time::Duration;

use crate::dev_process::DevProcess;

/// `warden` with none of the caller's `WARDEN_*` variables.
fn warden() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_warden"));
    for name in crate::harness::CLEARED_ENV {
        cmd.env_remove(name);
    }
    cmd
}

type Dev = DevProcess;

/// The `XDG_CONFIG_HOME` of a test's `warden dev` on `dir` (beside it):
/// where its client profile goes, never the real home's.
fn config_home(dir: &std::path::Path) -> std::path::PathBuf {
    dir.parent().expect("dev dir has a parent").join("config")
}

/// Starts `warden dev` on `dir` with `flags`; returns once it printed
/// `ready` (deadline 60 s).
fn start_dev(dir: &std::path::Path, flags: &[&str]) -> Dev {
    let mut cmd = warden();
    cmd.args(["dev", "--data-dir"])
        .arg(dir)
        .args(flags)
        .env("XDG_CONFIG_HOME", config_home(dir));
    DevProcess::start(cmd, Duration::from_secs(60))
}

fn stop_dev(mut dev: Dev) {
    let status = dev.interrupt(Duration::from_secs(30));
    assert!(
        status.is_some_and(|s| s.success()),
        "warden dev did not stop cleanly on SIGINT: {status:?}"
    );
}

/// The CLI as a user runs it after pasting `dev`'s export lines (plus
/// `extra` flags), with `--output json`: (exit code, stdout JSON, stderr).
fn cli(dev: &Dev, extra: &[&str], args: &[&str]) -> (i32, serde_json::Value, String) {
    let out = warden()
        .envs(dev.exports.iter().map(|(n, v)| (n.as_str(), v.as_str())))
        .args(args)
        .args(extra)
        .args(["--output", "json"])
        .output()
        .expect("cli");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let v = serde_json::from_str(stdout.trim()).unwrap_or(serde_json::Value::Null);
    (
        out.status.code().unwrap_or(-1),
        v,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// S2, S3 and secure by default: `warden dev` prints `export
/// WARDEN_CERTS_DIR=DIR/certs` next to the endpoints line (its CA key
/// outside that dir); with both exports the CLI is served as root, and a
/// client without a certificate is refused. Locks survive the cluster's
/// restart, which reuses ports and certificates, and the next token is
/// larger.
#[test]
fn dev_cluster_serves_and_comes_back_with_its_state() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("dev");
    let dev = start_dev(&dir, &[]);
    let names: Vec<&str> = dev.exports.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["WARDEN_ENDPOINTS", "WARDEN_CERTS_DIR"]);
    let url = dev.dashboard.clone().expect("a dashboard line");
    assert!(
        url.starts_with("https://127.0.0.1:") && url.ends_with("/ui"),
        "{url}"
    );
    let certs_dir = std::path::PathBuf::from(dev.export("WARDEN_CERTS_DIR").expect("certs"));
    assert_eq!(certs_dir, dir.canonicalize().expect("dir").join("certs"));
    assert!(certs_dir.join("client.root.crt").exists());
    assert!(
        !certs_dir.join("ca.key").exists(),
        "the CA key is not in the certs dir"
    );
    let root_cert = std::fs::read(certs_dir.join("client.root.crt")).expect("root cert");

    let (code, g, err) = cli(&dev, &[], &["acquire", "orders", "--ttl", "1h"]);
    assert_eq!(code, 0, "{g} {err}");
    let lease = g["lease_id"].as_u64().expect("lease");
    let token = g["fencing_token"].as_u64().expect("token");

    // Another shell, nothing pasted: the client profile `warden dev` wrote
    // (under XDG_CONFIG_HOME) names the endpoints and the certs dir.
    let profile = config_home(&dir).join("warden/profile.toml");
    let text = std::fs::read_to_string(&profile).expect("warden dev wrote the client profile");
    assert!(text.contains("written_by = \"warden dev\""), "{text}");
    let out = warden()
        .env("XDG_CONFIG_HOME", config_home(&dir))
        .args(["status", "orders", "--output", "json"])
        .output()
        .expect("cli");
    let s: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
    assert_eq!(
        (out.status.code(), s["holder"]["lease_id"].as_u64()),
        (Some(0), Some(lease)),
        "{s} {}",
        String::from_utf8_lossy(&out.stderr)
    );

    // A newcomer's client that passes `--insecure` to a secure cluster gets
    // no answer ...
    let endpoints = dev
        .export("WARDEN_ENDPOINTS")
        .expect("endpoints")
        .to_string();
    let out = warden()
        .args(["acquire", "orders-2", "--ttl", "10s", "--insecure"])
        .args(["--endpoints", &endpoints])
        .output()
        .expect("cli");
    assert_eq!(out.status.code(), Some(1));
    // ... and is told why: the port speaks TLS (probed once per endpoint;
    // the call fails at once, not after the CLI's deadline).
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("the port speaks TLS") && err.contains("--certs-dir"),
        "{err}"
    );
    // Over TLS without a client certificate: Unauthenticated.
    let anonymous = warden_tls::ClientTls::anonymous(&certs_dir.join("ca.crt")).expect("ca.crt");
    let refused = tokio::runtime::Runtime::new()
        .expect("runtime")
        .block_on(async {
            let client = warden_client::Client::connect(
                endpoints.split(',').map(str::to_owned).collect(),
                warden_client::ClientOptions {
                    connector: Some(std::sync::Arc::new(anonymous)),
                    ..warden_client::ClientOptions::default()
                },
            )
            .await
            .expect("client");
            client
                .acquire(
                    "orders-2",
                    warden_client::AcquireOptions::with_ttl(Duration::from_secs(10)),
                )
                .await
        });
    assert!(
        matches!(
            refused,
            Err(warden_client::ClientError::Unauthenticated { .. })
        ),
        "{refused:?}"
    );
    let (code, s, _) = cli(&dev, &[], &["status", "orders-2"]);
    assert_eq!(code, 0);
    assert!(s["holder"].is_null(), "{s}");
    stop_dev(dev);

    let dev = start_dev(&dir, &[]);
    assert_eq!(
        dev.export("WARDEN_ENDPOINTS"),
        Some(endpoints.as_str()),
        "same ports on the same dir"
    );
    assert_eq!(
        std::fs::read(certs_dir.join("client.root.crt")).expect("root cert"),
        root_cert,
        "the same certificates on the same dir"
    );
    let (code, s, err) = cli(&dev, &[], &["status", "orders"]);
    assert_eq!(code, 0, "{s} {err}");
    assert_eq!(s["holder"]["lease_id"].as_u64(), Some(lease));
    assert_eq!(s["holder"]["fencing_token"].as_u64(), Some(token));
    let (code, g2, err) = cli(&dev, &[], &["acquire", "payments", "--ttl", "10s"]);
    assert_eq!(code, 0, "{g2} {err}");
    assert!(g2["fencing_token"].as_u64().expect("token") > token);
    stop_dev(dev);
}

/// `warden dev --insecure` keeps the plaintext cluster: no certificates are
/// minted, it prints `export WARDEN_INSECURE=true`, and the CLI is served
/// with that export; the dashboard line names the leader's admin listener
/// over plain HTTP, which lists the lock.
#[test]
fn dev_insecure_prints_the_insecure_export_and_serves() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("dev");
    let dev = start_dev(&dir, &["--insecure"]);
    let names: Vec<&str> = dev.exports.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["WARDEN_ENDPOINTS", "WARDEN_INSECURE"]);
    assert_eq!(dev.export("WARDEN_INSECURE"), Some("true"));
    assert!(!dir.join("certs").exists() && !dir.join("ca.key").exists());
    let (code, g, err) = cli(&dev, &[], &["acquire", "orders", "--ttl", "10s"]);
    assert_eq!(code, 0, "{g} {err}");
    assert!(g["fencing_token"].as_u64().is_some(), "{g}");
    // The leader's dashboard, plain HTTP on an insecure cluster, shows the lock.
    let url = dev.dashboard.clone().expect("a dashboard line");
    let admin = url
        .strip_prefix("http://")
        .and_then(|a| a.strip_suffix("/ui"))
        .unwrap_or_else(|| panic!("{url}"))
        .to_string();
    let reply = tokio::runtime::Runtime::new()
        .expect("runtime")
        .block_on(warden_fence::http::client::request(
            &admin,
            "GET",
            "/ui/api/locks",
            &[],
            b"",
            Duration::from_secs(5),
        ))
        .expect("GET /ui/api/locks");
    assert_eq!(reply.status, 200, "{}", reply.body);
    assert_eq!(
        reply.json()["locks"][0]["resource"],
        "orders",
        "{}",
        reply.body
    );
    stop_dev(dev);
}
