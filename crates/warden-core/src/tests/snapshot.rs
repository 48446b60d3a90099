//! Snapshot version 4 (identities) and the versions before it.

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
                due: None,
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
fn version_8_round_trips_roles_owners_quotas_and_records() {
    let (x, y) = (built(), built());
    let bytes = x.t.to_snapshot();
    assert_eq!(bytes[0], SNAPSHOT_VERSION);
    assert_eq!(SNAPSHOT_VERSION, 8);
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
    let mut log = Log {
        t: back,
        index: x.index,
        leader: L1,
    };
    let out = log.apply(as_("bob", release(hdr(2, 3), Some("jobs/1"), 1, None)));
    assert_eq!(refused(&out.response).code, ErrorCode::PermissionDenied);
    let retry = log.apply(as_(
        "alice",
        acquire(hdr(1, 1), "jobs/1", new_lease(10_000), 0, 0),
    ));
    assert!(matches!(
        retry.response,
        Response::Acquire(AcquireReply { retried: true, .. })
    ));
}

/// Version-3 bytes of `t`: the encoder as it was before identities (table
/// body, forced-release trail, values).
fn version_3(t: &LockTable) -> Vec<u8> {
    let bytes = crate::snapshot::legacy::encode_body(t, 3);
    let bytes = postcard::to_extend(&t.audit, bytes).expect("trail");
    postcard::to_extend(&t.values, bytes).expect("values")
}

// Upgrade: a version-3 snapshot (written before identities) still loads:
// no roles, default limits, every lease ownerless, every outcome record
// `(None, id)`; then only root (and anonymous callers) can act until roles
// are granted. Versions 1 and 2 load too.
#[test]
fn version_3_snapshots_load_with_ownerless_leases_and_no_roles() {
    let mut old = Log::new();
    old.apply(acquire(hdr(1, 1), "orders/1", new_lease(10_000), 0, 0));
    old.apply(lease_grant(hdr(2, 1), 10_000));
    let v3 = version_3(&old.t);
    let t = LockTable::from_snapshot(&v3).expect("v3 loads");
    assert_eq!(t.lease_owner(1), Some(None));
    assert_eq!(t.lease_owner(2), Some(None));
    assert!(t.roles().next().is_none());
    assert_eq!(t.limits(), &ClusterLimits::default());
    assert_eq!(
        t.client_records().filter(|c| c.principal.is_some()).count(),
        0
    );
    assert_eq!(t.outcome_stats().clients, 2);
    // What identities add to a version-3 table is empty; the rest is equal.
    assert_eq!(t, old.t);
    // A table with identities, written as version 3, loses them on load.
    let rich = built();
    let t = LockTable::from_snapshot(&version_3(&rich.t)).expect("v3 of a rich table");
    assert!(t.leases().all(|l| l.owner.is_none()));
    assert_eq!(t.auth_audit_trail().count(), 0);
    let mut log = Log {
        t,
        index: rich.index,
        leader: L1,
    };
    let out = log.apply(as_(
        "alice",
        acquire(hdr(1, 9), "jobs/9", new_lease(10_000), 0, 0),
    ));
    assert_eq!(refused(&out.response).code, ErrorCode::PermissionDenied);
    granted(&log.apply(as_(
        "root",
        acquire(hdr(9, 99), "jobs/9", new_lease(10_000), 0, 0),
    )));
    // Versions 1 and 2.
    let v1 = crate::snapshot::legacy::encode_body(&old.t, 1);
    assert_eq!(LockTable::from_snapshot(&v1).expect("v1 loads"), old.t);
    let v2 = postcard::to_extend(
        &old.t.audit,
        crate::snapshot::legacy::encode_body(&old.t, 2),
    )
    .expect("v2 trail");
    assert_eq!(LockTable::from_snapshot(&v2).expect("v2 loads"), old.t);
}

// Snapshot decoding never panics on garbage: every truncation of a version-4
// snapshot and every single-byte change gives a typed error or a table that
// passes check_invariants; an owner of a dead lease and an invalid principal
// are Inconsistent.
#[test]
fn damaged_version_4_snapshots_are_typed_errors() {
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
    let mut bytes = crate::snapshot::legacy::encode_body(&t, 4);
    bytes = postcard::to_extend(&t.audit, bytes).expect("trail");
    bytes = postcard::to_extend(&t.values, bytes).expect("values");
    bytes = postcard::to_extend(&t.auth, bytes).expect("auth");
    bytes = postcard::to_extend(&owners, bytes).expect("owners");
    bytes = postcard::to_extend(t.outcomes.named(), bytes).expect("records");
    bytes = postcard::to_extend(&t.auth_audit, bytes).expect("auth trail");
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
