//! Max-hold: a hard cap on how long a grant may be held, however often its
//! lease is renewed (docs/semantics.md "Max-hold").
//!
//! The table keeps per held grant its [`MaxHold`] (the cap, its token and
//! grant index, and `ends_at_ms`: cluster time at the grant plus the cap),
//! and per waiter of a [`crate::types::Acquire`] with a `max_hold_ms` the cap
//! its grant will get. A grant whose max-hold has ended is an involuntary
//! loss at that instant (reason [`crate::FreeReason::MaxHold`]: lock-delay
//! counts from it), ended by the sweep or by the next command that touches
//! its resource ([`crate::expiry`]), which hands the resource off in the
//! same entry.
//!
//! Whatever frees a grant drops its record ([`crate::Effect::MaxHoldEnded`]);
//! whatever removes a waiter drops the cap it would have had.

use serde::{Deserialize, Serialize};

use crate::effect::Effect;
use crate::expiry::Timed;
use crate::table::LockTable;
use crate::types::{FencingToken, LeaseId, LogIndex};

/// The max-hold of one held grant.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
pub struct MaxHold {
    /// The grant's token: a max-hold entry must name it.
    pub fencing_token: FencingToken,
    /// Index of the entry that made the grant.
    pub grant_index: LogIndex,
    /// The full cap in milliseconds.
    pub max_hold_ms: u64,
    /// Cluster time (ms) the grant ends at: its grant's `now` plus the cap.
    pub ends_at_ms: u64,
}

/// Key of a held grant's max-hold: (resource, lease).
pub(crate) type HeldKey = (String, LeaseId);
/// Key of a waiter's max-hold: (resource, lease, enqueue index).
pub(crate) type WaitKey = (String, LeaseId, LogIndex);

/// A held grant's max-hold, as [`LockTable::max_holds`] lists it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MaxHoldView {
    /// The resource.
    pub resource: String,
    /// The holding lease.
    pub lease_id: LeaseId,
    /// Its max-hold.
    pub max_hold: MaxHold,
}

impl LockTable {
    /// Records the max-hold of the grant just made (`fencing_token` at
    /// `index`); `max_hold_ms` 0 records nothing.
    pub(crate) fn start_max_hold(
        &mut self,
        index: LogIndex,
        resource: &str,
        lease_id: LeaseId,
        fencing_token: FencingToken,
        max_hold_ms: u64,
        fx: &mut Vec<Effect>,
    ) {
        if max_hold_ms == 0 {
            return;
        }
        let ends_at_ms = self.now_ms.saturating_add(max_hold_ms);
        self.max_holds.insert(
            (resource.to_owned(), lease_id),
            MaxHold {
                fencing_token,
                grant_index: index,
                max_hold_ms,
                ends_at_ms,
            },
        );
        self.timeline
            .insert((ends_at_ms, Timed::MaxHold(resource.to_owned(), lease_id)));
        fx.push(Effect::MaxHoldStarted {
            resource: resource.to_owned(),
            lease_id,
            fencing_token,
            max_hold_ms,
        });
    }

    /// The max-hold of the grant `lease_id` holds on `resource`, if it has one.
    pub fn max_hold(&self, resource: &str, lease_id: LeaseId) -> Option<MaxHold> {
        self.max_holds
            .get(&(resource.to_owned(), lease_id))
            .copied()
    }

    /// Every held grant with a max-hold, by resource then lease.
    pub fn max_holds(&self) -> impl Iterator<Item = MaxHoldView> + '_ {
        self.max_holds
            .iter()
            .map(|((resource, lease_id), m)| MaxHoldView {
                resource: resource.clone(),
                lease_id: *lease_id,
                max_hold: *m,
            })
    }

    /// The max-hold (ms) the grant of this waiter will get, if any.
    pub fn wait_max_hold(
        &self,
        resource: &str,
        lease_id: LeaseId,
        enqueue_index: LogIndex,
    ) -> Option<u64> {
        self.wait_max_holds
            .get(&(resource.to_owned(), lease_id, enqueue_index))
            .copied()
    }

    /// Max-hold invariants: each record belongs to a grant held now with
    /// its token and grant index, remaining <= cap, cap within the limits;
    /// each waiter's cap belongs to a queued waiter whose wait is shorter.
    pub(crate) fn check_max_hold_invariants(&self) -> Result<(), String> {
        use crate::limits::{MAX_MAX_HOLD_MS, MIN_MAX_HOLD_MS};
        let in_range = |ms: u64| (MIN_MAX_HOLD_MS..=MAX_MAX_HOLD_MS).contains(&ms);
        for ((resource, lease_id), m) in &self.max_holds {
            let held = self
                .resources
                .get(resource)
                .and_then(|s| s.grant_of(*lease_id))
                .is_some_and(|g| {
                    g.fencing_token == m.fencing_token && g.grant_index == m.grant_index
                });
            if !held {
                return Err(format!(
                    "max-hold of {resource:?} for lease {lease_id} (token {}) without that grant",
                    m.fencing_token
                ));
            }
            if !in_range(m.max_hold_ms) {
                return Err(format!(
                    "max-hold of {resource:?} for lease {lease_id}: cap {} ms out of range",
                    m.max_hold_ms
                ));
            }
        }
        for ((resource, lease_id, enq), ms) in &self.wait_max_holds {
            let waiter = self.resources.get(resource).and_then(|s| {
                s.waiters
                    .iter()
                    .find(|w| w.lease_id == *lease_id && w.enqueue_index == *enq)
            });
            match waiter {
                Some(w) if in_range(*ms) && w.wait_timeout_ms < *ms => {}
                _ => {
                    return Err(format!(
                        "max-hold {ms} ms of a wait on {resource:?} by lease {lease_id} at {enq} that is not queued (or waits as long)"
                    ))
                }
            }
        }
        Ok(())
    }
}
