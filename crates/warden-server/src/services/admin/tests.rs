//! The admin service's tests: the insecure gate and the auth RPCs.

use super::*;

fn h(request_id: u64) -> Option<pb::RequestHeader> {
    Some(pb::RequestHeader {
        client_id: 77,
        request_id,
        acked_request_id: 0,
    })
}

// docs/security.md "What insecure mode means": an insecure node (every
// caller anonymous) refuses every administration call that changes
// something, and snapshot save, unless it runs with --insecure
// --allow-admin; each refusal is PermissionDenied naming the flag, and
// nothing is proposed.
#[tokio::test]
async fn an_insecure_node_refuses_each_admin_change_without_allow_admin() {
    use crate::node::test_node::{Setup, TestNode};
    let t = TestNode::start(Setup::default()).await;
    let cell = NodeCell::default();
    cell.set(t.node.clone());
    let admin = AdminService::new(cell);
    let before = t.applied().len();
    let quota = Some(pb::Quota {
        leases: 1,
        locks: 1,
        waiters: 1,
        clients: 1,
        values: 1,
        value_bytes: 1,
        waits_per_resource: 1,
        watches: 1,
    });
    let limits = Some(pb::ClusterLimits {
        max_leases: 10,
        max_clients: 10,
        default_quota: quota,
    });
    let refusals: Vec<(&str, Status)> = vec![
        (
            "force-release",
            admin
                .force_release(Request::new(pb::ForceReleaseRequest {
                    header: h(1),
                    resource: "r".into(),
                    fencing_token: 0,
                    requested_by: String::new(),
                }))
                .await
                .expect_err("force release"),
        ),
        (
            "membership",
            admin
                .add_node(Request::new(pb::AddNodeRequest {
                    node_id: 4,
                    addr: "127.0.0.1:9".into(),
                    peer_addr: String::new(),
                }))
                .await
                .expect_err("add node"),
        ),
        (
            "membership",
            admin
                .remove_node(Request::new(pb::RemoveNodeRequest { node_id: 1 }))
                .await
                .expect_err("remove node"),
        ),
        (
            "membership",
            admin
                .replace_node(Request::new(pb::ReplaceNodeRequest {
                    old_node_id: 1,
                    new_node_id: 4,
                    addr: "127.0.0.1:9".into(),
                    peer_addr: String::new(),
                }))
                .await
                .expect_err("replace node"),
        ),
        (
            "snapshot save",
            admin
                .save_snapshot(Request::new(pb::SaveSnapshotRequest {}))
                .await
                .expect_err("save snapshot"),
        ),
        (
            "auth changes",
            admin
                .grant_permission(Request::new(pb::GrantPermissionRequest {
                    header: h(2),
                    role: "r".into(),
                    prefix: "a/".into(),
                    permission: pb::Permission::Lock as i32,
                }))
                .await
                .expect_err("grant permission"),
        ),
        (
            "auth changes",
            admin
                .revoke_permission(Request::new(pb::RevokePermissionRequest {
                    header: h(3),
                    role: "r".into(),
                    prefix: "a/".into(),
                }))
                .await
                .expect_err("revoke permission"),
        ),
        (
            "auth changes",
            admin
                .delete_role(Request::new(pb::DeleteRoleRequest {
                    header: h(4),
                    role: "r".into(),
                }))
                .await
                .expect_err("delete role"),
        ),
        (
            "auth changes",
            admin
                .grant_role(Request::new(pb::GrantRoleRequest {
                    header: h(5),
                    user: "alice".into(),
                    role: "r".into(),
                }))
                .await
                .expect_err("grant role"),
        ),
        (
            "auth changes",
            admin
                .revoke_role(Request::new(pb::RevokeRoleRequest {
                    header: h(6),
                    user: "alice".into(),
                    role: "r".into(),
                }))
                .await
                .expect_err("revoke role"),
        ),
        (
            "auth changes",
            admin
                .set_role_quota(Request::new(pb::SetRoleQuotaRequest {
                    header: h(7),
                    role: "r".into(),
                    quota,
                }))
                .await
                .expect_err("set role quota"),
        ),
        (
            "auth changes",
            admin
                .set_limits(Request::new(pb::SetLimitsRequest {
                    header: h(8),
                    limits,
                }))
                .await
                .expect_err("set limits"),
        ),
    ];
    for (what, status) in refusals {
        assert_eq!(
            status.code(),
            tonic::Code::PermissionDenied,
            "{what}: {status:?}"
        );
        assert!(
            status.message().starts_with(what) && status.message().contains("--allow-admin"),
            "{what}: {}",
            status.message()
        );
    }
    assert_eq!(t.applied().len(), before, "nothing was proposed");
}

