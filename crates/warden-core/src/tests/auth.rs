//! Identities: permissions, prefix matching, lease ownership, revoked waiters,
//! auth changes and their audit trail (see `crate::auth`).

use super::*;
use crate::auth::{grant_covers, Target};
use crate::effect::{Effect, FreeReason, LeaseEndReason, WaiterRemovedReason};
use crate::limits::{ELECTION_PREFIX, MAX_GRANTS_PER_ROLE, MAX_ROLES_PER_USER};

/// A table where the role `jobs` holds lock on `jobs/` and each of `users`
/// holds that role.
fn with_jobs_role(users: &[&str]) -> Log {
    let mut log = Log::new();
    log.root(grant_perm("jobs", "jobs/", Permission::Lock));
    for u in users {
        log.root(grant_role(u, "jobs"));
    }
    log
}

fn revoke(h: RequestHeader, lease_id: LeaseId) -> Command {
    Command::Revoke(Revoke {
        header: h,
        lease_id,
        due: None,
    })
}

fn proclaim(resource: &str, lease_id: LeaseId, value: &str) -> Command {
    Command::Proclaim(Proclaim {
        resource: resource.into(),
        lease_id,
        fencing_token: None,
        value: value.into(),
    })
}

fn force(h: RequestHeader, resource: &str, who: &str) -> Command {
    Command::ForceRelease(ForceRelease {
        header: h,
        resource: resource.into(),
        fencing_token: None,
        due: None,
        requested_by: who.into(),
        at_unix_ms: 0,
    })
}

