//! `loadgen`: Warden side by side with etcd, ZooKeeper and Redis.
//!
//! - `loadgen run`: starts each system (cluster.rs), runs every workload
//!   (workload.rs) through each backend (backend.rs), writes
//!   `results/latest.json` after every row, then the report.
//! - `loadgen report`: `latest.json` → a Markdown table of Warden's ratio to
//!   each anchor and a PNG chart (report.rs).
//! - `loadgen scale`: the scale run (scale/): Chubby-cell sessions, a
//!   million held locks, mass expiry, the size curve, WAN latency; writes
//!   `results/scale.{json,md,png}`. `loadgen scale-report` redraws those.
//!
//! `bench/run.sh` installs what is missing, builds, and calls both.

mod backend;
mod cluster;
mod report;
mod scale;
mod workload;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use clap::{Parser, Subcommand};
use serde_json::{json, Map, Value};

use backend::Target;
use cluster::{Cluster, System};
use workload::{Params, Run};

#[derive(Parser)]
#[command(about = "Warden side by side with etcd, ZooKeeper and Redis")]
struct Cli {
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Run the benchmarks and write the results.
    Run(RunArgs),
    /// Write the Markdown table and the PNG chart from a results file.
    Report(ReportArgs),
    /// The scale run: write results/scale.{json,md,png}.
    Scale(scale::ScaleArgs),
    /// Write scale.md and scale.png from a scale results file.
    ScaleReport(ReportArgs),
    /// One anchor row of the scale run's chubby_cell (the scale run starts
    /// it as a child process).
    #[command(hide = true)]
    ScaleAnchor(scale::AnchorArgs),
}

#[derive(clap::Args)]
struct RunArgs {
    /// Smoke run: small sizes, no etcd-at-defaults pass (under 3 minutes).
    #[arg(long)]
    quick: bool,
    /// Backends, comma-separated.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "warden,warden-insecure,etcd,etcd-session,zookeeper,redis"
    )]
    backends: Vec<String>,
    /// Workloads, comma-separated.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "uncontended,parallel,contended,semaphore,readers,sessions,failover"
    )]
    workloads: Vec<String>,
    /// The `warden` binary (release build of the main workspace).
    #[arg(long, default_value = "../target/release/warden")]
    warden_bin: PathBuf,
    /// Where clusters keep their data (must be on the real disk: fsync matters).
    #[arg(long, default_value = "/var/tmp")]
    work_dir: PathBuf,
    /// Results file.
    #[arg(long, default_value = "results/latest.json")]
    out: PathBuf,
    /// Also run etcd at its default timing (the full run does by default).
    #[arg(long)]
    etcd_defaults: Option<bool>,
    /// Override the session count of the `sessions` workload.
    #[arg(long)]
    sessions: Option<u64>,
    /// Override the timed iterations of `uncontended`.
    #[arg(long)]
    iterations: Option<u64>,
    /// Override the duration of `parallel` and `contended`, in seconds.
    #[arg(long)]
    seconds: Option<u64>,
    /// Free text recorded as machine.load_note (e.g. other load on the machine).
    #[arg(long, default_value = "")]
    load_note: String,
    /// Run every backend this many times, each on a fresh cluster, the order
    /// of the backends reversed every other round, so a machine that speeds up
    /// or slows down during the run favours no backend. Every row records its
    /// round; the report gives medians over the rounds and, for each ratio, the
    /// median of the per-round ratios with their range.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=50))]
    rounds: u32,
}

#[derive(clap::Args)]
struct ReportArgs {
    #[arg(long, default_value = "results/latest.json")]
    input: PathBuf,
    #[arg(long, default_value = "results/latest.md")]
    md: PathBuf,
    #[arg(long, default_value = "results/latest.png")]
    png: PathBuf,
}

/// mimalloc, as in the `warden` binary: glibc's malloc was ~4 % of all CPU
/// samples of a 64-client run, in this process (every backend's driver runs
/// here, so every system gains alike).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> Result<()> {
    let cli = Cli::parse();
    match cli.command {
        Cmd::Run(args) => tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()?
            .block_on(run(args)),
        Cmd::Report(args) => report::write(&args.input, &args.md, &args.png),
        Cmd::Scale(args) => tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()?
            .block_on(scale::run(args)),
        Cmd::ScaleReport(args) => scale::report::write(&args.input, &args.md, &args.png),
        Cmd::ScaleAnchor(args) => tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()?
            .block_on(scale::anchor_main(args)),
    }
}

fn system_of(backend: &str, tuned: bool) -> System {
    match backend {
        "warden" => System::Warden { tls: true },
        "warden-insecure" => System::Warden { tls: false },
        "etcd" | "etcd-session" => System::Etcd { tuned },
        "zookeeper" => System::Zookeeper,
        _ => System::Redis,
    }
}

