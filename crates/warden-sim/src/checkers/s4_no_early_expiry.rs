//! S4 no early expiry (docs/semantics.md S4): the service never expires a
//! lease earlier than TTL × (1 − ρ) after the send of its last acknowledged
//! renew (or acquire). Checked at every apply that ends a lease by expiry,
//! against the global send time the client recorded (2 ms of slack for the
//! simulator's tick).
//!
//! The same bound for what a node that loads the table would start from
//! (docs/semantics.md "Checkpoints"): at every duty-clock advance its own
//! leader applies, each lease's remaining time derived from the clock,
//! counted from the apply, reaches at least TTL × (1 − ρ) past the send of
//! its last acknowledged renew. On the advance's own leader every
//! acknowledged renew has applied (an acknowledgement follows the commit,
//! and a leader applies every committed entry before its own).

use std::time::Duration;

use warden_core::{Effect, LeaseEndReason};

use super::checker::{Checker, Entry, Next};
use crate::world::History;

const PROPERTY: &str = "S4";

/// See the module docs.
#[derive(Debug)]
pub struct NoEarlyExpiry;

impl Checker for NoEarlyExpiry {
    fn property(&self) -> &'static str {
        PROPERTY
    }

    fn on_effect(&mut self, e: &Entry<'_>, effect: &Effect, h: &mut History) -> Next {
        if let Effect::ClockAdvanced { index } = effect {
            if e.log_leader.node_id == e.node_id {
                derived_no_shorter(e, *index, h);
            }
            return Next::Continue;
        }
        let Effect::LeaseEnded {
            lease_id,
            reason: LeaseEndReason::Expired,
        } = effect
        else {
            return Next::Continue;
        };
        if let Some((send, ttl_ms)) = h.last_ack_send.get(lease_id).copied() {
            // ρ = 1 %.
            let min_life = Duration::from_millis(ttl_ms * 99 / 100);
            if e.at + Duration::from_millis(2) < send + min_life {
                h.violation(
                    PROPERTY,
                    format!(
                        "node {} index {}: lease {lease_id} expired {} ms after the send of its last acknowledged renew (TTL {ttl_ms} ms)",
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

/// The derived half of the module docs: every live lease's remaining time
/// on the duty clock after the advance at `index`.
fn derived_no_shorter(e: &Entry<'_>, index: u64, h: &mut History) {
    for lease in e.table.leases() {
        let Some((send, ttl_ms)) = h.last_ack_send.get(&lease.lease_id).copied() else {
            continue;
        };
        let derived = Duration::from_millis(e.table.lease_remaining_ms(lease));
        let min_life = Duration::from_millis(ttl_ms * 99 / 100);
        if e.at + derived + Duration::from_millis(2) < send + min_life {
            let id = lease.lease_id;
            h.violation(
                PROPERTY,
                format!(
                    "node {} index {index}: lease {id} derives {} ms left from the duty clock {} ms after the send of its last acknowledged renew (TTL {ttl_ms} ms)",
                    e.node_id,
                    derived.as_millis(),
                    e.at.saturating_sub(send).as_millis()
                ),
            );
        }
    }
}
