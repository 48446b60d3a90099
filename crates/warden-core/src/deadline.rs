//! The node-local deadline table (not replicated), pure.
//!
//! The replicated [`LockTable`] holds durations only. Each node turns them into
//! instants on its own monotonic clock (docs/semantics.md "Time, without comparing
//! clocks"): times here are [`Duration`]s since the node's clock origin, passed
//! in by the caller; this module reads no clock.
//!
//! * `stamp`: when the entry reached this node's log (stamped at append);
//! * `now`: when the entry is applied, or when the leader looks for due work.
//!
//! Rules, per [`Effect`]:
//! * `LeaseSet` → deadline = stamp + ttl (never earlier than the client's send
//!   + TTL, S4);
//! * `LeaseCapped` → min(deadline, stamp + remaining): a checkpoint only
//!   shortens (L2, etcd issue 9395);
//! * `LeaseGraced` → max(deadline, now + grace) (L4);
//! * `ClockAdvanced` → each deadline that [`Deadlines::load`] set (from a
//!   snapshot or a restart, not from an applied entry) becomes min(deadline,
//!   stamp + what the duty clock derives now), as a `Checkpoint` caps it: a
//!   node that was down or loaded an old snapshot does not keep the time it
//!   missed ([`Deadlines::on_clock_advanced`]);
//! * `LeaseEnded` → removed; the same for waits (`Queued`, `WaitCapped`,
//!   `WaiterRemoved`) and lock-delays (`LockDelayStarted`, `LockDelayCapped`,
//!   `LockDelayEnded`);
//! * `MaxHoldStarted` → end = now + max_hold (from this node's apply, so never
//!   early); `MaxHoldCapped` → min(end, stamp + remaining); `MaxHoldEnded` →
//!   removed (docs/semantics.md "Max-hold").
//!
//! All arithmetic saturates: an overflowing deadline becomes `Duration::MAX`,
//! i.e. never due (late, never early). A missing deadline is never due.
//!
//! Each kind of deadline is kept by key and by time ([`Timed`]), so the
//! leader's look for due work ([`Deadlines::due`], run for every entry that
//! can hand a resource off) and its timer ([`Deadlines::next_deadline`]) cost
//! O(log n + what is due), not a pass over every lease and waiter.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use crate::effect::Effect;
#[cfg(doc)]
use crate::limits::MAX_DUE_PER_SLOW_ENTRY;
use crate::limits::{
    MAX_DUE_GRANTS_PER_ENTRY, MAX_DUE_PER_CLIENT_ENTRY, MAX_DUE_PER_ENTRY,
    MAX_HANDOFF_QUEUES_PER_LIST, MAX_HOLDS_PER_ENTRY,
};
use crate::resource::Waiter;
use crate::table::LockTable;
use crate::types::{
    Checkpoint, CheckpointLease, CheckpointLockDelay, CheckpointMaxHold, CheckpointWaiter, Command,
    DueLease, DueList, DueWaiter, FencingToken, LeaderId, LeaseId, LogIndex, MaxHoldRef,
    PromoteSlice,
};

/// How many waiters at the front of a queue a due list looks at for ones
/// whose wait has run out ([`Deadlines::due_front_waiters`]): a hand-off
/// grants the head, or a run of shared waiters or permits behind it.
pub const HANDOFF_LOOKAHEAD: usize = 64;

/// A due list's leases in the order apply should end them (S8): a lease
/// before every listed lease holding a resource it waits on, so that its
/// waits have left their queues when that holder's end hands the resource
/// off; otherwise leases that hold nothing first, then by id. Leases that
/// wait on each other in a cycle keep that fallback order among themselves.
fn waiters_first(table: &LockTable, leases: Vec<DueLease>) -> Vec<DueLease> {
    let listed: BTreeMap<LeaseId, DueLease> = leases.into_iter().map(|d| (d.lease_id, d)).collect();
    let key = |id: LeaseId| {
        let holds = table.lease(id).is_some_and(|l| !l.locks.is_empty());
        (holds, id)
    };
    // waiter -> the listed holders it must come before; in-degree per lease.
    let mut before: BTreeMap<LeaseId, BTreeSet<LeaseId>> = BTreeMap::new();
    let mut waits_on_me: BTreeMap<LeaseId, usize> = listed.keys().map(|id| (*id, 0)).collect();
    for id in listed.keys() {
        let Some(lease) = table.lease(*id) else {
            continue;
        };
        for r in &lease.waits {
            let Some(state) = table.resource(r) else {
                continue;
            };
            // The smaller side: a semaphore may have thousands of holders.
            let holders: Vec<LeaseId> = if state.shared.len() <= listed.len() {
                state.holders().map(|g| g.lease_id).collect()
            } else {
                listed
                    .keys()
                    .copied()
                    .filter(|h| state.grant_of(*h).is_some())
                    .collect()
            };
            for h in holders {
                if h != *id && listed.contains_key(&h) && before.entry(*id).or_default().insert(h) {
                    *waits_on_me.entry(h).or_default() += 1;
                }
            }
        }
    }
    let mut ready: BTreeSet<(bool, LeaseId)> = waits_on_me
        .iter()
        .filter(|(_, n)| **n == 0)
        .map(|(id, _)| key(*id))
        .collect();
    let mut order = Vec::with_capacity(listed.len());
    while let Some(next) = ready.pop_first() {
        order.push(next.1);
        for h in before.get(&next.1).into_iter().flatten() {
            if let Some(n) = waits_on_me.get_mut(h) {
                *n -= 1;
                if *n == 0 {
                    ready.insert(key(*h));
                }
            }
        }
    }
    // A cycle: what is left, in the fallback order.
    let mut rest: Vec<(bool, LeaseId)> = waits_on_me
        .iter()
        .filter(|(_, n)| **n > 0)
        .map(|(id, _)| key(*id))
        .collect();
    rest.sort_unstable();
    order.extend(rest.into_iter().map(|(_, id)| id));
    debug_assert_eq!(order.len(), listed.len());
    order
        .into_iter()
        .filter_map(|id| listed.get(&id).cloned())
        .collect()
}

/// Sorts a due list's waiters by (resource, lease, enqueue index), once each.
fn sort_waiters(waiters: &mut Vec<DueWaiter>) {
    waiters.sort_unstable_by(|a, b| {
        (&a.resource, a.lease_id, a.enqueue_index).cmp(&(&b.resource, b.lease_id, b.enqueue_index))
    });
    waiters.dedup();
}

