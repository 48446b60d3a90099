//! RW (docs/semantics.md "Lock kinds", S1 for read-write locks): a
//! read-write lock never has a writer beside another holder, reader or
//! writer, in any committed state. A writer is a lease that asked for an
//! exclusive grant, read from the logged `Acquire` commands the table
//! accepted (granted or queued), or one the table holds as exclusive: a
//! table that made a writer's grant shared agrees with itself. Checked at
//! every apply on every node.

use std::collections::BTreeMap;

use warden_core::types::{AcquireOutcome, Command, LockKind, Mode};

use super::checker::{acquire_reply, Checker, Entry};
use crate::world::History;

#[cfg(test)]
use super::checker::harness;

const PROPERTY: &str = "RW";

/// See the module docs.
#[derive(Debug, Default)]
pub struct ReadWrite {
    /// (resource, lease) → the mode of the lease's latest accepted request
    /// of that read-write lock.
    asked: BTreeMap<(String, u64), Mode>,
}

impl Checker for ReadWrite {
    fn property(&self) -> &'static str {
        PROPERTY
    }

    fn on_entry(&mut self, e: &Entry<'_>, h: &mut History) {
        for (part, response) in &e.logged_parts {
            let Command::Acquire(k) = part.unwrapped() else {
                continue;
            };
            let (LockKind::ReadWrite, Some((a, r))) = (k.kind, acquire_reply(part, response))
            else {
                continue;
            };
            if let AcquireOutcome::Granted { lease_id, .. }
            | AcquireOutcome::Queued { lease_id, .. } = r.outcome
            {
                self.asked.insert((a.resource.clone(), lease_id), k.mode);
            }
        }
        let mut resources: Vec<&str> = self.asked.keys().map(|(r, _)| r.as_str()).collect();
        resources.dedup();
        for resource in resources {
            if e.table.kind(resource) != Some(LockKind::ReadWrite) {
                continue;
            }
            let holders = e.table.holders(resource);
            if holders.len() < 2 {
                continue;
            }
            let asked = |lease: u64| self.asked.get(&(resource.to_owned(), lease)).copied();
            for v in &holders {
                if v.mode == Mode::Exclusive || asked(v.lease_id) == Some(Mode::Exclusive) {
                    let others: Vec<u64> = holders
                        .iter()
                        .map(|o| o.lease_id)
                        .filter(|l| *l != v.lease_id)
                        .collect();
                    h.violation(
                        PROPERTY,
                        format!(
                            "node {} index {}: {resource} held by writer lease {} (token {}, as {}) beside leases {others:?}",
                            e.node_id, e.index, v.lease_id, v.fencing_token, v.mode
                        ),
                    );
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rw(client: u64, mode: Mode) -> Command {
        harness::acquire(client, "rw", LockKind::ReadWrite, mode, 5_000)
    }

    // RW ("Lock kinds": a writer alone): a writer's request applied as a
    // reader's (the `exclusive-as-shared` switch) beside a reader is found;
    // applied as asked, the writer queues and nothing is found.
    #[test]
    fn a_writer_beside_a_reader_is_found() {
        let buggy = vec![
            (rw(1, Mode::Shared), rw(1, Mode::Shared)),
            (rw(2, Mode::Shared), rw(2, Mode::Exclusive)),
        ];
        let found = harness::findings(&mut ReadWrite::default(), &buggy, |_| vec![]);
        assert_eq!(
            found,
            ["node 1 index 2: rw held by writer lease 2 (token 2, as shared) beside leases [1]"]
        );
        let honest = harness::unchanged(vec![rw(1, Mode::Shared), rw(2, Mode::Exclusive)]);
        assert!(harness::findings(&mut ReadWrite::default(), &honest, |_| vec![]).is_empty());
    }
}
