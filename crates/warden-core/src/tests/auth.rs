//! Identities: permissions, prefix matching, lease ownership, revoked waiters,
//! auth changes and their audit trail (see `crate::auth`).

use super::*;
use crate::auth::{grant_covers, Target};
use crate::effect::{Effect, FreeReason, LeaseEndReason, WaiterRemovedReason};
use crate::limits::ELECTION_PREFIX;

/// A table where the role `jobs` holds lock on `jobs/` and each of `users`
/// holds that role.
pub(super) fn with_jobs_role(users: &[&str]) -> Log {
    let mut log = Log::new();
    log.root(grant_perm("jobs", "jobs/", Permission::Lock));
    for u in users {
        log.root(grant_role(u, "jobs"));
    }
    log
}

pub(super) fn revoke(h: RequestHeader, lease_id: LeaseId) -> Command {
    Command::Revoke(Revoke {
        header: h,
        lease_id,
        at_unix_ms: 0,
    })
}

pub(super) fn proclaim(resource: &str, lease_id: LeaseId, value: &str) -> Command {
    Command::Proclaim(Proclaim {
        resource: resource.into(),
        lease_id,
        fencing_token: None,
        value: value.into(),
    })
}

pub(super) fn force(h: RequestHeader, resource: &str, who: &str) -> Command {
    Command::ForceRelease(ForceRelease {
        header: h,
        resource: resource.into(),
        fencing_token: None,
        requested_by: who.into(),
        at_unix_ms: 0,
    })
}

pub(super) fn election(name: &str) -> String {
    format!("{ELECTION_PREFIX}{name}")
}

// Permission at apply (docs/semantics.md "What bad input gets" for the typed
// error): lock on `jobs/` grants `jobs/1`; `orders/1` is refused with
// PermissionDenied naming the permission and the resource, stays free and
// leaves no lease behind; the refusal is recorded (S7), so its retry answers
// the same even after the permission arrives.
#[test]
fn lock_on_a_prefix_grants_it_and_nothing_else() {
    let mut log = with_jobs_role(&["alice"]);
    let (lease, _) = granted(&log.apply(as_(
        "alice",
        acquire(hdr(1, 1), "jobs/1", new_lease(10_000), 0, 0),
    )));
    assert_eq!(log.t.lease_owner(lease), Some(Some("alice")));
    let before = lock_state(&log.t);
    let next_lease = log.t.next_lease_id();
    let cmd = as_(
        "alice",
        acquire(hdr(1, 2), "orders/1", new_lease(10_000), 30_000, 0),
    );
    let out = log.apply(cmd.clone());
    let e = refused(&out.response);
    assert_eq!(e.code, ErrorCode::PermissionDenied);
    assert_eq!(e.field.as_deref(), Some("resource"));
    assert_eq!(
        e.message,
        r#"principal alice has no lock permission on "orders/1""#
    );
    assert!(out.effects.is_empty(), "{:?}", out.effects);
    assert_eq!(lock_state(&log.t), before);
    assert!(log.t.resource("orders/1").is_none());
    assert_eq!(log.t.lease_count(), 1);
    assert_eq!(log.t.next_lease_id(), next_lease, "no lease id was used");
    // Recorded: the retry replays the refusal even once alice may lock orders/.
    log.root(grant_perm("jobs", "orders/", Permission::Lock));
    assert_eq!(log.apply(cmd).response, out.response);
    assert!(log.t.holder("orders/1").is_none());
    granted(&log.apply(as_(
        "alice",
        acquire(hdr(1, 3), "orders/1", new_lease(10_000), 0, 0),
    )));
}