/// Deadlines by key, also ordered by time: what is due at `now` is a range
/// of the time index, found in O(log n + due).
#[derive(Clone, Debug, PartialEq, Eq)]
struct Timed<K: Ord + Clone> {
    by_key: BTreeMap<K, Duration>,
    /// Exactly the pairs of `by_key`, as (deadline, key).
    by_time: BTreeSet<(Duration, K)>,
}

impl<K: Ord + Clone> Default for Timed<K> {
    fn default() -> Self {
        Timed {
            by_key: BTreeMap::new(),
            by_time: BTreeSet::new(),
        }
    }
}

impl<K: Ord + Clone> Timed<K> {
    fn get(&self, key: &K) -> Option<Duration> {
        self.by_key.get(key).copied()
    }

    fn insert(&mut self, key: K, at: Duration) {
        if let Some(old) = self.by_key.insert(key.clone(), at) {
            let removed = self.by_time.remove(&(old, key.clone()));
            debug_assert!(removed, "the time index holds every deadline");
        }
        self.by_time.insert((at, key));
        debug_assert_eq!(self.by_key.len(), self.by_time.len());
    }

    fn remove(&mut self, key: &K) {
        if let Some(at) = self.by_key.remove(key) {
            let removed = self.by_time.remove(&(at, key.clone()));
            debug_assert!(removed, "the time index holds every deadline");
        }
        debug_assert_eq!(self.by_key.len(), self.by_time.len());
    }

    /// The deadline becomes min(its deadline, `cap`), or `cap` if it had none.
    /// An unchanged deadline is left in place (a cap at every clock advance
    /// over many loaded deadlines mostly changes none).
    fn set_min(&mut self, key: K, cap: Duration) {
        match self.get(&key) {
            Some(d) if d <= cap => {}
            _ => self.insert(key, cap),
        }
    }

    /// The deadline becomes max(its deadline, `floor`), or `floor` if it had none.
    fn set_max(&mut self, key: K, floor: Duration) {
        match self.get(&key) {
            Some(d) if d >= floor => {}
            _ => self.insert(key, floor),
        }
    }

    /// Keys whose deadline is <= `now`, earliest first.
    fn due(&self, now: Duration) -> impl Iterator<Item = &K> {
        self.by_time
            .iter()
            .take_while(move |(at, _)| *at <= now)
            .map(|(_, key)| key)
    }

    fn earliest(&self) -> Option<Duration> {
        self.by_time.first().map(|(at, _)| *at)
    }

    fn retain(&mut self, mut keep: impl FnMut(&K) -> bool) {
        let gone: Vec<K> = self.by_key.keys().filter(|k| !keep(k)).cloned().collect();
        for key in &gone {
            self.remove(key);
        }
    }

    fn len(&self) -> usize {
        self.by_key.len()
    }

    /// Up to `count` pairs after `cursor` in key order (from the first key
    /// when `cursor` is None). `cursor` moves to the last key taken, or back
    /// to None when the walk reached the last key, so that calls going on
    /// from where the last one stopped visit every key once per pass.
    fn walk(&self, cursor: &mut Option<K>, count: usize) -> Vec<(&K, Duration)> {
        use std::ops::Bound::{Excluded, Unbounded};
        if count == 0 {
            return Vec::new();
        }
        let from = match cursor.as_ref() {
            Some(k) => (Excluded(k), Unbounded),
            None => (Unbounded, Unbounded),
        };
        let mut it = self.by_key.range::<K, _>(from);
        let taken: Vec<(&K, Duration)> = it.by_ref().take(count).map(|(k, d)| (k, *d)).collect();
        *cursor = match (taken.last(), it.next()) {
            (Some((k, _)), Some(_)) => Some((*k).clone()),
            _ => None,
        };
        taken
    }
}

/// Where the leader's checkpoint walk stands ([`Deadlines::checkpoint_slice`]):
/// one position per kind of deadline. Node-local and never replicated; a new
/// leader starts from [`Default`] (the first key of each).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CheckpointWalk {
    leases: Option<LeaseId>,
    lock_delays: Option<(String, LogIndex)>,
    waits: Option<(String, LeaseId, LogIndex)>,
}

/// How many of `len` keys a slice of a walk takes when `elapsed` of a pass
/// of `pass` has gone by since the last slice: len × elapsed / pass, rounded
/// up, at least 1 (of a non-empty set), at most `len`. A late slice takes
/// more, so a pass keeps to its length in time, not in calls.
fn slice_len(len: usize, elapsed: Duration, pass: Duration) -> usize {
    if len == 0 {
        return 0;
    }
    let pass_ns = pass.as_nanos();
    if pass_ns == 0 || elapsed >= pass {
        return len;
    }
    let n = (len as u128 * elapsed.as_nanos()).div_ceil(pass_ns);
    usize::try_from(n).unwrap_or(len).clamp(1, len)
}

/// Node-local deadlines of leases, waits and lock-delays.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Deadlines {
    leases: Timed<LeaseId>,
    /// (resource, lease, enqueue index) → end of the wait.
    waits: Timed<WaitKey>,
    /// (resource, start index) → end of the delay.
    lock_delays: Timed<(String, LogIndex)>,
    /// (resource, lease, fencing token) → end of the grant's max-hold.
    max_holds: Timed<(String, LeaseId, FencingToken)>,
    /// For display only (`List` ages): resource → (grant index, when this node
    /// applied the grant, or loaded the table).
    held_since: BTreeMap<String, (LogIndex, Duration)>,
    /// For display only: (resource, lease, enqueue index) → when the enqueue
    /// reached this node's log (or the table was loaded).
    waiting_since: BTreeMap<(String, LeaseId, LogIndex), Duration>,
    /// Deadlines set by [`Deadlines::load`] from remaining times rather
    /// than by an applied entry: capped at every duty-clock advance
    /// ([`Deadlines::on_clock_advanced`]) until a renew, an end or a
    /// removal sets or drops them.
    loaded: Loaded,
}

/// A wait's key: (resource, lease, enqueue index).
type WaitKey = (String, LeaseId, LogIndex);

/// The keys of [`Deadlines::loaded`], by kind.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct Loaded {
    leases: BTreeSet<LeaseId>,
    waits: BTreeSet<WaitKey>,
    lock_delays: BTreeSet<(String, LogIndex)>,
}

fn ms(v: u64) -> Duration {
    Duration::from_millis(v)
}

fn add(at: Duration, v: u64) -> Duration {
    at.saturating_add(ms(v))
}

/// Whole milliseconds from `now` until `deadline` (0 if passed), rounded up so
/// a remaining time is never reported shorter than it is.
fn until_ms(deadline: Duration, now: Duration) -> u64 {
    let left = deadline.saturating_sub(now);
    let whole = left.as_millis();
    let up = if left > Duration::from_millis(u64::try_from(whole).unwrap_or(u64::MAX)) {
        whole.saturating_add(1)
    } else {
        whole
    };
    u64::try_from(up).unwrap_or(u64::MAX)
}

