//! The auth calls of [`Admin`] (roles, grants, quotas, limits, the auth
//! audit trail; the deny list is in `deny.rs`) and their results. Each
//! needs `admin` on `""`; changes carry one request id for every attempt
//! (S7).

use warden_proto::v1;

use super::deny::DenyTarget;
use super::{Admin, ADMIN_ATTEMPT_TIMEOUT};
use crate::client::within;
use crate::ClientError;

impl Admin {
    /// Sets `role`'s permission on `prefix` (a lock prefix such as
    /// `"payments/"`, `"election:"` + an election name prefix, or `""` for
    /// everything), replacing one on the same prefix and creating the role.
    /// Needs `admin` on `""`. Retried with one request id (S7).
    ///
    /// # Errors
    ///
    /// `PermissionDenied`; `InvalidArgument` naming the field (`role`,
    /// `prefix`); `ResourceExhausted` (1,000 roles, 100 grants per role);
    /// `NoQuorum` / `Unavailable`; `RequestExpired`.
    pub async fn grant_permission(
        &self,
        role: impl Into<String>,
        prefix: impl Into<String>,
        permission: Permission,
    ) -> Result<(), ClientError> {
        let (role, prefix) = (role.into(), prefix.into());
        self.change(
            "grant permission",
            |header| v1::GrantPermissionRequest {
                header: Some(header),
                role,
                prefix,
                permission: permission.to_pb() as i32,
            },
            |mut admin, r| async move { admin.grant_permission(r).await },
        )
        .await
    }

    /// Removes `role`'s grant on `prefix`. Needs `admin` on `""`.
    ///
    /// # Errors
    ///
    /// `NotFound` for an unknown role or grant; as
    /// [`grant_permission`](Admin::grant_permission).
    pub async fn revoke_permission(
        &self,
        role: impl Into<String>,
        prefix: impl Into<String>,
    ) -> Result<(), ClientError> {
        let (role, prefix) = (role.into(), prefix.into());
        self.change(
            "revoke permission",
            |header| v1::RevokePermissionRequest {
                header: Some(header),
                role,
                prefix,
            },
            |mut admin, r| async move { admin.revoke_permission(r).await },
        )
        .await
    }

    /// Deletes `role` and takes it from every principal. Needs `admin` on
    /// `""`.
    ///
    /// # Errors
    ///
    /// `NotFound` for an unknown role; as
    /// [`grant_permission`](Admin::grant_permission).
    pub async fn delete_role(&self, role: impl Into<String>) -> Result<(), ClientError> {
        let role = role.into();
        self.change(
            "delete role",
            |header| v1::DeleteRoleRequest {
                header: Some(header),
                role,
            },
            |mut admin, r| async move { admin.delete_role(r).await },
        )
        .await
    }

    /// Gives the existing `role` to principal `user` (a client
    /// certificate's name; again: no change). Needs `admin` on `""`.
    ///
    /// # Errors
    ///
    /// `NotFound` for an unknown role; `InvalidArgument` (field `user`);
    /// `ResourceExhausted` (1,000 principals with roles, 32 roles each); as
    /// [`grant_permission`](Admin::grant_permission).
    pub async fn grant_role(
        &self,
        user: impl Into<String>,
        role: impl Into<String>,
    ) -> Result<(), ClientError> {
        let (user, role) = (user.into(), role.into());
        self.change(
            "grant role",
            |header| v1::GrantRoleRequest {
                header: Some(header),
                user,
                role,
            },
            |mut admin, r| async move { admin.grant_role(r).await },
        )
        .await
    }

    /// Takes `role` from `user`. Needs `admin` on `""`.
    ///
    /// # Errors
    ///
    /// `NotFound` when `user` does not hold it; as
    /// [`grant_permission`](Admin::grant_permission).
    pub async fn revoke_role(
        &self,
        user: impl Into<String>,
        role: impl Into<String>,
    ) -> Result<(), ClientError> {
        let (user, role) = (user.into(), role.into());
        self.change(
            "revoke role",
            |header| v1::RevokeRoleRequest {
                header: Some(header),
                user,
                role,
            },
            |mut admin, r| async move { admin.revoke_role(r).await },
        )
        .await
    }

