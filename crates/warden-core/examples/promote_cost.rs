//! Apply cost of a new leader's promotion, one `Promote` over every lease
//! against `PromoteSlice` entries of `MAX_LEASES_PER_PROMOTE_ENTRY` leases
//! (docs/performance.md, "Promotion in slices"): the lock table's apply and
//! the deadline table's grace and cap, per entry, with the duty clock
//! running. Release build:
//!
//! ```text
//! cargo run --release -p warden-core --example promote_cost -- 100000
//! ```
//!
//! Prints the slowest entry of each way and their totals; the leases each
//! hold one lock.

use std::time::{Duration, Instant};

use warden_core::limits::{MAX_LEASES_CEILING, MAX_LEASES_PER_PROMOTE_ENTRY};
use warden_core::types::{
    Acquire, AdvanceClock, AuthChange, AuthOp, Authorized, ClusterLimits, Command, LeaderId,
    LeaseSpec, Promote, PromoteSlice, RequestHeader,
};
use warden_core::{Deadlines, LockTable};

const OLD: LeaderId = LeaderId {
    term: 1,
    node_id: 1,
};
const NEW: LeaderId = LeaderId {
    term: 2,
    node_id: 2,
};

/// A table of `leases` leases, each holding one lock, with the duty clock
/// running, and its deadlines; returns the next log index too.
fn filled(leases: u64) -> (LockTable, Deadlines, u64) {
    let mut table = LockTable::new();
    let mut deadlines = Deadlines::new();
    let stamp = Duration::from_secs(1);
    // Anonymous (an insecure cluster's caller) may raise the lease cap.
    let raise = Command::Authorized(Authorized {
        principal: None,
        command: Box::new(Command::AuthChange(AuthChange {
            header: RequestHeader {
                client_id: 5_000,
                request_id: 1,
                acked_request_id: 0,
            },
            op: AuthOp::SetLimits(ClusterLimits {
                max_leases: MAX_LEASES_CEILING,
                ..ClusterLimits::default()
            }),
            at_unix_ms: 0,
        })),
    });
    table.apply(1, OLD, &raise);
    let mut index = 1;
    for i in 0..leases {
        index += 1;
        let request_id = i / 1_000 + 1;
        let cmd = Command::Acquire(Acquire {
            header: RequestHeader {
                client_id: i % 1_000 + 1,
                request_id,
                acked_request_id: request_id - 1,
            },
            resource: format!("r{i}"),
            lease: LeaseSpec::New { ttl_ms: 12_000 },
            wait_timeout_ms: 0,
            lock_delay_ms: 0,
            due: None,
        });
        let applied = table.apply(index, OLD, &cmd);
        deadlines.on_effects(applied.effects.iter(), stamp, stamp);
    }
    let mut after_index = None;
    for elapsed_ms in [0, 10] {
        index += 1;
        let cmd = Command::AdvanceClock(AdvanceClock {
            leader: OLD,
            after_index,
            elapsed_ms,
        });
        table.apply(index, OLD, &cmd);
        after_index = Some(index);
    }
    assert_eq!(
        table.lease_count(),
        leases as usize,
        "the lease cap refused some"
    );
    (table, deadlines, index + 1)
}

fn main() {
    let leases: u64 = std::env::args()
        .nth(1)
        .map(|s| s.parse().expect("a number of leases"))
        .unwrap_or(100_000);
    let stamp = Duration::from_secs(2);

    let (mut table, mut deadlines, index) = filled(leases);
    let start = Instant::now();
    let cmd = Command::Promote(Promote {
        leader: NEW,
        grace_ms: 1_000,
    });
    let applied = table.apply(index, NEW, &cmd);
    deadlines.on_effects(applied.effects.iter(), stamp, stamp);
    deadlines.cap_all(&table, stamp);
    let one = start.elapsed();
    println!(
        "one Promote over {leases} leases: {:.2} ms, {} graced",
        one.as_secs_f64() * 1e3,
        applied.effects.len()
    );

    let (mut table, mut deadlines, mut index) = filled(leases);
    let bounds: Vec<_> = table
        .lease_id_bounds(0, MAX_LEASES_PER_PROMOTE_ENTRY)
        .collect();
    let mut froms = vec![0];
    froms.extend(bounds.iter().copied());
    let (mut total, mut slowest, mut graced) = (Duration::ZERO, Duration::ZERO, 0);
    let mut started_at = 0;
    for (k, from_lease) in froms.iter().enumerate() {
        let slice = PromoteSlice {
            leader: NEW,
            grace_ms: 1_000,
            started_at,
            from_lease: *from_lease,
            to_lease: bounds.get(k).copied(),
        };
        let start = Instant::now();
        let applied = table.apply(index, NEW, &Command::PromoteSlice(slice));
        deadlines.on_effects(applied.effects.iter(), stamp, stamp);
        let ids = applied
            .effects
            .iter()
            .filter_map(|e| match e {
                warden_core::Effect::LeaseGraced { lease_id, .. } => Some(*lease_id),
                _ => None,
            })
            .collect();
        deadlines.cap_promote_slice(&table, stamp, &slice, index, &ids);
        let took = start.elapsed();
        total += took;
        slowest = slowest.max(took);
        graced += applied.effects.len();
        if started_at == 0 {
            started_at = index;
        }
        index += 1;
    }
    println!(
        "{} PromoteSlice entries of at most {MAX_LEASES_PER_PROMOTE_ENTRY}: slowest {:.2} ms, total {:.2} ms, {graced} graced",
        froms.len(),
        slowest.as_secs_f64() * 1e3,
        total.as_secs_f64() * 1e3
    );
    assert_eq!(table.last_promote().map(|(l, _)| l), Some(NEW));
}
