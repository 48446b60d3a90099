//! Snapshots (version 1): identities, cluster time and instants, and
//! damaged bytes.

use super::*;
use crate::snapshot::{SnapshotError, SNAPSHOT_VERSION};

/// Entries that leave roles, quotas, limits, owned and ownerless leases,
/// waiters, principals' and legacy outcome records and both audit trails.
fn entries() -> Vec<Command> {
    let root = |n: u64, op: AuthOp| as_("root", change(hdr(9, n), op));
    vec![
        root(1, grant_perm("jobs", "jobs/", Permission::Lock)),
        root(2, grant_perm("jobs", "election:", Permission::Read)),
        root(3, grant_role("alice", "jobs")),
        root(4, grant_role("bob", "jobs")),
        root(
            5,
            AuthOp::SetRoleQuota {
                role: "jobs".into(),
                quota: Some(Quota {
                    leases: 7,
                    locks: 70,
                    waiters: 3,
                    clients: 9,
                    ..Quota::default()
                }),
            },
        ),
        root(
            6,
            AuthOp::SetLimits(ClusterLimits {
                max_leases: 5_000,
                max_clients: 6_000,
                default_quota: Quota {
                    leases: 1,
                    locks: 2,
                    waiters: 3,
                    clients: 4,
                    ..Quota::default()
                },
            }),
        ),
        as_(
            "alice",
            acquire(hdr(1, 1), "jobs/1", new_lease(10_000), 0, 0),
        ),
        as_(
            "bob",
            acquire(hdr(2, 1), "jobs/1", new_lease(10_000), 60_000, 0),
        ),
        as_("bob", lease_grant(hdr(2, 2), 20_000)),
        acquire(hdr(3, 1), "legacy", new_lease(10_000), 0, 0),
        by(None, acquire(hdr(4, 1), "anon", new_lease(10_000), 0, 0)),
        as_(
            "root",
            Command::ForceRelease(ForceRelease {
                header: hdr(9, 7),
                resource: "anon".into(),
                fencing_token: None,
                requested_by: "console".into(),
                at_unix_ms: 5,
            }),
        ),
    ]
}

fn built() -> Log {
    let mut log = Log::new();
    for e in entries() {
        log.apply(e);
    }
    log
}

// Snapshots of equal tables are byte-identical (docs/semantics.md "Time",
// last point) and carry everything identities added: roles, grants, quotas,
// limits, lease owners, principals' outcome records, the auth audit trail;
// the loaded table decides as the original (ownership, S7 replay).
#[test]
fn snapshots_round_trip_roles_owners_quotas_and_records() {
    let (x, y) = (built(), built());
    let bytes = x.t.to_snapshot();
    assert_eq!(bytes[0], SNAPSHOT_VERSION);
    assert_eq!(SNAPSHOT_VERSION, 1);
    assert_eq!(bytes, y.t.to_snapshot());
    let back = LockTable::from_snapshot(&bytes).expect("load");
    assert_eq!(back, x.t);
    assert_eq!(back.to_snapshot(), bytes);
    assert_eq!(back.lease_owner(1), Some(Some("alice")));
    assert_eq!(back.lease_owner(2), Some(Some("bob")));
    assert_eq!(back.lease_owner(4), Some(None));
    assert_eq!(back.usage("bob").leases, 2);
    assert_eq!(back.usage("bob").waiters, 1);
    assert_eq!(back.limits().max_clients, 6_000);
    assert_eq!(back.auth_audit_trail().count(), 6);
    assert_eq!(
        back.audit_trail().last().map(|r| r.requested_by.as_str()),
        Some("root (console)")
    );
    assert_eq!(
        back.effective_quota(Some("alice")).map(|q| q.leases),
        Some(7)
    );
    // The loaded table decides as the original did.
    let mut log = Log::of(back, x.index);
    // (alice's lease is not bob's: to him it does not exist)
    let out = log.apply(as_("bob", release(hdr(2, 3), Some("jobs/1"), 1, None)));
    assert_eq!(refused(&out.response).code, ErrorCode::NotFound);
    assert!(log.t.holder("jobs/1").is_some());
    let retry = log.apply(as_(
        "alice",
        acquire(hdr(1, 1), "jobs/1", new_lease(10_000), 0, 0),
    ));
    assert!(matches!(
        retry.response,
        Response::Acquire(AcquireReply { retried: true, .. })
    ));
}

/// The snapshot bytes of `t` with `owners` in place of its lease owners
/// (the encoder's layout, part by part).
fn with_owners(t: &LockTable, owners: &std::collections::BTreeMap<LeaseId, Principal>) -> Vec<u8> {
    let mut bytes = postcard::to_extend(t, vec![SNAPSHOT_VERSION]).expect("body");
    bytes = postcard::to_extend(&t.audit, bytes).expect("trail");
    bytes = postcard::to_extend(&t.values, bytes).expect("values");
    bytes = postcard::to_extend(&t.auth, bytes).expect("auth");
    bytes = postcard::to_extend(owners, bytes).expect("owners");
    bytes = postcard::to_extend(t.outcomes.named(), bytes).expect("records");
    bytes = postcard::to_extend(&t.auth_audit, bytes).expect("auth trail");
    bytes = postcard::to_extend(&t.multis, bytes).expect("multis");
    bytes = postcard::to_extend(&t.max_holds, bytes).expect("max-holds");
    postcard::to_extend(&t.wait_max_holds, bytes).expect("wait max-holds")
}

