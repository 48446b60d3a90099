//! The write, renew and read paths with identities, on a one-node cluster
//! in this process ([`super::test_node`]), with principals injected where
//! the TLS handshake would put them. Each test names what it defends
//! (`warden_core::auth` for the rules, docs/security.md for the user's view).

use std::time::Duration;

use warden_core::limits::ELECTION_PREFIX;
use warden_core::types::{
    Acquire, AcquireOutcome, AcquireReply, AuthOp, ClusterLimits, Command, DenyTarget, ErrorCode,
    LeaseGrant, LeaseSpec, Permission, Principal, Quota, Release, Revoke,
};

use super::submit::{LeaseGranted, Released, Revoked};
use super::test_node::{header, named, Setup, TestNode};
use super::{ReadError, SubmitError};

fn acquire(client_id: u64, request_id: u64, resource: &str, lease: LeaseSpec) -> Command {
    Command::Acquire(Acquire::mutex(
        header(client_id, request_id),
        resource,
        lease,
        0,
        0,
    ))
}

fn new_lease() -> LeaseSpec {
    LeaseSpec::New { ttl_ms: 30_000 }
}

fn lease_grant(client_id: u64, request_id: u64, ttl_ms: u64) -> Command {
    Command::LeaseGrant(LeaseGrant {
        header: header(client_id, request_id),
        ttl_ms,
    })
}

/// The granted (lease, token) of an acquire reply.
fn granted(reply: &AcquireReply) -> (u64, u64) {
    match &reply.outcome {
        AcquireOutcome::Granted {
            lease_id,
            fencing_token,
            ..
        } => (*lease_id, *fencing_token),
        other => panic!("not granted: {other:?}"),
    }
}

/// The code, field and message of a refusal.
fn refusal<T: std::fmt::Debug>(r: Result<T, SubmitError>) -> (ErrorCode, Option<String>, String) {
    match r {
        Err(SubmitError::Refused(e)) => (e.code, e.field, e.message),
        other => panic!("expected a refusal, got {other:?}"),
    }
}

fn read_refusal<T: std::fmt::Debug>(
    r: Result<T, ReadError>,
) -> (ErrorCode, Option<String>, String) {
    match r {
        Err(ReadError::Refused(e)) => (e.code, e.field, e.message),
        other => panic!("expected a refusal, got {other:?}"),
    }
}

// Identity and permissions: a
// secure node's client command goes out as `Authorized` with the caller's
// principal, the lease it makes belongs to that principal, and the table
// decides `lock` on the resource at apply: alice (lock on "orders/") takes
// "orders/1" but is refused "payments/1", naming the permission and the
// resource, and the refused acquire leaves no lease behind.
#[tokio::test]
async fn a_secure_nodes_commands_carry_their_principal() {
    let t = TestNode::start(Setup::default()).await;
    t.grant("alice", "orders/", Permission::Lock).await;
    let alice = named("alice");
    let LeaseGranted { lease_id, .. } = t
        .node
        .submit(&alice, lease_grant(1, 1, 10_000))
        .await
        .expect("lease grant");
    assert_eq!(
        t.table(|m| m.lease_owner(lease_id).map(|o| o.map(str::to_owned))),
        Some(Some("alice".into()))
    );
    let last = t.applied().pop().expect("applied");
    assert!(
        matches!(&last, Command::Authorized(w) if w.principal == alice),
        "{last:?}"
    );
    let reply: AcquireReply = t
        .node
        .submit(&alice, acquire(1, 2, "orders/1", new_lease()))
        .await
        .expect("acquire");
    let (order_lease, _) = granted(&reply);
    assert_eq!(
        t.table(|m| m.lease_owner(order_lease).map(|o| o.map(str::to_owned))),
        Some(Some("alice".into()))
    );
    let leases = t.table(|m| m.lease_count());
    let (code, field, message) = refusal(
        t.node
            .submit::<AcquireReply>(&alice, acquire(1, 3, "payments/1", new_lease()))
            .await,
    );
    assert_eq!(
        (code, field.as_deref()),
        (ErrorCode::PermissionDenied, Some("resource"))
    );
    assert_eq!(
        message,
        "principal alice has no lock permission on \"payments/1\""
    );
    assert_eq!(
        t.table(|m| m.lease_count()),
        leases,
        "a refused acquire creates no lease"
    );
    assert!(t.table(|m| m.holder("payments/1").is_none()));
}

