//! Reads of the auth table (`role list`, `user list`, `cluster limits`,
//! `auth audit`, the deny list), each linearizable and each needing
//! `admin` on `""`.

use warden_core::types::{AuthAuditRecord, ClusterLimits, LogIndex, Permission, Quota};
use warden_core::Usage;

use super::admin;
use crate::node::{Node, Principal, ReadError};

/// One role, as `role list` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RoleInfo {
    /// Its name.
    pub name: String,
    /// Its grants: (prefix, permission), by prefix.
    pub grants: Vec<(String, Permission)>,
    /// Its quota, if it sets one.
    pub quota: Option<Quota>,
}

/// One principal with roles, as `user list` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserInfo {
    /// The principal.
    pub principal: String,
    /// Its roles, by name.
    pub roles: Vec<String>,
    /// The quota that binds it (the largest of its roles', else the default;
    /// None for `root`, bound only by the cluster-wide limits).
    pub quota: Option<Quota>,
    /// What it holds now.
    pub usage: Usage,
    /// On the replicated deny list.
    pub denied: bool,
}

/// The deny list, as `user deny --list` shows it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DenyListInfo {
    /// Denied principals in the replicated list, by name.
    pub users: Vec<String>,
    /// Denied certificate serials in the replicated list, in order.
    pub serials: Vec<String>,
    /// This node's deny file: principals.
    pub file_users: Vec<String>,
    /// This node's deny file: serials.
    pub file_serials: Vec<String>,
}

impl Node {
    /// `auth audit`: the auth changes the table keeps (the last 1,000),
    /// oldest first, linearizable; with the read index. Needs `admin` on
    /// `""`.
    pub async fn auth_audit_trail(
        &self,
        principal: &Principal,
    ) -> Result<(LogIndex, Vec<AuthAuditRecord>), ReadError> {
        let read_index = self.linearizable_read().await?;
        let m = self.machine()?;
        admin(&m, principal)?;
        Ok((read_index, m.table.auth_audit_trail().cloned().collect()))
    }

    /// `role list`: every role with its grants and quota, by name,
    /// linearizable. Needs `admin` on `""`.
    pub async fn roles(
        &self,
        principal: &Principal,
    ) -> Result<(LogIndex, Vec<RoleInfo>), ReadError> {
        let read_index = self.linearizable_read().await?;
        let m = self.machine()?;
        admin(&m, principal)?;
        let roles = m
            .table
            .roles()
            .map(|r| RoleInfo {
                name: r.name.to_owned(),
                grants: r
                    .grants
                    .iter()
                    .map(|(p, perm)| (p.clone(), *perm))
                    .collect(),
                quota: r.quota,
            })
            .collect();
        Ok((read_index, roles))
    }

    /// `user list`: every principal that holds a role or owns anything in
    /// the table, with its roles, the quota that binds it and its usage, by
    /// name, linearizable. Needs `admin` on `""`.
    pub async fn users(
        &self,
        principal: &Principal,
    ) -> Result<(LogIndex, Vec<UserInfo>), ReadError> {
        let read_index = self.linearizable_read().await?;
        let m = self.machine()?;
        admin(&m, principal)?;
        let users = m
            .table
            .users()
            .into_iter()
            .map(|(name, roles)| UserInfo {
                principal: name.to_owned(),
                roles,
                quota: m.table.effective_quota(Some(name)),
                usage: m.table.usage(name),
                denied: m.table.auth().is_denied(name),
            })
            .collect();
        Ok((read_index, users))
    }

    /// `cluster limits`: the cluster-wide limits and the default quota,
    /// linearizable. Needs `admin` on `""`.
    pub async fn limits(
        &self,
        principal: &Principal,
    ) -> Result<(LogIndex, ClusterLimits), ReadError> {
        let read_index = self.linearizable_read().await?;
        let m = self.machine()?;
        admin(&m, principal)?;
        Ok((read_index, *m.table.limits()))
    }

    /// `user deny --list`: the replicated deny list, linearizable, and this
    /// node's deny file. Needs `admin` on `""`.
    pub async fn denied(
        &self,
        principal: &Principal,
    ) -> Result<(LogIndex, DenyListInfo), ReadError> {
        let read_index = self.linearizable_read().await?;
        let m = self.machine()?;
        admin(&m, principal)?;
        let auth = m.table.auth();
        let file = self.deny_file();
        Ok((
            read_index,
            DenyListInfo {
                users: auth
                    .denied_principals()
                    .map(|p| p.as_str().to_owned())
                    .collect(),
                serials: auth.denied_serials().map(str::to_owned).collect(),
                file_users: file.principals.into_iter().collect(),
                file_serials: file.serials.into_iter().collect(),
            },
        ))
    }
}
