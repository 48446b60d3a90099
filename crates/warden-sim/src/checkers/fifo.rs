//! FIFO (docs/semantics.md "Lock kinds" and S8: FIFO before admission): no
//! grant overtakes a waiter queued before it. When an entry grants lease L
//! a resource, no waiter left on that resource after the entry was
//! enqueued before L was: before L's own enqueue if L waited, before the
//! entry if L's acquire was granted at once. So a reader never passes a
//! writer queued before it, and permits go to their waiters in enqueue
//! order. Waiters one packed entry enqueued share an index and are not
//! compared. Checked at every apply on every node whose previous state the
//! history holds (not a node's first apply after a restart or a snapshot
//! install).

use warden_core::Effect;

use super::checker::{Checker, Entry, Next};
use crate::world::History;

#[cfg(test)]
use super::checker::harness;

const PROPERTY: &str = "FIFO";

/// See the module docs.
#[derive(Debug, Default)]
pub struct Fifo;

impl Checker for Fifo {
    fn property(&self) -> &'static str {
        PROPERTY
    }

    fn on_effect(&mut self, e: &Entry<'_>, effect: &Effect, h: &mut History) -> Next {
        let Effect::Granted {
            resource, lease_id, ..
        } = effect
        else {
            return Next::Continue;
        };
        let Some((_, before)) = e.before.filter(|(i, _)| *i + 1 == e.index) else {
            return Next::Continue;
        };
        // When the granted lease joined the queue: its wait's enqueue, or
        // this entry.
        let enqueued = before
            .waiters(resource)
            .iter()
            .find(|w| w.lease_id == *lease_id)
            .map_or(e.index, |w| w.enqueue_index);
        let passed: Vec<(u64, u64)> = e
            .table
            .waiters(resource)
            .iter()
            .filter(|w| w.enqueue_index < enqueued && w.lease_id != *lease_id)
            .map(|w| (w.lease_id, w.enqueue_index))
            .collect();
        if !passed.is_empty() {
            h.violation(
                PROPERTY,
                format!(
                    "node {} index {}: {resource} granted to lease {lease_id} (in the queue since index {enqueued}) before waiters (lease, enqueue index) {passed:?} queued earlier",
                    e.node_id, e.index
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

    fn rw(client: u64, mode: Mode) -> warden_core::types::Command {
        harness::acquire(client, "rw", LockKind::ReadWrite, mode, 5_000)
    }

    // FIFO ("Lock kinds": a queued writer stops every later reader): a
    // reader holds, a writer queues, a later reader queues behind it; the
    // release hands the lock to the writer and nothing is found. A made-up
    // grant to the later reader at index 3, while the writer still waits,
    // is found as overtaking it.
    #[test]
    fn a_reader_granted_before_an_earlier_writer_is_found() {
        let cmds = harness::unchanged(vec![
            rw(1, Mode::Shared),
            rw(2, Mode::Exclusive),
            rw(3, Mode::Shared),
            harness::release(1, "rw", 1),
        ]);
        assert!(harness::findings(&mut Fifo, &cmds, |_| vec![]).is_empty());
        let overtaking = |index| {
            if index != 3 {
                return vec![];
            }
            vec![Effect::Granted {
                resource: "rw".into(),
                lease_id: 3,
                fencing_token: 9,
                grant_index: 3,
                mode: Mode::Shared,
                slot: None,
            }]
        };
        assert_eq!(
            harness::findings(&mut Fifo, &cmds, overtaking),
            ["node 1 index 3: rw granted to lease 3 (in the queue since index 3) before waiters (lease, enqueue index) [(2, 2)] queued earlier"]
        );
    }
}