async fn run(args: RunArgs) -> Result<()> {
    let p = if args.quick {
        Params::quick()
    } else {
        Params::full()
    };
    let p = Params {
        sessions: args.sessions.unwrap_or(p.sessions),
        iterations: args.iterations.unwrap_or(p.iterations),
        parallel_s: args.seconds.unwrap_or(p.parallel_s),
        contended_s: args.seconds.unwrap_or(p.contended_s),
        ..p
    };
    let warden_bin = std::fs::canonicalize(&args.warden_bin)
        .with_context(|| format!("--warden-bin {}", args.warden_bin.display()))?;
    std::fs::create_dir_all(&args.work_dir)?;
    let work = tempfile::Builder::new()
        .prefix("warden-bench-")
        .tempdir_in(&args.work_dir)?;
    let started = Instant::now();
    let mut machine = machine_info(work.path(), &args, &p).await;
    let mut runs: Vec<Run> = Vec::new();
    let mut passes: Vec<(String, bool)> = args.backends.iter().map(|b| (b.clone(), true)).collect();
    if args.etcd_defaults.unwrap_or(!args.quick) {
        for b in ["etcd", "etcd-session"] {
            if args.backends.iter().any(|x| x == b) {
                passes.push((b.to_owned(), false));
            }
        }
    }
    machine.insert("rounds".into(), json!(args.rounds));
    let rounds: Vec<(u32, Vec<(String, bool)>)> = (0..args.rounds)
        .map(|round| {
            let mut order = passes.clone();
            if round % 2 == 1 {
                order.reverse();
            }
            (round, order)
        })
        .collect();
    for (round, backend, tuned) in rounds
        .into_iter()
        .flat_map(|(round, order)| order.into_iter().map(move |(b, t)| (round, b, t)))
    {
        let system = system_of(&backend, tuned);
        let name: &'static str = match backend.as_str() {
            "warden" => "warden",
            "warden-insecure" => "warden-insecure",
            "etcd" => "etcd",
            "etcd-session" => "etcd-session",
            "zookeeper" => "zookeeper",
            "redis" => "redis",
            other => anyhow::bail!("unknown backend {other}"),
        };
        if args.rounds > 1 {
            eprintln!(
                "== round {}/{}: {name} ({})",
                round + 1,
                args.rounds,
                system.config()
            );
        } else {
            eprintln!("== {name} ({})", system.config());
        }
        let mut cluster = match Cluster::start(system, work.path(), &warden_bin).await {
            Ok(c) => c,
            Err(e) => {
                eprintln!("   cannot start: {e:#}");
                for w in &args.workloads {
                    let mut row = failed_row(w, name, system, &e);
                    row.extra.insert("round".into(), json!(round));
                    runs.push(row);
                }
                write_results(&args.out, &machine, &runs)?;
                continue;
            }
        };
        let target = Target {
            backend: name,
            endpoints: cluster.endpoints(),
            warden_tls: cluster.warden_tls().cloned(),
        };
        for w in &args.workloads {
            if (w == "semaphore" || w == "readers") && !name.starts_with("warden") {
                // Built into Warden only (see `Backend::acquire_kind`).
                continue;
            }
            if w == "sessions" && (name == "etcd" || !tuned) {
                // etcd's sessions are its leases: measured once, as etcd-session.
                continue;
            }
            let t = Instant::now();
            let pids = cluster.pids();
            let cpu_before: Vec<u64> = pids
                .iter()
                .map(|p| p.map(|p| cluster::proc_usage(p).0).unwrap_or(0))
                .collect();
            let commit_before = warden_commit_index(&target).await;
            let limit = Duration::from_secs(300);
            let result = match w.as_str() {
                "uncontended" => {
                    tokio::time::timeout(limit, workload::uncontended(&target, system, &p)).await
                }
                "parallel" => {
                    tokio::time::timeout(limit, workload::parallel(&target, system, &p)).await
                }
                "contended" => {
                    tokio::time::timeout(limit, workload::contended(&target, system, &p)).await
                }
                "sessions" => {
                    tokio::time::timeout(limit, workload::sessions(&target, &cluster, &p)).await
                }
                "semaphore" => {
                    tokio::time::timeout(limit, workload::semaphore(&target, system, &p)).await
                }
                "readers" => {
                    tokio::time::timeout(limit, workload::readers(&target, system, &p)).await
                }
                "failover" => {
                    tokio::time::timeout(limit, workload::failover(&target, &mut cluster, &p)).await
                }
                other => anyhow::bail!("unknown workload {other}"),
            };
            let row = match result {
                Ok(Ok(mut r)) => {
                    // Server CPU per operation, each node (ms of CPU time):
                    // on 2 shared cores it bounds throughput as much as the disk.
                    // Operations the servers saw, warm-up included.
                    let ops = r
                        .extra
                        .get("ops_total")
                        .and_then(Value::as_u64)
                        .unwrap_or(r.count);
                    if ops > 0 && w != "failover" {
                        let per_op: Vec<f64> = pids
                            .iter()
                            .zip(&cpu_before)
                            .map(|(p, b)| {
                                let ticks = p.map(|p| cluster::proc_usage(p).0).unwrap_or(0);
                                let ms = ticks.saturating_sub(*b) as f64 * 10.0;
                                (ms / ops as f64 * 1000.0).round() / 1000.0
                            })
                            .collect();
                        r.extra
                            .insert("server_cpu_ms_per_op_by_node".into(), json!(per_op));
                        // Sessions: the count is heartbeats of the timed
                        // window only, and lease grants are entries too.
                        if let (Some(b), Some(a), false) = (
                            commit_before,
                            warden_commit_index(&target).await,
                            w == "sessions",
                        ) {
                            r.extra.insert(
                                "raft_entries_per_op".into(),
                                json!(((a - b) as f64 / ops as f64 * 1000.0).round() / 1000.0),
                            );
                        }
                    }
                    r
                }
                Ok(Err(e)) => failed_row(w, name, system, &e),
                Err(_) => failed_row(
                    w,
                    name,
                    system,
                    &anyhow::anyhow!("timed out after {limit:?}"),
                ),
            };
            let mut row = row;
            row.extra.insert("round".into(), json!(round));
            eprintln!(
                "   {w:<12} p50 {:>8} ms  p99 {:>8} ms  ops/s {:>9}  {} ({:.1} s)",
                fmt(row.p50_ms),
                fmt(row.p99_ms),
                fmt(row.ops_per_s),
                summary(&row),
                t.elapsed().as_secs_f64()
            );
            runs.push(row);
            write_results(&args.out, &machine, &runs)?;
        }
        drop(cluster);
    }
    machine.insert("wall_s".into(), json!(started.elapsed().as_secs()));
    machine.insert("loadavg_end".into(), json!(loadavg()));
    write_results(&args.out, &machine, &runs)?;
    let md = args.out.with_extension("md");
    let png = args.out.with_extension("png");
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

