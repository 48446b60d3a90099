//! `loadgen scale`: Warden at the sizes of a Chubby cell, each scenario on
//! a fresh cluster, writing `results/scale.json` (then `scale.md` and
//! `scale.png`, report.rs).
//!
//! - `chubby_cell`: N sessions (TTL 12 s, a keep-alive each 4 s) held for
//!   `--hold-secs` while a probe cycles acquire + release; Warden, etcd,
//!   ZooKeeper (anchors.rs).
//! - `million_locks`: fill to `--locks` held locks on `--sessions`
//!   sessions; memory, snapshot, follower catch-up, full restart, failover
//!   (and failover on the empty cluster first).
//! - `mass_expiry`: N holders' sessions stop renewing at once, each lock
//!   with one waiter; time until every waiter is granted, against the bound.
//! - `curve`: the `million_locks` measurements at three sizes.
//! - `wan`: peer traffic through a delaying proxy (proxy.rs) at 25/50/100
//!   ms one way.
//!
//! The Warden side runs on the raw API (warden.rs) as one load principal
//! (`scale`) whose quota the run raises.

mod anchors;
mod proxy;
pub mod report;
mod warden;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use hdrhistogram::Histogram;
use serde_json::{json, Map, Value};
use tokio::sync::oneshot;

use crate::cluster::{free_port, proc_usage, Cluster, StartOptions, System};
use warden::{Calls, Ids, Keeper, Probe, Wt};

#[derive(clap::Args)]
pub struct ScaleArgs {
    /// Small sizes for every scenario (2,000 sessions, 20,000 locks, 20 s
    /// hold; under ~5 minutes): validates the driver, not figures of record.
    #[arg(long, alias = "scale-quick")]
    quick: bool,
    /// Sessions of chubby_cell, million_locks and mass_expiry [default:
    /// 100000; quick 2000].
    #[arg(long)]
    sessions: Option<u64>,
    /// Held locks of million_locks (sessions × locks each) [default:
    /// 1000000; quick 20000].
    #[arg(long)]
    locks: Option<u64>,
    /// How long chubby_cell holds its sessions, in seconds [default: 180;
    /// quick 20].
    #[arg(long)]
    hold_secs: Option<u64>,
    /// One-way peer latencies of wan, in ms, comma-separated (each 1..=1000)
    /// [default: 25,50,100].
    #[arg(long, value_delimiter = ',', default_value = "25,50,100",
          value_parser = clap::value_parser!(u64).range(1..=1000))]
    wan_ms: Vec<u64>,
    /// Scenarios, comma-separated.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "chubby_cell,million_locks,mass_expiry,curve,wan"
    )]
    scenarios: Vec<String>,
    /// Systems of chubby_cell besides Warden, comma-separated (etcd,
    /// zookeeper), or `none` for Warden alone.
    #[arg(long, value_delimiter = ',', default_value = "etcd,zookeeper")]
    anchors: Vec<String>,
    /// The `warden` binary (release build of the main workspace).
    #[arg(long, default_value = "../target/release/warden")]
    warden_bin: PathBuf,
    /// Where clusters keep their data (the real disk: fsync matters).
    #[arg(long, default_value = "/var/tmp")]
    work_dir: PathBuf,
    #[arg(long, default_value = "results/scale.json")]
    out: PathBuf,
    /// Free text recorded as machine.load_note.
    #[arg(long, default_value = "")]
    load_note: String,
}

/// `loadgen scale-anchor`: one anchor row of chubby_cell, run by the scale
/// run as a child process of its own (see [`anchor_row`]).
#[derive(clap::Args)]
pub struct AnchorArgs {
    /// etcd or zookeeper.
    #[arg(long)]
    system: String,
    #[arg(long)]
    sessions: u64,
    #[arg(long)]
    hold_secs: u64,
    #[arg(long)]
    quick: bool,
    #[arg(long)]
    warden_bin: PathBuf,
    #[arg(long)]
    work_dir: PathBuf,
    /// Where the row is written (JSON).
    #[arg(long)]
    out: PathBuf,
}

/// The child's side of [`anchor_row`]: start the system, run its row, write
/// it to `--out`; its cluster is stopped when this returns.
pub async fn anchor_main(args: AnchorArgs) -> Result<()> {
    let s = Sizes {
        sessions: args.sessions,
        locks: 0,
        hold_secs: args.hold_secs,
        quick: args.quick,
        curve: Vec::new(),
        wan_ms: Vec::new(),
        wan_window_s: 0,
        progress: Some(args.out.with_extension("progress.json")),
    };
    let row = match args.system.as_str() {
        "etcd" => {
            match Cluster::start(
                System::Etcd { tuned: true },
                &args.work_dir,
                &args.warden_bin,
            )
            .await
            {
                Ok(c) => anchors::etcd(&c, &s).await.unwrap_or_else(err),
                Err(e) => err(e),
            }
        }
        "zookeeper" => {
            let opts = StartOptions {
                zk_heap: Some("2g".into()),
                ..Default::default()
            };
            match Cluster::start_with(System::Zookeeper, &args.work_dir, &args.warden_bin, &opts)
                .await
            {
                Ok(c) => anchors::zookeeper(&c, &s).await.unwrap_or_else(err),
                Err(e) => err(e),
            }
        }
        other => err(anyhow::anyhow!("unknown anchor {other}")),
    };
    std::fs::write(&args.out, serde_json::to_string(&row)?)?;
    Ok(())
}

