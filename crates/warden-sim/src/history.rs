//! The observer every node's state machine calls after each apply
//! (`warden_server::sim_hooks::Observer`): it records the apply in the run's
//! [`History`], runs the inline checkers (`checkers`, in their fixed
//! order), knows which nodes run (for the leader and for a stale leader's
//! forwarded expiries), and at the end of the run calls the end-of-run
//! checkers.

use std::collections::BTreeMap;
use std::hash::{Hash, Hasher};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use warden_core::table::{Applied, LockTable};
use warden_core::types::{Command, LeaderId};
use warden_core::{Deadlines, Effect};
use warden_server::sim_hooks::SimNode;

use crate::checkers::{self, Bounds, Checker, Entry, Next};
use crate::env::{global_now, SimClock};
use crate::world::{lock, Grant, History, SharedHistory};

/// Watches every node's state machine and runs the checkers.
#[derive(Debug)]
pub struct SimObserver {
    /// The history.
    history: SharedHistory,
    /// Each node's clock.
    clocks: BTreeMap<u64, SimClock>,
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
    /// An observer recording into `history`, with every node's clock and
    /// the checkers' `bounds`.
    pub fn new(history: SharedHistory, clocks: BTreeMap<u64, SimClock>, bounds: Bounds) -> Self {
        SimObserver {
            history,
            clocks,
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

    /// Forgets a crashed node (its deadline table dies with it).
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
        cmd: &Command,
        logged: &Command,
        applied: &Applied,
        table: &LockTable,
        deadlines: &Deadlines,
        stamp: Duration,
        now: Duration,
    ) {
        let at = global_now();
        if std::env::var_os("WARDEN_SIM_TRACE").is_some() {
            // The append stamp, on this node's clock, as global time.
            let appended = self
                .clocks
                .get(&node_id)
                .map(|c| c.global_at(stamp).as_secs_f64())
                .unwrap_or(f64::NAN);
            eprintln!(
                "{:>8.3} s n{node_id} apply {index} (appended {appended:.3} s, leader {}/{}) {cmd:?} -> {:?}",
                at.as_secs_f64(),
                log_leader.term,
                log_leader.node_id,
                applied.effects
            );
        }
        let entry = Entry {
            node_id,
            index,
            log_leader,
            cmd,
            parts: checkers::parts(cmd, &applied.response),
            logged,
            logged_parts: checkers::parts(logged, &applied.response),
            table,
            deadlines,
            stamp,
            now,
            at,
            digest: hash_of(&format!("{cmd:?}")),
        };
        let mut checkers = lock(&self.checkers);
        let mut h = lock(&self.history);
        h.applies += 1;
        for c in checkers.iter_mut() {
            c.on_entry(&entry, &mut h);
        }
        for effect in &applied.effects {
            let passed = checkers
                .iter_mut()
                .all(|c| c.on_effect(&entry, effect, &mut h) == Next::Continue);
            if passed {
                Self::record(&mut h, effect, at);
            }
        }
        h.last_table.insert(node_id, (index, table.clone()));
    }

    fn on_started(&self, node: Arc<dyn SimNode>) {
        lock(&self.nodes).insert(node.node_id(), Arc::downgrade(&node));
    }

    fn clock_of(&self, node_id: u64) -> Option<Duration> {
        self.clocks.get(&node_id).map(|c| c.now())
    }

    fn forward_expiry(&self, from: u64, cmd: Command) {
        let Some(leader) = self.leader_node(Some(from)) else {
            return;
        };
        tokio::spawn(async move {
            leader.propose_duty(cmd).await;
        });
    }
}
