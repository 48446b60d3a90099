//! S4 no early expiry (docs/semantics.md S4): the service never expires a
//! lease earlier than TTL × (1 − ρ) after the send of its last acknowledged
//! renew (or acquire). Checked at every apply that ends a lease by expiry,
//! against the global send time the client recorded (2 ms of slack for the
//! simulator's tick).

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