impl Deadlines {
    /// An empty table.
    pub fn new() -> Self {
        Self::default()
    }

    /// Applies one effect of an applied entry. `stamp`: when that entry reached
    /// this node's log; `now`: apply time (used by `LeaseGraced` only).
    pub fn on_effect(&mut self, effect: &Effect, stamp: Duration, now: Duration) {
        match effect {
            Effect::LeaseSet { lease_id, ttl_ms } => {
                self.leases.insert(*lease_id, add(stamp, *ttl_ms));
                self.loaded.leases.remove(lease_id);
            }
            Effect::LeaseCapped {
                lease_id,
                remaining_ms,
            } => {
                self.leases.set_min(*lease_id, add(stamp, *remaining_ms));
            }
            Effect::LeaseGraced { lease_id, grace_ms } => {
                self.leases.set_max(*lease_id, add(now, *grace_ms));
            }
            Effect::LeaseEnded { lease_id, .. } => {
                self.leases.remove(lease_id);
                self.loaded.leases.remove(lease_id);
            }
            Effect::Queued {
                resource,
                lease_id,
                enqueue_index,
                wait_timeout_ms,
                ..
            } => {
                self.waits.insert(
                    (resource.clone(), *lease_id, *enqueue_index),
                    add(stamp, *wait_timeout_ms),
                );
                self.waiting_since
                    .insert((resource.clone(), *lease_id, *enqueue_index), stamp);
            }
            Effect::WaitCapped {
                resource,
                lease_id,
                enqueue_index,
                remaining_ms,
            } => {
                self.waits.set_min(
                    (resource.clone(), *lease_id, *enqueue_index),
                    add(stamp, *remaining_ms),
                );
            }
            Effect::WaiterRemoved {
                resource,
                lease_id,
                enqueue_index,
                ..
            } => {
                let key = (resource.clone(), *lease_id, *enqueue_index);
                self.waits.remove(&key);
                self.waiting_since.remove(&key);
                self.loaded.waits.remove(&key);
            }
            Effect::LockDelayStarted {
                resource,
                start_index,
                lock_delay_ms,
            } => {
                // Counted from this node's *apply* of the entry that started
                // it, not its append: the append can precede the commit, and a
                // lock-delay must never end early (docs/semantics.md "Time").
                self.lock_delays
                    .insert((resource.clone(), *start_index), add(now, *lock_delay_ms));
            }
            Effect::LockDelayCapped {
                resource,
                start_index,
                remaining_ms,
            } => {
                self.lock_delays
                    .set_min((resource.clone(), *start_index), add(stamp, *remaining_ms));
            }
            Effect::LockDelayEnded {
                resource,
                start_index,
            } => {
                let key = (resource.clone(), *start_index);
                self.lock_delays.remove(&key);
                self.loaded.lock_delays.remove(&key);
            }
            Effect::Granted {
                resource,
                grant_index,
                ..
            } => {
                self.held_since
                    .insert(resource.clone(), (*grant_index, now));
            }
            Effect::Freed { resource, .. } => {
                self.held_since.remove(resource);
            }
            Effect::MaxHoldStarted {
                resource,
                lease_id,
                fencing_token,
                max_hold_ms,
            } => {
                // From this node's apply, like a lock-delay: the end of a
                // max-hold hands the resource to someone else, so it must
                // never come early.
                self.max_holds.insert(
                    (resource.clone(), *lease_id, *fencing_token),
                    add(now, *max_hold_ms),
                );
            }
            Effect::MaxHoldCapped {
                resource,
                lease_id,
                fencing_token,
                remaining_ms,
            } => {
                self.max_holds.set_min(
                    (resource.clone(), *lease_id, *fencing_token),
                    add(stamp, *remaining_ms),
                );
            }
            Effect::MaxHoldEnded {
                resource,
                lease_id,
                fencing_token,
            } => {
                self.max_holds
                    .remove(&(resource.clone(), *lease_id, *fencing_token));
            }
            // A published value and an auth change have no deadline; a
            // clock advance needs the table ([`Self::on_clock_advanced`]).
            Effect::Proclaimed { .. }
            | Effect::AuthChanged { .. }
            | Effect::ClockAdvanced { .. } => {}
        }
    }