/// The sizes of one run.
#[derive(Debug, Clone)]
pub struct Sizes {
    pub sessions: u64,
    pub locks: u64,
    pub hold_secs: u64,
    pub quick: bool,
    /// The curve's points (held locks).
    pub curve: Vec<u64>,
    /// wan: one-way delays (ms) and the seconds of its windows.
    pub wan_ms: Vec<u64>,
    pub wan_window_s: u64,
    /// Where an anchor's child process writes how far it got (the parent
    /// reads it if it has to kill the child): [`anchors::progress`].
    pub progress: Option<PathBuf>,
}

pub fn histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 600_000_000, 3).expect("histogram bounds")
}

pub fn record(h: &mut Histogram<u64>, d: Duration) {
    let _ = h.record((d.as_micros() as u64).clamp(1, 600_000_000));
}

pub fn ms(d: Duration) -> f64 {
    (d.as_secs_f64() * 1e5).round() / 100.0
}

/// The `q` quantile in ms, None when empty.
pub fn ms_q(h: &Histogram<u64>, q: f64) -> Option<f64> {
    (!h.is_empty()).then(|| (h.value_at_quantile(q) as f64 / 10.0).round() / 100.0)
}

/// CPU cores used between two tick readings over `wall`.
pub fn cores(before: u64, after: u64, wall: Duration) -> f64 {
    let c = after.saturating_sub(before) as f64 / 100.0 / wall.as_secs_f64().max(0.001);
    (c * 1000.0).round() / 1000.0
}

fn mib(kib: u64) -> f64 {
    (kib as f64 / 1024.0 * 10.0).round() / 10.0
}

pub async fn run(args: ScaleArgs) -> Result<()> {
    let q = args.quick;
    let sessions = args.sessions.unwrap_or(if q { 2_000 } else { 100_000 });
    let locks = args.locks.unwrap_or(if q { 20_000 } else { 1_000_000 });
    let s = Sizes {
        sessions,
        locks,
        hold_secs: args.hold_secs.unwrap_or(if q { 20 } else { 180 }),
        quick: q,
        curve: if q {
            vec![2_000, 10_000, locks]
        } else {
            vec![10_000, 100_000, locks.max(1_000_000)]
        },
        wan_ms: args.wan_ms.clone(),
        wan_window_s: if q { 3 } else { 10 },
        progress: None,
    };
    let warden_bin = std::fs::canonicalize(&args.warden_bin)
        .with_context(|| format!("--warden-bin {}", args.warden_bin.display()))?;
    std::fs::create_dir_all(&args.work_dir)?;
    let work = tempfile::Builder::new()
        .prefix("warden-scale-")
        .tempdir_in(&args.work_dir)?;
    let started = Instant::now();
    let mut machine = crate::machine_common(work.path(), &args.load_note);
    machine.insert("mode".into(), json!(if q { "quick" } else { "full" }));
    machine.insert(
        "params".into(),
        json!({
            "sessions": s.sessions, "locks": s.locks, "hold_secs": s.hold_secs,
            "curve_locks": s.curve, "wan_one_way_ms": s.wan_ms,
            "session_ttl_s": anchors::TTL.as_secs(), "keep_alive_every_s": anchors::EVERY.as_secs(),
        }),
    );
    let timing_preset = supports_timing_preset(&warden_bin);
    machine.insert("warden_timing_wan_preset".into(), json!(timing_preset));
    machine.insert(
        "load_principal".into(),
        json!({
            "user": warden::LOAD_USER,
            "role": warden::LOAD_ROLE,
            "permission": "lock on \"\" (everything)",
            "quota": {
                "leases": warden::LOAD_QUOTA.leases, "locks": warden::LOAD_QUOTA.locks,
                "waiters": warden::LOAD_QUOTA.waiters, "clients": warden::LOAD_QUOTA.clients,
            },
            "cluster_limits": {"max_leases": warden::LOAD_LIMITS.0, "max_clients": warden::LOAD_LIMITS.1},
        }),
    );
    let mut scenarios = Map::new();
    let ctx = Ctx {
        work: work.path().to_path_buf(),
        bin: warden_bin,
    };
    let mut million: Option<Value> = None;
    for name in &args.scenarios {
        eprintln!("== {name}");
        let t = Instant::now();
        let limit = Duration::from_secs(if q { 600 } else { 7_200 });
        let result = match name.as_str() {
            "chubby_cell" => {
                tokio::time::timeout(limit, chubby_cell(&ctx, &s, &args.anchors)).await
            }
            "million_locks" => {
                tokio::time::timeout(limit, locks_point(&ctx, s.locks, s.sessions, true)).await
            }
            "mass_expiry" => tokio::time::timeout(limit, mass_expiry(&ctx, &s)).await,
            "curve" => tokio::time::timeout(limit, curve(&ctx, &s, million.as_ref())).await,
            "wan" => tokio::time::timeout(limit, wan(&ctx, &s, timing_preset)).await,
            other => anyhow::bail!("unknown scenario {other}"),
        };
        let mut v = match result {
            Ok(Ok(v)) => v,
            Ok(Err(e)) => json!({ "error": format!("{e:#}") }),
            Err(_) => json!({ "error": format!("timed out after {limit:?}") }),
        };
        if let Some(o) = v.as_object_mut() {
            o.insert("wall_s".into(), json!(t.elapsed().as_secs()));
        }
        if name == "million_locks" {
            million = Some(v.clone());
        }
        eprintln!("   {name}: {v}");
        scenarios.insert(name.clone(), v);
        write(&args.out, &machine, &scenarios)?;
    }
    machine.insert("wall_s".into(), json!(started.elapsed().as_secs()));
    machine.insert("loadavg_end".into(), json!(crate::loadavg()));
    write(&args.out, &machine, &scenarios)?;
    let (md, png) = (
        args.out.with_extension("md"),
        args.out.with_extension("png"),
    );
    report::write(&args.out, &md, &png)?;
    eprintln!(
        "wrote {}, {}, {} in {:.0} s",
        args.out.display(),
        md.display(),
        png.display(),
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

fn write(out: &Path, machine: &Map<String, Value>, scenarios: &Map<String, Value>) -> Result<()> {
    if let Some(dir) = out.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let doc = json!({ "machine": machine, "scenarios": scenarios });
    std::fs::write(out, serde_json::to_string_pretty(&doc)? + "\n")?;
    Ok(())
}

/// Whether this `warden server` has the `--timing wan` preset.
fn supports_timing_preset(bin: &Path) -> bool {
    std::process::Command::new(bin)
        .args(["server", "--help"])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).contains("--timing"))
        .unwrap_or(false)
}

