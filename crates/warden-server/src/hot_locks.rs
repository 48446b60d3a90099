//! Hot locks: a rolling window of what each resource went through on this
//! node in the last [`WINDOW_MS`] (one minute of cluster time), behind `Admin/TopLocks`
//! (`warden top`) and the dashboard's hot-locks list.
//!
//! It measures **cluster time** (docs/semantics.md "Time"): the state
//! machine hands [`HotLocks::recorder`] the table's `now` after each
//! applied entry ([`warden_core::LockTable::now_ms`]) and the entry's
//! effects, and a reader asks at a cluster time too (the table's `now`, or
//! the leader's clock for a linearizable read). The window is one minute of
//! cluster time, which runs at real time within the clock-rate bound; on an
//! idle cluster cluster time moves only with the entries that are applied,
//! so the window is as fresh as the last entry. From the effects it keeps,
//! per resource seen in the window:
//!
//! - grants (`Effect::Granted`) and expiries (`Effect::Freed` with reason
//!   `Expired`) per second, for counts over the last minute;
//! - the waits of grants that came from the queue (the granting entry's
//!   `now` less the waiter's enqueue time, `Effect::WaiterRemoved`'s
//!   `enqueued_at_ms`), the last [`MAX_WAIT_SAMPLES`] of them, for the wait
//!   p99.
//!
//! Queue length and the oldest waiter's age are not counted here: the
//! reader takes them from the lock table it serves (exact, linearizable)
//! and merges them in [`HotLocks::rank`].
//!
//! # Bounds
//!
//! At most [`MAX_RESOURCES`] resources are kept (when a new one finds the
//! window full, the [`EVICT_BATCH`] least recently seen go first: one pass
//! per batch, so recording a seen resource keeps no eviction order and
//! allocates nothing), each with at most 61 one-second buckets and
//! [`MAX_WAIT_SAMPLES`] waits; resources not seen for a [`WINDOW_MS`] are
//! dropped. Worst case, computed (not measured): 4,096 resources × (a
//! 512-byte name, 61 buckets of 16 bytes, 256 waits of 24 bytes) ≈ 31 MB; a
//! quiet node keeps nothing.

use std::collections::{BTreeMap, VecDeque};
use std::sync::Mutex;

use warden_core::effect::{Effect, FreeReason};
use warden_core::WaiterRemovedReason;

/// How far back the counts reach: one minute of cluster time, in ms.
pub const WINDOW_MS: u64 = 60_000;

/// Most resources kept in the window.
pub const MAX_RESOURCES: usize = 4_096;

/// How many of the least recently seen resources go when a new one finds
/// the window full (an eighth of it).
pub const EVICT_BATCH: usize = MAX_RESOURCES / 8;

/// Most wait samples kept per resource (the p99 is over these).
pub const MAX_WAIT_SAMPLES: usize = 256;

/// Grants and expiries in one second of cluster time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Bucket {
    /// Whole seconds of cluster time.
    second: u64,
    grants: u32,
    expiries: u32,
}

/// One resource's window.
#[derive(Debug, Default)]
struct Recent {
    /// Oldest first; at most one per second of the window.
    buckets: VecDeque<Bucket>,
    /// (grant's cluster time in ms, wait in ms), oldest first.
    waits: VecDeque<(u64, u64)>,
    /// The cluster time (ms) anything last happened to it.
    last_seen: u64,
}

impl Recent {
    fn bucket(&mut self, now_ms: u64) -> &mut Bucket {
        let second = now_ms / 1_000;
        if self.buckets.back().is_none_or(|b| b.second < second) {
            self.buckets.push_back(Bucket {
                second,
                grants: 0,
                expiries: 0,
            });
        }
        // Cluster time never goes back from one applied entry to the next;
        // a reader's earlier time counts in the newest bucket.
        let last = self.buckets.len() - 1;
        &mut self.buckets[last]
    }

