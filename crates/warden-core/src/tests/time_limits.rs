//! Ended but not yet swept ("Time"): one predicate decides everywhere. A
//! lease past its end is NotFound to renew, release and revoke (never
//! resurrected), and never counts against the lease limit or a quota, even
//! while more items are due than one entry's sweep ends.

use super::*;
use crate::effect::{Effect, LeaseEndReason};
use crate::expiry::MAX_SWEEP_PER_ENTRY;

fn renew(ids: &[LeaseId]) -> Command {
    Command::RenewBatch(RenewBatch {
        lease_ids: ids.to_vec(),
    })
}

// S4, "Time": a renew of a lease that has ended but that no sweep has
// reached (1,000 filler leases are due before it) answers None for it, as
// for an unknown lease, and ends it: no resurrection. A release and a
// revoke of such a lease are NotFound and end it too.
#[test]
fn an_ended_unswept_lease_is_not_found_to_renew_release_and_revoke() {
    let mut log = Log::new();
    log.fillers(1_000, 1_000); // due at 1 s
    log.now_ms = 10;
    let ids: Vec<LeaseId> = (0..3)
        .map(|i| {
            granted(&log.apply(acquire(
                hdr(1, i + 1),
                &format!("r{i}"),
                new_lease(1_000),
                0,
                0,
            )))
            .0
        })
        .collect(); // due at 1.01 s, after every filler
    let (a, b, c) = (ids[0], ids[1], ids[2]);
    log.now_ms = 2_000;
    let unswept = |log: &Log, id| log.t.leases.contains_key(&id) && !log.t.lease_live_at(id, 2_000);
    assert!(unswept(&log, a) && unswept(&log, b) && unswept(&log, c));

    let out = log.apply(renew(&[a]));
    assert_eq!(out.response, Response::Renewed(vec![(a, None)]));
    assert!(out.effects.contains(&Effect::LeaseEnded {
        lease_id: a,
        reason: LeaseEndReason::Expired
    }));
    assert!(!out
        .effects
        .iter()
        .any(|e| matches!(e, Effect::LeaseSet { lease_id, .. } if *lease_id == a)));
    assert!(!log.t.leases.contains_key(&a), "ended, not resurrected");
    assert!(log.t.holder("r0").is_none());
    // The sweep did only its bound: b and c are still unswept.
    assert_eq!(log.t.lease_count(), 1_000 - MAX_SWEEP_PER_ENTRY + 2);
    assert!(unswept(&log, b) && unswept(&log, c));

    let out = log.apply(release(hdr(1, 10), Some("r1"), b, None));
    let e = refused(&out.response);
    assert_eq!(
        (e.code, e.field.as_deref()),
        (ErrorCode::NotFound, Some("lease_id"))
    );
    assert!(!log.t.leases.contains_key(&b));
    assert!(unswept(&log, c));

    let out = log.apply(Command::Revoke(Revoke {
        header: hdr(1, 11),
        lease_id: c,
        at_unix_ms: 0,
    }));
    let e = refused(&out.response);
    assert_eq!(
        (e.code, e.field.as_deref()),
        (ErrorCode::NotFound, Some("lease_id"))
    );
    assert!(out.effects.contains(&Effect::LeaseEnded {
        lease_id: c,
        reason: LeaseEndReason::Expired
    }));
    assert!(!log.t.leases.contains_key(&c));
    // A retry of the renew is still None: its lease is gone.
    assert_eq!(
        log.apply(renew(&[a])).response,
        Response::Renewed(vec![(a, None)])
    );
}

/// A live session lease holding 600 resources, each with a 1 s max-hold
/// granted at 0: 600 items due at 1 s, before any lease that ends later,
/// so the sweeps of the next two entries end only max-holds. Returns the
/// lease.
fn holder_of_600_max_holds(log: &mut Log) -> LeaseId {
    let out = log.apply(lease_grant(hdr(77, 1), 600_000));
    let Response::LeaseGranted { lease_id, .. } = out.response else {
        panic!("{:?}", out.response)
    };
    for i in 0..600u64 {
        let header = RequestHeader {
            client_id: 77,
            request_id: i + 2,
            acked_request_id: i + 1,
        };
        let acquire = Acquire::mutex(header, format!("held/{i}"), on(lease_id), 0, 0);
        let out = log.apply_fast(Command::Acquire(acquire.with_max_hold(1_000)));
        granted(&out);
    }
    lease_id
}

