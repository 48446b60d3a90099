use std::time::Duration;

use super::*;
use crate::deadline::Deadlines;
use crate::effect::Effect;

fn s(secs: u64) -> Duration {
    Duration::from_secs(secs)
}

fn ms(v: u64) -> Duration {
    Duration::from_millis(v)
}

/// Applies `cmd` as the next entry, stamped at `stamp` and applied at `now`.
fn step(
    log: &mut Log,
    d: &mut Deadlines,
    cmd: Command,
    stamp: Duration,
    now: Duration,
) -> crate::table::Applied {
    let out = log.apply(cmd);
    d.on_effects(&out.effects, stamp, now);
    out
}

// S4: deadline = stamp at append + TTL; a lease is never due before it.
#[test]
fn lease_deadline_is_stamp_plus_ttl() {
    let (mut log, mut d) = (Log::new(), Deadlines::new());
    step(
        &mut log,
        &mut d,
        lease_grant(hdr(1, 1), 10_000),
        s(100),
        s(101),
    );
    assert_eq!(d.lease_deadline(1), Some(s(110)));
    assert_eq!(d.remaining_ms(1, ms(104_500)), Some(5_500));
    assert!(d.due(&log.t, L1, ms(109_999)).leases.is_empty());
    assert_eq!(
        d.due(&log.t, L1, s(110)).leases,
        vec![DueLease {
            lease_id: 1,
            last_index: 1
        }]
    );
    // A renew stamped at 108 s restarts the countdown: 118 s.
    step(
        &mut log,
        &mut d,
        Command::RenewBatch(RenewBatch { lease_ids: vec![1] }),
        s(108),
        s(108),
    );
    assert_eq!(d.lease_deadline(1), Some(s(118)));
    assert_eq!(d.due(&log.t, L1, s(117)).leases, vec![]);
    // Revoked: forgotten, never due.
    step(
        &mut log,
        &mut d,
        Command::Revoke(Revoke {
            header: hdr(1, 2),
            lease_id: 1,
            due: None,
        }),
        s(109),
        s(109),
    );
    assert_eq!(d.lease_deadline(1), None);
    assert_eq!(d.remaining_ms(1, s(500)), None);
}

// L4 + L2 (etcd issue 9395): Promote graces a lease once; a second Promote before a renew adds nothing.
#[test]
fn promote_grace_is_given_once() {
    let (mut log, mut d) = (Log::new(), Deadlines::new());
    // TTL 3 s, stamped at 10 s: deadline 13 s.
    step(
        &mut log,
        &mut d,
        lease_grant(hdr(1, 1), 3_000),
        s(10),
        s(10),
    );
    // No leader from 10 s to 20 s. The term-2 leader's Promote applies at 20 s with a 1 s grace: 21 s.
    log.leader = L2;
    step(
        &mut log,
        &mut d,
        Command::Promote(Promote {
            leader: L2,
            grace_ms: 1_000,
        }),
        s(20),
        s(20),
    );
    assert_eq!(d.lease_deadline(1), Some(s(21)));
    assert!(d.due(&log.t, L2, ms(20_999)).leases.is_empty());
    // Term 3 is elected at 20.5 s; its Promote grants nothing more: still 21 s.
    let l3 = LeaderId {
        term: 3,
        node_id: 3,
    };
    log.leader = l3;
    let out = step(
        &mut log,
        &mut d,
        Command::Promote(Promote {
            leader: l3,
            grace_ms: 1_000,
        }),
        ms(20_500),
        ms(20_500),
    );
    assert!(out.effects.is_empty());
    assert_eq!(d.lease_deadline(1), Some(s(21)));
    assert_eq!(
        d.due(&log.t, l3, s(21)).leases,
        vec![DueLease {
            lease_id: 1,
            last_index: 2
        }]
    );
    // A grace never shortens: a lease with 9 s left keeps them.
    let mut e = Deadlines::new();
    e.on_effect(
        &Effect::LeaseSet {
            lease_id: 7,
            ttl_ms: 10_000,
        },
        s(0),
        s(0),
    );
    e.on_effect(
        &Effect::LeaseGraced {
            lease_id: 7,
            grace_ms: 1_000,
        },
        s(1),
        s(1),
    );
    assert_eq!(e.lease_deadline(7), Some(s(10)));
}

// L2, etcd issue 9395: a checkpoint only shortens a node's deadline, never lengthens it.
#[test]
fn checkpoint_only_shortens() {
    let (mut log, mut d) = (Log::new(), Deadlines::new());
    step(&mut log, &mut d, lease_grant(hdr(1, 1), 10_000), s(0), s(0)); // deadline 10 s
                                                                        // The leader, 4 s later, proposes its view: 6 s left. It reaches this (lagging) log at 4.5 s: min(10, 10.5) = 10.
    let cp = Deadlines::checkpoint(&d, &log.t, L1, s(4), s(1));
    assert_eq!(
        cp.leases,
        vec![CheckpointLease {
            lease_id: 1,
            last_index: 1,
            remaining_ms: 6_000
        }]
    );
    step(
        &mut log,
        &mut d,
        Command::Checkpoint(cp),
        ms(4_500),
        ms(4_500),
    );
    assert_eq!(d.lease_deadline(1), Some(s(10)));
    assert_eq!(
        log.t.lease(1).map(|l| (l.remaining_ms, l.last_index)),
        Some((6_000, 2))
    );
    // Another node whose deadline was 12 s (it stamped late) is pulled in to 4.5 + 6 = 10.5 s.
    let mut other = Deadlines::new();
    other.on_effect(
        &Effect::LeaseSet {
            lease_id: 1,
            ttl_ms: 10_000,
        },
        s(2),
        s(2),
    );
    other.on_effect(
        &Effect::LeaseCapped {
            lease_id: 1,
            remaining_ms: 6_000,
        },
        ms(4_500),
        ms(4_500),
    );
    assert_eq!(other.lease_deadline(1), Some(ms(10_500)));
    // A lease renewed within the last interval is not checkpointed.
    step(
        &mut log,
        &mut d,
        Command::RenewBatch(RenewBatch { lease_ids: vec![1] }),
        s(5),
        s(5),
    ); // deadline 15 s
    assert!(d.checkpoint(&log.t, L1, ms(5_500), s(1)).leases.is_empty());
    assert_eq!(d.checkpoint(&log.t, L1, ms(6_500), s(1)).leases.len(), 1);
}

