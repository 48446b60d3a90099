//! L2 bounded extension (docs/semantics.md L2): over any number of leader
//! changes, a lease whose last renew was committed at r is ended (an apply
//! ends it: `LeaseEnded`) by r + (TTL + E) / (1 − ρ), plus the time without
//! a quorum (which the prober measures) and a scheduling slack. E is
//! `Timing::bound_e_ms` (G + the longest election timeout + the duty
//! interval + a heartbeat); the division by 1 − ρ is the clock drift: cluster
//! time runs at no less than 1 − ρ of real time, on a leader's clock and,
//! through the heard time, across elections. r is bounded by the end of the
//! lease's last acquire or renew call, acknowledged or not (a failed call
//! may still have committed). Checked at the end of the run.

use std::time::Duration;

use super::checker::Checker;
use crate::world::History;

const PROPERTY: &str = "L2";

/// See the module docs.
#[derive(Debug)]
pub struct BoundedExtension {
    /// E (ms).
    e_ms: u64,
    /// Scheduling slack (ms).
    slack_ms: u64,
}

impl BoundedExtension {
    /// With E = `e_ms` and `slack_ms` of slack.
    pub fn new(e_ms: u64, slack_ms: u64) -> Self {
        BoundedExtension { e_ms, slack_ms }
    }
}

impl Checker for BoundedExtension {
    fn property(&self) -> &'static str {
        PROPERTY
    }

    fn at_end(&mut self, h: &mut History) {
        let mut found = Vec::new();
        let end_of_run = h.ended_at;
        for (lease, (send, ttl_ms)) in &h.last_call_end {
            // ρ = 1 %: (TTL + E) / (1 − ρ), rounded up.
            let drifted = ((ttl_ms + self.e_ms) * 100).div_ceil(99);
            let bound0 = *send + Duration::from_millis(drifted + self.slack_ms);
            let ended = h.lease_end.get(lease).map(|(_, at)| *at);
            let upto = ended.unwrap_or(end_of_run);
            let leaderless: Duration = h
                .leaderless
                .iter()
                .map(|(a, b)| (*b).min(upto).saturating_sub((*a).max(*send)))
                .sum();
            let bound = bound0 + leaderless;
            // A lease still renewed by a live holder is not in question: its
            // last call is its latest renew.
            if upto > bound && (ended.is_some() || end_of_run > bound) {
                found.push(format!(
                    "lease {lease} (TTL {ttl_ms} ms, last renew call ended at {send:?}) still live at {upto:?}, past the bound {bound:?}"
                ));
            }
        }
        for m in found {
            h.violation(PROPERTY, m);
        }
    }
}
