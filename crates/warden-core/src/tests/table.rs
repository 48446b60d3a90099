use super::*;
use crate::effect::{Effect, FreeReason, LeaseEndReason, WaiterRemovedReason};
use crate::limits::MAX_CLIENTS;
use crate::query::HolderView;
use crate::snapshot::SnapshotError;

// S2: tokens 1, 2, 3 across release and re-acquire, by one lease and by new ones.
#[test]
fn tokens_increase_across_release_and_reacquire() {
    let mut log = Log::new();
    let a = log.apply(acquire(hdr(7, 1), "orders", new_lease(10_000), 0, 0));
    assert_eq!(granted(&a), (1, 1));
    assert!(matches!(
        log.apply(release(hdr(7, 2), Some("orders"), 1, Some(1)))
            .response,
        Response::Released {
            fencing_token: 1,
            ..
        }
    ));
    // The auto lease died with its last lock.
    assert!(log.t.lease(1).is_none());
    let b = log.apply(acquire(hdr(7, 3), "orders", new_lease(10_000), 0, 0));
    assert_eq!(granted(&b), (2, 2));
    log.apply(release(hdr(7, 4), None, 2, None));
    let c = log.apply(acquire(hdr(8, 1), "orders", new_lease(10_000), 0, 0));
    assert_eq!(granted(&c), (3, 3));
    assert_eq!(log.t.next_token(), 4);
    assert_eq!(log.t.next_lease_id(), 4);
}

// S1: a second acquire of a held resource is NotGranted Held and the lock state does not change.
#[test]
fn second_acquire_of_held_resource_is_not_granted() {
    let mut log = Log::new();
    log.apply(acquire(hdr(1, 1), "inventory", new_lease(5_000), 0, 0));
    let before = lock_state(&log.t);
    let full_before = log.t.to_snapshot();
    let a = log.apply(acquire(hdr(2, 1), "inventory", new_lease(5_000), 0, 0));
    match a.response {
        Response::Acquire(AcquireReply {
            outcome:
                AcquireOutcome::NotGranted {
                    holder_lease_id: Some(1),
                    reason: NotGrantedReason::Held,
                    ..
                },
            lease_live: false,
            current_token: None,
            retried: false,
        }) => {}
        other => panic!("{other:?}"),
    }
    assert!(a.effects.is_empty(), "{:?}", a.effects);
    assert_eq!(lock_state(&log.t), before);
    // Only the outcome table changed (the answer is kept for a retry, S7).
    assert_ne!(log.t.to_snapshot(), full_before);
    assert_eq!(log.t.holder("inventory").map(|h| h.fencing_token), Some(1));
    assert_eq!(
        log.t.next_lease_id(),
        2,
        "the try-lock's lease id was not consumed"
    );
}

// etcd 3.4.3 Jepsen / S7: an acquire that is not granted leaves no lease behind.
#[test]
fn not_granted_acquire_leaves_no_lease() {
    let mut log = Log::new();
    log.apply(acquire(hdr(1, 1), "job", new_lease(5_000), 0, 0));
    log.apply(acquire(hdr(2, 1), "job", new_lease(5_000), 0, 0));
    assert_eq!(log.t.leases().count(), 1);
    assert_eq!(log.t.leases().next().map(|l| l.lease_id), Some(1));
}