// etcd PR 8031 (S6 across principals): bob, who may lock `jobs/` too, is
// refused renew ownership, release and revoke of alice's lease with alice's
// exact id and token, and cannot acquire or proclaim with it; alice still
// holds and her lease holds nothing of his. An anonymous caller never acts on
// an owned lease, and a named principal never on an ownerless one.
#[test]
fn another_principal_cannot_use_a_lease_even_with_its_id_and_token() {
    let mut log = with_jobs_role(&["alice", "bob"]);
    let out = log.apply(as_("alice", lease_grant(hdr(1, 1), 10_000)));
    let Response::LeaseGranted {
        lease_id: lease, ..
    } = out.response
    else {
        panic!("{out:?}")
    };
    let (_, token) =
        granted(&log.apply(as_("alice", acquire(hdr(1, 2), "jobs/1", on(lease), 0, 0))));
    // Renew: the server renews for a caller only when it owns the lease.
    assert_eq!(log.t.lease_owner(lease), Some(Some("alice")));
    assert_ne!(log.t.lease_owner(lease), Some(Some("bob")));
    assert_eq!(log.t.lease_owner(99), None);
    let before = lock_state(&log.t);
    // No liveness oracle: each is answered exactly as the same command on a
    // lease that does not exist.
    let absent = 99;
    let as_absent = |cmd: &Command| {
        let mut c = cmd.clone();
        // (a request of its own: the same request id with other arguments
        // is another refusal, S7)
        match &mut c {
            Command::Release(r) => {
                (r.lease_id, r.header.request_id) = (absent, r.header.request_id + 100)
            }
            Command::Revoke(r) => {
                (r.lease_id, r.header.request_id) = (absent, r.header.request_id + 100)
            }
            Command::Proclaim(p) => p.lease_id = absent,
            Command::Acquire(a) => {
                (a.lease, a.header.request_id) = (on(absent), a.header.request_id + 100)
            }
            other => panic!("{other:?}"),
        }
        c
    };
    for (caller, cmd) in [
        (
            Some("bob"),
            release(hdr(2, 1), Some("jobs/1"), lease, Some(token)),
        ),
        (Some("bob"), release(hdr(2, 2), None, lease, None)),
        (Some("bob"), revoke(hdr(2, 3), lease)),
        (
            Some("bob"),
            acquire(hdr(2, 4), "jobs/2", on(lease), 10_000, 0),
        ),
        (Some("bob"), proclaim("jobs/1", lease, "bob was here")),
        (None, revoke(hdr(3, 1), lease)),
        (None, release(hdr(3, 2), Some("jobs/1"), lease, Some(token))),
    ] {
        let out = log.apply(by(caller, cmd.clone()));
        let e = refused(&out.response).clone();
        assert_eq!(e.code, ErrorCode::NotFound, "{cmd:?}");
        assert_eq!(e.field.as_deref(), Some("lease_id"));
        assert!(out.effects.is_empty());
        let out = log.apply(by(caller, as_absent(&cmd)));
        let none = refused(&out.response);
        assert_eq!(
            (none.code, none.field.as_deref(), none.message.clone()),
            (
                e.code,
                e.field.as_deref(),
                e.message.replace(&lease.to_string(), &absent.to_string())
            ),
            "{cmd:?}"
        );
    }
    assert_eq!(lock_state(&log.t), before);
    assert_eq!(
        log.t
            .holder("jobs/1")
            .map(|h| (h.lease_id, h.fencing_token)),
        Some((lease, token))
    );
    let l = log.t.lease(lease).expect("alice's lease lives");
    assert_eq!(l.locks.iter().collect::<Vec<_>>(), vec!["jobs/1"]);
    assert!(l.waits.is_empty());
    assert!(log.t.holder("jobs/2").is_none());
    assert_eq!(log.t.value(lease, "jobs/1"), None);
    // An ownerless lease (made by an unwrapped legacy command): alice may not
    // touch it; an anonymous caller may.
    let out = log.apply(lease_grant(hdr(4, 1), 10_000));
    let Response::LeaseGranted {
        lease_id: legacy, ..
    } = out.response
    else {
        panic!("{out:?}")
    };
    assert_eq!(log.t.lease_owner(legacy), Some(None));
    let e = log.apply(as_("alice", revoke(hdr(1, 3), legacy)));
    assert_eq!(refused(&e.response).code, ErrorCode::NotFound);
    assert_eq!(
        log.apply(by(None, revoke(hdr(3, 3), legacy))).response,
        Response::Revoked { lease_id: legacy }
    );
    // Alice's own release works.
    assert!(matches!(
        log.apply(as_(
            "alice",
            release(hdr(1, 4), Some("jobs/1"), lease, Some(token))
        ))
        .response,
        Response::Released { .. }
    ));
}

