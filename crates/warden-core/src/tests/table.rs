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

// S8 + S1: one Expire freeing a resource with three waiters grants exactly one, FIFO.
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
    let out = log.apply(expire(L1, &[(1, 1)]));
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
        reason: FreeReason::Expired
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

// S2: one batched Expire entry freeing three resources gives each handoff a distinct, increasing token.
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
    let out = log.apply(expire(L1, &[(1, 1)]));
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

// etcd issue 15247: an Expire whose leader id differs from the entry's log leader is ignored entirely.
#[test]
fn expire_from_a_stale_leader_is_ignored() {
    let mut log = Log::new();
    log.apply(acquire(hdr(1, 1), "x", new_lease(1_000), 0, 0));
    let before = log.t.to_snapshot();
    log.leader = L2; // the log's leader is term 2; the entry names term 1
    let out = log.apply(expire(L1, &[(1, 1)]));
    assert_eq!(
        out,
        crate::table::Applied {
            response: Response::Done,
            effects: vec![]
        }
    );
    assert_eq!(log.t.to_snapshot(), before);
    // A due list inside an acquire from the stale leader is ignored too.
    let mut cmd = acquire(hdr(2, 1), "x", new_lease(1_000), 0, 0);
    if let Command::Acquire(a) = &mut cmd {
        a.due = Some(DueList {
            leader: L1,
            leases: vec![DueLease {
                lease_id: 1,
                last_index: 1,
            }],
            waiters: vec![],
        });
    }
    let out = log.apply(cmd);
    assert!(matches!(
        out.response,
        Response::Acquire(AcquireReply {
            outcome: AcquireOutcome::NotGranted { .. },
            ..
        })
    ));
    assert!(log.t.lease(1).is_some());
}

