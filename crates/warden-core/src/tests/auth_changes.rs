//! Identities, continued: admin rules and auth changes, bad identities and
//! wrappings, forced releases and batches of wrapped commands, and wrapped
//! commands under cluster time (see `crate::auth`).

use super::auth::{force, with_jobs_role};
use super::*;
use crate::auth::Target;
use crate::effect::{Effect, LeaseEndReason};
use crate::limits::{MAX_GRANTS_PER_ROLE, MAX_ROLES_PER_USER};

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
    assert_eq!(
        log.t.users(),
        vec![
            ("alice", vec!["ops".to_owned()]),
            ("root", vec!["viewer".to_owned()])
        ]
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
    // Only root is left listed: it holds no role but keeps client records
    // (`user list` shows whoever owns something in the table).
    assert_eq!(log.t.users(), vec![("root", Vec::new())]);
    assert!(log.t.auth().role("role0").is_none());
    assert!(log.t.auth().role("extra").is_some());
}

// "What bad input gets": a bad principal, a wrapped leader duty or batch, a
// bare auth change and bad names, prefixes and numbers are InvalidArgument
// naming the field and the limit; nothing changes (a wrapped promote is not
// applied either).
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
    let bad_name = Command::Authorized(Authorized {
        principal: Some(Principal::from_checked("al ice".into())),
        command: Box::new(lease_grant(hdr(1, 2), 10_000)),
    });
    let cases: Vec<(Command, &str)> = vec![
        (bad_name, "principal"),
        (as_("alice", Command::Tick), "command"),
        (
            as_(
                "alice",
                Command::Promote(Promote {
                    no_expiry_before_ms: u64::MAX,
                }),
            ),
            "command",
        ),
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
        "lease 1 not found (expired, revoked or never granted)"
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

// S8 with identities ("Time"): a wrapped acquire sees the same cluster time
// as a bare one: a holder whose lease ended is gone when it applies, and the
// helpers see through one Authorized; S7: the header is found the same way.
#[test]
fn a_wrapped_acquire_is_granted_over_an_ended_holder() {
    let mut log = with_jobs_role(&["alice", "bob"]);
    let (dead, _) = granted(&log.apply(as_(
        "bob",
        acquire(hdr(2, 1), "jobs/1", new_lease(1_000), 0, 0),
    )));
    let cmd = as_(
        "alice",
        acquire(hdr(1, 1), "jobs/1", new_lease(10_000), 0, 0),
    );
    assert_eq!(cmd.request_header(), Some(&hdr(1, 1)));
    assert_eq!(cmd.principal().map(Principal::as_str), Some("alice"));
    assert!(matches!(cmd.unwrapped(), Command::Acquire(_)));
    log.advance(1_000);
    let out = log.apply(cmd);
    let (lease, _) = granted(&out);
    assert_eq!(log.t.lease_owner(lease), Some(Some("alice")));
    assert!(log.t.lease(dead).is_none(), "the ended lease ended first");
    assert!(out.effects.contains(&Effect::LeaseEnded {
        lease_id: dead,
        reason: LeaseEndReason::Expired
    }));
}
