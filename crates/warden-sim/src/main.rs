//! `warden-sim`: runs seeds of the deterministic simulation and exits 0 only
//! if every checker passed on every seed (see docs/testing.md).

use std::process::ExitCode;
use std::time::Instant;

use clap::Parser;
use warden_sim::{run, Bugs, RunConfig, Scenario, BUG_NAMES};

/// Deterministic simulation of a Warden cluster under faults.
#[derive(Parser, Debug)]
#[command(name = "warden-sim")]
struct Args {
    /// First seed of a sweep.
    #[arg(long, default_value_t = 1)]
    seed_start: u64,
    /// Number of seeds in the sweep.
    #[arg(long, default_value_t = 10)]
    seeds: u64,
    /// Replay one seed (overrides --seed-start/--seeds).
    #[arg(long)]
    seed: Option<u64>,
    /// Reintroduce a known bug (repeatable); see --list-bugs.
    #[arg(long = "inject-bug")]
    inject_bug: Vec<String>,
    /// The scenario: random (default) or a named one.
    #[arg(long, default_value = "random")]
    scenario: String,
    /// Simulated seconds of faults per seed (random runs then heal for
    /// 20 s). Default: 60 for random runs; a named scenario's own length.
    #[arg(long)]
    fault_secs: Option<u64>,
    /// List the bug names and scenarios, then exit.
    #[arg(long)]
    list_bugs: bool,
    /// Stop at the first failing seed.
    #[arg(long)]
    fail_fast: bool,
}

fn main() -> ExitCode {
    let args = Args::parse();
    if args.list_bugs {
        println!("bugs: {}", BUG_NAMES.join(", "));
        println!("scenarios: {}", Scenario::NAMES.join(", "));
        return ExitCode::SUCCESS;
    }
    let mut bugs = Bugs::default();
    for b in &args.inject_bug {
        if let Err(e) = bugs.add(b) {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    }
    let scenario = match Scenario::parse(&args.scenario) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    let fault_secs = args
        .fault_secs
        .unwrap_or_else(|| scenario.default_fault_secs());
    let seeds: Vec<u64> = match args.seed {
        Some(s) => vec![s],
        None => (args.seed_start..args.seed_start.saturating_add(args.seeds)).collect(),
    };
    let mut failed = Vec::new();
    let started = Instant::now();
    for seed in seeds.iter().copied() {
        let t = Instant::now();
        let out = run(RunConfig {
            seed,
            scenario,
            bugs,
            fault_secs,
        });
        println!(
            "seed {seed}: {} nodes, {:.1} s simulated in {:.2} s, {} applies, {} calls ok, {} failed: {}",
            out.nodes,
            out.simulated.as_secs_f64(),
            t.elapsed().as_secs_f64(),
            out.applies,
            out.calls_ok,
            out.calls_failed,
            if out.violations.is_empty() { "ok" } else { "FAILED" }
        );
        if let Some((fastest, slowest)) = out.uncontended_acquire {
            println!(
                "  uncontended acquire: {} ms fastest, {} ms slowest (send to acknowledgement)",
                fastest.as_millis(),
                slowest.as_millis()
            );
        }
        if !out.violations.is_empty() {
            for v in &out.violations {
                println!(
                    "  {} at {:.3} s: {}",
                    v.property,
                    v.at.as_secs_f64(),
                    v.message
                );
            }
            let mut cmd = format!(
                "cargo run -p warden-sim --release -- --seed {seed} --scenario {} --fault-secs {}",
                args.scenario, fault_secs
            );
            for b in &args.inject_bug {
                cmd.push_str(&format!(" --inject-bug {b}"));
            }
            println!("  replay: {cmd}");
            failed.push(seed);
            if args.fail_fast {
                break;
            }
        }
    }
    println!(
        "{} seeds, {} failed{}, {:.1} s",
        seeds.len(),
        failed.len(),
        if failed.is_empty() {
            String::new()
        } else {
            format!(" ({failed:?})")
        },
        started.elapsed().as_secs_f64()
    );
    if failed.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