/// Warden's commit index (None for the other systems).
async fn warden_commit_index(target: &Target) -> Option<u64> {
    if !target.is_warden() {
        return None;
    }
    let client = warden_client::Client::connect(target.endpoints.clone(), target.warden_options())
        .await
        .ok()?;
    client.cluster_status().await.ok().map(|s| s.commit_index)
}

fn fmt(v: Option<f64>) -> String {
    v.map(|v| format!("{v:.2}")).unwrap_or_else(|| "-".into())
}

fn summary(r: &Run) -> String {
    let keys = [
        "error",
        "unavailable_ms",
        "lost",
        "granted_twice",
        "leader_cpu_pct_of_one_core",
        "grants_per_client",
    ];
    let mut out = Vec::new();
    if r.errors > 0 {
        out.push(format!("errors={}", r.errors));
    }
    for k in keys {
        if let Some(v) = r.extra.get(k) {
            out.push(format!("{k}={v}"));
        }
    }
    out.join(" ")
}

fn failed_row(workload: &str, backend: &str, system: System, e: &anyhow::Error) -> Run {
    let mut extra = Map::new();
    extra.insert("error".into(), json!(format!("{e:#}")));
    Run {
        workload: workload.into(),
        backend: backend.into(),
        config: system.config().into(),
        safe: backend != "redis",
        p50_ms: None,
        p99_ms: None,
        p999_ms: None,
        ops_per_s: None,
        count: 0,
        errors: 1,
        extra,
    }
}

fn write_results(out: &Path, machine: &Map<String, Value>, runs: &[Run]) -> Result<()> {
    if let Some(dir) = out.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let doc = json!({ "machine": machine, "runs": runs });
    std::fs::write(out, serde_json::to_string_pretty(&doc)? + "\n")?;
    Ok(())
}

pub(crate) fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .unwrap_or_default()
        .split_whitespace()
        .take(3)
        .collect::<Vec<_>>()
        .join(" ")
}

fn command_line(program: &str, args: &[&str]) -> String {
    std::process::Command::new(program)
        .args(args)
        .output()
        .map(|o| {
            String::from_utf8_lossy(if o.stdout.is_empty() {
                &o.stderr
            } else {
                &o.stdout
            })
            .lines()
            .next()
            .unwrap_or("")
            .trim()
            .to_owned()
        })
        .unwrap_or_else(|_| "not found".into())
}

