//! A queued acquire's progress, read from this node's applied table after
//! each apply that touched its resource (no read-index): granted, still
//! queued and behind what, or gone and why (S8: a wait granted by a
//! hand-off is answered with its grant, even once that grant has ended).

use warden_core::types::{
    FencingToken, LeaseId, LockKind, LogIndex, Mode, NotGrantedReason, ResourceToken,
};
use warden_core::WaiterRemovedReason;

use super::{grant_max_hold_ms, lock_delay_left_ms};
use crate::node::Node;

/// Where a queued acquire stands on this node (no read-index: it follows
/// the applied table as entries apply).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WaiterStep {
    /// Granted by an entry at or after its enqueue.
    Granted {
        /// The grant's token.
        fencing_token: FencingToken,
        /// The lease's TTL in milliseconds.
        ttl_ms: u64,
        /// The entry that made the grant.
        grant_index: LogIndex,
        /// A semaphore permit's slot.
        slot: Option<u32>,
        /// The resource's kind (docs/semantics.md "Lock kinds").
        kind: Option<LockKind>,
        /// The grant's mode.
        mode: Mode,
        /// A multi-lock's resources and tokens (all granted by this entry);
        /// empty for a single resource's grant.
        grants: Vec<ResourceToken>,
        /// The grant's max-hold in milliseconds (0: none;
        /// docs/semantics.md "Max-hold").
        max_hold_ms: u64,
    },
    /// Still queued, at this position (1 = next), behind this.
    Queued {
        /// 1 = next in line.
        position: u64,
        /// What it waits behind.
        behind: QueueBehind,
    },
    /// No longer queued and not granted (its wait ended, it was cancelled,
    /// or its lease died); the holder now, if any.
    Gone {
        /// The lease holding the resource now.
        holder: Option<LeaseId>,
        /// `Cancelled` for a `CancelWait`, `WaitTimeout` otherwise.
        reason: NotGrantedReason,
    },
    /// Removed at a hand-off because its principal no longer had `lock` on
    /// the resource (the permission was revoked after it queued).
    PermissionRevoked,
}

/// What a queued acquire waits behind (its `Queued` reports say it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QueueBehind {
    /// Next in line, and the resource is held by this lease.
    Holder {
        /// The holding lease.
        lease_id: LeaseId,
    },
    /// Next in line, and the resource is in its lock-delay after an
    /// involuntary loss: no grant before it ends.
    LockDelay {
        /// The lock-delay left at the applied table's cluster time, in
        /// milliseconds (0 when it has run out and its end is not yet
        /// applied).
        remaining_ms: u64,
    },
    /// Behind this many earlier waiters (position - 1).
    Waiters {
        /// Waiters ahead of it.
        count: u64,
    },
    /// Next in line with neither a holder nor a lock-delay: a moment
    /// between two entries (the next one grants it).
    Nothing,
}

impl QueueBehind {
    /// The wire name (`Queued.behind`): "holder", "lock_delay", "waiters",
    /// or "" for [`QueueBehind::Nothing`].
    pub fn as_str(&self) -> &'static str {
        match self {
            QueueBehind::Holder { .. } => "holder",
            QueueBehind::LockDelay { .. } => "lock_delay",
            QueueBehind::Waiters { .. } => "waiters",
            QueueBehind::Nothing => "",
        }
    }
}

impl Node {
    /// Where the acquire of `lease_id` on `resource`, queued at
    /// `enqueue_index`, stands in this node's applied table. None when the
    /// state is unusable.
    pub fn waiter_step(
        &self,
        resource: &str,
        lease_id: LeaseId,
        enqueue_index: LogIndex,
    ) -> Option<WaiterStep> {
        let m = self.shared.machine.lock().ok()?;
        let now = m.table.now_ms();
        let state = m.table.resource(resource);
        if let Some(g) = state
            .and_then(|s| s.grant_of(lease_id))
            .filter(|g| g.grant_index >= enqueue_index)
        {
            let grants = m
                .table
                .multi_lock(lease_id, resource)
                .filter(|v| v.grant_index == Some(g.grant_index))
                .map(|v| v.tokens)
                .unwrap_or_default();
            return Some(WaiterStep::Granted {
                fencing_token: g.fencing_token,
                ttl_ms: g.ttl_ms,
                grant_index: g.grant_index,
                slot: g.slot,
                kind: state.map(|s| s.kind),
                mode: g.mode,
                grants,
                max_hold_ms: grant_max_hold_ms(&m, resource, lease_id, g.fencing_token),
            });
        }
        // What it waits behind: the writer or mutex holder, else the first
        // reader or permit holder, live at the table's `now`.
        let holder = state.and_then(|s| {
            s.holders()
                .find(|g| m.table.grant_live_at(resource, g, now))
        });
        Some(match m.table.waiter_position(resource, lease_id) {
            Some(position) => WaiterStep::Queued {
                position,
                behind: match holder {
                    _ if position > 1 => QueueBehind::Waiters {
                        count: position - 1,
                    },
                    Some(h) => QueueBehind::Holder {
                        lease_id: h.lease_id,
                    },
                    None if m.table.lock_delay(resource).is_some() => QueueBehind::LockDelay {
                        remaining_ms: lock_delay_left_ms(&m.table, resource, now),
                    },
                    None => QueueBehind::Nothing,
                },
            },
            None => match m.removed_waiters.reason(resource, lease_id, enqueue_index) {
                Some(WaiterRemovedReason::PermissionRevoked) => WaiterStep::PermissionRevoked,
                // Granted by a hand-off, and that grant has ended since:
                // still the grant (S8: a granted wait is never answered as
                // timed out; the client finds its lease or grant ended).
                Some(WaiterRemovedReason::Granted) => {
                    match m.removed_waiters.grant(resource, lease_id, enqueue_index) {
                        Some(g) => WaiterStep::Granted {
                            fencing_token: g.fencing_token,
                            ttl_ms: g.ttl_ms,
                            grant_index: g.grant_index,
                            slot: g.slot,
                            kind: g.kind,
                            mode: g.mode,
                            grants: g.grants.clone(),
                            max_hold_ms: g.max_hold_ms,
                        },
                        None => WaiterStep::Gone {
                            holder: holder.map(|h| h.lease_id),
                            reason: NotGrantedReason::WaitTimeout,
                        },
                    }
                }
                removed => WaiterStep::Gone {
                    holder: holder.map(|h| h.lease_id),
                    reason: match removed {
                        Some(WaiterRemovedReason::Cancelled) => NotGrantedReason::Cancelled,
                        _ => NotGrantedReason::WaitTimeout,
                    },
                },
            },
        })
    }
}