    /// Drops what is older than the window at `now` (cluster time, ms).
    fn trim(&mut self, now: u64) {
        let from = now.saturating_sub(WINDOW_MS);
        while self
            .buckets
            .front()
            .is_some_and(|b| b.second < from / 1_000)
        {
            self.buckets.pop_front();
        }
        while self.waits.front().is_some_and(|(at, _)| *at < from) {
            self.waits.pop_front();
        }
    }

    fn summary(&self, now: u64) -> RecentCounts {
        RecentCounts {
            wait_p99_ms: self.wait_p99_ms(now),
            ..self.counts(now)
        }
    }

    /// Grants and expiries in the window at `now` (no wait p99).
    fn counts(&self, now: u64) -> RecentCounts {
        let from = now.saturating_sub(WINDOW_MS) / 1_000;
        let live = self.buckets.iter().filter(|b| b.second >= from);
        let (grants, expiries) = live.fold((0u64, 0u64), |(g, e), b| {
            (g + u64::from(b.grants), e + u64::from(b.expiries))
        });
        RecentCounts {
            grants,
            expiries,
            wait_p99_ms: None,
        }
    }

    /// The p99 of the waits in the window at `now` (a sort of its samples).
    fn wait_p99_ms(&self, now: u64) -> Option<u64> {
        let cutoff = now.saturating_sub(WINDOW_MS);
        let mut waits: Vec<u64> = self
            .waits
            .iter()
            .filter(|(at, _)| *at >= cutoff)
            .map(|(_, w)| *w)
            .collect();
        p99(&mut waits)
    }
}

/// The nearest-rank 99th percentile of `values` (None when empty).
fn p99(values: &mut [u64]) -> Option<u64> {
    if values.is_empty() {
        return None;
    }
    values.sort_unstable();
    // Nearest rank: ceil(0.99 * n), 1-based.
    let rank = (values.len() * 99).div_ceil(100).max(1);
    Some(values[rank - 1])
}

/// One resource's counts over the last minute.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RecentCounts {
    /// Grants in the last minute.
    pub grants: u64,
    /// Holders whose lease expired in the last minute.
    pub expiries: u64,
    /// The 99th percentile of the waits, in milliseconds, of the grants in
    /// the last minute that came from the queue; None: none did.
    pub wait_p99_ms: Option<u64>,
}

/// What the reader knows of a resource from the table it serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct QueueNow {
    /// Waiters queued on it now.
    pub queue_length: u64,
    /// The oldest waiter's age in cluster time, in ms (0: none).
    pub oldest_waiter_age_ms: u64,
}

/// One hot lock, as `warden top` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HotLock {
    /// The resource.
    pub resource: String,
    /// From the table: its queue now.
    pub queue: QueueNow,
    /// From the window: the last minute.
    pub recent: RecentCounts,
}

impl HotLock {
    /// The order of `warden top`: longest queue first, then the oldest
    /// waiter, then the most grants in the last minute, then by name.
    fn hotter(&self, other: &HotLock) -> std::cmp::Ordering {
        other
            .queue
            .queue_length
            .cmp(&self.queue.queue_length)
            .then(
                other
                    .queue
                    .oldest_waiter_age_ms
                    .cmp(&self.queue.oldest_waiter_age_ms),
            )
            .then(other.recent.grants.cmp(&self.recent.grants))
            .then_with(|| self.resource.cmp(&other.resource))
    }
}

#[derive(Debug, Default)]
struct Inner {
    resources: BTreeMap<String, Recent>,
    /// The cluster time (ms) of the last sweep (sweeps run at most once a
    /// second).
    last_sweep: u64,
}

impl Inner {
    fn check_invariants(&self) {
        debug_assert!(self.resources.len() <= MAX_RESOURCES);
    }

    /// The window of `resource`, seen at cluster time `now_ms` (made room
    /// for at the bound: [`Inner::evict_least_recent`]).
    fn touch(&mut self, resource: &str, now_ms: u64) -> &mut Recent {
        if !self.resources.contains_key(resource) {
            if self.resources.len() >= MAX_RESOURCES {
                self.evict_least_recent();
            }
            self.resources.insert(
                resource.to_owned(),
                Recent {
                    last_seen: now_ms,
                    ..Recent::default()
                },
            );
        }
        let r = self
            .resources
            .get_mut(resource)
            .expect("inserted or present above");
        r.last_seen = r.last_seen.max(now_ms);
        r
    }

