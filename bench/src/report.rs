//! `latest.json` → `latest.md` (Warden's ratio to each anchor and to itself
//! without TLS, the goals, every row) and `latest.png` (four bar charts).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use anyhow::{Context, Result};
use plotters::prelude::*;
use serde_json::{Map, Value};

use crate::workload::Run;

/// Columns of the ratio table: (label, backend, at etcd's defaults). The
/// first is Warden itself without TLS: its ratio is the cost of mutual TLS.
const COLUMNS: [(&str, &str, bool); 7] = [
    ("warden --insecure", "warden-insecure", false),
    ("etcd", "etcd", false),
    ("etcd-session", "etcd-session", false),
    ("zookeeper", "zookeeper", false),
    ("redis (unsafe)", "redis", false),
    ("etcd, defaults", "etcd", true),
    ("etcd-session, defaults", "etcd-session", true),
];

fn is_defaults(r: &Run) -> bool {
    r.config.contains("defaults")
}

/// The round a row was measured in (0 for results written before rounds).
fn round_of(r: &Run) -> u64 {
    r.extra.get("round").and_then(Value::as_u64).unwrap_or(0)
}

/// Every row of (workload, backend, config) that did not fail, one a round.
fn rows<'a>(runs: &'a [Run], workload: &str, backend: &str, defaults: bool) -> Vec<&'a Run> {
    runs.iter()
        .filter(|r| {
            r.workload == workload
                && r.backend == backend
                && is_defaults(r) == defaults
                && !r.extra.contains_key("error")
        })
        .collect()
}

fn find<'a>(runs: &'a [Run], workload: &str, backend: &str, defaults: bool) -> Option<&'a Run> {
    rows(runs, workload, backend, defaults).into_iter().next()
}

/// A metric of (workload, backend, config) by round.
fn by_round(
    runs: &[Run],
    workload: &str,
    backend: &str,
    defaults: bool,
    get: fn(&Run) -> Option<f64>,
) -> BTreeMap<u64, f64> {
    rows(runs, workload, backend, defaults)
        .into_iter()
        .filter_map(|r| get(r).map(|v| (round_of(r), v)))
        .collect()
}

fn median(mut values: Vec<f64>) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    values.sort_by(f64::total_cmp);
    let n = values.len();
    Some(if n % 2 == 1 {
        values[n / 2]
    } else {
        (values[n / 2 - 1] + values[n / 2]) / 2.0
    })
}

/// The median over the rounds of a metric of (workload, backend, config).
fn value(
    runs: &[Run],
    workload: &str,
    backend: &str,
    defaults: bool,
    get: fn(&Run) -> Option<f64>,
) -> Option<f64> {
    median(
        by_round(runs, workload, backend, defaults, get)
            .into_values()
            .collect(),
    )
}

/// A ratio taken round by round: a ÷ b of the same round, then the median of
/// those ratios and their range. Pairing by round keeps a change of the
/// machine's speed between rounds out of the ratio.
struct Ratio {
    median: f64,
    min: f64,
    max: f64,
    rounds: usize,
}

impl Ratio {
    fn of(a: &BTreeMap<u64, f64>, b: &BTreeMap<u64, f64>) -> Option<Ratio> {
        let ratios: Vec<f64> = a
            .iter()
            .filter_map(|(round, a)| b.get(round).filter(|b| **b > 0.0).map(|b| a / b))
            .collect();
        Some(Ratio {
            min: ratios.iter().copied().fold(f64::INFINITY, f64::min),
            max: ratios.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            rounds: ratios.len(),
            median: median(ratios)?,
        })
    }
}

impl std::fmt::Display for Ratio {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.rounds > 1 {
            write!(
                f,
                "{:.2}× [{:.2}–{:.2}, {} rounds]",
                self.median, self.min, self.max, self.rounds
            )
        } else {
            write!(f, "{:.2}×", self.median)
        }
    }
}

/// A metric of a row.
struct Metric {
    workload: &'static str,
    label: &'static str,
    get: fn(&Run) -> Option<f64>,
}

fn extra_f64(r: &Run, key: &str) -> Option<f64> {
    r.extra.get(key).and_then(Value::as_f64)
}