// "Time", the lease limit: with 1,000 leases ended at once (more than
// MAX_SWEEP_PER_ENTRY, and behind 600 due max-holds the entries' sweeps
// end first) and max_leases set to exactly the table's count by a wrapped
// SetLimits, a lease grant and a new acquire are not refused: the leases
// already ended do not count.
#[test]
fn the_lease_limit_does_not_count_ended_unswept_leases() {
    let mut log = Log::new();
    let holder = holder_of_600_max_holds(&mut log);
    log.now_ms = 10;
    let dead = log.fillers(1_000, 1_000); // due at 1.01 s
    let limits = ClusterLimits {
        max_leases: 1_001,
        ..ClusterLimits::default()
    };
    log.root(AuthOp::SetLimits(limits));
    assert_eq!(log.t.lease_count(), 1_001);
    // Before the leases end, the limit refuses.
    let out = log.apply(lease_grant(hdr(2, 1), 60_000));
    assert_eq!(refused(&out.response).code, ErrorCode::ResourceExhausted);
    log.now_ms = 2_000;
    let out = log.apply(lease_grant(hdr(2, 2), 60_000));
    assert!(
        matches!(out.response, Response::LeaseGranted { .. }),
        "{:?}",
        out.response
    );
    // The sweep ended max-holds only; the room came from an ended lease.
    assert_eq!(log.t.max_holds().count(), 600 - MAX_SWEEP_PER_ENTRY);
    let ended: Vec<LeaseId> = dead
        .iter()
        .copied()
        .filter(|id| !log.t.leases.contains_key(id))
        .collect();
    assert_eq!(ended, vec![dead[0]]);
    let out = log.apply(acquire(hdr(3, 1), "new", new_lease(60_000), 0, 0));
    granted(&out);
    assert_eq!(log.t.max_holds().count(), 600 - 2 * MAX_SWEEP_PER_ENTRY);
    assert_eq!(log.t.lease_count(), 1_001);
    assert!(log.t.lease(holder).is_some());
}

// "Time", quotas: alice's 1,000 leases (her whole lease quota) all ended,
// behind 600 due max-holds of another lease; her next lease grant and
// acquire are not refused: her ended leases do not count.
#[test]
fn a_quota_does_not_count_ended_unswept_leases() {
    let mut log = Log::new();
    log.root(grant_perm("lockers", "", Permission::Lock));
    log.root(grant_role("alice", "lockers"));
    log.root(grant_role("bob", "lockers"));
    log.root(AuthOp::SetRoleQuota {
        role: "alice-quota".into(),
        quota: Some(Quota {
            leases: 1_000,
            locks: 1_000,
            waiters: 10,
            clients: 10,
            ..Quota::default()
        }),
    });
    log.root(grant_role("alice", "alice-quota"));
    let holder = holder_of_600_max_holds(&mut log);
    log.now_ms = 10;
    for i in 0..1_000u64 {
        let h = RequestHeader {
            client_id: 5,
            request_id: i + 1,
            acked_request_id: i,
        };
        let out = log.apply_fast(as_("alice", lease_grant(h, 1_000)));
        assert!(
            matches!(out.response, Response::LeaseGranted { .. }),
            "{i}: {:?}",
            out.response
        );
    }
    assert_eq!(log.t.check_invariants(), Ok(()));
    assert_eq!(log.t.usage("alice").leases, 1_000);
    let next = |n| RequestHeader {
        client_id: 5,
        request_id: n,
        acked_request_id: n - 1,
    };
    let out = log.apply(as_("alice", lease_grant(next(1_001), 1_000)));
    assert_eq!(refused(&out.response).code, ErrorCode::ResourceExhausted);
    log.now_ms = 2_000;
    let out = log.apply(as_("alice", lease_grant(next(1_002), 60_000)));
    assert!(
        matches!(out.response, Response::LeaseGranted { .. }),
        "{:?}",
        out.response
    );
    assert_eq!(log.t.max_holds().count(), 600 - MAX_SWEEP_PER_ENTRY);
    let out = log.apply(as_(
        "alice",
        acquire(next(1_003), "alice/1", new_lease(60_000), 0, 0),
    ));
    granted(&out);
    assert_eq!(log.t.usage("alice").leases, 2);
    assert!(log.t.lease(holder).is_some());
}
