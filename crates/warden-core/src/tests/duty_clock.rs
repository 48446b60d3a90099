//! The replicated duty clock (docs/semantics.md "Checkpoints"): remaining
//! TTLs, waits and lock-delays derived from it, never shorter than the truth
//! (S4) and only ever shortening a loaded deadline (L2, etcd issue 9395).

use std::time::Duration;

use super::*;
use crate::deadline::Deadlines;
use crate::effect::Effect;

fn advance(leader: LeaderId, elapsed_ms: u64) -> Command {
    Command::AdvanceClock(AdvanceClock { leader, elapsed_ms })
}

fn ms(v: u64) -> Duration {
    Duration::from_millis(v)
}

// A lease, a wait and a lock-delay count down on the clock from the second
// advance after the entry that set them; an advance of another leader's
// term is ignored, as every leader duty is.
#[test]
fn remaining_times_count_down_from_the_second_advance_after_their_entry() {
    let mut log = Log::new();
    // 1: lease 1 holds "a" (lock-delay 5 s on an involuntary loss).
    log.apply(acquire(hdr(1, 1), "a", new_lease(10_000), 0, 5_000));
    // 2: lease 2 waits on "a" for 20 s.
    log.apply(acquire(hdr(2, 1), "a", new_lease(30_000), 20_000, 0));
    assert!(!log.t.duty_clock().is_running());
    let out = log.apply(advance(L1, 0)); // 3: the clock starts at 0
    assert_eq!(out.effects, vec![Effect::ClockAdvanced { index: 3 }]);
    log.apply(advance(L1, 400)); // 4: 400
    let lease = |log: &Log, id| {
        let l = log.t.lease(id).expect("live");
        log.t.lease_remaining_ms(l)
    };
    // Index 1's second advance after it is index 4: nothing counted yet.
    assert_eq!(lease(&log, 1), 10_000);
    log.apply(advance(L1, 300)); // 5: 700
    assert_eq!(lease(&log, 1), 9_700);
    assert_eq!(lease(&log, 2), 29_700);
    assert_eq!(log.t.all_waiters()[0].2, 19_700);
    // Another leader's advance changes nothing and says nothing.
    log.leader = L2;
    let out = log.apply(advance(L1, 5_000)); // 6
    assert!(out.effects.is_empty());
    assert_eq!(log.t.duty_clock().now_ms(), 700);
    log.leader = L1;
    // 7: lease 1 renews: its full TTL again, counted from index 7.
    log.apply(Command::RenewBatch(RenewBatch { lease_ids: vec![1] }));
    log.apply(advance(L1, 250)); // 8: 950
    log.apply(advance(L1, 250)); // 9: 1,200
    assert_eq!(lease(&log, 1), 10_000, "counted from index 9's clock");
    log.apply(advance(L1, 250)); // 10: 1,450
    assert_eq!(lease(&log, 1), 9_750);
    // 11: lease 1 expires: "a" goes into its 5 s lock-delay (started at 11).
    log.apply(expire(L1, &[(1, 7)]));
    let delay = log.t.lock_delay("a").expect("in lock-delay");
    assert_eq!((delay.start_index, delay.remaining_ms), (11, 5_000));
    log.apply(advance(L1, 100)); // 12
    log.apply(advance(L1, 600)); // 13
    log.apply(advance(L1, 600)); // 14
    assert_eq!(log.t.lock_delay("a").expect("delay").remaining_ms, 4_400);
    assert_eq!(log.t.lock_delays()[0].remaining_ms, 4_400);
}

// L4 with the clock: a Promote re-counts what a lease has left from its own
// index (left now, at least the grace), so the time before it is not counted
// twice and not forgotten either.
#[test]
fn promote_records_what_is_left_now_at_least_the_grace() {
    let mut log = Log::new();
    log.apply(lease_grant(hdr(1, 1), 10_000)); // 1: lease 1
    log.apply(lease_grant(hdr(2, 1), 10_000)); // 2: lease 2
    log.apply(advance(L1, 0)); // 3
    log.apply(advance(L1, 3_000)); // 4
    log.apply(advance(L1, 6_000)); // 5: lease 1 and 2 have 4 s left
    log.apply(Command::RenewBatch(RenewBatch { lease_ids: vec![2] })); // 6
    log.leader = L2;
    log.apply(Command::Promote(Promote {
        leader: L2,
        grace_ms: 1_000,
    })); // 7
    let l1 = log.t.lease(1).expect("live").clone();
    assert_eq!(
        (l1.last_index, l1.remaining_ms, l1.graced),
        (7, 4_000, true)
    );
    assert_eq!(log.t.lease(2).expect("live").remaining_ms, 10_000);
    log.apply(advance(L2, 0)); // 8
    log.apply(advance(L2, 500)); // 9
    log.apply(advance(L2, 3_600)); // 10
                                   // From 7 the second advance is 9: 3,600 ms since.
    assert_eq!(
        log.t
            .lease_remaining_ms(&log.t.lease(1).expect("live").clone()),
        400
    );
    // A second Promote does not grace it again (L2): what is left stays.
    log.leader = LeaderId {
        term: 3,
        node_id: 1,
    };
    log.apply(Command::Promote(Promote {
        leader: log.leader,
        grace_ms: 1_000,
    })); // 11
    let l1 = log.t.lease(1).expect("live");
    assert_eq!(log.t.lease_remaining_ms(l1), 400);
}