struct Ctx {
    work: PathBuf,
    bin: PathBuf,
}

impl Ctx {
    async fn warden(&self, opts: &StartOptions) -> Result<(Cluster, Wt)> {
        let cluster =
            Cluster::start_with(System::Warden { tls: true }, &self.work, &self.bin, opts).await?;
        let wt = warden::setup_principal(&cluster, &self.bin).await?;
        Ok((cluster, wt))
    }
}

fn err(e: anyhow::Error) -> Value {
    json!({ "error": format!("{e:#}") })
}

// ---------------------------------------------------------------- chubby_cell

async fn chubby_cell(ctx: &Ctx, s: &Sizes, anchors_: &[String]) -> Result<Value> {
    let mut row = match chubby_warden(ctx, s).await {
        Ok(v) => v,
        Err(e) => err(e),
    };
    for a in anchors_.iter().filter(|a| a.as_str() != "none") {
        eprintln!("   chubby_cell: {a}");
        row[a.as_str()] = anchor_row(ctx, s, a).await.unwrap_or_else(err);
    }
    Ok(row)
}

/// One anchor's row, run by `loadgen scale-anchor` in a child process of
/// its own process group (the anchor's servers are its children), killed
/// with the whole group past the ramp limit + the hold + 5 minutes. In
/// process, ZooKeeper's row under 100,000 sessions once hung past its own
/// timeout, and the rest of the scale run with it; a killed row says so.
async fn anchor_row(ctx: &Ctx, s: &Sizes, system: &str) -> Result<Value> {
    use std::os::unix::process::CommandExt;
    let out = ctx.work.join(format!("anchor-{system}.json"));
    let mut cmd = std::process::Command::new(std::env::current_exe()?);
    cmd.args(["scale-anchor", "--system", system])
        .args(["--sessions", &s.sessions.to_string()])
        .args(["--hold-secs", &s.hold_secs.to_string()])
        .arg("--warden-bin")
        .arg(&ctx.bin)
        .arg("--work-dir")
        .arg(&ctx.work)
        .arg("--out")
        .arg(&out)
        .process_group(0);
    if s.quick {
        cmd.arg("--quick");
    }
    let mut child = tokio::process::Command::from(cmd).spawn()?;
    let group = child.id().context("the anchor's child has no pid")?;
    let within = anchors::ZK_RAMP_LIMIT + Duration::from_secs(s.hold_secs + 300);
    let status = tokio::time::timeout(within, child.wait()).await;
    // The whole group, even after a clean exit: nothing of it outlives its row.
    let _ = std::process::Command::new("kill")
        .args(["-9", "--", &format!("-{group}")])
        .stderr(std::process::Stdio::null())
        .status();
    match status {
        Err(_) => {
            let _ = child.wait().await;
            let progress = std::fs::read_to_string(out.with_extension("progress.json"))
                .ok()
                .and_then(|t| serde_json::from_str::<Value>(&t).ok());
            Ok(json!({
                "error": format!("killed after {within:?} (the row did not end)"),
                "progress_when_killed": progress,
            }))
        }
        Ok(status) => {
            let status = status?;
            let text = std::fs::read_to_string(&out)
                .with_context(|| format!("the anchor's row ({status})"))?;
            Ok(serde_json::from_str(&text)?)
        }
    }
}

