//! The node-local event log behind the `warden.v1.Watch` service.
//!
//! [`EventLog`] is fed by the state machine at apply time
//! (the store's state machine hands it `(index, &effects)` for every
//! applied command): the [`warden_core::Effect`]s that matter to a watcher
//! become [`Event`]s (granted, released, expired, revoked, queued, cancelled,
//! forced, lock_delay_ended). The log is **node-local and not replicated**:
//! every replica applies the same committed entries, so every node derives the
//! same events, but a follower may lag the leader.
//!
//! It keeps the last [`DEFAULT_WINDOW`] (100,000) events in memory. The window
//! is described by its *floor*, the oldest retained index: every event of every
//! entry at or above the floor is retained. Entries applied before this process
//! started (loaded from a snapshot) or covered by an installed snapshot were
//! never seen, so the floor starts at the first index this process applies and
//! jumps past a snapshot install. When the window is full, the oldest entries'
//! events are dropped whole (never half an entry) and the floor moves past
//! them.
//!
//! # The stream
//!
//! A subscriber holds a cursor (the next index to deliver). It first replays
//! retained events at or above `start_index` that match its resource or
//! prefix, then follows live ones as they are recorded, in commit order, each
//! exactly once: the cursor only moves forward, past every index it has read.
//! A `start_index` below the floor, or a subscriber so slow that the window
//! moves past its cursor, gets `OutOfRange` with a message starting
//! `compacted` that names the oldest retained index (also in the
//! `warden-oldest-index` metadata); it may resume from that index and accept
//! the gap, or rebuild its view with a linearizable read.

use std::collections::VecDeque;
use std::sync::Mutex;

use tokio::sync::watch;
use warden_core::effect::{Effect, FreeReason, WaiterRemovedReason};

/// How many events each node keeps for replay by default (about 100 bytes
/// plus the resource name each).
pub const DEFAULT_WINDOW: usize = 100_000;

/// At most this many retained events are scanned per lock of the log (a
/// subscriber catching up reads the window in slices).
const READ_SLICE: usize = 4_096;

/// What happened to a resource.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventKind {
    /// A lease became the holder (`Effect::Granted`).
    Granted,
    /// The holder released it.
    Released,
    /// The holder's lease expired.
    Expired,
    /// The holder's lease was revoked.
    Revoked,
    /// A waiter was enqueued.
    Queued,
    /// A waiter left the queue without being granted (timed out, lease ended).
    Cancelled,
    /// A `ForceRelease` took it from its holder.
    Forced,
    /// A lock-delay ended; the resource may be granted again.
    LockDelayEnded,
    /// A lease published a value on the resource (elections: a candidate's
    /// value, token 0, or the leader's, with its token).
    Proclaimed,
    /// The grant's max-hold ran out (docs/semantics.md "Max-hold").
    MaxHold,
}

impl EventKind {
    /// The wire and CLI name.
    pub fn as_str(self) -> &'static str {
        match self {
            EventKind::Granted => "granted",
            EventKind::Released => "released",
            EventKind::Expired => "expired",
            EventKind::Revoked => "revoked",
            EventKind::Queued => "queued",
            EventKind::Cancelled => "cancelled",
            EventKind::Forced => "forced",
            EventKind::LockDelayEnded => "lock_delay_ended",
            EventKind::Proclaimed => "proclaimed",
            EventKind::MaxHold => "max_hold",
        }
    }
}

/// One event, as streamed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Event {
    /// Log index of the entry that made it.
    pub index: u64,
    /// The resource.
    pub resource: String,
    /// What happened.
    pub kind: EventKind,
    /// The lease concerned; 0 when none.
    pub lease_id: u64,
    /// The grant's token (granted) or the ended grant's (freed); 0 otherwise.
    pub fencing_token: u64,
}

