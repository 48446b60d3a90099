//! The auth table's replicated types: per-principal quotas, cluster-wide
//! limits, a command made for a principal, auth changes (deny list
//! included) and the auth audit record (see
//! [`crate::auth`]). Replicated like the rest of [`crate::types`]: field and
//! variant order are part of the on-disk format.

use serde::{Deserialize, Serialize};

use super::{Command, LogIndex, Permission, Principal, RequestHeader};

/// A per-principal quota (see [`crate::auth`]): the most a principal may
/// hold at once. Each field is at most its ceiling in [`crate::limits`].
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Quota {
    /// Live leases the principal owns ([`crate::limits::QUOTA_LEASES_CEILING`]).
    pub leases: u64,
    /// Held grants plus queued waits on its leases
    /// ([`crate::limits::QUOTA_LOCKS_CEILING`]).
    pub locks: u64,
    /// Queued waits on its leases ([`crate::limits::QUOTA_WAITERS_CEILING`]).
    pub waiters: u64,
    /// Outcome records (client ids) it keeps (S7;
    /// [`crate::limits::QUOTA_CLIENTS_CEILING`]).
    pub clients: u64,
    /// Published values (`Proclaim`, elections) of its leases
    /// ([`crate::limits::QUOTA_VALUES_CEILING`]).
    pub values: u64,
    /// Bytes of those values ([`crate::limits::QUOTA_VALUE_BYTES_CEILING`]).
    pub value_bytes: u64,
    /// Queued waits of its leases on any one resource
    /// ([`crate::limits::QUOTA_WAITS_PER_RESOURCE_CEILING`]), so that no
    /// principal fills a queue that others share.
    pub waits_per_resource: u64,
    /// Watch streams open at once on each node
    /// ([`crate::limits::QUOTA_WATCHES_CEILING`]); counted by each node
    /// for its own streams, not in the table.
    pub watches: u64,
}

impl Default for Quota {
    /// The documented defaults: 10,000 leases, 100,000 locks, 10,000 waiters,
    /// 4,096 clients, 1,000 values of at most 1 MiB in all, 1,000 waits on
    /// one resource: each below the table-wide cap it counts against.
    fn default() -> Self {
        use crate::limits::{
            DEFAULT_QUOTA_CLIENTS, DEFAULT_QUOTA_LEASES, DEFAULT_QUOTA_LOCKS, DEFAULT_QUOTA_VALUES,
            DEFAULT_QUOTA_VALUE_BYTES, DEFAULT_QUOTA_WAITERS, DEFAULT_QUOTA_WAITS_PER_RESOURCE,
            DEFAULT_QUOTA_WATCHES,
        };
        Quota {
            leases: DEFAULT_QUOTA_LEASES,
            locks: DEFAULT_QUOTA_LOCKS,
            waiters: DEFAULT_QUOTA_WAITERS,
            clients: DEFAULT_QUOTA_CLIENTS,
            values: DEFAULT_QUOTA_VALUES,
            value_bytes: DEFAULT_QUOTA_VALUE_BYTES,
            waits_per_resource: DEFAULT_QUOTA_WAITS_PER_RESOURCE,
            watches: DEFAULT_QUOTA_WATCHES,
        }
    }
}

/// Replicated cluster-wide limits and the default per-principal quota.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClusterLimits {
    /// Live leases in the cluster, 1..=[`crate::limits::MAX_LEASES_CEILING`]
    /// (default [`crate::limits::DEFAULT_MAX_LEASES`]). Binds every command,
    /// wrapped or not.
    pub max_leases: u64,
    /// Outcome records in the cluster beyond which a wrapped command from a
    /// new client id is refused, 1..=[`crate::limits::MAX_CLIENTS_CEILING`]
    /// (default [`crate::limits::DEFAULT_MAX_CLIENTS`]).
    pub max_clients: u64,
    /// The quota of a principal none of whose roles sets one.
    pub default_quota: Quota,
}