// S4: an Expire naming a last_index that a committed renew has moved is skipped.
#[test]
fn expire_skips_a_lease_renewed_in_between() {
    let mut log = Log::new();
    log.apply(acquire(hdr(1, 1), "x", new_lease(1_000), 0, 0)); // lease 1, last_index 1
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
    assert_eq!(log.t.lease(1).map(|l| l.last_index), Some(2));
    let before = log.t.to_snapshot();
    let out = log.apply(expire(L1, &[(1, 1)]));
    assert!(out.effects.is_empty());
    assert_eq!(log.t.to_snapshot(), before);
    // With the right last_index it does expire.
    let out = log.apply(expire(L1, &[(1, 2)]));
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
    log.apply(acquire(hdr(2, 1), "x", new_lease(1_000), 60_000, 0)); // lease 2 waits, last_index 2
    log.apply(acquire(hdr(3, 1), "x", new_lease(10_000), 60_000, 0)); // lease 3 waits
    let out = log.apply(expire(L1, &[(2, 2)]));
    assert!(out.effects.contains(&Effect::WaiterRemoved {
        resource: "x".into(),
        lease_id: 2,
        enqueue_index: 2,
        reason: WaiterRemovedReason::LeaseEnded
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
    let out = log.apply(Command::Expire(DueList {
        leader: L1,
        leases: vec![],
        waiters: vec![DueWaiter {
            resource: "x".into(),
            lease_id: 4,
            enqueue_index: 6,
        }],
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
    let mut retry = cmd.clone();
    if let Command::Acquire(a) = &mut retry {
        a.due = Some(DueList {
            leader: L1,
            leases: vec![],
            waiters: vec![],
        });
    }
    let again = log.apply(retry);
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
    let mut restored = Log {
        t: LockTable::from_snapshot(&bytes).expect("round trip"),
        index: log.index,
        leader: L1,
    };
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
            &acquire(hdr(c, 1), "hot", new_lease(1_000), 0, 0),
        );
        log.index += 1;
        let (lease, token) = granted(&a);
        assert_eq!(token, c);
        log.index += 1;
        log.t.apply(
            log.index,
            L1,
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

// S7: DropClients drops only records whose last_index still matches, and only from the right leader.
#[test]
fn drop_clients_respects_last_index_and_leader() {
    let mut log = Log::new();
    log.apply(lease_grant(hdr(1, 1), 5_000)); // client 1 at index 1
    log.apply(lease_grant(hdr(2, 1), 5_000)); // client 2 at index 2
    log.apply(Command::DropClients(DropClients {
        leader: L2,
        clients: vec![(1, 1)],
    }));
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
        lease_grant(hdr(1, 1), 4_000),
        acquire(hdr(1, 2), "a", on(1), 0, 2_000),
        acquire(hdr(2, 1), "a", new_lease(6_000), 30_000, 0),
        acquire(hdr(3, 1), "b", new_lease(6_000), 0, 0),
        Command::Promote(Promote {
            leader: L1,
            grace_ms: 1_000,
        }),
        expire(L1, &[(1, 5)]),
        Command::RenewBatch(RenewBatch {
            lease_ids: vec![2, 3],
        }),
    ];
    let (mut x, mut y) = (Log::new(), Log::new());
    for e in &entries {
        assert_eq!(x.apply(e.clone()), y.apply(e.clone()));
    }
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
                due: None,
            }),
            "lease_id",
        ),
        (
            Command::ForceRelease(ForceRelease {
                header: hdr(2, 1),
                resource: long.clone(),
                fencing_token: None,
                due: None,
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
                due: None,
            }),
            ErrorCode::NotFound,
            "lease_id",
        ),
        (
            Command::ForceRelease(ForceRelease {
                header: hdr(3, 4),
                resource: "free".into(),
                fencing_token: None,
                due: None,
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
                due: None,
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
    // Leader-duty entries with absurd values are harmless.
    let before = log.t.to_snapshot();
    log.apply(Command::EndLockDelay(EndLockDelay {
        leader: L1,
        resource: long,
        start_index: u64::MAX,
        due: None,
    }));
    log.apply(expire(L1, &[(u64::MAX, u64::MAX)]));
    assert_eq!(log.t.to_snapshot(), before);
}

// Chubby/Consul lock-delay after an involuntary loss: 5000 ms delay blocks grants until EndLockDelay names the right start_index.
#[test]
fn lock_delay_blocks_until_the_right_end() {
    let mut log = Log::new();
    log.apply(acquire(hdr(1, 1), "db", new_lease(2_000), 0, 5_000)); // lease 1, token 1, index 1
    let out = log.apply(expire(L1, &[(1, 1)])); // index 2: delay starts
    assert!(out.effects.contains(&Effect::LockDelayStarted {
        resource: "db".into(),
        start_index: 2,
        lock_delay_ms: 5_000
    }));
    let d = log.t.lock_delays();
    assert_eq!(
        (d.len(), d[0].start_index, d[0].remaining_ms),
        (1, 2, 5_000)
    );
    let t = log.apply(acquire(hdr(2, 1), "db", new_lease(2_000), 0, 0)); // index 3
    assert!(matches!(
        t.response,
        Response::Acquire(AcquireReply {
            outcome: AcquireOutcome::NotGranted {
                reason: NotGrantedReason::LockDelay,
                holder_lease_id: None,
                ..
            },
            ..
        })
    ));
    log.apply(acquire(hdr(3, 1), "db", new_lease(9_000), 20_000, 0)); // index 4: lease 2 waits
                                                                      // Wrong start index, wrong leader: nothing.
    let before = log.t.to_snapshot();
    log.apply(Command::EndLockDelay(EndLockDelay {
        leader: L1,
        resource: "db".into(),
        start_index: 1,
        due: None,
    }));
    log.apply(Command::EndLockDelay(EndLockDelay {
        leader: L2,
        resource: "db".into(),
        start_index: 2,
        due: None,
    }));
    assert_eq!(log.t.to_snapshot(), before);
    let out = log.apply(Command::EndLockDelay(EndLockDelay {
        leader: L1,
        resource: "db".into(),
        start_index: 2,
        due: None,
    }));
    assert_eq!(
        out.effects.first(),
        Some(&Effect::LockDelayEnded {
            resource: "db".into(),
            start_index: 2
        })
    );
    assert_eq!(
        log.t.holder("db").map(|h| (h.lease_id, h.fencing_token)),
        Some((2, 2))
    );
    // A clean release starts no delay.
    log.apply(release(hdr(3, 2), Some("db"), 2, Some(2)));
    assert!(log.t.lock_delays().is_empty());
    assert!(log.t.holder("db").is_none());
}

// S6 / lock-delay: ForceRelease is involuntary (delay applies) and honours the token.
#[test]
fn force_release_applies_lock_delay() {
    let mut log = Log::new();
    log.apply(acquire(hdr(1, 1), "q", new_lease(2_000), 0, 1_000));
    let out = log.apply(Command::ForceRelease(ForceRelease {
        header: hdr(9, 1),
        resource: "q".into(),
        fencing_token: Some(1),
        due: None,
        requested_by: "ops".into(),
        at_unix_ms: 0,
    }));
    assert_eq!(
        out.response,
        Response::Released {
            resource: "q".into(),
            lease_id: 1,
            fencing_token: 1
        }
    );
    assert!(out.effects.contains(&Effect::LockDelayStarted {
        resource: "q".into(),
        start_index: 2,
        lock_delay_ms: 1_000
    }));
    assert!(
        log.t.lease(1).is_none(),
        "the auto lease lost its only lock"
    );
}

// Revoke frees locks cleanly (no lock-delay), removes waits, and hands off (S8).
#[test]
fn revoke_frees_and_hands_off() {
    let mut log = Log::new();
    log.apply(lease_grant(hdr(1, 1), 5_000)); // lease 1
    log.apply(acquire(hdr(1, 2), "a", on(1), 0, 3_000));
    log.apply(acquire(hdr(2, 1), "b", new_lease(5_000), 0, 0)); // lease 2 holds b
    log.apply(acquire(hdr(1, 3), "b", on(1), 10_000, 0)); // lease 1 waits on b
    log.apply(acquire(hdr(3, 1), "a", new_lease(5_000), 10_000, 0)); // lease 3 waits on a
    let out = log.apply(Command::Revoke(Revoke {
        header: hdr(1, 4),
        lease_id: 1,
        due: None,
    }));
    assert_eq!(out.response, Response::Revoked { lease_id: 1 });
    assert!(log.t.lock_delays().is_empty());
    assert_eq!(
        log.t.holder("a").map(|h| (h.lease_id, h.fencing_token)),
        Some((3, 3))
    );
    assert!(log.t.waiters("b").is_empty());
}

// L2/L4: Promote graces each lease once; a second Promote before a renew grants nothing.
#[test]
fn promote_graces_once_between_renews() {
    let mut log = Log::new();
    log.apply(lease_grant(hdr(1, 1), 3_000));
    let p = log.apply(Command::Promote(Promote {
        leader: L1,
        grace_ms: 1_000,
    }));
    assert_eq!(
        p.effects,
        vec![Effect::LeaseGraced {
            lease_id: 1,
            grace_ms: 1_000
        }]
    );
    assert_eq!(log.t.last_promote(), Some((L1, 2)));
    log.leader = L2;
    let p = log.apply(Command::Promote(Promote {
        leader: L2,
        grace_ms: 1_000,
    }));
    assert!(p.effects.is_empty());
    assert_eq!(log.t.last_promote(), Some((L2, 3)));
    log.apply(Command::RenewBatch(RenewBatch { lease_ids: vec![1] }));
    let p = log.apply(Command::Promote(Promote {
        leader: L2,
        grace_ms: 1_000,
    }));
    assert_eq!(p.effects.len(), 1);
    // A promote naming another leader is ignored.
    let before = log.t.to_snapshot();
    log.apply(Command::Promote(Promote {
        leader: L1,
        grace_ms: 1_000,
    }));
    assert_eq!(log.t.to_snapshot(), before);
}

fn slice(leader: LeaderId, started_at: LogIndex, from: LeaseId, to: Option<LeaseId>) -> Command {
    Command::PromoteSlice(PromoteSlice {
        leader,
        grace_ms: 1_000,
        started_at,
        from_lease: from,
        to_lease: to,
    })
}

fn graced_leases(log: &Log) -> Vec<LeaseId> {
    (1..=20)
        .filter(|id| log.t.lease(*id).is_some_and(|l| l.graced))
        .collect()
}

// L4 in bounded entries (docs/semantics.md "A new leader"): the slices of a
// promotion together grace what one Promote would, each only its range of
// lease ids; only the last (no end) records the promotion as done, so no
// duty, and no due list, counts on it before every lease had its grace.
#[test]
fn promotion_slices_grace_their_ranges_and_the_last_ends_the_promotion() {
    let mut log = Log::new();
    for c in 1..=5 {
        log.apply(lease_grant(hdr(c, 1), 3_000)); // leases 1..=5 at 1..=5
    }
    let bounds = |from, every| log.t.lease_id_bounds(from, every).collect::<Vec<_>>();
    assert_eq!(bounds(0, 2), vec![3, 5]);
    assert_eq!(bounds(3, 2), vec![5]);
    assert_eq!(bounds(0, 5), Vec::<LeaseId>::new());
    let first = log.apply(slice(L1, 0, 0, Some(3)));
    assert_eq!(
        first.effects,
        vec![
            Effect::LeaseGraced {
                lease_id: 1,
                grace_ms: 1_000
            },
            Effect::LeaseGraced {
                lease_id: 2,
                grace_ms: 1_000
            }
        ]
    );
    assert_eq!(log.t.last_promote(), None);
    assert_eq!(log.t.lease(1).map(|l| l.last_index), Some(6));
    let middle = log.apply(slice(L1, 6, 3, Some(5)));
    assert_eq!(middle.effects.len(), 2);
    assert_eq!(log.t.last_promote(), None);
    let last = log.apply(slice(L1, 6, 5, None));
    assert_eq!(last.effects.len(), 1);
    assert_eq!(log.t.last_promote(), Some((L1, 8)));
    assert_eq!(graced_leases(&log), vec![1, 2, 3, 4, 5]);
    // A second promotion before any renew grants nothing (L2).
    log.leader = L2;
    assert!(log.apply(slice(L2, 0, 0, None)).effects.is_empty());
    assert_eq!(log.t.last_promote(), Some((L2, 9)));
}

// L2 with slices: a lease renewed, or created, after the promotion started
// needs no grace and gets none from a later slice (its renew set a full
// TTL); a slice from another leader than its log's, one that names a start
// after itself, and an empty range change nothing.
#[test]
fn a_promotion_slice_skips_leases_renewed_since_the_start_and_refuses_bad_slices() {
    let mut log = Log::new();
    for c in 1..=3 {
        log.apply(lease_grant(hdr(c, 1), 3_000)); // leases 1..=3 at 1..=3
    }
    log.leader = L2;
    log.apply(slice(L2, 0, 0, Some(2))); // 4: starts, graces lease 1
    log.apply(Command::RenewBatch(RenewBatch { lease_ids: vec![2] })); // 5
    log.apply(lease_grant(hdr(9, 1), 3_000)); // 6: lease 4, after the start
    let before = log.t.to_snapshot();
    log.apply(slice(L1, 4, 2, None)); // another leader than the log's
    log.apply(slice(L2, 9, 2, None)); // a start after its own index (9)
    log.apply(slice(L2, 4, 3, Some(3))); // an empty range
    assert_eq!(log.t.to_snapshot(), before);
    let last = log.apply(slice(L2, 4, 2, None));
    assert_eq!(
        last.effects,
        vec![Effect::LeaseGraced {
            lease_id: 3,
            grace_ms: 1_000
        }]
    );
    assert_eq!(graced_leases(&log), vec![1, 3]);
    assert_eq!(log.t.last_promote(), Some((L2, 10)));
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

fn force(h: RequestHeader, resource: &str, who: &str, at_unix_ms: u64) -> Command {
    Command::ForceRelease(ForceRelease {
        header: h,
        resource: resource.into(),
        fencing_token: None,
        due: None,
        requested_by: who.into(),
        at_unix_ms,
    })
}

// S2, S7 and the audit trail (docs/operations.md): a forced release is recorded (who, when, which
// grant) in the replicated audit trail, saved in snapshots; a retry with a new
// display-only wall-clock stamp replays instead of being refused or recorded
// twice; the next grant's token is larger.
#[test]
fn force_release_is_audited_and_next_token_is_larger() {
    let mut log = Log::new();
    let (lease, token) = granted(&log.apply(acquire(hdr(1, 1), "q", new_lease(5_000), 0, 0)));
    let out = log.apply(force(hdr(9, 1), "q", "alice@ops (127.0.0.1)", 1_700));
    assert!(matches!(out.response, Response::Released { .. }));
    let trail: Vec<_> = log.t.audit_trail().cloned().collect();
    assert_eq!(
        trail,
        vec![AuditRecord {
            index: 2,
            resource: "q".into(),
            lease_id: lease,
            fencing_token: token,
            requested_by: "alice@ops (127.0.0.1)".into(),
            at_unix_ms: 1_700,
        }]
    );
    // The retry carries another wall-clock stamp: same outcome, no new record.
    let retry = log.apply(force(hdr(9, 1), "q", "alice@ops (127.0.0.1)", 9_999));
    assert_eq!(retry.response, out.response);
    assert!(retry.effects.is_empty());
    assert_eq!(log.t.audit_trail().count(), 1);
    let (_, next) = granted(&log.apply(acquire(hdr(2, 1), "q", new_lease(5_000), 0, 0)));
    assert!(next > token, "S2: {next} > {token}");
    // The trail is in the snapshot (version 2) ...
    let back = LockTable::from_snapshot(&log.t.to_snapshot()).expect("load");
    assert_eq!(back, log.t);
    assert_eq!(back.audit_trail().count(), 1);
    // ... and a version-1 snapshot (no trail) still loads, with an empty trail.
    let v1 = crate::snapshot::legacy::encode_body(&log.t, 1);
    let old = LockTable::from_snapshot(&v1).expect("load v1");
    assert_eq!(old.audit_trail().count(), 0);
    assert_eq!(old.holder("q"), log.t.holder("q"));
    // A bad requested_by is refused, naming the field; nothing changes.
    let before = lock_state(&log.t);
    match log.apply(force(hdr(9, 2), "q", "", 1)).response {
        Response::Error(e) => assert_eq!(e.field.as_deref(), Some("requested_by")),
        other => panic!("{other:?}"),
    }
    assert_eq!(lock_state(&log.t), before);
}

// The audit trail (docs/operations.md): is bounded (oldest records dropped first).
#[test]
fn audit_trail_is_bounded() {
    use crate::limits::MAX_AUDIT_RECORDS;
    let mut log = Log::new();
    let n = MAX_AUDIT_RECORDS as u64 + 5;
    for i in 1..=n {
        let h = RequestHeader {
            client_id: 1,
            request_id: i,
            acked_request_id: i - 1,
        };
        granted(&log.apply(acquire(h, "r", new_lease(5_000), 0, 0)));
        let h = RequestHeader {
            client_id: 2,
            request_id: i,
            acked_request_id: i - 1,
        };
        let out = log.apply(force(h, "r", "ops", i));
        assert!(
            matches!(out.response, Response::Released { .. }),
            "{i}: {:?}",
            out.response
        );
    }
    let trail: Vec<_> = log.t.audit_trail().collect();
    assert_eq!(trail.len(), MAX_AUDIT_RECORDS);
    assert_eq!(trail[0].at_unix_ms, 6, "the oldest five were dropped");
    assert_eq!(trail[MAX_AUDIT_RECORDS - 1].at_unix_ms, n);
}

// "What bad input gets", the cluster-wide lease limit; a refusal is ResourceExhausted
// naming MAX_LEASES and changes nothing; an existing lease still acquires.
#[test]
fn lease_limit_is_enforced_with_a_named_error() {
    use crate::limits::MAX_LEASES;
    let mut t = LockTable::new();
    for i in 1..=MAX_LEASES as u64 {
        let h = RequestHeader {
            client_id: 1,
            request_id: i,
            acked_request_id: i - 1,
        };
        t.apply(i, L1, &lease_grant(h, 60_000));
    }
    assert_eq!(t.lease_count(), MAX_LEASES);
    let mut log = Log {
        t,
        index: MAX_LEASES as u64,
        leader: L1,
    };
    let before = lock_state(&log.t);
    for cmd in [
        lease_grant(hdr(2, 1), 60_000),
        acquire(hdr(2, 2), "x", new_lease(5_000), 0, 0),
        acquire(hdr(2, 3), "x", new_lease(5_000), 1_000, 0),
    ] {
        match log.apply(cmd).response {
            Response::Error(e) => {
                assert_eq!(e.code, ErrorCode::ResourceExhausted);
                assert!(e.message.contains("MAX_LEASES"), "{}", e.message);
            }
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(lock_state(&log.t), before);
    granted(&log.apply(acquire(hdr(2, 4), "x", on(1), 0, 0)));
}

// List ages (display only): counted from this node's apply of the grant and
// the enqueue's append stamp; forgotten when the grant or wait ends.
#[test]
fn deadlines_track_ages_for_display() {
    use std::time::Duration;
    let mut log = Log::new();
    let mut d = crate::Deadlines::new();
    let s = Duration::from_secs;
    let a = log.apply(acquire(hdr(1, 1), "r", new_lease(5_000), 0, 0));
    d.on_effects(&a.effects, s(1), s(2));
    let w = log.apply(acquire(hdr(2, 1), "r", new_lease(5_000), 10_000, 0));
    d.on_effects(&w.effects, s(3), s(4));
    assert_eq!(d.held_for_ms("r", 1, s(10)), Some(8_000));
    assert_eq!(d.held_for_ms("r", 99, s(10)), None, "another grant");
    assert_eq!(d.waited_for_ms("r", 2, 2, s(10)), Some(7_000));
    let r = log.apply(release(hdr(1, 2), Some("r"), 1, None));
    d.on_effects(&r.effects, s(11), s(12));
    assert_eq!(d.waited_for_ms("r", 2, 2, s(20)), None);
    assert_eq!(d.held_for_ms("r", 3, s(20)), Some(8_000));
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

// S8: the resources a command may hand off, which the leader's due list
// checks for timed-out waiters at their queues' fronts
// (`Deadlines::name_front_waiters`): every command that frees a grant or
// ends a lock-delay or max-hold, through `Authorized` and `Batch`; none for
// one that frees nothing.
#[test]
fn handoff_resources_name_what_each_command_may_hand_off() {
    let mut log = Log::new();
    log.apply(acquire(hdr(1, 1), "a", new_lease(5_000), 0, 0)); // lease 1
    log.apply(acquire(hdr(1, 2), "b", on(1), 0, 0));
    let t = &log.t;
    let names = |cmd: Command| t.handoff_resources(&cmd);
    let strs = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    assert_eq!(names(release(hdr(1, 3), Some("b"), 1, None)), strs(&["b"]));
    assert_eq!(names(release(hdr(1, 3), None, 1, None)), strs(&["a", "b"]));
    let revoke = Command::Revoke(Revoke {
        header: hdr(1, 3),
        lease_id: 1,
        due: None,
    });
    assert_eq!(names(revoke.clone()), strs(&["a", "b"]));
    let force = Command::ForceRelease(ForceRelease {
        header: hdr(2, 1),
        resource: "a".into(),
        fencing_token: None,
        due: None,
        requested_by: "ops".into(),
        at_unix_ms: 0,
    });
    assert_eq!(names(force), strs(&["a"]));
    let cancel = Command::CancelWait(CancelWait {
        header: hdr(3, 2),
        acquire_request_id: 1,
        resource: "c".into(),
        due: None,
    });
    assert_eq!(names(cancel), strs(&["c"]));
    let end_delay = Command::EndLockDelay(EndLockDelay {
        leader: L1,
        resource: "d".into(),
        start_index: 1,
        due: None,
    });
    assert_eq!(names(end_delay), strs(&["d"]));
    let end_hold = Command::EndMaxHold(EndMaxHold {
        leader: L1,
        grants: vec![MaxHoldRef {
            resource: "e".into(),
            lease_id: 1,
            fencing_token: 1,
        }],
        due: None,
    });
    assert_eq!(names(end_hold), strs(&["e"]));
    let wrapped = Command::Authorized(Authorized {
        principal: None,
        command: Box::new(revoke),
    });
    let batch = Command::Batch(vec![
        wrapped,
        acquire(hdr(4, 1), "f", new_lease(5_000), 0, 0),
    ]);
    assert_eq!(names(batch), strs(&["a", "b"]));
    assert!(names(acquire(hdr(4, 1), "f", new_lease(5_000), 0, 0)).is_empty());
}