// Permission is decided at apply, at the entry's index (etcd's auth
// revision): once alice's lock is revoked her next acquire and lease grant
// are refused, but her held grant stays, her retry of the granted acquire
// (same request id) answers with the grant (S7), keep-alives go on, and she
// can still release it and revoke her own session.
#[test]
fn a_revoked_lock_stops_new_acquires_but_not_what_is_held() {
    let mut log = with_jobs_role(&["alice"]);
    let first = as_(
        "alice",
        acquire(hdr(1, 1), "jobs/1", new_lease(10_000), 0, 0),
    );
    let (lease, token) = granted(&log.apply(first.clone()));
    let out = log.apply(as_("alice", lease_grant(hdr(1, 2), 10_000)));
    let Response::LeaseGranted {
        lease_id: session, ..
    } = out.response
    else {
        panic!("{out:?}")
    };
    log.root(AuthOp::RevokeRole {
        user: who("alice"),
        role: "jobs".into(),
    });
    let out = log.apply(as_(
        "alice",
        acquire(hdr(1, 3), "jobs/2", new_lease(10_000), 0, 0),
    ));
    assert_eq!(
        refused(&out.response).message,
        r#"principal alice has no lock permission on "jobs/2""#
    );
    let out = log.apply(as_("alice", lease_grant(hdr(1, 4), 10_000)));
    assert_eq!(
        refused(&out.response).message,
        "principal alice has no lock permission on any prefix"
    );
    assert_eq!(
        log.t
            .holder("jobs/1")
            .map(|h| (h.lease_id, h.fencing_token)),
        Some((lease, token))
    );
    // The retry of the granted acquire answers with its grant.
    let retry = log.apply(first);
    let Response::Acquire(r) = &retry.response else {
        panic!("{retry:?}")
    };
    assert!(r.retried && r.lease_live);
    assert_eq!(r.current_token, Some(token));
    assert!(matches!(
        r.outcome,
        AcquireOutcome::Granted { fencing_token, lease_id, .. } if fencing_token == token && lease_id == lease
    ));
    assert!(retry.effects.is_empty());
    // Keep-alives go on (RenewBatch is not wrapped).
    assert_eq!(
        log.apply(Command::RenewBatch(RenewBatch {
            lease_ids: vec![lease, session]
        }))
        .response,
        Response::Renewed(vec![(lease, Some(10_000)), (session, Some(10_000))])
    );
    assert_eq!(
        log.apply(as_(
            "alice",
            release(hdr(1, 5), Some("jobs/1"), lease, Some(token))
        ))
        .response,
        Response::Released {
            resource: "jobs/1".into(),
            lease_id: lease,
            fencing_token: token
        }
    );
    assert_eq!(
        log.apply(as_("alice", revoke(hdr(1, 6), session))).response,
        Response::Revoked { lease_id: session }
    );
    assert_eq!(log.t.lease_count(), 0);
    assert_eq!(log.t.usage("alice").leases, 0);
}

// S8 with identities: a revoke while alice waits removes her wait in the
// revoke's own entry (the effect says why, and her acquire-made lease dies
// with nothing left), so a revoked waiter never blocks the queue; at the
// holder's release carol, behind her, is granted.
#[test]
fn a_revoked_waiter_is_removed_at_the_revoke_and_the_next_is_granted_at_the_hand_off() {
    let mut log = with_jobs_role(&["alice", "carol", "dave"]);
    let (d, t1) = granted(&log.apply(as_(
        "dave",
        acquire(hdr(4, 1), "jobs/x", new_lease(10_000), 0, 0),
    )));
    log.apply(as_(
        "alice",
        acquire(hdr(1, 1), "jobs/x", new_lease(10_000), 60_000, 0),
    ));
    let a_enq = log.index;
    log.apply(as_(
        "carol",
        acquire(hdr(3, 1), "jobs/x", new_lease(10_000), 60_000, 0),
    ));
    let c_enq = log.index;
    let waiting: Vec<_> = log.t.waiters("jobs/x").iter().map(|w| w.lease_id).collect();
    let (a, c) = (waiting[0], waiting[1]);
    assert_eq!(log.t.usage("alice").waiters, 1);
    let request = log.index + 1;
    let out = log.apply(as_(
        "root",
        change(
            hdr(999_999, request),
            AuthOp::RevokeRole {
                user: who("alice"),
                role: "jobs".into(),
            },
        ),
    ));
    assert_eq!(
        out.effects,
        vec![
            Effect::AuthChanged { index: log.index },
            Effect::WaiterRemoved {
                resource: "jobs/x".into(),
                lease_id: a,
                enqueue_index: a_enq,
                reason: WaiterRemovedReason::PermissionRevoked,
                enqueued_at_ms: 0,
            },
            Effect::LeaseEnded {
                lease_id: a,
                reason: LeaseEndReason::Released
            },
        ]
    );
    let waiting: Vec<_> = log.t.waiters("jobs/x").iter().map(|w| w.lease_id).collect();
    assert_eq!(waiting, vec![c], "carol, still behind dave");
    let out = log.apply(as_("dave", release(hdr(4, 2), Some("jobs/x"), d, Some(t1))));
    let index = log.index;
    assert_eq!(
        out.effects,
        vec![
            Effect::Freed {
                resource: "jobs/x".into(),
                lease_id: d,
                fencing_token: t1,
                reason: FreeReason::Released,
                granted_at_ms: 0,
            },
            Effect::WaiterRemoved {
                resource: "jobs/x".into(),
                lease_id: c,
                enqueue_index: c_enq,
                reason: WaiterRemovedReason::Granted,
                enqueued_at_ms: 0,
            },
            Effect::Granted {
                resource: "jobs/x".into(),
                lease_id: c,
                fencing_token: t1 + 1,
                grant_index: index,
                mode: Mode::Exclusive,
                slot: None,
            },
            Effect::LeaseEnded {
                lease_id: d,
                reason: LeaseEndReason::Released
            },
        ]
    );
    assert_eq!(log.t.holder("jobs/x").map(|h| h.lease_id), Some(c));
    assert!(log.t.lease(a).is_none());
    // Alice holds nothing but her outcome record.
    assert_eq!(
        log.t.usage("alice"),
        crate::auth::Usage {
            clients: 1,
            ..crate::auth::Usage::default()
        }
    );
    assert_eq!(log.t.usage("carol").locks, 1);
    assert_eq!(log.t.usage("carol").waiters, 0);
}