    /// Drops the [`EVICT_BATCH`] least recently seen resources (of equal
    /// times, the first by name): one pass and a selection over the
    /// window's last-seen times, once per batch of new resources.
    fn evict_least_recent(&mut self) {
        let mut stamps: Vec<u64> = self.resources.values().map(|r| r.last_seen).collect();
        let n = EVICT_BATCH.min(stamps.len());
        if n == 0 {
            return;
        }
        let cutoff = *stamps.select_nth_unstable(n - 1).1;
        let older = stamps.iter().filter(|s| **s < cutoff).count();
        let mut ties = n - older;
        self.resources.retain(|_, r| {
            if r.last_seen < cutoff {
                false
            } else if r.last_seen == cutoff && ties > 0 {
                ties -= 1;
                false
            } else {
                true
            }
        });
        debug_assert!(self.resources.len() + n <= MAX_RESOURCES);
    }

    /// Drops resources not seen for a window at `now` (cluster time, ms).
    fn sweep(&mut self, now: u64) {
        let from = now.saturating_sub(WINDOW_MS);
        self.resources.retain(|_, r| r.last_seen >= from);
        for r in self.resources.values_mut() {
            r.trim(now);
        }
        self.last_sweep = now;
    }
}

/// This node's hot-locks window, in cluster time (see the module docs).
#[derive(Debug, Default)]
pub struct HotLocks {
    inner: Mutex<Inner>,
}

impl HotLocks {
    /// An empty window.
    pub fn new() -> HotLocks {
        HotLocks::default()
    }

    fn inner(&self) -> std::sync::MutexGuard<'_, Inner> {
        // Counters only: a panic elsewhere cannot leave them unsafe to read.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Records the effects of one applied entry, with `now_ms` the table's
    /// cluster time after it.
    pub fn record<'a>(&self, effects: impl IntoIterator<Item = &'a Effect>, now_ms: u64) {
        let mut r = self.recorder(now_ms);
        for effect in effects {
            r.effect(effect);
        }
    }

    /// [`HotLocks::record`] one effect at a time, under one hold of the
    /// window's lock: apply records an entry's effects as it goes, and the
    /// window sweeps (at most once a second) when the recorder drops.
    /// `now_ms` is the table's cluster time after the entry.
    pub fn recorder(&self, now_ms: u64) -> Recorder<'_> {
        Recorder {
            inner: self.inner(),
            now_ms,
        }
    }

    /// The counts of every resource seen in the window at cluster time
    /// `now` (ms) whose name starts with `prefix`.
    pub fn recent(&self, prefix: &str, now: u64) -> BTreeMap<String, RecentCounts> {
        let g = self.inner();
        let from = now.saturating_sub(WINDOW_MS);
        g.resources
            .range::<str, _>((
                std::ops::Bound::Included(prefix),
                std::ops::Bound::Unbounded,
            ))
            .take_while(|(name, _)| name.starts_with(prefix))
            .filter(|(_, r)| r.last_seen >= from)
            .map(|(name, r)| (name.clone(), r.summary(now)))
            .collect()
    }

    /// How many resources the window keeps now.
    pub fn len(&self) -> usize {
        self.inner().resources.len()
    }

    /// Whether the window keeps nothing.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The `limit` hottest of: the resources with a queue now (`queues`,
    /// from the table) and those seen in the window at cluster time `now`
    /// (ms), both under
    /// `prefix`, in [`HotLock`]'s order. A resource seen in the window with
    /// no queue now shows queue length 0.
    pub fn rank(
        &self,
        prefix: &str,
        queues: BTreeMap<String, QueueNow>,
        now: u64,
        limit: usize,
    ) -> Vec<HotLock> {
        let g = self.inner();
        let from = now.saturating_sub(WINDOW_MS);
        let seen = |name: &str| g.resources.get(name).filter(|r| r.last_seen >= from);
        let mut all: Vec<HotLock> = queues
            .iter()
            .map(|(resource, queue)| HotLock {
                resource: resource.clone(),
                queue: *queue,
                recent: seen(resource).map(|r| r.counts(now)).unwrap_or_default(),
            })
            .collect();
        all.extend(
            g.resources
                .range::<str, _>((
                    std::ops::Bound::Included(prefix),
                    std::ops::Bound::Unbounded,
                ))
                .take_while(|(name, _)| name.starts_with(prefix))
                .filter(|(name, r)| r.last_seen >= from && !queues.contains_key(*name))
                .map(|(name, r)| HotLock {
                    resource: name.clone(),
                    queue: QueueNow::default(),
                    recent: r.counts(now),
                }),
        );
        // The order never reads the wait p99: sort the counts, then sort the
        // waits of the rows kept only.
        all.sort_by(HotLock::hotter);
        all.truncate(limit);
        for h in &mut all {
            h.recent.wait_p99_ms = seen(&h.resource).and_then(|r| r.wait_p99_ms(now));
        }
        all
    }
}

