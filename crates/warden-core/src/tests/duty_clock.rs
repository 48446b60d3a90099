//! The replicated duty clock (docs/semantics.md "Checkpoints"): remaining
//! TTLs, waits and lock-delays derived from it, never shorter than the truth
//! (S4) and only ever shortening a loaded deadline (L2, etcd issue 9395).

use std::time::Duration;

use super::*;
use crate::deadline::Deadlines;
use crate::effect::Effect;

impl Log {
    /// Applies an advance by `leader` of `elapsed_ms`, measured from the
    /// clock's last advance.
    fn advance(&mut self, leader: LeaderId, elapsed_ms: u64) -> crate::table::Applied {
        let after_index = self.t.duty_clock().last_advance_index();
        self.apply(Command::AdvanceClock(AdvanceClock {
            leader,
            after_index,
            elapsed_ms,
        }))
    }

    /// Applies `leader`'s `Promote` with a 1 s grace, as the log's leader
    /// from now on.
    fn promote(&mut self, leader: LeaderId) -> crate::table::Applied {
        self.leader = leader;
        self.apply(Command::Promote(Promote {
            leader,
            grace_ms: 1_000,
        }))
    }
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
    let out = log.advance(L1, 0); // 3: the clock starts at 0
    assert_eq!(out.effects, vec![Effect::ClockAdvanced { index: 3 }]);
    log.advance(L1, 400); // 4: 400
    let lease = |log: &Log, id| {
        let l = log.t.lease(id).expect("live");
        log.t.lease_remaining_ms(l)
    };
    // Index 1's second advance after it is index 4: nothing counted yet.
    assert_eq!(lease(&log, 1), 10_000);
    log.advance(L1, 300); // 5: 700
    assert_eq!(lease(&log, 1), 9_700);
    assert_eq!(lease(&log, 2), 29_700);
    assert_eq!(log.t.all_waiters()[0].2, 19_700);
    // Another leader's advance changes nothing and says nothing.
    log.leader = L2;
    let out = log.advance(L1, 5_000); // 6
    assert!(out.effects.is_empty());
    assert_eq!(log.t.duty_clock().now_ms(), 700);
    log.leader = L1;
    // 7: lease 1 renews: its full TTL again, counted from index 7.
    log.apply(Command::RenewBatch(RenewBatch { lease_ids: vec![1] }));
    log.advance(L1, 250); // 8: 950
    log.advance(L1, 250); // 9: 1,200
    assert_eq!(lease(&log, 1), 10_000, "counted from index 9's clock");
    log.advance(L1, 250); // 10: 1,450
    assert_eq!(lease(&log, 1), 9_750);
    // 11: lease 1 expires: "a" goes into its 5 s lock-delay (started at 11).
    log.apply(expire(L1, &[(1, 7)]));
    let delay = log.t.lock_delay("a").expect("in lock-delay");
    assert_eq!((delay.start_index, delay.remaining_ms), (11, 5_000));
    log.advance(L1, 100); // 12
    log.advance(L1, 600); // 13
    log.advance(L1, 600); // 14
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
    log.advance(L1, 0); // 3
    log.advance(L1, 3_000); // 4
    log.advance(L1, 6_000); // 5: lease 1 and 2 have 4 s left
    log.apply(Command::RenewBatch(RenewBatch { lease_ids: vec![2] })); // 6
    log.promote(L2); // 7
    let l1 = log.t.lease(1).expect("live").clone();
    assert_eq!(
        (l1.last_index, l1.remaining_ms, l1.graced),
        (7, 4_000, true)
    );
    assert_eq!(log.t.lease(2).expect("live").remaining_ms, 10_000);
    log.advance(L2, 0); // 8
    log.advance(L2, 500); // 9
                          // 10: from 7, the second advance is 9, 3,600 ms ago.
    log.advance(L2, 3_600);
    assert_eq!(log.t.lease_remaining_ms(log.t.lease(1).expect("live")), 400);
    // A second Promote does not grace it again (L2): what is left stays.
    log.promote(LeaderId {
        term: 3,
        node_id: 1,
    }); // 11
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
    log.advance(L1, 0); // 3
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
    log.advance(L1, 0); // 2
    log.advance(L1, 2_000); // 3
    log.advance(L1, 1_000); // 4
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
    log.advance(L1, 0); // 4
    log.advance(L1, 1_000); // 5
    log.advance(L1, 2_000); // 6: 2 s since index 5
                            // Loaded at 100 s on this node's clock.
    let mut d = Deadlines::load(&log.t, Duration::from_secs(100));
    assert_eq!(d.lease_deadline(1), Some(ms(108_000)));
    assert_eq!(d.wait_deadline("a", 3, 3), Some(ms(118_000)));
    assert_eq!(d.loaded_count(), 4);
    // An advance reaches this node's log at 100.5 s: 2.5 s since index 5.
    let out = log.advance(L1, 500); // 7
    d.on_effects(&out.effects, ms(100_500), ms(100_500));
    d.on_clock_advanced(&log.t, ms(100_500));
    assert_eq!(
        d.lease_deadline(1),
        Some(ms(108_000)),
        "7.5 s from 100.5 s is later"
    );
    // The node was down a while: the next advance carries 10 s it missed.
    let out = log.advance(L1, 10_000); // 8: 12.5 s since index 5
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
    let out = log.advance(L1, 9_000); // 10
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
    log.advance(L1, 0); // 3
    log.advance(L1, 1_000); // 4
    log.apply(acquire(hdr(3, 1), "a", new_lease(60_000), 20_000, 0)); // 5: waits
    log.advance(L1, 1_000); // 6
    log.advance(L1, 1_000); // 7: 2 s since 2's second advance, 0 since 5's
    let mut d = Deadlines::load(&log.t, Duration::from_secs(100));
    assert_eq!(d.wait_deadline("a", 2, 2), Some(ms(118_000)));
    assert_eq!(d.wait_deadline("a", 3, 5), Some(ms(120_000)));
    // Down for 5 s: the next advance it applies carries them.
    log.advance(L1, 5_000); // 8
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
    log.advance(L1, 4_000); // 9: 11 s since 2's, 9 s since 5's
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

// An advance counts only from the clock's last advance: one measured from
// an advance that another has followed since (a proposal whose commit timed
// out, proposed again and both committed) is ignored, so no time is
// counted twice (S4).
#[test]
fn an_advance_measured_from_an_older_advance_is_ignored() {
    let mut log = Log::new();
    log.advance(L1, 0); // 1
    log.advance(L1, 300); // 2
                          // Both measured from index 1: the first one applies, the second not.
    let stale = Command::AdvanceClock(AdvanceClock {
        leader: L1,
        after_index: Some(1),
        elapsed_ms: 600,
    });
    let out = log.apply(stale.clone()); // 3
    assert!(out.effects.is_empty());
    assert_eq!(log.t.duty_clock().now_ms(), 300);
    // A first advance ever names none; once the clock runs, none is stale.
    let first = Command::AdvanceClock(AdvanceClock {
        leader: L1,
        after_index: None,
        elapsed_ms: 0,
    });
    assert!(log.apply(first).effects.is_empty()); // 4
    assert_eq!(log.t.duty_clock().last_advance_index(), Some(2));
}

// L2 for a node that applied a renew late (it lagged, or replayed its log
// after a reboot): at a Promote every deadline is capped at what the clock
// derives, after the Promote's grace, which the cap never undoes. Before,
// named checkpoints capped such a deadline within an interval.
#[test]
fn a_promote_caps_every_deadline_at_what_the_clock_derives() {
    let mut log = Log::new();
    let mut d = Deadlines::new();
    let apply = |log: &mut Log, d: &mut Deadlines, cmd: Command, stamp: u64| {
        let out = log.apply(cmd);
        d.on_effects(&out.effects, ms(stamp), ms(stamp));
        out
    };
    // 1, 2: leases 1 and 2 (60 s); this node stamps them 50 s late.
    apply(&mut log, &mut d, lease_grant(hdr(1, 1), 60_000), 50_000);
    apply(&mut log, &mut d, lease_grant(hdr(2, 1), 60_000), 50_000);
    assert_eq!(d.lease_deadline(1), Some(ms(110_000)));
    // 3..: advances the leader measured over those 50 s.
    for elapsed in [0, 10_000, 20_000, 20_000] {
        let out = log.advance(L1, elapsed);
        d.on_effects(&out.effects, ms(50_000), ms(50_000));
        d.on_clock_advanced(&log.t, ms(50_000));
    }
    assert_eq!(
        d.lease_deadline(1),
        Some(ms(110_000)),
        "not loaded: not capped"
    );
    // 7: lease 2 renews (on time this once: stamped at 50 s).
    apply(
        &mut log,
        &mut d,
        Command::RenewBatch(RenewBatch { lease_ids: vec![2] }),
        50_000,
    );
    // 8: this node's Promote, stamped at 51 s, grace 1 s.
    let out = log.promote(L2);
    d.on_effects(&out.effects, ms(51_000), ms(51_000));
    d.cap_all(&log.t, ms(51_000));
    // Lease 1: 60 s less the 40 s counted since its second advance: 20 s.
    assert_eq!(d.lease_deadline(1), Some(ms(71_000)));
    // Lease 2 renewed since: 60 s from its renew, not shortened.
    assert_eq!(d.lease_deadline(2), Some(ms(110_000)));
    // A lease with less left than the grace keeps the grace.
    let mut short = Log::new();
    let mut ds = Deadlines::new();
    let out = short.apply(lease_grant(hdr(1, 1), 5_000));
    ds.on_effects(&out.effects, ms(0), ms(0));
    for elapsed in [0, 1_000, 9_000] {
        short.advance(L1, elapsed);
    }
    let out = short.promote(L2);
    ds.on_effects(&out.effects, ms(10_000), ms(10_000));
    ds.cap_all(&short.t, ms(10_000));
    assert_eq!(ds.lease_deadline(1), Some(ms(11_000)), "the grace stands");
}

// After a reboot the replayed tail is stamped with its apply time; what it
// sets is capped at each advance like a loaded deadline.
#[test]
fn deadlines_set_by_a_replay_without_stamps_are_capped_like_loaded_ones() {
    let mut log = Log::new();
    let mut d = Deadlines::new();
    let out = log.apply(lease_grant(hdr(1, 1), 10_000)); // 1
    d.on_effects(&out.effects, ms(100_000), ms(100_000));
    d.mark_loaded(&out.effects);
    assert_eq!(d.loaded_count(), 1);
    log.advance(L1, 0); // 2
    log.advance(L1, 1_000); // 3
    log.advance(L1, 6_000); // 4: 6 s since index 1's second advance
    d.on_clock_advanced(&log.t, ms(100_000));
    assert_eq!(d.lease_deadline(1), Some(ms(104_000)));
}
