//! The replicated duty clock (docs/semantics.md "Checkpoints"): how much
//! time has certainly passed since a log index, without naming each lease,
//! wait and lock-delay in the log.
//!
//! The leader commits a [`crate::types::AdvanceClock`] entry every quarter
//! of the checkpoint interval. Each carries the milliseconds the proposer
//! measured since the clock's last advance (exactly, between two of its own
//! measurements; from its own append stamp of the last advance when another
//! leader made it, which is later than that leader's measurement; 0 for the
//! first advance ever) and names that advance, and applies only if it is
//! still the last, so the clock never runs ahead of real time. The
//! table keeps the clock value after each advance of the last hour, by the
//! advance's log index.
//!
//! A lease's `remaining_ms` is its remaining TTL as of its `last_index`; a
//! waiter's `remaining_wait_ms` as of its enqueue index; a lock-delay's
//! `remaining_ms` as of its start index. What is left now is that value less
//! [`DutyClock::elapsed_since`] the index, which counts from the *second*
//! advance after the index: the first advance after an entry in the log may
//! have been measured before that entry reached the leader's log (it can sit
//! in the Raft core's queue behind it), but the leader measures the next
//! advance only after the previous one applied, so the second was measured
//! after the entry. The remaining time derived this way is never shorter
//! than the truth (no early expiry on a node that loads it, S4), and it is
//! at most about three advance periods (within one checkpoint interval)
//! longer than the truth (L2's checkpoint term of E).
//!
//! Advances older than [`CLOCK_WINDOW_MS`] are dropped, keeping one: an
//! index older than every kept advance counts from the oldest kept second
//! advance, which is at least the window ago, more than any TTL, wait or
//! lock-delay can be.

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};

use crate::limits::{MAX_TTL_MS, MAX_WAIT_TIMEOUT_MS};
use crate::types::LogIndex;

/// How far back the clock keeps its advances: the longest TTL or wait
/// (1 h) and one minute more.
pub const CLOCK_WINDOW_MS: u64 = max_u64(MAX_TTL_MS, MAX_WAIT_TIMEOUT_MS) + 60_000;

/// The most one advance may add; a larger `elapsed_ms` adds this (a clock
/// that runs slow only lengthens what a loading node derives, never
/// shortens it).
pub const MAX_CLOCK_ADVANCE_MS: u64 = CLOCK_WINDOW_MS;

const fn max_u64(a: u64, b: u64) -> u64 {
    if a > b {
        a
    } else {
        b
    }
}

/// The clock: (log index of an advance, clock in ms after it), oldest
/// first; indexes strictly increase, clock values never decrease.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq)]
pub struct DutyClock {
    advances: VecDeque<(LogIndex, u64)>,
}

impl DutyClock {
    /// The clock now in ms (0 before the first advance).
    pub fn now_ms(&self) -> u64 {
        self.advances.back().map_or(0, |(_, c)| *c)
    }

    /// The log index of the last advance, if any.
    pub fn last_advance_index(&self) -> Option<LogIndex> {
        self.advances.back().map(|(i, _)| *i)
    }

    /// True once an advance has applied: remaining times in the table are
    /// then read through [`Self::elapsed_since`].
    pub fn is_running(&self) -> bool {
        !self.advances.is_empty()
    }