const METRICS: [Metric; 8] = [
    Metric {
        workload: "uncontended",
        label: "uncontended acquire+release p50 (ms)",
        get: |r| r.p50_ms,
    },
    Metric {
        workload: "uncontended",
        label: "uncontended p99 (ms)",
        get: |r| r.p99_ms,
    },
    Metric {
        workload: "parallel",
        label: "64 clients, own resources (cycles/s)",
        get: |r| r.ops_per_s,
    },
    Metric {
        workload: "parallel",
        label: "64 clients, cycle p50 (ms)",
        get: |r| r.p50_ms,
    },
    Metric {
        workload: "contended",
        label: "16 clients, one resource (grants/s)",
        get: |r| r.ops_per_s,
    },
    Metric {
        workload: "contended",
        label: "16 clients, handoff p50 (ms)",
        get: |r| r.p50_ms,
    },
    Metric {
        workload: "failover",
        label: "leader kill -9: time without service (ms)",
        get: |r| extra_f64(r, "unavailable_ms"),
    },
    Metric {
        workload: "sessions",
        label: "sessions: leader CPU (% of one core)",
        get: |r| extra_f64(r, "leader_cpu_pct_of_one_core"),
    },
];

pub fn num(v: f64) -> String {
    if v >= 1000.0 {
        let s = format!("{:.0}", v);
        let mut out = String::new();
        for (i, c) in s.chars().enumerate() {
            if i > 0 && (s.len() - i) % 3 == 0 {
                out.push(',');
            }
            out.push(c);
        }
        out
    } else if v >= 100.0 {
        format!("{v:.0}")
    } else if v >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

fn failover_outcome(r: &Run) -> String {
    let flag = |k: &str| r.extra.get(k).and_then(Value::as_bool).unwrap_or(false);
    match (flag("lost"), flag("granted_twice")) {
        (false, false) => "kept".into(),
        (true, true) => "lost, granted twice".into(),
        (true, false) => "lost".into(),
        (false, true) => "granted twice".into(),
    }
}

/// The failover outcome over every round: `kept` only if the held lock was
/// kept in each.
fn outcome(runs: &[Run], backend: &str, defaults: bool) -> String {
    let rows = rows(runs, "failover", backend, defaults);
    if rows.is_empty() {
        return "–".into();
    }
    let bad: Vec<String> = rows
        .iter()
        .map(|r| failover_outcome(r))
        .filter(|o| o != "kept")
        .collect();
    match (bad.first(), rows.len()) {
        (None, _) => "kept".into(),
        (Some(o), 1) => o.clone(),
        (Some(o), n) => format!("{o} in {} of {n} rounds", bad.len()),
    }
}

pub fn write(input: &Path, md: &Path, png: &Path) -> Result<()> {
    let text = std::fs::read_to_string(input).with_context(|| input.display().to_string())?;
    let doc: Value = serde_json::from_str(&text)?;
    let machine: Map<String, Value> = doc
        .get("machine")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let runs: Vec<Run> = serde_json::from_value(doc.get("runs").cloned().unwrap_or_default())?;
    std::fs::write(md, markdown(&machine, &runs))?;
    chart(&runs, png)?;
    Ok(())
}

fn markdown(machine: &Map<String, Value>, runs: &[Run]) -> String {
    let m = |k: &str| {
        machine
            .get(k)
            .map(|v| v.to_string().trim_matches('"').to_owned())
            .unwrap_or_default()
    };
    let mut s = String::new();
    let _ = writeln!(s, "# Warden beside etcd, ZooKeeper and Redis\n");
    let _ = writeln!(
        s,
        "Generated by `bench/run.sh` ({} mode) on {}: {} cores ({}), fdatasync p50 {} ms, loopback RTT p50 {} ms, load average {} at start.",
        m("mode"), m("date_utc"), m("cores"), m("cpu_model"), m("fdatasync_4k_p50_ms"), m("loopback_rtt_p50_ms"), m("loadavg_start")
    );
    if !m("load_note").is_empty() {
        let _ = writeln!(s, "\n**Note:** {}", m("load_note"));
    }
    let rounds = machine.get("rounds").and_then(Value::as_u64).unwrap_or(1);
    if rounds > 1 {
        let _ = writeln!(
            s,
            "\n**{rounds} rounds**, each backend on a fresh cluster every round, the order of the backends reversed every other round. Each value is the median over the rounds; each ratio is the median of the round-by-round ratios, with their range and count in brackets."
        );
    }
    let _ = writeln!(
        s,
        "\nWarden runs in its default, mutual TLS 1.3 (clients present `root`'s certificate); `warden --insecure` is the same cluster in plaintext, so Warden ÷ it is the cost of TLS. Each cell: the anchor's value, then Warden ÷ anchor. For latencies and CPU a ratio below 1 means Warden is better; for rates, above 1.\n"
    );
    let _ = write!(s, "| metric | Warden |");
    for (label, _, _) in COLUMNS {
        let _ = write!(s, " {label} |");
    }
    let _ = write!(s, "\n|---|---|");
    for _ in COLUMNS {
        let _ = write!(s, "---|");
    }
    s.push('\n');
    for metric in &METRICS {
        let warden = by_round(runs, metric.workload, "warden", false, metric.get);
        let _ = write!(
            s,
            "| {} | {} |",
            metric.label,
            median(warden.values().copied().collect())
                .map(num)
                .unwrap_or_else(|| "–".into())
        );
        for (_, backend, defaults) in COLUMNS {
            let anchor = by_round(runs, metric.workload, backend, defaults, metric.get);
            let cell = match (
                median(anchor.values().copied().collect()),
                Ratio::of(&warden, &anchor),
            ) {
                (Some(a), Some(ratio)) => format!("{} ({ratio})", num(a)),
                (Some(a), None) => num(a),
                _ => "–".into(),
            };
            let _ = write!(s, " {cell} |");
        }
        s.push('\n');
    }
    let _ = write!(
        s,
        "| failover: the held lock | {} |",
        outcome(runs, "warden", false)
    );
    for (_, backend, defaults) in COLUMNS {
        let _ = write!(s, " {} |", outcome(runs, backend, defaults));
    }
    s.push('\n');

    // The goals: values are medians over the rounds, ratios the median of
    // the per-round ratios.
    let safe_best_p50: BTreeMap<u64, f64> = ["etcd", "etcd-session", "zookeeper"]
        .iter()
        .flat_map(|b| by_round(runs, "uncontended", b, false, |r| r.p50_ms))
        .fold(BTreeMap::new(), |mut best, (round, v)| {
            let e = best.entry(round).or_insert(v);
            *e = e.min(v);
            best
        });
    let w = |wl: &str| find(runs, wl, "warden", false);
    let warden = |wl: &str, get: fn(&Run) -> Option<f64>| by_round(runs, wl, "warden", false, get);
    let insecure =
        |wl: &str, get: fn(&Run) -> Option<f64>| by_round(runs, wl, "warden-insecure", false, get);
    let mut goals: Vec<(String, String, Option<bool>)> = Vec::new();
    let p50s = warden("uncontended", |r| r.p50_ms);
    let p50 = median(p50s.values().copied().collect());
    let anchor_ratio = Ratio::of(&p50s, &safe_best_p50);
    goals.push((
        "uncontended p50 ≤ 1.0 ms and ≤ 0.5× the best safe anchor".into(),
        match (p50, &anchor_ratio) {
            (Some(v), Some(ratio)) => format!(
                "{} ms; best safe anchor {} ms ({ratio})",
                num(v),
                median(safe_best_p50.values().copied().collect())
                    .map(num)
                    .unwrap_or_default(),
            ),
            (Some(v), None) => format!("{} ms", num(v)),
            _ => "–".into(),
        },
        p50.map(|v| v <= 1.0 && anchor_ratio.as_ref().is_some_and(|r| r.median <= 0.5)),
    ));
    let pars = warden("parallel", |r| r.ops_per_s);
    let par = median(pars.values().copied().collect());
    goals.push((
        "64 clients ≥ 10,000 cycles/s".into(),
        par.map(|v| format!("{} cycles/s", num(v)))
            .unwrap_or_default(),
        par.map(|v| v >= 10_000.0),
    ));
    let hp50 = value(runs, "contended", "warden", false, |r| r.p50_ms);
    let gps = value(runs, "contended", "warden", false, |r| r.ops_per_s);
    goals.push((
        "contended handoff p50 ≤ 1 ms and ≥ 1,000 grants/s".into(),
        format!(
            "{} ms; {} grants/s",
            hp50.map(num).unwrap_or_default(),
            gps.map(num).unwrap_or_default()
        ),
        hp50.zip(gps).map(|(h, g)| h <= 1.0 && g >= 1000.0),
    ));
    // Mutual TLS against the same cluster in plaintext.
    let p50_tls = Ratio::of(&p50s, &insecure("uncontended", |r| r.p50_ms));
    goals.push((
        "mutual TLS: uncontended p50 ≤ 1.2× insecure".into(),
        p50_tls.as_ref().map(Ratio::to_string).unwrap_or_default(),
        p50_tls.map(|r| r.median <= 1.2),
    ));
    let par_tls = Ratio::of(&pars, &insecure("parallel", |r| r.ops_per_s));
    goals.push((
        "mutual TLS: 64 clients ≥ 0.85× insecure".into(),
        par_tls.as_ref().map(Ratio::to_string).unwrap_or_default(),
        par_tls.map(|r| r.median >= 0.85),
    ));
    let un = value(runs, "failover", "warden", false, |r| {
        extra_f64(r, "unavailable_ms")
    });
    let kept = outcome(runs, "warden", false);
    goals.push((
        "failover ≤ 0.6 s without service, nothing lost or granted twice".into(),
        format!("{} ms; {kept}", un.map(num).unwrap_or_default()),
        un.map(|u| u <= 600.0 && kept == "kept"),
    ));
    let se = w("sessions");
    let cpu = value(runs, "sessions", "warden", false, |r| {
        extra_f64(r, "leader_cpu_pct_of_one_core")
    });
    let n = se
        .and_then(|r| r.extra.get("sessions").and_then(Value::as_u64))
        .unwrap_or(0);
    goals.push((
        "10,000 sessions at 1 heartbeat/s: leader < 25 % of one core".into(),
        format!(
            "{} % of one core at {} sessions",
            cpu.map(num).unwrap_or_default(),
            num(n as f64)
        ),
        cpu.map(|c| c < 25.0 && n >= 10_000),
    ));
    let _ = writeln!(s, "\n## Goals\n\n| goal | measured | met |\n|---|---|---|");
    for (g, v, met) in goals {
        let met = match met {
            Some(true) => "yes",
            Some(false) => "no",
            None => "–",
        };
        let _ = writeln!(s, "| {g} | {v} | {met} |");
    }

    let _ = writeln!(
        s,
        "\n## Every run\n\n| workload | backend | config | p50 ms | p99 ms | p99.9 ms | ops/s | count | errors | notes |\n|---|---|---|---|---|---|---|---|---|---|"
    );
    for r in runs {
        let mut notes = Vec::new();
        for (k, v) in &r.extra {
            if k == "latency_is" || k == "nodes" {
                continue;
            }
            notes.push(format!("{k}: {}", v.to_string().replace('|', "/")));
        }
        if let Some(nodes) = r.extra.get("nodes").and_then(Value::as_array) {
            for n in nodes {
                notes.push(format!(
                    "node {}{}: {} % CPU, {} MiB",
                    n["node"],
                    if n["leader"].as_bool().unwrap_or(false) {
                        " (leader)"
                    } else {
                        ""
                    },
                    n["cpu_pct_of_one_core"],
                    n["rss_mib"]
                ));
            }
        }
        let o = |v: Option<f64>| v.map(num).unwrap_or_else(|| "–".into());
        let _ = writeln!(
            s,
            "| {} | {}{} | {} | {} | {} | {} | {} | {} | {} | {} |",
            r.workload,
            r.backend,
            if r.safe { "" } else { " (unsafe)" },
            r.config,
            o(r.p50_ms),
            o(r.p99_ms),
            o(r.p999_ms),
            o(r.ops_per_s),
            r.count,
            r.errors,
            notes.join("; ")
        );
    }
    s
}

fn chart(runs: &[Run], png: &Path) -> Result<()> {
    let root = BitMapBackend::new(png, (1600, 1000)).into_drawing_area();
    root.fill(&WHITE)?;
    let (title, body) = root.split_vertically(50);
    title.draw(&Text::new(
        "Warden (mutual TLS; and --insecure) beside etcd, ZooKeeper and Redis (3 nodes on loopback, same run; Redis: 1 node, unsafe)",
        (20, 15),
        ("sans-serif", 22).into_font(),
    ))?;
    let panels = body.split_evenly((2, 2));
    let order: [(&str, &str, bool); 8] = [
        ("Warden", "warden", false),
        ("W. insecure", "warden-insecure", false),
        ("etcd", "etcd", false),
        ("etcd-session", "etcd-session", false),
        ("ZooKeeper", "zookeeper", false),
        ("Redis*", "redis", false),
        ("etcd dflt", "etcd", true),
        ("etcd-sess dflt", "etcd-session", true),
    ];
    type Panel = (&'static str, &'static str, fn(&Run) -> Option<f64>);
    let charts: [Panel; 4] = [
        (
            "uncontended acquire+release p50 (ms, lower is better)",
            "uncontended",
            |r| r.p50_ms,
        ),
        (
            "64 clients, own resources (cycles/s, higher is better)",
            "parallel",
            |r| r.ops_per_s,
        ),
        (
            "16 clients, one resource (grants/s, higher is better)",
            "contended",
            |r| r.ops_per_s,
        ),
        (
            "leader kill -9: time without service (ms, lower is better)",
            "failover",
            |r| extra_f64(r, "unavailable_ms"),
        ),
    ];
    for (area, (caption, workload, get)) in panels.iter().zip(charts) {
        let bars: Vec<(&str, f64)> = order
            .iter()
            .filter_map(|(label, b, d)| value(runs, workload, b, *d, get).map(|v| (*label, v)))
            .collect();
        bar_panel(area, caption, &bars, |label| {
            if label == "Warden" {
                RGBColor(31, 119, 180)
            } else if label == "W. insecure" {
                RGBColor(158, 202, 225)
            } else if label.starts_with("Redis") {
                RGBColor(200, 200, 200)
            } else {
                RGBColor(150, 150, 150)
            }
        })?;
    }
    root.present()?;
    Ok(())
}

/// One bar chart: `bars` (label, value) with the value above each bar, in
/// the colour `color` gives its label; shared with the scale report.
pub fn bar_panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, plotters::coord::Shift>,
    caption: &str,
    bars: &[(&str, f64)],
    color: impl Fn(&str) -> RGBColor,
) -> Result<()>
where
    DB::ErrorType: 'static,
{
    let max = bars.iter().map(|b| b.1).fold(0.0, f64::max).max(1e-3) * 1.2;
    let n = bars.len().max(1);
    let mut chart = ChartBuilder::on(area)
        .caption(caption, ("sans-serif", 20))
        .margin(15)
        .x_label_area_size(35)
        .y_label_area_size(70)
        .build_cartesian_2d(0f64..n as f64, 0f64..max)?;
    let labels: Vec<&str> = bars.iter().map(|b| b.0).collect();
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(n * 2 + 1)
        .x_label_formatter(&|x| {
            let i = x.floor() as usize;
            if (x - i as f64 - 0.5).abs() < 0.01 {
                labels.get(i).map(|s| s.to_string()).unwrap_or_default()
            } else {
                String::new()
            }
        })
        .y_label_formatter(&|y| num(*y))
        .label_style(("sans-serif", 15))
        .draw()?;
    for (i, (label, v)) in bars.iter().enumerate() {
        chart.draw_series(std::iter::once(Rectangle::new(
            [(i as f64 + 0.15, 0.0), (i as f64 + 0.85, *v)],
            color(label).filled(),
        )))?;
        chart.draw_series(std::iter::once(Text::new(
            num(*v),
            (i as f64 + 0.3, *v + max * 0.06),
            ("sans-serif", 15).into_font(),
        )))?;
    }
    Ok(())
}
