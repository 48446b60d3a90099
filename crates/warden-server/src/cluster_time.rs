//! The cluster clock (docs/semantics.md "Time"): how a leader reads cluster
//! time to stamp entries, and how cluster time is carried through
//! elections.
//!
//! * A leader's clock is `B + (mono_now − m_B)`, where at each start of
//!   leadership `B` is the largest of: every stamp its log has held
//!   (uncommitted ones included, [`crate::store::MaxStamp`]), the snapshot's
//!   `now` (also in `MaxStamp`), and the cluster time it last heard from a
//!   leader plus its own elapsed time since then divided by `1 + ρ`; `m_B`
//!   is its monotonic clock (CLOCK_BOOTTIME) then. Both live in memory only.
//! * A leader sends its cluster time with every AppendEntries, heartbeats
//!   included (`raft::cluster_time_wire`); a node keeps what it heard from
//!   an accepted call of the newest term it has heard from (the largest
//!   within that term; a newer term's replaces it), with its own clock at
//!   receipt ([`ClusterClock::heard`]). So cluster time keeps running while
//!   a new leader is elected.
//! * A heard time counts towards `B` only when its term is at least the
//!   newest term whose stamps the log holds: a time heard from an older
//!   leader's lineage may run ahead of the lineage the log continues, and
//!   taking it would let cluster time jump across a leader change (the
//!   model check's counterexample, docs/testing.md).
//!
//! No two nodes' clocks are ever compared: a heard time is only ever added
//! to a duration measured on the hearing node's own clock, scaled down by
//! the rate bound.

use std::sync::Mutex;
use std::time::Duration;

use warden_core::types::LeaderId;

/// The bound on a clock's rate error, as parts per million: ρ = 1 %.
pub const RHO_PPM: u64 = 10_000;

/// `elapsed / (1 + ρ)`, rounded down, in milliseconds.
pub fn scaled_down_ms(elapsed: Duration) -> u64 {
    let ms = u128::from(u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX));
    let scaled = ms * 1_000_000 / (1_000_000 + u128::from(RHO_PPM));
    u64::try_from(scaled).unwrap_or(u64::MAX)
}

#[derive(Debug, Default, Clone, Copy)]
struct Inner {
    /// `(leader, B, m_B)` while this node leads with a base.
    base: Option<(LeaderId, u64, Duration)>,
    /// The cluster time heard from the newest term's leader (the largest
    /// within that term), the term, and this node's clock when it was heard.
    heard: Option<(u64, u64, Duration)>,
}

/// One node's view of cluster time. Node-local, in memory only.
#[derive(Debug, Default)]
pub struct ClusterClock {
    inner: Mutex<Inner>,
}

impl ClusterClock {
    /// Records cluster time `at_ms` heard from the leader of `term` in an
    /// accepted call, at this node's clock reading `mono`: a newer term's
    /// replaces what was heard; within one term the largest is kept; an
    /// older term's is ignored.
    pub fn heard(&self, at_ms: u64, term: u64, mono: Duration) {
        if let Ok(mut g) = self.inner.lock() {
            let newer = match g.heard {
                None => true,
                Some((h, t, _)) => term > t || (term == t && at_ms > h),
            };
            if newer {
                g.heard = Some((at_ms, term, mono));
            }
        }
    }

    /// Starts leadership at this node's clock reading `mono`: `B` is the
    /// largest of `max_stamp` (every stamp in the log, the snapshot's
    /// `now`) and, when it was heard from a term at least `log_term` (the
    /// newest term whose stamps the log holds), the heard time advanced by
    /// the elapsed time scaled down by `1 + ρ`. Returns `B`.
    pub fn start_leading(
        &self,
        leader: LeaderId,
        max_stamp: u64,
        log_term: u64,
        mono: Duration,
    ) -> u64 {
        let Ok(mut g) = self.inner.lock() else {
            return max_stamp;
        };
        let heard = g
            .heard
            .filter(|(_, term, _)| *term >= log_term)
            .map(|(h, _, at)| h.saturating_add(scaled_down_ms(mono.saturating_sub(at))))
            .unwrap_or(0);
        let base = max_stamp.max(heard);
        g.base = Some((leader, base, mono));
        base
    }

    /// Sets the base to exactly `base` at `mono` (the simulator's
    /// `leader-base-from-own-clock` switch; production never calls it).
    pub fn set_base(&self, leader: LeaderId, base: u64, mono: Duration) {
        if let Ok(mut g) = self.inner.lock() {
            g.base = Some((leader, base, mono));
        }
    }

    /// Leadership ended: no more stamps until the next start.
    pub fn stop_leading(&self) {
        if let Ok(mut g) = self.inner.lock() {
            g.base = None;
        }
    }

    /// This node's base `B` while it leads as `leader`.
    pub fn base(&self, leader: LeaderId) -> Option<u64> {
        let g = self.inner.lock().ok()?;
        g.base.filter(|(l, _, _)| *l == leader).map(|(_, b, _)| b)
    }

    /// Cluster time now, in milliseconds rounded down, while this node
    /// leads as `leader` with a base: `B + (mono − m_B)`.
    pub fn now_ms(&self, leader: LeaderId, mono: Duration) -> Option<u64> {
        let g = self.inner.lock().ok()?;
        let (l, base, m_b) = g.base?;
        if l != leader {
            return None;
        }
        let elapsed = u64::try_from(mono.saturating_sub(m_b).as_millis()).unwrap_or(u64::MAX);
        Some(base.saturating_add(elapsed))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // "Time": a new leader's base is the largest of its log's stamps and
    // the heard time plus its own elapsed time / (1 + ρ); never its own
    // clock's absolute reading, and its clock then runs at its own rate.
    #[test]
    fn a_leader_starts_from_the_larger_of_its_log_and_the_heard_time() {
        let c = ClusterClock::default();
        let l = LeaderId {
            term: 3,
            node_id: 1,
        };
        assert_eq!(
            c.now_ms(l, Duration::from_secs(5)),
            None,
            "no base before leading"
        );
        c.heard(10_000, 2, Duration::from_secs(100));
        // Smaller, same term: ignored; an older term's: ignored.
        c.heard(9_000, 2, Duration::from_secs(101));
        c.heard(12_000, 1, Duration::from_secs(101));
        // 1,010 ms later on this node's clock: 1,000 ms scaled by 1 + ρ.
        let b = c.start_leading(l, 10_500, 2, Duration::from_millis(101_010));
        assert_eq!(b, 11_000);
        assert_eq!(c.now_ms(l, Duration::from_millis(101_510)), Some(11_500));
        let other = LeaderId {
            term: 4,
            node_id: 1,
        };
        assert_eq!(c.now_ms(other, Duration::from_millis(101_510)), None);
        // A log stamp above the heard time wins.
        let b = c.start_leading(l, 20_000, 2, Duration::from_millis(101_010));
        assert_eq!(b, 20_000);
        // A time heard from a term older than the log's newest stamped term
        // is another lineage's: not used (the model check's counterexample).
        let b = c.start_leading(l, 10_500, 3, Duration::from_millis(101_010));
        assert_eq!(b, 10_500);
        // A newer term's heard time replaces an older term's, even a smaller one.
        c.heard(4_000, 3, Duration::from_secs(102));
        let b = c.start_leading(l, 3_000, 3, Duration::from_millis(102_000));
        assert_eq!(b, 4_000);
        c.stop_leading();
        assert_eq!(c.now_ms(l, Duration::from_millis(101_510)), None);
    }
}