async fn chubby_warden(ctx: &Ctx, s: &Sizes) -> Result<Value> {
    let (cluster, wt) = ctx.warden(&StartOptions::default()).await?;
    let ids = Ids::new();
    let keeper = Keeper::start(&wt, 8, anchors::EVERY);
    let ramp = Instant::now();
    let (granted, failed) =
        warden::grant_leases(&wt, &ids, s.sessions, anchors::TTL, Some(&keeper)).await?;
    let ramp_s = ramp.elapsed().as_secs_f64();
    let leader = cluster.leader().await;
    let pid = leader.and_then(|l| cluster.pids()[l]);
    let before = pid.map(proc_usage).unwrap_or((0, 0));
    let acked_before = keeper.acked.load(std::sync::atomic::Ordering::Relaxed);
    let probe = Probe::start(&wt).await?;
    let t0 = Instant::now();
    tokio::time::sleep(Duration::from_secs(s.hold_secs)).await;
    let after = pid.map(proc_usage).unwrap_or((0, 0));
    let wall = t0.elapsed();
    let acked = keeper.acked.load(std::sync::atomic::Ordering::Relaxed) - acked_before;
    let (h, probe_failed, probe_slowest) = probe.finish().await;
    Ok(json!({
        "sessions": granted.len(),
        "sessions_lost": keeper.lost_count(),
        "leader_cpu_cores": cores(before.0, after.0, wall),
        "probe_p99_ms": ms_q(&h, 0.99),
        "probe_p50_ms": ms_q(&h, 0.5),
        "probe_max_ms": ms_q(&h, 1.0),
        "probe_slowest": probe_slowest,
        "probe_cycles": h.len(),
        "probe_failed": probe_failed,
        "grant_failed": failed,
        "ramp_s": (ramp_s * 10.0).round() / 10.0,
        "keep_alives_acked_per_s": (acked as f64 / wall.as_secs_f64()).round(),
        "keep_alive_streams": 8,
        "keep_alive_streams_reopened": keeper.reopened.load(std::sync::atomic::Ordering::Relaxed),
        "leader_rss_mib": mib(after.1),
    }))
}

// ---------------------------------------------------------------- locks

/// Kills the leader (-9) and times until an acquire + release of a fresh
/// resource succeeds; then restarts it and waits until it has caught up.
async fn failover(cluster: &mut Cluster, wt: &Wt) -> Result<Option<f64>> {
    let leader = cluster.leader().await.context("no leader")?;
    let t = Instant::now();
    cluster.kill9(leader)?;
    let ms = warden::until_served(wt, t, Duration::from_secs(60)).await;
    cluster.restart(leader)?;
    caught_up(cluster, wt, leader, Duration::from_secs(120)).await;
    Ok(ms)
}