// Snapshot decoding never panics on garbage: every truncation of a
// snapshot and every single-byte change gives a typed error or a table that
// passes check_invariants; an owner of a dead lease and an invalid principal
// are Inconsistent.
#[test]
fn damaged_snapshots_are_typed_errors() {
    let log = built();
    let bytes = log.t.to_snapshot();
    for len in 0..bytes.len() {
        assert!(LockTable::from_snapshot(&bytes[..len]).is_err(), "{len}");
    }
    for i in 1..bytes.len() {
        for delta in [1u8, 0x80] {
            let mut b = bytes.clone();
            b[i] = b[i].wrapping_add(delta);
            if let Ok(t) = LockTable::from_snapshot(&b) {
                assert_eq!(t.check_invariants(), Ok(()), "byte {i}");
            }
        }
    }
    // An owner for a lease that is not live: the body without bob's
    // session (lease 3), the owners section of the full table.
    let mut t = log.t.clone();
    t.leases.remove(&3);
    let owners: std::collections::BTreeMap<LeaseId, Principal> = log
        .t
        .leases()
        .filter_map(|l| l.owner.clone().map(|o| (l.lease_id, o)))
        .collect();
    assert_eq!(
        LockTable::from_snapshot(&with_owners(&log.t, &owners)),
        Ok(log.t.clone()),
        "the layout as the encoder writes it"
    );
    let bytes = with_owners(&t, &owners);
    assert!(matches!(
        LockTable::from_snapshot(&bytes),
        Err(SnapshotError::Inconsistent(m)) if m.contains("lease 3")
    ));
    // An invalid principal as an owner.
    let mut t = log.t.clone();
    if let Some(l) = t.leases.get_mut(&1) {
        l.owner = Some(Principal::from_checked("no/slash".into()));
    }
    assert!(matches!(
        LockTable::from_snapshot(&t.to_snapshot()),
        Err(SnapshotError::Inconsistent(_))
    ));
}

// "Time" across snapshots: a snapshot keeps cluster time, the last two
// promotes and every instant (leases, waits, lock-delays, max-holds);
// loading rebuilds the time index from them (check_invariants compares
// it), and the loaded table goes on exactly as the original.
#[test]
fn snapshots_keep_cluster_time_promotes_and_instants() {
    let mut log = Log::new();
    log.now_ms = 1_000;
    log.apply(acquire(hdr(1, 1), "d", new_lease(2_000), 0, 4_000)); // lease 1, ends 3 s
    log.apply(crate::tests::max_hold::bounded(
        hdr(2, 1),
        "m",
        new_lease(60_000),
        0,
        0,
        LockKind::Mutex,
        Mode::Exclusive,
        5_000,
    )); // lease 2, max-hold ends 6 s
    log.apply(acquire(hdr(3, 1), "m", new_lease(60_000), 30_000, 0)); // lease 3 waits to 31 s
    log.apply(Command::Promote(Promote {
        no_expiry_before_ms: 2_500,
    }));
    log.now_ms = 2_000;
    log.apply(Command::Promote(Promote {
        no_expiry_before_ms: 3_500,
    }));
    log.tick_at(3_000); // lease 1 ends at 3 s: "d" in lock-delay to 7 s
    let t = &log.t;
    assert_eq!(t.now_ms(), 3_000);
    assert_eq!(t.lock_delay("d").map(|d| d.ends_at_ms), Some(7_000));
    let bytes = t.to_snapshot();
    let back = LockTable::from_snapshot(&bytes).expect("load");
    assert_eq!(&back, t);
    assert_eq!(back.now_ms(), 3_000);
    assert_eq!(back.promotion(), t.promotion());
    assert_eq!(back.promotion().no_expiry_before_ms, 3_500);
    assert_eq!(back.timeline, t.timeline, "rebuilt, not saved");
    let instants: Vec<u64> = back.timeline.iter().map(|(at, _)| *at).collect();
    assert_eq!(instants, vec![6_000, 7_000, 31_000, 61_000, 61_000]);
    assert_eq!(back.next_instant_ms(), Some(6_000));
    assert_eq!(back.check_invariants(), Ok(()));
    // The same entries after it give the same results.
    let mut a = Log::of(back, log.index);
    for at in [6_000, 7_000] {
        assert_eq!(a.tick_at(at), log.tick_at(at));
    }
    assert_eq!(a.t.holder("m").map(|h| h.lease_id), Some(3));
    assert_eq!(a.t.to_snapshot(), log.t.to_snapshot());
    // A time index out of step with the instants is caught.
    let mut broken = a.t.clone();
    broken.timeline.clear();
    assert!(broken
        .check_invariants()
        .is_err_and(|e| e.contains("time index")));
}
