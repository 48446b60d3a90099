//! The deny list and auth changes that end waits (see `crate::auth`, "Auth
//! changes" and "The deny list"; docs/security.md "A key was stolen").

use super::auth::with_jobs_role;
use super::*;
use crate::auth::Target;
use crate::effect::{Effect, LeaseEndReason, WaiterRemovedReason};
use crate::limits::MAX_DENIED;
use crate::types::DenyTarget;

fn deny(name: &str) -> AuthOp {
    AuthOp::Deny(DenyTarget::Principal(who(name)))
}

fn serial(s: &str) -> DenyTarget {
    DenyTarget::Serial(s.into())
}

// A denied principal passes no permission check and every command it
// makes is refused, releases included; undenying gives its roles back
// untouched. Another principal of the same role is served throughout.
#[test]
fn a_denied_principal_is_refused_everything_until_undenied() {
    let mut log = with_jobs_role(&["alice", "bob"]);
    let (a, ta) = granted(&log.apply(as_(
        "alice",
        acquire(hdr(1, 1), "jobs/a", new_lease(10_000), 0, 0),
    )));
    log.root(deny("alice"));
    assert!(log.t.auth().is_denied("alice"));
    assert!(!log
        .t
        .allows(Some("alice"), Permission::Lock, Target::Resource("jobs/b")));
    for cmd in [
        acquire(hdr(1, 2), "jobs/b", new_lease(10_000), 0, 0),
        release(hdr(1, 3), Some("jobs/a"), a, Some(ta)),
        lease_grant(hdr(1, 4), 10_000),
    ] {
        let e = refused(&log.apply(as_("alice", cmd)).response).clone();
        assert_eq!(e.code, ErrorCode::PermissionDenied);
        assert_eq!(
            e.message,
            "principal alice is denied (on the deny list: warden user deny)"
        );
    }
    // Her grant stays (an admin may revoke it); bob is served.
    assert_eq!(log.t.holder("jobs/a").map(|h| h.lease_id), Some(a));
    granted(&log.apply(as_(
        "bob",
        acquire(hdr(2, 1), "jobs/b", new_lease(10_000), 0, 0),
    )));
    log.root(AuthOp::Undeny(DenyTarget::Principal(who("alice"))));
    assert!(!log.t.auth().is_denied("alice"));
    let out = log.apply(as_(
        "alice",
        release(hdr(1, 5), Some("jobs/a"), a, Some(ta)),
    ));
    assert!(matches!(out.response, Response::Released { .. }), "{out:?}");
}

// Denying a principal ends its queued waits in the same entry, and the
// waiter behind it is granted there when the resource is free for it (S8:
// a revoked waiter never blocks the queue). A hold is not taken away.
#[test]
fn denying_a_principal_ends_its_waits_and_grants_the_next_waiter() {
    let mut log = with_jobs_role(&["alice", "carol", "dave"]);
    // dave holds a read lock; alice queues a write behind it; carol a read
    // behind alice (FIFO: readers do not overtake a queued writer).
    let read = |c, r| {
        acquire_kind(
            hdr(c, r),
            "jobs/x",
            new_lease(10_000),
            60_000,
            0,
            LockKind::ReadWrite,
            Mode::Shared,
        )
    };
    let (d, _) = granted(&log.apply(as_("dave", read(4, 1))));
    log.apply(as_(
        "alice",
        acquire_kind(
            hdr(1, 1),
            "jobs/x",
            new_lease(10_000),
            60_000,
            0,
            LockKind::ReadWrite,
            Mode::Exclusive,
        ),
    ));
    let a_enq = log.index;
    log.apply(as_("carol", read(3, 1)));
    let c_enq = log.index;
    let waiting: Vec<_> = log.t.waiters("jobs/x").iter().map(|w| w.lease_id).collect();
    let (a, c) = (waiting[0], waiting[1]);
    let out = log.apply(as_("root", change(hdr(999_999, 50), deny("alice"))));
    assert_eq!(out.response, Response::AuthChanged);
    let index = log.index;
    let removed: Vec<_> = out
        .effects
        .iter()
        .filter_map(|e| match e {
            Effect::WaiterRemoved {
                lease_id,
                enqueue_index,
                reason,
                ..
            } => Some((*lease_id, *enqueue_index, *reason)),
            _ => None,
        })
        .collect();
    assert_eq!(
        removed,
        vec![
            (a, a_enq, WaiterRemovedReason::PermissionRevoked),
            (c, c_enq, WaiterRemovedReason::Granted),
        ]
    );
    assert!(out.effects.contains(&Effect::LeaseEnded {
        lease_id: a,
        reason: LeaseEndReason::Released
    }));
    let holders: Vec<_> = log
        .t
        .holders("jobs/x")
        .iter()
        .map(|h| (h.lease_id, h.grant_index))
        .collect();
    assert_eq!(holders, vec![(d, holders[0].1), (c, index)]);
    assert_eq!(log.t.usage("alice").waiters, 0);
}

