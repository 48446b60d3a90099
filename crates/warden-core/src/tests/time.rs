//! Cluster time in the table (docs/semantics.md "Time"): how `now` moves,
//! the sweep as a work bound, L4's promote, and expiry as an involuntary
//! loss at the lease's own instant.

use super::*;
use crate::effect::{Effect, LeaseEndReason, WaiterRemovedReason};
use crate::expiry::{Promotion, MAX_SWEEP_EFFECTS_PER_ENTRY, MAX_SWEEP_PER_ENTRY};

/// The leases an entry ended as expired, in order.
fn expired(a: &Applied) -> Vec<LeaseId> {
    a.effects
        .iter()
        .filter_map(|e| match e {
            Effect::LeaseEnded {
                lease_id,
                reason: LeaseEndReason::Expired,
            } => Some(*lease_id),
            _ => None,
        })
        .collect()
}

fn promote(no_expiry_before_ms: u64) -> Command {
    Command::Promote(Promote {
        no_expiry_before_ms,
    })
}

fn renew(ids: &[LeaseId]) -> Command {
    Command::RenewBatch(RenewBatch {
        lease_ids: ids.to_vec(),
    })
}

// "Time": cluster time never goes backwards (a lower stamp leaves `now`
// unchanged, and an instant set then counts from `now`, not from the
// stamp); a stamp whose leader is not the entry's log leader is ignored
// (etcd issue 15247), and so is a promote carrying one.
#[test]
fn cluster_time_never_goes_back_and_a_foreign_stamp_is_ignored() {
    let mut log = Log::new();
    log.now_ms = 5_000;
    log.tick();
    assert_eq!(log.t.now_ms(), 5_000);
    // A late stamp (stamps need not be in log order).
    log.apply_stamped(stamp(L1, 3_000), lease_grant(hdr(1, 1), 1_000));
    assert_eq!(log.t.now_ms(), 5_000);
    assert_eq!(
        log.t.lease(1).map(|l| l.expires_at_ms),
        Some(6_000),
        "counted from now, not from the late stamp"
    );
    // Another leader's stamp (the log's leader is L1): ignored, however
    // far ahead it is; the entry still applies, at the old `now`.
    let out = log.apply_stamped(stamp(L2, 50_000), lease_grant(hdr(1, 2), 1_000));
    assert!(matches!(
        out.response,
        Response::LeaseGranted { lease_id: 2, .. }
    ));
    assert_eq!(log.t.now_ms(), 5_000);
    assert_eq!(log.t.lease(2).map(|l| l.expires_at_ms), Some(6_000));
    assert!(
        log.t.lease(1).is_some(),
        "nothing expired by the foreign stamp"
    );
    // A promote with another leader's stamp changes nothing at all.
    let before = log.t.to_snapshot();
    let out = log.apply_stamped(stamp(L2, 5_000), promote(90_000));
    assert_eq!(out.response, Response::Done);
    assert_eq!(log.t.promotion(), Promotion::default());
    assert_eq!(log.t.to_snapshot(), before);
    // Its own leader's promote applies.
    log.apply(promote(7_000));
    assert_eq!(
        log.t.promotion(),
        Promotion {
            index: log.index,
            no_expiry_before_ms: 7_000,
            prev_index: 0,
        }
    );
    // The log's leader changes to L2: L2's stamps now count, L1's do not.
    log.leader = L2;
    log.apply_stamped(stamp(L1, 40_000), Command::Tick);
    assert_eq!(log.t.now_ms(), 5_000);
    log.apply_stamped(stamp(L2, 6_000), Command::Tick);
    assert_eq!(log.t.now_ms(), 6_000);
}