/// Records one entry's effects into the window ([`HotLocks::recorder`]).
pub struct Recorder<'a> {
    inner: std::sync::MutexGuard<'a, Inner>,
    now_ms: u64,
}

impl Recorder<'_> {
    /// Records `effect`; a grant from the queue adds its wait.
    pub fn effect(&mut self, effect: &Effect) {
        let (g, now) = (&mut *self.inner, self.now_ms);
        match effect {
            Effect::Granted { resource, .. } => g.touch(resource, now).bucket(now).grants += 1,
            Effect::Freed {
                resource, reason, ..
            } => {
                let r = g.touch(resource, now);
                if *reason == FreeReason::Expired {
                    r.bucket(now).expiries += 1;
                }
            }
            Effect::Queued { resource, .. } => {
                g.touch(resource, now);
            }
            Effect::WaiterRemoved {
                resource,
                reason,
                enqueued_at_ms,
                ..
            } => {
                let r = g.touch(resource, now);
                // A granted waiter: how long it was queued, in cluster time
                // (as the wait histogram measures it).
                if *reason == WaiterRemovedReason::Granted {
                    let wait_ms = now.saturating_sub(*enqueued_at_ms);
                    if r.waits.len() >= MAX_WAIT_SAMPLES {
                        r.waits.pop_front();
                    }
                    r.waits.push_back((now, wait_ms));
                }
            }
            _ => {}
        }
    }
}

impl Drop for Recorder<'_> {
    fn drop(&mut self) {
        let now = self.now_ms;
        if now.saturating_sub(self.inner.last_sweep) >= 1_000 {
            self.inner.sweep(now);
        }
        self.inner.check_invariants();
    }
}

#[cfg(test)]
mod tests {
    //! The window's counting, eviction, order and bounds ("Hot locks" in
    //! docs/operations.md), at cluster times given by hand (nothing here
    //! reads a clock).

    use super::*;
    use warden_core::effect::WaiterRemovedReason;

    fn granted(resource: &str, lease_id: u64) -> Effect {
        Effect::Granted {
            resource: resource.into(),
            lease_id,
            fencing_token: lease_id,
            grant_index: 1,
            mode: warden_core::types::Mode::Exclusive,
            slot: None,
        }
    }

    fn freed(resource: &str, reason: FreeReason) -> Effect {
        Effect::Freed {
            resource: resource.into(),
            lease_id: 1,
            fencing_token: 1,
            reason,
            granted_at_ms: 0,
        }
    }

    fn queued(resource: &str, lease_id: u64, enqueue_index: u64) -> Effect {
        Effect::Queued {
            resource: resource.into(),
            lease_id,
            enqueue_index,
            position: 1,
            wait_timeout_ms: 60_000,
        }
    }

    /// A waiter enqueued at cluster time `enqueued_at_ms` left the queue.
    fn removed(
        resource: &str,
        lease_id: u64,
        enqueue_index: u64,
        reason: WaiterRemovedReason,
        enqueued_at_ms: u64,
    ) -> Effect {
        Effect::WaiterRemoved {
            resource: resource.into(),
            lease_id,
            enqueue_index,
            reason,
            enqueued_at_ms,
        }
    }

