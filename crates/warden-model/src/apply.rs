//! Apply of one committed entry: `now = max(now, at_ms)`, L4's markers, and the lease's
//! grant, renew and end, all decided by one predicate (`now` ≥ the lease's end instant).

use crate::model::ClockModel;
use crate::rule::{Bug, TTL};
use crate::state::{Applied, Entry, Kind, Lease, Marker, Renewal};

/// The instant at which `lease` ends under `applied`'s markers: its `expires_at`, raised to the
/// current marker's `no_expiry_before` when its last grant or renew came after the previous
/// marker (L4). `None` unless the lease is live.
pub fn end_instant(applied: &Applied) -> Option<u32> {
    let Lease::Live {
        expires_at,
        renewal,
        ..
    } = applied.lease
    else {
        return None;
    };
    let after_previous = applied
        .previous_marker
        .is_none_or(|m| renewal.index > m.index);
    Some(if after_previous {
        expires_at.max(applied.marker.no_expiry_before)
    } else {
        expires_at
    })
}

/// Whether L4 covers the live lease now: renewed after the previous marker and before the
/// current one, so the current leader is the first after its last renew.
fn l4_covers(applied: &Applied) -> bool {
    let Lease::Live { renewal, .. } = applied.lease else {
        return false;
    };
    let after_previous = applied
        .previous_marker
        .is_none_or(|m| renewal.index > m.index);
    after_previous && renewal.index < applied.marker.index
}

fn end(applied: &mut Applied, t: u32) {
    if let Lease::Live { sent, .. } = applied.lease {
        let l4_started = l4_covers(applied).then_some(applied.marker.started);
        applied.lease = Lease::Ended {
            at: t,
            sent,
            l4_started,
        };
    }
}

impl ClockModel {
    /// Applies `entry`, at log `index`, committed at `(real time, the committing leader's term,
    /// elections so far)`.
    pub(crate) fn apply(&self, applied: &mut Applied, index: u8, entry: Entry, at: (u32, u8, u8)) {
        let (t, term, elections) = at;
        applied.now = if self.rule.has(Bug::NowBackwards) {
            entry.at
        } else {
            applied.now.max(entry.at)
        };
        let base = if self.rule.has(Bug::InstantFromStamp) {
            entry.at
        } else {
            applied.now
        };
        let renewal = Renewal {
            index,
            term,
            real: t,
            now: applied.now,
            elections,
        };
        match entry.kind {
            Kind::Marker {
                no_expiry_before,
                started,
            } => {
                applied.previous_marker = Some(applied.marker);
                applied.marker = Marker {
                    index,
                    no_expiry_before,
                    started,
                };
            }
            Kind::Tick => {}
            Kind::Renew { sent } => match applied.lease {
                Lease::Absent => {
                    applied.lease = Lease::Live {
                        expires_at: base + TTL,
                        sent,
                        renewal,
                        amnesic_election: false,
                    };
                }
                Lease::Live { sent: before, .. } => {
                    if end_instant(applied).is_some_and(|end| applied.now >= end) {
                        // A renew of an ended lease is NotFound: it ends here, unrenewed.
                        end(applied, t);
                        return;
                    }
                    applied.lease = Lease::Live {
                        expires_at: base + TTL,
                        sent: sent.max(before),
                        renewal,
                        amnesic_election: false,
                    };
                }
                Lease::Ended { .. } => {}
            },
        }
        if end_instant(applied).is_some_and(|end| applied.now >= end) {
            end(applied, t);
        }
    }
}