// "Time": a restarted node gets now + remaining_ms; waits and lock-delays too; a missing deadline is never due.
#[test]
fn load_uses_remaining_and_missing_is_never_due() {
    let (mut log, mut d) = (Log::new(), Deadlines::new());
    step(
        &mut log,
        &mut d,
        acquire(hdr(1, 1), "r", new_lease(8_000), 0, 4_000),
        s(0),
        s(0),
    ); // lease 1
    step(
        &mut log,
        &mut d,
        acquire(hdr(2, 1), "r", new_lease(8_000), 20_000, 0),
        s(0),
        s(0),
    ); // lease 2 waits
    let cp = d.checkpoint(&log.t, L1, s(3), s(1));
    assert_eq!(
        cp.waiters,
        vec![CheckpointWaiter {
            resource: "r".into(),
            lease_id: 2,
            enqueue_index: 2,
            remaining_ms: 17_000
        }]
    );
    step(&mut log, &mut d, Command::Checkpoint(cp), s(3), s(3));
    let loaded = Deadlines::load(&log.t, s(100));
    assert_eq!(loaded.lease_deadline(1), Some(s(105)));
    assert_eq!(loaded.wait_deadline("r", 2, 2), Some(s(117)));
    // Expire lease 1 at 6 s: a 4 s lock-delay starts, ending at 10 s.
    step(&mut log, &mut d, expire(L1, &[(1, 3)]), s(6), s(6));
    assert_eq!(d.lock_delay_deadline("r", 4), Some(s(10)));
    assert!(d.due_lock_delays(&log.t, ms(9_999)).is_empty());
    assert_eq!(d.due_lock_delays(&log.t, s(10)), vec![("r".to_owned(), 4)]);
    let loaded = Deadlines::load(&log.t, s(200));
    assert_eq!(loaded.lock_delay_deadline("r", 4), Some(s(204)));
    // An empty table of deadlines finds nothing due, even at the end of time.
    let empty = Deadlines::new();
    let due = empty.due(&log.t, L1, Duration::MAX);
    assert!(due.leases.is_empty() && due.waiters.is_empty());
}

// "Time": deadline arithmetic never overflows (late, never early, never a panic).
#[test]
fn arithmetic_saturates() {
    let mut d = Deadlines::new();
    d.on_effect(
        &Effect::LeaseSet {
            lease_id: 1,
            ttl_ms: u64::MAX,
        },
        Duration::MAX,
        Duration::MAX,
    );
    assert_eq!(d.lease_deadline(1), Some(Duration::MAX));
    d.on_effect(
        &Effect::LeaseGraced {
            lease_id: 1,
            grace_ms: u64::MAX,
        },
        Duration::MAX,
        Duration::MAX,
    );
    d.on_effect(
        &Effect::LeaseCapped {
            lease_id: 1,
            remaining_ms: u64::MAX,
        },
        Duration::MAX,
        Duration::MAX,
    );
    assert_eq!(d.remaining_ms(1, Duration::ZERO), Some(u64::MAX));
    assert_eq!(d.remaining_ms(1, Duration::MAX), Some(0));
    let t = LockTable::new();
    let _ = d.checkpoint(&t, L1, Duration::ZERO, Duration::MAX);
}

/// "r" held by client 1's lease (granted at 0 s), and `waiters` more
/// clients (2, 3, …) waiting on it, each on its own lease, enqueued at 1 s
/// with a 5 s wait.
/// The leases an applied entry granted a resource to, in order.
fn granted(out: &crate::table::Applied) -> Vec<LeaseId> {
    out.effects
        .iter()
        .filter_map(|e| match e {
            Effect::Granted { lease_id, .. } => Some(*lease_id),
            _ => None,
        })
        .collect()
}

/// Applies `release` (a `Command::Release`) carrying `due` as its due
/// list, stamped and applied at `now`.
fn release_carrying(
    log: &mut Log,
    d: &mut Deadlines,
    release: Command,
    due: DueList,
    now: Duration,
) -> crate::table::Applied {
    let Command::Release(mut r) = release else {
        unreachable!("a release")
    };
    r.due = Some(due);
    step(log, d, Command::Release(r), now, now)
}

fn held_with_waiters(waiters: u64) -> (Log, Deadlines) {
    let (mut log, mut d) = (Log::new(), Deadlines::new());
    step(
        &mut log,
        &mut d,
        acquire(hdr(1, 1), "r", new_lease(60_000), 0, 0),
        s(0),
        s(0),
    );
    for c in 2..=waiters + 1 {
        step(
            &mut log,
            &mut d,
            acquire(hdr(c, 1), "r", new_lease(60_000), 5_000, 0),
            s(1),
            s(1),
        );
    }
    (log, d)
}

