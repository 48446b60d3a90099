//! Cluster time in the table: instants, the one liveness predicate, and the
//! sweep (docs/semantics.md "Time").
//!
//! Every entry carries its leader's cluster time ([`crate::types::Stamp`]);
//! apply keeps `now = max(now, at_ms)`. Every instant in the table is `now`
//! at the apply of the entry that set it plus the duration asked for: a
//! lease's `expires_at_ms`, a waiter's `deadline_ms`, a lock-delay's and a
//! max-hold's `ends_at_ms`. An item whose instant is at or before `now` has
//! ended for every decision, swept or not:
//!
//! * a hand-off skips and removes a waiter whose wait ran out or whose lease
//!   ended (S8, for every kind and queue length, with no list);
//! * a command that touches a resource first ends what has ended on it
//!   ([`LockTable::refresh`]): a holder whose lease or max-hold ran out is an
//!   involuntary loss at that instant (its lock-delay counts from there), and
//!   the resource goes to live waiters in queue order;
//! * a renew, release, revoke or proclaim of an ended lease is `NotFound`;
//! * the lease limit and quotas count live items only ([`LockTable::make_room`]).
//!
//! The sweep is a work bound only: apply of every entry ends at most
//! [`MAX_SWEEP_PER_ENTRY`] due items in instant order, and starts no new
//! one once it has made [`MAX_SWEEP_EFFECTS_PER_ENTRY`] effects (a lease
//! counts as one item however many locks it frees), and the leader proposes
//! a tick while [`LockTable::next_instant_ms`] is due.
//!
//! L4: a [`crate::types::Promote`] records the new leader's
//! `no_expiry_before_ms`; a lease granted or renewed after the previous
//! promote does not end before it ([`LockTable::lease_end_ms`]), so the grace
//! is given at most once between two renews.

use std::collections::BTreeSet;
use std::ops::Bound::{Excluded, Unbounded};

use serde::{Deserialize, Serialize};

use crate::effect::{Effect, FreeReason, LeaseEndReason, WaiterRemovedReason};
use crate::table::{LeaseRecord, LockTable};
use crate::types::{LeaseId, LogIndex};

/// The most due items one entry's apply ends (a work bound, not a rule:
/// items past it are ended for every decision already). The leader keeps
/// ticking while any remain.
pub const MAX_SWEEP_PER_ENTRY: usize = 250;

/// The effects (frees, hand-offs, ends) after which one entry's sweep starts
/// no further item: 250 leases of up to
/// [`crate::limits::MAX_LOCKS_PER_LEASE`] locks each would otherwise free
/// millions of grants in one apply. An item always finishes, so one entry
/// makes at most this plus one lease's worth.
pub const MAX_SWEEP_EFFECTS_PER_ENTRY: usize = 10_000;

/// The most not-yet-ended items (leases kept by a promote's grace) one
/// sweep steps over before it stops.
const MAX_SWEEP_SKIPS: usize = 4 * MAX_SWEEP_PER_ENTRY;

/// An item with an instant, as the time index keys it.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Timed {
    /// A lease's `expires_at_ms`.
    Lease(LeaseId),
    /// A waiter's `deadline_ms`: (resource, lease, enqueue index).
    Wait(String, LeaseId, LogIndex),
    /// A resource's lock-delay's `ends_at_ms`.
    LockDelay(String),
    /// A held grant's max-hold `ends_at_ms`: (resource, lease).
    MaxHold(String, LeaseId),
}

/// The last two promotes (L4).
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Promotion {
    /// Index of the last applied promote (0: none yet).
    pub index: LogIndex,
    /// Its `no_expiry_before_ms`.
    pub no_expiry_before_ms: u64,
    /// Index of the promote before it (0: none).
    pub prev_index: LogIndex,
}

/// Derived from the table, never saved: every instant and its item, in
/// instant order.
pub(crate) type Timeline = BTreeSet<(u64, Timed)>;

impl LockTable {
    /// Cluster time in milliseconds as of the last applied entry.
    pub fn now_ms(&self) -> u64 {
        self.now_ms
    }

    /// The last two promotes (L4).
    pub fn promotion(&self) -> Promotion {
        self.promotion
    }

    /// The instant `lease` ends at: its `expires_at_ms`, or, when it was
    /// granted or renewed after the previous promote, no earlier than the
    /// last promote's `no_expiry_before_ms` (L4).
    pub fn lease_end_ms(&self, lease: &LeaseRecord) -> u64 {
        if lease.renew_index > self.promotion.prev_index {
            lease.expires_at_ms.max(self.promotion.no_expiry_before_ms)
        } else {
            lease.expires_at_ms
        }
    }

    /// True while lease `id` is in the table and has not ended at `now_ms`.
    pub fn lease_live_at(&self, id: LeaseId, now_ms: u64) -> bool {
        self.leases
            .get(&id)
            .is_some_and(|l| now_ms < self.lease_end_ms(l))
    }

