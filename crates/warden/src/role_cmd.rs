//! Identities and permissions (docs/security.md): `warden role ...`,
//! `warden user ...`, `warden cluster limits` and `warden audit --auth`, over
//! the client's [`Admin`](warden_client::Admin) auth calls.
//!
//! Every command here needs `admin` on `""` (`root` has it always; on an
//! insecure cluster the changes need a node started with `--insecure
//! --allow-admin`). A refusal exits 1 with one line on stderr naming the
//! principal, the permission and the prefix (`error: permission denied:
//! principal alice has no admin permission on prefix ""`). Names and
//! prefixes are checked here first, with the rules the server applies, so
//! bad input names the argument and nothing is sent. Each change carries a
//! request id that every retry reuses (S7): it applies once.

use std::time::{Duration, UNIX_EPOCH};

use clap::{Args, Subcommand, ValueEnum};
use serde_json::{json, Value};
use warden_client::{
    AuthAuditRecord, AuthChange, ClientError, ClusterLimits, DenyTarget, Permission, Quota,
    RoleInfo, UserInfo,
};

use crate::admin_cmd::admin;
use crate::cli::{ClientArgs, OutputFormat};
use crate::commands::describe_error;
use crate::output::{self, Report};

/// `warden role`.
#[derive(Debug, Args)]
pub struct RoleArgs {
    /// What to do.
    #[command(subcommand)]
    pub command: RoleCommand,
}

/// `warden role ...`.
#[derive(Debug, Subcommand)]
pub enum RoleCommand {
    /// Give ROLE a permission on a prefix (creates the role; replaces its
    /// permission on that prefix).
    Grant(RoleGrantArgs),
    /// Take ROLE's grant on a prefix away.
    Revoke(RoleRevokeArgs),
    /// Delete ROLE and take it from every principal.
    Delete(RoleNameArgs),
    /// Every role with its grants and quota.
    List(ListArgs),
    /// Set ROLE's quota (fields not given keep the role's current quota, or
    /// the cluster's default quota), or clear it with --clear.
    Quota(RoleQuotaArgs),
}

/// The permission flag.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PermissionArg {
    /// Status, validate, list, watch, observe an election.
    Read,
    /// Also acquire, wait, create leases, campaign, proclaim.
    Lock,
    /// Also force-release, membership, snapshots, roles, users, limits.
    Admin,
}

impl From<PermissionArg> for Permission {
    fn from(p: PermissionArg) -> Permission {
        match p {
            PermissionArg::Read => Permission::Read,
            PermissionArg::Lock => Permission::Lock,
            PermissionArg::Admin => Permission::Admin,
        }
    }
}

/// `warden role grant`.
#[derive(Debug, Args)]
pub struct RoleGrantArgs {
    /// The role (1..=64 of A-Z a-z 0-9 . _ - @, not starting with . or -).
    pub role: String,
    /// A lock prefix (e.g. payments/), election:NAME-PREFIX for elections,
    /// or "" for everything.
    #[arg(long, value_name = "P")]
    pub prefix: String,
    /// What the grant allows (each includes the ones before it).
    #[arg(long, value_enum)]
    pub permission: PermissionArg,
    #[command(flatten)]
    pub client: ClientArgs,
}

/// `warden role revoke`.
#[derive(Debug, Args)]
pub struct RoleRevokeArgs {
    /// The role.
    pub role: String,
    /// The prefix whose grant goes.
    #[arg(long, value_name = "P")]
    pub prefix: String,
    #[command(flatten)]
    pub client: ClientArgs,
}

/// A role and the client flags.
#[derive(Debug, Args)]
pub struct RoleNameArgs {
    /// The role.
    pub role: String,
    #[command(flatten)]
    pub client: ClientArgs,
}

/// Just the client flags.
#[derive(Debug, Args)]
pub struct ListArgs {
    #[command(flatten)]
    pub client: ClientArgs,
}

