//! Which outcome records have stood still for the idle timeout (S7), found
//! a slice at a time (the leader's `DropClients` duty).
//!
//! The leader remembers, for each record it has seen, the record's
//! `last_index` and when this leader first saw that `last_index` on its own
//! clock (node-local, never replicated: a new leader starts afresh). A
//! record whose `last_index` has not moved for the idle timeout is named in
//! a `DropClients` entry.
//!
//! The walk visits at most [`CLIENTS_PER_SLICE`] records per duty tick,
//! resuming after the last record it visited, so the machine lock is never
//! held for a walk of every client: with 100,000 one-shot clients a walk of
//! the whole table every second held it for tens of milliseconds, and every
//! client entry waited behind it (docs/performance.md, "Idle clients a slice
//! at a time"). A record is first seen at most one pass late, so it is
//! dropped later than its idle timeout, never earlier.

use std::collections::{BTreeMap, BTreeSet};
use std::ops::Bound::{Excluded, Unbounded};
use std::sync::Arc;
use std::time::Duration;

use warden_core::ClientView;

/// A client's outcome record is dropped after this long without a request
/// (S7): 10 minutes. Clients never retry a request for longer than this.
pub const CLIENT_IDLE_TIMEOUT_MS: u64 = 600_000;

/// Most outcome records one slice visits: with the 50 ms duty tick, a pass
/// over 100,000 records takes about 5 s, against a 10-minute idle timeout.
pub const CLIENTS_PER_SLICE: usize = 1_024;

/// A record's key in the walk's order: (principal, `""` for the records of
/// unwrapped and anonymous commands; a principal is never empty), client id.
type Key = (Arc<str>, u64);

/// The leader's walk over the outcome records: what it has seen of each and
/// where the next slice starts.
#[derive(Debug, Default)]
pub struct IdleClients {
    /// Each record seen: (its `last_index`, when this leader first saw that
    /// `last_index`).
    seen: BTreeMap<Key, (u64, Duration)>,
    /// The last record the walk visited; None: the next slice starts at the
    /// first record.
    cursor: Option<Key>,
}

impl IdleClients {
    /// Forgets everything: a leader that lost office starts afresh.
    pub fn clear(&mut self) {
        self.seen.clear();
        self.cursor = None;
    }

    /// Where the next slice starts, as
    /// [`warden_core::LockTable::client_records_after`] takes it.
    pub fn after(&self) -> Option<(Option<&str>, u64)> {
        self.cursor
            .as_ref()
            .map(|(p, c)| ((!p.is_empty()).then_some(&**p), *c))
    }