// S8 at every hand-off (expiry, revoke, forced release, lock-delay end): the
// revoked waiter ahead was removed at its revoke, and the permitted one
// behind it is granted at the hand-off.
#[test]
fn revoked_waiters_are_skipped_at_every_kind_of_hand_off() {
    for kind in ["expire", "revoke", "force", "lock-delay"] {
        let mut log = with_jobs_role(&["alice", "carol", "dave"]);
        let delay = if kind == "lock-delay" { 1_000 } else { 0 };
        let (d, _) = granted(&log.apply(as_(
            "dave",
            acquire(hdr(4, 1), "jobs/x", new_lease(10_000), 0, delay),
        )));
        log.apply(as_(
            "alice",
            acquire(hdr(1, 1), "jobs/x", new_lease(30_000), 60_000, 0),
        ));
        log.apply(as_(
            "carol",
            acquire(hdr(3, 1), "jobs/x", new_lease(30_000), 60_000, 0),
        ));
        let waiting: Vec<_> = log.t.waiters("jobs/x").iter().map(|w| w.lease_id).collect();
        let (a, c) = (waiting[0], waiting[1]);
        log.root(AuthOp::RevokeRole {
            user: who("alice"),
            role: "jobs".into(),
        });
        assert!(log.t.lease(a).is_none(), "{kind}: ended at the revoke");
        let mut out = match kind {
            "expire" | "lock-delay" => log.expire(d),
            "revoke" => log.apply(as_("dave", revoke(hdr(4, 2), d))),
            _ => log.apply(as_("root", force(hdr(9, 1), "jobs/x", "root"))),
        };
        if kind == "lock-delay" {
            assert!(log.t.holder("jobs/x").is_none(), "in lock-delay");
            assert_eq!(log.t.waiters("jobs/x").len(), 1);
            // The delay counts from the lease's end (10 s): over at 11 s.
            assert_eq!(
                log.t.lock_delay("jobs/x").map(|d| d.ends_at_ms),
                Some(11_000)
            );
            out = log.tick_at(11_000);
        }
        assert!(
            out.effects.iter().any(|e| matches!(
                e,
                Effect::Granted { lease_id, .. } if *lease_id == c
            )),
            "{kind}"
        );
        assert_eq!(
            log.t.holder("jobs/x").map(|h| h.lease_id),
            Some(c),
            "{kind}"
        );
    }
}

