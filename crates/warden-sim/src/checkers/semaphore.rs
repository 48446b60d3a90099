//! SEMAPHORE (docs/semantics.md "Lock kinds", S1 for permits): a semaphore
//! of N permits has at most N holders in every committed state, each in its
//! own slot below N. N is the limit the clients asked for, read from the
//! logged `Acquire` commands the table accepted (granted or queued),
//! not from the table (a table that counts one permit too many agrees with
//! itself). Checked at every apply on every node.

use std::collections::{BTreeMap, BTreeSet};

use warden_core::types::{AcquireOutcome, Command, LockKind};

use super::checker::{acquire_reply, Checker, Entry};
use crate::world::History;

#[cfg(test)]
use super::checker::harness;

const PROPERTY: &str = "SEMAPHORE";

/// See the module docs.
#[derive(Debug, Default)]
pub struct Semaphore {
    /// resource → the limit of the latest accepted permit request.
    asked: BTreeMap<String, u32>,
}

impl Checker for Semaphore {
    fn property(&self) -> &'static str {
        PROPERTY
    }

    fn on_entry(&mut self, e: &Entry<'_>, h: &mut History) {
        for (part, response) in &e.logged_parts {
            let Command::Acquire(k) = part.unwrapped() else {
                continue;
            };
            let (LockKind::Semaphore { limit }, Some((a, r))) =
                (k.kind, acquire_reply(part, response))
            else {
                continue;
            };
            if matches!(
                r.outcome,
                AcquireOutcome::Granted { .. } | AcquireOutcome::Queued { .. }
            ) {
                self.asked.insert(a.resource.clone(), limit);
            }
        }
        for (resource, limit) in &self.asked {
            if !matches!(e.table.kind(resource), Some(LockKind::Semaphore { .. })) {
                continue;
            }
            let holders = e.table.holders(resource);
            let at = format!("node {} index {}: {resource}", e.node_id, e.index);
            if holders.len() as u64 > u64::from(*limit) {
                let leases: Vec<u64> = holders.iter().map(|v| v.lease_id).collect();
                h.violation(
                    PROPERTY,
                    format!(
                        "{at} has {} holders (leases {leases:?}), above its {limit} permits",
                        holders.len()
                    ),
                );
            }
            let mut slots = BTreeSet::new();
            for v in &holders {
                match v.slot {
                    Some(s) if s < *limit && slots.insert(s) => {}
                    Some(s) if s < *limit => h.violation(
                        PROPERTY,
                        format!(
                            "{at}: lease {} holds slot {s}, which another permit holds",
                            v.lease_id
                        ),
                    ),
                    slot => h.violation(
                        PROPERTY,
                        format!(
                            "{at}: lease {} holds slot {slot:?}, not one of 0..{limit}",
                            v.lease_id
                        ),
                    ),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use warden_core::types::Mode;

    use super::*;

    fn permit(client: u64, limit: u32) -> Command {
        harness::acquire(client, "s", LockKind::Semaphore { limit }, Mode::Shared, 0)
    }

    // SEMAPHORE ("Lock kinds": at most N holders): three permit requests of
    // a semaphore of 2 applied as of 3 (the `semaphore-limit-plus-one`
    // switch) leave 3 holders, found at the third; applied as asked, the
    // third is not granted and nothing is found.
    #[test]
    fn a_third_holder_of_two_permits_is_found() {
        let buggy: Vec<(Command, Command)> =
            (1..=3).map(|c| (permit(c, 3), permit(c, 2))).collect();
        let found = harness::findings(&mut Semaphore::default(), &buggy, |_| vec![]);
        assert_eq!(
            found,
            [
                "node 1 index 3: s has 3 holders (leases [1, 2, 3]), above its 2 permits",
                "node 1 index 3: s: lease 3 holds slot Some(2), not one of 0..2",
            ]
        );
        let honest = harness::unchanged((1..=3).map(|c| permit(c, 2)).collect());
        assert!(harness::findings(&mut Semaphore::default(), &honest, |_| vec![]).is_empty());
    }
}
