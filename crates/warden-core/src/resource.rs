//! One resource's state: its kind, its holders (one exclusive grant, or
//! shared grants), its FIFO waiters and its lock-delay, and the rules that
//! say whether a grant in a given mode can be made now (docs/semantics.md
//! "Lock kinds").
//!
//! * A **mutex** has at most one holder, exclusive ([`ResourceState::holder`]).
//! * A **read-write lock** has either one exclusive holder (a writer) or any
//!   number of shared holders (readers, [`ResourceState::shared`]), never both.
//! * A **semaphore** of `limit` permits has at most `limit` shared holders,
//!   each with its own slot in `0..limit` (the lowest free one at grant time).
//!
//! A lock-delay withholds what the lost grant held ([`DelayScope`]): the
//! whole resource after an exclusive grant, writers only after a reader, the
//! lost permit's slot after a permit. Two delays on one resource merge into
//! one that withholds both scopes until the later of the two could end (the
//! longer delay, counted from the later loss): never shorter than either.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::types::{FencingToken, LeaseId, LockKind, LogIndex, Mode, RequestHeader};

/// One grant of a resource to a lease.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct Grant {
    /// The holding lease.
    pub lease_id: LeaseId,
    /// The grant's fencing token (S2).
    pub fencing_token: FencingToken,
    /// The lease's TTL in milliseconds at grant time.
    pub ttl_ms: u64,
    /// Index of the entry that made the grant.
    pub grant_index: LogIndex,
    /// Cluster time (ms) of that entry (docs/semantics.md "Time").
    pub granted_at_ms: u64,
    /// Lock-delay (ms) to apply if this grant is lost involuntarily.
    pub lock_delay_ms: u64,
    /// Exclusive (a mutex's or a writer's) or shared (a reader's or a permit).
    pub mode: Mode,
    /// A semaphore permit's slot in `0..limit`; None for every other grant.
    pub slot: Option<u32>,
}

/// A queued acquire (S8). Its principal is its lease's owner
/// ([`crate::LeaseRecord::owner`]): an acquire on an existing lease requires
/// ownership, so a waiter stores no principal of its own.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct Waiter {
    /// The waiting lease.
    pub lease_id: LeaseId,
    /// Index of the enqueue entry: FIFO order and, with the lease, identity
    /// of this wait. Waiters enqueued by one packed entry (`Command::Batch`)
    /// share it and keep the entry's order.
    pub enqueue_index: LogIndex,
    /// The wait timeout in milliseconds.
    pub wait_timeout_ms: u64,
    /// Cluster time (ms) its wait ends at: `now` at its enqueue plus
    /// `wait_timeout_ms`. At or after it the waiter is never granted (S8).
    pub deadline_ms: u64,
    /// Lock-delay (ms) of the grant this waiter will get.
    pub lock_delay_ms: u64,
    /// The acquire's header, so the server can answer the waiting request.
    pub header: RequestHeader,
    /// The mode of the grant it waits for.
    pub mode: Mode,
}

/// What a running lock-delay withholds.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, Default)]
pub enum DelayScope {
    /// The whole resource: no grant of any mode (after an exclusive grant
    /// was lost, or after a restore of a held resource).
    #[default]
    All,
    /// A read-write lock's writers only (after a reader was lost): new
    /// readers are still granted.
    Writers,
    /// A semaphore's slots (after permits were lost): the other slots are
    /// still granted.
    Slots(BTreeSet<u32>),
}

impl DelayScope {
    /// The scope of two delays merged: everything either withholds.
    pub fn merge(self, other: DelayScope) -> DelayScope {
        match (self, other) {
            (DelayScope::Slots(mut a), DelayScope::Slots(b)) => {
                a.extend(b);
                DelayScope::Slots(a)
            }
            (DelayScope::Writers, DelayScope::Writers) => DelayScope::Writers,
            _ => DelayScope::All,
        }
    }
}

/// A running lock-delay (after an involuntary loss).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct LockDelay {
    /// Index of the entry that started it.
    pub start_index: LogIndex,
    /// The full delay in milliseconds.
    pub lock_delay_ms: u64,
    /// Cluster time (ms) it ends at: the loss's instant (a lease's end, a
    /// max-hold's end, a forced release's `now`) plus the delay.
    pub ends_at_ms: u64,
    /// What it withholds.
    pub scope: DelayScope,
}

