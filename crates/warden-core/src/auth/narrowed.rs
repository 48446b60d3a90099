//! Ending the waits a principal may no longer make, when an auth change
//! takes permission away (a revoked grant or role, a deleted role, a denied
//! principal): see the [module docs](super), "Auth changes".
//!
//! Without this, a revoked principal's waits would stay queued until they
//! reached the head of their queue (where every hand-off checks permission)
//! or timed out, holding places other principals wait behind.

use std::collections::BTreeSet;

use crate::auth::Target;
use crate::effect::{Effect, WaiterRemovedReason};
use crate::table::LockTable;
use crate::types::{LeaseId, LogIndex, Permission, Principal};

impl LockTable {
    /// Removes every queued wait, on a lease owned by one of `principals`,
    /// whose owner no longer has `lock` on its resource at this index
    /// (reason `PermissionRevoked`); an acquire-made lease left with
    /// nothing dies, and each resource is settled, so a waiter behind a
    /// removed one is granted in the same entry when it is due (S8).
    ///
    /// Scans every lease once: auth changes are rare and admin-only.
    pub(crate) fn end_unpermitted_waits(
        &mut self,
        index: LogIndex,
        principals: &[Principal],
        fx: &mut Vec<Effect>,
    ) {
        if principals.is_empty() {
            return;
        }
        let affected: BTreeSet<&Principal> = principals.iter().collect();
        let mut ended: Vec<(String, LeaseId)> = Vec::new();
        for l in self.leases.values() {
            let Some(owner) = l.owner.as_ref().filter(|o| affected.contains(o)) else {
                continue;
            };
            for r in &l.waits {
                let target = Target::Resource(r);
                if !self
                    .auth
                    .allows(Some(owner.as_str()), Permission::Lock, target)
                {
                    ended.push((r.clone(), l.lease_id));
                }
            }
        }
        for (resource, lease_id) in ended {
            let waits: Vec<LogIndex> = self
                .resources
                .get(&resource)
                .map(|s| {
                    s.waiters
                        .iter()
                        .filter(|w| w.lease_id == lease_id)
                        .map(|w| w.enqueue_index)
                        .collect()
                })
                .unwrap_or_default();
            for enqueue_index in waits {
                self.remove_waiter(
                    index,
                    &resource,
                    lease_id,
                    enqueue_index,
                    WaiterRemovedReason::PermissionRevoked,
                    fx,
                );
            }
            self.drop_auto_if_idle(lease_id, fx);
            self.settle(index, &resource, fx);
        }
    }
}