// Upgrade (the log-format gate): an insecure node wraps its anonymous
// callers' commands (`principal: None`) once every member reads format 3;
// they pass every check and make ownerless leases, as before identities.
#[tokio::test]
async fn an_insecure_node_wraps_anonymous_commands_once_the_gate_opens() {
    let t = TestNode::start(Setup::default()).await;
    let LeaseGranted { lease_id, .. } = t
        .node
        .submit(&None, lease_grant(2, 1, 10_000))
        .await
        .expect("lease grant");
    let last = t.applied().pop().expect("applied");
    assert!(
        matches!(&last, Command::Authorized(w) if w.principal.is_none()),
        "{last:?}"
    );
    assert_eq!(
        t.table(|m| m.lease_owner(lease_id).map(|o| o.map(str::to_owned))),
        Some(None)
    );
    assert_eq!(
        t.node.renew(&None, lease_id).await.expect("renew"),
        Some(10_000)
    );
}

// Leases have owners (etcd PR 8031): bob, who may lock everything, cannot
// renew, read, revoke, release or acquire on alice's lease even with its id
// and token, and each answer is exactly the one for a lease that does not
// exist (no liveness oracle: lease ids are small and sequential); the lease
// is untouched; alice can; `admin` may read any lease's TTL.
#[tokio::test]
async fn a_principal_cannot_touch_another_principals_lease() {
    let t = TestNode::start(Setup::default()).await;
    t.grant("alice", "", Permission::Lock).await;
    t.grant("bob", "", Permission::Lock).await;
    let (alice, bob) = (named("alice"), named("bob"));
    let reply: AcquireReply = t
        .node
        .submit(&alice, acquire(1, 1, "ledger", new_lease()))
        .await
        .expect("acquire");
    let (lease, token) = granted(&reply);
    let absent = 9_999_999;
    // The same call on `id`, with request ids of its own.
    let same = |e: (ErrorCode, Option<String>, String), n: (ErrorCode, Option<String>, String)| {
        let swapped = e.2.replace(&lease.to_string(), &absent.to_string());
        assert_eq!((e.0, e.1, swapped), n);
    };

    assert_eq!(t.node.renew(&bob, lease).await.expect("renew"), None);
    assert_eq!(t.node.renew(&bob, absent).await.expect("renew"), None);
    assert_eq!(t.node.lease_status(&bob, lease).await.expect("ttl"), None);
    assert_eq!(t.node.lease_status(&bob, absent).await.expect("ttl"), None);
    let revoke = |n, lease_id| {
        Command::Revoke(Revoke {
            header: header(2, n),
            lease_id,
            at_unix_ms: 0,
        })
    };
    let e = refusal(t.node.submit::<Revoked>(&bob, revoke(1, lease)).await);
    assert_eq!(e.0, ErrorCode::NotFound);
    same(
        e,
        refusal(t.node.submit::<Revoked>(&bob, revoke(2, absent)).await),
    );
    let release = |n, lease_id| {
        Command::Release(Release {
            header: header(2, n),
            resource: Some("ledger".into()),
            lease_id,
            fencing_token: Some(token),
        })
    };
    let e = refusal(t.node.submit::<Released>(&bob, release(3, lease)).await);
    same(
        e,
        refusal(t.node.submit::<Released>(&bob, release(4, absent)).await),
    );
    let hang = |n, lease_id| acquire(2, n, "other", LeaseSpec::Existing { lease_id });
    let e = refusal(t.node.submit::<AcquireReply>(&bob, hang(5, lease)).await);
    same(
        e,
        refusal(t.node.submit::<AcquireReply>(&bob, hang(6, absent)).await),
    );
    assert!(t.table(|m| m.holder("other").is_none()));
    let holder = t.table(|m| m.holder("ledger")).expect("still held");
    assert_eq!((holder.lease_id, holder.fencing_token), (lease, token));

    assert_eq!(
        t.node.renew(&alice, lease).await.expect("renew"),
        Some(30_000)
    );
    let own = t.node.lease_status(&alice, lease).await.expect("ttl");
    assert_eq!(own.map(|l| l.locks), Some(vec!["ledger".to_string()]));
    let root = t
        .node
        .lease_status(&named("root"), lease)
        .await
        .expect("ttl");
    assert!(root.is_some(), "admin reads any lease");
}