// A `Checkpoint` (an older leader's duty, still in the log) applied while
// the clock runs keeps a wait's and a lock-delay's recorded time, which
// counts from their start; it still caps the node-local deadline.
#[test]
fn a_checkpoint_while_the_clock_runs_only_caps_local_deadlines_of_waits() {
    let mut log = Log::new();
    log.apply(acquire(hdr(1, 1), "a", new_lease(10_000), 0, 0)); // 1
    log.apply(acquire(hdr(2, 1), "a", new_lease(30_000), 20_000, 0)); // 2: waits
    log.apply(advance(L1, 0)); // 3
    let out = log.apply(Command::Checkpoint(Checkpoint {
        leader: L1,
        leases: vec![],
        lock_delays: vec![],
        waiters: vec![CheckpointWaiter {
            resource: "a".into(),
            lease_id: 2,
            enqueue_index: 2,
            remaining_ms: 5_000,
        }],
    })); // 4
    assert_eq!(
        out.effects,
        vec![Effect::WaitCapped {
            resource: "a".into(),
            lease_id: 2,
            enqueue_index: 2,
            remaining_ms: 5_000,
        }]
    );
    assert_eq!(log.t.all_waiters()[0].2, 20_000, "recorded time kept");
    // Before any advance a checkpoint records it, as it always did.
    let mut old = Log::new();
    old.apply(acquire(hdr(1, 1), "a", new_lease(10_000), 0, 0));
    old.apply(acquire(hdr(2, 1), "a", new_lease(30_000), 20_000, 0));
    let Command::Checkpoint(mut cp) = Command::Checkpoint(Checkpoint::default()) else {
        unreachable!()
    };
    cp.leader = L1;
    cp.waiters.push(CheckpointWaiter {
        resource: "a".into(),
        lease_id: 2,
        enqueue_index: 2,
        remaining_ms: 5_000,
    });
    old.apply(Command::Checkpoint(cp));
    assert_eq!(old.t.all_waiters()[0].2, 5_000);
}

// Snapshot version 8 carries the clock; a version-7 snapshot loads with the
// clock not running, its remaining times read as recorded.
#[test]
fn snapshots_carry_the_clock_and_version_7_loads_without_it() {
    let mut log = Log::new();
    log.apply(lease_grant(hdr(1, 1), 10_000)); // 1
    log.apply(advance(L1, 0)); // 2
    log.apply(advance(L1, 2_000)); // 3
    log.apply(advance(L1, 1_000)); // 4
    let bytes = log.t.to_snapshot();
    assert_eq!(bytes[0], 8);
    let back = LockTable::from_snapshot(&bytes).expect("loads");
    assert_eq!(back, log.t);
    assert_eq!(back.duty_clock().now_ms(), 3_000);
    assert_eq!(back.lease_remaining_ms(back.lease(1).expect("live")), 9_000);
    let mut v7 = bytes.clone();
    v7[0] = 7;
    let clock_bytes = postcard::to_allocvec(back.duty_clock()).expect("encodes");
    v7.truncate(v7.len() - clock_bytes.len());
    let old = LockTable::from_snapshot(&v7).expect("version 7 loads");
    assert!(!old.duty_clock().is_running());
    assert_eq!(old.lease_remaining_ms(old.lease(1).expect("live")), 10_000);
    // A clock out of order is refused, not loaded.
    let mut bad = log.t.clone();
    bad.clock = crate::duty_clock::DutyClock::default();
    assert!(bad.clock.advance(9, 5));
    let mut bytes = bad.to_snapshot();
    let good_clock = postcard::to_allocvec(&bad.clock).expect("encodes");
    bytes.truncate(bytes.len() - good_clock.len());
    let backwards: std::collections::VecDeque<(LogIndex, u64)> = [(9, 5), (8, 6)].into();
    bytes.extend(postcard::to_allocvec(&backwards).expect("encodes"));
    assert!(matches!(
        LockTable::from_snapshot(&bytes),
        Err(crate::snapshot::SnapshotError::Inconsistent(_))
    ));
}

