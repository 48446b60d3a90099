//! Published values (`Proclaim`: an election's candidate or leader value,
//! docs/semantics.md "Elections"): one per (lease, resource), at most
//! [`crate::limits::MAX_VALUE_BYTES`] each and [`crate::limits::MAX_VALUES`]
//! in the table.
//!
//! A value counts against its lease owner's quota ([`crate::auth`]): the
//! number of values and their bytes, kept in the owner's
//! [`crate::auth::Usage`] at every insert, replace and removal, so no
//! principal's quota reaches the table-wide cap and starves everyone else's
//! elections. A value goes when its lease ends (`LockTable::drop_values`)
//! or when the lease's grant of the resource ends
//! (`LockTable::forget_value`).

use std::collections::BTreeMap;

use crate::auth::quota::{check_more, QuotaField};
use crate::auth::Usage;
use crate::effect::Effect;
use crate::table::{exhausted, unknown_lease, Caller, LockTable};
use crate::types::{CommandError, ErrorCode, LeaseId, LogIndex, Principal, Proclaim, Response};
use crate::validate::error;

/// Adds (`sign` true) or takes away one value of `bytes` bytes from the
/// usage of `owner` (nothing for an ownerless lease); drops an entry that
/// reaches zero.
fn value_usage(
    usage: &mut BTreeMap<Principal, Usage>,
    owner: Option<&Principal>,
    bytes: u64,
    add: bool,
) {
    let Some(owner) = owner else { return };
    if add {
        let u = usage.entry(owner.clone()).or_default();
        u.values += 1;
        u.value_bytes += bytes;
        return;
    }
    let Some(u) = usage.get_mut(owner.as_str()) else {
        debug_assert!(false, "usage of {owner} missing");
        return;
    };
    debug_assert!(u.values >= 1 && u.value_bytes >= bytes);
    u.values = u.values.saturating_sub(1);
    u.value_bytes = u.value_bytes.saturating_sub(bytes);
    if u.is_zero() {
        usage.remove(owner.as_str());
    }
}

impl LockTable {
    /// The owner of a live lease in the table (None: ownerless or absent).
    fn owner_of(&self, lease_id: LeaseId) -> Option<Principal> {
        self.leases.get(&lease_id).and_then(|l| l.owner.clone())
    }

    /// Forgets the value `lease_id` published on `resource`, if any (its
    /// grant there ended).
    pub(crate) fn forget_value(&mut self, lease_id: LeaseId, resource: &str) {
        if let Some(v) = self.values.remove(&(lease_id, resource.to_owned())) {
            let owner = self.owner_of(lease_id);
            value_usage(&mut self.usage, owner.as_ref(), v.len() as u64, false);
        }
    }

    /// Forgets every value `lease_id` (owned by `owner`) published: the
    /// lease has ended.
    pub(crate) fn drop_values(&mut self, lease_id: LeaseId, owner: Option<&Principal>) {
        let keys: Vec<(LeaseId, String)> = self
            .values
            .range((lease_id, String::new())..)
            .take_while(|((l, _), _)| *l == lease_id)
            .map(|(k, _)| k.clone())
            .collect();
        for k in keys {
            if let Some(v) = self.values.remove(&k) {
                value_usage(&mut self.usage, owner, v.len() as u64, false);
            }
        }
    }

    /// Adds every published value to `usage` (for snapshot load and
    /// `check_invariants`).
    pub(crate) fn add_value_usage(&self, usage: &mut BTreeMap<Principal, Usage>) {
        for ((lease_id, _), v) in &self.values {
            let owner = self.leases.get(lease_id).and_then(|l| l.owner.as_ref());
            value_usage(usage, owner, v.len() as u64, true);
        }
    }

    /// Publishes a value (elections). A candidate's value (no token) needs a
    /// live lease; a holder's needs the exact grant (a deposed leader's
    /// proclaim is refused). A new or longer value needs room in the lease
    /// owner's quota (`quota.values`, `quota.value_bytes`) and in the table
    /// ([`crate::limits::MAX_VALUES`], field `value`).
    pub(crate) fn proclaim(
        &mut self,
        index: LogIndex,
        caller: Caller<'_>,
        p: &Proclaim,
        fx: &mut Vec<Effect>,
    ) -> Result<Response, CommandError> {
        self.end_if_dead(index, p.lease_id, fx);
        if p.fencing_token.is_some() {
            self.refresh(index, &p.resource, fx);
        }
        if !self.leases.contains_key(&p.lease_id) {
            return Err(unknown_lease(p.lease_id));
        }
        if let Some(token) = p.fencing_token {
            let grant = self
                .resources
                .get(&p.resource)
                .and_then(|s| s.grant_of(p.lease_id));
            if grant.is_none_or(|g| g.fencing_token != token) {
                return Err(error(
                    ErrorCode::FailedPrecondition,
                    Some("fencing_token"),
                    format!(
                        "lease {} does not hold {:?} with fencing token {token}",
                        p.lease_id, p.resource
                    ),
                ));
            }
        }
        let key = (p.lease_id, p.resource.clone());
        let old_bytes = self.values.get(&key).map(|v| v.len() as u64);
        let new_bytes = p.value.len() as u64;
        // The owner's quota: one more value unless it replaces one, and the
        // bytes it adds.
        let more_values = u64::from(old_bytes.is_none());
        let more_bytes = new_bytes.saturating_sub(old_bytes.unwrap_or(0));
        self.check_quota_with(index, caller, fx, |who, q, usage| {
            check_more(who, q, usage, QuotaField::Values, more_values)?;
            check_more(who, q, usage, QuotaField::ValueBytes, more_bytes)
        })?;
        if old_bytes.is_none() && self.values.len() >= crate::limits::MAX_VALUES {
            // Values of ended leases do not count.
            self.end_dead_leases(index, None, u64::MAX, fx);
        }
        if old_bytes.is_none() && self.values.len() >= crate::limits::MAX_VALUES {
            return Err(exhausted(
                Some("value"),
                format!(
                    "the table keeps at most {} published values",
                    crate::limits::MAX_VALUES
                ),
            ));
        }
        let owner = self.owner_of(p.lease_id);
        if let Some(old) = self.values.insert(key, p.value.clone()) {
            value_usage(&mut self.usage, owner.as_ref(), old.len() as u64, false);
        }
        value_usage(&mut self.usage, owner.as_ref(), new_bytes, true);
        fx.push(Effect::Proclaimed {
            resource: p.resource.clone(),
            lease_id: p.lease_id,
            fencing_token: p.fencing_token.unwrap_or(0),
        });
        Ok(Response::Proclaimed {
            resource: p.resource.clone(),
            lease_id: p.lease_id,
        })
    }
}