    /// Sets `role`'s quota (creating the role), or clears it (`None`). A
    /// principal with several roles gets, per field, the largest of their
    /// quotas. Lowering a quota takes nothing away; it only refuses more.
    /// Needs `admin` on `""`.
    ///
    /// # Errors
    ///
    /// `InvalidArgument` naming the field (`quota.leases`, ...) and its
    /// ceiling; `NotFound` when clearing an unknown role's; as
    /// [`grant_permission`](Admin::grant_permission).
    pub async fn set_role_quota(
        &self,
        role: impl Into<String>,
        quota: Option<Quota>,
    ) -> Result<(), ClientError> {
        let role = role.into();
        self.change(
            "set role quota",
            |header| v1::SetRoleQuotaRequest {
                header: Some(header),
                role,
                quota: quota.map(|q| q.to_pb()),
            },
            |mut admin, r| async move { admin.set_role_quota(r).await },
        )
        .await
    }

    /// Sets the cluster-wide limits and the default quota, all at once.
    /// Needs `admin` on `""`.
    ///
    /// # Errors
    ///
    /// `InvalidArgument` naming the field (`max_leases`, `max_clients`,
    /// `default_quota.leases`, ...) and its bounds; as
    /// [`grant_permission`](Admin::grant_permission).
    pub async fn set_limits(&self, limits: ClusterLimits) -> Result<(), ClientError> {
        self.change(
            "set limits",
            |header| v1::SetLimitsRequest {
                header: Some(header),
                limits: Some(limits.to_pb()),
            },
            |mut admin, r| async move { admin.set_limits(r).await },
        )
        .await
    }

    /// Every role with its grants and quota, by name; a linearizable read.
    /// Needs `admin` on `""`.
    ///
    /// # Errors
    ///
    /// `PermissionDenied`; `NoQuorum` / `Unavailable`.
    pub async fn roles(&self) -> Result<Roles, ClientError> {
        self.call("list roles", move |mut admin| async move {
            let reply = within(
                ADMIN_ATTEMPT_TIMEOUT,
                admin.list_roles(v1::ListRolesRequest {}),
            )
            .await?;
            Ok(Roles::from(reply))
        })
        .await
    }

    /// Every principal that holds a role: its roles, the quota that binds
    /// it and what it holds, by principal; a linearizable read. Needs
    /// `admin` on `""`.
    ///
    /// # Errors
    ///
    /// `PermissionDenied`; `NoQuorum` / `Unavailable`.
    pub async fn users(&self) -> Result<Users, ClientError> {
        self.call("list users", move |mut admin| async move {
            let reply = within(
                ADMIN_ATTEMPT_TIMEOUT,
                admin.list_users(v1::ListUsersRequest {}),
            )
            .await?;
            Ok(Users::from(reply))
        })
        .await
    }

    /// The cluster-wide limits and the default quota; a linearizable read.
    /// Needs `admin` on `""`.
    ///
    /// # Errors
    ///
    /// `PermissionDenied`; `NoQuorum` / `Unavailable`.
    pub async fn limits(&self) -> Result<Limits, ClientError> {
        self.call("get limits", move |mut admin| async move {
            let reply = within(
                ADMIN_ATTEMPT_TIMEOUT,
                admin.get_limits(v1::GetLimitsRequest {}),
            )
            .await?;
            Ok(Limits {
                limits: reply.limits.map(ClusterLimits::from_pb).unwrap_or_default(),
                read_index: reply.read_index,
            })
        })
        .await
    }

    /// The replicated trail of auth changes (the last 1,000), oldest
    /// first, each with the principal that made it; a linearizable read.
    /// Needs `admin` on `""`.
    ///
    /// # Errors
    ///
    /// `PermissionDenied`; `NoQuorum` / `Unavailable`.
    pub async fn auth_audit_trail(&self) -> Result<AuthAuditTrail, ClientError> {
        self.call("auth audit trail", move |mut admin| async move {
            let reply = within(
                ADMIN_ATTEMPT_TIMEOUT,
                admin.auth_audit_trail(v1::AuthAuditTrailRequest {}),
            )
            .await?;
            Ok(AuthAuditTrail::from(reply))
        })
        .await
    }
}

