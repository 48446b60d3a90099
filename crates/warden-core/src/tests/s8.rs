//! S8 with cluster time ("Time"): a waiter whose wait or lease has ended is
//! never granted, for every kind of lock and any queue length, even when
//! the entry's sweep has not reached it: the hand-off skips and removes
//! ended waiters and grants the first live one in the same entry.

use super::*;
use crate::effect::{Effect, WaiterRemovedReason};
use crate::expiry::MAX_SWEEP_PER_ENTRY;

/// How many ended waiters stand at the front of the queue (more than the
/// 64 of the old hand-off lookahead).
const ENDED: u64 = 100;

/// The grants an entry made: (resource, lease).
fn grants(a: &Applied) -> Vec<(String, LeaseId)> {
    a.effects
        .iter()
        .filter_map(|e| match e {
            Effect::Granted {
                resource, lease_id, ..
            } => Some((resource.clone(), *lease_id)),
            _ => None,
        })
        .collect()
}

/// The lease of a queued acquire of any shape.
fn queued_lease(a: &Applied) -> LeaseId {
    let reply = match &a.response {
        Response::Acquire(reply)
        | Response::AcquireKind { reply, .. }
        | Response::AcquireMulti { reply, .. } => reply,
        other => panic!("expected a queued acquire, got {other:?}"),
    };
    match &reply.outcome {
        AcquireOutcome::Queued { lease_id, .. } => *lease_id,
        other => panic!("expected a queued acquire, got {other:?}"),
    }
}

/// The queue of `resource` as the table stores it (ended waiters included).
fn raw_queue(log: &Log, resource: &str) -> Vec<LeaseId> {
    log.t
        .resource(resource)
        .map(|s| s.waiters.iter().map(|w| w.lease_id).collect())
        .unwrap_or_default()
}

/// One kind's scenario: `hold` makes the holder (granted at 0 with a long
/// lease); at 10 ms, `wait(client, ttl, wait_ms, i)` queues ENDED waiters
/// whose lease (even i: TTL 1 s) or wait (odd i: 1 s) ends at 1,010 ms,
/// then `live` waiters with long leases and waits. 300 filler leases end
/// at 1,000 ms, before them in instant order, so the release's entry at
/// 2 s sweeps 250 fillers and none of the waiters: its hand-off alone has
/// to skip them. Returns (holder lease, holder token, live waiters' leases,
/// the release's entry).
fn scenario(
    hold: impl Fn(&mut Log) -> (LeaseId, FencingToken),
    wait: impl Fn(RequestHeader, u64, u64, u64) -> Command,
    live: u64,
    resource: &str,
) -> (Log, Vec<LeaseId>, Applied) {
    let mut log = Log::new();
    let fillers = log.fillers(300, 1_000);
    let (holder, token) = hold(&mut log);
    log.advance(10);
    for i in 0..ENDED {
        let (ttl, wait_ms) = if i % 2 == 0 {
            (1_000, 60_000)
        } else {
            (60_000, 1_000)
        };
        let out = log.apply_fast(wait(hdr(1_000 + i, 1), ttl, wait_ms, i));
        queued_lease(&out);
    }
    let live: Vec<LeaseId> = (0..live)
        .map(|i| queued_lease(&log.apply(wait(hdr(5_000 + i, 1), 60_000, 60_000, i))))
        .collect();
    assert_eq!(
        raw_queue(&log, resource).len() as u64,
        ENDED + live.len() as u64
    );
    // At 2 s every one of the first ENDED waiters has ended (its lease or
    // its wait), though nothing has swept them.
    log.advance_to(2_000);
    let queue = log
        .t
        .resource(resource)
        .map(|s| s.waiters.clone())
        .unwrap_or_default();
    for w in &queue[..ENDED as usize] {
        assert!(w.deadline_ms <= 2_000 || !log.t.lease_live_at(w.lease_id, 2_000));
    }
    for w in &queue[ENDED as usize..] {
        assert!(w.deadline_ms > 2_000 && log.t.lease_live_at(w.lease_id, 2_000));
    }
    let out = log.apply(release(hdr(1, 99), Some(resource), holder, Some(token)));
    assert!(
        matches!(out.response, Response::Released { .. }),
        "{:?}",
        out.response
    );
    // The sweep did its bound of fillers and no more.
    let left = fillers
        .iter()
        .filter(|id| log.t.leases.contains_key(id))
        .count();
    assert_eq!(left, 300 - MAX_SWEEP_PER_ENTRY);
    // Every ended waiter left the queue in this entry, none granted.
    let removed: Vec<(LeaseId, WaiterRemovedReason)> = out
        .effects
        .iter()
        .filter_map(|e| match e {
            Effect::WaiterRemoved {
                lease_id, reason, ..
            } if *reason != WaiterRemovedReason::Granted => Some((*lease_id, *reason)),
            _ => None,
        })
        .collect();
    let first_waiter = holder + 1;
    let expected: Vec<(LeaseId, WaiterRemovedReason)> = (0..ENDED)
        .map(|i| {
            let reason = if i % 2 == 0 {
                WaiterRemovedReason::LeaseEnded
            } else {
                WaiterRemovedReason::TimedOut
            };
            (first_waiter + i, reason)
        })
        .collect();
    // A multi-lock waiter leaves both queues: each removal is reported per
    // resource, so compare the distinct waiters in order.
    let mut distinct = removed.clone();
    distinct.dedup();
    assert_eq!(distinct, expected);
    for (_, lease) in grants(&out) {
        assert!(live.contains(&lease), "S8: ended lease {lease} granted");
    }
    (log, live, out)
}