    /// True while lease `id` has not ended at the table's `now`.
    pub fn lease_live(&self, id: LeaseId) -> bool {
        self.lease_live_at(id, self.now_ms)
    }

    /// The earliest instant in the table, if any: the leader ticks when it
    /// is due. A lease a promote keeps past its `expires_at` is due here
    /// once; the sweep then moves its key to its end ([`Self::sweep`]).
    pub fn next_instant_ms(&self) -> Option<u64> {
        self.timeline.first().map(|(at, _)| *at)
    }

    /// Moves `now` forward (never back).
    pub(crate) fn advance_now(&mut self, at_ms: u64) {
        let before = self.now_ms;
        self.now_ms = self.now_ms.max(at_ms);
        debug_assert!(self.now_ms >= before, "cluster time went backwards");
    }

    /// A new leader's promote (L4).
    pub(crate) fn promote(&mut self, index: LogIndex, no_expiry_before_ms: u64) {
        self.promotion = Promotion {
            index,
            no_expiry_before_ms,
            prev_index: self.promotion.index,
        };
    }

    /// Ends, in instant order, at most `limit` items due at `now`; returns
    /// how many. A lease a promote's grace keeps past its `expires_at` counts
    /// as one: its `expires_at` becomes its end (what it was already for
    /// every decision, L4), so its key leaves the due part of the index
    /// and no kept lease holds the sweep up.
    pub(crate) fn sweep(&mut self, index: LogIndex, limit: usize, fx: &mut Vec<Effect>) -> usize {
        let mut ended = 0;
        let mut skipped = 0;
        let mut after: Option<(u64, Timed)> = None;
        let start = fx.len();
        while ended < limit
            && skipped < MAX_SWEEP_SKIPS
            && fx.len() - start < MAX_SWEEP_EFFECTS_PER_ENTRY
        {
            let next = match &after {
                None => self.timeline.first(),
                Some(k) => self.timeline.range((Excluded(k), Unbounded)).next(),
            };
            let Some((at, item)) = next.cloned().filter(|(at, _)| *at <= self.now_ms) else {
                break;
            };
            if self.end_due(index, &item, fx) {
                ended += 1;
            } else {
                skipped += 1;
                after = Some((at, item));
            }
        }
        ended
    }

    /// Ends one item of the time index that is due; false when it has not
    /// ended (a lease a promote's grace keeps).
    fn end_due(&mut self, index: LogIndex, item: &Timed, fx: &mut Vec<Effect>) -> bool {
        match item {
            Timed::Lease(id) if self.sweep_skips_leases => {
                // The reintroduced bug: the lease leaves the time index
                // unended, so nothing but a touch of its resources ends it.
                if let Some(at) = self.leases.get(id).map(|l| l.expires_at_ms) {
                    self.timeline.remove(&(at, Timed::Lease(*id)));
                }
                true
            }
            Timed::Lease(id) => self.end_if_dead(index, *id, fx) || self.keep_graced(*id),
            Timed::Wait(resource, lease_id, enqueue_index) => {
                if self.remove_waiter(
                    index,
                    resource,
                    *lease_id,
                    *enqueue_index,
                    WaiterRemovedReason::TimedOut,
                    fx,
                ) {
                    self.settle(index, resource, fx);
                    self.drop_auto_if_idle(*lease_id, fx);
                }
                true
            }
            Timed::LockDelay(resource) => {
                self.end_lock_delay(index, resource, fx);
                true
            }
            Timed::MaxHold(resource, lease_id) => {
                self.end_max_hold(index, resource, *lease_id, fx);
                true
            }
        }
    }

    /// A lease whose end a promote moved past its `expires_at`: its
    /// `expires_at` becomes that end and its key moves with it. True if it
    /// moved. Deterministic (every replica's sweep does it in the same
    /// entry) and changes no decision: the end was already that.
    fn keep_graced(&mut self, id: LeaseId) -> bool {
        let Some(end) = self.leases.get(&id).map(|l| self.lease_end_ms(l)) else {
            return false;
        };
        let Some(l) = self.leases.get_mut(&id) else {
            return false;
        };
        if end <= l.expires_at_ms {
            return false;
        }
        self.timeline.remove(&(l.expires_at_ms, Timed::Lease(id)));
        l.expires_at_ms = end;
        self.timeline.insert((end, Timed::Lease(id)));
        true
    }

    /// Ends lease `id` as expired when it has ended at `now` (its grants are
    /// involuntary losses at its end instant); true if it did.
    pub(crate) fn end_if_dead(
        &mut self,
        index: LogIndex,
        id: LeaseId,
        fx: &mut Vec<Effect>,
    ) -> bool {
        let Some(end) = self.leases.get(&id).map(|l| self.lease_end_ms(l)) else {
            return false;
        };
        if end > self.now_ms {
            return false;
        }
        self.end_lease(
            index,
            id,
            LeaseEndReason::Expired,
            FreeReason::Expired,
            Some(end),
            fx,
        );
        true
    }