// S8: a waiter whose wait has run out is listed as due, and the Expire removes it.
#[test]
fn timed_out_waiter_is_due() {
    let (mut log, mut d) = held_with_waiters(1);
    assert!(d.due(&log.t, L1, ms(5_999)).waiters.is_empty());
    let due = d.due(&log.t, L1, s(6));
    assert_eq!(
        due.waiters,
        vec![DueWaiter {
            resource: "r".into(),
            lease_id: 2,
            enqueue_index: 2
        }]
    );
    step(&mut log, &mut d, Command::Expire(due), s(6), s(6));
    assert!(log.t.waiters("r").is_empty());
    assert_eq!(d.wait_deadline("r", 2, 2), None);
    assert_eq!(
        d.lease_deadline(2),
        None,
        "its auto lease ended with its only wait"
    );
}

// docs/semantics.md "Time" (lock-delay): the delay counts from this node's apply of
// the expiry, not its append, so a lagging new leader never ends it early; the
// time left that `status` shows is in (0, lock-delay] while it runs, 0 once past.
#[test]
fn lock_delay_counts_from_apply() {
    let (mut log, mut d) = (Log::new(), Deadlines::new());
    // Lease 1 (TTL 10 s) takes "r" with a 5 s lock-delay, stamped at 100 s.
    step(
        &mut log,
        &mut d,
        acquire(hdr(1, 1), "r", new_lease(10_000), 0, 5_000),
        s(100),
        s(100),
    );
    // The expiry reached this node's log at 110 s but applied at 112 s.
    step(&mut log, &mut d, expire(L1, &[(1, 1)]), s(110), s(112));
    assert_eq!(d.lock_delay_deadline("r", 2), Some(s(117)));
    assert!(d.due_lock_delays(&log.t, ms(116_999)).is_empty());
    // What `status` shows: the time left of the 5 s delay, counted from the
    // apply (112 s) and rounded up; 0 once past; none for another start.
    assert_eq!(log.t.lock_delay("r").map(|v| v.start_index), Some(2));
    assert_eq!(d.lock_delay_remaining_ms("r", 2, s(112)), Some(5_000));
    assert_eq!(
        d.lock_delay_remaining_ms("r", 2, Duration::from_micros(115_800_001)),
        Some(1_200)
    );
    assert_eq!(d.lock_delay_remaining_ms("r", 2, s(117)), Some(0));
    assert_eq!(d.lock_delay_remaining_ms("r", 2, s(500)), Some(0));
    assert_eq!(d.lock_delay_remaining_ms("r", 1, s(112)), None);
    assert_eq!(
        d.due_lock_delays(&log.t, s(117)),
        vec![("r".to_string(), 2)]
    );
}

// S8 and L1: the time index behind `due` and `next_deadline` lists exactly the
// leases whose deadline has passed, in lease-id order whatever order their
// deadlines fall in, and follows every change of a deadline: a renew moves it
// later, a checkpoint's cap earlier, a grace later, an end removes it.
#[test]
fn due_and_next_deadline_follow_every_change_of_a_deadline() {
    let (mut log, mut d) = (Log::new(), Deadlines::new());
    // Leases 1..=5 with TTLs 5, 4, 3, 2, 1 s, all stamped at 0: lease 5 is
    // due first, lease 1 last.
    for (i, ttl_s) in (1..=5).zip((1..=5).rev()) {
        step(
            &mut log,
            &mut d,
            lease_grant(hdr(i, 1), ttl_s * 1_000),
            s(0),
            s(0),
        );
    }
    let due_ids = |d: &Deadlines, log: &Log, at: Duration| -> Vec<u64> {
        d.due(&log.t, L1, at)
            .leases
            .iter()
            .map(|l| l.lease_id)
            .collect()
    };
    assert_eq!(d.next_deadline(), Some(s(1)));
    assert_eq!(due_ids(&d, &log, ms(999)), Vec::<u64>::new());
    assert_eq!(due_ids(&d, &log, s(3)), vec![3, 4, 5]);
    // Lease 5 renewed at 2 s (TTL 1 s): due at 3 s, no longer at 2.5 s.
    step(
        &mut log,
        &mut d,
        Command::RenewBatch(RenewBatch { lease_ids: vec![5] }),
        s(2),
        s(2),
    );
    assert_eq!(due_ids(&d, &log, ms(2_500)), vec![4]);
    assert_eq!(d.next_deadline(), Some(s(2)));
    // A cap brings lease 1 (due at 5 s) down to 1.5 s.
    d.on_effect(
        &Effect::LeaseCapped {
            lease_id: 1,
            remaining_ms: 1_500,
        },
        s(0),
        s(0),
    );
    assert_eq!(due_ids(&d, &log, ms(1_500)), vec![1]);
    assert_eq!(d.next_deadline(), Some(ms(1_500)));
    // A grace lifts it to 4 s; an end removes lease 4.
    d.on_effect(
        &Effect::LeaseGraced {
            lease_id: 1,
            grace_ms: 4_000,
        },
        s(0),
        s(0),
    );
    d.forget_lease(4);
    assert_eq!(due_ids(&d, &log, ms(3_999)), vec![3, 5]);
    assert_eq!(due_ids(&d, &log, s(4)), vec![1, 2, 3, 5]);
    assert_eq!(d.next_deadline(), Some(s(3)));
    assert_eq!(d.lease_count(), 4);
}