// "Time", the sweep as a work bound: with 600 leases due at once, each
// entry ends at most MAX_SWEEP_PER_ENTRY of them, in instant order (then
// lease id), and successive ticks end the rest; those not swept yet are
// already ended for every read.
#[test]
fn the_sweep_ends_at_most_its_bound_per_entry_in_instant_order() {
    let mut log = Log::new();
    // Lease i ends at 1,000 + (i - 1) % 300: two leases per instant.
    for i in 0..600u64 {
        let h = RequestHeader {
            client_id: 1,
            request_id: i + 1,
            acked_request_id: i,
        };
        log.apply_fast(lease_grant(h, 1_000 + i % 300));
    }
    assert_eq!(log.t.check_invariants(), Ok(()));
    let mut order: Vec<LeaseId> = (1..=600).collect();
    order.sort_by_key(|id| ((id - 1) % 300, *id));
    log.now_ms = 5_000;
    let k = MAX_SWEEP_PER_ENTRY;
    let first = log.tick();
    assert_eq!(expired(&first), order[..k].to_vec());
    assert_eq!(log.t.lease_count(), 600 - k);
    assert_eq!(log.t.leases().count(), 0, "the rest are ended already");
    assert_eq!(log.t.next_instant_ms(), Some(1_000 + (k as u64) / 2));
    let second = log.tick();
    assert_eq!(expired(&second), order[k..2 * k].to_vec());
    let third = log.tick();
    assert_eq!(expired(&third), order[2 * k..].to_vec());
    assert_eq!(log.t.lease_count(), 0);
    assert_eq!(log.t.next_instant_ms(), None);
    assert!(log.tick().effects.is_empty());
}

// "Time", the sweep's work bound in effects: three sessions of 6,000 locks
// each, due at once, are not freed in one apply (18,000 frees); the first
// tick ends two of them (it starts no item past MAX_SWEEP_EFFECTS_PER_ENTRY
// effects, and finishes the one it is in), the next tick the third, and the
// third session's locks are free for every read before its tick.
#[test]
fn the_sweep_starts_no_item_past_its_effect_bound() {
    let mut log = Log::new();
    let mut request = 0;
    let mut next = || {
        request += 1;
        RequestHeader {
            client_id: 1,
            request_id: request,
            acked_request_id: request - 1,
        }
    };
    for s in 0..3u64 {
        let Response::LeaseGranted { lease_id, .. } =
            log.apply_fast(lease_grant(next(), 1_000 + s)).response
        else {
            panic!("a session")
        };
        for i in 0..6_000 {
            let r = format!("s{s}/{i}");
            granted(&log.apply_fast(acquire(next(), &r, on(lease_id), 0, 0)));
        }
    }
    assert_eq!(log.t.check_invariants(), Ok(()));
    log.now_ms = 5_000;
    let first = log.tick();
    assert_eq!(expired(&first), vec![1, 2]);
    assert!(first.effects.len() >= MAX_SWEEP_EFFECTS_PER_ENTRY);
    assert!(first.effects.len() < MAX_SWEEP_EFFECTS_PER_ENTRY + 6_002);
    assert_eq!(log.t.lease_count(), 1, "the third is not swept yet");
    assert!(log.t.holder("s2/0").is_none(), "but its locks are free");
    let second = log.tick();
    assert_eq!(expired(&second), vec![3]);
    assert_eq!(log.t.lease_count(), 0);
    assert_eq!(log.t.next_instant_ms(), None);
}

// L4: a promote keeps a lease granted or renewed after the previous
// promote alive until the new promote's no_expiry_before; a lease that
// already had a grace and was not renewed since ends at its own
// expires_at (L2: the grace is given at most once between renews).
#[test]
fn a_promote_graces_once_between_renews() {
    let mut log = Log::new();
    log.apply(lease_grant(hdr(1, 1), 10_000)); // lease 1 at index 1, ends 10 s
    log.apply(lease_grant(hdr(1, 2), 10_000)); // lease 2 at index 2, ends 10 s
    log.now_ms = 1_000;
    log.apply(promote(15_000)); // index 3: both granted after promote 0
    let p1 = log.index;
    for id in [1, 2] {
        let l = log.t.lease(id).expect("live");
        assert_eq!(log.t.lease_end_ms(l), 15_000, "lease {id}");
    }
    log.now_ms = 2_000;
    log.apply(renew(&[1])); // lease 1 renewed after promote 1: ends 12 s
    let renewed = log.index;
    log.now_ms = 3_000;
    log.apply(promote(20_000)); // a second leader
    assert_eq!(
        log.t.promotion(),
        Promotion {
            index: log.index,
            no_expiry_before_ms: 20_000,
            prev_index: p1,
        }
    );
    let l1 = log.t.lease(1).expect("live").clone();
    assert_eq!((l1.expires_at_ms, l1.renew_index), (12_000, renewed));
    assert_eq!(log.t.lease_end_ms(&l1), 20_000, "renewed since: graced");
    let l2 = log.t.lease(2).expect("live").clone();
    assert_eq!(
        log.t.lease_end_ms(&l2),
        10_000,
        "graced by promote 1, not renewed since: no second grace"
    );
    // A lease granted after the new promote is also after the previous one.
    log.now_ms = 4_000;
    log.apply(lease_grant(hdr(1, 3), 1_000)); // lease 3, expires 5 s
    let l3 = log.t.lease(3).expect("live").clone();
    assert_eq!((l3.expires_at_ms, log.t.lease_end_ms(&l3)), (5_000, 20_000));
    // Lease 2 ends at its own instant; leases 1 and 3 live on to 20 s.
    assert!(expired(&log.tick_at(9_999)).is_empty());
    assert_eq!(expired(&log.tick_at(10_000)), vec![2]);
    assert_eq!(log.t.lease_remaining_ms(&l1), 10_000);
    assert!(expired(&log.tick_at(19_999)).is_empty());
    assert!(log.t.lease(1).is_some() && log.t.lease(3).is_some());
    // Both end at 20 s: the sweeps that met them due at their own
    // instants moved their keys there (a kept lease holds no sweep up),
    // so they end together, by id.
    assert_eq!(log.t.lease(3).map(|l| l.expires_at_ms), Some(20_000));
    assert_eq!(expired(&log.tick_at(20_000)), vec![1, 3]);
}