// An entry's sweep runs before its command (docs/semantics.md "Time"): when
// a revoke of carol's role is stamped at the instant dave's lease ends, the
// sweep hands the lock to carol while she still holds the role, and the
// revoke after it, like any revoke, leaves what is held alone.
#[test]
fn a_revoke_stamped_at_an_expiry_comes_after_that_entrys_hand_off() {
    let mut log = with_jobs_role(&["carol", "dave"]);
    let (d, t1) = granted(&log.apply(as_(
        "dave",
        acquire(hdr(4, 1), "jobs/x", new_lease(1_000), 0, 0),
    )));
    log.apply(as_(
        "carol",
        acquire(hdr(3, 1), "jobs/x", new_lease(30_000), 60_000, 0),
    ));
    let c = log.t.waiters("jobs/x")[0].lease_id;
    log.advance(1_000);
    let request = log.index + 1;
    let out = log.apply(as_(
        "root",
        change(
            hdr(999_999, request),
            AuthOp::RevokeRole {
                user: who("carol"),
                role: "jobs".into(),
            },
        ),
    ));
    assert_eq!(out.response, Response::AuthChanged);
    let granted_to: Vec<_> = out
        .effects
        .iter()
        .filter_map(|e| match e {
            Effect::Granted {
                lease_id,
                fencing_token,
                ..
            } => Some((*lease_id, *fencing_token)),
            _ => None,
        })
        .collect();
    assert_eq!(granted_to, vec![(c, t1 + 1)]);
    assert!(log.t.lease(d).is_none());
    assert_eq!(
        log.t.holder("jobs/x").map(|h| h.lease_id),
        Some(c),
        "the revoke leaves the hand-off's grant"
    );
}

// Prefix matching (crate::auth docs): `election:sched` lets alice campaign
// and proclaim on the election `scheduler` but not lock a resource of that
// name; the lock prefix `sch` never matches the election; `""` matches both.
#[test]
fn election_prefixes_match_elections_and_lock_prefixes_match_locks() {
    let mut log = Log::new();
    log.root(grant_perm("sched", "election:sched", Permission::Lock));
    log.root(grant_perm("sch", "sch", Permission::Lock));
    log.root(grant_perm("all", "", Permission::Lock));
    log.root(grant_role("alice", "sched"));
    log.root(grant_role("bob", "sch"));
    log.root(grant_role("carol", "all"));
    let e = election("scheduler");
    let out = log.apply(as_("alice", lease_grant(hdr(1, 1), 10_000)));
    let Response::LeaseGranted { lease_id: la, .. } = out.response else {
        panic!("{out:?}")
    };
    assert!(matches!(
        log.apply(as_("alice", proclaim(&e, la, "node-a"))).response,
        Response::Proclaimed { .. }
    ));
    granted(&log.apply(as_("alice", acquire(hdr(1, 2), &e, on(la), 0, 0))));
    let out = log.apply(as_("alice", acquire(hdr(1, 3), "scheduler", on(la), 0, 0)));
    assert_eq!(
        refused(&out.response).message,
        r#"principal alice has no lock permission on "scheduler""#
    );
    // bob: the lock `scheduler` yes, the election no.
    granted(&log.apply(as_(
        "bob",
        acquire(hdr(2, 1), "scheduler", new_lease(10_000), 0, 0),
    )));
    let out = log.apply(as_(
        "bob",
        acquire(hdr(2, 2), &e, new_lease(10_000), 60_000, 0),
    ));
    assert_eq!(
        refused(&out.response).message,
        r#"principal bob has no lock permission on election "scheduler""#
    );
    assert!(log.t.waiters(&e).is_empty());
    // carol: "" matches both.
    granted(&log.apply(as_(
        "carol",
        acquire(hdr(3, 1), "sched-lock", new_lease(10_000), 0, 0),
    )));
    let out = log.apply(as_(
        "carol",
        acquire(hdr(3, 2), &e, new_lease(10_000), 60_000, 0),
    ));
    assert!(matches!(
        out.response,
        Response::Acquire(AcquireReply {
            outcome: AcquireOutcome::Queued { .. },
            ..
        })
    ));
    // The read paths (list, watch) ask for a prefix of what they list.
    let t = &log.t;
    assert!(t.allows(
        Some("alice"),
        Permission::Read,
        Target::Election("scheduler")
    ));
    assert!(t.allows(
        Some("alice"),
        Permission::Read,
        Target::Prefix(&election("sched"))
    ));
    assert!(!t.allows(
        Some("alice"),
        Permission::Read,
        Target::Prefix(&election("s"))
    ));
    assert!(!t.allows(
        Some("alice"),
        Permission::Read,
        Target::Prefix(ELECTION_PREFIX)
    ));
    assert!(!t.allows(Some("alice"), Permission::Read, Target::Prefix("")));
    assert!(!t.allows(
        Some("alice"),
        Permission::Admin,
        Target::Election("scheduler")
    ));
    assert!(t.allows(Some("bob"), Permission::Read, Target::Prefix("sch/x")));
    assert!(!t.allows(Some("bob"), Permission::Read, Target::Prefix("sc")));
    assert!(!t.allows(Some("bob"), Permission::Read, Target::Election("sch")));
    assert!(t.allows(Some("carol"), Permission::Read, Target::Prefix("")));
    assert!(t.allows(Some("carol"), Permission::Lock, Target::Any));
    assert!(!t.allows(Some("nobody"), Permission::Read, Target::Any));
    assert!(t.allows(None, Permission::Admin, Target::Prefix("")));
    assert!(t.allows(Some("root"), Permission::Admin, Target::Prefix("")));
    // The matching rule itself.
    assert!(grant_covers("", "x") && grant_covers("", &election("x")));
    assert!(grant_covers("election:", &election("x")));
    assert!(
        !grant_covers("election:", "election:x"),
        "a lock is not an election"
    );
    assert!(
        grant_covers("elec", "election:x"),
        "lock prefixes match locks"
    );
    assert!(!grant_covers("x", &election("x")));
}