// A mass expiry in bounded entries (limits::MAX_DUE_PER_ENTRY): with 2,500
// leases due at once the due list names the bound's number (250), those
// whose deadlines came first, in lease-id order; once they end, the next
// ones come up.
#[test]
fn a_due_list_names_at_most_the_bound_earliest_deadline_first() {
    use crate::limits::MAX_DUE_PER_ENTRY;
    let (mut log, mut d) = (Log::new(), Deadlines::new());
    // Lease i gets TTL 1 s + (2,500 − i) ms: the highest ids are due first.
    for i in 1..=2_500u64 {
        let header = RequestHeader {
            client_id: 1,
            request_id: i,
            acked_request_id: i - 1,
        };
        let out = log
            .t
            .apply(i, L1, &lease_grant(header, 1_000 + (2_500 - i)));
        d.on_effects(&out.effects, s(0), s(0));
    }
    let due = d.due(&log.t, L1, s(10)).leases;
    let bound = MAX_DUE_PER_ENTRY as u64;
    assert_eq!(bound, 250);
    assert_eq!(due.len(), MAX_DUE_PER_ENTRY);
    let ids: Vec<u64> = due.iter().map(|l| l.lease_id).collect();
    assert_eq!(ids, (2_501 - bound..=2_500).collect::<Vec<u64>>());
    for id in &ids {
        d.forget_lease(*id);
    }
    let next: Vec<u64> = d
        .due(&log.t, L1, s(10))
        .leases
        .iter()
        .map(|l| l.lease_id)
        .collect();
    assert_eq!(
        next,
        (2_501 - 2 * bound..=2_500 - bound).collect::<Vec<u64>>()
    );
}

// A checkpoint in bounded entries (limits::MAX_CHECKPOINT_ITEMS_PER_ENTRY): a leader with
// 2,500 leases none of which was renewed in the last interval names them all,
// in three entries of at most 1,000 items; applied one after another they
// record the same remaining TTL for every lease as the whole checkpoint
// would, and an empty checkpoint costs no entry.
#[test]
fn a_checkpoint_is_split_into_bounded_entries_that_record_every_lease() {
    use crate::limits::MAX_CHECKPOINT_ITEMS_PER_ENTRY;
    let (mut log, mut d) = (Log::new(), Deadlines::new());
    for i in 1..=2_500u64 {
        let header = RequestHeader {
            client_id: 1,
            request_id: i,
            acked_request_id: i - 1,
        };
        step(&mut log, &mut d, lease_grant(header, 10_000), s(0), s(0));
    }
    let whole = d.checkpoint(&log.t, L1, s(3), s(1));
    assert_eq!(whole.leases.len(), 2_500);
    let entries = whole.clone().into_entries(MAX_CHECKPOINT_ITEMS_PER_ENTRY);
    let sizes: Vec<usize> = entries.iter().map(|c| c.leases.len()).collect();
    assert_eq!(sizes, vec![1_000, 1_000, 500]);
    let named: Vec<u64> = entries
        .iter()
        .flat_map(|c| c.leases.iter().map(|l| l.lease_id))
        .collect();
    assert_eq!(named, (1..=2_500).collect::<Vec<u64>>());
    for cp in entries {
        assert_eq!(cp.leader, L1);
        step(&mut log, &mut d, Command::Checkpoint(cp), s(3), s(3));
    }
    for id in 1..=2_500u64 {
        assert_eq!(
            log.t.lease(id).map(|l| l.remaining_ms),
            Some(7_000),
            "lease {id}"
        );
    }
    // Within the interval after their grant nothing is named, and an empty
    // checkpoint is proposed as no entry at all.
    let early = d.checkpoint(&log.t, L1, ms(500), s(1));
    assert!(early.is_empty());
    assert!(early
        .into_entries(MAX_CHECKPOINT_ITEMS_PER_ENTRY)
        .is_empty());
}

// The split counts leases, lock-delays and waiters together and keeps each
// list's order: 3 leases and 2 waiters in entries of 2 give [2 leases],
// [1 lease + 1 waiter], [1 waiter].
#[test]
fn a_checkpoint_split_counts_every_kind_of_item() {
    let cp = Checkpoint {
        leader: L1,
        leases: (1..=3)
            .map(|id| CheckpointLease {
                lease_id: id,
                last_index: id,
                remaining_ms: 100 * id,
            })
            .collect(),
        lock_delays: vec![],
        waiters: (1..=2)
            .map(|id| CheckpointWaiter {
                resource: format!("r{id}"),
                lease_id: id,
                enqueue_index: 10 + id,
                remaining_ms: 5,
            })
            .collect(),
    };
    let entries = cp.into_entries(2);
    let shape: Vec<(Vec<u64>, Vec<u64>)> = entries
        .iter()
        .map(|c| {
            (
                c.leases.iter().map(|l| l.lease_id).collect(),
                c.waiters.iter().map(|w| w.lease_id).collect(),
            )
        })
        .collect();
    assert_eq!(
        shape,
        vec![(vec![1, 2], vec![]), (vec![3], vec![1]), (vec![], vec![2])]
    );
}