/// `warden role quota`.
#[derive(Debug, Args)]
pub struct RoleQuotaArgs {
    /// The role (created if missing).
    pub role: String,
    /// Live leases a principal may own (0..=1000000).
    #[arg(long, value_name = "N")]
    pub leases: Option<u64>,
    /// Held locks plus queued waits (0..=10000000).
    #[arg(long, value_name = "N")]
    pub locks: Option<u64>,
    /// Queued waits (0..=1000000).
    #[arg(long, value_name = "N")]
    pub waiters: Option<u64>,
    /// Client ids with an outcome record (0..=262144).
    #[arg(long, value_name = "N")]
    pub clients: Option<u64>,
    /// Published values (elections) of its leases (0..=100000).
    #[arg(long, value_name = "N")]
    pub values: Option<u64>,
    /// Bytes of those values (0..=409600000).
    #[arg(long, value_name = "BYTES")]
    pub value_bytes: Option<u64>,
    /// Queued waits on any one resource (0..=10000).
    #[arg(long, value_name = "N")]
    pub waits_per_resource: Option<u64>,
    /// Watch streams open at once on each node (0..=100000).
    #[arg(long, value_name = "N")]
    pub watches: Option<u64>,
    /// Clear the role's quota (its principals fall back to their other
    /// roles' quotas, or the default quota).
    #[arg(long, conflicts_with_all = ["leases", "locks", "waiters", "clients", "values", "value_bytes", "waits_per_resource", "watches"])]
    pub clear: bool,
    #[command(flatten)]
    pub client: ClientArgs,
}

/// `warden user`.
#[derive(Debug, Args)]
pub struct UserArgs {
    /// What to do.
    #[command(subcommand)]
    pub command: UserCommand,
}

/// `warden user ...`.
#[derive(Debug, Subcommand)]
pub enum UserCommand {
    /// Give PRINCIPAL (a client certificate's name) the existing ROLE.
    GrantRole(UserRoleArgs),
    /// Take ROLE from PRINCIPAL.
    RevokeRole(UserRoleArgs),
    /// Every principal that holds a role, owns something or is denied:
    /// roles, quota, usage.
    List(ListArgs),
    /// Deny every certificate of PRINCIPAL: handshakes fail, open
    /// connections close, its commands are refused, its waits end.
    Deny(crate::deny_cmd::DenyUserArgs),
    /// Take PRINCIPAL off the deny list.
    Undeny(crate::deny_cmd::DenyUserArgs),
    /// The deny list: denied principals and serials, and the serving
    /// node's deny file.
    Denied(crate::deny_cmd::DeniedArgs),
}

/// `warden user grant-role | revoke-role`.
#[derive(Debug, Args)]
pub struct UserRoleArgs {
    /// The principal (the name in its client certificate).
    pub principal: String,
    /// The role.
    pub role: String,
    #[command(flatten)]
    pub client: ClientArgs,
}

/// `warden cluster limits`: shows the limits, or sets the ones given (the
/// others keep their current value).
#[derive(Debug, Args)]
pub struct LimitsArgs {
    /// Live leases in the cluster (1..=1000000).
    #[arg(long, value_name = "N")]
    pub max_leases: Option<u64>,
    /// Client ids with an outcome record in the cluster (1..=262144).
    #[arg(long, value_name = "N")]
    pub max_clients: Option<u64>,
    /// Default quota: live leases per principal.
    #[arg(long, value_name = "N")]
    pub default_leases: Option<u64>,
    /// Default quota: locks plus waits per principal.
    #[arg(long, value_name = "N")]
    pub default_locks: Option<u64>,
    /// Default quota: waits per principal.
    #[arg(long, value_name = "N")]
    pub default_waiters: Option<u64>,
    /// Default quota: client ids per principal.
    #[arg(long, value_name = "N")]
    pub default_clients: Option<u64>,
    /// Default quota: published values per principal.
    #[arg(long, value_name = "N")]
    pub default_values: Option<u64>,
    /// Default quota: bytes of published values per principal.
    #[arg(long, value_name = "BYTES")]
    pub default_value_bytes: Option<u64>,
    /// Default quota: waits per principal on any one resource.
    #[arg(long, value_name = "N")]
    pub default_waits_per_resource: Option<u64>,
    /// Default quota: watch streams per principal open at once on each node.
    #[arg(long, value_name = "N")]
    pub default_watches: Option<u64>,
    #[command(flatten)]
    pub client: ClientArgs,
}

impl LimitsArgs {
    fn changes_anything(&self) -> bool {
        [
            self.max_leases,
            self.max_clients,
            self.default_leases,
            self.default_locks,
            self.default_waiters,
            self.default_clients,
            self.default_values,
            self.default_value_bytes,
            self.default_waits_per_resource,
            self.default_watches,
        ]
        .iter()
        .any(Option::is_some)
    }