impl Default for ClusterLimits {
    fn default() -> Self {
        ClusterLimits {
            max_leases: crate::limits::DEFAULT_MAX_LEASES,
            max_clients: crate::limits::DEFAULT_MAX_CLIENTS,
            default_quota: Quota::default(),
        }
    }
}

/// A client command on behalf of `principal` ([`Command::Authorized`]).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct Authorized {
    /// The caller's principal (its client certificate's name); None = an
    /// anonymous caller of a node in insecure mode (passes every permission
    /// check, owns only ownerless leases).
    pub principal: Option<Principal>,
    /// One of `Acquire`, `Release`, `Revoke`, `LeaseGrant`, `Proclaim`,
    /// `ForceRelease`, `AuthChange`; anything else is refused
    /// (InvalidArgument, field `command`).
    pub command: Box<Command>,
}

/// A change of the auth table ([`Command::AuthChange`], inside
/// [`Command::Authorized`]). Needs admin on `""`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct AuthChange {
    /// Exactly-once header (S7).
    pub header: RequestHeader,
    /// The change.
    pub op: AuthOp,
    /// Wall-clock time (ms since the Unix epoch) on the proposing server.
    /// DISPLAY ONLY (like [`ForceRelease::at_unix_ms`]): never used in logic,
    /// ignored by the S7 fingerprint.
    pub at_unix_ms: u64,
}

/// One auth change. Role names follow the principal syntax; prefixes follow
/// the resource rules (`""` allowed; `election:NAME` names elections), see
/// [`crate::auth`].
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub enum AuthOp {
    /// Sets `role`'s permission on `prefix` (replacing a previous one on the
    /// same prefix); creates the role if needed.
    GrantPermission {
        /// The role.
        role: String,
        /// The prefix.
        prefix: String,
        /// The permission.
        permission: Permission,
    },
    /// Removes `role`'s grant on `prefix` (NotFound if it has none).
    RevokePermission {
        /// The role.
        role: String,
        /// The prefix.
        prefix: String,
    },
    /// Deletes `role` and takes it from every principal that held it.
    DeleteRole {
        /// The role.
        role: String,
    },
    /// Gives `role` (which must exist) to `user`.
    GrantRole {
        /// The principal.
        user: Principal,
        /// The role.
        role: String,
    },
    /// Takes `role` from `user` (NotFound if it does not hold it).
    RevokeRole {
        /// The principal.
        user: Principal,
        /// The role.
        role: String,
    },
    /// Sets (Some; creates the role if needed) or clears (None) `role`'s quota.
    SetRoleQuota {
        /// The role.
        role: String,
        /// The quota.
        quota: Option<Quota>,
    },
    /// Sets the cluster-wide limits and the default per-principal quota.
    SetLimits(ClusterLimits),
    /// Puts a principal or a certificate serial on the deny list: its
    /// handshakes fail, its open connections are closed, a denied
    /// principal's commands are refused and its waits end (see
    /// [`crate::auth`], "The deny list"). Already denied: no change.
    Deny(DenyTarget),
    /// Takes a principal or serial off the deny list (NotFound if absent).
    Undeny(DenyTarget),
}

/// What the deny list holds (docs/security.md "A key was stolen").
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum DenyTarget {
    /// Every certificate of this principal (not `root`: deny the serial of
    /// root's stolen certificate instead).
    Principal(Principal),
    /// One certificate, by serial number: lowercase hex without separators
    /// or leading zeros, 1..=40 digits (RFC 5280 section 4.1.2.2: at most 20
    /// bytes), as `warden cert list` prints it.
    Serial(String),
}

/// One applied auth change, as the replicated auth audit trail keeps it.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct AuthAuditRecord {
    /// Index of the entry that applied it.
    pub index: LogIndex,
    /// Who made it (None: an anonymous caller of an insecure cluster).
    pub principal: Option<Principal>,
    /// The change.
    pub op: AuthOp,
    /// The proposer's wall clock, display only ([`AuthChange::at_unix_ms`]).
    pub at_unix_ms: u64,
}