// A mass expiry bounded by grants too (limits::MAX_DUE_GRANTS_PER_ENTRY): a
// lease may hold up to 10,000 locks, so a due list of 250 leases could free
// two and a half million grants in one entry. With a bound of 10 grants and three due
// leases holding 4 locks each, the list names the first two (8 grants; the
// third would make 12) and says it is full; once they end, the third comes
// up alone and the list is not full. The full-size bound is the same code.
#[test]
fn a_due_list_stops_before_the_lease_that_passes_the_grant_bound() {
    let (mut log, mut d) = (Log::new(), Deadlines::new());
    let mut request = 0u64;
    let mut next = || {
        request += 1;
        RequestHeader {
            client_id: 1,
            request_id: request,
            acked_request_id: request - 1,
        }
    };
    for lease in 1..=3u64 {
        step(&mut log, &mut d, lease_grant(next(), 1_000), s(0), s(0));
        for i in 0..4 {
            let cmd = acquire(next(), &format!("l{lease}/{i}"), on(lease), 0, 0);
            step(&mut log, &mut d, cmd, s(0), s(0));
        }
        assert_eq!(log.t.lease(lease).map(|l| l.locks.len()), Some(4));
    }
    let full_size = d.due(&log.t, L1, s(5));
    assert_eq!(
        full_size.leases.len(),
        3,
        "12 grants are far below the real bound"
    );
    let due = d.due_within(&log.t, L1, s(5), crate::limits::MAX_DUE_PER_ENTRY, 10);
    let ids: Vec<u64> = due.leases.iter().map(|l| l.lease_id).collect();
    assert_eq!(ids, vec![1, 2]);
    assert!(
        d.due_is_full(&log.t, &due, s(5)),
        "lease 3 is due and left out"
    );
    step(&mut log, &mut d, Command::Expire(due), s(5), s(5));
    assert_eq!(log.t.lease(1).map(|l| l.lease_id), None);
    assert_eq!(log.t.holder("l2/0").map(|g| g.lease_id), None);
    let rest = d.due_within(&log.t, L1, s(5), crate::limits::MAX_DUE_PER_ENTRY, 10);
    let ids: Vec<u64> = rest.leases.iter().map(|l| l.lease_id).collect();
    assert_eq!(ids, vec![3]);
    assert!(!d.due_is_full(&log.t, &rest, s(5)));
}

// Deadlines::due_is_full: a list cut by the lease bound is full; a list that
// names every due lease is not.
#[test]
fn a_due_list_that_names_every_due_lease_is_not_full() {
    use crate::limits::MAX_DUE_PER_ENTRY;
    let (mut log, mut d) = (Log::new(), Deadlines::new());
    for i in 1..=(MAX_DUE_PER_ENTRY as u64 + 1) {
        let header = RequestHeader {
            client_id: 1,
            request_id: i,
            acked_request_id: i - 1,
        };
        step(&mut log, &mut d, lease_grant(header, 1_000), s(0), s(0));
    }
    let due = d.due(&log.t, L1, s(5));
    assert_eq!(due.leases.len(), MAX_DUE_PER_ENTRY);
    assert!(d.due_is_full(&log.t, &due, s(5)));
    step(&mut log, &mut d, Command::Expire(due), s(5), s(5));
    let rest = d.due(&log.t, L1, s(5));
    assert_eq!(rest.leases.len(), 1);
    assert!(!d.due_is_full(&log.t, &rest, s(5)));
}

// docs/semantics.md "Checkpoints": the leader's walk in slices names every
// lease once per pass, as the one-go checkpoint does, with each slice about
// len × elapsed / pass long (so a tick's entries stay small at 100,000
// leases); a late slice takes more, so a pass keeps to its length in time;
// the walk starts over after the last lease, and leases added meanwhile are
// named in the next pass.
#[test]
fn the_checkpoint_walk_names_every_lease_once_per_pass_in_slices() {
    use crate::deadline::CheckpointWalk;
    let (mut log, mut d) = (Log::new(), Deadlines::new());
    let grant = |log: &mut Log, d: &mut Deadlines, i: u64| {
        let header = RequestHeader {
            client_id: 1,
            request_id: i,
            acked_request_id: i - 1,
        };
        step(log, d, lease_grant(header, 10_000), s(0), s(0));
    };
    for i in 1..=1_000u64 {
        grant(&mut log, &mut d, i);
    }
    let whole = d.checkpoint(&log.t, L1, s(3), s(1));
    assert_eq!(whole.leases.len(), 1_000);
    let pass = ms(750);
    let mut walk = CheckpointWalk::default();
    let mut named = Vec::new();
    let mut items = Vec::new();
    let mut sizes = Vec::new();
    // Fifteen ticks of 50 ms make one pass of 750 ms.
    for _ in 0..15 {
        let slice = d.checkpoint_slice(&log.t, L1, s(3), s(1), &mut walk, ms(50), pass);
        sizes.push(slice.leases.len());
        named.extend(slice.leases.iter().map(|l| l.lease_id));
        items.extend(slice.leases);
        assert_eq!(slice.leader, L1);
    }
    // ceil(1,000 × 50 / 750) = 67 per slice; the 15th takes the last 62.
    assert_eq!(&sizes[..14], &[67; 14]);
    assert_eq!(sizes[14], 1_000 - 14 * 67);
    assert_eq!(named, (1..=1_000).collect::<Vec<u64>>());
    // Each item as the one-go checkpoint names it.
    assert_eq!(items, whole.leases);
    // The walk started over: leases added meanwhile are in the next pass,
    // and a slice 375 ms late takes half of the leases.
    for i in 1_001..=1_100u64 {
        grant(&mut log, &mut d, i);
    }
    let late = d.checkpoint_slice(&log.t, L1, s(3), s(1), &mut walk, ms(375), pass);
    assert_eq!(late.leases.len(), 550);
    assert_eq!(late.leases.first().map(|l| l.lease_id), Some(1));
    let rest = d.checkpoint_slice(&log.t, L1, s(3), s(1), &mut walk, pass, pass);
    assert_eq!(rest.leases.len(), 550);
    assert_eq!(rest.leases.last().map(|l| l.lease_id), Some(1_100));
    // A lease renewed within the interval is walked but not named.
    step(
        &mut log,
        &mut d,
        Command::RenewBatch(RenewBatch { lease_ids: vec![5] }),
        ms(2_500),
        ms(2_500),
    );
    let again = d.checkpoint_slice(&log.t, L1, s(3), s(1), &mut walk, pass, pass);
    assert_eq!(again.leases.len(), 1_099);
    assert!(again.leases.iter().all(|l| l.lease_id != 5));
}

