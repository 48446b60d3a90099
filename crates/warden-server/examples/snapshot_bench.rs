//! Snapshot build cost at a large lock table, new path against old, in one
//! run: `cargo run --release -p warden-server --example snapshot_bench
//! --locked -- --locks 1000000 [--after 10000]`.
//!
//! Fills a node's log and state machine (a temp data dir) with `--locks`
//! held locks, each on its own lease (entry 0 raises the cluster's lease
//! limit to its ceiling, 1,000,000; then one acquire per entry), takes a
//! first snapshot, applies `--after` more entries (acquires of more
//! resources on existing leases), and then builds a snapshot both ways:
//!
//! - new: `build_snapshot` (the machine's lock held only to record the
//!   applied id and membership; the table replayed from the stored
//!   snapshot and the log after it, encoded and stored in 1 MiB chunks on
//!   tokio's blocking pool);
//! - old: the table encoded under the machine's lock and written as one
//!   redb value by a synchronous write on the runtime thread.
//!
//! For each it prints the machine-lock hold (the longest a concurrent thread
//! waited for the lock, and for the new path the build's own
//! `warden_snapshot_lock_hold_seconds`), the whole build, the snapshot's
//! bytes, and the longest stall of a ticker task on the same current-thread
//! runtime (how long the build kept the runtime from running anything else).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use openraft::impls::leader_id_adv::LeaderId as RaftLeaderId;
use openraft::storage::{IOFlushed, RaftLogStorage, RaftStateMachine};
use openraft::{EntryPayload, RaftSnapshotBuilder};
use warden_core::limits::MAX_LEASES_CEILING;
use warden_core::types::{
    Acquire, AuthChange, AuthOp, Authorized, ClusterLimits, Command, LeaderId, LeaseSpec, LogEntry,
    RequestHeader, Stamp,
};
use warden_server::clock::{BootClock, NodeClock};
use warden_server::store::{Db, LogStore, MaxStamp, StateMachineStore};
use warden_server::types::{Entry, LogId, Request, SnapshotMeta};

/// Entries appended and applied per round while filling.
const FILL_BATCH: u64 = 2_000;

fn arg(name: &str, default: u64) -> u64 {
    let args: Vec<String> = std::env::args().collect();
    match args.iter().position(|a| a == name) {
        Some(i) => args
            .get(i + 1)
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("{name} takes a number")),
        None => default,
    }
}

/// Entry `index`: 0 raises the cluster's lease limit to its ceiling (an
/// auth change, as `warden cluster limits` makes); 1..=locks each acquire
/// one resource on a new lease; later ones acquire one more resource on an
/// existing lease.
fn entry(index: u64, locks: u64) -> Entry {
    let header = RequestHeader {
        client_id: 1 + index / 1_000,
        request_id: 1 + index % 1_000,
        acked_request_id: index % 1_000,
    };
    let cmd = if index == 0 {
        Command::Authorized(Authorized {
            principal: None,
            command: Box::new(Command::AuthChange(AuthChange {
                header,
                op: AuthOp::SetLimits(ClusterLimits {
                    max_leases: MAX_LEASES_CEILING,
                    ..ClusterLimits::default()
                }),
                at_unix_ms: 0,
            })),
        })
    } else {
        Command::Acquire(Acquire::mutex(
            header,
            format!("bench/resource/{index:010}"),
            if index <= locks {
                LeaseSpec::New { ttl_ms: 3_600_000 }
            } else {
                LeaseSpec::Existing {
                    lease_id: 1 + index % locks,
                }
            },
            0,
            0,
        ))
    };
    Entry {
        log_id: LogId::new(
            RaftLeaderId {
                term: 1,
                node_id: 1,
            },
            index,
        ),
        payload: EntryPayload::Normal(Request(LogEntry {
            stamp: Stamp {
                leader: LeaderId {
                    term: 1,
                    node_id: 1,
                },
                at_ms: index,
            },
            command: cmd,
        })),
    }
}

/// Appends and applies entries `from..to`.
async fn fill(log: &mut LogStore, sm: &mut StateMachineStore, from: u64, to: u64, locks: u64) {
    let mut i = from;
    while i < to {
        let end = (i + FILL_BATCH).min(to);
        let entries: Vec<Entry> = (i..end).map(|i| entry(i, locks)).collect();
        log.append(entries.clone(), IOFlushed::noop())
            .await
            .expect("append");
        sm.apply(futures::stream::iter(
            entries.into_iter().map(|e| Ok((e, None))),
        ))
        .await
        .expect("apply");
        i = end;
    }
}

/// What one build cost.
struct Cost {
    lock_wait_max: Duration,
    total: Duration,
    bytes: usize,
    runtime_stall_max: Duration,
}