    /// Ends what has ended on `resource` before a command decides on it:
    /// holders whose lease ended (the whole lease), grants whose max-hold
    /// ran out, a lock-delay that is over; then hands it off to live
    /// waiters in queue order (S8).
    pub(crate) fn refresh(&mut self, index: LogIndex, resource: &str, fx: &mut Vec<Effect>) {
        let Some(state) = self.resources.get(resource) else {
            return;
        };
        let now = self.now_ms;
        let holders: Vec<LeaseId> = state.holders().map(|g| g.lease_id).collect();
        for lease_id in holders {
            if !self.end_if_dead(index, lease_id, fx) {
                let ended = self
                    .max_holds
                    .get(&(resource.to_owned(), lease_id))
                    .is_some_and(|m| m.ends_at_ms <= now);
                if ended {
                    self.end_max_hold(index, resource, lease_id, fx);
                }
            }
        }
        let delay_over = self
            .resources
            .get(resource)
            .and_then(|s| s.lock_delay.as_ref())
            .is_some_and(|d| d.ends_at_ms <= now);
        if delay_over {
            self.end_lock_delay(index, resource, fx);
        } else {
            self.settle(index, resource, fx);
        }
    }

    /// Ends `resource`'s lock-delay and hands off (S8).
    fn end_lock_delay(&mut self, index: LogIndex, resource: &str, fx: &mut Vec<Effect>) {
        let Some(d) = self
            .resources
            .get_mut(resource)
            .and_then(|s| s.lock_delay.take())
        else {
            return;
        };
        self.timeline
            .remove(&(d.ends_at_ms, Timed::LockDelay(resource.to_owned())));
        fx.push(Effect::LockDelayEnded {
            resource: resource.to_owned(),
            start_index: d.start_index,
        });
        self.settle(index, resource, fx);
    }

    /// Frees the grant `lease_id` holds on `resource` because its max-hold
    /// ran out: an involuntary loss at its end instant, then hand-off.
    fn end_max_hold(
        &mut self,
        index: LogIndex,
        resource: &str,
        lease_id: LeaseId,
        fx: &mut Vec<Effect>,
    ) {
        let Some(end) = self
            .max_holds
            .get(&(resource.to_owned(), lease_id))
            .map(|m| m.ends_at_ms)
        else {
            return;
        };
        self.free(
            index,
            resource,
            lease_id,
            FreeReason::MaxHold,
            Some(end),
            fx,
        );
        self.drop_auto_if_idle(lease_id, fx);
    }

    /// The lease limit and quotas count live items only: when a check would
    /// refuse, end the ended leases `owner_filter` selects (all of them for
    /// None) among the due part of the time index, up to `want`, and return
    /// how many ended.
    pub(crate) fn end_dead_leases(
        &mut self,
        index: LogIndex,
        owner: Option<Option<&str>>,
        want: u64,
        fx: &mut Vec<Effect>,
    ) -> u64 {
        let now = self.now_ms;
        let dead: Vec<LeaseId> = self
            .timeline
            .iter()
            .take_while(|(at, _)| *at <= now)
            .filter_map(|(_, item)| match item {
                Timed::Lease(id) => Some(*id),
                _ => None,
            })
            .filter(|id| {
                self.leases.get(id).is_some_and(|l| {
                    self.lease_end_ms(l) <= now
                        && owner.is_none_or(|o| l.owner.as_ref().map(|p| p.as_str()) == o)
                })
            })
            .take(usize::try_from(want).unwrap_or(usize::MAX))
            .collect();
        let n = dead.len() as u64;
        for id in dead {
            self.end_if_dead(index, id, fx);
        }
        n
    }

    /// The time index computed from the table (snapshot load and
    /// `check_invariants`).
    pub(crate) fn computed_timeline(&self) -> Timeline {
        let mut t = Timeline::new();
        for l in self.leases.values() {
            t.insert((l.expires_at_ms, Timed::Lease(l.lease_id)));
        }
        for (name, s) in &self.resources {
            for w in &s.waiters {
                t.insert((
                    w.deadline_ms,
                    Timed::Wait(name.clone(), w.lease_id, w.enqueue_index),
                ));
            }
            if let Some(d) = &s.lock_delay {
                t.insert((d.ends_at_ms, Timed::LockDelay(name.clone())));
            }
        }
        for ((resource, lease_id), m) in &self.max_holds {
            t.insert((m.ends_at_ms, Timed::MaxHold(resource.clone(), *lease_id)));
        }
        t
    }
}