/// What a grant allows; each includes the ones before it
/// (`Admin` ⊇ `Lock` ⊇ `Read`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Permission {
    /// Status, validate, list and watch, observe an election.
    Read,
    /// Also acquire, wait, create leases, campaign and proclaim.
    Lock,
    /// Also force-release, membership, snapshots, roles, users and limits.
    Admin,
}

impl Permission {
    /// `read`, `lock` or `admin`.
    pub fn as_str(self) -> &'static str {
        match self {
            Permission::Read => "read",
            Permission::Lock => "lock",
            Permission::Admin => "admin",
        }
    }

    fn to_pb(self) -> v1::Permission {
        match self {
            Permission::Read => v1::Permission::Read,
            Permission::Lock => v1::Permission::Lock,
            Permission::Admin => v1::Permission::Admin,
        }
    }

    /// `None` for a value this client does not know.
    fn from_pb(p: i32) -> Option<Permission> {
        match v1::Permission::try_from(p) {
            Ok(v1::Permission::Read) => Some(Permission::Read),
            Ok(v1::Permission::Lock) => Some(Permission::Lock),
            Ok(v1::Permission::Admin) => Some(Permission::Admin),
            _ => None,
        }
    }
}

impl std::fmt::Display for Permission {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The most a principal may hold at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Quota {
    /// Live leases it owns (at most 1,000,000).
    pub leases: u64,
    /// Held grants plus queued waits on its leases (at most 10,000,000).
    pub locks: u64,
    /// Queued waits on its leases (at most 1,000,000).
    pub waiters: u64,
    /// Outcome records (client ids) it keeps (at most 262,144; S7).
    pub clients: u64,
    /// Published values (elections) of its leases (at most 100,000).
    pub values: u64,
    /// Bytes of those values (at most 409,600,000).
    pub value_bytes: u64,
    /// Queued waits of its leases on any one resource (at most 10,000).
    pub waits_per_resource: u64,
    /// Watch streams open at once on each node (at most 100,000).
    pub watches: u64,
}

impl Default for Quota {
    /// The server's default quota: 10,000 leases, 100,000 locks, 10,000
    /// waiters, 4,096 clients, 1,000 values of 1 MiB in all, 1,000 waits on
    /// one resource, 1,000 watch streams on each node.
    fn default() -> Self {
        Quota {
            leases: 10_000,
            locks: 100_000,
            waiters: 10_000,
            clients: 4_096,
            values: 1_000,
            value_bytes: 1 << 20,
            waits_per_resource: 1_000,
            watches: 1_000,
        }
    }
}

impl Quota {
    fn to_pb(self) -> v1::Quota {
        v1::Quota {
            leases: self.leases,
            locks: self.locks,
            waiters: self.waiters,
            clients: self.clients,
            values: self.values,
            value_bytes: self.value_bytes,
            waits_per_resource: self.waits_per_resource,
            watches: self.watches,
        }
    }

    fn from_pb(q: v1::Quota) -> Quota {
        Quota {
            leases: q.leases,
            locks: q.locks,
            waiters: q.waiters,
            clients: q.clients,
            values: q.values,
            value_bytes: q.value_bytes,
            waits_per_resource: q.waits_per_resource,
            watches: q.watches,
        }
    }
}

/// The cluster-wide limits and the default quota.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClusterLimits {
    /// Live leases in the cluster (1..=1,000,000; default 100,000).
    pub max_leases: u64,
    /// Outcome records beyond which a new client id is refused
    /// (1..=262,144; default 65,536).
    pub max_clients: u64,
    /// The quota of a principal none of whose roles sets one.
    pub default_quota: Quota,
}

impl Default for ClusterLimits {
    /// The server's defaults.
    fn default() -> Self {
        ClusterLimits {
            max_leases: 100_000,
            max_clients: 65_536,
            default_quota: Quota::default(),
        }
    }
}

impl ClusterLimits {
    fn to_pb(self) -> v1::ClusterLimits {
        v1::ClusterLimits {
            max_leases: self.max_leases,
            max_clients: self.max_clients,
            default_quota: Some(self.default_quota.to_pb()),
        }
    }