impl Event {
    /// The event a watcher sees for `effect`, if any.
    pub fn from_effect(index: u64, effect: &Effect) -> Option<Event> {
        let ev = |resource: &String, kind, lease_id, fencing_token| Event {
            index,
            resource: resource.clone(),
            kind,
            lease_id,
            fencing_token,
        };
        match effect {
            Effect::Granted {
                resource,
                lease_id,
                fencing_token,
                ..
            } => Some(ev(resource, EventKind::Granted, *lease_id, *fencing_token)),
            Effect::Freed {
                resource,
                lease_id,
                fencing_token,
                reason,
                ..
            } => {
                let kind = match reason {
                    FreeReason::Released => EventKind::Released,
                    FreeReason::Expired => EventKind::Expired,
                    FreeReason::Revoked => EventKind::Revoked,
                    FreeReason::Forced => EventKind::Forced,
                    FreeReason::MaxHold => EventKind::MaxHold,
                };
                Some(ev(resource, kind, *lease_id, *fencing_token))
            }
            Effect::Queued {
                resource, lease_id, ..
            } => Some(ev(resource, EventKind::Queued, *lease_id, 0)),
            Effect::WaiterRemoved {
                resource,
                lease_id,
                reason,
                ..
            } => match reason {
                // A `Granted` event follows.
                WaiterRemovedReason::Granted => None,
                _ => Some(ev(resource, EventKind::Cancelled, *lease_id, 0)),
            },
            Effect::LockDelayEnded { resource, .. } => {
                Some(ev(resource, EventKind::LockDelayEnded, 0, 0))
            }
            Effect::Proclaimed {
                resource,
                lease_id,
                fencing_token,
            } => Some(ev(
                resource,
                EventKind::Proclaimed,
                *lease_id,
                *fencing_token,
            )),
            _ => None,
        }
    }
}

/// Which resources a subscriber wants.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Filter {
    /// Exactly this resource.
    Resource(String),
    /// Every resource whose name starts with this ("" = all).
    Prefix(String),
}

impl Filter {
    /// Whether `resource` matches.
    pub fn matches(&self, resource: &str) -> bool {
        match self {
            Filter::Resource(r) => r == resource,
            Filter::Prefix(p) => resource.starts_with(p.as_str()),
        }
    }
}

/// A start index (or a cursor) below the retained window.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Compacted {
    /// The oldest retained index.
    pub oldest: u64,
}

#[derive(Debug)]
struct Inner {
    /// Retained events, in index order (and effect order within an index).
    events: VecDeque<Event>,
    /// The oldest retained index: every event at or above it is retained.
    floor: u64,
    /// The last index recorded (or loaded/installed).
    last: u64,
    capacity: usize,
}

/// The node-local, bounded event log (see the module docs).
#[derive(Debug)]
pub struct EventLog {
    inner: Mutex<Inner>,
    /// Bumped whenever events are recorded or the window is reset.
    notify: watch::Sender<u64>,
}

impl EventLog {
    /// An empty log keeping `capacity` events (at least 1), for a state
    /// machine that has applied everything up to `applied_index` already.
    pub fn new(capacity: usize, applied_index: u64) -> EventLog {
        EventLog {
            inner: Mutex::new(Inner {
                events: VecDeque::new(),
                floor: applied_index + 1,
                last: applied_index,
                capacity: capacity.max(1),
            }),
            notify: watch::channel(applied_index).0,
        }
    }

    fn inner(&self) -> std::sync::MutexGuard<'_, Inner> {
        // The log holds no invariant a panic elsewhere could break halfway.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Records the events of the entry applied at `index` (the apply hook).
    pub fn record(&self, index: u64, effects: &[Effect]) {
        let mut pushed = false;
        {
            let mut g = self.inner();
            if index <= g.last {
                // Never re-applied in practice; keep the stream free of duplicates.
                return;
            }
            g.last = index;
            for e in effects {
                if let Some(ev) = Event::from_effect(index, e) {
                    g.events.push_back(ev);
                    pushed = true;
                }
            }
            if g.events.len() > g.capacity {
                // Drop whole entries: the floor must mean "everything at or above".
                let mut evicted = 0;
                while g.events.len() > g.capacity {
                    evicted = g.events.pop_front().map_or(evicted, |e| e.index);
                }
                while g.events.front().is_some_and(|e| e.index == evicted) {
                    g.events.pop_front();
                }
                g.floor = g.floor.max(evicted + 1);
            }
        }
        if pushed {
            self.notify.send_replace(index);
        }
    }