// Deadlines::due_up_to and due_is_full with a bound other than
// MAX_DUE_PER_ENTRY (the slow-link Expire, MAX_DUE_PER_SLOW_ENTRY): a list
// cut by its own item bound is full, for waiters as for leases, and a list
// that names every due waiter is not.
#[test]
fn a_due_list_cut_by_its_own_bound_is_full_for_waiters_too() {
    let (mut log, mut d) = held_with_waiters(3);
    let two = d.due_up_to(&log.t, L1, s(7), 2);
    assert_eq!(two.waiters.len(), 2);
    assert!(d.due_is_full(&log.t, &two, s(7)), "a third waiter is due");
    let all = d.due_up_to(&log.t, L1, s(7), 1_000);
    assert_eq!(
        all.waiters.iter().map(|w| w.lease_id).collect::<Vec<_>>(),
        vec![2, 3, 4]
    );
    assert!(!d.due_is_full(&log.t, &all, s(7)));
    // A bound of 0 still names one of each kind.
    assert_eq!(d.due_up_to(&log.t, L1, s(7), 0).waiters.len(), 1);
    step(&mut log, &mut d, Command::Expire(two), s(7), s(7));
    let rest = d.due(&log.t, L1, s(7));
    assert_eq!(rest.waiters.len(), 1);
    assert!(!d.due_is_full(&log.t, &rest, s(7)));
}

// S8 ("a waiter whose wait has timed out is removed and never granted"):
// apply ends a due list's leases before it removes its waiters, and a
// lease's end hands its resources off at once. A holder due in the same
// list as the timed-out waiter at the head of its queue used to hand the
// resource to that waiter, whose lease is live: it held the lock after its
// caller had been told it timed out. In a client entry's list the holder
// now waits for a later list, and this one removes the waiter first.
#[test]
fn a_holder_due_with_a_timed_out_head_waiter_waits_for_the_next_list() {
    // Holder: lease 1, 60 s from 0 s. Waiter: lease 2, 60 s from 1 s,
    // waiting 5 s. At 60.5 s the holder and the wait are due, lease 2 is not.
    let (mut log, mut d) = held_with_waiters(1);
    let first = d.due(&log.t, L1, ms(60_500));
    assert!(first.leases.is_empty(), "{first:?}");
    assert_eq!(
        first.waiters,
        vec![DueWaiter {
            resource: "r".into(),
            lease_id: 2,
            enqueue_index: 2
        }]
    );
    assert!(
        d.due_is_full(&log.t, &first, ms(60_500)),
        "the holder is left out"
    );
    let now = ms(60_500);
    let out = step(&mut log, &mut d, Command::Expire(first), now, now);
    assert_eq!(granted(&out), Vec::<LeaseId>::new(), "{:?}", out.effects);
    let second = d.due(&log.t, L1, now);
    assert_eq!(
        second.leases,
        vec![DueLease {
            lease_id: 1,
            last_index: 1
        }]
    );
    let out = step(&mut log, &mut d, Command::Expire(second), now, now);
    assert_eq!(granted(&out), Vec::<LeaseId>::new(), "{:?}", out.effects);
    assert_eq!(log.t.holder("r"), None);
    // Lease 2 was made by its acquire: it ended with its wait, unexpired.
    assert!(log.t.lease(2).is_none());
}

// S8 and L1 in the leader's `Expire` entries: a due holder whose queue's
// head has timed out is named at once, in a second list that goes out after
// a first naming that waiter, so the hand-off reaches the live waiter
// behind it. Held back instead (as a client entry's list does), the holder
// would wait for good while heads kept timing out at the front of its queue.
#[test]
fn expire_lists_remove_a_timed_out_head_before_its_holder_ends() {
    // Holder lease 1 (60 s from 0 s); lease 2 waits 5 s from 1 s (timed out
    // at 6 s); lease 3 waits an hour from 2 s, its lease 120 s.
    let (mut log, mut d) = held_with_waiters(1);
    step(
        &mut log,
        &mut d,
        acquire(hdr(9, 1), "r", new_lease(120_000), 3_600_000, 0),
        s(2),
        s(2),
    );
    let now = ms(60_500);
    assert!(
        d.due(&log.t, L1, now).leases.is_empty(),
        "a client list holds it back"
    );
    let (lists, full) = d.expire_lists(&log.t, L1, now, crate::limits::MAX_DUE_PER_ENTRY);
    assert!(!full);
    type Named = (Vec<LeaseId>, Vec<(String, LeaseId)>);
    let named: Vec<Named> = lists
        .iter()
        .map(|l| {
            (
                l.leases.iter().map(|d| d.lease_id).collect(),
                l.waiters
                    .iter()
                    .map(|w| (w.resource.clone(), w.lease_id))
                    .collect(),
            )
        })
        .collect();
    assert_eq!(
        named,
        vec![(vec![], vec![("r".into(), 2)]), (vec![1], vec![])]
    );
    let mut leases = Vec::new();
    for list in lists {
        let out = step(&mut log, &mut d, Command::Expire(list), now, now);
        leases.extend(granted(&out));
    }
    assert_eq!(leases, vec![3], "the live waiter, not the timed-out head");
}

