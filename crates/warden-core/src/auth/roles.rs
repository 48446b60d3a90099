//! The replicated auth table: roles (grants and quotas), the roles each
//! principal holds, the cluster-wide limits and the deny list. Saved in
//! snapshots; see the [module docs](super) for the rules.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use super::{grant_serves, Target, ROOT};
use crate::limits::{MAX_DENIED, MAX_GRANTS_PER_ROLE, MAX_ROLES, MAX_ROLES_PER_USER, MAX_USERS};
use crate::types::{
    AuthOp, ClusterLimits, CommandError, DenyTarget, ErrorCode, Permission, Principal, Quota,
};
use crate::validate::{self, error};

/// One role: its grants by prefix and its optional quota.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, Default)]
pub struct Role {
    /// Permission by grant prefix (at most
    /// [`MAX_GRANTS_PER_ROLE`]).
    pub grants: BTreeMap<String, Permission>,
    /// The role's quota, if it sets one.
    pub quota: Option<Quota>,
}

/// A role as [`AuthTable::roles`] reports it (`role list`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RoleView<'a> {
    /// The role's name.
    pub name: &'a str,
    /// Its grants, by prefix.
    pub grants: &'a BTreeMap<String, Permission>,
    /// Its quota, if it sets one.
    pub quota: Option<Quota>,
}

/// The auth table (replicated; in every snapshot).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, Default)]
pub struct AuthTable {
    roles: BTreeMap<String, Role>,
    users: BTreeMap<Principal, BTreeSet<String>>,
    limits: ClusterLimits,
    /// Denied principals (with `denied_serials`, at most [`MAX_DENIED`]).
    denied_principals: BTreeSet<Principal>,
    /// Denied certificate serials.
    denied_serials: BTreeSet<String>,
}

fn not_found(field: &str, message: String) -> CommandError {
    error(ErrorCode::NotFound, Some(field), message)
}

fn exhausted(field: &str, message: String) -> CommandError {
    error(ErrorCode::ResourceExhausted, Some(field), message)
}

impl AuthTable {
    /// True when `principal` has `permission` on `target` (module docs,
    /// "Matching a prefix"). `None` (anonymous, insecure mode) and
    /// [`ROOT`] are always allowed.
    pub fn allows(
        &self,
        principal: Option<&str>,
        permission: Permission,
        target: Target<'_>,
    ) -> bool {
        let Some(name) = principal else {
            return true;
        };
        if name == ROOT {
            return true;
        }
        if self.is_denied(name) {
            return false;
        }
        let Some(roles) = self.users.get(name) else {
            return false;
        };
        roles
            .iter()
            .filter_map(|r| self.roles.get(r))
            .flat_map(|r| r.grants.iter())
            .any(|(prefix, p)| p.includes(permission) && grant_serves(prefix, target))
    }

    /// [`Self::allows`] as a typed refusal: PermissionDenied naming the
    /// principal, the permission and the target (`principal alice has no lock
    /// permission on "orders/1"`), field `field`.
    ///
    /// # Errors
    /// PermissionDenied when not allowed.
    pub fn check(
        &self,
        principal: Option<&Principal>,
        permission: Permission,
        target: Target<'_>,
        field: Option<&str>,
    ) -> Result<(), CommandError> {
        if self.allows(principal.map(Principal::as_str), permission, target) {
            return Ok(());
        }
        let who = principal.map_or("anonymous", Principal::as_str);
        Err(error(
            ErrorCode::PermissionDenied,
            field,
            format!("principal {who} has no {permission} permission on {target}"),
        ))
    }

    /// The quota that binds `principal`: per field, the largest quota among
    /// its roles that set one, else the default quota. None for anonymous
    /// callers and [`ROOT`] (bound only by the cluster-wide limits).
    pub fn effective_quota(&self, principal: Option<&str>) -> Option<Quota> {
        let name = principal?;
        if name == ROOT {
            return None;
        }
        let quotas = self
            .users
            .get(name)
            .into_iter()
            .flatten()
            .filter_map(|r| self.roles.get(r).and_then(|r| r.quota));
        let best = quotas.reduce(|a, b| Quota {
            leases: a.leases.max(b.leases),
            locks: a.locks.max(b.locks),
            waiters: a.waiters.max(b.waiters),
            clients: a.clients.max(b.clients),
            values: a.values.max(b.values),
            value_bytes: a.value_bytes.max(b.value_bytes),
            waits_per_resource: a.waits_per_resource.max(b.waits_per_resource),
            watches: a.watches.max(b.watches),
        });
        Some(best.unwrap_or(self.limits.default_quota))
    }

    /// True when `principal` is on the deny list.
    pub fn is_denied(&self, principal: &str) -> bool {
        self.denied_principals.contains(principal)
    }