impl Log {
    /// Moves the clock to `at_ms` (never back), no entry.
    fn advance_to(&mut self, at_ms: u64) {
        self.now_ms = self.now_ms.max(at_ms);
    }
}

// S8, mutex: 100 ended waiters at the front; the release hands the lock to
// the first live waiter in the same entry.
#[test]
fn a_mutex_skips_100_ended_waiters_in_the_releasing_entry() {
    let (log, live, out) = scenario(
        |log| granted(&log.apply(acquire(hdr(1, 1), "m", new_lease(600_000), 0, 0))),
        |h, ttl, wait, _| acquire(h, "m", new_lease(ttl), wait, 0),
        2,
        "m",
    );
    assert_eq!(grants(&out), vec![("m".to_owned(), live[0])]);
    assert_eq!(log.t.holder("m").map(|h| h.lease_id), Some(live[0]));
    assert_eq!(raw_queue(&log, "m"), vec![live[1]]);
}

// S8, read-write lock: ended readers and writers at the front; the writer's
// release grants the two live readers at the head together.
#[test]
fn a_read_write_lock_skips_100_ended_waiters_in_the_releasing_entry() {
    let rw = |h, ttl, wait, mode| {
        acquire_kind(h, "rw", new_lease(ttl), wait, 0, LockKind::ReadWrite, mode)
    };
    let (log, live, out) = scenario(
        |log| granted(&log.apply(rw(hdr(1, 1), 600_000, 0, Mode::Exclusive))),
        |h, ttl, wait, i| {
            let mode = if i % 3 == 0 {
                Mode::Exclusive
            } else {
                Mode::Shared
            };
            // The live ones (i = 0, 1 after the ended ones) are readers.
            let mode = if ttl == 60_000 && wait == 60_000 {
                Mode::Shared
            } else {
                mode
            };
            rw(h, ttl, wait, mode)
        },
        2,
        "rw",
    );
    assert_eq!(
        grants(&out),
        vec![("rw".to_owned(), live[0]), ("rw".to_owned(), live[1])]
    );
    assert_eq!(
        log.t
            .holders("rw")
            .iter()
            .map(|h| (h.lease_id, h.mode))
            .collect::<Vec<_>>(),
        vec![(live[0], Mode::Shared), (live[1], Mode::Shared)]
    );
    assert!(raw_queue(&log, "rw").is_empty());
}

// S8, semaphore of 2 permits, both held: one permit's release gives its
// slot to the first live waiter, skipping 100 ended ones.
#[test]
fn a_semaphore_skips_100_ended_waiters_in_the_releasing_entry() {
    let sem = LockKind::Semaphore { limit: 2 };
    let permit =
        move |h, ttl, wait| acquire_kind(h, "s", new_lease(ttl), wait, 0, sem, Mode::Shared);
    let (log, live, out) = scenario(
        |log| {
            granted(&log.apply(permit(hdr(2, 1), 600_000, 0)));
            granted(&log.apply(permit(hdr(1, 1), 600_000, 0)))
        },
        |h, ttl, wait, _| permit(h, ttl, wait),
        2,
        "s",
    );
    assert_eq!(grants(&out), vec![("s".to_owned(), live[0])]);
    assert_eq!(log.t.holders("s").len(), 2);
    assert!(log.t.holders("s").iter().any(|h| h.lease_id == live[0]));
    assert_eq!(raw_queue(&log, "s"), vec![live[1]]);
}

// S8, multi-locks: 100 ended multi-locks on (m1, m2) at the front of both
// queues; the release of m1 grants the first live multi-lock both, in the
// same entry.
#[test]
fn a_multi_lock_queue_skips_100_ended_waiters_in_the_releasing_entry() {
    let multi = |h: RequestHeader, ttl: u64, wait: u64| {
        let resources = vec!["m1".into(), "m2".into()];
        Command::Acquire(Acquire::multi(h, resources, new_lease(ttl), wait, 0))
    };
    let (log, live, out) = scenario(
        |log| granted(&log.apply(acquire(hdr(1, 1), "m1", new_lease(600_000), 0, 0))),
        |h, ttl, wait, _| multi(h, ttl, wait),
        2,
        "m1",
    );
    assert_eq!(
        grants(&out),
        vec![("m1".to_owned(), live[0]), ("m2".to_owned(), live[0])]
    );
    assert_eq!(log.t.holder("m2").map(|h| h.lease_id), Some(live[0]));
    assert_eq!(raw_queue(&log, "m1"), vec![live[1]]);
    assert_eq!(raw_queue(&log, "m2"), vec![live[1]]);
}