/// The state of one resource. Only resources with a holder, a waiter or a
/// lock-delay are kept; a resource's `kind` is fixed while it is kept.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, Default)]
pub struct ResourceState {
    /// The exclusive holder: a mutex's holder or a read-write lock's writer
    /// (S1: at most one, never beside a shared holder).
    pub holder: Option<Grant>,
    /// Waiters in FIFO order of `enqueue_index` (then of their place in
    /// the entry, for waiters one packed entry enqueued).
    pub waiters: Vec<Waiter>,
    /// A running lock-delay; never together with a grant it withholds.
    pub lock_delay: Option<LockDelay>,
    /// What kind of lock it is.
    pub kind: LockKind,
    /// The shared holders by lease: a read-write lock's readers, or a
    /// semaphore's permits (at most `limit`).
    pub shared: BTreeMap<LeaseId, Grant>,
}

impl Waiter {
    /// Cluster time (ms) it was enqueued at.
    pub fn enqueued_at_ms(&self) -> u64 {
        self.deadline_ms.saturating_sub(self.wait_timeout_ms)
    }
}

impl ResourceState {
    /// An empty resource of `kind`.
    pub(crate) fn of(kind: LockKind) -> Self {
        ResourceState {
            kind,
            ..ResourceState::default()
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.holder.is_none()
            && self.shared.is_empty()
            && self.waiters.is_empty()
            && self.lock_delay.is_none()
    }

    /// The grant `lease_id` holds on this resource, if any.
    pub fn grant_of(&self, lease_id: LeaseId) -> Option<&Grant> {
        self.holder
            .as_ref()
            .filter(|g| g.lease_id == lease_id)
            .or_else(|| self.shared.get(&lease_id))
    }

    /// Every holder: the exclusive one, then the shared ones by lease id.
    pub fn holders(&self) -> impl Iterator<Item = &Grant> + '_ {
        self.holder.iter().chain(self.shared.values())
    }

    /// True when some grant holds it.
    pub fn is_held(&self) -> bool {
        self.holder.is_some() || !self.shared.is_empty()
    }

    /// The lowest slot of a semaphore that no permit holds and no
    /// lock-delay withholds; None when all are taken (or for another kind).
    pub fn free_slot(&self) -> Option<u32> {
        let LockKind::Semaphore { limit } = self.kind else {
            return None;
        };
        if self.shared.len() as u64 >= u64::from(limit) {
            return None;
        }
        let withheld = match self.lock_delay.as_ref().map(|d| &d.scope) {
            Some(DelayScope::All) => return None,
            Some(DelayScope::Slots(s)) => Some(s),
            _ => None,
        };
        let used: BTreeSet<u32> = self.shared.values().filter_map(|g| g.slot).collect();
        (0..limit).find(|s| !used.contains(s) && withheld.is_none_or(|w| !w.contains(s)))
    }

    /// True when a grant in `mode` could be made now, leaving the queue
    /// aside (FIFO is the caller's: only the head waiter, or an acquire
    /// with nobody queued, may be granted). With `ignore_delay`, as if no
    /// lock-delay ran (to tell "held" from "in lock-delay").
    pub fn admits(&self, mode: Mode, ignore_delay: bool) -> bool {
        let delay = self.lock_delay.as_ref().filter(|_| !ignore_delay);
        match (self.kind, mode) {
            (LockKind::Semaphore { limit }, _) => match delay {
                None => (self.shared.len() as u64) < u64::from(limit),
                Some(_) => self.free_slot().is_some(),
            },
            (_, Mode::Shared) => {
                self.holder.is_none() && delay.is_none_or(|d| d.scope == DelayScope::Writers)
            }
            (_, Mode::Exclusive) => {
                self.holder.is_none() && self.shared.is_empty() && delay.is_none()
            }
        }
    }

    /// The scope a lock-delay takes when `g`, a grant of this resource, is
    /// lost involuntarily.
    pub(crate) fn delay_scope_of(&self, g: &Grant) -> DelayScope {
        match (self.kind, g.mode, g.slot) {
            (LockKind::Semaphore { .. }, _, Some(slot)) => {
                DelayScope::Slots(BTreeSet::from([slot]))
            }
            (LockKind::ReadWrite, Mode::Shared, _) => DelayScope::Writers,
            _ => DelayScope::All,
        }
    }
}