    /// The denied principals, by name.
    pub fn denied_principals(&self) -> impl Iterator<Item = &Principal> + '_ {
        self.denied_principals.iter()
    }

    /// The denied certificate serials, in order.
    pub fn denied_serials(&self) -> impl Iterator<Item = &str> + '_ {
        self.denied_serials.iter().map(String::as_str)
    }

    fn denied_len(&self) -> usize {
        self.denied_principals.len() + self.denied_serials.len()
    }

    /// The principals whose permissions `op` may take away: who holds the
    /// role it changes (a grant may replace `lock` with `read`), or the
    /// user it names. Read before `op` applies.
    pub(crate) fn narrowed_by(&self, op: &AuthOp) -> Vec<Principal> {
        match op {
            AuthOp::GrantPermission { role, .. }
            | AuthOp::RevokePermission { role, .. }
            | AuthOp::DeleteRole { role } => self
                .users
                .iter()
                .filter(|(_, roles)| roles.contains(role))
                .map(|(p, _)| p.clone())
                .collect(),
            AuthOp::RevokeRole { user, .. } | AuthOp::Deny(DenyTarget::Principal(user)) => {
                vec![user.clone()]
            }
            _ => Vec::new(),
        }
    }

    /// The cluster-wide limits and the default quota.
    pub fn limits(&self) -> &ClusterLimits {
        &self.limits
    }

    /// Every role, by name (`role list`).
    pub fn roles(&self) -> impl Iterator<Item = RoleView<'_>> + '_ {
        self.roles.iter().map(|(name, r)| RoleView {
            name,
            grants: &r.grants,
            quota: r.quota,
        })
    }

    /// One role, if it exists.
    pub fn role(&self, name: &str) -> Option<RoleView<'_>> {
        self.roles.get_key_value(name).map(|(name, r)| RoleView {
            name,
            grants: &r.grants,
            quota: r.quota,
        })
    }

    /// Every principal that holds a role, with its roles, by name (`user list`).
    pub fn users(&self) -> impl Iterator<Item = (&str, &BTreeSet<String>)> + '_ {
        self.users.iter().map(|(p, r)| (p.as_str(), r))
    }

    /// The roles `principal` holds (empty if none).
    pub fn user_roles(&self, principal: &str) -> impl Iterator<Item = &str> + '_ {
        self.users
            .get(principal)
            .into_iter()
            .flatten()
            .map(String::as_str)
    }

    /// Applies one auth change. Every check comes before any change: a refusal
    /// changes nothing.
    ///
    /// # Errors
    /// NotFound (unknown role, grant or role of a user) or ResourceExhausted
    /// ([`MAX_ROLES`], [`MAX_GRANTS_PER_ROLE`], [`MAX_USERS`],
    /// [`MAX_ROLES_PER_USER`]), naming the field and the limit.
    pub(crate) fn apply(&mut self, op: &AuthOp) -> Result<(), CommandError> {
        match op {
            AuthOp::GrantPermission {
                role,
                prefix,
                permission,
            } => {
                let r = self.role_entry(role)?;
                if !r.grants.contains_key(prefix) && r.grants.len() >= MAX_GRANTS_PER_ROLE {
                    return Err(exhausted(
                        "prefix",
                        format!(
                            "role {role} holds at most {MAX_GRANTS_PER_ROLE} grants (MAX_GRANTS_PER_ROLE)"
                        ),
                    ));
                }
                r.grants.insert(prefix.clone(), *permission);
            }
            AuthOp::RevokePermission { role, prefix } => {
                let r = self.existing(role)?;
                if r.grants.remove(prefix).is_none() {
                    return Err(not_found(
                        "prefix",
                        format!("role {role} has no grant on {prefix:?}"),
                    ));
                }
            }
            AuthOp::DeleteRole { role } => {
                self.existing(role)?;
                self.roles.remove(role);
                self.users.retain(|_, roles| {
                    roles.remove(role);
                    !roles.is_empty()
                });
            }
            AuthOp::GrantRole { user, role } => {
                self.existing(role)?;
                match self.users.get(user) {
                    Some(roles) if roles.contains(role) => {}
                    Some(roles) if roles.len() >= MAX_ROLES_PER_USER => {
                        return Err(exhausted(
                            "role",
                            format!(
                                "principal {user} holds at most {MAX_ROLES_PER_USER} roles (MAX_ROLES_PER_USER)"
                            ),
                        ))
                    }
                    None if self.users.len() >= MAX_USERS => {
                        return Err(exhausted(
                            "user",
                            format!(
                                "at most {MAX_USERS} principals hold roles (MAX_USERS)"
                            ),
                        ))
                    }
                    _ => {
                        self.users
                            .entry(user.clone())
                            .or_default()
                            .insert(role.clone());
                    }
                }
            }
            AuthOp::RevokeRole { user, role } => {
                let held = self.users.get_mut(user).filter(|r| r.contains(role));
                let Some(roles) = held else {
                    return Err(not_found(
                        "role",
                        format!("principal {user} does not hold role {role}"),
                    ));
                };
                roles.remove(role);
                if roles.is_empty() {
                    self.users.remove(user);
                }
            }
            AuthOp::SetRoleQuota { role, quota } => match quota {
                Some(q) => self.role_entry(role)?.quota = Some(*q),
                None => self.existing(role)?.quota = None,
            },
            AuthOp::SetLimits(l) => self.limits = *l,
            AuthOp::Deny(t) => {
                let present = match t {
                    DenyTarget::Principal(p) => self.denied_principals.contains(p),
                    DenyTarget::Serial(s) => self.denied_serials.contains(s),
                };
                if !present && self.denied_len() >= MAX_DENIED {
                    return Err(exhausted(
                        deny_field(t),
                        format!("the deny list holds at most {MAX_DENIED} entries (MAX_DENIED)"),
                    ));
                }
                match t {
                    DenyTarget::Principal(p) => self.denied_principals.insert(p.clone()),
                    DenyTarget::Serial(s) => self.denied_serials.insert(s.clone()),
                };
            }
            AuthOp::Undeny(t) => {
                let removed = match t {
                    DenyTarget::Principal(p) => self.denied_principals.remove(p),
                    DenyTarget::Serial(s) => self.denied_serials.remove(s),
                };
                if !removed {
                    return Err(not_found(deny_field(t), format!("{t} is not denied")));
                }
            }
        }
        Ok(())
    }

    /// The role, created if missing (refused past [`MAX_ROLES`]).
    fn role_entry(&mut self, role: &str) -> Result<&mut Role, CommandError> {
        if !self.roles.contains_key(role) && self.roles.len() >= MAX_ROLES {
            return Err(exhausted(
                "role",
                format!("the auth table holds at most {MAX_ROLES} roles (MAX_ROLES)"),
            ));
        }
        Ok(self.roles.entry(role.to_owned()).or_default())
    }

    fn existing(&mut self, role: &str) -> Result<&mut Role, CommandError> {
        self.roles
            .get_mut(role)
            .ok_or_else(|| not_found("role", format!("role {role} not found")))
    }

    /// Checks a decoded table: names, prefixes, quotas and limits valid, every
    /// bound respected, every held role defined, no principal with no role.
    ///
    /// # Errors
    /// A description of the first inconsistency found.
    pub fn check_invariants(&self) -> Result<(), String> {
        let msg = |e: CommandError| e.message;
        if self.roles.len() > MAX_ROLES || self.users.len() > MAX_USERS {
            return Err("auth table: too many roles or users".into());
        }
        validate::limits(&self.limits).map_err(msg)?;
        for (name, r) in &self.roles {
            validate::role(name).map_err(msg)?;
            if r.grants.len() > MAX_GRANTS_PER_ROLE {
                return Err(format!("role {name}: too many grants"));
            }
            for prefix in r.grants.keys() {
                validate::prefix(prefix).map_err(msg)?;
            }
            if let Some(q) = &r.quota {
                validate::quota(q).map_err(msg)?;
            }
        }
        if self.denied_len() > MAX_DENIED {
            return Err(format!("deny list: {} entries", self.denied_len()));
        }
        let principals = self
            .denied_principals
            .iter()
            .cloned()
            .map(DenyTarget::Principal);
        let serials = self.denied_serials.iter().cloned().map(DenyTarget::Serial);
        for t in principals.chain(serials) {
            validate::deny_target(&t).map_err(msg)?;
        }
        for (user, roles) in &self.users {
            validate::principal(user.as_str()).map_err(msg)?;
            if roles.is_empty() || roles.len() > MAX_ROLES_PER_USER {
                return Err(format!("principal {user}: {} roles", roles.len()));
            }
            if let Some(r) = roles.iter().find(|r| !self.roles.contains_key(*r)) {
                return Err(format!("principal {user} holds undefined role {r}"));
            }
        }
        Ok(())
    }
}

/// The field a deny-list entry is named by in errors.
fn deny_field(t: &DenyTarget) -> &'static str {
    match t {
        DenyTarget::Principal(_) => "user",
        DenyTarget::Serial(_) => "serial",
    }
}

impl std::fmt::Display for DenyTarget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DenyTarget::Principal(p) => write!(f, "principal {p}"),
            DenyTarget::Serial(s) => write!(f, "serial {s}"),
        }
    }
}