// Permission is checked when the command applies, and exactly-once comes
// first (S7): after alice's `lock` is revoked, her retried acquire (same
// request id) still answers with its grant, a new acquire is refused and
// the refusal is recorded like any other (its retry answers the same),
// and she can still release what she holds (release needs ownership only)
// and renew it (keep-alives go on).
#[tokio::test]
async fn a_revoke_binds_later_commands_but_recorded_outcomes_stand() {
    let t = TestNode::start(Setup::default()).await;
    t.grant("alice", "jobs/", Permission::Lock).await;
    let alice = named("alice");
    let first: AcquireReply = t
        .node
        .submit(&alice, acquire(5, 1, "jobs/a", new_lease()))
        .await
        .expect("acquire");
    let (lease, token) = granted(&first);
    t.revoke("alice", "jobs/").await;
    let retried: AcquireReply = t
        .node
        .submit(&alice, acquire(5, 1, "jobs/a", new_lease()))
        .await
        .expect("retry");
    assert_eq!(granted(&retried), (lease, token));
    assert!(retried.retried);
    let refused = t
        .node
        .submit::<AcquireReply>(&alice, acquire(5, 2, "jobs/b", new_lease()))
        .await;
    assert_eq!(refusal(refused).0, ErrorCode::PermissionDenied);
    let again = t
        .node
        .submit::<AcquireReply>(&alice, acquire(5, 2, "jobs/b", new_lease()))
        .await;
    assert_eq!(
        refusal(again).0,
        ErrorCode::PermissionDenied,
        "the refusal was recorded"
    );
    assert_eq!(
        t.node.renew(&alice, lease).await.expect("renew"),
        Some(30_000)
    );
    let release = Command::Release(Release {
        header: header(5, 3),
        resource: Some("jobs/a".into()),
        lease_id: lease,
        fencing_token: Some(token),
    });
    let released: Released = t.node.submit(&alice, release).await.expect("release");
    assert_eq!((released.lease_id, released.fencing_token), (lease, token));
}

// A stolen key (docs/security.md "A key was stolen"): once alice is denied,
// her keep-alives renew nothing (answered "not live", as for a lease that
// does not exist), even on a connection not closed yet, and her writes are
// refused; undenied, her lease (still live) renews again.
#[tokio::test]
async fn a_denied_principal_renews_nothing_and_is_refused() {
    let t = TestNode::start(Setup::default()).await;
    t.grant("alice", "jobs/", Permission::Lock).await;
    let alice = named("alice");
    let first: AcquireReply = t
        .node
        .submit(&alice, acquire(5, 1, "jobs/a", new_lease()))
        .await
        .expect("acquire");
    let (lease, _) = granted(&first);
    let target = || DenyTarget::Principal(Principal::new("alice").expect("name"));
    t.auth(&named("root"), AuthOp::Deny(target()))
        .await
        .expect("deny");
    assert_eq!(t.node.renew(&alice, lease).await.expect("renew"), None);
    let refused = t
        .node
        .submit::<AcquireReply>(&alice, acquire(5, 2, "jobs/b", new_lease()))
        .await;
    let (code, _, message) = refusal(refused);
    assert_eq!(code, ErrorCode::PermissionDenied);
    assert!(message.contains("principal alice is denied"), "{message}");
    t.auth(&named("root"), AuthOp::Undeny(target()))
        .await
        .expect("undeny");
    assert_eq!(
        t.node.renew(&alice, lease).await.expect("renew"),
        Some(30_000)
    );
}