    /// Applies every effect of one entry.
    pub fn on_effects<'a>(
        &mut self,
        effects: impl IntoIterator<Item = &'a Effect>,
        stamp: Duration,
        now: Duration,
    ) {
        for e in effects {
            self.on_effect(e, stamp, now);
        }
    }

    /// Deadlines for a table that reached this node without being applied
    /// (snapshot install, restart): each lease, waiter and lock-delay at now
    /// plus what it has left on the table's duty clock
    /// ([`LockTable::lease_remaining_ms`], [`LockTable::all_waiters`],
    /// [`LockTable::lock_delays`]). Each is capped again at every later
    /// clock advance until an entry sets or ends it
    /// ([`Self::on_clock_advanced`]).
    pub fn load(table: &LockTable, now: Duration) -> Self {
        let mut d = Self::new();
        for l in table.leases() {
            d.leases
                .insert(l.lease_id, add(now, table.lease_remaining_ms(l)));
            d.loaded.leases.insert(l.lease_id);
        }
        for (resource, w, remaining) in table.all_waiters() {
            let key = (resource, w.lease_id, w.enqueue_index);
            d.waiting_since.insert(key.clone(), now);
            d.waits.insert(key.clone(), add(now, remaining));
            d.loaded.waits.insert(key);
        }
        for (resource, state) in table.resources_with_prefix("") {
            if let Some(g) = &state.holder {
                d.held_since.insert(resource.clone(), (g.grant_index, now));
            }
        }
        for ld in table.lock_delays() {
            let key = (ld.resource, ld.start_index);
            d.lock_delays.insert(key.clone(), add(now, ld.remaining_ms));
            d.loaded.lock_delays.insert(key);
        }
        for m in table.max_holds() {
            d.max_holds.insert(
                (m.resource, m.lease_id, m.max_hold.fencing_token),
                add(now, m.max_hold.remaining_ms),
            );
        }
        d
    }

    /// A duty-clock advance applied at `stamp` (when it reached this node's
    /// log): every deadline [`Self::load`] set and no entry has set or ended
    /// since becomes min(deadline, stamp + what `table`'s clock derives for
    /// it now). Only shortens (L2; etcd issue 9395), and what the clock
    /// derives is never less than the truth (S4). Keys gone from `table`
    /// leave the set. Costs O(loaded keys), which only a node that restarted
    /// or installed a snapshot has, until their leases renew or end.
    pub fn on_clock_advanced(&mut self, table: &LockTable, stamp: Duration) {
        let Loaded {
            leases,
            waits,
            lock_delays,
        } = std::mem::take(&mut self.loaded);
        self.loaded = Loaded {
            leases: self.cap_leases(table, stamp, leases),
            waits: self.cap_waits(table, stamp, waits),
            lock_delays: self.cap_lock_delays(table, stamp, lock_delays),
        };
    }

    /// Caps each lease of `ids` at `stamp` + what the clock derives for it
    /// ([`LockTable::lease_remaining_ms`]); the ones still in `table`.
    fn cap_leases(
        &mut self,
        table: &LockTable,
        stamp: Duration,
        ids: impl IntoIterator<Item = LeaseId>,
    ) -> BTreeSet<LeaseId> {
        ids.into_iter()
            .filter(|id| match table.lease(*id) {
                Some(l) => {
                    self.leases
                        .set_min(*id, add(stamp, table.lease_remaining_ms(l)));
                    true
                }
                None => false,
            })
            .collect()
    }

    /// Caps each wait of `keys` (in key order, so by resource) at `stamp` +
    /// what the clock derives for it; the ones still in `table`. One pass
    /// over each resource's queue: a queue holds up to 10,000 waiters, and
    /// a lookup per key would be quadratic.
    fn cap_waits(
        &mut self,
        table: &LockTable,
        stamp: Duration,
        keys: impl IntoIterator<Item = WaitKey>,
    ) -> BTreeSet<WaitKey> {
        let clock = table.duty_clock();
        // The last queue read: its resource, (lease, enqueue index) → wait left.
        type QueueLefts = (String, BTreeMap<(LeaseId, LogIndex), u64>);
        let mut queue: Option<QueueLefts> = None;
        let mut kept = BTreeSet::new();
        for key in keys {
            let (resource, lease_id, enqueue_index) = &key;
            if queue.as_ref().is_none_or(|(r, _)| r != resource) {
                let lefts = table
                    .resource(resource)
                    .map_or_else(BTreeMap::new, |state| {
                        state
                            .waiters
                            .iter()
                            .map(|w| {
                                let left =
                                    clock.remaining_now(w.remaining_wait_ms, w.enqueue_index);
                                ((w.lease_id, w.enqueue_index), left)
                            })
                            .collect()
                    });
                queue = Some((resource.clone(), lefts));
            }
            let left = queue
                .as_ref()
                .and_then(|(_, lefts)| lefts.get(&(*lease_id, *enqueue_index)).copied());
            if let Some(left) = left {
                self.waits.set_min(key.clone(), add(stamp, left));
                kept.insert(key);
            }
        }
        kept
    }

    /// Caps each lock-delay of `keys` at `stamp` + what the clock derives
    /// for it ([`LockTable::lock_delay`]); the ones still running in `table`.
    fn cap_lock_delays(
        &mut self,
        table: &LockTable,
        stamp: Duration,
        keys: impl IntoIterator<Item = (String, LogIndex)>,
    ) -> BTreeSet<(String, LogIndex)> {
        keys.into_iter()
            .filter(|key| match table.lock_delay(&key.0) {
                Some(v) if v.start_index == key.1 => {
                    self.lock_delays
                        .set_min(key.clone(), add(stamp, v.remaining_ms));
                    true
                }
                _ => false,
            })
            .collect()
    }

    /// Marks the deadlines that `effects` set as loaded, for an entry this
    /// node has no stamp of (replayed after a reboot: stamped with its apply
    /// time, so as late as a loaded deadline): each advance caps them
    /// ([`Self::on_clock_advanced`]) until a later entry sets them.
    pub fn mark_loaded<'a>(&mut self, effects: impl IntoIterator<Item = &'a Effect>) {
        for e in effects {
            match e {
                Effect::LeaseSet { lease_id, .. } => {
                    self.loaded.leases.insert(*lease_id);
                }
                Effect::Queued {
                    resource,
                    lease_id,
                    enqueue_index,
                    ..
                } => {
                    self.loaded
                        .waits
                        .insert((resource.clone(), *lease_id, *enqueue_index));
                }
                Effect::LockDelayStarted {
                    resource,
                    start_index,
                    ..
                } => {
                    self.loaded
                        .lock_delays
                        .insert((resource.clone(), *start_index));
                }
                _ => {}
            }
        }
    }

    /// Sets lease `id`'s deadline to `at` as a loaded one (the exact
    /// deadline a snapshot's sidecar brings back, which may itself have
    /// been loaded): later advances may still cap it.
    pub fn restore_lease_deadline(&mut self, id: LeaseId, at: Duration) {
        self.leases.insert(id, at);
        self.loaded.leases.insert(id);
    }

    /// A `Promote` applied at `stamp`: every deadline, loaded or applied,
    /// becomes min(deadline, stamp + what `table`'s duty clock derives for
    /// it), once per term. A node that applied a renew late (it lagged, or
    /// replayed its log after a reboot) has a deadline later than the
    /// leader's; named checkpoints used to cap it within an interval, and
    /// this does for the one node that matters, a new leader, before its
    /// first duty (L2). Call it after the `Promote`'s own effects: the
    /// table then records each graced lease's grace, so the cap never
    /// undoes it. Nothing happens while the clock does not run. O(deadlines).
    pub fn cap_all(&mut self, table: &LockTable, stamp: Duration) {
        if !table.duty_clock().is_running() {
            return;
        }
        let leases: Vec<LeaseId> = self.leases.by_key.keys().copied().collect();
        self.cap_leases(table, stamp, leases);
        self.cap_waits_and_lock_delays(table, stamp);
    }

    /// A `PromoteSlice` applied at `index`, as [`Self::cap_all`] for the
    /// leases the promotion covers in the slice's range: the ones it graced
    /// (`graced`, after their grace) and the ones not renewed since the
    /// promotion started (`last_index` before its start). A lease renewed
    /// since keeps the deadline its renew set: `stamp` is this node's stamp
    /// of the promotion's first slice, which may be earlier than that
    /// renew's. The first slice also caps every wait and lock-delay, all of
    /// which began before it. Nothing happens while the clock does not run.
    /// O(leases in range + waits and lock-delays in the first slice).
    pub fn cap_promote_slice(
        &mut self,
        table: &LockTable,
        stamp: Duration,
        slice: &PromoteSlice,
        index: LogIndex,
        graced: &BTreeSet<LeaseId>,
    ) {
        if !table.duty_clock().is_running() {
            return;
        }
        let Some(range) = slice.lease_range() else {
            return;
        };
        let started_at = slice.start(index);
        let leases: Vec<LeaseId> = table
            .leases
            .range(range)
            .filter(|(id, l)| l.last_index < started_at || graced.contains(id))
            .map(|(id, _)| *id)
            .filter(|id| self.leases.get(id).is_some())
            .collect();
        self.cap_leases(table, stamp, leases);
        if slice.is_first() {
            self.cap_waits_and_lock_delays(table, stamp);
        }
    }

    /// Caps every wait and lock-delay at `stamp` + what the clock derives
    /// for it (part of [`Self::cap_all`]).
    fn cap_waits_and_lock_delays(&mut self, table: &LockTable, stamp: Duration) {
        let waits: Vec<WaitKey> = self.waits.by_key.keys().cloned().collect();
        self.cap_waits(table, stamp, waits);
        let lock_delays: Vec<(String, LogIndex)> =
            self.lock_delays.by_key.keys().cloned().collect();
        self.cap_lock_delays(table, stamp, lock_delays);
    }

    /// How many deadlines [`Self::load`] set that no entry has set or
    /// ended since (leases, waits, lock-delays).
    pub fn loaded_count(&self) -> usize {
        self.loaded.leases.len() + self.loaded.waits.len() + self.loaded.lock_delays.len()
    }

    /// The local deadline of lease `id`, if known.
    pub fn lease_deadline(&self, id: LeaseId) -> Option<Duration> {
        self.leases.get(&id)
    }

    /// The waiters among the first [`HANDOFF_LOOKAHEAD`] of `resource`'s
    /// queue whose wait has run out at `now`: the ones a hand-off of
    /// `resource` could reach, which a due list must remove first (S8).
    pub fn due_front_waiters(
        &self,
        table: &LockTable,
        resource: &str,
        now: Duration,
    ) -> Vec<DueWaiter> {
        let Some(state) = table.resource(resource) else {
            return Vec::new();
        };
        let mut key: WaitKey = (resource.to_owned(), 0, 0);
        state
            .waiters
            .iter()
            .take(HANDOFF_LOOKAHEAD)
            .filter(|w| self.wait_ran_out(&mut key, w, now))
            .map(|w| DueWaiter {
                resource: resource.to_owned(),
                lease_id: w.lease_id,
                enqueue_index: w.enqueue_index,
            })
            .collect()
    }

    /// Whether `w`'s wait has run out at `now`; `key` names the resource
    /// `w` waits on (its lease and enqueue index are overwritten: one key,
    /// no clone of the name, per queue looked at).
    fn wait_ran_out(&self, key: &mut WaitKey, w: &Waiter, now: Duration) -> bool {
        (key.1, key.2) = (w.lease_id, w.enqueue_index);
        self.waits.get(key).is_some_and(|at| at <= now)
    }

    /// The timed-out waiters near the front of the first `max_queues` of
    /// `resources` ([`Self::due_front_waiters`] of each), stopping once
    /// `max_waiters` or more are named.
    fn due_fronts<R: AsRef<str>>(
        &self,
        table: &LockTable,
        resources: impl IntoIterator<Item = R>,
        now: Duration,
        max_queues: usize,
        max_waiters: usize,
    ) -> Vec<DueWaiter> {
        let mut fronts = Vec::new();
        for r in resources.into_iter().take(max_queues) {
            if fronts.len() >= max_waiters {
                break;
            }
            fronts.extend(self.due_front_waiters(table, r.as_ref(), now));
        }
        fronts
    }

    /// Adds to `list`, for each of the first [`MAX_HANDOFF_QUEUES_PER_LIST`]
    /// of `resources` (the queues the command carrying the list may hand
    /// off), what a hand-off could reach among the queue's first
    /// [`HANDOFF_LOOKAHEAD`] waiters and must not (S8), even when more is due
    /// than the list's bound let it name: the waiters whose wait has run out
    /// at `now`, and the leases due at `now` that hold nothing (ending one
    /// removes its waits and hands nothing off; apply skips it if a renew
    /// committed in between, so the renew wins and the lease keeps its
    /// place). The list's leases are put back in [`waiters_first`] order.
    pub fn name_front_waiters(
        &self,
        table: &LockTable,
        list: &mut DueList,
        resources: impl IntoIterator<Item = String>,
        now: Duration,
    ) {
        let mut named: BTreeSet<LeaseId> = list.leases.iter().map(|l| l.lease_id).collect();
        let mut fronts = Vec::new();
        let mut ends = Vec::new();
        for r in resources.into_iter().take(MAX_HANDOFF_QUEUES_PER_LIST) {
            let Some(state) = table.resource(&r) else {
                continue;
            };
            let mut key: WaitKey = (r, 0, 0);
            for w in state.waiters.iter().take(HANDOFF_LOOKAHEAD) {
                if self.wait_ran_out(&mut key, w, now) {
                    fronts.push(DueWaiter {
                        resource: key.0.clone(),
                        lease_id: w.lease_id,
                        enqueue_index: w.enqueue_index,
                    });
                }
                let due = self.leases.get(&w.lease_id).is_some_and(|at| at <= now);
                let Some(lease) = table
                    .lease(w.lease_id)
                    .filter(|l| due && l.locks.is_empty())
                else {
                    continue;
                };
                if named.insert(w.lease_id) {
                    ends.push(DueLease {
                        lease_id: w.lease_id,
                        last_index: lease.last_index,
                    });
                }
            }
        }
        if !fronts.is_empty() {
            list.waiters.extend(fronts);
            sort_waiters(&mut list.waiters);
        }
        if !ends.is_empty() {
            list.leases.extend(ends);
            list.leases = waiters_first(table, std::mem::take(&mut list.leases));
        }
    }

    /// The due list that rides in an entry of `cmds` that can hand a
    /// resource off (a client entry, an `EndLockDelay`, an `EndMaxHold`;
    /// S8): the first [`MAX_DUE_PER_CLIENT_ENTRY`] due leases and waiters by
    /// deadline, as [`Self::due_up_to`] names them, and near the front of
    /// the queues `cmds` may hand off every waiter whose wait has timed out
    /// and every due lease that holds nothing ([`Self::name_front_waiters`]),
    /// however many more are due. None when nothing is due.
    pub fn client_due(
        &self,
        table: &LockTable,
        leader: LeaderId,
        now: Duration,
        cmds: &[Command],
    ) -> Option<DueList> {
        let mut due = self.due_up_to(table, leader, now, MAX_DUE_PER_CLIENT_ENTRY);
        if due.leases.is_empty() && due.waiters.is_empty() {
            return None;
        }
        let resources = cmds.iter().flat_map(|c| table.handoff_resources(c));
        self.name_front_waiters(table, &mut due, resources, now);
        Some(due)
    }

    /// Every lease's local deadline, by lease id (what a snapshot's
    /// node-local sidecar keeps: one pass over the deadlines, no table
    /// lookups).
    pub fn lease_deadlines(&self) -> impl Iterator<Item = (LeaseId, Duration)> + '_ {
        self.leases.by_key.iter().map(|(id, d)| (*id, *d))
    }

    /// Milliseconds left on lease `id` at `now` (0 once passed; rounded up).
    pub fn remaining_ms(&self, id: LeaseId, now: Duration) -> Option<u64> {
        self.leases.get(&id).map(|d| until_ms(d, now))
    }

    /// For display (`List`): milliseconds since this node applied the grant
    /// of `resource` made at `grant_index` (or loaded the table holding it).
    pub fn held_for_ms(&self, resource: &str, grant_index: LogIndex, now: Duration) -> Option<u64> {
        self.held_since
            .get(resource)
            .filter(|(i, _)| *i == grant_index)
            .map(|(_, at)| u64::try_from(now.saturating_sub(*at).as_millis()).unwrap_or(u64::MAX))
    }

    /// When this node applied the grant of `resource` it holds now (or
    /// loaded the table holding it), with that grant's index.
    pub fn held_since(&self, resource: &str) -> Option<(LogIndex, Duration)> {
        self.held_since.get(resource).copied()
    }

    /// When this waiter's enqueue reached this node's log (or the table
    /// holding it was loaded).
    pub fn waiting_since(
        &self,
        resource: &str,
        lease_id: LeaseId,
        enqueue_index: LogIndex,
    ) -> Option<Duration> {
        self.waiting_since
            .get(&(resource.to_owned(), lease_id, enqueue_index))
            .copied()
    }

    /// For display (`List`): milliseconds since this waiter's enqueue reached
    /// this node (or the table holding it was loaded).
    pub fn waited_for_ms(
        &self,
        resource: &str,
        lease_id: LeaseId,
        enqueue_index: LogIndex,
        now: Duration,
    ) -> Option<u64> {
        self.waiting_since
            .get(&(resource.to_owned(), lease_id, enqueue_index))
            .map(|at| u64::try_from(now.saturating_sub(*at).as_millis()).unwrap_or(u64::MAX))
    }

    /// The local end of a wait, if known.
    pub fn wait_deadline(
        &self,
        resource: &str,
        lease_id: LeaseId,
        enqueue_index: LogIndex,
    ) -> Option<Duration> {
        self.waits
            .get(&(resource.to_owned(), lease_id, enqueue_index))
    }

    /// The local end of a lock-delay, if known.
    pub fn lock_delay_deadline(&self, resource: &str, start_index: LogIndex) -> Option<Duration> {
        self.lock_delays.get(&(resource.to_owned(), start_index))
    }

    /// For display (`status`, `list`, an acquire refused or queued during a
    /// lock-delay): milliseconds left at `now` on the lock-delay of
    /// `resource` started at `start_index` (0 once passed; rounded up, as
    /// [`remaining_ms`](Self::remaining_ms) for a lease). None when this
    /// node has no deadline for it.
    pub fn lock_delay_remaining_ms(
        &self,
        resource: &str,
        start_index: LogIndex,
        now: Duration,
    ) -> Option<u64> {
        self.lock_delay_deadline(resource, start_index)
            .map(|d| until_ms(d, now))
    }

    /// The earliest deadline of any kind, for the leader's timer.
    pub fn next_deadline(&self) -> Option<Duration> {
        [
            self.leases.earliest(),
            self.waits.earliest(),
            self.lock_delays.earliest(),
            self.max_holds.earliest(),
        ]
        .into_iter()
        .flatten()
        .min()
    }

    /// What the leader should end at `now`: leases whose deadline <= now, with
    /// the `last_index` the table holds, and waits whose end <= now, both in
    /// sorted order. Only entries still in `table` are listed, and at most
    /// [`MAX_DUE_PER_ENTRY`] of each, those whose deadline came first: a
    /// list that is full means more may be due.
    ///
    /// The leases named also hold at most [`MAX_DUE_GRANTS_PER_ENTRY`] grants
    /// together, or the first lease's alone: the list stops before the lease
    /// that would take it past that bound. [`Deadlines::due_is_full`] tells
    /// whether a list was cut by either bound.
    pub fn due(&self, table: &LockTable, leader: LeaderId, now: Duration) -> DueList {
        self.due_up_to(table, leader, now, MAX_DUE_PER_ENTRY)
    }

    /// [`Deadlines::due`] naming at most `max_items` leases and `max_items`
    /// waiters instead of [`MAX_DUE_PER_ENTRY`] (at least one of each): a
    /// leader whose commits take long names more per `Expire` entry
    /// ([`MAX_DUE_PER_SLOW_ENTRY`]).
    pub fn due_up_to(
        &self,
        table: &LockTable,
        leader: LeaderId,
        now: Duration,
        max_items: usize,
    ) -> DueList {
        self.due_within(table, leader, now, max_items, MAX_DUE_GRANTS_PER_ENTRY)
    }

    /// [`Deadlines::due_up_to`] with the grant bound `max_grants` (tests use
    /// a small one).
    pub(crate) fn due_within(
        &self,
        table: &LockTable,
        leader: LeaderId,
        now: Duration,
        max_items: usize,
        max_grants: usize,
    ) -> DueList {
        self.listed(table, leader, now, max_items, max_grants, true)
    }

    /// The leader's `Expire` entries for `now`, and whether more is due than
    /// they name ([`Self::due_is_full`]): one list of at most `max_items`
    /// leases and waiters as [`Self::due_up_to`], but holding back no lease;
    /// when a listed lease holds a resource among whose first
    /// [`HANDOFF_LOOKAHEAD`] waiters one has timed out, two lists instead,
    /// to go out together in this order: every listed waiter and those, then
    /// the leases. Apply ends a list's leases before it removes its waiters,
    /// and a lease's end hands off at once, so one list would grant the
    /// holder's resource to the timed-out waiter (S8); holding the lease back
    /// for a later list instead could hold it back for good while waiters
    /// keep timing out at the front of its queue (L1). The waiters named for
    /// this are at most `max_items` more.
    pub fn expire_lists(
        &self,
        table: &LockTable,
        leader: LeaderId,
        now: Duration,
        max_items: usize,
    ) -> (Vec<DueList>, bool) {
        let list = self.listed(
            table,
            leader,
            now,
            max_items,
            MAX_DUE_GRANTS_PER_ENTRY,
            false,
        );
        let full = self.due_is_full(table, &list, now);
        // At most `max_items` queues looked at, and as many waiters named.
        let held = list
            .leases
            .iter()
            .filter_map(|d| table.lease(d.lease_id))
            .flat_map(|l| l.locks.iter());
        let bound = max_items.max(1);
        let blockers = self.due_fronts(table, held, now, bound, bound);
        if blockers.is_empty() || list.leases.is_empty() {
            return (vec![list], full);
        }
        let mut waiters = list.waiters;
        waiters.extend(blockers);
        sort_waiters(&mut waiters);
        let first = DueList {
            leader,
            leases: Vec::new(),
            waiters,
        };
        let second = DueList {
            leader,
            leases: list.leases,
            waiters: Vec::new(),
        };
        (vec![first, second], full)
    }

    /// [`Self::due_within`]; `defer_blocked`: leave for a later list a lease
    /// holding a resource among whose first [`HANDOFF_LOOKAHEAD`] waiters one
    /// has timed out, and name those waiters (a client entry's list; the
    /// leader's `Expire` entries name such a lease at once, after the
    /// waiters, [`Self::expire_lists`]).
    fn listed(
        &self,
        table: &LockTable,
        leader: LeaderId,
        now: Duration,
        max_items: usize,
        max_grants: usize,
        defer_blocked: bool,
    ) -> DueList {
        let max_items = max_items.max(1);
        let mut grants = 0usize;
        let mut leases: Vec<DueLease> = self
            .leases
            .due(now)
            .filter_map(|id| table.lease(*id).map(|l| (*id, l)))
            .take(max_items)
            .take_while(|(_, l)| {
                let first = grants == 0;
                grants = grants.saturating_add(l.locks.len().max(1));
                first || grants <= max_grants
            })
            .map(|(lease_id, l)| DueLease {
                lease_id,
                last_index: l.last_index,
            })
            .collect();
        let mut waiters: Vec<DueWaiter> = self
            .waits
            .due(now)
            .filter(|(r, lease, enq)| table.has_waiter(r, *lease, *enq))
            .map(|(r, lease, enq)| DueWaiter {
                resource: r.clone(),
                lease_id: *lease,
                enqueue_index: *enq,
            })
            .take(max_items)
            .collect();
        // S8: apply ends the listed leases before it removes the listed
        // waiters, and a lease's end hands what it held off at once. In a
        // client entry's list, a lease holding a resource whose queue has a
        // timed-out waiter near its front waits for a later list (the next
        // `Expire` names it, after those waiters); this one names those
        // waiters, so they are gone before it ends.
        if defer_blocked {
            let mut examined = 0usize;
            leases.retain(|d| {
                let Some(lease) = table.lease(d.lease_id) else {
                    return true;
                };
                // At most `max_items` queues looked at (each up to
                // HANDOFF_LOOKAHEAD waiters), whatever the leases hold.
                if examined >= max_items {
                    return true;
                }
                examined += lease.locks.len();
                let front = self.due_fronts(table, &lease.locks, now, usize::MAX, usize::MAX);
                let keep = front.is_empty();
                // Named beyond the bound only up to twice it; the rest, due
                // too, come first in a later list.
                if waiters.len() + front.len() <= max_items.saturating_mul(2) {
                    waiters.extend(front);
                }
                keep
            });
        }
        let leases = waiters_first(table, leases);
        sort_waiters(&mut waiters);
        DueList {
            leader,
            leases,
            waiters,
        }
    }

    /// True if `list` (from [`Deadlines::due`] or [`Deadlines::due_up_to`]
    /// on the same `table` at the same `now`) was cut by a bound, so more is
    /// due: a due lease or a due waiter that it does not name (cut by the
    /// item bound, or by [`MAX_DUE_GRANTS_PER_ENTRY`]).
    pub fn due_is_full(&self, table: &LockTable, list: &DueList, now: Duration) -> bool {
        let more_leases = self
            .leases
            .due(now)
            .filter(|id| table.lease(**id).is_some())
            .nth(list.leases.len())
            .is_some();
        more_leases
            || self
                .waits
                .due(now)
                .filter(|(r, lease, enq)| table.has_waiter(r, *lease, *enq))
                .nth(list.waiters.len())
                .is_some()
    }

    /// Lock-delays whose end <= now and that still run in `table`: (resource,
    /// start index) for `EndLockDelay` entries, sorted.
    pub fn due_lock_delays(&self, table: &LockTable, now: Duration) -> Vec<(String, LogIndex)> {
        let mut due: Vec<(String, LogIndex)> = self
            .lock_delays
            .due(now)
            .filter(|(r, s)| {
                table
                    .resource(r)
                    .and_then(|state| state.lock_delay.as_ref())
                    .is_some_and(|d| d.start_index == *s)
            })
            .cloned()
            .collect();
        due.sort_unstable();
        due
    }

    /// The local end of the max-hold of the grant (`resource`, `lease_id`,
    /// `fencing_token`), if known.
    pub fn max_hold_deadline(
        &self,
        resource: &str,
        lease_id: LeaseId,
        fencing_token: FencingToken,
    ) -> Option<Duration> {
        self.max_holds
            .get(&(resource.to_owned(), lease_id, fencing_token))
    }

    /// Grants whose max-hold ended by `now` and that are still held with
    /// that token in `table`, for an `EndMaxHold` entry: at most
    /// [`MAX_HOLDS_PER_ENTRY`], those that ran out first, then sorted.
    pub fn due_max_holds(&self, table: &LockTable, now: Duration) -> Vec<MaxHoldRef> {
        let mut due: Vec<MaxHoldRef> = self
            .max_holds
            .due(now)
            .filter(|(r, lease, token)| {
                table
                    .max_hold(r, *lease)
                    .is_some_and(|m| m.fencing_token == *token)
            })
            .map(|(r, lease, token)| MaxHoldRef {
                resource: r.clone(),
                lease_id: *lease,
                fencing_token: *token,
            })
            .take(MAX_HOLDS_PER_ENTRY)
            .collect();
        due.sort_unstable();
        due
    }

    /// A checkpoint of remaining max-holds at `now`: every grant whose
    /// max-hold has run for at least `interval` since its grant or last
    /// checkpoint (remaining < recorded remaining − interval); None when
    /// there is none (so a cluster with no max-hold proposes nothing).
    pub fn max_hold_checkpoint(
        &self,
        table: &LockTable,
        leader: LeaderId,
        now: Duration,
        interval: Duration,
    ) -> Option<CheckpointMaxHold> {
        let interval_ms = u64::try_from(interval.as_millis()).unwrap_or(u64::MAX);
        let grants: Vec<(MaxHoldRef, u64)> = table
            .max_holds()
            .filter_map(|v| {
                let g = v.grant();
                let end = self.max_hold_deadline(&g.resource, g.lease_id, g.fencing_token)?;
                let remaining = until_ms(end, now);
                (remaining < v.max_hold.remaining_ms.saturating_sub(interval_ms))
                    .then_some((g, remaining))
            })
            .take(MAX_HOLDS_PER_ENTRY)
            .collect();
        (!grants.is_empty()).then_some(CheckpointMaxHold { leader, grants })
    }

    /// A checkpoint of remaining durations at `now`: leases not renewed within
    /// the last `interval` (remaining < ttl − interval), and running waits and
    /// lock-delays that have run for at least `interval`; remaining = deadline
    /// − now, saturating at 0 and rounded up. Entries without a local deadline
    /// are left out.
    ///
    /// Walks this node's deadlines (leases, waits, lock-delays), never the
    /// table's resources: with a million held locks and a few waiters the
    /// walk is as long as the waiters, not the locks. Each named item is
    /// looked up in `table` in O(log n). Split the result with
    /// [`Checkpoint::into_entries`] before proposing it. The leader's duty
    /// loop walks in slices instead ([`Self::checkpoint_slice`]).
    pub fn checkpoint(
        &self,
        table: &LockTable,
        leader: LeaderId,
        now: Duration,
        interval: Duration,
    ) -> Checkpoint {
        let mut walk = CheckpointWalk::default();
        self.checkpoint_slice(table, leader, now, interval, &mut walk, interval, interval)
    }

    /// One slice of a walk over the deadlines that [`Self::checkpoint`] makes
    /// in one go: of each kind (leases, lock-delays, waits), the next
    /// `len × elapsed / pass` keys after `walk` (rounded up; all of them once
    /// `elapsed` ≥ `pass`), named by the same rule. Called every duty tick with
    /// the time since the last slice, it visits every lease, wait and
    /// lock-delay once per `pass`, so with `pass` ≤ `interval` each is
    /// checkpointed at least once per interval, as docs/semantics.md
    /// "Checkpoints" requires, while the entries spread over the interval
    /// instead of arriving at once: at 100,000 sessions renewing every 4 s
    /// with a 12 s TTL, about 75,000 leases are named each second, and in one
    /// go they held apply for tens of milliseconds at every interval. The
    /// walk holds the machine's lock only for its slice.
    #[allow(clippy::too_many_arguments)]
    pub fn checkpoint_slice(
        &self,
        table: &LockTable,
        leader: LeaderId,
        now: Duration,
        interval: Duration,
        walk: &mut CheckpointWalk,
        elapsed: Duration,
        pass: Duration,
    ) -> Checkpoint {
        let interval_ms = u64::try_from(interval.as_millis()).unwrap_or(u64::MAX);
        let n = slice_len(self.leases.len(), elapsed, pass);
        let leases = self
            .leases
            .walk(&mut walk.leases, n)
            .into_iter()
            .filter_map(|(id, deadline)| {
                let l = table.lease(*id)?;
                let remaining = until_ms(deadline, now);
                (remaining < l.ttl_ms.saturating_sub(interval_ms)).then_some(CheckpointLease {
                    lease_id: l.lease_id,
                    last_index: l.last_index,
                    remaining_ms: remaining,
                })
            })
            .collect();
        let n = slice_len(self.lock_delays.len(), elapsed, pass);
        let lock_delays = self
            .lock_delays
            .walk(&mut walk.lock_delays, n)
            .into_iter()
            .filter_map(|((resource, start_index), deadline)| {
                let v = table
                    .lock_delay(resource)
                    .filter(|v| v.start_index == *start_index)?;
                let remaining = until_ms(deadline, now);
                (remaining < v.lock_delay_ms.saturating_sub(interval_ms)).then_some(
                    CheckpointLockDelay {
                        resource: v.resource,
                        start_index: v.start_index,
                        remaining_ms: remaining,
                    },
                )
            })
            .collect();
        let n = slice_len(self.waits.len(), elapsed, pass);
        let waiters = self
            .waits
            .walk(&mut walk.waits, n)
            .into_iter()
            .filter_map(|((resource, lease_id, enqueue_index), deadline)| {
                let w = table.waiter(resource, *lease_id, *enqueue_index)?;
                let remaining = until_ms(deadline, now);
                (remaining < w.wait_timeout_ms.saturating_sub(interval_ms)).then(|| {
                    CheckpointWaiter {
                        resource: resource.clone(),
                        lease_id: *lease_id,
                        enqueue_index: *enqueue_index,
                        remaining_ms: remaining,
                    }
                })
            })
            .collect();
        Checkpoint {
            leader,
            leases,
            lock_delays,
            waiters,
        }
    }

    /// Forgets lease `id` (e.g. when its end was observed some other way).
    pub fn forget_lease(&mut self, id: LeaseId) {
        self.leases.remove(&id);
    }

    /// Drops every deadline whose lease, wait or lock-delay is no longer in
    /// `table` (after a snapshot install or any doubt).
    pub fn prune(&mut self, table: &LockTable) {
        self.leases.retain(|id| table.lease(*id).is_some());
        self.waits
            .retain(|(r, lease, enq)| table.has_waiter(r, *lease, *enq));
        self.waiting_since
            .retain(|(r, lease, enq), _| table.has_waiter(r, *lease, *enq));
        self.held_since
            .retain(|r, (i, _)| table.holder(r).is_some_and(|h| h.grant_index == *i));
        self.max_holds.retain(|(r, lease, token)| {
            table
                .max_hold(r, *lease)
                .is_some_and(|m| m.fencing_token == *token)
        });
        self.lock_delays.retain(|(r, start)| {
            table
                .resource(r)
                .and_then(|s| s.lock_delay.as_ref())
                .is_some_and(|d| d.start_index == *start)
        });
        // Every loaded key has a deadline: the loaded keys follow them.
        let Loaded {
            leases,
            waits,
            lock_delays,
        } = &mut self.loaded;
        leases.retain(|id| self.leases.by_key.contains_key(id));
        waits.retain(|key| self.waits.by_key.contains_key(key));
        lock_delays.retain(|key| self.lock_delays.by_key.contains_key(key));
    }

    /// Number of lease deadlines held.
    pub fn lease_count(&self) -> usize {
        self.leases.len()
    }
}