    /// Advances kept.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.advances.len()
    }

    /// Applies an advance at log `index` by `elapsed_ms`, at most
    /// [`MAX_CLOCK_ADVANCE_MS`]; drops advances older than the window,
    /// keeping enough that an index older than every kept advance still
    /// counts at least the window. A second advance at or before the last
    /// one's index (two in one packed entry) changes nothing: false.
    pub(crate) fn advance(&mut self, index: LogIndex, elapsed_ms: u64) -> bool {
        if self.last_advance_index().is_some_and(|last| last >= index) {
            return false;
        }
        let now = self
            .now_ms()
            .saturating_add(elapsed_ms.min(MAX_CLOCK_ADVANCE_MS));
        self.advances.push_back((index, now));
        while self
            .advances
            .get(2)
            .is_some_and(|(_, c)| now.saturating_sub(*c) >= CLOCK_WINDOW_MS)
        {
            self.advances.pop_front();
        }
        true
    }

    /// Milliseconds of clock since the second advance after log `index`
    /// (0 while there is none): no more than the time that passed since the
    /// entry at `index` reached the leader's log (see the module docs).
    pub fn elapsed_since(&self, index: LogIndex) -> u64 {
        let first_after = self.advances.partition_point(|(i, _)| *i <= index);
        match self.advances.get(first_after.saturating_add(1)) {
            Some((_, at)) => self.now_ms().saturating_sub(*at),
            None => 0,
        }
    }

    /// `remaining_ms` as of `index`, less the clock since then (0 once
    /// passed).
    pub fn remaining_now(&self, remaining_ms: u64, index: LogIndex) -> u64 {
        remaining_ms.saturating_sub(self.elapsed_since(index))
    }

    /// Indexes strictly increase and clock values never decrease.
    pub(crate) fn check(&self) -> Result<(), String> {
        for (a, b) in self.advances.iter().zip(self.advances.iter().skip(1)) {
            if a.0 >= b.0 || a.1 > b.1 {
                return Err(format!(
                    "duty clock advances out of order: {a:?} before {b:?}"
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // docs/semantics.md "Checkpoints": an entry counts from the second
    // advance after it, so an advance measured before the entry reached the
    // log never shortens what the entry has left (S4).
    #[test]
    fn elapsed_counts_from_the_second_advance_after_the_index() {
        let mut c = DutyClock::default();
        assert_eq!(c.elapsed_since(5), 0, "no clock: nothing has passed");
        c.advance(10, 0);
        c.advance(20, 300);
        c.advance(30, 300);
        c.advance(40, 350);
        assert_eq!(c.now_ms(), 950);
        // Index 12: the first advance after it is 20, the second 30 (600).
        assert_eq!(c.elapsed_since(12), 350);
        // Index 20 itself: first after is 30, second 40.
        assert_eq!(c.elapsed_since(20), 0);
        assert_eq!(c.elapsed_since(35), 0, "one advance after it: nothing yet");
        assert_eq!(c.elapsed_since(0), 950 - 300);
        assert_eq!(c.remaining_now(1_000, 12), 650);
        assert_eq!(c.remaining_now(100, 12), 0, "saturates at 0");
        c.check().expect("ordered");
    }

    // The window: advances older than an hour go, but an index older than
    // every kept advance still counts at least the window, so a lease that
    // has not renewed for longer than any TTL derives nothing left.
    #[test]
    fn old_advances_go_but_old_indexes_still_count_the_window() {
        let mut c = DutyClock::default();
        let step = 1_000;
        let n = CLOCK_WINDOW_MS / step + 50;
        for k in 1..=n {
            c.advance(k * 10, step);
        }
        assert!(c.len() < usize::try_from(n).expect("fits"));
        assert!(c.len() >= usize::try_from(CLOCK_WINDOW_MS / step).expect("fits"));
        assert!(c.elapsed_since(1) >= CLOCK_WINDOW_MS);
        assert_eq!(c.remaining_now(MAX_TTL_MS, 1), 0);
        c.check().expect("ordered");
    }

    // A huge advance is capped, so a leader's bad measurement cannot
    // wipe out every remaining time at once; an advance that does not come
    // after the last one changes nothing (apply never panics on any log).
    #[test]
    fn one_advance_adds_at_most_the_cap() {
        let mut c = DutyClock::default();
        assert!(c.advance(1, u64::MAX));
        assert!(c.advance(2, u64::MAX));
        assert_eq!(c.now_ms(), 2 * MAX_CLOCK_ADVANCE_MS);
        // Two advances at one index (a packed entry): the second is ignored.
        assert!(!c.advance(2, 5));
        assert!(!c.advance(1, 5));
        assert_eq!(c.now_ms(), 2 * MAX_CLOCK_ADVANCE_MS);
    }
}