// Reads check permission (never a silently filtered answer): alice, with
// read on "orders/", reads status and validate of "orders/1" and lists
// "orders/" and "orders/eu/", but status of "payments/1" and a list of ""
// are refused naming the target; an election is read with a grant of
// "election:" + a prefix of its name, and a lock prefix never covers one;
// an anonymous caller (insecure) reads everything.
#[tokio::test]
async fn reads_need_read_permission() {
    let t = TestNode::start(Setup::default()).await;
    t.grant("alice", "orders/", Permission::Read).await;
    t.grant("carol", "election:sched", Permission::Read).await;
    let (alice, carol) = (named("alice"), named("carol"));
    let root = named("root");
    let reply: AcquireReply = t
        .node
        .submit(&root, acquire(6, 1, "orders/1", new_lease()))
        .await
        .expect("acquire");
    let (lease, token) = granted(&reply);
    let st = t
        .node
        .resource_status(&alice, "orders/1")
        .await
        .expect("status");
    assert_eq!(st.holder().map(|h| h.lease_id), Some(lease));
    let check = t
        .node
        .token_check(&alice, "orders/1", token)
        .await
        .expect("validate");
    assert_eq!(check.state, warden_core::TokenState::Current);
    assert_eq!(
        t.node.list(&alice, "orders/").await.expect("list").1.len(),
        1
    );
    assert!(t
        .node
        .list(&alice, "orders/eu/")
        .await
        .expect("list")
        .1
        .is_empty());

    let (code, field, message) = read_refusal(t.node.resource_status(&alice, "payments/1").await);
    assert_eq!(
        (code, field.as_deref()),
        (ErrorCode::PermissionDenied, Some("resource"))
    );
    assert_eq!(
        message,
        "principal alice has no read permission on \"payments/1\""
    );
    let (code, _, _) = read_refusal(t.node.token_check(&alice, "payments/1", token).await);
    assert_eq!(code, ErrorCode::PermissionDenied);
    let (code, field, message) = read_refusal(t.node.list(&alice, "").await);
    assert_eq!(
        (code, field.as_deref()),
        (ErrorCode::PermissionDenied, Some("prefix"))
    );
    assert_eq!(
        message,
        "principal alice has no read permission on prefix \"\""
    );

    let election = format!("{ELECTION_PREFIX}scheduler");
    assert!(t.node.resource_status(&carol, &election).await.is_ok());
    let (code, _, message) = read_refusal(t.node.resource_status(&alice, &election).await);
    assert_eq!(code, ErrorCode::PermissionDenied);
    assert!(message.contains("election \"scheduler\""), "{message}");
    let (code, _, _) = read_refusal(t.node.resource_status(&carol, "orders/1").await);
    assert_eq!(code, ErrorCode::PermissionDenied);

    assert!(t.node.resource_status(&None, "payments/1").await.is_ok());
    assert_eq!(t.node.list(&None, "").await.expect("list").1.len(), 1);
}