// L4 and S8: a waiter whose lease a promote keeps is still live: a
// release hands off to it even past its lease's expires_at.
#[test]
fn a_graced_waiter_is_granted() {
    let mut log = Log::new();
    let (h, t) = granted(&log.apply(acquire(hdr(1, 1), "r", new_lease(60_000), 0, 0)));
    log.apply(acquire(hdr(2, 1), "r", new_lease(1_000), 60_000, 0)); // lease 2
    log.apply(promote(5_000));
    log.now_ms = 3_000;
    assert_eq!(log.t.waiter_position("r", 2), Some(1));
    let out = log.apply(release(hdr(1, 2), Some("r"), h, Some(t)));
    assert!(out
        .effects
        .iter()
        .any(|e| matches!(e, Effect::Granted { lease_id: 2, .. })));
    assert_eq!(expired(&log.tick_at(5_000)), vec![2]);
    assert!(log.t.holder("r").is_none());
}

// "Time", lock-delay: a holder whose lease ended is an involuntary loss at
// its expires_at, not at the entry that notices: the delay ends at
// expires_at + lock_delay_ms; noticed after that, there is no delay and
// the waiter is granted in that entry.
#[test]
fn an_expired_holders_lock_delay_counts_from_its_expires_at() {
    for (tick_at, delay_ends) in [(1_500, Some(3_000)), (5_000, None)] {
        let mut log = Log::new();
        log.apply(acquire(hdr(1, 1), "r", new_lease(1_000), 0, 2_000)); // ends 1 s
        log.apply(acquire(hdr(2, 1), "r", new_lease(60_000), 60_000, 0)); // lease 2 waits
        let out = log.tick_at(tick_at);
        assert_eq!(expired(&out), vec![1]);
        assert_eq!(
            log.t.lock_delay("r").map(|d| d.ends_at_ms),
            delay_ends,
            "noticed at {tick_at}"
        );
        match delay_ends {
            Some(end) => {
                assert!(log.t.holder("r").is_none());
                log.tick_at(end - 1);
                assert!(log.t.holder("r").is_none());
                log.tick_at(end);
                assert_eq!(log.t.holder("r").map(|h| h.lease_id), Some(2));
            }
            None => {
                assert!(!out
                    .effects
                    .iter()
                    .any(|e| matches!(e, Effect::LockDelayStarted { .. })));
                assert_eq!(log.t.holder("r").map(|h| h.lease_id), Some(2));
            }
        }
    }
}