    /// A snapshot up to `index` was installed: nothing up to it can be replayed.
    pub fn reset(&self, index: u64) {
        {
            let mut g = self.inner();
            g.events.clear();
            g.floor = g.floor.max(index + 1);
            g.last = g.last.max(index);
        }
        self.notify.send_replace(index);
    }

    /// The oldest retained index.
    pub fn oldest_index(&self) -> u64 {
        self.inner().floor
    }

    /// The cursor for `start_index` (0 = from now), or `Compacted`.
    pub fn start(&self, start_index: u64) -> Result<u64, Compacted> {
        let g = self.inner();
        match start_index {
            0 => Ok(g.last + 1),
            i if i < g.floor => Err(Compacted { oldest: g.floor }),
            i => Ok(i),
        }
    }

    /// Reads the events matching `filter` at or above `cursor` (a slice of the
    /// window at a time, never splitting an entry) and returns them with the
    /// next cursor. `Compacted` if the window has moved past `cursor`.
    pub fn read(&self, cursor: u64, filter: &Filter) -> Result<(Vec<Event>, u64), Compacted> {
        let g = self.inner();
        if cursor < g.floor {
            return Err(Compacted { oldest: g.floor });
        }
        let from = g.events.partition_point(|e| e.index < cursor);
        let mut out = Vec::new();
        let mut next = cursor.max(g.last + 1);
        let mut prev = None;
        for (scanned, e) in g.events.range(from..).enumerate() {
            if scanned >= READ_SLICE && prev != Some(e.index) {
                next = e.index;
                break;
            }
            prev = Some(e.index);
            if filter.matches(&e.resource) {
                out.push(e.clone());
            }
        }
        Ok((out, next))
    }

    /// The newest `n` retained events matching `filter`, oldest first:
    /// read back from the newest, a slice at a time as [`EventLog::read`]
    /// (the lock is held for one slice, never splitting an entry), until
    /// `n` are found or the floor is reached.
    pub fn last_matching(&self, filter: &Filter, n: usize) -> Vec<Event> {
        let mut newest_first = Vec::new();
        // Every event below this index is still to be scanned.
        let mut below = u64::MAX;
        while newest_first.len() < n {
            let g = self.inner();
            let mut i = g.events.partition_point(|e| e.index < below);
            let mut scanned = 0;
            while i > 0 && newest_first.len() < n {
                let e = &g.events[i - 1];
                if scanned >= READ_SLICE && e.index != below {
                    break;
                }
                if filter.matches(&e.resource) {
                    newest_first.push(e.clone());
                }
                below = e.index;
                scanned += 1;
                i -= 1;
            }
            if i == 0 {
                break;
            }
        }
        newest_first.reverse();
        newest_first
    }

    /// A receiver woken whenever events are recorded or the window is reset.
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.notify.subscribe()
    }
}

#[cfg(test)]
mod tests {
    //! The window logic of [`EventLog`] (docs/semantics.md, watch: commit
    //! order, no gaps, no duplicates, `compacted` below the window).

    use super::*;
    use warden_core::effect::LeaseEndReason;

    fn granted(resource: &str, lease_id: u64, token: u64) -> Effect {
        Effect::Granted {
            resource: resource.into(),
            lease_id,
            fencing_token: token,
            grant_index: 0,
            mode: warden_core::types::Mode::Exclusive,
            slot: None,
        }
    }

    fn freed(resource: &str, lease_id: u64, token: u64) -> Effect {
        Effect::Freed {
            resource: resource.into(),
            lease_id,
            fencing_token: token,
            reason: FreeReason::Released,
            granted_at_ms: 0,
        }
    }

    fn all() -> Filter {
        Filter::Prefix(String::new())
    }