// The admin reads need admin on "" (the audit trails, roles, users, the deny list,
// limits, snapshot save): bob, who may lock everything, is refused each,
// naming the permission and the prefix; root reads them, and the role and
// user lists show what was granted, with each principal's quota and usage.
#[tokio::test]
async fn admin_reads_need_admin() {
    let t = TestNode::start(Setup::default()).await;
    t.grant("bob", "", Permission::Lock).await;
    let bob = named("bob");
    let denied = "principal bob has no admin permission on prefix \"\"";
    assert_eq!(read_refusal(t.node.audit_trail(&bob).await).2, denied);
    assert_eq!(read_refusal(t.node.auth_audit_trail(&bob).await).2, denied);
    assert_eq!(read_refusal(t.node.roles(&bob).await).2, denied);
    assert_eq!(read_refusal(t.node.users(&bob).await).2, denied);
    assert_eq!(read_refusal(t.node.limits(&bob).await).2, denied);
    assert_eq!(read_refusal(t.node.snapshot_cut(&bob).await).2, denied);
    assert_eq!(read_refusal(t.node.denied(&bob).await).2, denied);

    let root = named("root");
    let LeaseGranted { .. } = t
        .node
        .submit(&bob, lease_grant(7, 1, 10_000))
        .await
        .expect("lease");
    let (_, roles) = t.node.roles(&root).await.expect("roles");
    assert_eq!(roles.len(), 1);
    assert_eq!(
        (roles[0].name.as_str(), roles[0].grants.clone()),
        ("bob", vec![(String::new(), Permission::Lock)])
    );
    let (_, users) = t.node.users(&root).await.expect("users");
    // bob, and root, which keeps client records (its auth changes).
    let names: Vec<&str> = users.iter().map(|u| u.principal.as_str()).collect();
    assert_eq!(names, vec!["bob", "root"]);
    assert_eq!((users[1].roles.len(), users[1].quota), (0, None));
    assert_eq!(users[0].roles, vec!["bob".to_string()]);
    assert_eq!(users[0].quota, Some(Quota::default()));
    assert_eq!((users[0].usage.leases, users[0].usage.clients), (1, 1));
    let (_, limits) = t.node.limits(&root).await.expect("limits");
    assert_eq!(limits, ClusterLimits::default());
    let (_, trail) = t.node.auth_audit_trail(&root).await.expect("trail");
    assert_eq!(trail.len(), 2, "grant permission, grant role");
    assert!(trail.iter().all(|r| r.principal == root));
    assert!(t.node.snapshot_cut(&root).await.is_ok());
}

// Each auth change needs admin on "" (decided at apply): bob is refused
// every one of them with PermissionDenied and the auth table and its audit
// trail do not change; root makes each, and each lands in the audit trail
// with its principal.
#[tokio::test]
async fn auth_changes_need_admin_and_a_refused_one_changes_nothing() {
    let t = TestNode::start(Setup::default()).await;
    t.grant("bob", "", Permission::Lock).await;
    let (bob, root) = (named("bob"), named("root"));
    let user = |n: &str| warden_core::types::Principal::new(n).expect("user");
    let quota = Quota {
        leases: 5,
        locks: 5,
        waiters: 5,
        clients: 5,
        ..Quota::default()
    };
    let ops = vec![
        AuthOp::GrantPermission {
            role: "payments".into(),
            prefix: "payments/".into(),
            permission: Permission::Lock,
        },
        AuthOp::GrantRole {
            user: user("carol"),
            role: "payments".into(),
        },
        AuthOp::SetRoleQuota {
            role: "payments".into(),
            quota: Some(quota),
        },
        AuthOp::SetLimits(ClusterLimits {
            max_leases: 500,
            ..ClusterLimits::default()
        }),
        AuthOp::RevokeRole {
            user: user("carol"),
            role: "payments".into(),
        },
        AuthOp::RevokePermission {
            role: "payments".into(),
            prefix: "payments/".into(),
        },
        AuthOp::DeleteRole {
            role: "payments".into(),
        },
        AuthOp::Deny(DenyTarget::Principal(user("mallory"))),
        AuthOp::Undeny(DenyTarget::Principal(user("mallory"))),
        AuthOp::Deny(DenyTarget::Serial("1f".into())),
    ];
    let auth_before = t.table(|m| m.auth().clone());
    let trail_before = t.table(|m| m.auth_audit_trail().count());
    for op in &ops {
        let (code, _, message) = refusal(t.auth(&bob, op.clone()).await);
        assert_eq!(code, ErrorCode::PermissionDenied, "{op:?}");
        assert_eq!(
            message,
            "principal bob has no admin permission on prefix \"\""
        );
    }
    assert_eq!(t.table(|m| m.auth().clone()), auth_before);
    assert_eq!(t.table(|m| m.auth_audit_trail().count()), trail_before);
    for op in &ops {
        t.auth(&root, op.clone()).await.expect("root changes");
    }
    let trail: Vec<_> = t.table(|m| m.auth_audit_trail().cloned().collect());
    assert_eq!(trail.len(), trail_before + ops.len());
    for (record, op) in trail[trail_before..].iter().zip(&ops) {
        assert_eq!((&record.principal, &record.op), (&root, op));
    }
    assert_eq!(t.table(|m| m.limits().max_leases), 500);
    assert!(t.table(|m| m.auth().role("payments").is_none()));
}