// S6, etcd issue 22082: a late release with an old token never frees a newer grant of the same lease.
#[test]
fn stale_release_after_reacquire_by_same_lease_is_refused() {
    let mut log = Log::new();
    let g = log.apply(lease_grant(hdr(1, 1), 10_000));
    assert_eq!(
        g.response,
        Response::LeaseGranted {
            lease_id: 1,
            ttl_ms: 10_000
        }
    );
    assert_eq!(
        granted(&log.apply(acquire(hdr(1, 2), "R1", on(1), 0, 0))),
        (1, 1)
    );
    assert_eq!(
        granted(&log.apply(acquire(hdr(1, 3), "R2", on(1), 0, 0))),
        (1, 2)
    );
    log.apply(release(hdr(1, 4), Some("R1"), 1, Some(1)));
    assert_eq!(
        granted(&log.apply(acquire(hdr(1, 5), "R1", on(1), 0, 0))),
        (1, 3)
    );
    let before = lock_state(&log.t);
    let late = log.apply(release(hdr(1, 6), Some("R1"), 1, Some(1)));
    match &late.response {
        Response::Error(e) => {
            assert_eq!(e.code, ErrorCode::FailedPrecondition);
            assert_eq!(e.field.as_deref(), Some("fencing_token"));
            assert!(e.message.contains("stale fencing_token"));
        }
        other => panic!("{other:?}"),
    }
    assert!(late.effects.is_empty());
    assert_eq!(lock_state(&log.t), before);
    // A token above the grant's was never this grant's: said so, not "stale".
    let high = log.apply(release(hdr(2, 1), Some("R1"), 1, Some(129)));
    match &high.response {
        Response::Error(e) => {
            assert_eq!(e.code, ErrorCode::FailedPrecondition);
            assert_eq!(e.field.as_deref(), Some("fencing_token"));
            assert_eq!(
                e.message,
                "fencing_token 129 was never this grant's: the current grant has the lower token 3"
            );
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(lock_state(&log.t), before);
    assert_eq!(
        log.t.holder("R1"),
        Some(HolderView {
            lease_id: 1,
            fencing_token: 3,
            ttl_ms: 10_000,
            grant_index: 5,
            granted_at_ms: 0,
            mode: Mode::Exclusive,
            slot: None,
        })
    );
    // A session lease (not auto) holding two locks must name the resource.
    let e = log.apply(release(hdr(1, 7), None, 1, None));
    assert!(matches!(
        e.response,
        Response::Error(CommandError {
            code: ErrorCode::FailedPrecondition,
            ..
        })
    ));
    // Releasing a resource the lease does not hold.
    let e = log.apply(release(hdr(1, 8), Some("R9"), 1, None));
    assert!(matches!(&e.response, Response::Error(c) if c.message.contains("not the holder")));
}

// S8 + S1: one expiry (a tick past the lease's end) freeing a resource with
// three waiters grants exactly one, FIFO.
#[test]
fn expire_hands_off_to_exactly_one_waiter() {
    let mut log = Log::new();
    log.apply(acquire(hdr(1, 1), "printer", new_lease(2_000), 0, 0)); // lease 1, token 1, index 1
    for c in 2..=4 {
        let q = log.apply(acquire(hdr(c, 1), "printer", new_lease(30_000), 60_000, 0));
        assert!(matches!(
            q.response,
            Response::Acquire(AcquireReply {
                outcome: AcquireOutcome::Queued { .. },
                ..
            })
        ));
    }
    assert_eq!(log.t.waiter_position("printer", 3), Some(2));
    let out = log.expire(1);
    assert_eq!(log.t.now_ms(), 2_000);
    assert_eq!(out.response, Response::Done);
    let grants: Vec<_> = out
        .effects
        .iter()
        .filter(|e| matches!(e, Effect::Granted { .. }))
        .collect();
    assert_eq!(grants.len(), 1);
    assert_eq!(
        grants[0],
        &Effect::Granted {
            resource: "printer".into(),
            lease_id: 2,
            fencing_token: 2,
            grant_index: 5,
            mode: Mode::Exclusive,
            slot: None,
        }
    );
    assert!(out.effects.contains(&Effect::Freed {
        resource: "printer".into(),
        lease_id: 1,
        fencing_token: 1,
        reason: FreeReason::Expired,
        granted_at_ms: 0,
    }));
    assert!(out.effects.contains(&Effect::LeaseEnded {
        lease_id: 1,
        reason: LeaseEndReason::Expired
    }));
    assert_eq!(
        log.t
            .waiters("printer")
            .iter()
            .map(|w| (w.lease_id, w.position))
            .collect::<Vec<_>>(),
        vec![(3, 1), (4, 2)]
    );
    assert_eq!(log.t.resources_held(), 1);
}

// S2: one entry's sweep freeing three resources gives each handoff a distinct, increasing token.
#[test]
fn batched_expire_gives_distinct_increasing_tokens() {
    let mut log = Log::new();
    let g = log.apply(lease_grant(hdr(1, 1), 3_000)); // lease 1, last_index 1
    assert!(matches!(
        g.response,
        Response::LeaseGranted { lease_id: 1, .. }
    ));
    for (i, r) in ["a", "b", "c"].iter().enumerate() {
        log.apply(acquire(hdr(1, 2 + i as u64), r, on(1), 0, 0)); // tokens 1, 2, 3
    }
    for (i, r) in ["a", "b", "c"].iter().enumerate() {
        log.apply(acquire(
            hdr(10 + i as u64, 1),
            r,
            new_lease(9_000),
            10_000,
            0,
        )); // leases 2, 3, 4 queued
    }
    let out = log.expire(1);
    let tokens: Vec<_> = out
        .effects
        .iter()
        .filter_map(|e| match e {
            Effect::Granted { fencing_token, .. } => Some(*fencing_token),
            _ => None,
        })
        .collect();
    assert_eq!(tokens, vec![4, 5, 6]);
    assert_eq!(
        log.t.holder("c").map(|h| (h.lease_id, h.fencing_token)),
        Some((4, 6))
    );
    assert_eq!(log.t.next_token(), 7);
}

// S4: a committed renew restarts the lease's full TTL from the renew's
// `now`; a tick at the old instant ends nothing, one at the new ends it.
#[test]
fn a_renew_moves_the_leases_end() {
    let mut log = Log::new();
    log.apply(acquire(hdr(1, 1), "x", new_lease(1_000), 0, 0)); // lease 1
    assert_eq!(log.t.lease(1).map(|l| l.expires_at_ms), Some(1_000));
    log.advance(500);
    let r = log.apply(Command::RenewBatch(RenewBatch {
        lease_ids: vec![1, 99],
    }));
    assert_eq!(
        r.response,
        Response::Renewed(vec![(1, Some(1_000)), (99, None)])
    );
    assert_eq!(
        r.effects,
        vec![Effect::LeaseSet {
            lease_id: 1,
            ttl_ms: 1_000
        }]
    );
    assert_eq!(
        log.t.lease(1).map(|l| (l.expires_at_ms, l.renew_index)),
        Some((1_500, 2))
    );
    let before = log.t.to_snapshot();
    let out = log.tick_at(1_499);
    assert!(out.effects.is_empty());
    // Only cluster time moved.
    assert_ne!(log.t.to_snapshot(), before);
    assert_eq!(log.t.holder("x").map(|h| h.lease_id), Some(1));
    let out = log.tick_at(1_500);
    assert!(out.effects.contains(&Effect::LeaseEnded {
        lease_id: 1,
        reason: LeaseEndReason::Expired
    }));
    assert!(log.t.holder("x").is_none());
}

// etcd 3.4.3 Jepsen, S8: a waiter whose lease expired is removed and never granted.
#[test]
fn waiter_with_dead_lease_is_never_granted() {
    let mut log = Log::new();
    log.apply(acquire(hdr(1, 1), "x", new_lease(10_000), 0, 0)); // lease 1 holds
    log.apply(acquire(hdr(2, 1), "x", new_lease(1_000), 60_000, 0)); // lease 2 waits
    log.apply(acquire(hdr(3, 1), "x", new_lease(10_000), 60_000, 0)); // lease 3 waits
    let out = log.expire(2);
    assert!(out.effects.contains(&Effect::WaiterRemoved {
        resource: "x".into(),
        lease_id: 2,
        enqueue_index: 2,
        reason: WaiterRemovedReason::LeaseEnded,
        enqueued_at_ms: 0,
    }));
    let out = log.apply(release(hdr(1, 2), Some("x"), 1, Some(1)));
    assert!(out.effects.contains(&Effect::Granted {
        resource: "x".into(),
        lease_id: 3,
        fencing_token: 2,
        grant_index: 5,
        mode: Mode::Exclusive,
        slot: None,
    }));
    // A timed-out waiter is removed too, and its auto lease with it.
    log.apply(acquire(hdr(4, 1), "x", new_lease(10_000), 5_000, 0)); // lease 4 waits, index 6
    assert_eq!(log.t.waiters("x")[0].deadline_ms, 6_000);
    let out = log.tick_at(6_000);
    assert!(out.effects.contains(&Effect::WaiterRemoved {
        resource: "x".into(),
        lease_id: 4,
        enqueue_index: 6,
        reason: WaiterRemovedReason::TimedOut,
        enqueued_at_ms: 1_000,
    }));
    assert!(out.effects.contains(&Effect::LeaseEnded {
        lease_id: 4,
        reason: LeaseEndReason::Released
    }));
    assert!(log.t.waiters("x").is_empty());
}

// S7: a retried acquire returns the first grant (retried = true), also after a snapshot round trip.
#[test]
fn retried_acquire_returns_the_same_grant() {
    let mut log = Log::new();
    let cmd = acquire(hdr(42, 1), "ledger", new_lease(15_000), 0, 0);
    let first = log.apply(cmd.clone());
    assert_eq!(granted(&first), (1, 1));
    let again = log.apply(cmd.clone());
    let Response::Acquire(r) = &again.response else {
        panic!("{again:?}")
    };
    assert!(r.retried && r.lease_live);
    assert_eq!(r.current_token, Some(1));
    assert!(matches!(
        r.outcome,
        AcquireOutcome::Granted {
            fencing_token: 1,
            lease_id: 1,
            ttl_ms: 15_000,
            grant_index: 1,
            ..
        }
    ));
    assert!(again.effects.is_empty());
    assert_eq!(log.t.next_token(), 2);

    let bytes = log.t.to_snapshot();
    let mut restored = Log::of(
        LockTable::from_snapshot(&bytes).expect("round trip"),
        log.index,
    );
    assert_eq!(restored.t, log.t);
    let after = restored.apply(cmd.clone());
    assert_eq!(after.response, again.response);
    // Once the holder released, a retry still says "granted, token 1" but reports the lease gone.
    restored.apply(release(hdr(42, 2), Some("ledger"), 1, Some(1)));
    let late = restored.apply(cmd);
    let Response::Acquire(r) = &late.response else {
        panic!()
    };
    assert!(r.retried && !r.lease_live && r.current_token.is_none());
    assert_eq!(restored.t.next_token(), 2);
}

// S7: a reused request id with other arguments is InvalidArgument; an acknowledged one is request_expired.
#[test]
fn reused_or_acknowledged_request_ids_are_refused() {
    let mut log = Log::new();
    log.apply(acquire(hdr(5, 1), "a", new_lease(5_000), 0, 0));
    let before = log.t.to_snapshot();
    let out = log.apply(acquire(hdr(5, 1), "b", new_lease(5_000), 0, 0));
    match &out.response {
        Response::Error(e) => {
            assert_eq!(e.code, ErrorCode::InvalidArgument);
            assert_eq!(e.field.as_deref(), Some("request_id"));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(log.t.to_snapshot(), before);
    // Request 2 acknowledges 1: the outcome of 1 is dropped, a retry of 1 expires.
    log.apply(release(
        RequestHeader {
            client_id: 5,
            request_id: 2,
            acked_request_id: 1,
        },
        Some("a"),
        1,
        None,
    ));
    let out = log.apply(acquire(hdr(5, 1), "a", new_lease(5_000), 0, 0));
    assert!(
        matches!(&out.response, Response::Error(e) if e.code == ErrorCode::RequestExpired && e.message.starts_with("request_expired"))
    );
    assert!(log.t.holder("a").is_none(), "never a second execution");
    // An unknown client that acknowledges something had its record dropped.
    let out = log.apply(acquire(
        RequestHeader {
            client_id: 77,
            request_id: 9,
            acked_request_id: 8,
        },
        "a",
        new_lease(5_000),
        0,
        0,
    ));
    assert!(matches!(&out.response, Response::Error(e) if e.code == ErrorCode::RequestExpired));
}

// S7 bounded: 100,000 one-shot clients leave at most MAX_CLIENTS records.
#[test]
fn one_shot_clients_are_bounded() {
    let mut log = Log::new();
    for c in 1..=100_000u64 {
        let a = log.t.apply(
            log.index + 1,
            L1,
            stamp(L1, 0),
            &acquire(hdr(c, 1), "hot", new_lease(1_000), 0, 0),
        );
        log.index += 1;
        let (lease, token) = granted(&a);
        assert_eq!(token, c);
        log.index += 1;
        log.t.apply(
            log.index,
            L1,
            stamp(L1, 0),
            &release(hdr(c, 2), Some("hot"), lease, Some(token)),
        );
    }
    let stats = log.t.outcome_stats();
    assert!(stats.clients <= MAX_CLIENTS, "{stats:?}");
    assert_eq!(stats.clients, MAX_CLIENTS);
    assert_eq!(log.t.leases().count(), 0);
    assert_eq!(log.t.next_token(), 100_001);
    // The oldest were dropped: the latest client is kept, client 1 is not.
    assert!(log.t.clients().any(|(c, _)| c == 100_000));
    assert!(!log.t.clients().any(|(c, _)| c == 1));
}

// S7: DropClients drops only records whose last_index still matches, and
// only with a stamp of the entry's own leader.
#[test]
fn drop_clients_respects_last_index_and_leader() {
    let mut log = Log::new();
    log.apply(lease_grant(hdr(1, 1), 5_000)); // client 1 at index 1
    log.apply(lease_grant(hdr(2, 1), 5_000)); // client 2 at index 2
    log.apply_stamped(
        stamp(L2, 0),
        Command::DropClients(DropClients {
            leader: L2,
            clients: vec![(1, 1)],
        }),
    );
    assert_eq!(log.t.outcome_stats().clients, 2);
    log.apply(Command::DropClients(DropClients {
        leader: L1,
        clients: vec![(1, 1), (2, 1)],
    }));
    assert_eq!(log.t.clients().collect::<Vec<_>>(), vec![(2, 2)]);
}

// Snapshots of the same applied entries are byte-identical ("Time", last point).
#[test]
fn equal_entries_give_identical_snapshots() {
    let entries = vec![
        (0, lease_grant(hdr(1, 1), 4_000)),
        (100, acquire(hdr(1, 2), "a", on(1), 0, 2_000)),
        (200, acquire(hdr(2, 1), "a", new_lease(6_000), 30_000, 0)),
        (300, acquire(hdr(3, 1), "b", new_lease(6_000), 0, 0)),
        (
            1_000,
            Command::Promote(Promote {
                no_expiry_before_ms: 3_000,
            }),
        ),
        (4_000, Command::Tick),
        (4_500, Command::Tick),
        (
            5_000,
            Command::RenewBatch(RenewBatch {
                lease_ids: vec![2, 3],
            }),
        ),
    ];
    let (mut x, mut y) = (Log::new(), Log::new());
    for (at, e) in &entries {
        x.now_ms = *at;
        y.now_ms = *at;
        assert_eq!(x.apply(e.clone()), y.apply(e.clone()));
    }
    // Lease 1 ended at 4 s: "a" is in lock-delay until 6 s.
    assert_eq!(x.t.lock_delay("a").map(|d| d.ends_at_ms), Some(6_000));
    assert_eq!(x.t.to_snapshot(), y.t.to_snapshot());
    assert_eq!(
        LockTable::from_snapshot(&x.t.to_snapshot()).map(|t| t.to_snapshot()),
        Ok(y.t.to_snapshot())
    );
}

// "What bad input gets": a typed error naming the field; the snapshot bytes do not change.
#[test]
fn bad_input_is_refused_with_a_named_field_and_changes_nothing() {
    let mut log = Log::new();
    log.apply(lease_grant(hdr(1, 1), 5_000)); // lease 1
    log.apply(acquire(hdr(1, 2), "held", on(1), 0, 0));
    let long = "x".repeat(513);
    let cases: Vec<(Command, &str)> = vec![
        (acquire(hdr(2, 1), "", new_lease(5_000), 0, 0), "resource"),
        (
            acquire(hdr(2, 1), &long, new_lease(5_000), 0, 0),
            "resource",
        ),
        (
            acquire(hdr(2, 1), "a\u{0}b", new_lease(5_000), 0, 0),
            "resource",
        ),
        (
            acquire(hdr(2, 1), "a\nb", new_lease(5_000), 0, 0),
            "resource",
        ),
        (acquire(hdr(2, 1), "a", new_lease(999), 0, 0), "ttl_ms"),
        (
            acquire(hdr(2, 1), "a", new_lease(3_600_001), 0, 0),
            "ttl_ms",
        ),
        (acquire(hdr(2, 1), "a", new_lease(u64::MAX), 0, 0), "ttl_ms"),
        (
            acquire(hdr(2, 1), "a", new_lease(5_000), 3_600_001, 0),
            "wait_timeout_ms",
        ),
        (
            acquire(hdr(2, 1), "a", new_lease(5_000), u64::MAX, 0),
            "wait_timeout_ms",
        ),
        (
            acquire(hdr(2, 1), "a", new_lease(5_000), 0, 60_001),
            "lock_delay_ms",
        ),
        (acquire(hdr(2, 1), "a", on(u64::MAX), 0, 0), "lease_id"),
        (acquire(hdr(2, 1), "a", on(0), 0, 0), "lease_id"),
        (acquire(hdr(0, 1), "a", new_lease(5_000), 0, 0), "client_id"),
        (
            acquire(hdr(2, 0), "a", new_lease(5_000), 0, 0),
            "request_id",
        ),
        (
            release(hdr(2, 1), Some("held"), 1, Some(u64::MAX)),
            "fencing_token",
        ),
        (release(hdr(2, 1), Some("held"), u64::MAX, None), "lease_id"),
        (lease_grant(hdr(2, 1), 999), "ttl_ms"),
        (
            Command::Revoke(Revoke {
                header: hdr(2, 1),
                lease_id: 0,
                at_unix_ms: 0,
            }),
            "lease_id",
        ),
        (
            Command::ForceRelease(ForceRelease {
                header: hdr(2, 1),
                resource: long.clone(),
                fencing_token: None,
                requested_by: "ops".into(),
                at_unix_ms: 0,
            }),
            "resource",
        ),
    ];
    for (cmd, field) in cases {
        let before = log.t.to_snapshot();
        let out = log.apply(cmd.clone());
        match &out.response {
            Response::Error(e) => {
                assert_eq!(e.code, ErrorCode::InvalidArgument, "{cmd:?}");
                assert_eq!(e.field.as_deref(), Some(field), "{cmd:?}");
            }
            other => panic!("{cmd:?} gave {other:?}"),
        }
        assert!(out.effects.is_empty());
        assert_eq!(log.t.to_snapshot(), before, "{cmd:?}");
    }
    // Refusals that depend on the state (unknown lease) change no lock state;
    // their answer is kept in the outcome table so a retry gets the same one (S7).
    let cases: Vec<(Command, ErrorCode, &str)> = vec![
        (
            acquire(hdr(3, 1), "a", on(999), 0, 0),
            ErrorCode::NotFound,
            "lease_id",
        ),
        (
            release(hdr(3, 2), Some("held"), 999, None),
            ErrorCode::NotFound,
            "lease_id",
        ),
        (
            Command::Revoke(Revoke {
                header: hdr(3, 3),
                lease_id: 999,
                at_unix_ms: 0,
            }),
            ErrorCode::NotFound,
            "lease_id",
        ),
        (
            Command::ForceRelease(ForceRelease {
                header: hdr(3, 4),
                resource: "free".into(),
                fencing_token: None,
                requested_by: "ops".into(),
                at_unix_ms: 0,
            }),
            ErrorCode::NotFound,
            "resource",
        ),
        (
            Command::ForceRelease(ForceRelease {
                header: hdr(3, 5),
                resource: "held".into(),
                fencing_token: Some(7),
                requested_by: "ops".into(),
                at_unix_ms: 0,
            }),
            ErrorCode::FailedPrecondition,
            "fencing_token",
        ),
    ];
    for (cmd, code, field) in cases {
        let before = lock_state(&log.t);
        let out = log.apply(cmd.clone());
        match &out.response {
            Response::Error(e) => {
                assert_eq!((e.code, e.field.as_deref()), (code, Some(field)), "{cmd:?}");
            }
            other => panic!("{cmd:?} gave {other:?}"),
        }
        assert_eq!(lock_state(&log.t), before, "{cmd:?}");
        assert_eq!(
            log.apply(cmd).response,
            out.response,
            "a retry gets the same refusal"
        );
    }
    drop(long);
}

// Snapshot decoding never panics and names what is wrong.
#[test]
fn garbage_snapshots_are_typed_errors() {
    assert_eq!(LockTable::from_snapshot(&[]), Err(SnapshotError::Empty));
    assert_eq!(
        LockTable::from_snapshot(&[9, 1, 2]),
        Err(SnapshotError::UnsupportedVersion(9))
    );
    assert!(matches!(
        LockTable::from_snapshot(&[1, 0xff]),
        Err(SnapshotError::Decode(_))
    ));
    let mut bytes = LockTable::new().to_snapshot();
    bytes.push(0);
    assert_eq!(
        LockTable::from_snapshot(&bytes),
        Err(SnapshotError::TrailingBytes(1))
    );
    // A table that decodes but lies (next_token 0) is refused.
    let mut t = LockTable::new();
    t.next_token = 0;
    assert!(matches!(
        LockTable::from_snapshot(&t.to_snapshot()),
        Err(SnapshotError::Inconsistent(_))
    ));
}

// S2 / Validate: the holder's token is current; once a newer grant exists the
// old one is stale (also after the resource is freed); a token never issued
// is unknown.
#[test]
fn token_state_current_stale_unknown() {
    use crate::query::TokenState;
    let mut log = Log::new();
    let a = log.apply(acquire(hdr(7, 1), "orders", new_lease(10_000), 0, 0));
    assert_eq!(granted(&a), (1, 1));
    assert_eq!(log.t.token_state("orders", 1), TokenState::Current);
    assert_eq!(log.t.token_state("orders", 2), TokenState::Unknown);
    assert_eq!(log.t.token_state("orders", 0), TokenState::Unknown);
    assert_eq!(log.t.token_state("other", 1), TokenState::Stale);
    log.apply(release(hdr(7, 2), Some("orders"), 1, Some(1)));
    assert_eq!(log.t.token_state("orders", 1), TokenState::Stale);
    let b = log.apply(acquire(hdr(8, 1), "orders", new_lease(10_000), 0, 0));
    assert_eq!(granted(&b), (2, 2));
    assert_eq!(log.t.token_state("orders", 1), TokenState::Stale);
    assert_eq!(log.t.token_state("orders", 2), TokenState::Current);
    assert_eq!(log.t.token_state("orders", 3), TokenState::Unknown);
}

// List ages (display only): a holder's grant and a waiter's deadline are
// cluster time (the entry's `now`), the same on every replica.
#[test]
fn holders_and_waiters_carry_cluster_time() {
    let mut log = Log::new();
    log.advance(1_000);
    log.apply(acquire(hdr(1, 1), "r", new_lease(5_000), 0, 0));
    log.advance(2_000);
    log.apply(acquire(hdr(2, 1), "r", new_lease(5_000), 10_000, 0));
    assert_eq!(log.t.holder("r").map(|h| h.granted_at_ms), Some(1_000));
    assert_eq!(
        log.t
            .waiters("r")
            .iter()
            .map(|w| (w.lease_id, w.deadline_ms))
            .collect::<Vec<_>>(),
        vec![(2, 13_000)]
    );
    log.advance(1_000);
    log.apply(release(hdr(1, 2), Some("r"), 1, None));
    assert_eq!(log.t.holder("r").map(|h| h.granted_at_ms), Some(4_000));
    assert!(log.t.waiters("r").is_empty());
}

// S2, docs/semantics.md "Membership and data loss": a token floor puts every later
// token above it; a lower floor changes nothing; a floor >= MAX_ID is refused
// with a named field and nothing changes; the floor survives a snapshot.
#[test]
fn token_floor_raises_the_counter_and_never_lowers_it() {
    use crate::limits::MAX_ID;
    let floor = |floor| Command::RaiseTokenFloor(RaiseTokenFloor { floor });
    let mut log = Log::new();
    assert_eq!(log.apply(floor(1000)).response, Response::Done);
    let a = log.apply(acquire(hdr(1, 1), "r", new_lease(5_000), 0, 0));
    assert_eq!(granted(&a).1, 1001);
    assert_eq!(log.apply(floor(5)).response, Response::Done);
    assert_eq!(log.t.next_token(), 1002);
    for bad in [MAX_ID, MAX_ID + 1, u64::MAX] {
        let before = log.t.to_snapshot();
        match log.apply(floor(bad)).response {
            Response::Error(e) => {
                assert_eq!(e.code, ErrorCode::InvalidArgument);
                assert_eq!(e.field.as_deref(), Some("floor"));
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(log.t.to_snapshot(), before);
    }
    assert_eq!(log.apply(floor(MAX_ID - 1)).response, Response::Done);
    assert_eq!(log.t.next_token(), MAX_ID);
    let back = LockTable::from_snapshot(&log.t.to_snapshot()).expect("round trip");
    assert_eq!(back.next_token(), MAX_ID);

    let mut log = Log::new();
    log.apply(floor(1000));
    let mut log = Log {
        t: LockTable::from_snapshot(&log.t.to_snapshot()).expect("round trip"),
        ..log
    };
    let a = log.apply(acquire(hdr(1, 1), "r", new_lease(5_000), 0, 0));
    assert_eq!(granted(&a).1, 1001);
}