    fn indexes(events: &[Event]) -> Vec<u64> {
        events.iter().map(|e| e.index).collect()
    }

    // Watch (docs/operations.md "Watch"): each effect kind a watcher sees maps to its event name;
    // bookkeeping effects and the waiter removal that precedes a grant do not.
    #[test]
    fn effects_map_to_event_kinds() {
        let kind = |e: Effect| Event::from_effect(7, &e).map(|e| e.kind.as_str());
        assert_eq!(kind(granted("a", 1, 5)), Some("granted"));
        for (reason, name) in [
            (FreeReason::Released, "released"),
            (FreeReason::Expired, "expired"),
            (FreeReason::Revoked, "revoked"),
            (FreeReason::Forced, "forced"),
        ] {
            let e = Event::from_effect(
                7,
                &Effect::Freed {
                    resource: "a".into(),
                    lease_id: 1,
                    fencing_token: 5,
                    reason,
                    granted_at_ms: 0,
                },
            )
            .expect("freed is an event");
            assert_eq!((e.kind.as_str(), e.fencing_token, e.index), (name, 5, 7));
        }
        let queued = Effect::Queued {
            resource: "a".into(),
            lease_id: 2,
            enqueue_index: 7,
            position: 1,
            wait_timeout_ms: 1_000,
        };
        assert_eq!(kind(queued), Some("queued"));
        let removed = |reason| Effect::WaiterRemoved {
            resource: "a".into(),
            lease_id: 2,
            enqueue_index: 3,
            reason,
            enqueued_at_ms: 0,
        };
        assert_eq!(
            kind(removed(WaiterRemovedReason::TimedOut)),
            Some("cancelled")
        );
        assert_eq!(
            kind(removed(WaiterRemovedReason::LeaseEnded)),
            Some("cancelled")
        );
        assert_eq!(kind(removed(WaiterRemovedReason::Granted)), None);
        let ended = Effect::LockDelayEnded {
            resource: "a".into(),
            start_index: 3,
        };
        assert_eq!(kind(ended), Some("lock_delay_ended"));
        let lease_ended = Effect::LeaseEnded {
            lease_id: 1,
            reason: LeaseEndReason::Expired,
        };
        assert_eq!(kind(lease_ended), None);
    }

    // Watch (docs/operations.md "Watch"): replay from a start index, then resume from last + 1:
    // no gaps, no duplicates, commit order; the filter does not move the
    // cursor differently from the unfiltered stream.
    #[test]
    fn replay_and_resume_without_gaps_or_duplicates() {
        let log = EventLog::new(100, 0);
        log.record(1, &[granted("a", 1, 1)]);
        log.record(2, &[granted("b", 2, 2)]);
        log.record(3, &[freed("a", 1, 1), granted("a", 3, 3)]);
        let (evs, next) = log
            .read(log.start(1).expect("in window"), &all())
            .expect("read");
        assert_eq!(indexes(&evs), vec![1, 2, 3, 3]);
        assert_eq!(next, 4);
        let only_a = Filter::Resource("a".into());
        let (evs, _) = log.read(2, &only_a).expect("read");
        assert_eq!(indexes(&evs), vec![3, 3]);
        assert_eq!(evs[0].kind, EventKind::Released);
        assert_eq!(evs[1].kind, EventKind::Granted);
        // Nothing new: the cursor stays, nothing is repeated.
        assert_eq!(log.read(next, &all()).expect("read"), (vec![], 4));
        log.record(4, &[granted("b", 4, 4)]);
        let (evs, next) = log.read(next, &all()).expect("read");
        assert_eq!((indexes(&evs), next), (vec![4], 5));
        // Entries with no events still advance "now".
        log.record(5, &[]);
        assert_eq!(log.start(0), Ok(6));
        // A future start index waits for it.
        assert_eq!(log.read(9, &all()).expect("read"), (vec![], 9));
        let prefix = Filter::Prefix("b".into());
        assert!(prefix.matches("b") && prefix.matches("bc") && !prefix.matches("a"));
    }