    fn s(secs: u64) -> u64 {
        secs * 1_000
    }

    fn ms(millis: u64) -> u64 {
        millis
    }

    // Hot locks: grants and expiries count over the last minute only; other
    // frees count as neither; an entry older than the window stops counting.
    #[test]
    fn counts_cover_the_last_minute_only() {
        let hot = HotLocks::new();
        hot.record(&[granted("a", 1), freed("a", FreeReason::Expired)], s(100));
        hot.record(&[granted("a", 2), freed("a", FreeReason::Released)], s(130));
        hot.record(&[freed("a", FreeReason::Forced), granted("a", 3)], s(150));
        let at = |now| hot.recent("", s(now)).get("a").copied();
        assert_eq!(
            at(155),
            Some(RecentCounts {
                grants: 3,
                expiries: 1,
                wait_p99_ms: None
            })
        );
        // At 161 the second-100 bucket is more than a minute old.
        assert_eq!(at(161).map(|c| (c.grants, c.expiries)), Some((2, 0)));
        assert_eq!(at(200).map(|c| (c.grants, c.expiries)), Some((1, 0)));
        // Not seen for a minute: gone from the answer.
        assert_eq!(at(211), None);
    }

    // Hot locks: a resource not seen for a window is dropped at the next
    // sweep, so a quiet node keeps nothing.
    #[test]
    fn resources_not_seen_for_a_window_are_evicted() {
        let hot = HotLocks::new();
        hot.record(&[granted("old", 1)], s(10));
        hot.record(&[granted("new", 2)], s(50));
        assert_eq!(hot.len(), 2);
        hot.record(&[granted("new", 3)], s(71));
        assert_eq!(hot.len(), 1, "\"old\" was last seen 61 s ago");
        assert!(hot.recent("", s(71)).contains_key("new"));
        hot.record(&[], s(200));
        assert!(hot.is_empty());
    }

    // Hot locks: the wait p99 is over the grants that came from the queue
    // (the waiter's enqueue time to the granting entry's cluster time); a
    // waiter that left without a grant gives no sample.
    #[test]
    fn wait_p99_comes_from_queued_grants() {
        let hot = HotLocks::new();
        let mut effects = Vec::new();
        for lease in 1..=100 {
            effects.push(queued("q", lease, 7));
        }
        hot.record(&effects, ms(10_000));
        // Leases 1..=99 are granted after 1..=99 ms; lease 100 after 5 s.
        for lease in 1..=99 {
            hot.record(
                &[
                    removed("q", lease, 7, WaiterRemovedReason::Granted, 10_000),
                    granted("q", lease),
                ],
                ms(10_000 + lease),
            );
        }
        let p = |now| hot.recent("", now).get("q").and_then(|c| c.wait_p99_ms);
        // Nearest rank: ceil(0.99 * 99) = 99, the largest of 99 samples.
        assert_eq!(p(ms(12_000)), Some(99));
        let last = removed("q", 100, 7, WaiterRemovedReason::Granted, 10_000);
        hot.record([&last], ms(15_000));
        // Rank 99 of 100: the 5 s outlier is the one sample above the p99.
        assert_eq!(p(ms(15_000)), Some(99));
        // A waiter that left without a grant adds nothing.
        hot.record(&[queued("c", 1, 9)], ms(15_000));
        hot.record(
            &[removed("c", 1, 9, WaiterRemovedReason::TimedOut, 15_000)],
            ms(16_000),
        );
        assert_eq!(hot.recent("", ms(16_000))["c"].wait_p99_ms, None);
        // A grant of a waiter queued before this node loaded the table is
        // timed like any other: its enqueue time is replicated.
        hot.record(
            &[
                removed("c", 2, 3, WaiterRemovedReason::Granted, 13_500),
                granted("c", 2),
            ],
            ms(16_000),
        );
        assert_eq!(hot.recent("", ms(16_000))["c"].wait_p99_ms, Some(2_500));
    }

