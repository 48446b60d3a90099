//! What the leader's look for due work costs as the number of leases grows.
//!
//! The leader builds a due list ([`Deadlines::due`]) for every entry that can
//! hand a resource off, under the state machine's lock, and asks for the next
//! deadline ([`Deadlines::next_deadline`]) for its timer. Both once walked
//! every lease; now they read a time index. This measures both against the
//! walk they replaced (a pass over a map of lease id → deadline, run side by
//! side on the same leases), with nothing due, at 1,000 to 100,000 leases
//! (the table's default cap on live leases).
//!
//! ```sh
//! cargo run --release -p warden-core --example due_bench
//! ```
//!
//! Prints one line per size: microseconds per call, indexed and walked, and
//! their ratio.

use std::collections::BTreeMap;
use std::hint::black_box;
use std::time::{Duration, Instant};

use warden_core::types::{Command, LeaderId, LeaseGrant, RequestHeader};
use warden_core::{Deadlines, LockTable};

const LEADER: LeaderId = LeaderId {
    term: 1,
    node_id: 1,
};

/// Mean microseconds per call of `f` over `calls` calls.
fn per_call_us(calls: u32, mut f: impl FnMut()) -> f64 {
    let t = Instant::now();
    for _ in 0..calls {
        f();
    }
    t.elapsed().as_secs_f64() * 1e6 / f64::from(calls)
}

fn main() {
    println!("| leases | due() µs, indexed | due() µs, walk | walk ÷ indexed | next_deadline() µs, indexed | walk |");
    println!("|---|---|---|---|---|---|");
    for leases in [1_000u64, 10_000, 30_000, 100_000] {
        let mut table = LockTable::new();
        let mut deadlines = Deadlines::new();
        // The walk's map, filled with the same deadlines.
        let mut walked: BTreeMap<u64, Duration> = BTreeMap::new();
        for i in 1..=leases {
            // TTLs of 60–70 s, stamped over the first 10 s: spread deadlines.
            let cmd = Command::LeaseGrant(LeaseGrant {
                header: RequestHeader {
                    client_id: 1,
                    request_id: i,
                    acked_request_id: i - 1,
                },
                ttl_ms: 60_000 + i % 10_000,
            });
            let stamp = Duration::from_millis(i % 10_000);
            let applied = table.apply(i, LEADER, &cmd);
            deadlines.on_effects(&applied.effects, stamp, stamp);
            for e in &applied.effects {
                if let warden_core::Effect::LeaseSet { lease_id, ttl_ms } = e {
                    walked.insert(*lease_id, stamp + Duration::from_millis(*ttl_ms));
                }
            }
        }
        assert_eq!(
            deadlines.lease_count() as u64,
            leases,
            "every lease has a deadline"
        );
        let now = Duration::from_secs(30);
        let calls = (10_000_000 / leases).clamp(100, 100_000) as u32;
        let indexed = per_call_us(calls, || {
            black_box(deadlines.due(&table, LEADER, black_box(now)));
        });
        let walk = per_call_us(calls, || {
            let due: Vec<u64> = walked
                .iter()
                .filter(|(_, d)| **d <= now)
                .filter(|(id, _)| table.lease(**id).is_some())
                .map(|(id, _)| *id)
                .collect();
            black_box(due);
        });
        let next_indexed = per_call_us(calls, || {
            black_box(deadlines.next_deadline());
        });
        let next_walk = per_call_us(calls, || {
            black_box(walked.values().min());
        });
        println!(
            "| {leases} | {indexed:.3} | {walk:.1} | {:.0}× | {next_indexed:.3} | {next_walk:.1} |",
            walk / indexed
        );
    }
}
