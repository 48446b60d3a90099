//! The observer every node's state machine calls after each apply
//! (`warden_server::sim_hooks::Observer`): it records the apply in the run's
//! [`History`], runs the inline checkers (`checkers`, in their fixed
//! order), knows which nodes run (for the fault scripts' leader), and at
//! the end of the run calls the end-of-run checkers.

use std::collections::BTreeMap;
use std::hash::{Hash, Hasher};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use warden_core::table::{Applied, LockTable};
use warden_core::types::{LeaderId, LogEntry};
use warden_core::Effect;
use warden_server::sim_hooks::SimNode;

use crate::checkers::{self, Bounds, Checker, Entry, Next};
use crate::env::global_now;
use crate::world::{lock, Grant, History, SharedHistory};

/// Watches every node's state machine and runs the checkers.
#[derive(Debug)]
pub struct SimObserver {
    /// The history.
    history: SharedHistory,
    /// Running nodes (weak: a crashed node's handle dies with its runtime).
    nodes: Mutex<BTreeMap<u64, Weak<dyn SimNode>>>,
    /// The checkers, in the order they are called ([`checkers::all`]).
    checkers: Mutex<Vec<Box<dyn Checker>>>,
}

fn hash_of<T: Hash>(v: &T) -> u64 {
    let mut s = std::collections::hash_map::DefaultHasher::new();
    v.hash(&mut s);
    s.finish()
}

impl SimObserver {
    /// An observer recording into `history`, with the checkers' `bounds`.
    pub fn new(history: SharedHistory, bounds: Bounds) -> Self {
        SimObserver {
            history,
            nodes: Mutex::new(BTreeMap::new()),
            checkers: Mutex::new(checkers::all(bounds)),
        }
    }

    /// The node that leads now, as the nodes themselves say (not `except`).
    pub fn leader_node(&self, except: Option<u64>) -> Option<Arc<dyn SimNode>> {
        let nodes = lock(&self.nodes);
        let mut best: Option<(u64, Arc<dyn SimNode>)> = None;
        for (id, w) in nodes.iter() {
            if Some(*id) == except {
                continue;
            }
            let Some(n) = w.upgrade() else { continue };
            if let Some(l) = n.leader_id_if_leader() {
                if best.as_ref().is_none_or(|(t, _)| l.term > *t) {
                    best = Some((l.term, n));
                }
            }
        }
        best.map(|(_, n)| n)
    }

    /// Forgets a crashed node (its in-memory state dies with it).
    pub fn forget(&self, node_id: u64) {
        lock(&self.nodes).remove(&node_id);
        for c in lock(&self.checkers).iter_mut() {
            c.on_crash(node_id);
        }
    }

    /// Ends the run at global time `ended_at` and runs the end-of-run
    /// checkers on the whole history.
    pub fn finish(&self, ended_at: Duration) {
        let mut checkers = lock(&self.checkers);
        let mut h = lock(&self.history);
        h.ended_at = ended_at;
        for c in checkers.iter_mut() {
            c.at_end(&mut h);
        }
    }

    /// Records what the history keeps of an effect every checker passed.
    fn record(h: &mut History, effect: &Effect, at: Duration) {
        match effect {
            Effect::Granted {
                resource,
                lease_id,
                fencing_token,
                grant_index,
                mode,
                slot,
            } => {
                h.grants
                    .entry((resource.clone(), *grant_index, *fencing_token))
                    .or_insert(Grant {
                        lease_id: *lease_id,
                        token: *fencing_token,
                        mode: *mode,
                        slot: *slot,
                        first_at: at,
                    });
            }
            Effect::LeaseEnded { lease_id, reason } => {
                h.lease_end.entry(*lease_id).or_insert((*reason, at));
            }
            _ => {}
        }
    }
}

impl warden_server::sim_hooks::Observer for SimObserver {
    fn on_apply(
        &self,
        node_id: u64,
        index: u64,
        log_leader: LeaderId,
        entry: &LogEntry,
        logged: &LogEntry,
        applied: &Applied,
        table: &LockTable,
    ) {
        let at = global_now();
        let cmd = &entry.command;
        if std::env::var_os("WARDEN_SIM_TRACE").is_some() {
            eprintln!(
                "{:>8.3} s n{node_id} apply {index} (stamp {} ms by {}/{}, now {} ms, leader {}/{}) {cmd:?} -> {:?}",
                at.as_secs_f64(),
                entry.stamp.at_ms,
                entry.stamp.leader.term,
                entry.stamp.leader.node_id,
                table.now_ms(),
                log_leader.term,
                log_leader.node_id,
                applied.effects
            );
        }
        let mut checkers = lock(&self.checkers);
        let mut h = lock(&self.history);
        // The node's table after its previous normal entry (Raft's blank
        // and membership entries between change no table), forgotten with
        // a crash.
        let before = h.last_table.remove(&node_id).filter(|(i, _)| *i < index);
        let e = Entry {
            node_id,
            index,
            log_leader,
            stamp: entry.stamp,
            cmd,
            parts: checkers::parts(cmd, &applied.response),
            logged: &logged.command,
            logged_parts: checkers::parts(&logged.command, &applied.response),
            table,
            before: before.as_ref().map(|(i, t)| (*i, t)),
            at,
            digest: hash_of(&format!("{cmd:?}")),
        };
        h.applies += 1;
        for c in checkers.iter_mut() {
            c.on_entry(&e, &mut h);
        }
        for effect in &applied.effects {
            let passed = checkers
                .iter_mut()
                .all(|c| c.on_effect(&e, effect, &mut h) == Next::Continue);
            if passed {
                Self::record(&mut h, effect, at);
            }
        }
        h.last_table.insert(node_id, (index, table.clone()));
    }

    fn on_started(&self, node: Arc<dyn SimNode>) {
        lock(&self.nodes).insert(node.node_id(), Arc::downgrade(&node));
    }
}