// Undoing a principal (docs/security.md): `admin` may revoke another
// principal's lease; it is an involuntary loss of every grant it held (the
// lock-delay it asked for runs, and a waiter is granted only after it), each
// freed grant gets an audit record naming the admin, as a forced release
// does. A principal without admin still gets NotFound for it, and an
// owner's own revoke stays clean (no lock-delay, no audit record).
#[test]
fn an_admin_revokes_any_lease_and_it_is_audited() {
    let mut log = with_jobs_role(&["alice", "bob", "carol"]);
    log.root(grant_perm("ops", "", Permission::Admin));
    log.root(grant_role("carol", "ops"));
    let (a, t1) = granted(&log.apply(as_(
        "alice",
        acquire(hdr(1, 1), "jobs/1", new_lease(60_000), 0, 2_000),
    )));
    let (_, t2) = granted(&log.apply(as_("alice", acquire(hdr(1, 2), "jobs/2", on(a), 0, 0))));
    log.apply(as_(
        "bob",
        acquire(hdr(2, 1), "jobs/1", new_lease(60_000), 60_000, 0),
    ));
    let e = log.apply(as_("bob", revoke(hdr(2, 2), a)));
    assert_eq!(refused(&e.response).code, ErrorCode::NotFound);
    let mut r = revoke(hdr(3, 1), a);
    if let Command::Revoke(r) = &mut r {
        r.at_unix_ms = 1_700_000_000_000;
    }
    let out = log.apply(as_("carol", r));
    assert_eq!(out.response, Response::Revoked { lease_id: a });
    assert!(log.t.lease(a).is_none());
    let trail: Vec<(String, u64, String, u64)> = log
        .t
        .audit_trail()
        .map(|r| {
            (
                r.resource.clone(),
                r.fencing_token,
                r.requested_by.clone(),
                r.at_unix_ms,
            )
        })
        .collect();
    let by = format!("carol (revoke of lease {a})");
    assert_eq!(
        trail,
        vec![
            ("jobs/1".to_owned(), t1, by.clone(), 1_700_000_000_000),
            ("jobs/2".to_owned(), t2, by, 1_700_000_000_000),
        ]
    );
    // Involuntary: jobs/1's lock-delay of 2 s runs; bob waits for it.
    assert!(log.t.lock_delay("jobs/1").is_some());
    assert!(log.t.holder("jobs/1").is_none());
    // An owner's own revoke: clean, not audited.
    let (b, _) = granted(&log.apply(as_(
        "alice",
        acquire(hdr(1, 3), "jobs/3", new_lease(60_000), 0, 2_000),
    )));
    log.apply(as_("alice", revoke(hdr(1, 4), b)));
    assert!(log.t.lock_delay("jobs/3").is_none());
    assert_eq!(log.t.audit_trail().count(), 2);
    // `user list` shows a principal that owns something with no role left.
    let (d, _) = granted(&log.apply(as_(
        "alice",
        acquire(hdr(1, 5), "jobs/4", new_lease(60_000), 0, 0),
    )));
    log.root(AuthOp::RevokeRole {
        user: who("alice"),
        role: "jobs".into(),
    });
    let users = log.t.users();
    assert!(users.contains(&("alice", Vec::new())), "{users:?}");
    assert!(log.t.lease(d).is_some());
}