    /// `current` with the flags given applied.
    fn apply(&self, current: ClusterLimits) -> ClusterLimits {
        let q = current.default_quota;
        ClusterLimits {
            max_leases: self.max_leases.unwrap_or(current.max_leases),
            max_clients: self.max_clients.unwrap_or(current.max_clients),
            default_quota: Quota {
                leases: self.default_leases.unwrap_or(q.leases),
                locks: self.default_locks.unwrap_or(q.locks),
                waiters: self.default_waiters.unwrap_or(q.waiters),
                clients: self.default_clients.unwrap_or(q.clients),
                values: self.default_values.unwrap_or(q.values),
                value_bytes: self.default_value_bytes.unwrap_or(q.value_bytes),
                waits_per_resource: self
                    .default_waits_per_resource
                    .unwrap_or(q.waits_per_resource),
                watches: self.default_watches.unwrap_or(q.watches),
            },
        }
    }
}

fn ok(stdout: String) -> Report {
    Report {
        stdout: Some(stdout),
        stderr: None,
        exit_code: output::EXIT_OK,
    }
}

fn failed(e: &ClientError) -> Report {
    output::error(&describe_error(e))
}

/// Checks a name with the server's rules; the error names `arg`.
fn check(arg: &str, r: Result<(), warden_core::types::CommandError>) -> Result<(), Report> {
    r.map_err(|e| output::error(&format!("{arg}: {}", e.message)))
}

fn check_role(role: &str) -> Result<(), Report> {
    check("ROLE", warden_core::validate::role(role))
}

fn check_prefix(prefix: &str) -> Result<(), Report> {
    check("--prefix", warden_core::validate::prefix(prefix))
}

/// The JSON shape of a quota.
pub fn quota_json(q: &Quota) -> Value {
    json!({
        "leases": q.leases,
        "locks": q.locks,
        "waiters": q.waiters,
        "clients": q.clients,
        "values": q.values,
        "value_bytes": q.value_bytes,
        "waits_per_resource": q.waits_per_resource,
        "watches": q.watches,
    })
}

fn quota_text(q: &Quota) -> String {
    format!(
        "{} leases, {} locks, {} waiters, {} clients, {} values ({} bytes), {} waits per resource, {} watches per node",
        q.leases,
        q.locks,
        q.waiters,
        q.clients,
        q.values,
        q.value_bytes,
        q.waits_per_resource,
        q.watches
    )
}

/// The JSON shape of the limits.
pub fn limits_json(l: &ClusterLimits) -> Value {
    json!({
        "max_leases": l.max_leases,
        "max_clients": l.max_clients,
        "default_quota": quota_json(&l.default_quota),
    })
}

fn limits_text(l: &ClusterLimits) -> String {
    format!(
        "max leases {}, max clients {}, default quota: {}",
        l.max_leases,
        l.max_clients,
        quota_text(&l.default_quota)
    )
}

fn permission_str(p: Option<Permission>) -> &'static str {
    p.map_or("unknown", Permission::as_str)
}

/// The JSON shape of `warden role list`.
pub fn roles_json(roles: &[RoleInfo]) -> Value {
    Value::Array(
        roles
            .iter()
            .map(|r| {
                json!({
                    "role": r.name,
                    "grants": r.grants.iter().map(|g| json!({
                        "prefix": g.prefix,
                        "permission": permission_str(g.permission),
                    })).collect::<Vec<_>>(),
                    "quota": r.quota.as_ref().map(quota_json),
                })
            })
            .collect(),
    )
}