/// Median of 200 × (4 KiB write + fdatasync) in `dir`, in ms.
fn fdatasync_ms(dir: &Path) -> Option<f64> {
    use std::io::Write;
    let path = dir.join("fsync-probe");
    let mut f = std::fs::File::create(&path).ok()?;
    let buf = vec![7u8; 4096];
    let mut samples = Vec::new();
    for _ in 0..200 {
        let t = Instant::now();
        f.write_all(&buf).ok()?;
        f.sync_data().ok()?;
        samples.push(t.elapsed().as_secs_f64() * 1e3);
    }
    let _ = std::fs::remove_file(&path);
    samples.sort_by(f64::total_cmp);
    Some((samples[samples.len() / 2] * 1000.0).round() / 1000.0)
}

/// Median loopback TCP round trip (64-byte ping-pong), in ms.
fn loopback_rtt_ms() -> Option<f64> {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").ok()?;
    let addr = listener.local_addr().ok()?;
    let echo = std::thread::spawn(move || {
        if let Ok((mut s, _)) = listener.accept() {
            let _ = s.set_nodelay(true);
            let mut buf = [0u8; 64];
            while s.read_exact(&mut buf).is_ok() {
                if s.write_all(&buf).is_err() {
                    break;
                }
            }
        }
    });
    let mut s = std::net::TcpStream::connect(addr).ok()?;
    s.set_nodelay(true).ok()?;
    let mut buf = [1u8; 64];
    let mut samples = Vec::new();
    for _ in 0..1000 {
        let t = Instant::now();
        s.write_all(&buf).ok()?;
        s.read_exact(&mut buf).ok()?;
        samples.push(t.elapsed().as_secs_f64() * 1e3);
    }
    drop(s);
    let _ = echo.join();
    samples.sort_by(f64::total_cmp);
    Some((samples[samples.len() / 2] * 1000.0).round() / 1000.0)
}

/// The machine as every results file records it: date, cores, CPU,
/// memory, kernel, data dir, fdatasync and loopback round trip, load
/// average at the start, the note and the commit measured.
pub(crate) fn machine_common(work: &Path, load_note: &str) -> Map<String, Value> {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let model = cpuinfo
        .lines()
        .find_map(|l| l.strip_prefix("model name"))
        .map(|l| l.trim_start_matches([' ', '\t', ':']).to_owned())
        .unwrap_or_default();
    let mem_kib: u64 = std::fs::read_to_string("/proc/meminfo")
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .and_then(|l| l.split_whitespace().next()?.parse().ok())
        .unwrap_or(0);
    let mut m = Map::new();
    m.insert(
        "date_utc".into(),
        json!(command_line("date", &["-u", "+%Y-%m-%dT%H:%M:%SZ"])),
    );
    m.insert(
        "cores".into(),
        json!(std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(0)),
    );
    m.insert("cpu_model".into(), json!(model));
    m.insert(
        "memory_gib".into(),
        json!((mem_kib as f64 / 1048576.0).round()),
    );
    m.insert(
        "kernel".into(),
        json!(std::fs::read_to_string("/proc/sys/kernel/osrelease")
            .unwrap_or_default()
            .trim()),
    );
    m.insert("data_dir".into(), json!(work.display().to_string()));
    m.insert("fdatasync_4k_p50_ms".into(), json!(fdatasync_ms(work)));
    m.insert("loopback_rtt_p50_ms".into(), json!(loopback_rtt_ms()));
    m.insert("loadavg_start".into(), json!(loadavg()));
    m.insert("load_note".into(), json!(load_note));
    m.insert(
        "warden_commit".into(),
        json!(std::env::var("WARDEN_COMMIT").unwrap_or_default()),
    );
    m
}

async fn machine_info(work: &Path, args: &RunArgs, p: &Params) -> Map<String, Value> {
    let mut m = machine_common(work, &args.load_note);
    m.insert(
        "mode".into(),
        json!(if args.quick { "quick" } else { "full" }),
    );
    m.insert(
        "versions".into(),
        json!({
            "etcd": command_line("etcd", &["--version"]),
            "zookeeper": command_line("dpkg-query", &["-W", "-f=${Version}", "zookeeper"]),
            "redis": command_line("redis-server", &["--version"]),
            "java": command_line("java", &["-version"]),
        }),
    );
    m.insert(
        "params".into(),
        json!({
            "uncontended_iterations": p.iterations,
            "uncontended_warmup": p.warmup,
            "parallel_clients": p.parallel_clients,
            "parallel_s": p.parallel_s,
            "contended_clients": p.contended_clients,
            "contended_s": p.contended_s,
            "failover_before_s": p.failover_before_s,
            "failover_after_s": p.failover_after_s,
            "failover_probers": p.probers,
            "sessions": p.sessions,
            "sessions_s": p.sessions_s,
            "lease_ttl_s": backend::TTL_S,
            "session_ttl_s": workload::SESSION_TTL_S,
        }),
    );
    m
}
