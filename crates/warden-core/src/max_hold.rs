//! Max-hold: a hard cap on how long a grant may be held, however often its
//! lease is renewed (docs/semantics.md "Max-hold").
//!
//! The table stores durations only, like a lock-delay: per held grant its
//! [`MaxHold`] (the full cap, the remaining cap as of its grant or last
//! [`crate::types::Command::CheckpointMaxHold`], its token and grant
//! index), and per waiter of a [`crate::types::Command::AcquireBounded`]
//! the cap its grant will get. Each node times the cap on its own clock
//! ([`crate::Deadlines`], from its apply of the granting entry, so never
//! early); the leader proposes a [`crate::types::Command::EndMaxHold`]
//! naming (resource, lease, fencing token) when it runs out. That entry
//! frees the grant as an involuntary loss (reason
//! [`crate::FreeReason::MaxHold`]: lock-delay applies) and hands the
//! resource off in the same entry; an entry naming a grant that is no
//! longer held with that token (released, expired, re-granted) ends nothing.
//!
//! Whatever frees a grant drops its record ([`crate::Effect::MaxHoldEnded`]);
//! whatever removes a waiter drops the cap it would have had.

use serde::{Deserialize, Serialize};

use crate::effect::{Effect, FreeReason};
use crate::table::LockTable;
use crate::types::{
    CheckpointMaxHold, EndMaxHold, FencingToken, LeaderId, LeaseId, LogIndex, MaxHoldRef, Response,
};

/// The max-hold of one held grant.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
pub struct MaxHold {
    /// The grant's token: a max-hold entry must name it.
    pub fencing_token: FencingToken,
    /// Index of the entry that made the grant.
    pub grant_index: LogIndex,
    /// The full cap in milliseconds.
    pub max_hold_ms: u64,
    /// Remaining cap in milliseconds as of the grant or the last
    /// checkpoint (used only where no local deadline exists: snapshot load).
    pub remaining_ms: u64,
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

impl MaxHoldView {
    /// The exact grant, as max-hold entries name it.
    pub fn grant(&self) -> MaxHoldRef {
        MaxHoldRef {
            resource: self.resource.clone(),
            lease_id: self.lease_id,
            fencing_token: self.max_hold.fencing_token,
        }
    }
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
        self.max_holds.insert(
            (resource.to_owned(), lease_id),
            MaxHold {
                fencing_token,
                grant_index: index,
                max_hold_ms,
                remaining_ms: max_hold_ms,
            },
        );
        fx.push(Effect::MaxHoldStarted {
            resource: resource.to_owned(),
            lease_id,
            fencing_token,
            max_hold_ms,
        });
    }

    /// True when `g` names a grant held now with a max-hold.
    fn max_hold_matches(&self, g: &MaxHoldRef) -> bool {
        self.max_holds
            .get(&(g.resource.clone(), g.lease_id))
            .is_some_and(|m| m.fencing_token == g.fencing_token)
            && self
                .resources
                .get(&g.resource)
                .and_then(|s| s.grant_of(g.lease_id))
                .is_some_and(|h| h.fencing_token == g.fencing_token)
    }

    /// [`crate::types::Command::EndMaxHold`]: the due list, then (if the
    /// leader ids match) each named grant still held with its token is
    /// freed as an involuntary loss and handed off (S8).
    pub(crate) fn end_max_hold(
        &mut self,
        index: LogIndex,
        log_leader: LeaderId,
        e: &EndMaxHold,
        fx: &mut Vec<Effect>,
    ) -> Response {
        self.apply_due(index, log_leader, e.due.as_ref(), fx);
        if e.leader != log_leader {
            return Response::Done;
        }
        for g in &e.grants {
            if self.max_hold_matches(g) {
                self.free(
                    index,
                    &g.resource,
                    g.lease_id,
                    FreeReason::MaxHold,
                    true,
                    fx,
                );
                self.drop_auto_if_idle(g.lease_id, fx);
            }
        }
        Response::Done
    }

    /// [`crate::types::Command::CheckpointMaxHold`]: records each named
    /// grant's remaining cap (at most what it had); deadlines only shorten.
    pub(crate) fn checkpoint_max_hold(
        &mut self,
        log_leader: LeaderId,
        c: &CheckpointMaxHold,
        fx: &mut Vec<Effect>,
    ) -> Response {
        if c.leader != log_leader {
            return Response::Done;
        }
        for (g, remaining_ms) in &c.grants {
            if !self.max_hold_matches(g) {
                continue;
            }
            if let Some(m) = self.max_holds.get_mut(&(g.resource.clone(), g.lease_id)) {
                m.remaining_ms = m.remaining_ms.min(*remaining_ms);
                fx.push(Effect::MaxHoldCapped {
                    resource: g.resource.clone(),
                    lease_id: g.lease_id,
                    fencing_token: g.fencing_token,
                    remaining_ms: m.remaining_ms,
                });
            }
        }
        Response::Done
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
            if !in_range(m.max_hold_ms) || m.remaining_ms > m.max_hold_ms {
                return Err(format!(
                    "max-hold of {resource:?} for lease {lease_id}: {} ms left of {} ms",
                    m.remaining_ms, m.max_hold_ms
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