fn roles_text(roles: &[RoleInfo]) -> String {
    if roles.is_empty() {
        return "no roles (only root can act)".to_string();
    }
    roles
        .iter()
        .map(|r| {
            let grants: Vec<String> = r
                .grants
                .iter()
                .map(|g| format!("{} on {:?}", permission_str(g.permission), g.prefix))
                .collect();
            let grants = if grants.is_empty() {
                "no grants".to_string()
            } else {
                grants.join(", ")
            };
            match &r.quota {
                Some(q) => format!("{}: {grants}; quota {}", r.name, quota_text(q)),
                None => format!("{}: {grants}", r.name),
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The JSON shape of `warden user list`.
pub fn users_json(users: &[UserInfo]) -> Value {
    Value::Array(
        users
            .iter()
            .map(|u| {
                json!({
                    "user": u.principal,
                    "roles": u.roles,
                    "quota": u.quota.as_ref().map(quota_json),
                    "denied": u.denied,
                    "usage": {
                        "leases": u.usage.leases,
                        "locks": u.usage.locks,
                        "waiters": u.usage.waiters,
                        "clients": u.usage.clients,
                        "values": u.usage.values,
                        "value_bytes": u.usage.value_bytes,
                    },
                })
            })
            .collect(),
    )
}

fn users_text(users: &[UserInfo]) -> String {
    if users.is_empty() {
        return "no principal holds a role".to_string();
    }
    users
        .iter()
        .map(|u| {
            let quota = u.quota.as_ref().map_or("no quota".to_string(), |q| {
                format!("quota {}", quota_text(q))
            });
            format!(
                "{}{}: roles {}; {quota}; holds {} leases, {} locks, {} waiters, {} clients",
                u.principal,
                if u.denied { " (denied)" } else { "" },
                u.roles.join(", "),
                u.usage.leases,
                u.usage.locks,
                u.usage.waiters,
                u.usage.clients
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The JSON shape of one auth audit record: `op` names the change, and
/// only its own fields are present.
pub fn auth_record_json(r: &AuthAuditRecord) -> Value {
    let mut v = json!({
        "index": r.index,
        "principal": r.principal,
        "op": r.change.op(),
        "at_unix_ms": r.at_unix_ms,
    });
    let fields = match &r.change {
        AuthChange::GrantPermission {
            role,
            prefix,
            permission,
        } => json!({"role": role, "prefix": prefix, "permission": permission_str(*permission)}),
        AuthChange::RevokePermission { role, prefix } => json!({"role": role, "prefix": prefix}),
        AuthChange::DeleteRole { role } => json!({"role": role}),
        AuthChange::GrantRole { user, role } | AuthChange::RevokeRole { user, role } => {
            json!({"user": user, "role": role})
        }
        AuthChange::SetRoleQuota { role, quota } => {
            json!({"role": role, "quota": quota.as_ref().map(quota_json)})
        }
        AuthChange::SetLimits(l) => json!({"limits": limits_json(l)}),
        AuthChange::Deny(t) | AuthChange::Undeny(t) => match t {
            DenyTarget::User(u) => json!({"user": u}),
            DenyTarget::Serial(s) => json!({"serial": s}),
        },
        AuthChange::Other(_) => json!({}),
    };
    if let (Some(v), Value::Object(fields)) = (v.as_object_mut(), fields) {
        v.extend(fields);
    }
    v
}

fn auth_record_text(r: &AuthAuditRecord) -> String {
    let what = match &r.change {
        AuthChange::GrantPermission {
            role,
            prefix,
            permission,
        } => format!(
            "granted role {role} {} on {prefix:?}",
            permission_str(*permission)
        ),
        AuthChange::RevokePermission { role, prefix } => {
            format!("revoked role {role}'s grant on {prefix:?}")
        }
        AuthChange::DeleteRole { role } => format!("deleted role {role}"),
        AuthChange::GrantRole { user, role } => format!("gave {user} role {role}"),
        AuthChange::RevokeRole { user, role } => format!("took role {role} from {user}"),
        AuthChange::SetRoleQuota {
            role,
            quota: Some(q),
        } => format!("set role {role}'s quota to {}", quota_text(q)),
        AuthChange::SetRoleQuota { role, quota: None } => format!("cleared role {role}'s quota"),
        AuthChange::SetLimits(l) => format!("set the limits: {}", limits_text(l)),
        AuthChange::Deny(t) => format!("denied {}", deny_target_text(t)),
        AuthChange::Undeny(t) => format!("undenied {}", deny_target_text(t)),
        AuthChange::Other(op) => format!("{op} (unknown to this version)"),
    };
    format!(
        "#{} {} {what} at {} (proposer's wall clock)",
        r.index,
        r.principal.as_deref().unwrap_or("anonymous"),
        humantime::format_rfc3339_millis(UNIX_EPOCH + Duration::from_millis(r.at_unix_ms))
    )
}

fn deny_target_text(t: &DenyTarget) -> String {
    match t {
        DenyTarget::User(u) => format!("principal {u}"),
        DenyTarget::Serial(s) => format!("certificate serial {s}"),
    }
}

/// `warden audit --auth`.
pub async fn auth_audit(client: &ClientArgs) -> Report {
    let admin = match admin(client).await {
        Ok(a) => a,
        Err(report) => return report,
    };
    let trail = match admin.auth_audit_trail().await {
        Ok(t) => t,
        Err(e) => return failed(&e),
    };
    ok(match client.output {
        OutputFormat::Json => {
            Value::Array(trail.records.iter().map(auth_record_json).collect()).to_string()
        }
        OutputFormat::Text if trail.records.is_empty() => "no auth changes".to_string(),
        OutputFormat::Text => trail
            .records
            .iter()
            .map(auth_record_text)
            .collect::<Vec<_>>()
            .join("\n"),
    })
}

/// `warden role ...`.
pub async fn role(args: RoleArgs) -> Report {
    match args.command {
        RoleCommand::Grant(a) => role_grant(a).await,
        RoleCommand::Revoke(a) => role_revoke(a).await,
        RoleCommand::Delete(a) => role_delete(a).await,
        RoleCommand::List(a) => role_list(a).await,
        RoleCommand::Quota(a) => role_quota(a).await,
    }
}

async fn role_grant(a: RoleGrantArgs) -> Report {
    if let Err(r) = check_role(&a.role).and_then(|()| check_prefix(&a.prefix)) {
        return r;
    }
    let admin = match admin(&a.client).await {
        Ok(x) => x,
        Err(r) => return r,
    };
    let permission = Permission::from(a.permission);
    if let Err(e) = admin
        .grant_permission(a.role.clone(), a.prefix.clone(), permission)
        .await
    {
        return failed(&e);
    }
    ok(match a.client.output {
        OutputFormat::Json => json!({
            "role": a.role,
            "prefix": a.prefix,
            "permission": permission.as_str(),
            "granted": true,
        })
        .to_string(),
        OutputFormat::Text => format!(
            "role {} may {permission} on {:?} (recorded in the auth audit trail)",
            a.role, a.prefix
        ),
    })
}

async fn role_revoke(a: RoleRevokeArgs) -> Report {
    if let Err(r) = check_role(&a.role).and_then(|()| check_prefix(&a.prefix)) {
        return r;
    }
    let admin = match admin(&a.client).await {
        Ok(x) => x,
        Err(r) => return r,
    };
    if let Err(e) = admin
        .revoke_permission(a.role.clone(), a.prefix.clone())
        .await
    {
        return failed(&e);
    }
    ok(match a.client.output {
        OutputFormat::Json => {
            json!({"role": a.role, "prefix": a.prefix, "revoked": true}).to_string()
        }
        OutputFormat::Text => format!(
            "role {} has no grant on {:?} any more (held locks live until released or expired)",
            a.role, a.prefix
        ),
    })
}

async fn role_delete(a: RoleNameArgs) -> Report {
    if let Err(r) = check_role(&a.role) {
        return r;
    }
    let admin = match admin(&a.client).await {
        Ok(x) => x,
        Err(r) => return r,
    };
    if let Err(e) = admin.delete_role(a.role.clone()).await {
        return failed(&e);
    }
    ok(match a.client.output {
        OutputFormat::Json => json!({"role": a.role, "deleted": true}).to_string(),
        OutputFormat::Text => format!("deleted role {}", a.role),
    })
}

async fn role_list(a: ListArgs) -> Report {
    let admin = match admin(&a.client).await {
        Ok(x) => x,
        Err(r) => return r,
    };
    match admin.roles().await {
        Ok(roles) => ok(match a.client.output {
            OutputFormat::Json => roles_json(&roles.roles).to_string(),
            OutputFormat::Text => roles_text(&roles.roles),
        }),
        Err(e) => failed(&e),
    }
}

async fn role_quota(a: RoleQuotaArgs) -> Report {
    if let Err(r) = check_role(&a.role) {
        return r;
    }
    let admin = match admin(&a.client).await {
        Ok(x) => x,
        Err(r) => return r,
    };
    let quota = if a.clear {
        None
    } else {
        // Fields not given keep the role's quota, else the default quota.
        let roles = match admin.roles().await {
            Ok(r) => r,
            Err(e) => return failed(&e),
        };
        let base = match roles
            .roles
            .iter()
            .find(|r| r.name == a.role)
            .and_then(|r| r.quota)
        {
            Some(q) => q,
            None => match admin.limits().await {
                Ok(l) => l.limits.default_quota,
                Err(e) => return failed(&e),
            },
        };
        Some(Quota {
            leases: a.leases.unwrap_or(base.leases),
            locks: a.locks.unwrap_or(base.locks),
            waiters: a.waiters.unwrap_or(base.waiters),
            clients: a.clients.unwrap_or(base.clients),
            values: a.values.unwrap_or(base.values),
            value_bytes: a.value_bytes.unwrap_or(base.value_bytes),
            waits_per_resource: a.waits_per_resource.unwrap_or(base.waits_per_resource),
            watches: a.watches.unwrap_or(base.watches),
        })
    };
    if let Some(q) = &quota {
        let core = warden_core::types::Quota {
            leases: q.leases,
            locks: q.locks,
            waiters: q.waiters,
            clients: q.clients,
            values: q.values,
            value_bytes: q.value_bytes,
            waits_per_resource: q.waits_per_resource,
            watches: q.watches,
        };
        if let Err(e) = warden_core::validate::quota(&core) {
            let flag = e
                .field
                .as_deref()
                .and_then(|f| f.strip_prefix("quota."))
                .unwrap_or("quota");
            return output::error(&format!("--{flag}: {}", e.message));
        }
    }
    if let Err(e) = admin.set_role_quota(a.role.clone(), quota).await {
        return failed(&e);
    }
    ok(match a.client.output {
        OutputFormat::Json => {
            json!({"role": a.role, "quota": quota.as_ref().map(quota_json)}).to_string()
        }
        OutputFormat::Text => match &quota {
            Some(q) => format!("role {} quota: {}", a.role, quota_text(q)),
            None => format!("role {} sets no quota", a.role),
        },
    })
}

/// `warden user ...`.
pub async fn user(args: UserArgs) -> Report {
    match args.command {
        UserCommand::GrantRole(a) => user_role(a, true).await,
        UserCommand::RevokeRole(a) => user_role(a, false).await,
        UserCommand::List(a) => user_list(a).await,
        UserCommand::Deny(a) => crate::deny_cmd::user(a, true).await,
        UserCommand::Undeny(a) => crate::deny_cmd::user(a, false).await,
        UserCommand::Denied(a) => crate::deny_cmd::list(a).await,
    }
}

async fn user_role(a: UserRoleArgs, grant: bool) -> Report {
    let principal = warden_core::validate::principal(&a.principal).map(|_| ());
    if let Err(r) = check("PRINCIPAL", principal).and_then(|()| check_role(&a.role)) {
        return r;
    }
    let admin = match admin(&a.client).await {
        Ok(x) => x,
        Err(r) => return r,
    };
    let result = if grant {
        admin.grant_role(a.principal.clone(), a.role.clone()).await
    } else {
        admin.revoke_role(a.principal.clone(), a.role.clone()).await
    };
    if let Err(e) = result {
        return failed(&e);
    }
    let key = if grant { "granted" } else { "revoked" };
    ok(match a.client.output {
        OutputFormat::Json => json!({"user": a.principal, "role": a.role, key: true}).to_string(),
        OutputFormat::Text if grant => format!("{} now holds role {}", a.principal, a.role),
        OutputFormat::Text => format!("{} no longer holds role {}", a.principal, a.role),
    })
}

async fn user_list(a: ListArgs) -> Report {
    let admin = match admin(&a.client).await {
        Ok(x) => x,
        Err(r) => return r,
    };
    match admin.users().await {
        Ok(users) => ok(match a.client.output {
            OutputFormat::Json => users_json(&users.users).to_string(),
            OutputFormat::Text => users_text(&users.users),
        }),
        Err(e) => failed(&e),
    }
}

/// `warden cluster limits`.
pub async fn limits(a: LimitsArgs) -> Report {
    let admin = match admin(&a.client).await {
        Ok(x) => x,
        Err(r) => return r,
    };
    let current = match admin.limits().await {
        Ok(l) => l.limits,
        Err(e) => return failed(&e),
    };
    let limits = if a.changes_anything() {
        let new = a.apply(current);
        let core = warden_core::types::ClusterLimits {
            max_leases: new.max_leases,
            max_clients: new.max_clients,
            default_quota: warden_core::types::Quota {
                leases: new.default_quota.leases,
                locks: new.default_quota.locks,
                waiters: new.default_quota.waiters,
                clients: new.default_quota.clients,
                values: new.default_quota.values,
                value_bytes: new.default_quota.value_bytes,
                waits_per_resource: new.default_quota.waits_per_resource,
                watches: new.default_quota.watches,
            },
        };
        if let Err(e) = warden_core::validate::limits(&core) {
            let field = e.field.as_deref().unwrap_or("limits");
            let flag = match field.strip_prefix("default_quota.") {
                Some(f) => format!("--default-{f}"),
                None => format!("--{}", field.replace('_', "-")),
            };
            return output::error(&format!("{flag}: {}", e.message));
        }
        if let Err(e) = admin.set_limits(new).await {
            return failed(&e);
        }
        new
    } else {
        current
    };
    ok(match a.client.output {
        OutputFormat::Json => limits_json(&limits).to_string(),
        OutputFormat::Text => limits_text(&limits),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::{Cli, ClusterCommand, Command};
    use clap::Parser;
    use warden_client::{QuotaUsage, RoleGrant};

    fn parse(args: &[&str]) -> Result<Cli, clap::Error> {
        Cli::try_parse_from(std::iter::once("warden").chain(args.iter().copied()))
    }

    // CLI contract (docs/operations.md "Identities and permissions"): each
    // role, user and limits command parses with its flags, the permission
    // is one of read|lock|admin, --clear excludes quota fields, and every
    // command takes --output json.
    #[test]
    fn role_user_and_limits_commands_parse() {
        let Command::Role(r) = parse(&[
            "role",
            "grant",
            "payments",
            "--prefix",
            "payments/",
            "--permission",
            "lock",
            "--output",
            "json",
        ])
        .unwrap()
        .command
        else {
            panic!("not role")
        };
        let RoleCommand::Grant(g) = r.command else {
            panic!("not grant")
        };
        assert_eq!(
            (g.role.as_str(), g.prefix.as_str(), g.permission),
            ("payments", "payments/", PermissionArg::Lock)
        );
        assert_eq!(g.client.output, OutputFormat::Json);
        assert!(parse(&[
            "role",
            "grant",
            "r",
            "--prefix",
            "",
            "--permission",
            "admin"
        ])
        .is_ok());
        assert!(parse(&[
            "role",
            "grant",
            "r",
            "--prefix",
            "a/",
            "--permission",
            "write"
        ])
        .is_err());
        assert!(
            parse(&["role", "grant", "r", "--permission", "read"]).is_err(),
            "--prefix required"
        );
        assert!(parse(&["role", "revoke", "r", "--prefix", "a/"]).is_ok());
        assert!(parse(&["role", "delete", "r"]).is_ok());
        assert!(parse(&["role", "list", "--output", "json"]).is_ok());
        assert!(parse(&["role", "quota", "r", "--leases", "10", "--clients", "5"]).is_ok());
        assert!(parse(&["role", "quota", "r", "--clear"]).is_ok());
        assert!(parse(&["role", "quota", "r", "--clear", "--leases", "1"]).is_err());
        assert!(parse(&["role", "quota", "r", "--leases", "-1"]).is_err());
        let Command::User(u) = parse(&["user", "grant-role", "alice", "payments"])
            .unwrap()
            .command
        else {
            panic!("not user")
        };
        let UserCommand::GrantRole(g) = u.command else {
            panic!("not grant-role")
        };
        assert_eq!(
            (g.principal.as_str(), g.role.as_str()),
            ("alice", "payments")
        );
        assert!(parse(&["user", "revoke-role", "alice", "payments"]).is_ok());
        assert!(parse(&["user", "list", "--output", "json"]).is_ok());
        assert!(parse(&["user", "grant-role", "alice"]).is_err());
        let Command::Cluster(c) = parse(&["cluster", "limits", "--max-leases", "500"])
            .unwrap()
            .command
        else {
            panic!("not cluster")
        };
        let ClusterCommand::Limits(l) = c.command else {
            panic!("not limits")
        };
        assert!(l.changes_anything());
        let shown = parse(&["cluster", "limits"]).unwrap().command;
        assert!(
            matches!(shown, Command::Cluster(c) if matches!(&c.command, ClusterCommand::Limits(l) if !l.changes_anything()))
        );
        assert!(parse(&["audit", "--auth", "--output", "json"]).is_ok());
    }

    // `cluster limits`: flags not given keep their current value.
    #[test]
    fn limits_flags_change_only_what_they_name() {
        let Command::Cluster(c) = parse(&[
            "cluster",
            "limits",
            "--max-clients",
            "70000",
            "--default-waiters",
            "7",
        ])
        .unwrap()
        .command
        else {
            panic!("not cluster")
        };
        let ClusterCommand::Limits(l) = c.command else {
            panic!("not limits")
        };
        let new = l.apply(ClusterLimits::default());
        assert_eq!(new.max_leases, 100_000);
        assert_eq!(new.max_clients, 70_000);
        assert_eq!(new.default_quota.waiters, 7);
        assert_eq!(new.default_quota.leases, 10_000);
    }

    // CLI contract (docs/operations.md): the JSON shapes of `role list`,
    // `user list` and `audit --auth`.
    #[test]
    fn auth_json_has_the_contract_shape() {
        let q = Quota {
            leases: 1,
            locks: 2,
            waiters: 3,
            clients: 4,
            values: 5,
            value_bytes: 6,
            waits_per_resource: 7,
            watches: 8,
        };
        let roles = vec![RoleInfo {
            name: "payments".into(),
            grants: vec![RoleGrant {
                prefix: "payments/".into(),
                permission: Some(Permission::Lock),
            }],
            quota: Some(q),
        }];
        assert_eq!(
            roles_json(&roles),
            json!([{"role": "payments",
                    "grants": [{"prefix": "payments/", "permission": "lock"}],
                    "quota": {"leases": 1, "locks": 2, "waiters": 3, "clients": 4,
                              "values": 5, "value_bytes": 6, "waits_per_resource": 7,
                              "watches": 8}}])
        );
        assert_eq!(
            roles_text(&roles),
            "payments: lock on \"payments/\"; quota 1 leases, 2 locks, 3 waiters, 4 clients, 5 values (6 bytes), 7 waits per resource, 8 watches per node"
        );
        let users = vec![UserInfo {
            principal: "carol".into(),
            roles: vec!["payments".into()],
            quota: None,
            usage: QuotaUsage {
                leases: 1,
                locks: 1,
                waiters: 0,
                clients: 2,
                values: 1,
                value_bytes: 4,
            },
            denied: true,
        }];
        assert_eq!(
            users_json(&users),
            json!([{"user": "carol", "roles": ["payments"], "quota": null, "denied": true,
                    "usage": {"leases": 1, "locks": 1, "waiters": 0, "clients": 2,
                              "values": 1, "value_bytes": 4}}])
        );
        let record = AuthAuditRecord {
            index: 9,
            principal: Some("root".into()),
            change: AuthChange::GrantPermission {
                role: "payments".into(),
                prefix: "payments/".into(),
                permission: Some(Permission::Lock),
            },
            at_unix_ms: 0,
        };
        assert_eq!(
            auth_record_json(&record),
            json!({"index": 9, "principal": "root", "op": "grant_permission", "at_unix_ms": 0,
                   "role": "payments", "prefix": "payments/", "permission": "lock"})
        );
        let anonymous = AuthAuditRecord {
            principal: None,
            change: AuthChange::SetLimits(ClusterLimits::default()),
            ..record
        };
        let v = auth_record_json(&anonymous);
        assert_eq!(v["principal"], Value::Null);
        assert_eq!(v["limits"]["max_leases"], 100_000);
    }

    // "What bad input gets": a bad role name, prefix or principal names the
    // argument and the limit before anything is sent.
    #[test]
    fn bad_names_name_the_argument() {
        let e = check_role(".ops").unwrap_err();
        assert!(
            e.stderr.as_deref().unwrap().starts_with("error: ROLE: "),
            "{e:?}"
        );
        assert_eq!(e.exit_code, output::EXIT_ERROR);
        let e = check_prefix("a\u{7}").unwrap_err();
        assert!(
            e.stderr
                .as_deref()
                .unwrap()
                .starts_with("error: --prefix: "),
            "{e:?}"
        );
        assert!(check_prefix("").is_ok() && check_prefix("election:sched").is_ok());
        let e = check(
            "PRINCIPAL",
            warden_core::validate::principal(&"x".repeat(65)).map(|_| ()),
        )
        .unwrap_err();
        assert!(e.stderr.as_deref().unwrap().contains("64"), "{e:?}");
    }
}
