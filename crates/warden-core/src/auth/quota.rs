//! Per-principal usage and the quota check (see the [module docs](super),
//! "Quotas and limits").
//!
//! Usage is derived state: the lock table keeps it up to date at every change
//! (lease created or ended, lock granted or freed, wait queued or removed,
//! outcome record created or dropped), never serializes it, rebuilds it when a
//! snapshot loads, and [`crate::LockTable::check_invariants`] recomputes it
//! from scratch and compares.

use crate::types::{CommandError, ErrorCode, Quota};
use crate::validate::error;

/// What a principal holds, counted against its [`Quota`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Usage {
    /// Live leases it owns.
    pub leases: u64,
    /// Held grants plus queued waits on its leases.
    pub locks: u64,
    /// Queued waits on its leases.
    pub waiters: u64,
    /// Outcome records keyed by it (S7).
    pub clients: u64,
    /// Published values of its leases ([`crate::values`]).
    pub values: u64,
    /// Their bytes.
    pub value_bytes: u64,
}

impl Usage {
    pub(crate) fn is_zero(&self) -> bool {
        *self == Usage::default()
    }
}

/// One field of a [`Quota`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QuotaField {
    /// [`Quota::leases`].
    Leases,
    /// [`Quota::locks`].
    Locks,
    /// [`Quota::waiters`].
    Waiters,
    /// [`Quota::clients`].
    Clients,
    /// [`Quota::values`].
    Values,
    /// [`Quota::value_bytes`].
    ValueBytes,
}

impl QuotaField {
    /// `leases`, `locks`, `waiters`, `clients`, `values` or `value_bytes`.
    pub fn name(self) -> &'static str {
        match self {
            QuotaField::Leases => "leases",
            QuotaField::Locks => "locks",
            QuotaField::Waiters => "waiters",
            QuotaField::Clients => "clients",
            QuotaField::Values => "values",
            QuotaField::ValueBytes => "value_bytes",
        }
    }

    fn of(self, q: &Quota) -> u64 {
        match self {
            QuotaField::Leases => q.leases,
            QuotaField::Locks => q.locks,
            QuotaField::Waiters => q.waiters,
            QuotaField::Clients => q.clients,
            QuotaField::Values => q.values,
            QuotaField::ValueBytes => q.value_bytes,
        }
    }

    fn used(self, u: &Usage) -> u64 {
        match self {
            QuotaField::Leases => u.leases,
            QuotaField::Locks => u.locks,
            QuotaField::Waiters => u.waiters,
            QuotaField::Clients => u.clients,
            QuotaField::Values => u.values,
            QuotaField::ValueBytes => u.value_bytes,
        }
    }
}

/// Refuses when one more of `field` would take `principal` (holding `usage`)
/// over `quota`: ResourceExhausted, field `quota.FIELD`, message `quota
/// leases of principal mallory reached: 1000 (raise it per role)`.
///
/// # Errors
/// ResourceExhausted as above.
pub(crate) fn check_one_more(
    principal: &str,
    quota: &Quota,
    usage: &Usage,
    field: QuotaField,
) -> Result<(), CommandError> {
    check_more(principal, quota, usage, field, 1)
}

/// [`check_one_more`] for `n` more at once (a multi-lock takes one lock,
/// and while it waits one waiter, per resource).
///
/// # Errors
/// ResourceExhausted as for [`check_one_more`].
pub(crate) fn check_more(
    principal: &str,
    quota: &Quota,
    usage: &Usage,
    field: QuotaField,
    n: u64,
) -> Result<(), CommandError> {
    let limit = field.of(quota);
    if field.used(usage).saturating_add(n) <= limit {
        return Ok(());
    }
    let name = field.name();
    Err(error(
        ErrorCode::ResourceExhausted,
        Some(&format!("quota.{name}")),
        format!("quota {name} of principal {principal} reached: {limit} (raise it per role)"),
    ))
}