fn election(name: &str) -> String {
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
    let denied = format!("lease {lease} belongs to another principal");
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
        let e = refused(&out.response);
        assert_eq!(e.code, ErrorCode::PermissionDenied, "{cmd:?}");
        assert_eq!(e.field.as_deref(), Some("lease_id"));
        assert_eq!(e.message, denied);
        assert!(out.effects.is_empty());
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
    assert_eq!(refused(&e.response).code, ErrorCode::PermissionDenied);
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

// S8 with identities: a revoke while alice waits does not sweep her wait,
// but at the holder's release she is removed (the effect says why, and her
// acquire-made lease dies with nothing left) and carol behind her is granted
// in the same entry, so a revoked waiter never blocks the queue.
#[test]
fn a_revoked_waiter_is_removed_at_the_hand_off_and_the_next_is_granted() {
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
    log.root(AuthOp::RevokeRole {
        user: who("alice"),
        role: "jobs".into(),
    });
    assert_eq!(log.t.waiters("jobs/x").len(), 2, "a revoke sweeps nothing");
    let out = log.apply(as_("dave", release(hdr(4, 2), Some("jobs/x"), d, Some(t1))));
    let index = log.index;
    assert_eq!(
        out.effects,
        vec![
            Effect::Freed {
                resource: "jobs/x".into(),
                lease_id: d,
                fencing_token: t1,
                reason: FreeReason::Released
            },
            Effect::WaiterRemoved {
                resource: "jobs/x".into(),
                lease_id: a,
                enqueue_index: a_enq,
                reason: WaiterRemovedReason::PermissionRevoked
            },
            Effect::LeaseEnded {
                lease_id: a,
                reason: LeaseEndReason::Released
            },
            Effect::WaiterRemoved {
                resource: "jobs/x".into(),
                lease_id: c,
                enqueue_index: c_enq,
                reason: WaiterRemovedReason::Granted
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
// revoked waiter ahead is removed and the permitted one behind it is granted
// in that same entry.
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
            acquire(hdr(1, 1), "jobs/x", new_lease(10_000), 60_000, 0),
        ));
        log.apply(as_(
            "carol",
            acquire(hdr(3, 1), "jobs/x", new_lease(10_000), 60_000, 0),
        ));
        let waiting: Vec<_> = log.t.waiters("jobs/x").iter().map(|w| w.lease_id).collect();
        let (a, c) = (waiting[0], waiting[1]);
        log.root(AuthOp::RevokeRole {
            user: who("alice"),
            role: "jobs".into(),
        });
        let last = log.t.lease(d).expect("dave's lease").last_index;
        let mut out = match kind {
            "expire" | "lock-delay" => log.apply(expire(L1, &[(d, last)])),
            "revoke" => log.apply(as_("dave", revoke(hdr(4, 2), d))),
            _ => log.apply(as_("root", force(hdr(9, 1), "jobs/x", "root"))),
        };
        if kind == "lock-delay" {
            assert!(log.t.holder("jobs/x").is_none(), "in lock-delay");
            assert_eq!(log.t.waiters("jobs/x").len(), 2);
            let start = log.index;
            out = log.apply(Command::EndLockDelay(EndLockDelay {
                leader: L1,
                resource: "jobs/x".into(),
                start_index: start,
                due: None,
            }));
        }
        assert!(
            out.effects.iter().any(|e| matches!(
                e,
                Effect::WaiterRemoved { lease_id, reason: WaiterRemovedReason::PermissionRevoked, .. } if *lease_id == a
            )),
            "{kind}: {:?}",
            out.effects
        );
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
        assert!(log.t.lease(a).is_none(), "{kind}");
    }
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

// The admin rules (crate::auth): root is admin on "" whatever the table
// says (a read-only role changes nothing for it); a non-admin's auth change
// is PermissionDenied and recorded (S7: its retry answers the same after the
// grant); each applied change lands in the auth audit trail with its
// principal, and a retry with a new display-only stamp replays without a
// second record.
#[test]
fn root_is_always_admin_and_auth_changes_need_admin_and_are_audited() {
    let mut log = Log::new();
    let denied = as_(
        "alice",
        change(hdr(1, 1), grant_perm("ops", "", Permission::Admin)),
    );
    let out = log.apply(denied.clone());
    let e = refused(&out.response);
    assert_eq!(e.code, ErrorCode::PermissionDenied);
    assert_eq!(
        e.message,
        r#"principal alice has no admin permission on prefix """#
    );
    assert!(log.t.roles().next().is_none());
    assert_eq!(log.t.auth_audit_trail().count(), 0);
    // Root: a read-only role does not lower it.
    log.root(grant_perm("viewer", "", Permission::Read));
    log.root(grant_role("root", "viewer"));
    log.root(grant_perm("ops", "", Permission::Admin));
    log.root(grant_role("alice", "ops"));
    assert!(log
        .t
        .allows(Some("root"), Permission::Admin, Target::Prefix("")));
    // The refusal was recorded: the retry answers the same.
    assert_eq!(log.apply(denied).response, out.response);
    // A new request of alice, now admin, applies; a retry with another
    // wall-clock stamp replays.
    let mut grant = AuthChange {
        header: hdr(1, 2),
        op: grant_perm("ops", "jobs/", Permission::Lock),
        at_unix_ms: 1_700,
    };
    assert_eq!(
        log.apply(as_("alice", Command::AuthChange(grant.clone())))
            .response,
        Response::AuthChanged
    );
    let alice_index = log.index;
    grant.at_unix_ms = 9_999;
    let retry = log.apply(as_("alice", Command::AuthChange(grant)));
    assert_eq!(retry.response, Response::AuthChanged);
    assert!(retry.effects.is_empty());
    let trail: Vec<_> = log
        .t
        .auth_audit_trail()
        .map(|r| (r.principal.as_ref().map(Principal::as_str), r.op.clone()))
        .collect();
    assert_eq!(
        trail,
        vec![
            (Some("root"), grant_perm("viewer", "", Permission::Read)),
            (Some("root"), grant_role("root", "viewer")),
            (Some("root"), grant_perm("ops", "", Permission::Admin)),
            (Some("root"), grant_role("alice", "ops")),
            (Some("alice"), grant_perm("ops", "jobs/", Permission::Lock)),
        ]
    );
    let last = log.t.auth_audit_trail().last().expect("a record");
    assert_eq!((last.index, last.at_unix_ms), (alice_index, 1_700));
    // The views for the CLI.
    let roles: Vec<_> = log
        .t
        .roles()
        .map(|r| (r.name, r.grants.len(), r.quota))
        .collect();
    assert_eq!(roles, vec![("ops", 2, None), ("viewer", 1, None)]);
    let users: Vec<_> = log
        .t
        .users()
        .map(|(u, r)| (u, r.iter().map(String::as_str).collect::<Vec<_>>()))
        .collect();
    assert_eq!(
        users,
        vec![("alice", vec!["ops"]), ("root", vec!["viewer"])]
    );
}

// Auth changes refuse what does not exist and every bound, naming the field
// and the limit, and change nothing; deleting a role takes it from everyone.
#[test]
fn auth_changes_refuse_unknown_names_and_bounds_and_delete_cleans_up() {
    let mut log = Log::new();
    let mut request = 0;
    let mut root = |log: &mut Log, op: AuthOp| {
        request += 1;
        log.apply(as_("root", change(hdr(9, request), op))).response
    };
    let code = |r: Response| {
        let e = refused(&r);
        (e.code, e.field.clone().unwrap_or_default())
    };
    let nf = ErrorCode::NotFound;
    assert_eq!(
        code(root(&mut log, grant_role("alice", "ghost"))),
        (nf, "role".into())
    );
    assert_eq!(
        code(root(
            &mut log,
            AuthOp::RevokePermission {
                role: "ghost".into(),
                prefix: "".into()
            }
        )),
        (nf, "role".into())
    );
    assert_eq!(
        code(root(
            &mut log,
            AuthOp::SetRoleQuota {
                role: "ghost".into(),
                quota: None
            }
        )),
        (nf, "role".into())
    );
    assert_eq!(
        code(root(
            &mut log,
            AuthOp::DeleteRole {
                role: "ghost".into()
            }
        )),
        (nf, "role".into())
    );
    root(&mut log, grant_perm("r0", "a", Permission::Read));
    assert_eq!(
        code(root(
            &mut log,
            AuthOp::RevokePermission {
                role: "r0".into(),
                prefix: "b".into()
            }
        )),
        (nf, "prefix".into())
    );
    assert_eq!(
        code(root(
            &mut log,
            AuthOp::RevokeRole {
                user: who("alice"),
                role: "r0".into()
            }
        )),
        (nf, "role".into())
    );
    // MAX_GRANTS_PER_ROLE: the 101st prefix is refused; re-granting one is not.
    for i in 1..MAX_GRANTS_PER_ROLE {
        assert_eq!(
            root(
                &mut log,
                grant_perm("r0", &format!("p{i}"), Permission::Lock)
            ),
            Response::AuthChanged
        );
    }
    let before = log.t.auth().clone();
    let r = root(&mut log, grant_perm("r0", "one-more", Permission::Lock));
    let e = refused(&r);
    assert_eq!(e.code, ErrorCode::ResourceExhausted);
    assert_eq!(e.field.as_deref(), Some("prefix"));
    assert!(e.message.contains("100"), "{}", e.message);
    assert_eq!(log.t.auth(), &before);
    assert_eq!(
        root(&mut log, grant_perm("r0", "p1", Permission::Admin)),
        Response::AuthChanged
    );
    // MAX_ROLES_PER_USER.
    for i in 0..MAX_ROLES_PER_USER {
        root(
            &mut log,
            grant_perm(&format!("role{i}"), "x", Permission::Read),
        );
        assert_eq!(
            root(&mut log, grant_role("alice", &format!("role{i}"))),
            Response::AuthChanged
        );
    }
    root(&mut log, grant_perm("extra", "x", Permission::Read));
    let r = root(&mut log, grant_role("alice", "extra"));
    assert_eq!(
        refused(&r).message,
        "principal alice holds at most 32 roles (MAX_ROLES_PER_USER)"
    );
    // Granting a held role again changes nothing.
    assert_eq!(
        root(&mut log, grant_role("alice", "role0")),
        Response::AuthChanged
    );
    assert_eq!(log.t.auth().user_roles("alice").count(), MAX_ROLES_PER_USER);
    // Deleting roles takes them from alice; with none left she is gone.
    root(&mut log, grant_role("bob", "role0"));
    for i in 0..MAX_ROLES_PER_USER {
        root(
            &mut log,
            AuthOp::DeleteRole {
                role: format!("role{i}"),
            },
        );
    }
    assert_eq!(log.t.users().count(), 0);
    assert!(log.t.auth().role("role0").is_none());
    assert!(log.t.auth().role("extra").is_some());
}

// "What bad input gets": a bad principal, a wrapped leader duty or batch, a
// bare auth change and bad names, prefixes and numbers are InvalidArgument
// naming the field and the limit; nothing changes (the wrapped leader duty's
// due list is not applied either).
#[test]
fn bad_identities_and_wrappings_are_refused_with_a_named_field() {
    for ok in [
        "alice",
        "a",
        "svc_1-x.y",
        "ops@example.com",
        &"x".repeat(64),
    ] {
        assert!(crate::validate::principal(ok).is_ok(), "{ok}");
    }
    for bad in [
        "",
        ".hidden",
        "-x",
        "al ice",
        "a/b",
        "é",
        "a\0",
        &"x".repeat(65),
    ] {
        let e = crate::validate::principal(bad).expect_err(bad);
        assert_eq!(e.field.as_deref(), Some("principal"), "{bad}");
        assert_eq!(e.code, ErrorCode::InvalidArgument);
    }
    assert!(crate::validate::principal(&"x".repeat(65))
        .unwrap_err()
        .message
        .contains("64"));
    let mut log = with_jobs_role(&["alice"]);
    granted(&log.apply(as_(
        "alice",
        acquire(hdr(1, 1), "jobs/1", new_lease(10_000), 0, 0),
    )));
    let lease = log.t.holder("jobs/1").expect("held").lease_id;
    let last = log.t.lease(lease).expect("live").last_index;
    let bad_name = Command::Authorized(Authorized {
        principal: Some(Principal::from_checked("al ice".into())),
        command: Box::new(lease_grant(hdr(1, 2), 10_000)),
    });
    let cases: Vec<(Command, &str)> = vec![
        (bad_name, "principal"),
        (as_("alice", expire(L1, &[(lease, last)])), "command"),
        (as_("alice", Command::Noop), "command"),
        (
            as_(
                "alice",
                Command::RenewBatch(RenewBatch {
                    lease_ids: vec![lease],
                }),
            ),
            "command",
        ),
        (
            as_(
                "alice",
                Command::Batch(vec![lease_grant(hdr(1, 3), 10_000)]),
            ),
            "command",
        ),
        (
            as_("alice", as_("alice", lease_grant(hdr(1, 4), 10_000))),
            "command",
        ),
        (
            as_(
                "alice",
                Command::RaiseTokenFloor(RaiseTokenFloor { floor: 1_000 }),
            ),
            "command",
        ),
        (
            change(hdr(9, 1), grant_perm("x", "", Permission::Admin)),
            "command",
        ),
        (
            as_(
                "root",
                change(hdr(9, 2), grant_perm("bad role", "", Permission::Read)),
            ),
            "role",
        ),
        (
            as_(
                "root",
                change(
                    hdr(9, 3),
                    grant_perm("r", &"p".repeat(513), Permission::Read),
                ),
            ),
            "prefix",
        ),
        (
            as_(
                "root",
                change(hdr(9, 4), grant_perm("r", "a\nb", Permission::Read)),
            ),
            "prefix",
        ),
        (
            as_(
                "root",
                change(
                    hdr(9, 5),
                    AuthOp::GrantRole {
                        user: Principal::from_checked("-bob".into()),
                        role: "jobs".into(),
                    },
                ),
            ),
            "user",
        ),
        (
            as_(
                "root",
                change(
                    hdr(9, 6),
                    AuthOp::SetRoleQuota {
                        role: "jobs".into(),
                        quota: Some(Quota {
                            leases: crate::limits::QUOTA_LEASES_CEILING + 1,
                            ..Quota::default()
                        }),
                    },
                ),
            ),
            "quota.leases",
        ),
        (
            as_(
                "root",
                change(
                    hdr(9, 7),
                    AuthOp::SetLimits(ClusterLimits {
                        max_clients: 0,
                        ..ClusterLimits::default()
                    }),
                ),
            ),
            "max_clients",
        ),
        (
            as_(
                "root",
                change(
                    hdr(9, 8),
                    AuthOp::SetLimits(ClusterLimits {
                        max_leases: crate::limits::MAX_LEASES_CEILING + 1,
                        ..ClusterLimits::default()
                    }),
                ),
            ),
            "max_leases",
        ),
        (
            as_("alice", acquire(hdr(1, 5), "jobs/2", new_lease(999), 0, 0)),
            "ttl_ms",
        ),
    ];
    for (cmd, field) in cases {
        let before = log.t.to_snapshot();
        let out = log.apply(cmd.clone());
        let e = refused(&out.response);
        assert_eq!(e.code, ErrorCode::InvalidArgument, "{cmd:?}");
        assert_eq!(e.field.as_deref(), Some(field), "{cmd:?}: {}", e.message);
        assert!(out.effects.is_empty(), "{cmd:?}");
        assert_eq!(log.t.to_snapshot(), before, "{cmd:?}");
    }
    // A valid election prefix may be as long as `election:` + 512 bytes.
    assert!(crate::validate::prefix(&format!("election:{}", "e".repeat(512))).is_ok());
    assert!(crate::validate::prefix("").is_ok());
}

// The forced-release audit names the principal, never the caller's free
// text alone; a non-admin's forced release is refused; ForceRelease ignores
// lease ownership (admin).
#[test]
fn a_forced_release_names_its_principal_and_needs_admin() {
    let mut log = with_jobs_role(&["alice", "bob"]);
    granted(&log.apply(as_(
        "alice",
        acquire(hdr(1, 1), "jobs/1", new_lease(10_000), 0, 0),
    )));
    let out = log.apply(as_("bob", force(hdr(2, 1), "jobs/1", "root")));
    assert_eq!(
        refused(&out.response).message,
        r#"principal bob has no admin permission on prefix """#
    );
    assert!(log.t.holder("jobs/1").is_some());
    assert!(matches!(
        log.apply(as_(
            "root",
            force(hdr(9, 1), "jobs/1", "ops console 10.0.0.7")
        ))
        .response,
        Response::Released { .. }
    ));
    granted(&log.apply(as_(
        "alice",
        acquire(hdr(1, 2), "jobs/1", new_lease(10_000), 0, 0),
    )));
    log.apply(as_("root", force(hdr(9, 2), "jobs/1", "root")));
    let trail: Vec<_> = log
        .t
        .audit_trail()
        .map(|r| r.requested_by.as_str())
        .collect();
    assert_eq!(trail, vec!["root (ops console 10.0.0.7)", "root"]);
}

// Command::Batch with identities: each Authorized command in a packed entry
// is checked on its own; one's refusal changes nothing for the others.
#[test]
fn a_batch_checks_each_authorized_command_on_its_own() {
    let mut log = with_jobs_role(&["alice", "bob"]);
    let out = log.apply(Command::Batch(vec![
        as_(
            "alice",
            acquire(hdr(1, 1), "jobs/1", new_lease(10_000), 0, 0),
        ),
        as_(
            "alice",
            acquire(hdr(1, 2), "orders/1", new_lease(10_000), 0, 0),
        ),
        as_("bob", release(hdr(2, 1), Some("jobs/1"), 1, None)),
        as_("bob", acquire(hdr(2, 2), "jobs/2", new_lease(10_000), 0, 0)),
    ]));
    let Response::Batch(rs) = &out.response else {
        panic!("{out:?}")
    };
    assert!(matches!(
        &rs[0],
        Response::Acquire(AcquireReply {
            outcome: AcquireOutcome::Granted { lease_id: 1, .. },
            ..
        })
    ));
    assert_eq!(refused(&rs[1]).code, ErrorCode::PermissionDenied);
    assert_eq!(
        refused(&rs[2]).message,
        "lease 1 belongs to another principal"
    );
    assert!(matches!(
        &rs[3],
        Response::Acquire(AcquireReply {
            outcome: AcquireOutcome::Granted { lease_id: 2, .. },
            ..
        })
    ));
    assert_eq!(log.t.lease_owner(1), Some(Some("alice")));
    assert_eq!(log.t.lease_owner(2), Some(Some("bob")));
}

// S8 with identities: the leader attaches its due list to a wrapped client
// command as to a bare one (the helpers see through one Authorized), and
// apply removes those due leases first; S7: the header is found the same way.
#[test]
fn a_due_list_inside_an_authorized_command_is_applied_first() {
    let mut log = with_jobs_role(&["alice", "bob"]);
    let (dead, _) = granted(&log.apply(as_(
        "bob",
        acquire(hdr(2, 1), "jobs/1", new_lease(1_000), 0, 0),
    )));
    let last = log.t.lease(dead).expect("live").last_index;
    let mut cmd = as_(
        "alice",
        acquire(hdr(1, 1), "jobs/1", new_lease(10_000), 0, 0),
    );
    assert_eq!(cmd.request_header(), Some(&hdr(1, 1)));
    assert_eq!(cmd.principal().map(Principal::as_str), Some("alice"));
    assert!(matches!(cmd.unwrapped(), Command::Acquire(_)));
    *cmd.client_due_mut().expect("an acquire has a due slot") = Some(DueList {
        leader: L1,
        leases: vec![DueLease {
            lease_id: dead,
            last_index: last,
        }],
        waiters: vec![],
    });
    assert!(cmd.client_due().is_some());
    assert!(as_("alice", Command::Noop).client_due_mut().is_none());
    let out = log.apply(cmd);
    let (lease, _) = granted(&out);
    assert_eq!(log.t.lease_owner(lease), Some(Some("alice")));
    assert!(log.t.lease(dead).is_none(), "the due lease ended first");
}
