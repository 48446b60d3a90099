//! S4 no early expiry (docs/semantics.md S4): the service never ends a
//! lease by expiry earlier than TTL × (1 − ρ) of real time after the send
//! of its last acknowledged renew (or acquire). Judged in real (simulated)
//! time against the global send time the client recorded, with 2 ms of
//! slack for the simulator's tick, on every node at every apply:
//!
//! - an effect that ends the lease by expiry (`LeaseEnded { Expired }`, or
//!   a holder's `Freed { Expired }`);
//! - and, before any sweep has ended it, a lease still in the node's table
//!   that the table's one liveness predicate already treats as ended at the
//!   entry's cluster time (docs/semantics.md "Time": an ended item is ended
//!   for every decision, swept or not).
//!
//! No node-local deadline is read: only what apply decided and when, in
//! real time, it decided it.

use std::collections::BTreeSet;
use std::time::Duration;

use warden_core::{Effect, FreeReason, LeaseEndReason};

use super::checker::{Checker, Entry, Next};
use crate::world::History;

const PROPERTY: &str = "S4";

/// See the module docs.
#[derive(Debug, Default)]
pub struct NoEarlyExpiry {
    /// (node, lease, send) already reported as treated as ended early (one
    /// finding per node and acknowledged send, not one per apply).
    reported: BTreeSet<(u64, u64, Duration)>,
}

/// The earliest real time lease `lease_id` may end, if a client recorded
/// an acknowledged send for it: (send, TTL ms, send + TTL × (1 − ρ)).
fn earliest_end(h: &History, lease_id: u64) -> Option<(Duration, u64, Duration)> {
    let (send, ttl_ms) = h.last_ack_send.get(&lease_id).copied()?;
    // ρ = 1 %.
    Some((
        send,
        ttl_ms,
        send + Duration::from_millis(ttl_ms * 99 / 100),
    ))
}

/// Whether real time `at` is before `earliest` by more than the tick.
fn early(at: Duration, earliest: Duration) -> bool {
    at + Duration::from_millis(2) < earliest
}

impl Checker for NoEarlyExpiry {
    fn property(&self) -> &'static str {
        PROPERTY
    }

    fn on_entry(&mut self, e: &Entry<'_>, h: &mut History) {
        let now_ms = e.table.now_ms();
        let mut found = Vec::new();
        for lease in e.table.leases() {
            let id = lease.lease_id;
            if e.table.lease_live_at(id, now_ms) {
                continue;
            }
            let Some((send, ttl_ms, earliest)) = earliest_end(h, id) else {
                continue;
            };
            if early(e.at, earliest) && self.reported.insert((e.node_id, id, send)) {
                found.push(format!(
                    "node {} index {}: lease {id} treated as ended (cluster time {now_ms} ms, its end {} ms) {} ms after the send of its last acknowledged renew (TTL {ttl_ms} ms)",
                    e.node_id,
                    e.index,
                    e.table.lease_end_ms(lease),
                    e.at.saturating_sub(send).as_millis()
                ));
            }
        }
        for m in found {
            h.violation(PROPERTY, m);
        }
    }

    fn on_effect(&mut self, e: &Entry<'_>, effect: &Effect, h: &mut History) -> Next {
        let (lease_id, what) = match effect {
            Effect::LeaseEnded {
                lease_id,
                reason: LeaseEndReason::Expired,
            } => (*lease_id, "expired".to_string()),
            Effect::Freed {
                lease_id,
                resource,
                reason: FreeReason::Expired,
                ..
            } => (*lease_id, format!("lost {resource} by expiry")),
            _ => return Next::Continue,
        };
        if let Some((send, ttl_ms, earliest)) = earliest_end(h, lease_id) {
            if early(e.at, earliest) {
                h.violation(
                    PROPERTY,
                    format!(
                        "node {} index {}: lease {lease_id} {what} {} ms after the send of its last acknowledged renew (TTL {ttl_ms} ms)",
                        e.node_id,
                        e.index,
                        e.at.saturating_sub(send).as_millis()
                    ),
                );
            }
        }
        Next::Continue
    }
}