// Revoking a role ends the principal's waits on what it no longer may
// lock, and only those: a wait under a prefix another role still grants
// stays queued.
#[test]
fn revoking_a_role_ends_only_the_waits_it_no_longer_permits() {
    let mut log = with_jobs_role(&["alice", "dave"]);
    log.root(grant_perm("mail", "mail/", Permission::Lock));
    log.root(grant_role("alice", "mail"));
    log.root(grant_role("dave", "mail"));
    for r in ["jobs/x", "mail/x"] {
        granted(&log.apply(as_(
            "dave",
            acquire(hdr(4, log.index + 1), r, new_lease(10_000), 0, 0),
        )));
        log.apply(as_(
            "alice",
            acquire(hdr(1, log.index + 1), r, new_lease(10_000), 60_000, 0),
        ));
    }
    assert_eq!(log.t.usage("alice").waiters, 2);
    log.root(AuthOp::RevokeRole {
        user: who("alice"),
        role: "jobs".into(),
    });
    assert!(log.t.waiters("jobs/x").is_empty());
    assert_eq!(log.t.waiters("mail/x").len(), 1);
    assert_eq!(log.t.usage("alice").waiters, 1);
    // Deleting the role that still grants it ends the other.
    log.root(AuthOp::DeleteRole {
        role: "mail".into(),
    });
    assert!(log.t.waiters("mail/x").is_empty());
    assert_eq!(log.t.usage("alice").waiters, 0);
}

// The deny list's rules: root cannot be denied, a serial has one canonical
// form, undenying what is not denied is NotFound, denying twice is no
// change, and the list is bounded (ResourceExhausted naming the bound).
#[test]
fn the_deny_list_checks_its_entries_and_its_bound() {
    let mut log = Log::new();
    let try_root = |log: &mut Log, op: AuthOp| {
        let request = log.index + 1;
        log.apply(as_("root", change(hdr(999_999, request), op)))
            .response
    };
    let e = refused(&try_root(&mut log, deny("root"))).clone();
    assert_eq!(
        (e.code, e.field.as_deref()),
        (ErrorCode::InvalidArgument, Some("user"))
    );
    for bad in ["", "0a", "AB", "a:b", &"f".repeat(41)] {
        let e = refused(&try_root(&mut log, AuthOp::Deny(serial(bad)))).clone();
        assert_eq!(
            (e.code, e.field.as_deref()),
            (ErrorCode::InvalidArgument, Some("serial")),
            "{bad:?}"
        );
    }
    let e = refused(&try_root(&mut log, AuthOp::Undeny(serial("1f")))).clone();
    assert_eq!(
        (e.code, e.field.as_deref()),
        (ErrorCode::NotFound, Some("serial"))
    );
    log.root(AuthOp::Deny(serial("1f")));
    log.root(AuthOp::Deny(serial("1f")));
    log.root(AuthOp::Deny(serial(&"f".repeat(40))));
    log.root(AuthOp::Deny(serial("0")));
    assert_eq!(
        log.t.auth().denied_serials().collect::<Vec<_>>(),
        vec!["0", "1f", &"f".repeat(40)]
    );
    for n in 3..MAX_DENIED {
        log.root(AuthOp::Deny(serial(&format!("{:x}", 0x1000 + n))));
    }
    let e = refused(&try_root(&mut log, deny("mallory"))).clone();
    assert_eq!(
        (e.code, e.field.as_deref()),
        (ErrorCode::ResourceExhausted, Some("user"))
    );
    assert!(e.message.contains("MAX_DENIED"), "{}", e.message);
    log.root(AuthOp::Deny(serial("1f")));
    log.t
        .check_invariants()
        .expect("a full deny list is consistent");
}