// "What bad input gets" for the auth path: a bad role name, principal or
// quota is refused InvalidArgument naming the field before anything is
// proposed.
#[tokio::test]
async fn bad_auth_changes_name_the_field() {
    let t = TestNode::start(Setup::default()).await;
    let root = named("root");
    let before = t.applied().len();
    let (code, field, _) = refusal(
        t.auth(
            &root,
            AuthOp::GrantPermission {
                role: ".bad".into(),
                prefix: "a/".into(),
                permission: Permission::Read,
            },
        )
        .await,
    );
    assert_eq!(
        (code, field.as_deref()),
        (ErrorCode::InvalidArgument, Some("role"))
    );
    let (code, field, _) = refusal(
        t.auth(
            &root,
            AuthOp::SetRoleQuota {
                role: "r".into(),
                quota: Some(Quota {
                    leases: u64::MAX,
                    ..Quota::default()
                }),
            },
        )
        .await,
    );
    assert_eq!(
        (code, field.as_deref()),
        (ErrorCode::InvalidArgument, Some("quota.leases"))
    );
    assert_eq!(t.applied().len(), before, "nothing proposed");
}

// docs/security.md "What insecure mode means": on an insecure node the
// administration calls that change something (and snapshot save) need
// `--insecure --allow-admin`; the refusal names the flags. A caller with a
// principal is not held by the flag (the admin permission decides).
#[tokio::test]
async fn an_insecure_node_refuses_admin_calls_without_allow_admin() {
    let t = TestNode::start(Setup::default()).await;
    let e = t
        .node
        .insecure_admin_gate(&None, "force-release")
        .expect_err("refused");
    assert_eq!(e.code, ErrorCode::PermissionDenied);
    assert!(
        e.message.contains("--insecure --allow-admin") && e.message.starts_with("force-release"),
        "{}",
        e.message
    );
    let (code, _, message) = read_refusal(t.node.snapshot_cut(&None).await);
    assert_eq!(code, ErrorCode::PermissionDenied);
    assert!(message.contains("--allow-admin"), "{message}");
    assert!(t
        .node
        .insecure_admin_gate(&named("bob"), "force-release")
        .is_ok());
    // Reads of the audit trails stay open to an insecure node's callers.
    assert!(t.node.audit_trail(&None).await.is_ok());
    drop(t);
    let allowed = TestNode::start(Setup {
        allow_admin: true,
        ..Setup::default()
    })
    .await;
    assert!(allowed
        .node
        .insecure_admin_gate(&None, "force-release")
        .is_ok());
    assert!(allowed.node.snapshot_cut(&None).await.is_ok());
}

