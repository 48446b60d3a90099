//! S8 clean waiters (docs/semantics.md S8): a waiter whose wait has timed
//! out or whose lease has ended is removed, never granted. No slack and no
//! exception: at every hand-off (a `WaiterRemoved { Granted }` effect), on
//! every node whose table before the entry the history holds (after the
//! node's previous normal entry), the waiter as it stood before the entry
//! must be live at the entry's cluster time (the table's `now` after the
//! entry: apply moves it first):
//!
//! - its wait's deadline is after `now`;
//! - its lease, if it was in the table before the entry, ends after `now`
//!   (`LockTable::lease_end_ms`, L4's grace included). A lease with an end
//!   at or before `now` stays ended through the entry: a renew of an ended
//!   lease is `NotFound` (docs/semantics.md S6).
//!
//! A waiter enqueued by the entry itself has a fresh deadline and lease.
//! Each hand-off is reported once (every node applies the same entry).

use std::collections::BTreeSet;

use warden_core::{Effect, WaiterRemovedReason};

use super::checker::{Checker, Entry, Next};
use crate::world::History;

#[cfg(test)]
use super::checker::harness;

const PROPERTY: &str = "S8";

/// See the module docs.
#[derive(Debug, Default)]
pub struct CleanWaiters {
    /// (index, resource, lease) already reported.
    reported: BTreeSet<(u64, String, u64)>,
}

impl Checker for CleanWaiters {
    fn property(&self) -> &'static str {
        PROPERTY
    }

    fn on_effect(&mut self, e: &Entry<'_>, effect: &Effect, h: &mut History) -> Next {
        let Effect::WaiterRemoved {
            resource,
            lease_id,
            enqueue_index,
            reason: WaiterRemovedReason::Granted,
            ..
        } = effect
        else {
            return Next::Continue;
        };
        let Some((_, before)) = e.before else {
            return Next::Continue;
        };
        let now = e.table.now_ms();
        let mut ended = Vec::new();
        if let Some(w) = before.waiter(resource, *lease_id, *enqueue_index) {
            if w.deadline_ms <= now {
                ended.push(format!("its wait ended at {} ms", w.deadline_ms));
            }
        }
        if let Some(lease) = before.lease(*lease_id) {
            let end = before.lease_end_ms(lease);
            // Still ended after the entry (a table from before a snapshot
            // install may predate a renew: then the lease was live).
            let still = e
                .table
                .lease(*lease_id)
                .is_none_or(|l| e.table.lease_end_ms(l) <= now);
            if end <= now && still {
                ended.push(format!("its lease ended at {end} ms"));
            }
        }
        if !ended.is_empty() && self.reported.insert((e.index, resource.clone(), *lease_id)) {
            h.violation(
                PROPERTY,
                format!(
                    "node {} index {}: {resource} handed to waiter lease {lease_id} (enqueued at {enqueue_index}) at cluster time {now} ms, but {}",
                    e.node_id,
                    e.index,
                    ended.join(" and ")
                ),
            );
        }
        Next::Continue
    }
}

#[cfg(test)]
mod tests {
    use warden_core::types::{LockKind, Mode};

    use super::*;

    // S8 without slack: a mutex holder, a waiter that waits 2 ms (entry i
    // is stamped at i ms: it is enqueued at 2 ms, its wait ends at 4 ms),
    // and a release at 3 ms hands the mutex to it (live): nothing found.
    // Without the release, a made-up grant to it at index 4 (cluster time
    // 4 ms, its wait's end) is found.
    #[test]
    fn a_hand_off_to_an_ended_waiter_is_found() {
        let acquire = |c, wait| harness::acquire(c, "m", LockKind::Mutex, Mode::Exclusive, wait);
        let live = harness::unchanged(vec![
            acquire(1, 0),
            acquire(2, 2),
            harness::release(1, "m", 1),
        ]);
        assert!(harness::findings(&mut CleanWaiters::default(), &live, |_| vec![]).is_empty());
        let late = harness::unchanged(vec![
            acquire(1, 0),
            acquire(2, 2),
            acquire(3, 0),
            acquire(4, 0),
        ]);
        let grant = |index| {
            if index != 4 {
                return vec![];
            }
            vec![Effect::WaiterRemoved {
                resource: "m".into(),
                lease_id: 2,
                enqueue_index: 2,
                reason: WaiterRemovedReason::Granted,
                enqueued_at_ms: 2,
            }]
        };
        assert_eq!(
            harness::findings(&mut CleanWaiters::default(), &late, grant),
            ["node 1 index 4: m handed to waiter lease 2 (enqueued at 2) at cluster time 4 ms, but its wait ended at 4 ms"]
        );
    }
}
