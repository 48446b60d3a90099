//! S8 clean waiters (docs/semantics.md S8): a waiter whose lease is due is
//! removed, never granted. Checked at every first apply of an entry on the
//! node that proposed it: a hand-off never goes to a lease that node's own
//! deadline table saw as due (more than a slack before the entry's append
//! stamp), unless the entry's due list names the lease (apply then skipped
//! it only because a renew committed in between: that renew wins) or the
//! lease is the entry's own acquire.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use warden_core::types::{AcquireOutcome, Command, DueList};
use warden_core::Effect;

use super::checker::{acquire_reply, Checker, Entry, Next};
use crate::world::History;

const PROPERTY: &str = "S8";

/// See the module docs.
#[derive(Debug)]
pub struct CleanWaiters {
    /// How long before the entry's append stamp the proposer may have
    /// computed its due list.
    slack: Duration,
    /// (node, index) already seen (a replay after a restart is not the
    /// proposer's view at proposal time).
    checked: BTreeSet<(u64, u64)>,
    /// Whether the current entry is its node's first apply of it.
    first_apply: bool,
    /// (node, lease) → that node's clock when the lease entered its table
    /// (its apply of the entry that created the lease). Forgotten with a
    /// crash, like the node's deadline table.
    in_table_since: BTreeMap<(u64, u64), Duration>,
}

impl CleanWaiters {
    /// With `slack` (see the field).
    pub fn new(slack: Duration) -> Self {
        CleanWaiters {
            slack,
            checked: BTreeSet::new(),
            first_apply: false,
            in_table_since: BTreeMap::new(),
        }
    }
}

/// Every due list an entry carries (a packed entry's, command by command).
fn dues_of(cmd: &Command) -> Vec<&DueList> {
    match cmd {
        Command::Batch(cmds) => cmds.iter().filter_map(due_of).collect(),
        c => due_of(c).into_iter().collect(),
    }
}

/// The due list of one command: an `Expire`, another leader duty's, or a
/// client command's of any kind, bare or wrapped (`Command::due`).
fn due_of(cmd: &Command) -> Option<&DueList> {
    match cmd {
        Command::Expire(d) => Some(d),
        c => c.due(),
    }
}

/// Whether `lease` is granted by one of the entry's own acquires (of any
/// kind).
fn is_own_acquire(e: &Entry<'_>, lease: u64) -> bool {
    e.parts.iter().any(|(part, response)| {
        acquire_reply(part, response).is_some_and(|(_, r)| {
            matches!(&r.outcome, AcquireOutcome::Granted { lease_id, .. } if *lease_id == lease)
        })
    })
}

impl Checker for CleanWaiters {
    fn property(&self) -> &'static str {
        PROPERTY
    }

    fn on_entry(&mut self, e: &Entry<'_>, _h: &mut History) {
        self.first_apply = self.checked.insert((e.node_id, e.index));
    }

    fn on_effect(&mut self, e: &Entry<'_>, effect: &Effect, h: &mut History) -> Next {
        let node_id = e.node_id;
        match effect {
            Effect::LeaseSet { lease_id, .. } => {
                self.in_table_since
                    .entry((node_id, *lease_id))
                    .or_insert(e.now);
            }
            Effect::LeaseEnded { lease_id, .. } => {
                self.in_table_since.remove(&(node_id, *lease_id));
            }
            Effect::Granted {
                resource, lease_id, ..
            } => {
                // Before its own Promote has applied a leader attaches no due
                // list (its leases are not yet graced, docs/semantics.md "Time").
                let promoted = e
                    .table
                    .last_promote()
                    .is_some_and(|(l, _)| l == e.log_leader);
                // A lease the entry's due list names was due at the proposal;
                // apply skipped it only because a renew committed in between
                // (that renew wins: not an S8 case).
                let named_due = dues_of(e.cmd)
                    .iter()
                    .any(|d| d.leases.iter().any(|l| l.lease_id == *lease_id));
                // S8 asks the entry to carry "the leases and waiters the
                // proposing leader sees as due", i.e. as its deadline table is
                // when it proposes. A lease whose creating entry this leader
                // applied only after this entry reached its log (so after the
                // proposal) was not in that table: its id did not even exist
                // yet (ids come from a replicated counter at apply), so no due
                // list could name it. This happens when the creating acquire
                // waited longer than its TTL between append and commit (its
                // deadline is append stamp + TTL): it is "born due", and the
                // hand-off was proposed while both entries waited for a quorum.
                // Not an S8 case: the leader's next expiry removes it, and S5
                // keeps its client from acting on the grant (its valid_until
                // counts from its send, before that stamp). A lease already in
                // the table at the stamp stays checked.
                let seen_at_proposal = self
                    .in_table_since
                    .get(&(node_id, *lease_id))
                    .is_none_or(|since| *since <= e.stamp);
                if e.log_leader.node_id == node_id
                    && promoted
                    && self.first_apply
                    && !named_due
                    && !is_own_acquire(e, *lease_id)
                    && seen_at_proposal
                {
                    if let Some(d) = e.deadlines.lease_deadline(*lease_id) {
                        if d + self.slack < e.stamp {
                            h.violation(
                                PROPERTY,
                                format!(
                                    "node {node_id} index {}: {resource} handed to lease {lease_id}, due {} ms before the entry reached the leader's log",
                                    e.index,
                                    (e.stamp - d).as_millis()
                                ),
                            );
                        }
                    }
                }
            }
            _ => {}
        }
        Next::Continue
    }

    fn on_crash(&mut self, node_id: u64) {
        self.in_table_since.retain(|(node, _), _| *node != node_id);
    }
}