/// Waits until node `i`'s own applied index reaches the leader's commit
/// index as it was when the wait began; the time, None past `limit`.
async fn caught_up(cluster: &Cluster, wt: &Wt, i: usize, limit: Duration) -> Option<f64> {
    let t = Instant::now();
    let leader = wt.leader().await.ok()?;
    let target = wt.applied(&leader).await?.2;
    let addr = cluster.endpoints()[i].clone();
    while t.elapsed() < limit {
        if let Some(applied) = wt.applied_of(&addr, i as u64 + 1).await {
            if applied >= target {
                return Some(ms(t.elapsed()));
            }
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    None
}

/// Acquire + release cycles of fresh resources per second: `clients`
/// clients (each its own connection), each cycling one at a time for
/// `window` once all have connected; resource names start with `tag`.
async fn parallel_cycles(wt: &Wt, clients: usize, window: Duration, tag: &str) -> f64 {
    // Every client connects (a TLS handshake each) before the window opens.
    let mut connected = Vec::new();
    for _ in 0..clients {
        if let Ok(client) = wt.client(warden::LOAD_USER).await {
            connected.push(client);
        }
    }
    let t = Instant::now();
    let mut tasks = Vec::new();
    for (c, client) in connected.into_iter().enumerate() {
        let tag = tag.to_owned();
        tasks.push(tokio::spawn(async move {
            let mut n = 0u64;
            while t.elapsed() < window {
                if warden::cycle(&client, &format!("{tag}-{c}-{n}"))
                    .await
                    .is_ok()
                {
                    n += 1;
                }
            }
            n
        }));
    }
    let mut cycles = 0;
    for task in tasks {
        cycles += task.await.unwrap_or(0);
    }
    (cycles as f64 / t.elapsed().as_secs_f64()).round()
}

/// Clients and seconds of the steady-state rate with the table full
/// (`cycles_per_s`, the curve's rate at each size).
const STEADY_CLIENTS: usize = 64;
const STEADY_WINDOW: Duration = Duration::from_secs(10);

/// Fill to `locks` held locks on `sessions` sessions (locks each rounded
/// up, at most 10,000 a lease) and measure; `full`: also failover on the
/// empty cluster first and follower catch-up (million_locks).
async fn locks_point(ctx: &Ctx, locks: u64, sessions: u64, full: bool) -> Result<Value> {
    let opts = StartOptions {
        admin_listen: true,
        ..Default::default()
    };
    let (mut cluster, wt) = ctx.warden(&opts).await?;
    let mut out = Map::new();
    if full {
        eprintln!("   failover on the empty cluster");
        out.insert(
            "failover_ms_empty".into(),
            json!(failover(&mut cluster, &wt).await?),
        );
    }
    let sessions = sessions.clamp(locks.div_ceil(10_000).max(1), locks.max(1));
    let each = locks.div_ceil(sessions);
    let sessions = locks.div_ceil(each);
    let ids = Ids::new();
    // Sessions outlive the restarts and failovers below: TTL 60 s, kept
    // alive each 10 s.
    let keeper = Keeper::start(&wt, 4, Duration::from_secs(10));
    let t = Instant::now();
    let (leases, _) =
        warden::grant_leases(&wt, &ids, sessions, Duration::from_secs(60), Some(&keeper)).await?;
    eprintln!("   {} sessions; filling {each} locks each", leases.len());
    let filled = warden::fill(&wt, &leases, each, "L", 2).await?;
    let (held, fill_failed, fill_h) = (filled.ok, filled.failed, &filled.latency);
    let fill_s = t.elapsed().as_secs_f64();
    eprintln!("   {held} locks held ({fill_failed} failed) in {fill_s:.0} s");
    out.insert("locks".into(), json!(held));
    out.insert("sessions".into(), json!(leases.len()));
    out.insert("locks_per_session".into(), json!(each));
    out.insert("fill_failed".into(), json!(fill_failed));
    out.insert("fill_errors".into(), json!(filled.errors));
    out.insert("fill_leader_changes".into(), json!(filled.leader_changes));
    out.insert("fill_s".into(), json!((fill_s * 10.0).round() / 10.0));
    out.insert(
        "fill_acquires_per_s".into(),
        json!((held as f64 / fill_s).round()),
    );
    out.insert("fill_acquire_p50_ms".into(), json!(ms_q(fill_h, 0.5)));
    // The rate along the fill, and its last tenth's against the rate from
    // 10,000 to 20,000 held locks (the bar: at least 0.8).
    let curve: Vec<Value> = filled
        .rate_curve
        .iter()
        .map(|(n, r)| json!({"locks": n, "acquires_per_s": r}))
        .collect();
    if let (Some(first), Some(last)) = (filled.rate_curve.first(), filled.rate_curve.last()) {
        if first.1 > 0.0 {
            out.insert(
                "fill_rate_last_vs_first".into(),
                // Three places: at two, 0.7987 read as the bar's 0.80.
                json!((last.1 / first.1 * 1000.0).round() / 1000.0),
            );
        }
    }
    out.insert("fill_rate_curve".into(), json!(curve));
    // Let the nodes settle (snapshots built after the fill) before reading RSS.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let rss: Vec<f64> = cluster
        .pids()
        .iter()
        .map(|p| p.map(|p| mib(proc_usage(p).1)).unwrap_or(0.0))
        .collect();
    out.insert("rss_mib_per_node".into(), json!(rss));
    let leader = cluster.leader().await.unwrap_or(0);
    out.insert(
        "rss_mib".into(),
        json!(rss.get(leader).copied().unwrap_or(0.0)),
    );
    match warden::save_snapshot(&wt).await {
        Ok((bytes, took)) => {
            out.insert("snapshot_bytes".into(), json!(bytes));
            out.insert("snapshot_ms".into(), json!(took));
        }
        Err(e) => {
            out.insert("snapshot_error".into(), json!(format!("{e:#}")));
        }
    }
    if let Some(Some(addr)) = cluster.admin_addrs().get(leader) {
        out.insert(
            "node_snapshot_metrics".into(),
            json!(warden::snapshot_metrics(&wt, addr)),
        );
    }
    // Uncontended acquire latency with the table full.
    let client = wt.client(warden::LOAD_USER).await?;
    let mut h = histogram();
    for i in 0..200 {
        let r = format!("a50-{i}");
        let t = Instant::now();
        if let Ok(warden_client::AcquireResult::Granted {
            lease_id,
            fencing_token,
            ..
        }) = client
            .acquire(
                r.as_str(),
                warden_client::AcquireOptions::with_ttl(Duration::from_secs(12)),
            )
            .await
        {
            record(&mut h, t.elapsed());
            let _ = client.release(lease_id, Some(r), Some(fencing_token)).await;
        }
    }
    out.insert("acquire_p50_ms".into(), json!(ms_q(&h, 0.5)));
    // The rate with the table full, in steady state: the curve compares it
    // across sizes (a fill's windows swing with where the snapshot builds
    // fall, and its first window lasts a fraction of a second).
    out.insert(
        "cycles_per_s".into(),
        json!(parallel_cycles(&wt, STEADY_CLIENTS, STEADY_WINDOW, "steady").await),
    );
    eprintln!("   failover with {held} locks");
    out.insert(
        "failover_ms".into(),
        json!(failover(&mut cluster, &wt).await?),
    );
    if full {
        // Catch-up: a follower is killed, 10 % more locks are written, it
        // is restarted: time from its restart until its own applied index
        // reaches the leader's commit index at that moment.
        let leader = cluster.leader().await.context("no leader")?;
        let f = (leader + 1) % 3;
        // The leader's view counts too: a follower's own status may not
        // name its applied index yet (`Wt::applied_of`).
        let before = wt
            .applied_of(&cluster.endpoints()[f], f as u64 + 1)
            .await
            .filter(|a| *a > 0);
        cluster.kill9(f)?;
        let more = (held / 10).max(1_000);
        let (extra, _) = warden::grant_leases(
            &wt,
            &ids,
            more.div_ceil(each),
            Duration::from_secs(60),
            Some(&keeper),
        )
        .await?;
        let written = warden::fill(&wt, &extra, each, "C", 2).await?.ok;
        let target = wt.applied(&wt.leader().await?).await.map(|a| a.2);
        let t = Instant::now();
        cluster.restart(f)?;
        let addr = cluster.endpoints()[f].clone();
        let mut took = None;
        while t.elapsed() < Duration::from_secs(600) {
            if let (Some(applied), Some(target)) =
                (wt.applied_of(&addr, f as u64 + 1).await, target)
            {
                if applied >= target {
                    took = Some(ms(t.elapsed()));
                    break;
                }
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        out.insert("catch_up_ms".into(), json!(took));
        out.insert(
            "catch_up".into(),
            json!({
                "how": "kill -9 a follower, write more locks, restart it: ms from its restart until its own applied index reaches the leader's commit index at that moment (a log this far behind is sent as a snapshot)",
                "locks_written_while_down": written,
                "entries_behind": target.zip(before).map(|(t, b)| t.saturating_sub(b)),
            }),
        );
    }
    // Full restart: all three kill -9'd, then started again: time from the
    // restart until an acquire + release succeeds.
    eprintln!("   full restart");
    for i in 0..3 {
        cluster.kill9(i)?;
    }
    let t = Instant::now();
    for i in 0..3 {
        cluster.restart(i)?;
    }
    out.insert(
        "restart_ms".into(),
        json!(warden::until_served(&wt, t, Duration::from_secs(600)).await),
    );
    out.insert(
        "restart_steps_ms".into(),
        json!((1..=3)
            .map(|id| start_steps(&cluster.dir().join(format!("n{id}")).join("out.log")))
            .collect::<Vec<_>>()),
    );
    out.insert("sessions_lost".into(), json!(keeper.lost_count()));
    drop(keeper);
    Ok(Value::Object(out))
}

async fn curve(ctx: &Ctx, s: &Sizes, million: Option<&Value>) -> Result<Value> {
    let each = s.locks.div_ceil(s.sessions.max(1)).max(1);
    let mut points = Vec::new();
    for &locks in &s.curve {
        eprintln!("   curve: {locks} locks");
        let v = match million {
            Some(m) if locks == s.locks && m.get("error").is_none() => {
                let mut v = m.clone();
                v["from"] = json!("million_locks");
                v
            }
            _ => locks_point(ctx, locks, locks.div_ceil(each), false)
                .await
                .unwrap_or_else(err),
        };
        let pick = |k: &str| v.get(k).cloned().unwrap_or(Value::Null);
        let mut p = json!({
            "locks": pick("locks"),
            "rss_mib": pick("rss_mib"),
            "snapshot_bytes": pick("snapshot_bytes"),
            "snapshot_ms": pick("snapshot_ms"),
            "restart_ms": pick("restart_ms"),
            "failover_ms": pick("failover_ms"),
            "acquire_p50_ms": pick("acquire_p50_ms"),
            "cycles_per_s": pick("cycles_per_s"),
        });
        for k in ["error", "from"] {
            if let Some(x) = v.get(k) {
                p[k] = x.clone();
            }
        }
        points.push(p);
    }
    Ok(json!(points))
}

/// The steps of a node's last start, from its log (warden-server's
/// `start` logs each with `elapsed_ms` since the start began): ms until the
/// data dir was open, the state machine loaded from the stored snapshot,
/// Raft started and the node serving. Missing steps are absent.
fn start_steps(log: &Path) -> Value {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let mut steps = Map::new();
    for (key, message) in [
        ("data_dir_opened", ": data dir opened"),
        ("state_machine_loaded", ": state machine loaded"),
        ("raft_started", ": raft started"),
        ("serving", ": serving"),
    ] {
        let last = text.lines().rev().find(|l| l.contains(message));
        let ms = last.and_then(|l| {
            let rest = &l[l.find("elapsed_ms=")? + "elapsed_ms=".len()..];
            rest.split(|c: char| !c.is_ascii_digit())
                .next()?
                .parse::<u64>()
                .ok()
        });
        if let Some(ms) = ms {
            steps.insert(key.into(), json!(ms));
        }
    }
    Value::Object(steps)
}

// ---------------------------------------------------------------- mass_expiry

async fn mass_expiry(ctx: &Ctx, s: &Sizes) -> Result<Value> {
    let (_cluster, wt) = ctx.warden(&StartOptions::default()).await?;
    let n = s.sessions;
    let ids = Ids::new();
    let mut holders = Keeper::start(&wt, 4, anchors::EVERY);
    let waiters_keeper = Keeper::start(&wt, 2, Duration::from_secs(10));
    let (holder_leases, _) =
        warden::grant_leases(&wt, &ids, n, anchors::TTL, Some(&holders)).await?;
    // Waiters hang on sessions of their own (at most 1,000 waits each)
    // that stay alive; each wait has its own client id (a client id has at
    // most 64 requests in flight: S7).
    let w = n.div_ceil(1_000).max(1);
    let (waiter_leases, _) =
        warden::grant_leases(&wt, &ids, w, Duration::from_secs(60), Some(&waiters_keeper)).await?;
    let leader = wt.leader().await?;
    let calls = Calls::open(&wt, &leader).await?;
    eprintln!("   {} holders acquiring", holder_leases.len());
    let held: Vec<bool> = futures::future::join_all(holder_leases.iter().enumerate().map(
        |(i, (lease, client_id))| {
            let calls = &calls;
            async move {
                matches!(
                    calls
                        .acquire(*client_id, 2, format!("mx-{i}"), *lease, Duration::ZERO)
                        .await,
                    Ok(warden::Answer::Granted)
                )
            }
        },
    ))
    .await;
    let holding = held.iter().filter(|h| **h).count();
    eprintln!("   {holding} held; queueing one waiter on each");
    // Queued on one Calls stream to the leader; a wait refused with
    // Unavailable (a leader change meanwhile) is sent again, with the same
    // client and request id (S7), on a stream to the new leader, up to 4
    // times. Every stream stays open: it carries its waits' grants.
    let mut streams = vec![Arc::new(calls)];
    let mut done: Vec<Option<oneshot::Receiver<warden::Answer>>> =
        (0..holder_leases.len()).map(|_| None).collect();
    let mut early: Vec<Option<warden::Answer>> = (0..holder_leases.len()).map(|_| None).collect();
    let mut pending: Vec<(usize, u64)> =
        (0..holder_leases.len()).map(|i| (i, ids.next())).collect();
    let mut queued_ok = 0usize;
    let mut queue_retries = 0u64;
    for attempt in 0..5 {
        let calls = streams.last().expect("a stream").clone();
        let mut started = Vec::new();
        for &(i, client_id) in &pending {
            let (lease, _) = waiter_leases[i % waiter_leases.len()];
            let (q, d) = calls.start(warden::acquire_call(
                client_id,
                1,
                format!("mx-{i}"),
                lease,
                Duration::from_secs(600),
            ))?;
            started.push((i, client_id, q, d));
        }
        let qs: Vec<_> = started.iter_mut().map(|(_, _, q, _)| q).collect();
        let got = tokio::time::timeout(Duration::from_secs(300), futures::future::join_all(qs))
            .await
            .unwrap_or_default();
        let mut again = Vec::new();
        for (k, (i, client_id, _, d)) in started.into_iter().enumerate() {
            if got.get(k).is_some_and(|r| r.is_ok()) {
                queued_ok += 1;
                done[i] = Some(d);
                continue;
            }
            // Not queued: its answer is already there (or never comes).
            match tokio::time::timeout(Duration::from_secs(5), d).await {
                Ok(Ok(warden::Answer::Error(e))) if e.starts_with("code 14:") && attempt < 4 => {
                    again.push((i, client_id));
                }
                Ok(Ok(a)) => early[i] = Some(a),
                Ok(Err(_)) | Err(_) => early[i] = Some(warden::Answer::Error("no answer".into())),
            }
        }
        if again.is_empty() {
            break;
        }
        queue_retries += again.len() as u64;
        pending = again;
        tokio::time::sleep(Duration::from_millis(200)).await;
        let leader = wt.leader().await?;
        streams.push(Arc::new(Calls::open(&wt, &leader).await?));
    }
    eprintln!("   {queued_ok} waiters queued; holders stop renewing");
    let status = wt.client(warden::LOAD_USER).await?.cluster_status().await?;
    let e_ms = status.timing.map(|t| t.bound_e_ms).unwrap_or(0);
    let bound_s = anchors::TTL.as_secs_f64() + e_ms as f64 / 1000.0 + 2.0;
    let probe = Probe::start(&wt).await?;
    let t0 = Instant::now();
    let t0_unix_s = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| (d.as_secs_f64() * 1000.0).round() / 1000.0)
        .unwrap_or(0.0);
    holders.stop();
    let waits = futures::future::join_all(done.into_iter().zip(early).map(|(d, a)| async move {
        let answer = match (d, a) {
            (Some(d), _) => d.await.map_err(anyhow::Error::from),
            (None, Some(a)) => Ok(a),
            (None, None) => Ok(warden::Answer::Error("never sent".into())),
        };
        match answer {
            Ok(warden::Answer::Granted) => Ok(t0.elapsed()),
            Ok(warden::Answer::Error(e)) => Err(warden::error_kind(&e)),
            Ok(other) => Err(format!("{other:?}")),
            Err(e) => Err(warden::error_kind(&format!("{e:#}"))),
        }
    }));
    let ended: Vec<Result<Duration, String>> =
        tokio::time::timeout(Duration::from_secs_f64(bound_s + 120.0), waits)
            .await
            .unwrap_or_default();
    let granted: Vec<Duration> = ended
        .iter()
        .filter_map(|r| r.as_ref().ok())
        .copied()
        .collect();
    let mut wait_errors = std::collections::BTreeMap::<String, u64>::new();
    for e in ended.iter().filter_map(|r| r.as_ref().err()) {
        *wait_errors.entry(e.clone()).or_default() += 1;
    }
    let all = granted.len() == holding && holding > 0;
    let last = granted.iter().max().copied();
    let (h, probe_failed, probe_slowest) = probe.finish().await;
    Ok(json!({
        "leases": holder_leases.len(),
        "locks_held": holding,
        "waiters_queued": queued_ok,
        "queue_retries": queue_retries,
        "queue_streams": streams.len(),
        "waiters_granted": granted.len(),
        "wait_errors": wait_errors,
        "all_freed_after_s": if all { last.map(|d| (d.as_secs_f64() * 100.0).round() / 100.0) } else { None },
        "last_grant_after_s": last.map(|d| (d.as_secs_f64() * 100.0).round() / 100.0),
        "first_grant_after_s": granted.iter().min().map(|d| (d.as_secs_f64() * 100.0).round() / 100.0),
        "bound_s": bound_s,
        "bound_e_ms": e_ms,
        "ttl_s": anchors::TTL.as_secs(),
        "probe_p99_ms": ms_q(&h, 0.99),
        "probe_p50_ms": ms_q(&h, 0.5),
        "probe_max_ms": ms_q(&h, 1.0),
        "probe_slowest": probe_slowest,
        "probe_cycles": h.len(),
        "probe_failed": probe_failed,
        "waiter_sessions_lost": waiters_keeper.lost_count(),
        "measured_from": "the moment every holder's keep-alive stream stopped (each holder renewed at most 4 s before it)",
        "measured_from_unix_s": t0_unix_s,
    }))
}

// ---------------------------------------------------------------- wan

async fn wan(ctx: &Ctx, s: &Sizes, preset: bool) -> Result<Value> {
    let mut points = Vec::new();
    for &one_way in &s.wan_ms {
        eprintln!("   wan: {one_way} ms one way");
        points.push(
            wan_point(ctx, s, one_way, preset)
                .await
                .unwrap_or_else(|e| json!({ "one_way_ms": one_way, "error": format!("{e:#}") })),
        );
    }
    Ok(json!(points))
}

async fn wan_point(ctx: &Ctx, s: &Sizes, one_way: u64, preset: bool) -> Result<Value> {
    let ports: Vec<(u16, u16)> = (0..3).map(|_| (free_port(), free_port())).collect();
    let mut proxies = Vec::new();
    for (listen, advertised) in &ports {
        proxies
            .push(proxy::Proxy::start(*advertised, *listen, Duration::from_millis(one_way)).await?);
    }
    let rtt = 2 * one_way;
    let (args, timing): (Vec<String>, String) = if preset {
        (vec!["--timing".into(), "wan".into()], "--timing wan".into())
    } else {
        // No preset in this build: heartbeat one round trip, elections
        // well beyond a few round trips.
        let min = 4 * rtt + 200;
        let max = min + rtt + 100;
        let a = vec![
            "--heartbeat".to_owned(),
            format!("{rtt}ms"),
            "--election-timeout-min".into(),
            format!("{min}ms"),
            "--election-timeout-max".into(),
            format!("{max}ms"),
        ];
        let t = a.join(" ");
        (a, t)
    };
    let opts = StartOptions {
        warden_args: args,
        peer_ports: Some(ports),
        ..Default::default()
    };
    let (mut cluster, mut wt) = ctx.warden(&opts).await?;
    wt.peer_round_trip = Duration::from_millis(rtt);
    let client = wt.client(warden::LOAD_USER).await?;
    let mut h = histogram();
    for i in 0..(if s.quick { 20 } else { 100 }) {
        let t = Instant::now();
        if warden::cycle(&client, &format!("wan-u-{i}")).await.is_ok() {
            record(&mut h, t.elapsed());
        }
    }
    // Commits: log entries committed per second while 16 clients cycle.
    let before = client.cluster_status().await?.commit_index;
    let t = Instant::now();
    let cycles_per_s = parallel_cycles(&wt, 16, Duration::from_secs(s.wan_window_s), "wan-p").await;
    let wall = t.elapsed().as_secs_f64();
    let after = client.cluster_status().await?.commit_index;
    let failover_ms = failover(&mut cluster, &wt).await?;
    drop(proxies);
    Ok(json!({
        "one_way_ms": one_way,
        "commits": ((after - before) as f64 / wall).round(),
        "commits_are": "log entries committed per second while 16 clients cycle acquire + release",
        "cycles_per_s": cycles_per_s,
        "uncontended_p50_ms": ms_q(&h, 0.5),
        "failover_ms": failover_ms,
        "timing": timing,
    }))
}