// S8 ("a waiter whose lease ... is due is ... never granted"): when a dead
// holder and a dead waiter behind it are due together, the waiter's lease
// ends first (a lease that holds nothing goes before one that holds), so
// the holder's end hands the resource to nobody, where ending by lease id
// granted the dead waiter and freed it again in the same entry.
#[test]
fn a_due_waiting_lease_ends_before_the_due_holder_it_waits_on() {
    let (mut log, mut d) = (Log::new(), Deadlines::new());
    step(
        &mut log,
        &mut d,
        acquire(hdr(1, 1), "r", new_lease(60_000), 0, 0),
        s(0),
        s(0),
    );
    step(
        &mut log,
        &mut d,
        acquire(hdr(2, 1), "r", new_lease(60_000), 3_600_000, 0),
        s(1),
        s(1),
    );
    let due = d.due(&log.t, L1, s(61));
    let order: Vec<LeaseId> = due.leases.iter().map(|l| l.lease_id).collect();
    assert_eq!(order, vec![2, 1]);
    let out = step(&mut log, &mut d, Command::Expire(due), s(61), s(61));
    assert_eq!(granted(&out), Vec::<LeaseId>::new(), "{:?}", out.effects);
    assert_eq!(log.t.holder("r"), None);
    assert_eq!(log.t.lease_count(), 0);
}

// S8 beyond the list's bound: when more waiters are due than a due list may
// name, the list still names the timed-out waiters at the front of each
// queue its own command hands off, so a release never hands its resource
// to a waiter that timed out but was left out by the bound.
#[test]
fn a_full_due_list_still_names_the_timed_out_head_of_what_its_command_frees() {
    let (mut log, mut d) = (Log::new(), Deadlines::new());
    let mut at = |cmd, t| step(&mut log, &mut d, cmd, t, t);
    at(acquire(hdr(1, 1), "r", new_lease(60_000), 0, 0), s(0)); // lease 1 holds r
    at(acquire(hdr(3, 1), "s", new_lease(60_000), 0, 0), s(0)); // lease 2 holds s
    at(acquire(hdr(2, 1), "r", new_lease(60_000), 5_000, 0), s(1)); // lease 3 waits on r until 6 s
    at(acquire(hdr(4, 1), "s", new_lease(60_000), 4_000, 0), s(1)); // lease 4 waits on s until 5 s
    let release_r = release(hdr(1, 2), Some("r"), 1, None);
    let mut due = d.due_up_to(&log.t, L1, s(7), 1);
    let waiter = |resource: &str, lease_id, enqueue_index| DueWaiter {
        resource: resource.into(),
        lease_id,
        enqueue_index,
    };
    assert_eq!(
        due.waiters,
        vec![waiter("s", 4, 4)],
        "the bound keeps the earliest"
    );
    assert_eq!(log.t.handoff_resources(&release_r), vec!["r".to_string()]);
    d.name_front_waiters(&log.t, &mut due, log.t.handoff_resources(&release_r), s(7));
    assert_eq!(due.waiters, vec![waiter("r", 3, 3), waiter("s", 4, 4)]);
    let out = release_carrying(&mut log, &mut d, release_r, due, s(7));
    assert_eq!(granted(&out), Vec::<LeaseId>::new(), "{:?}", out.effects);
    assert_eq!(log.t.holder("r"), None);
}

// S8 with leases that hold and wait: a due lease that holds A and waits on B
// ends before the due holder of B (whatever their ids), so B's hand-off
// finds its wait gone; by id, the holder of B (lease 1) ended first and
// granted B to lease 2 in the entry that then ended lease 2 too.
#[test]
fn a_due_lease_that_holds_and_waits_ends_before_the_holder_it_waits_on() {
    let (mut log, mut d) = (Log::new(), Deadlines::new());
    let mut at = |cmd, t| step(&mut log, &mut d, cmd, t, t);
    at(acquire(hdr(1, 1), "b", new_lease(60_000), 0, 0), s(0)); // lease 1 holds b
    at(acquire(hdr(2, 1), "a", new_lease(60_000), 0, 0), s(1)); // lease 2 holds a
    at(acquire(hdr(2, 2), "b", on(2), 3_600_000, 0), s(1)); // and waits on b
    let due = d.due(&log.t, L1, s(61));
    let order: Vec<LeaseId> = due.leases.iter().map(|l| l.lease_id).collect();
    assert_eq!(order, vec![2, 1]);
    let out = step(&mut log, &mut d, Command::Expire(due), s(61), s(61));
    assert_eq!(granted(&out), Vec::<LeaseId>::new(), "{:?}", out.effects);
    assert_eq!((log.t.holder("a"), log.t.holder("b")), (None, None));
}

/// Leases 1..=300 granted at 0 s, lease i due at 1 s + i ms (the lowest
/// ids first): more than a client entry's list names
/// (`MAX_DUE_PER_CLIENT_ENTRY`).
fn leases_filling_a_client_list() -> (Log, Deadlines) {
    let (mut log, mut d) = (Log::new(), Deadlines::new());
    for i in 1..=300 {
        step(
            &mut log,
            &mut d,
            lease_grant(hdr(i, 1), 1_000 + i),
            s(0),
            s(0),
        );
    }
    (log, d)
}

/// Lease 301's release of r and the due list it carries at 7 s
/// (`Deadlines::client_due`).
fn release_of_r_by_301(log: &Log, d: &Deadlines) -> (Command, DueList) {
    let release_r = release(hdr(1_001, 2), Some("r"), 301, None);
    let due = d
        .client_due(&log.t, L1, s(7), std::slice::from_ref(&release_r))
        .expect("something is due at 7 s");
    (release_r, due)
}