    fn from_pb(l: v1::ClusterLimits) -> ClusterLimits {
        ClusterLimits {
            max_leases: l.max_leases,
            max_clients: l.max_clients,
            default_quota: l.default_quota.map(Quota::from_pb).unwrap_or_default(),
        }
    }
}

/// One grant of a role.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RoleGrant {
    /// The prefix: a lock prefix, `election:` + an election name prefix,
    /// or `""` (everything).
    pub prefix: String,
    /// What it allows; `None` for a permission this client version does
    /// not know.
    pub permission: Option<Permission>,
}

/// One role.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RoleInfo {
    /// Its name.
    pub name: String,
    /// Its grants, by prefix.
    pub grants: Vec<RoleGrant>,
    /// Its quota, if it sets one.
    pub quota: Option<Quota>,
}

/// The answer to [`Admin::roles`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Roles {
    /// By name.
    pub roles: Vec<RoleInfo>,
    /// The log index the read was served at.
    pub read_index: u64,
}

/// What a principal holds, counted against its quota.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct QuotaUsage {
    /// Live leases it owns.
    pub leases: u64,
    /// Held grants plus queued waits on its leases.
    pub locks: u64,
    /// Queued waits on its leases.
    pub waiters: u64,
    /// Outcome records it keeps.
    pub clients: u64,
    /// Published values of its leases.
    pub values: u64,
    /// Their bytes.
    pub value_bytes: u64,
}

/// One principal that holds a role.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserInfo {
    /// The principal.
    pub principal: String,
    /// Its roles, by name.
    pub roles: Vec<String>,
    /// The quota that binds it (`None` for `root`, bound only by the
    /// cluster limits).
    pub quota: Option<Quota>,
    /// What it holds.
    pub usage: QuotaUsage,
    /// On the replicated deny list.
    pub denied: bool,
}

/// The answer to [`Admin::users`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Users {
    /// By principal.
    pub users: Vec<UserInfo>,
    /// The log index the read was served at.
    pub read_index: u64,
}

/// The answer to [`Admin::limits`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// The limits.
    pub limits: ClusterLimits,
    /// The log index the read was served at.
    pub read_index: u64,
}

/// One auth change, as the auth audit trail keeps it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AuthChange {
    /// [`Admin::grant_permission`].
    GrantPermission {
        /// The role.
        role: String,
        /// The prefix.
        prefix: String,
        /// The permission (`None`: unknown to this client version).
        permission: Option<Permission>,
    },
    /// [`Admin::revoke_permission`].
    RevokePermission {
        /// The role.
        role: String,
        /// The prefix.
        prefix: String,
    },
    /// [`Admin::delete_role`].
    DeleteRole {
        /// The role.
        role: String,
    },
    /// [`Admin::grant_role`].
    GrantRole {
        /// The principal.
        user: String,
        /// The role.
        role: String,
    },
    /// [`Admin::revoke_role`].
    RevokeRole {
        /// The principal.
        user: String,
        /// The role.
        role: String,
    },
    /// [`Admin::set_role_quota`].
    SetRoleQuota {
        /// The role.
        role: String,
        /// The quota set (`None`: cleared).
        quota: Option<Quota>,
    },
    /// [`Admin::set_limits`].
    SetLimits(ClusterLimits),
    /// [`Admin::deny`].
    Deny(DenyTarget),
    /// [`Admin::undeny`].
    Undeny(DenyTarget),
    /// A change this client version does not know (its wire name).
    Other(String),
}

impl AuthChange {
    /// The change's wire name: `grant_permission`, `revoke_permission`,
    /// `delete_role`, `grant_role`, `revoke_role`, `set_role_quota`,
    /// `set_limits`, `deny`, `undeny`, or the unknown name.
    pub fn op(&self) -> &str {
        match self {
            AuthChange::GrantPermission { .. } => "grant_permission",
            AuthChange::RevokePermission { .. } => "revoke_permission",
            AuthChange::DeleteRole { .. } => "delete_role",
            AuthChange::GrantRole { .. } => "grant_role",
            AuthChange::RevokeRole { .. } => "revoke_role",
            AuthChange::SetRoleQuota { .. } => "set_role_quota",
            AuthChange::SetLimits(_) => "set_limits",
            AuthChange::Deny(_) => "deny",
            AuthChange::Undeny(_) => "undeny",
            AuthChange::Other(op) => op,
        }
    }
}