// Leader duties never need a principal (etcd issues 13975 and 14616:
// leases stopped expiring when authentication broke): a lease whose owner
// has lost every role since still expires on time (L1: gone within TTL + E;
// here E is the one-node cluster's, docs/semantics.md "E, term by term").
#[tokio::test]
async fn a_lease_whose_owner_lost_its_roles_still_expires() {
    let t = TestNode::start(Setup::default()).await;
    t.grant("alice", "", Permission::Lock).await;
    let alice = named("alice");
    let reply: AcquireReply = t
        .node
        .submit(
            &alice,
            acquire(8, 1, "short", LeaseSpec::New { ttl_ms: 1_000 }),
        )
        .await
        .expect("acquire");
    let (lease, _) = granted(&reply);
    let granted_at = tokio::time::Instant::now();
    t.auth(
        &named("root"),
        AuthOp::DeleteRole {
            role: "alice".into(),
        },
    )
    .await
    .expect("delete role");
    let limit = Duration::from_millis(1_000 + 3_000);
    while t.table(|m| m.lease(lease).is_some()) {
        assert!(
            granted_at.elapsed() < limit,
            "lease {lease} outlived its TTL + E with its owner's roles gone"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(t.table(|m| m.holder("short").is_none()));
}

fn multi(client_id: u64, request_id: u64, resources: &[&str]) -> Command {
    let Command::Acquire(acquire) = acquire(client_id, request_id, resources[0], new_lease())
    else {
        unreachable!("acquire builds an Acquire")
    };
    Command::Acquire(warden_core::types::Acquire {
        resources: resources.iter().map(|r| (*r).to_owned()).collect(),
        ..acquire
    })
}

// Identity and permissions ("Multi-locks"): a multi-lock needs `lock` on
// every resource; alice (lock on "orders/") is refused one that also names
// "payments/1" and "payments/2", PermissionDenied naming the first refused
// resource, and nothing is held or left behind; on "orders/" alone it is
// granted.
#[tokio::test]
async fn a_multi_lock_needs_lock_on_every_resource() {
    let t = TestNode::start(Setup::default()).await;
    t.grant("alice", "orders/", Permission::Lock).await;
    let alice = named("alice");
    let leases = t.table(|m| m.lease_count());
    let (code, field, message) = refusal(
        t.node
            .submit::<super::submit::AcquireAnswer>(
                &alice,
                multi(1, 1, &["orders/1", "payments/1", "payments/2"]),
            )
            .await,
    );
    assert_eq!(
        (code, field.as_deref()),
        (ErrorCode::PermissionDenied, Some("resources"))
    );
    assert_eq!(
        message,
        "principal alice has no lock permission on \"payments/1\""
    );
    assert_eq!(t.table(|m| m.lease_count()), leases);
    assert!(t.table(|m| m.holder("orders/1").is_none()));
    let answer: super::submit::AcquireAnswer = t
        .node
        .submit(&alice, multi(1, 2, &["orders/1", "orders/2"]))
        .await
        .expect("granted");
    assert_eq!(answer.grants.len(), 2);
}

// Refused before the log (docs/security.md): a principal with no roles
// floods 50 acquires from one client; each is refused PermissionDenied, and
// only the first reaches the log (it makes the client's outcome record, S7);
// the other 49 are refused by the leader's table before they are proposed
// (the log grew by an entry per refusal before: a 20 s flood added 17 MB
// per node). A principal that has the permission is served as before.
#[tokio::test]
async fn refused_writes_never_reach_the_log() {
    let t = TestNode::start(Setup::default()).await;
    t.grant("alice", "", Permission::Lock).await;
    let (mallory, alice) = (named("mallory"), named("alice"));
    let before = t.entries().len();
    for n in 1..=50 {
        let e = t
            .node
            .submit::<AcquireReply>(&mallory, acquire(66, n, "ledger", new_lease()))
            .await;
        let (code, _, message) = refusal(e);
        assert_eq!(code, ErrorCode::PermissionDenied);
        assert!(message.contains("mallory"), "{message}");
    }
    assert_eq!(t.entries().len(), before + 1, "refusals reached the log");
    let reply: AcquireReply = t
        .node
        .submit(&alice, acquire(1, 1, "ledger", new_lease()))
        .await
        .expect("alice is served");
    granted(&reply);
    assert_eq!(t.entries().len(), before + 2);
    // Releases and revokes of leases the table does not hold, by a
    // principal with no roles, are refused NotFound before the log too
    // (found by attack: each such refusal was an entry).
    let before = t.entries().len();
    for n in 100..150u64 {
        let release = Command::Release(Release {
            header: header(66, n),
            resource: Some("ledger".into()),
            lease_id: 1_000 + n,
            fencing_token: Some(1),
        });
        let (code, field, _) = refusal(t.node.submit::<Released>(&mallory, release).await);
        assert_eq!(
            (code, field.as_deref()),
            (ErrorCode::NotFound, Some("lease_id"))
        );
        let revoke = Command::Revoke(Revoke {
            header: header(66, n + 100),
            lease_id: 5_000 + n,
            at_unix_ms: 0,
        });
        let (code, _, _) = refusal(t.node.submit::<Revoked>(&mallory, revoke).await);
        assert_eq!(code, ErrorCode::NotFound);
    }
    assert_eq!(t.entries().len(), before, "refusals reached the log");
}