// S8 and its list bound (docs/semantics.md S8): the due list a client entry
// carries (`Deadlines::client_due`) names the MAX_DUE_PER_CLIENT_ENTRY
// earliest due leases and waiters, as an `Expire`'s does, however many more
// are due; the client's own command applies in that entry, so it waits for
// whatever the list ends (docs/performance.md, "Client entries' due lists
// of 250"). Beyond that bound it still names the timed-out waiter at the
// front of the queue its own release hands off, and the release then hands
// that resource to nobody.
#[test]
fn a_client_due_list_names_the_bound_earliest_and_the_timed_out_head_it_frees() {
    use crate::limits::MAX_DUE_PER_CLIENT_ENTRY;
    let bound = MAX_DUE_PER_CLIENT_ENTRY as u64;
    assert_eq!(bound, 250);
    let (mut log, mut d) = leases_filling_a_client_list();
    let mut at = |cmd, t| step(&mut log, &mut d, cmd, t, t);
    at(acquire(hdr(1_001, 1), "r", new_lease(60_000), 0, 0), s(0)); // lease 301 holds r
    at(acquire(hdr(1_002, 1), "s", new_lease(60_000), 0, 0), s(0)); // lease 302 holds s

    // Leases 303..=602 wait on s until 2 s; lease 603 waits on r until 4 s.
    for c in 0..300 {
        at(
            acquire(hdr(2_000 + c, 1), "s", new_lease(60_000), 1_000, 0),
            s(1),
        );
    }
    at(
        acquire(hdr(3_000, 1), "r", new_lease(60_000), 3_000, 0),
        s(1),
    );
    let (release_r, due) = release_of_r_by_301(&log, &d);
    let leases: Vec<LeaseId> = due.leases.iter().map(|l| l.lease_id).collect();
    assert_eq!(leases, (1..=bound).collect::<Vec<_>>(), "the earliest 250");
    let on = |r: &str| due.waiters.iter().filter(|w| w.resource == r).count();
    assert_eq!(
        on("s"),
        MAX_DUE_PER_CLIENT_ENTRY,
        "the bound's worth of s's"
    );
    assert_eq!(
        due.waiters
            .iter()
            .filter(|w| w.resource == "r")
            .map(|w| w.lease_id)
            .collect::<Vec<_>>(),
        vec![603],
        "r's timed-out head, beyond the bound"
    );
    let out = release_carrying(&mut log, &mut d, release_r, due, s(7));
    assert_eq!(granted(&out), Vec::<LeaseId>::new(), "{:?}", out.effects);
    assert_eq!(log.t.holder("r"), None);
    assert!(
        (1..=bound).all(|id| log.t.lease(id).is_none()),
        "listed: ended"
    );
    assert!(
        (bound + 1..=300).all(|id| log.t.lease(id).is_some()),
        "left for the next Expire"
    );
    // Nothing due: no list at all.
    assert_eq!(d.client_due(&log.t, L1, s(0), &[]), None);
}

/// [`leases_filling_a_client_list`], lease 301 holding r, and behind it on r lease 302 (TTL 2 s: due after
/// those 300) and lease 303 (live), both waiting an hour; the release of r
/// by 301 and the due list it carries at 7 s.
fn due_head_beyond_the_bound() -> (Log, Deadlines, Command, DueList) {
    let (mut log, mut d) = leases_filling_a_client_list();
    let mut at = |cmd, t| step(&mut log, &mut d, cmd, t, t);
    at(acquire(hdr(1_001, 1), "r", new_lease(60_000), 0, 0), s(0));
    at(
        acquire(hdr(1_002, 1), "r", new_lease(2_000), 3_600_000, 0),
        s(0),
    );
    at(
        acquire(hdr(1_003, 1), "r", new_lease(60_000), 3_600_000, 0),
        s(0),
    );
    let (release_r, due) = release_of_r_by_301(&log, &d);
    (log, d, release_r, due)
}

// S8 beyond the list's bound, for a waiter whose lease (not its wait) is
// due: a release's hand-off must not reach it. The bound
// (MAX_DUE_PER_CLIENT_ENTRY, earliest first) leaves the head's lease out,
// so the list names it too, as a lease that holds nothing: apply ends it
// (expired) and the release hands r to the live waiter behind it. Without
// that, the release granted r to a lease the leader saw as due.
#[test]
fn a_client_due_list_ends_a_head_waiters_due_lease_beyond_the_bound() {
    use crate::limits::MAX_DUE_PER_CLIENT_ENTRY;
    use crate::LeaseEndReason;
    let (mut log, mut d, release_r, due) = due_head_beyond_the_bound();
    let leases: Vec<LeaseId> = due.leases.iter().map(|l| l.lease_id).collect();
    assert_eq!(leases.len(), MAX_DUE_PER_CLIENT_ENTRY + 1, "{leases:?}");
    assert!(
        leases.contains(&302),
        "the head's lease is named: {leases:?}"
    );
    assert!(
        due.waiters.is_empty(),
        "no wait is named: {:?}",
        due.waiters
    );
    let out = release_carrying(&mut log, &mut d, release_r, due, s(7));
    assert_eq!(granted(&out), vec![303], "{:?}", out.effects);
    assert!(
        out.effects.iter().any(|e| matches!(
            e,
            Effect::LeaseEnded {
                lease_id: 302,
                reason: LeaseEndReason::Expired
            }
        )),
        "302 ended as expired: {:?}",
        out.effects
    );
}

// S8's guard for leases (docs/semantics.md "Leader duties and their
// guards"): a renew that commits between the list's proposal and its apply
// wins. The head's lease, named because it was due, renews in between: apply
// skips it, it keeps its wait and its place, and the release grants it r.
#[test]
fn a_head_waiter_renewed_after_its_due_lease_was_named_keeps_its_place() {
    let (mut log, mut d, release_r, due) = due_head_beyond_the_bound();
    assert!(due.leases.iter().any(|l| l.lease_id == 302));
    step(
        &mut log,
        &mut d,
        Command::RenewBatch(RenewBatch {
            lease_ids: vec![302],
        }),
        s(7),
        s(7),
    );
    let out = release_carrying(&mut log, &mut d, release_r, due, s(7));
    assert_eq!(granted(&out), vec![302], "{:?}", out.effects);
    assert!(log.t.lease(302).is_some());
}
