//! `chubby_cell` on the anchors: etcd (one lease per session, each kept
//! alive on its own keep-alive stream, the streams spread over a few gRPC
//! connections: etcd-client opens one stream per lease) and ZooKeeper (one
//! session per client connection, pinged by the client library; the
//! connections spread over the three servers, which listen on 127.0.0.1
//! only). Each ramps up until it holds `n` or
//! fails; the result says how far it got.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Result;
use futures::StreamExt;
use serde_json::{json, Value};

use crate::backend::Target;
use crate::cluster::{proc_usage, Cluster};
use crate::scale::{cores, histogram, ms_q, record, Sizes};

/// Session TTL and keep-alive interval of `chubby_cell`.
pub const TTL: Duration = Duration::from_secs(12);
pub const EVERY: Duration = Duration::from_secs(4);

/// The probe: acquire + release of fresh resources through the backend's
/// driver (backend.rs), until `stop`.
async fn probe(
    target: Target,
    stop: Arc<std::sync::atomic::AtomicBool>,
) -> (hdrhistogram::Histogram<u64>, u64) {
    let mut h = histogram();
    let mut failed = 0;
    // Bounded: a ZooKeeper connect under 20,000 sessions once never
    // returned, and the row with it.
    let Ok(Ok(mut c)) = tokio::time::timeout(Duration::from_secs(10), target.connect()).await
    else {
        return (h, 1);
    };
    let tag: u32 = rand::random();
    let mut i = 0;
    while !stop.load(Ordering::Relaxed) {
        i += 1;
        let t = Instant::now();
        match tokio::time::timeout(
            Duration::from_secs(10),
            c.cycle(&format!("probe-{tag:x}-{i}")),
        )
        .await
        {
            Ok(Ok(())) => record(&mut h, t.elapsed()),
            _ => failed += 1,
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    (h, failed)
}

/// Holds `n` etcd leases for the hold time; the row of `chubby_cell`.
pub async fn etcd(cluster: &Cluster, s: &Sizes) -> Result<Value> {
    let endpoints = cluster.endpoints();
    let options = etcd_client::ConnectOptions::new().with_timeout(Duration::from_secs(5));
    let mut conns = Vec::new();
    for _ in 0..8 {
        conns.push(etcd_client::Client::connect(&endpoints, Some(options.clone())).await?);
    }
    let lost = Arc::new(AtomicU64::new(0));
    let granted = Arc::new(AtomicU64::new(0));
    let ramp_started = Instant::now();
    let mut first_error = None;
    // Each lease is kept alive from its grant on (64 grants in flight).
    let results: Vec<Result<tokio::task::JoinHandle<()>, etcd_client::Error>> =
        futures::stream::iter(0..s.sessions as usize)
            .map(|i| {
                let mut c = conns[i % conns.len()].clone();
                let lost = lost.clone();
                async move {
                    let id = c.lease_grant(TTL.as_secs() as i64, None).await?.id();
                    let (mut keeper, mut stream) = c.lease_keep_alive(id).await?;
                    Ok(tokio::spawn(async move {
                        loop {
                            tokio::time::sleep(EVERY).await;
                            let ok = keeper.keep_alive().await.is_ok()
                                && matches!(stream.message().await, Ok(Some(r)) if r.ttl() > 0);
                            if !ok {
                                lost.fetch_add(1, Ordering::Relaxed);
                                return;
                            }
                        }
                    }))
                }
            })
            .buffer_unordered(64)
            .collect()
            .await;
    let mut tasks = Vec::new();
    for r in results {
        match r {
            Ok(t) => {
                granted.fetch_add(1, Ordering::Relaxed);
                tasks.push(t);
            }
            Err(e) => {
                first_error.get_or_insert(format!("lease grant or keep-alive: {e}"));
            }
        }
    }
    let ramp_s = ramp_started.elapsed().as_secs_f64();
    let held = granted.load(Ordering::Relaxed);
    progress(s, "hold", held, ramp_started);
    let row = hold(cluster, s, &lost, held, "etcd").await;
    progress(s, "closing", held, ramp_started);
    for t in tasks {
        t.abort();
    }
    Ok(with(row, ramp_s, first_error))
}

/// Records how far an anchor's row got (`phase`: ramp, hold or closing;
/// the sessions it holds; seconds since the ramp began) where the parent
/// reads it if it must kill the row's process: a row that hangs still says
/// how far it got. Best effort: a failed write is ignored.
pub fn progress(s: &Sizes, phase: &str, sessions: u64, since: Instant) {
    if let Some(path) = &s.progress {
        let v = json!({
            "phase": phase,
            "sessions": sessions,
            "s_since_ramp_began": (since.elapsed().as_secs_f64() * 10.0).round() / 10.0,
        });
        let _ = std::fs::write(path, v.to_string());
    }
}

/// File descriptors the ZooKeeper ramp leaves free below the open-file limit.
const FD_MARGIN: u64 = 512;

/// This process's soft open-file limit (`Max open files` in
/// /proc/self/limits), None if it cannot be read or is unlimited.
fn open_file_limit() -> Option<u64> {
    let limits = std::fs::read_to_string("/proc/self/limits").ok()?;
    let line = limits.lines().find(|l| l.starts_with("Max open files"))?;
    line.split_whitespace().nth(3)?.parse().ok()
}

/// Longest the ZooKeeper ramp runs before it holds what it has.
pub const ZK_RAMP_LIMIT: Duration = Duration::from_secs(300);

/// Holds `n` ZooKeeper sessions for the hold time; the row of `chubby_cell`.
///
/// Each session is a TCP connection from 127.0.0.1 to one server's client
/// port on 127.0.0.1 (the servers listen there only), round-robin over the
/// three: at most three times the ephemeral port range's size
/// (`net.ipv4.ip_local_port_range`; `bench/run.sh --scale` widens it to
/// 1024–65535 as root). Past it connects fail, and the row says how far
/// it got (`stopped_by`).
pub async fn zookeeper(cluster: &Cluster, s: &Sizes) -> Result<Value> {
    let ports: Vec<u16> = cluster
        .endpoints()
        .iter()
        .filter_map(|e| e.rsplit(':').next()?.parse().ok())
        .collect();
    let ramp_started = Instant::now();
    let mut clients = Vec::new();
    let mut first_error = None;
    // In chunks, stopping at a chunk with failures: far enough to say how
    // far it got, without spending the run on refused connects.
    let chunk = 256u64;
    let mut next = 0u64;
    // The ramp stops at ZK_RAMP_LIMIT (quick: a quarter of it) and holds
    // what it has: it reached about 20,000 sessions in 12 minutes, with the
    // Rust client at 65 % of a core, and the row says how far it got.
    let ramp_limit = if s.quick {
        ZK_RAMP_LIMIT / 4
    } else {
        ZK_RAMP_LIMIT
    };
    // Each session is a socket here: past the open-file limit a connect
    // fails, and the client library retries it at once without yielding,
    // so the ramp's own timeouts never fire and the row hung (on this VM the
    // hard limit is 20,000 and root may not raise it). The ramp stops short
    // of the limit instead, and says so.
    let fd_limit = open_file_limit();
    let most = fd_limit.map_or(s.sessions, |l| s.sessions.min(l.saturating_sub(FD_MARGIN)));
    while next < s.sessions {
        if next + chunk > most && most < s.sessions {
            first_error.get_or_insert(format!(
                "stopped at {} sessions: the load generator's open-file limit is {} \
                 (ulimit -n; each ZooKeeper session is a socket here, and {FD_MARGIN} are \
                 kept for the probe and the rest)",
                clients.len(),
                fd_limit.unwrap_or(0),
            ));
            break;
        }
        if ramp_started.elapsed() >= ramp_limit {
            first_error.get_or_insert(format!(
                "ramp time limit ({} s) reached at {} sessions",
                ramp_limit.as_secs(),
                clients.len()
            ));
            break;
        }
        let got: Vec<_> = futures::stream::iter(next..(next + chunk).min(s.sessions))
            .map(|i| {
                let endpoint = format!("127.0.0.1:{}", ports[i as usize % ports.len()]);
                async move {
                    // The library pings every 3/8 of its connection timeout:
                    // 10,667 ms gives one ping each 4 s.
                    tokio::time::timeout(
                        Duration::from_secs(20),
                        zookeeper_client::Client::connector()
                            .with_session_timeout(TTL)
                            .with_connection_timeout(Duration::from_millis(10_667))
                            .connect(&endpoint),
                    )
                    .await
                }
            })
            .buffer_unordered(64)
            .collect()
            .await;
        next += chunk;
        let mut failed = false;
        for r in got {
            match r {
                Ok(Ok(c)) => clients.push(c),
                Ok(Err(e)) => {
                    failed = true;
                    first_error.get_or_insert(format!("connect: {e}"));
                }
                Err(_) => {
                    failed = true;
                    first_error.get_or_insert("connect: timed out after 20 s".to_owned());
                }
            }
        }
        progress(s, "ramp", clients.len() as u64, ramp_started);
        if failed {
            break;
        }
    }
    let ramp_s = ramp_started.elapsed().as_secs_f64();
    let lost = Arc::new(AtomicU64::new(0));
    let n = clients.len() as u64;
    progress(s, "hold", n, ramp_started);
    let row = hold(cluster, s, &lost, n, "zookeeper").await;
    progress(s, "closing", n, ramp_started);
    let dead = clients
        .iter()
        .filter(|c| {
            !matches!(
                c.state(),
                zookeeper_client::SessionState::SyncConnected
                    | zookeeper_client::SessionState::Disconnected
            )
        })
        .count();
    drop(clients);
    let mut row = with(row, ramp_s, first_error);
    row["sessions_lost"] = json!(dead);
    row["sessions_per_s_in_ramp"] = json!((n as f64 / ramp_s.max(0.001)).round());
    Ok(row)
}

/// The hold: `hold_secs` with the probe running, the leader's CPU measured.
async fn hold(
    cluster: &Cluster,
    s: &Sizes,
    lost: &AtomicU64,
    held: u64,
    backend: &'static str,
) -> Value {
    let leader = cluster.leader().await;
    let pid = leader.and_then(|l| cluster.pids()[l]);
    let before = pid.map(proc_usage).unwrap_or((0, 0));
    let t0 = Instant::now();
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let target = Target {
        backend,
        endpoints: cluster.endpoints(),
        warden_tls: None,
    };
    let probe = tokio::spawn(probe(target, stop.clone()));
    tokio::time::sleep(Duration::from_secs(s.hold_secs)).await;
    stop.store(true, Ordering::Relaxed);
    let after = pid.map(proc_usage).unwrap_or((0, 0));
    let wall = t0.elapsed();
    let (h, probe_failed) = match tokio::time::timeout(Duration::from_secs(30), probe).await {
        Ok(Ok(r)) => r,
        _ => (histogram(), 1),
    };
    json!({
        "sessions": held,
        "sessions_lost": lost.load(Ordering::Relaxed),
        "leader_cpu_cores": cores(before.0, after.0, wall),
        "leader_rss_mib": (after.1 as f64 / 1024.0).round(),
        "probe_p99_ms": ms_q(&h, 0.99),
        "probe_cycles": h.len(),
        "probe_failed": probe_failed,
    })
}

fn with(mut row: Value, ramp_s: f64, error: Option<String>) -> Value {
    row["ramp_s"] = json!((ramp_s * 10.0).round() / 10.0);
    if let Some(e) = error {
        row["stopped_by"] = json!(e);
    }
    row
}