    /// Visits `records` (the records after [`Self::after`], in order) up to
    /// [`CLIENTS_PER_SLICE`] of them, at `now` on this leader's clock, and
    /// returns the idle ones as `DropClients` names them: `(client id,
    /// last_index)`, each pair once. Records gone since the last pass leave
    /// the walk's memory as it passes where they were; a slice that reaches
    /// the end of the records ends the pass.
    pub fn slice<'a>(
        &mut self,
        records: impl Iterator<Item = ClientView<'a>>,
        now: Duration,
        idle_timeout: Duration,
    ) -> Vec<(u64, u64)> {
        let mut idle = BTreeSet::new();
        let mut visited = 0;
        let mut principal: Arc<str> = Arc::from("");
        for r in records.take(CLIENTS_PER_SLICE) {
            let name = r.principal.unwrap_or("");
            if *principal != *name {
                principal = Arc::from(name);
            }
            let key: Key = (principal.clone(), r.client_id);
            self.forget_before(&key);
            let since = match self.seen.get(&key) {
                Some((last_index, since)) if *last_index == r.last_index => *since,
                _ => now,
            };
            if now.saturating_sub(since) >= idle_timeout {
                idle.insert((r.client_id, r.last_index));
            }
            self.seen.insert(key.clone(), (r.last_index, since));
            self.cursor = Some(key);
            visited += 1;
        }
        if visited < CLIENTS_PER_SLICE {
            // The end of the records: whatever is remembered past the last
            // one visited is gone; the next pass starts at the first.
            let gone: Vec<Key> = match &self.cursor {
                Some(last) => self
                    .seen
                    .range((Excluded(last), Unbounded))
                    .map(|(k, _)| k.clone())
                    .collect(),
                None => self.seen.keys().cloned().collect(),
            };
            for k in gone {
                self.seen.remove(&k);
            }
            self.cursor = None;
        }
        self.check_invariants();
        idle.into_iter().collect()
    }

    /// Forgets the records remembered between the cursor and `key` (both
    /// excluded): the walk passed their place and they were not there.
    fn forget_before(&mut self, key: &Key) {
        let lower = match &self.cursor {
            Some(c) => Excluded(c),
            None => Unbounded,
        };
        let gone: Vec<Key> = self
            .seen
            .range((lower, Excluded(key)))
            .map(|(k, _)| k.clone())
            .collect();
        for k in gone {
            self.seen.remove(&k);
        }
    }

    /// The cursor, when set, is a record the walk remembers.
    fn check_invariants(&self) {
        debug_assert!(self
            .cursor
            .as_ref()
            .is_none_or(|c| self.seen.contains_key(c)));
    }

    /// How many records the walk remembers.
    #[cfg(test)]
    pub fn remembered(&self) -> usize {
        self.seen.len()
    }
}

#[cfg(test)]
mod tests {
    //! S7: a client's record is dropped only after it stood still for the
    //! whole idle timeout on this leader's clock, and the walk that finds
    //! it visits a bounded slice of the records at a time.

    use super::*;