// The auth RPCs end to end on an insecure node with --allow-admin (the
// anonymous caller passes every check): a granted permission shows in
// ListRoles and in the auth audit trail with an empty principal, a role
// given to a principal shows in ListUsers with the default quota, and
// GetLimits reports the defaults. Bad input names the field.
#[tokio::test]
async fn the_auth_rpcs_change_and_show_the_auth_table() {
    use crate::node::test_node::{Setup, TestNode};
    let t = TestNode::start(Setup {
        allow_admin: true,
        ..Setup::default()
    })
    .await;
    let cell = NodeCell::default();
    cell.set(t.node.clone());
    let admin = AdminService::new(cell);
    admin
        .grant_permission(Request::new(pb::GrantPermissionRequest {
            header: h(1),
            role: "payments".into(),
            prefix: "payments/".into(),
            permission: pb::Permission::Lock as i32,
        }))
        .await
        .expect("grant permission");
    admin
        .grant_role(Request::new(pb::GrantRoleRequest {
            header: h(2),
            user: "carol".into(),
            role: "payments".into(),
        }))
        .await
        .expect("grant role");
    let roles = admin
        .list_roles(Request::new(pb::ListRolesRequest {}))
        .await
        .expect("roles")
        .into_inner();
    assert_eq!(roles.roles.len(), 1);
    assert_eq!(roles.roles[0].name, "payments");
    assert_eq!(
        roles.roles[0].grants,
        vec![pb::RoleGrant {
            prefix: "payments/".into(),
            permission: pb::Permission::Lock as i32,
        }]
    );
    let users = admin
        .list_users(Request::new(pb::ListUsersRequest {}))
        .await
        .expect("users")
        .into_inner();
    assert_eq!(users.users.len(), 1);
    assert_eq!(users.users[0].principal, "carol");
    assert_eq!(users.users[0].roles, vec!["payments".to_string()]);
    assert_eq!(
        users.users[0].quota.as_ref().map(|q| q.leases),
        Some(warden_core::limits::DEFAULT_QUOTA_LEASES)
    );
    let trail = admin
        .auth_audit_trail(Request::new(pb::AuthAuditTrailRequest {}))
        .await
        .expect("trail")
        .into_inner();
    let ops: Vec<(&str, &str, &str)> = trail
        .records
        .iter()
        .map(|r| (r.op.as_str(), r.principal.as_str(), r.role.as_str()))
        .collect();
    assert_eq!(
        ops,
        vec![
            ("grant_permission", "", "payments"),
            ("grant_role", "", "payments")
        ]
    );
    assert_eq!(trail.records[1].user, "carol");
    let limits = admin
        .get_limits(Request::new(pb::GetLimitsRequest {}))
        .await
        .expect("limits")
        .into_inner()
        .limits
        .expect("limits");
    assert_eq!(limits.max_leases, warden_core::limits::DEFAULT_MAX_LEASES);

    let bad = admin
        .grant_permission(Request::new(pb::GrantPermissionRequest {
            header: h(3),
            role: "payments".into(),
            prefix: "x/".into(),
            permission: 0,
        }))
        .await
        .expect_err("no permission");
    assert_eq!(bad.code(), tonic::Code::InvalidArgument);
    assert!(bad.message().starts_with("permission"), "{}", bad.message());
    let bad = admin
        .grant_role(Request::new(pb::GrantRoleRequest {
            header: h(4),
            user: "-x".into(),
            role: "payments".into(),
        }))
        .await
        .expect_err("bad user");
    assert!(bad.message().starts_with("user"), "{}", bad.message());
    let bad = admin
        .set_limits(Request::new(pb::SetLimitsRequest {
            header: h(5),
            limits: None,
        }))
        .await
        .expect_err("no limits");
    assert!(bad.message().starts_with("limits"), "{}", bad.message());
}

// admin.proto SaveSnapshotStream's shape: the head first with
// `data_bytes` set and no data, then data messages of at most the
// chunk size (at least one: a snapshot of no bytes is one empty
// message), only the last marked done; the chunk size is clamped to
// 1..=MAX_SNAPSHOT_CHUNK_BYTES.
#[test]
fn snapshot_chunks_follow_the_wire_shape() {
    let head = pb::SaveSnapshotHead {
        cluster_id: "c".into(),
        applied_index: 9,
        ..Default::default()
    };
    let data = Arc::new((0..2500u32).map(|i| i as u8).collect::<Vec<u8>>());
    let sent: Vec<_> = snapshot_chunks(head.clone(), data.clone(), 1000).collect();
    assert_eq!(sent.len(), 4);
    assert_eq!(sent[0].head.as_ref().map(|h| h.data_bytes), Some(2500));
    assert!(sent[0].data.is_empty() && !sent[0].done);
    assert_eq!(
        sent[1..]
            .iter()
            .map(|c| (c.data.len(), c.done))
            .collect::<Vec<_>>(),
        vec![(1000, false), (1000, false), (500, true)]
    );
    let joined: Vec<u8> = sent.iter().flat_map(|c| c.data.clone()).collect();
    assert_eq!(&joined, data.as_ref());

    let empty: Vec<_> = snapshot_chunks(head.clone(), Arc::new(Vec::new()), 1000).collect();
    assert_eq!(empty.len(), 2);
    assert_eq!(empty[0].head.as_ref().map(|h| h.data_bytes), Some(0));
    assert!(empty[1].data.is_empty() && empty[1].done);

    let big = Arc::new(vec![0u8; MAX_SNAPSHOT_CHUNK_BYTES + 1]);
    let sent: Vec<_> = snapshot_chunks(head, big, usize::MAX).collect();
    assert_eq!(
        sent[1..].iter().map(|c| c.data.len()).collect::<Vec<_>>(),
        vec![MAX_SNAPSHOT_CHUNK_BYTES, 1]
    );
}

// "What bad input gets": requested_by is bounded, names
// the field, and carries the caller's address.
#[test]
fn requested_by_is_bounded_and_names_the_caller() {
    let addr = "127.0.0.1:4000".parse().ok();
    assert_eq!(
        requested_by(" alice ", addr).unwrap(),
        "alice from 127.0.0.1:4000"
    );
    assert_eq!(requested_by("", None).unwrap(), "unknown");
    let long = "x".repeat(MAX_CALLER_REQUESTED_BY_BYTES + 1);
    let e = Status::from(requested_by(&long, addr).unwrap_err());
    assert_eq!(e.code(), tonic::Code::InvalidArgument);
    assert!(e.message().starts_with("requested_by"), "{}", e.message());
    assert!(requested_by("a\u{7}b", addr).is_err());
    assert!(
        MAX_CALLER_REQUESTED_BY_BYTES
            + " from [ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff]:65535".len()
            <= warden_core::limits::MAX_REQUESTED_BY_BYTES
    );
}