// S8, FIFO: an acquire that arrives after the holder's lease ended but
// before any sweep reached it (300 filler leases ahead of it in instant
// order) ends the holder first and queues behind the live waiter: it never
// jumps the queue, nor a lock-delay that counts from the holder's end.
#[test]
fn an_acquire_after_expiry_before_the_sweep_queues_behind_live_waiters() {
    for delay in [0, 2_000] {
        let mut log = Log::new();
        log.fillers(300, 1_000); // due at 1 s
        log.now_ms = 10;
        let (holder, _) = granted(&log.apply(acquire(hdr(1, 1), "r", new_lease(1_000), 0, delay)));
        let w = log.apply(acquire(hdr(2, 1), "r", new_lease(60_000), 60_000, 0));
        let waiter = holder + 1;
        assert!(log.t.has_waiter("r", waiter, log.index));
        log.now_ms = 1_500;
        // A try-lock sees the holder ended: the waiter holds, or the
        // resource is in lock-delay; either way, not granted.
        let try_lock = log.apply(acquire(hdr(3, 1), "r", new_lease(60_000), 0, 0));
        let reason = if delay == 0 {
            NotGrantedReason::Held
        } else {
            NotGrantedReason::LockDelay
        };
        assert!(
            matches!(
                &try_lock.response,
                Response::Acquire(AcquireReply { outcome: AcquireOutcome::NotGranted { reason: r, .. }, .. }) if *r == reason
            ),
            "delay {delay}: {:?}",
            try_lock.response
        );
        assert!(
            log.t.leases.len() > 50,
            "the fillers are not all swept: the acquire ended the holder itself"
        );
        assert!(expired(&try_lock).contains(&holder));
        drop(w);
        // A waiting acquire queues behind the live waiter.
        let q = log.apply(acquire(hdr(4, 1), "r", new_lease(60_000), 60_000, 0));
        let expected_position = if delay == 0 { 1 } else { 2 };
        assert!(
            matches!(
                &q.response,
                Response::Acquire(AcquireReply { outcome: AcquireOutcome::Queued { position, .. }, .. }) if *position == expected_position
            ),
            "delay {delay}: {:?}",
            q.response
        );
        if delay > 0 {
            assert_eq!(log.t.lock_delay("r").map(|d| d.ends_at_ms), Some(3_010));
            log.tick_at(3_010);
        }
        assert_eq!(log.t.holder("r").map(|h| h.lease_id), Some(waiter));
        assert_eq!(
            log.t
                .waiters("r")
                .iter()
                .map(|w| w.position)
                .collect::<Vec<_>>(),
            vec![1]
        );
    }
}

// S8: a waiter whose wait has ended is removed by the sweep at its
// deadline (enqueue's now + wait), TimedOut, and never granted after.
#[test]
fn a_wait_ends_at_its_deadline() {
    let mut log = Log::new();
    let (h, t) = granted(&log.apply(acquire(hdr(1, 1), "r", new_lease(60_000), 0, 0)));
    log.now_ms = 500;
    log.apply(acquire(hdr(2, 1), "r", new_lease(60_000), 2_000, 0)); // lease 2, deadline 2.5 s
    let enq = log.index;
    assert_eq!(log.t.waiters("r")[0].deadline_ms, 2_500);
    assert!(log.tick_at(2_499).effects.is_empty());
    let out = log.tick_at(2_500);
    assert!(out.effects.contains(&Effect::WaiterRemoved {
        resource: "r".into(),
        lease_id: 2,
        enqueue_index: enq,
        reason: WaiterRemovedReason::TimedOut,
        enqueued_at_ms: 500,
    }));
    let out = log.apply(release(hdr(1, 2), Some("r"), h, Some(t)));
    assert!(!out
        .effects
        .iter()
        .any(|e| matches!(e, Effect::Granted { .. })));
}

// L4, "Time" (the leader's tick rule): a lease a promote keeps past its
// expires_at is due once; the sweep that meets it moves its key to the
// promote's no_expiry_before, so the leader, which ticks while the earliest
// instant is due, does not tick through the grace; an item that is due
// behind it still is.
#[test]
fn a_graced_lease_is_next_at_its_end_not_its_expires_at() {
    let mut log = Log::new();
    log.apply(lease_grant(hdr(1, 1), 1_000)); // lease 1, expires 1 s
    log.now_ms = 500;
    log.apply(promote(5_000));
    log.tick_at(2_000);
    assert!(log.t.lease(1).is_some(), "kept by the promote");
    assert_eq!(log.t.next_instant_ms(), Some(5_000));
    // A wait that ends at 3 s, behind it in the time index.
    let (h, _) = granted(&log.apply(acquire(hdr(2, 1), "r", new_lease(60_000), 0, 0)));
    log.apply(acquire(hdr(3, 1), "r", new_lease(60_000), 1_000, 0)); // waits to 3 s
    assert_eq!(log.t.next_instant_ms(), Some(3_000));
    log.tick_at(3_000);
    assert_eq!(log.t.next_instant_ms(), Some(5_000));
    assert_eq!(expired(&log.tick_at(5_000)), vec![1]);
    assert_eq!(log.t.next_instant_ms(), Some(62_000));
    assert!(log.t.lease(h).is_some());
}