// A node that loads a table starts each countdown from what the clock
// derives, and every later advance caps those loaded deadlines (only
// shortening) until a renew sets the lease from its own entry: a node that
// was down does not keep the time it missed (L2), and never ends a lease
// early (S4).
#[test]
fn loaded_deadlines_are_capped_at_each_advance_until_renewed() {
    let mut log = Log::new();
    log.apply(lease_grant(hdr(1, 1), 10_000)); // 1: lease 1
    log.apply(acquire(hdr(2, 1), "a", new_lease(10_000), 0, 0)); // 2: lease 2 holds a
    log.apply(acquire(hdr(3, 1), "a", new_lease(30_000), 20_000, 0)); // 3: lease 3 waits
    log.apply(advance(L1, 0)); // 4
    log.apply(advance(L1, 1_000)); // 5
    log.apply(advance(L1, 2_000)); // 6: 2 s since index 5
                                   // Loaded at 100 s on this node's clock.
    let mut d = Deadlines::load(&log.t, Duration::from_secs(100));
    assert_eq!(d.lease_deadline(1), Some(ms(108_000)));
    assert_eq!(d.wait_deadline("a", 3, 3), Some(ms(118_000)));
    assert_eq!(d.loaded_count(), 4);
    // An advance reaches this node's log at 100.5 s: 2.5 s since index 5.
    let out = log.apply(advance(L1, 500)); // 7
    d.on_effects(&out.effects, ms(100_500), ms(100_500));
    d.on_clock_advanced(&log.t, ms(100_500));
    assert_eq!(
        d.lease_deadline(1),
        Some(ms(108_000)),
        "7.5 s from 100.5 s is later"
    );
    // The node was down a while: the next advance carries 10 s it missed.
    let out = log.apply(advance(L1, 10_000)); // 8: 12.5 s since index 5
    d.on_clock_advanced(&log.t, ms(100_600));
    drop(out);
    assert_eq!(
        d.lease_deadline(1),
        Some(ms(100_600)),
        "nothing left: capped"
    );
    assert_eq!(d.wait_deadline("a", 3, 3), Some(ms(108_100)));
    // Lease 2 renews: its deadline comes from its own entry from now on.
    let out = log.apply(Command::RenewBatch(RenewBatch { lease_ids: vec![2] })); // 9
    d.on_effects(&out.effects, ms(101_000), ms(101_000));
    assert_eq!(d.lease_deadline(2), Some(ms(111_000)));
    let out = log.apply(advance(L1, 9_000)); // 10
    d.on_clock_advanced(&log.t, ms(101_100));
    drop(out);
    assert_eq!(
        d.lease_deadline(2),
        Some(ms(111_000)),
        "not loaded any more"
    );
    assert_eq!(d.loaded_count(), 3);
}

// Loaded waits on one resource are capped from one pass over its queue,
// each by its own enqueue index; a wait that left the queue leaves the set.
#[test]
fn loaded_waits_of_one_queue_are_each_capped_by_their_own_start() {
    let mut log = Log::new();
    log.apply(acquire(hdr(1, 1), "a", new_lease(60_000), 0, 0)); // 1: holds a
    log.apply(acquire(hdr(2, 1), "a", new_lease(60_000), 20_000, 0)); // 2: waits
    log.apply(advance(L1, 0)); // 3
    log.apply(advance(L1, 1_000)); // 4
    log.apply(acquire(hdr(3, 1), "a", new_lease(60_000), 20_000, 0)); // 5: waits
    log.apply(advance(L1, 1_000)); // 6
    log.apply(advance(L1, 1_000)); // 7: 2 s since 2's second advance, 0 since 5's
    let mut d = Deadlines::load(&log.t, Duration::from_secs(100));
    assert_eq!(d.wait_deadline("a", 2, 2), Some(ms(118_000)));
    assert_eq!(d.wait_deadline("a", 3, 5), Some(ms(120_000)));
    // Down for 5 s: the next advance it applies carries them.
    log.apply(advance(L1, 5_000)); // 8
    d.on_clock_advanced(&log.t, ms(105_000));
    assert_eq!(
        d.wait_deadline("a", 2, 2),
        Some(ms(118_000)),
        "7 s from 2 s on: 20 - 7 = 13"
    );
    assert_eq!(
        d.wait_deadline("a", 3, 5),
        Some(ms(120_000)),
        "15 s left from 105 s"
    );
    log.apply(advance(L1, 4_000)); // 9: 11 s since 2's, 9 s since 5's
    d.on_clock_advanced(&log.t, ms(105_000));
    assert_eq!(d.wait_deadline("a", 2, 2), Some(ms(114_000)));
    assert_eq!(d.wait_deadline("a", 3, 5), Some(ms(116_000)));
    // Lease 2 is revoked: it and its wait leave the loaded set.
    log.apply(Command::Revoke(Revoke {
        header: hdr(2, 2),
        lease_id: 2,
        due: None,
    })); // 10
    d.on_clock_advanced(&log.t, ms(105_000));
    assert_eq!(d.loaded_count(), 3, "leases 1 and 3, and lease 3's wait");
}