/// Runs `build` on this (current-thread) runtime with a ticker task beside
/// it and a thread that keeps taking the machine's lock.
async fn measure<F, Fut>(sm: &StateMachineStore, build: F) -> Cost
where
    F: FnOnce() -> Fut,
    Fut: std::future::Future<Output = usize>,
{
    let stop = Arc::new(AtomicBool::new(false));
    let stall_ns = Arc::new(AtomicU64::new(0));
    let ticker = {
        let (stop, stall_ns) = (stop.clone(), stall_ns.clone());
        tokio::spawn(async move {
            let mut last = Instant::now();
            while !stop.load(Ordering::Relaxed) {
                tokio::time::sleep(Duration::from_millis(1)).await;
                let now = Instant::now();
                let gap = now
                    .duration_since(last)
                    .saturating_sub(Duration::from_millis(1));
                stall_ns.fetch_max(gap.as_nanos() as u64, Ordering::Relaxed);
                last = now;
            }
        })
    };
    let prober = {
        let (stop, shared) = (stop.clone(), sm.shared.clone());
        std::thread::spawn(move || {
            let mut max = Duration::ZERO;
            while !stop.load(Ordering::Relaxed) {
                let t = Instant::now();
                drop(shared.machine.lock().expect("machine"));
                max = max.max(t.elapsed());
                std::thread::sleep(Duration::from_micros(200));
            }
            max
        })
    };
    // Let both start.
    tokio::time::sleep(Duration::from_millis(20)).await;
    let started = Instant::now();
    let bytes = build().await;
    let total = started.elapsed();
    tokio::time::sleep(Duration::from_millis(20)).await;
    stop.store(true, Ordering::Relaxed);
    ticker.await.expect("ticker");
    let lock_wait_max = prober.join().expect("prober");
    Cost {
        lock_wait_max,
        total,
        bytes,
        runtime_stall_max: Duration::from_nanos(stall_ns.load(Ordering::Relaxed)),
    }
}

/// The build as it was before: the table encoded under the lock, then one
/// redb value written synchronously on the runtime thread.
async fn old_build(sm: &StateMachineStore, db: &Db) -> usize {
    let (meta, data) = {
        let m = sm.shared.machine.lock().expect("machine");
        let meta = SnapshotMeta {
            last_log_id: m.last_applied,
            last_membership: m.membership.clone(),
        };
        (meta, m.table.to_snapshot())
    };
    let stored = postcard::to_allocvec(&(meta, &data)).expect("encode");
    db.put_meta("bench_old_snapshot", &stored).expect("write");
    data.len()
}

fn hold_seconds(sm: &StateMachineStore) -> f64 {
    let text = sm.shared.metrics.render();
    text.lines()
        .find_map(|l| {
            l.strip_prefix("warden_snapshot_lock_hold_seconds_sum ")?
                .parse()
                .ok()
        })
        .unwrap_or(0.0)
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1e3)
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let locks = arg("--locks", 1_000_000);
    let after = arg("--after", 10_000);
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Db::open(dir.path()).expect("db");
    let clock = NodeClock::new(BootClock::shared());
    let max_stamp = MaxStamp::default();
    let mut log = LogStore::new(db.clone(), max_stamp.clone()).expect("log");
    let mut sm = StateMachineStore::open(db.clone(), clock, max_stamp).expect("sm");

    let t = Instant::now();
    fill(&mut log, &mut sm, 0, locks + 1, locks).await;
    println!("filled {locks} held locks in {}", ms(t.elapsed()));
    let first = measure(&sm, || async {
        let mut b = sm.clone();
        b.build_snapshot().await.expect("build").snapshot.len()
    })
    .await;
    println!(
        "first snapshot (replay of the whole log, {locks} entries): total {}, {} bytes",
        ms(first.total),
        first.bytes
    );
    fill(&mut log, &mut sm, locks + 1, locks + 1 + after, locks).await;
    let held: usize = sm
        .shared
        .machine
        .lock()
        .expect("machine")
        .table
        .leases()
        .count();
    println!("{held} live leases");
    println!("applied {after} more entries");

    let before = hold_seconds(&sm);
    let new = measure(&sm, || async {
        let mut b = sm.clone();
        b.build_snapshot().await.expect("build").snapshot.len()
    })
    .await;
    let new_hold = Duration::from_secs_f64(hold_seconds(&sm) - before);
    let old = measure(&sm, || old_build(&sm, &db)).await;

    println!();
    println!(
        "{:<44} {:>16} {:>16}",
        format!(
            "{} locks, {after} entries after the snapshot",
            locks + after
        ),
        "new",
        "old"
    );
    println!(
        "{:<44} {:>16} {:>16}",
        "machine lock: longest wait of another thread",
        ms(new.lock_wait_max),
        ms(old.lock_wait_max)
    );
    println!(
        "{:<44} {:>16} {:>16}",
        "machine lock: held by the build (metric)",
        ms(new_hold),
        "-"
    );
    println!(
        "{:<44} {:>16} {:>16}",
        "build + store, total",
        ms(new.total),
        ms(old.total)
    );
    println!(
        "{:<44} {:>16} {:>16}",
        "snapshot bytes", new.bytes, old.bytes
    );
    println!(
        "{:<44} {:>16} {:>16}",
        "runtime: longest ticker stall",
        ms(new.runtime_stall_max),
        ms(old.runtime_stall_max)
    );
    drop(log);
}