/// One applied auth change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthAuditRecord {
    /// Log index of the entry that applied it.
    pub index: u64,
    /// Who made it; `None` for an anonymous caller of an insecure cluster.
    pub principal: Option<String>,
    /// The change.
    pub change: AuthChange,
    /// The proposing server's wall clock, in ms since the Unix epoch;
    /// display only.
    pub at_unix_ms: u64,
}

/// The answer to [`Admin::auth_audit_trail`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthAuditTrail {
    /// Oldest first (the last 1,000).
    pub records: Vec<AuthAuditRecord>,
    /// The log index the read was served at.
    pub read_index: u64,
}

impl From<v1::ListRolesResponse> for Roles {
    fn from(r: v1::ListRolesResponse) -> Self {
        Roles {
            roles: r
                .roles
                .into_iter()
                .map(|role| RoleInfo {
                    name: role.name,
                    grants: role
                        .grants
                        .into_iter()
                        .map(|g| RoleGrant {
                            prefix: g.prefix,
                            permission: Permission::from_pb(g.permission),
                        })
                        .collect(),
                    quota: role.quota.map(Quota::from_pb),
                })
                .collect(),
            read_index: r.read_index,
        }
    }
}

impl From<v1::ListUsersResponse> for Users {
    fn from(r: v1::ListUsersResponse) -> Self {
        Users {
            users: r
                .users
                .into_iter()
                .map(|u| UserInfo {
                    principal: u.principal,
                    roles: u.roles,
                    quota: u.quota.map(Quota::from_pb),
                    usage: u
                        .usage
                        .map(|u| QuotaUsage {
                            leases: u.leases,
                            locks: u.locks,
                            waiters: u.waiters,
                            clients: u.clients,
                            values: u.values,
                            value_bytes: u.value_bytes,
                        })
                        .unwrap_or_default(),
                    denied: u.denied,
                })
                .collect(),
            read_index: r.read_index,
        }
    }
}

impl From<v1::AuthAuditRecord> for AuthAuditRecord {
    fn from(r: v1::AuthAuditRecord) -> Self {
        let change = match r.op.as_str() {
            "grant_permission" => AuthChange::GrantPermission {
                role: r.role,
                prefix: r.prefix,
                permission: Permission::from_pb(r.permission),
            },
            "revoke_permission" => AuthChange::RevokePermission {
                role: r.role,
                prefix: r.prefix,
            },
            "delete_role" => AuthChange::DeleteRole { role: r.role },
            "grant_role" => AuthChange::GrantRole {
                user: r.user,
                role: r.role,
            },
            "revoke_role" => AuthChange::RevokeRole {
                user: r.user,
                role: r.role,
            },
            "set_role_quota" => AuthChange::SetRoleQuota {
                role: r.role,
                quota: r.quota.map(Quota::from_pb),
            },
            "set_limits" => {
                AuthChange::SetLimits(r.limits.map(ClusterLimits::from_pb).unwrap_or_default())
            }
            "deny" | "undeny" => {
                let target = if r.serial.is_empty() {
                    DenyTarget::User(r.user)
                } else {
                    DenyTarget::Serial(r.serial)
                };
                if r.op == "deny" {
                    AuthChange::Deny(target)
                } else {
                    AuthChange::Undeny(target)
                }
            }
            _ => AuthChange::Other(r.op),
        };
        AuthAuditRecord {
            index: r.index,
            principal: (!r.principal.is_empty()).then_some(r.principal),
            change,
            at_unix_ms: r.at_unix_ms,
        }
    }
}

impl From<v1::AuthAuditTrailResponse> for AuthAuditTrail {
    fn from(r: v1::AuthAuditTrailResponse) -> Self {
        AuthAuditTrail {
            records: r.records.into_iter().map(AuthAuditRecord::from).collect(),
            read_index: r.read_index,
        }
    }
}