    // Watch (docs/operations.md "Watch"): a start index below the window gets `compacted` naming
    // the oldest retained index; eviction drops whole entries.
    #[test]
    fn below_the_window_is_compacted() {
        let log = EventLog::new(3, 0);
        assert_eq!(log.start(1), Ok(1));
        log.record(1, &[granted("a", 1, 1)]);
        log.record(2, &[freed("a", 1, 1), granted("a", 2, 2)]);
        log.record(3, &[freed("a", 2, 2), granted("a", 3, 3)]);
        // 5 events > 3: entry 1 goes, then half of entry 2, so all of entry 2.
        assert_eq!(log.oldest_index(), 3);
        assert_eq!(log.start(2), Err(Compacted { oldest: 3 }));
        assert_eq!(log.read(1, &all()), Err(Compacted { oldest: 3 }));
        let (evs, _) = log.read(3, &all()).expect("read");
        assert_eq!(indexes(&evs), vec![3, 3]);
    }

    // Watch (docs/operations.md "Watch"): entries applied before this process (snapshot load) or
    // covered by an installed snapshot are not in the window.
    #[test]
    fn snapshot_load_and_install_move_the_floor() {
        let log = EventLog::new(100, 10);
        assert_eq!(log.oldest_index(), 11);
        assert_eq!(log.start(10), Err(Compacted { oldest: 11 }));
        assert_eq!(log.start(0), Ok(11));
        log.record(11, &[granted("a", 1, 1)]);
        log.reset(20);
        assert_eq!(log.oldest_index(), 21);
        assert_eq!(log.read(12, &all()), Err(Compacted { oldest: 21 }));
        assert_eq!(log.start(0), Ok(21));
    }

    // Watch (docs/operations.md "Watch"): a subscriber catching up reads the window in slices
    // that never split an entry, and the slices join without gaps.
    #[test]
    fn slices_join_without_gaps() {
        let log = EventLog::new(DEFAULT_WINDOW, 0);
        let n = READ_SLICE as u64 + 10;
        for i in 1..=n {
            log.record(i, &[freed("a", i, i), granted("a", i + 1, i + 1)]);
        }
        let mut cursor = 1;
        let mut seen = Vec::new();
        loop {
            let (evs, next) = log.read(cursor, &all()).expect("read");
            if evs.is_empty() {
                break;
            }
            assert_eq!(evs.len() % 2, 0, "an entry was split");
            seen.extend(indexes(&evs));
            cursor = next;
        }
        let want: Vec<u64> = (1..=n).flat_map(|i| [i, i]).collect();
        assert_eq!(seen, want);
    }

    // The dashboard's timeline: the newest n events of one resource, oldest
    // first, found back through more than one slice of the window (an entry
    // is never split between slices), and what is left when fewer match.
    #[test]
    fn last_matching_reads_back_from_the_newest() {
        let log = EventLog::new(DEFAULT_WINDOW, 0);
        log.record(1, &[granted("a", 1, 1)]);
        // A slice and a half of other events, one entry holding an "a" event
        // after a long run of others.
        for index in 2..(2 + READ_SLICE as u64 + READ_SLICE as u64 / 2) {
            log.record(index, &[granted("b", index, index)]);
        }
        let mut mixed: Vec<Effect> = (0..10).map(|t| granted("c", 7, t)).collect();
        mixed.push(freed("a", 1, 1));
        log.record(9_000, &mixed);
        log.record(9_001, &[granted("a", 2, 2), granted("b", 3, 3)]);
        let a = Filter::Resource("a".into());
        let last = log.last_matching(&a, 2);
        assert_eq!(indexes(&last), [9_000, 9_001]);
        assert_eq!(last[1].fencing_token, 2);
        let every = log.last_matching(&a, 50);
        assert_eq!(indexes(&every), [1, 9_000, 9_001]);
        assert_eq!(every[0].kind, EventKind::Granted);
        assert!(log
            .last_matching(&Filter::Resource("z".into()), 5)
            .is_empty());
        assert!(log.last_matching(&a, 0).is_empty());
    }
}