    // Hot locks: `warden top`'s order is queue length, then the oldest
    // waiter's age, then grants in the last minute; a resource seen only in
    // the window shows queue 0; the limit and the prefix apply.
    #[test]
    fn rank_orders_by_queue_then_age_then_grants() {
        let hot = HotLocks::new();
        hot.record(&[granted("app/busy", 1)], s(10));
        hot.record(&[granted("app/busy", 2)], s(11));
        hot.record(&[granted("app/calm", 3)], s(12));
        hot.record(&[granted("other/x", 4)], s(12));
        let q = |queue_length, oldest_waiter_age_ms| QueueNow {
            queue_length,
            oldest_waiter_age_ms,
        };
        let queues = BTreeMap::from([
            ("app/two-young".to_owned(), q(2, 100)),
            ("app/two-old".to_owned(), q(2, 900)),
            ("app/eight".to_owned(), q(8, 10)),
        ]);
        let names = |v: Vec<HotLock>| v.into_iter().map(|h| h.resource).collect::<Vec<_>>();
        let ranked = hot.rank("app/", queues.clone(), s(13), 10);
        assert_eq!(ranked[0].queue.queue_length, 8);
        assert_eq!(ranked[3].recent.grants, 2);
        assert_eq!(ranked[4].queue, QueueNow::default());
        assert_eq!(
            names(ranked),
            vec![
                "app/eight",
                "app/two-old",
                "app/two-young",
                "app/busy",
                "app/calm"
            ]
        );
        assert_eq!(
            names(hot.rank("app/", queues, s(13), 2)),
            vec!["app/eight", "app/two-old"]
        );
        assert_eq!(
            names(hot.rank("", BTreeMap::new(), s(13), 10)),
            vec!["app/busy", "app/calm", "other/x"]
        );
    }

    // Hot locks (memory bound): at most MAX_RESOURCES resources, the
    // EVICT_BATCH least recently seen evicted first when a new one finds
    // the window full; at most MAX_WAIT_SAMPLES waits each.
    #[test]
    fn the_window_is_bounded() {
        let hot = HotLocks::new();
        let name = |i: usize| format!("r{i:05}");
        for i in 0..MAX_RESOURCES {
            hot.record(&[granted(&name(i), 1)], ms(1_000 + i as u64));
        }
        assert_eq!(hot.len(), MAX_RESOURCES);
        // Seen again: r00000 is now the most recently seen.
        hot.record(&[granted(&name(0), 2)], ms(10_000));
        hot.record(&[granted("new", 1)], ms(10_001));
        assert_eq!(hot.len(), MAX_RESOURCES - EVICT_BATCH + 1);
        let kept = hot.recent("", ms(20_000));
        assert!(kept.contains_key("new") && kept.contains_key(&name(0)));
        assert_eq!(kept[&name(0)].grants, 2);
        // r00001..=r00512 went, r00513 on stayed.
        assert!(!kept.contains_key(&name(1)) && !kept.contains_key(&name(EVICT_BATCH)));
        assert!(
            kept.contains_key(&name(EVICT_BATCH + 1))
                && kept.contains_key(&name(MAX_RESOURCES - 1))
        );
        // Of equal last-seen times, the first by name go.
        let hot = HotLocks::new();
        for i in 0..=MAX_RESOURCES {
            hot.record(&[granted(&name(i), 1)], ms(1_000));
        }
        let kept = hot.recent("", ms(2_000));
        assert_eq!(kept.len(), MAX_RESOURCES - EVICT_BATCH + 1);
        assert!(
            !kept.contains_key(&name(EVICT_BATCH - 1)) && kept.contains_key(&name(EVICT_BATCH))
        );

        let hot = HotLocks::new();
        for i in 0..(MAX_WAIT_SAMPLES as u64 + 50) {
            hot.record(&[queued("w", i + 1, 1)], ms(1_000 + i));
            let removed = removed("w", i + 1, 1, WaiterRemovedReason::Granted, 1_000 + i);
            hot.record([&removed], ms(1_000 + i + 5));
        }
        assert_eq!(hot.inner().resources["w"].waits.len(), MAX_WAIT_SAMPLES);
    }
}