    fn record(principal: Option<&str>, client_id: u64, last_index: u64) -> ClientView<'_> {
        ClientView {
            principal,
            client_id,
            last_index,
        }
    }

    /// The records after the walk's cursor (`records` sorted as the table
    /// sorts them), as `LockTable::client_records_after` gives them.
    fn rest<'a>(walk: &IdleClients, records: &[ClientView<'a>]) -> Vec<ClientView<'a>> {
        let key = |p: Option<&str>, c: u64| (p.unwrap_or("").to_owned(), c);
        let after = walk.after().map(|(p, c)| key(p, c));
        records
            .iter()
            .copied()
            .filter(|r| {
                after
                    .as_ref()
                    .is_none_or(|a| key(r.principal, r.client_id) > *a)
            })
            .collect()
    }

    /// Runs a whole pass over `records` at `now`: every slice until the
    /// walk wraps; the idle pairs found.
    fn pass(walk: &mut IdleClients, records: &[ClientView<'_>], now: Duration) -> Vec<(u64, u64)> {
        let mut idle = Vec::new();
        loop {
            let rest = rest(walk, records);
            idle.extend(walk.slice(rest.into_iter(), now, Duration::from_secs(600)));
            if walk.after().is_none() {
                return idle;
            }
        }
    }

    // S7: a record is idle only after a whole timeout without a move; a
    // move (a new last_index) restarts its clock; a dropped record leaves
    // the walk's memory.
    #[test]
    fn a_record_is_idle_after_the_whole_timeout_and_a_move_restarts_it() {
        let t = Duration::from_secs;
        let mut walk = IdleClients::default();
        let first = [record(None, 1, 10), record(None, 2, 20)];
        assert!(pass(&mut walk, &first, t(0)).is_empty());
        assert!(pass(&mut walk, &first, t(599)).is_empty());
        let moved = [record(None, 1, 10), record(None, 2, 30)];
        assert!(pass(&mut walk, &moved, t(300)).is_empty());
        assert_eq!(pass(&mut walk, &moved, t(600)), vec![(1, 10)]);
        // Client 1's record was dropped: the walk forgets it.
        let after_drop = [record(None, 2, 30)];
        assert!(pass(&mut walk, &after_drop, t(899)).is_empty());
        assert_eq!(walk.remembered(), 1);
        assert_eq!(pass(&mut walk, &after_drop, t(900)), vec![(2, 30)]);
    }

    // S7 with identities: every principal's records are tracked on their
    // own, so alice's idle record is dropped while bob's record of the same
    // client id, touched later, stays; an id idle under two keys with one
    // last_index is named once.
    #[test]
    fn records_are_tracked_per_principal() {
        let t = Duration::from_secs;
        let mut walk = IdleClients::default();
        let first = [
            record(None, 7, 10),
            record(Some("alice"), 7, 10),
            record(Some("bob"), 7, 10),
            record(Some("mallory"), 9, 12),
        ];
        assert!(pass(&mut walk, &first, t(0)).is_empty());
        let later = [
            record(None, 7, 10),
            record(Some("alice"), 7, 10),
            record(Some("bob"), 7, 40),
            record(Some("mallory"), 9, 12),
        ];
        assert!(pass(&mut walk, &later, t(100)).is_empty());
        assert_eq!(pass(&mut walk, &later, t(600)), vec![(7, 10), (9, 12)]);
        let only_bob = [record(Some("bob"), 7, 40)];
        assert!(pass(&mut walk, &only_bob, t(699)).is_empty());
        assert_eq!(walk.remembered(), 1, "the dropped records are forgotten");
        assert_eq!(pass(&mut walk, &only_bob, t(700)), vec![(7, 40)]);
    }

    // The bound: a slice visits at most CLIENTS_PER_SLICE records, the next
    // resumes after the last one, and a pass over 2.5 slices' worth of
    // records takes three slices; records removed in the middle of the
    // table meanwhile are forgotten when the walk passes their place.
    #[test]
    fn a_slice_visits_a_bounded_number_and_the_next_resumes_after_it() {
        let t = Duration::from_secs;
        let n = CLIENTS_PER_SLICE as u64 * 5 / 2;
        let names = ["", "alice"];
        let all: Vec<ClientView<'_>> = names
            .iter()
            .flat_map(|p| (1..=n / 2).map(move |c| record((!p.is_empty()).then_some(*p), c, c)))
            .collect();
        let mut walk = IdleClients::default();
        let mut slices = 0;
        loop {
            let rest = rest(&walk, &all);
            assert!(walk.slice(rest.into_iter(), t(0), t(600)).is_empty());
            slices += 1;
            if walk.after().is_none() {
                break;
            }
            assert_eq!(walk.remembered(), slices * CLIENTS_PER_SLICE);
        }
        assert_eq!(slices, 3);
        assert_eq!(walk.remembered(), all.len());
        // Every even client id of alice is dropped: the next pass forgets
        // them, and finds the rest idle at the timeout.
        let kept: Vec<_> = all
            .iter()
            .copied()
            .filter(|r| r.principal.is_none() || r.client_id % 2 == 1)
            .collect();
        // (A pair idle under two principals may be named by two slices:
        // the second `DropClients` finds nothing left to drop.)
        let idle: BTreeSet<(u64, u64)> = pass(&mut walk, &kept, t(600)).into_iter().collect();
        assert_eq!(walk.remembered(), kept.len());
        let expected: BTreeSet<(u64, u64)> =
            kept.iter().map(|r| (r.client_id, r.last_index)).collect();
        assert_eq!(idle, expected);
    }

    // A cursor past every record (they were all dropped) ends the pass
    // and forgets them all.
    #[test]
    fn an_empty_table_ends_the_pass_and_forgets_everything() {
        let t = Duration::from_secs;
        let mut walk = IdleClients::default();
        assert!(pass(&mut walk, &[record(None, 3, 5)], t(0)).is_empty());
        assert_eq!(walk.remembered(), 1);
        assert!(walk.slice(std::iter::empty(), t(1), t(600)).is_empty());
        assert_eq!(walk.remembered(), 0);
        assert_eq!(walk.after(), None);
    }
}
