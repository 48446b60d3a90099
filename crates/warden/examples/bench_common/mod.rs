//! Shared by the benchmark examples: a three-node cluster of `warden server`
//! processes started from the binary next to the examples, on loopback ports
//! from :0, and /proc readings.

#![allow(dead_code)]

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use warden_proto::v1 as pb;
use warden_proto::v1::lock_client::LockClient;

pub fn arg(name: &str, default: u64) -> u64 {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// (utime + stime) in clock ticks, and VmRSS in KiB.
pub fn proc_usage(pid: u32) -> (u64, u64) {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let after = stat.rsplit(')').next().unwrap_or("");
    let f: Vec<&str> = after.split_whitespace().collect();
    let ticks = f.get(11).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0)
        + f.get(12).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let rss = status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    (ticks, rss)
}

pub struct Cluster {
    pub children: Vec<Child>,
    pub addrs: Vec<String>,
    _dir: tempfile::TempDir,
}

impl Drop for Cluster {
    fn drop(&mut self) {
        for c in &mut self.children {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

pub fn start_cluster() -> Cluster {
    let exe = std::env::current_exe().expect("exe");
    let warden: PathBuf = exe
        .parent()
        .and_then(|p| p.parent())
        .map(|p| p.join("warden"))
        .expect("warden binary next to examples/");
    let dir = tempfile::tempdir().expect("tempdir");
    let addrs: Vec<String> = (0..3)
        .map(|_| format!("127.0.0.1:{}", free_port()))
        .collect();
    let peers = addrs
        .iter()
        .enumerate()
        .map(|(i, a)| format!("{}={a}", i + 1))
        .collect::<Vec<_>>()
        .join(",");
    let children = addrs
        .iter()
        .enumerate()
        .map(|(i, a)| {
            Command::new(&warden)
                .args([
                    "server",
                    "--id",
                    &(i + 1).to_string(),
                    "--listen",
                    a,
                    "--peers",
                    &peers,
                ])
                .arg("--data-dir")
                .arg(dir.path().join(format!("n{}", i + 1)))
                .args(
                    std::env::var("WARDEN_SERVER_ARGS")
                        .unwrap_or_default()
                        .split_whitespace()
                        .map(str::to_owned)
                        .collect::<Vec<_>>(),
                )
                .env("RUST_LOG", "error")
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("spawn warden server")
        })
        .collect();
    Cluster {
        children,
        addrs,
        _dir: dir,
    }
}

pub async fn leader(addrs: &[String]) -> String {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        for a in addrs {
            if let Ok(mut c) = LockClient::connect(format!("http://{a}")).await {
                if let Ok(s) = c.cluster_status(pb::ClusterStatusRequest {}).await {
                    let s = s.into_inner();
                    if s.leader_id == s.node_id {
                        return a.clone();
                    }
                }
            }
        }
        assert!(Instant::now() < deadline, "no leader");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
