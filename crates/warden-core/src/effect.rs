//! What one applied entry changed, as a list of [`Effect`]s.
//!
//! The server forwards grants and removals to waiting clients and
//! watchers, and feeds its metrics and event log from them. Effects are deterministic (same entry, same table → same list),
//! but they are not replicated state: they are derived again on every replica.

use serde::{Deserialize, Serialize};

use crate::types::{FencingToken, LeaseId, LogIndex, Mode};

/// Why a lease ended.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum LeaseEndReason {
    /// Its instant passed (docs/semantics.md "Time").
    Expired,
    /// A `Revoke` ended it.
    Revoked,
    /// An acquire-created (`auto`) lease lost its last lock and its last wait.
    Released,
    /// An acquire-created lease whose acquire was not granted. Apply never
    /// creates such a lease in the first place, so this reason is not emitted
    /// today; it is kept so consumers can match on it.
    NotGranted,
}

/// Why a holder lost a resource.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum FreeReason {
    /// A `Release` by the holder (clean: no lock-delay).
    Released,
    /// The holder's lease expired (involuntary: lock-delay applies).
    Expired,
    /// The holder's lease was revoked (clean: no lock-delay).
    Revoked,
    /// A `ForceRelease` (involuntary: lock-delay applies).
    Forced,
    /// Its max-hold ran out (involuntary: lock-delay applies).
    MaxHold,
}

/// Why a waiter left the queue.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum WaiterRemovedReason {
    /// It became the holder (a [`Effect::Granted`] follows).
    Granted,
    /// Its wait ran out (S8).
    TimedOut,
    /// Its lease ended (expiry, revoke), S8.
    LeaseEnded,
    /// At a hand-off, its lease's owner no longer had `lock` on the resource
    /// (the permission was revoked after it queued; see [`crate::auth`]). The
    /// next live waiter is granted in the same entry.
    PermissionRevoked,
    /// Its caller took it back (`CancelWait`, S8).
    Cancelled,
}

/// One change made by an applied entry. Millisecond durations; instants
/// are in cluster time (docs/semantics.md "Time").
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub enum Effect {
    /// A lease was created or renewed: it ends at `now + ttl_ms`.
    LeaseSet {
        /// The lease.
        lease_id: LeaseId,
        /// Its TTL in milliseconds.
        ttl_ms: u64,
    },
    /// The lease is gone.
    LeaseEnded {
        /// The lease.
        lease_id: LeaseId,
        /// Why.
        reason: LeaseEndReason,
    },
    /// A grant (S2: `fencing_token` is above every token issued before).
    Granted {
        /// The resource.
        resource: String,
        /// The new holder.
        lease_id: LeaseId,
        /// The grant's token.
        fencing_token: FencingToken,
        /// Index of the entry that made the grant.
        grant_index: LogIndex,
        /// Exclusive, or shared (a reader or a semaphore permit).
        mode: Mode,
        /// A semaphore permit's slot.
        slot: Option<u32>,
    },
    /// A holder lost a resource.
    Freed {
        /// The resource.
        resource: String,
        /// The former holder.
        lease_id: LeaseId,
        /// The grant that ended.
        fencing_token: FencingToken,
        /// Why.
        reason: FreeReason,
        /// Cluster time (ms) the grant was made at: held for `now` less this.
        granted_at_ms: u64,
    },
    /// A waiter was enqueued: its wait ends at `now + wait_timeout_ms`.
    Queued {
        /// The resource.
        resource: String,
        /// The waiting lease.
        lease_id: LeaseId,
        /// Index of the enqueue entry (identifies this wait).
        enqueue_index: LogIndex,
        /// 1 = next in line.
        position: u64,
        /// The wait timeout in milliseconds.
        wait_timeout_ms: u64,
    },
    /// A waiter left the queue.
    WaiterRemoved {
        /// The resource.
        resource: String,
        /// The lease.
        lease_id: LeaseId,
        /// Its enqueue index.
        enqueue_index: LogIndex,
        /// Why.
        reason: WaiterRemovedReason,
        /// Cluster time (ms) it was enqueued at: waited for `now` less this.
        enqueued_at_ms: u64,
    },
    /// A lock-delay started (involuntary loss).
    LockDelayStarted {
        /// The resource.
        resource: String,
        /// Index of the entry that started it (identifies this delay).
        start_index: LogIndex,
        /// The delay in milliseconds.
        lock_delay_ms: u64,
        /// Cluster time (ms) it ends at: the loss's instant plus the delay.
        ends_at_ms: u64,
    },
    /// A lock-delay ended (or merged into a new one).
    LockDelayEnded {
        /// The resource.
        resource: String,
        /// Index of the entry that started it.
        start_index: LogIndex,
    },
    /// A value was published (`Proclaim`).
    Proclaimed {
        /// The resource.
        resource: String,
        /// The lease that published it.
        lease_id: LeaseId,
        /// The grant it was published under; 0 for a candidate's value.
        fencing_token: FencingToken,
    },
    /// A grant with a max-hold was made: it ends at `now + max_hold_ms`.
    MaxHoldStarted {
        /// The resource.
        resource: String,
        /// The holder.
        lease_id: LeaseId,
        /// The grant's token.
        fencing_token: FencingToken,
        /// The max-hold in milliseconds.
        max_hold_ms: u64,
    },
    /// A grant with a max-hold ended (for any reason).
    MaxHoldEnded {
        /// The resource.
        resource: String,
        /// The former holder.
        lease_id: LeaseId,
        /// The grant's token.
        fencing_token: FencingToken,
    },
    /// The auth table changed (an `AuthChange` applied): roles, grants,
    /// quotas or limits. The server re-checks long-lived streams (watches)
    /// it authorized against the table. No deadline changes.
    AuthChanged {
        /// Index of the entry that applied the change.
        index: LogIndex,
    },
}
