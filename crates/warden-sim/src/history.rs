//! What a run records (every apply on every node, every client call) and the
//! checkers, one per property of SEMANTICS.md. Inline checkers run at each
//! apply; the others run on the whole history at the end of the run.

use std::collections::{BTreeMap, BTreeSet};
use std::hash::{Hash, Hasher};
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::Duration;

use warden_core::table::{Applied, LockTable};
use warden_core::types::{AcquireOutcome, Command, LeaderId, Response};
use warden_core::{Deadlines, Effect, FreeReason, LeaseEndReason};
use warden_server::sim_hooks::SimNode;

use crate::env::{global_now, SimClock};

/// A checker's finding.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    /// The property (S1, S2, FENCE, S3, S4, S5, S6, S7, S8, L1, L2, L3).
    pub property: &'static str,
    /// Global simulated time of the finding.
    pub at: Duration,
    /// What was seen.
    pub message: String,
}

/// One client's belief that it holds a grant (S5).
#[derive(Clone, Debug)]
pub struct Belief {
    /// The client.
    pub client: String,
    /// The resource.
    pub resource: String,
    /// The lease.
    pub lease_id: u64,
    /// The grant's token.
    pub token: u64,
    /// Global time the grant was acknowledged to the client.
    pub since: Duration,
    /// Global time until which the client believes it holds the grant
    /// (its `valid_until`, on its own clock, converted to global time).
    pub until: Duration,
}

/// An accepted or refused write at the fenced resource.
#[derive(Clone, Debug)]
pub struct FenceWrite {
    /// The resource.
    pub resource: String,
    /// Token presented.
    pub token: u64,
    /// The writer's lease.
    pub lease_id: u64,
    /// Accepted by the fence.
    pub accepted: bool,
}

#[derive(Clone, Debug)]
struct GrantSeen {
    lease_id: u64,
    token: u64,
    first_at: Duration,
}

/// Everything a run records.
#[derive(Debug, Default)]
pub struct History {
    /// Checker findings.
    pub violations: Vec<Violation>,
    /// Resources of the workload (for state digests).
    pub resources: Vec<String>,
    /// index → (command hash, holders digest, first node that applied it).
    per_index: BTreeMap<u64, (u64, u64, u64)>,
    /// (resource, grant index, token) → grant (one entry may grant one
    /// resource more than once, each with its own token).
    grants: BTreeMap<(String, u64, u64), GrantSeen>,
    /// (node, index) already checked by S8 (a replay after a restart is not
    /// the proposer's view at proposal time).
    s8_checked: BTreeSet<(u64, u64)>,
    /// (node, lease) → that node's clock when the lease entered its table
    /// (its apply of the entry that created the lease). For S8.
    lease_in_table_since: BTreeMap<(u64, u64), Duration>,
    /// lease → (why it ended, first global time any node applied that).
    lease_end: BTreeMap<u64, (LeaseEndReason, Duration)>,
    /// (node, client, request) → index that executed it (S7).
    executed: BTreeMap<(u64, u64, u64), u64>,
    /// Last table per node (after its last apply).
    pub last_table: BTreeMap<u64, (u64, LockTable)>,
    /// Entries applied, all nodes.
    pub applies: u64,
    /// Client beliefs (S5).
    pub beliefs: Vec<Belief>,
    /// lease → (global send time of its last acknowledged acquire or renew, TTL ms).
    pub last_ack_send: BTreeMap<u64, (Duration, u64)>,
    /// lease → (global end time of its last acquire or renew call, acknowledged
    /// or not: a failed call may still have committed; TTL ms). For L2.
    pub last_call_end: BTreeMap<u64, (Duration, u64)>,
    /// Acknowledged grants: (resource, lease, token).
    pub acked_grants: Vec<(String, u64, u64)>,
    /// Acknowledged releases: (resource, lease, token).
    pub acked_releases: Vec<(String, u64, u64)>,
    /// Writes at the fenced resource, in order.
    pub fence_writes: Vec<FenceWrite>,
    /// Global time from which no fault is active (heal).
    pub healed_at: Option<Duration>,
    /// Leaderless time: (from, to) global intervals in which no reachable leader existed.
    pub leaderless: Vec<(Duration, Duration)>,
    /// Global time the run ended (set before the end-of-run checkers).
    pub ended_at: Duration,
    /// Client calls that succeeded / failed.
    pub calls_ok: u64,
    /// Client calls that failed.
    pub calls_failed: u64,
}

impl History {
    /// Records a finding.
    pub fn violation(&mut self, property: &'static str, message: String) {
        // Outside a host (end-of-run checkers) the time is the run's end.
        let at = turmoil::sim_elapsed().unwrap_or(self.ended_at);
        if self.violations.len() < 50 {
            self.violations.push(Violation {
                property,
                at,
                message,
            });
        }
    }
}

/// The shared history.
pub type Shared = Arc<Mutex<History>>;

/// Locks the history.
pub fn lock(h: &Shared) -> std::sync::MutexGuard<'_, History> {
    h.lock().unwrap_or_else(PoisonError::into_inner)
}

fn hash_of<T: Hash>(v: &T) -> u64 {
    let mut s = std::collections::hash_map::DefaultHasher::new();
    v.hash(&mut s);
    s.finish()
}

/// Watches every node's state machine (the production store calls it after
/// each apply) and runs the inline checkers.
#[derive(Debug)]
pub struct SimObserver {
    /// The history.
    pub history: Shared,
    /// Each node's clock.
    pub clocks: BTreeMap<u64, SimClock>,
    /// Running nodes (weak: a crashed node's handle dies with its runtime).
    pub nodes: Mutex<BTreeMap<u64, Weak<dyn SimNode>>>,
    /// Slack of the S8 check: how long before the entry's append stamp the
    /// proposer may have computed its due list.
    pub s8_slack: Duration,
}

impl SimObserver {
    /// The node that leads now, as the nodes themselves say (not `except`).
    pub fn leader_node(&self, except: Option<u64>) -> Option<Arc<dyn SimNode>> {
        let nodes = self.nodes.lock().unwrap_or_else(PoisonError::into_inner);
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

    /// Leader ids the running nodes claim now.
    pub fn claimed_leaders(&self) -> Vec<(u64, LeaderId)> {
        let nodes = self.nodes.lock().unwrap_or_else(PoisonError::into_inner);
        nodes
            .iter()
            .filter_map(|(id, w)| Some((*id, w.upgrade()?.leader_id_if_leader()?)))
            .collect()
    }

    /// Forgets a crashed node (its deadline table dies with it).
    pub fn forget(&self, node_id: u64) {
        self.nodes
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&node_id);
        lock(&self.history)
            .lease_in_table_since
            .retain(|(node, _), _| *node != node_id);
    }
}

/// The commands of an entry with their responses: a packed entry's
/// (`Command::Batch`) one by one, any other entry as itself.
fn parts<'a>(cmd: &'a Command, response: &'a Response) -> Vec<(&'a Command, &'a Response)> {
    match (cmd, response) {
        (Command::Batch(cmds), Response::Batch(rs)) if cmds.len() == rs.len() => {
            cmds.iter().zip(rs).collect()
        }
        _ => vec![(cmd, response)],
    }
}

/// Every due list an entry carries (a packed entry's, command by command).
fn dues_of(cmd: &Command) -> Vec<&warden_core::types::DueList> {
    match cmd {
        Command::Batch(cmds) => cmds.iter().filter_map(due_of).collect(),
        c => due_of(c).into_iter().collect(),
    }
}

fn due_of(cmd: &Command) -> Option<&warden_core::types::DueList> {
    match cmd {
        Command::Acquire(a) => a.due.as_ref(),
        Command::Release(r) => r.due.as_ref(),
        Command::Revoke(r) => r.due.as_ref(),
        Command::ForceRelease(f) => f.due.as_ref(),
        Command::EndLockDelay(e) => e.due.as_ref(),
        Command::Expire(d) => Some(d),
        _ => None,
    }
}

fn header_of(cmd: &Command) -> Option<(u64, u64)> {
    match cmd {
        Command::Acquire(a) => Some((a.header.client_id, a.header.request_id)),
        Command::LeaseGrant(g) => Some((g.header.client_id, g.header.request_id)),
        _ => None,
    }
}

impl warden_server::sim_hooks::Observer for SimObserver {
    fn on_apply(
        &self,
        node_id: u64,
        index: u64,
        log_leader: LeaderId,
        cmd: &Command,
        applied: &Applied,
        table: &LockTable,
        deadlines: &Deadlines,
        stamp: Duration,
        now: Duration,
    ) {
        let g = global_now();
        if std::env::var_os("WARDEN_SIM_TRACE").is_some() {
            // The append stamp, on this node's clock, as global time.
            let appended = self
                .clocks
                .get(&node_id)
                .map(|c| c.global_at(stamp).as_secs_f64())
                .unwrap_or(f64::NAN);
            eprintln!(
                "{:>8.3} s n{node_id} apply {index} (appended {appended:.3} s, leader {}/{}) {cmd:?} -> {:?}",
                g.as_secs_f64(),
                log_leader.term,
                log_leader.node_id,
                applied.effects
            );
        }
        let mut h = lock(&self.history);
        h.applies += 1;
        // S1: the table's own invariants (one holder per resource, leases and
        // grants consistent) after every apply.
        if let Err(e) = table.check_invariants() {
            h.violation("S1", format!("node {node_id} index {index}: {e}"));
        }
        // S1/S3: every node that applies index i applies the same entry and
        // reaches the same holders (no committed state differs, no
        // acknowledged entry is replaced).
        let holders: Vec<_> = h
            .resources
            .iter()
            .map(|r| table.holder(r).map(|v| (v.lease_id, v.fencing_token)))
            .collect();
        let digest = (hash_of(&format!("{cmd:?}")), hash_of(&holders));
        match h.per_index.get(&index).copied() {
            Some((c, s, first)) if (c, s) != digest => {
                let what = if c != digest.0 { "entry" } else { "holders" };
                h.violation(
                    if c != digest.0 { "S3" } else { "S1" },
                    format!(
                        "index {index}: node {node_id} applied a different {what} than node {first}"
                    ),
                );
            }
            Some(_) => {}
            None => {
                h.per_index.insert(index, (digest.0, digest.1, node_id));
            }
        }
        // S7: a client request executes at most once per node (also within
        // one packed entry).
        let parts = parts(cmd, &applied.response);
        let mut executed_here = Vec::new();
        for (part, response) in &parts {
            let Some((client, request)) = header_of(part) else {
                continue;
            };
            let executed = match response {
                Response::Acquire(r) => !r.retried,
                Response::LeaseGranted { .. } => true,
                _ => false,
            };
            if executed {
                if executed_here.contains(&(client, request)) {
                    h.violation(
                        "S7",
                        format!(
                            "node {node_id}: request {request} of client {client} executed twice in entry {index}"
                        ),
                    );
                }
                executed_here.push((client, request));
                if let Some(prev) = h.executed.get(&(node_id, client, request)).copied() {
                    if prev != index {
                        h.violation(
                            "S7",
                            format!(
                                "node {node_id}: request {request} of client {client} executed twice (index {prev} and {index})"
                            ),
                        );
                    }
                } else {
                    h.executed.insert((node_id, client, request), index);
                }
            }
        }
        let is_own_acquire = |lease: u64| {
            parts.iter().any(|(part, response)| match (part, response) {
                (Command::Acquire(_), Response::Acquire(r)) => {
                    matches!(&r.outcome, AcquireOutcome::Granted { lease_id, .. } if *lease_id == lease)
                }
                _ => false,
            })
        };
        let first_apply = h.s8_checked.insert((node_id, index));
        // S2 within one entry: a second grant of a resource by the same
        // entry needs a higher token than the first.
        let mut granted_here: Vec<(&str, u64)> = Vec::new();
        for e in &applied.effects {
            match e {
                Effect::LeaseSet { lease_id, .. } => {
                    h.lease_in_table_since
                        .entry((node_id, *lease_id))
                        .or_insert(now);
                }
                Effect::Granted {
                    resource,
                    lease_id,
                    fencing_token,
                    grant_index,
                } => {
                    if granted_here
                        .iter()
                        .any(|(r, t)| *r == resource.as_str() && *t >= *fencing_token)
                    {
                        h.violation(
                            "S2",
                            format!(
                                "node {node_id} index {index}: {resource} granted twice by one entry, the second time (lease {lease_id}) with token {fencing_token}, not above the first"
                            ),
                        );
                        continue;
                    }
                    granted_here.push((resource.as_str(), *fencing_token));
                    let key = (resource.clone(), *grant_index, *fencing_token);
                    match h.grants.get(&key) {
                        Some(seen)
                            if seen.token != *fencing_token || seen.lease_id != *lease_id =>
                        {
                            let msg = format!(
                                "{resource} at index {grant_index}: node {node_id} granted lease {lease_id} token {fencing_token}, another node lease {} token {}",
                                seen.lease_id, seen.token
                            );
                            h.violation("S1", msg);
                        }
                        Some(_) => {}
                        None => {
                            h.grants.insert(
                                key,
                                GrantSeen {
                                    lease_id: *lease_id,
                                    token: *fencing_token,
                                    first_at: g,
                                },
                            );
                        }
                    }
                    // S8: a hand-off on the proposing leader never goes to a
                    // lease its own deadline table saw as due.
                    // Before its own Promote has applied a leader attaches
                    // no due list (its leases are not yet graced).
                    let promoted = table.last_promote().is_some_and(|(l, _)| l == log_leader);
                    // A lease the entry's due list names was due at the
                    // proposal; apply skipped it only because a renew
                    // committed in between (that renew wins: not an S8 case).
                    let named_due = dues_of(cmd)
                        .iter()
                        .any(|d| d.leases.iter().any(|l| l.lease_id == *lease_id));
                    // S8 asks the entry to carry "the leases and waiters the
                    // proposing leader sees as due", i.e. as its deadline
                    // table is when it proposes. A lease whose creating entry
                    // this leader applied only after this entry reached its
                    // log (so after the proposal) was not in that table: its
                    // id did not even exist yet (ids come from a replicated
                    // counter at apply), so no due list could name it. This
                    // happens when the creating acquire waited longer than its
                    // TTL between append and commit (its deadline is append
                    // stamp + TTL): it is "born due", and the hand-off was
                    // proposed while both entries waited for a quorum. Not an
                    // S8 case: the leader's next expiry removes it, and S5
                    // keeps its client from acting on the grant (its
                    // valid_until counts from its send, before that stamp).
                    // A lease already in the table at the stamp stays checked.
                    let seen_at_proposal = h
                        .lease_in_table_since
                        .get(&(node_id, *lease_id))
                        .is_none_or(|since| *since <= stamp);
                    if log_leader.node_id == node_id
                        && promoted
                        && first_apply
                        && !named_due
                        && !is_own_acquire(*lease_id)
                        && seen_at_proposal
                    {
                        if let Some(d) = deadlines.lease_deadline(*lease_id) {
                            if d + self.s8_slack < stamp {
                                h.violation(
                                    "S8",
                                    format!(
                                        "node {node_id} index {index}: {resource} handed to lease {lease_id}, due {} ms before the entry reached the leader's log",
                                        (stamp - d).as_millis()
                                    ),
                                );
                            }
                        }
                    }
                }
                Effect::Freed {
                    resource,
                    lease_id,
                    fencing_token,
                    reason: FreeReason::Released,
                } => {
                    // S6: a release frees only the exact grant it names (in
                    // a packed entry: a grant one of its releases names).
                    let releases: Vec<&warden_core::types::Release> = parts
                        .iter()
                        .filter_map(|(part, _)| match part {
                            Command::Release(r) => Some(r),
                            _ => None,
                        })
                        .collect();
                    if let Some(r) = releases.first() {
                        let names = |r: &warden_core::types::Release| {
                            r.lease_id == *lease_id
                                && r.fencing_token.is_none_or(|t| t == *fencing_token)
                                && r.resource.as_ref().is_none_or(|x| x == resource)
                        };
                        let named_ok = releases.iter().any(|r| names(r));
                        if !named_ok {
                            h.violation(
                                "S6",
                                format!(
                                    "node {node_id} index {index}: release of lease {} token {:?} freed {resource} lease {lease_id} token {fencing_token}",
                                    r.lease_id, r.fencing_token
                                ),
                            );
                        }
                    }
                }
                Effect::LeaseEnded { lease_id, reason } => {
                    h.lease_end.entry(*lease_id).or_insert((*reason, g));
                    h.lease_in_table_since.remove(&(node_id, *lease_id));
                    // S4: never expired earlier than TTL × (1 − ρ) after the
                    // send of its last acknowledged renew.
                    if *reason == LeaseEndReason::Expired {
                        if let Some((send, ttl_ms)) = h.last_ack_send.get(lease_id).copied() {
                            let min_life = Duration::from_millis(ttl_ms * 99 / 100);
                            if g + Duration::from_millis(2) < send + min_life {
                                h.violation(
                                    "S4",
                                    format!(
                                        "node {node_id} index {index}: lease {lease_id} expired {} ms after the send of its last acknowledged renew (TTL {ttl_ms} ms)",
                                        g.saturating_sub(send).as_millis()
                                    ),
                                );
                            }
                        }
                    }
                }
                _ => {}
            }
        }
        h.last_table.insert(node_id, (index, table.clone()));
    }

    fn on_started(&self, node: Arc<dyn SimNode>) {
        self.nodes
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(node.node_id(), Arc::downgrade(&node));
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

/// Knobs of the end-of-run checkers.
#[derive(Clone, Copy, Debug)]
pub struct Bounds {
    /// E (ms): the most a leader change may lengthen a lease.
    pub e_ms: u64,
    /// Slack for scheduling (ms).
    pub slack_ms: u64,
}

/// Runs the end-of-run checkers: S2, fence, S3, S5, L2.
pub fn check_end(h: &mut History, bounds: Bounds) {
    // S2: per resource, tokens strictly grow with the grant index.
    let mut by_res: BTreeMap<&str, Vec<(u64, u64, u64)>> = BTreeMap::new();
    for ((r, idx, _), g) in &h.grants {
        by_res
            .entry(r)
            .or_default()
            .push((*idx, g.token, g.lease_id));
    }
    let mut found = Vec::new();
    for (r, list) in &by_res {
        for w in list.windows(2) {
            if w[1].1 <= w[0].1 {
                found.push((
                    "S2",
                    format!(
                        "{r}: grant at index {} has token {} after token {} at index {}",
                        w[1].0, w[1].1, w[0].1, w[0].0
                    ),
                ));
            }
        }
    }
    // Fence: never a lower token accepted after a higher one; an equal token
    // only for the same lease (else two holders shared a token).
    let mut highest: BTreeMap<&str, (u64, u64)> = BTreeMap::new();
    for w in &h.fence_writes {
        if !w.accepted {
            continue;
        }
        if let Some((t, lease)) = highest.get(w.resource.as_str()).copied() {
            if w.token < t || (w.token == t && w.lease_id != lease) {
                found.push((
                    "FENCE",
                    format!(
                        "{}: accepted token {} (lease {}) after token {t} (lease {lease})",
                        w.resource, w.token, w.lease_id
                    ),
                ));
            }
        }
        highest.insert(&w.resource, (w.token, w.lease_id));
    }
    // S3: every acknowledged grant is in the committed history, and no
    // acknowledged release is undone in the final state.
    let granted: BTreeSet<(String, u64, u64)> = h
        .grants
        .iter()
        .map(|((r, _, _), g)| (r.clone(), g.lease_id, g.token))
        .collect();
    for g in &h.acked_grants {
        if !granted.contains(g) {
            found.push((
                "S3",
                format!(
                    "acknowledged grant of {} to lease {} token {} is in no node's applied log",
                    g.0, g.1, g.2
                ),
            ));
        }
    }
    let final_index = h.last_table.values().map(|(i, _)| *i).max().unwrap_or(0);
    for (node, (index, table)) in h.last_table.iter().filter(|(_, (i, _))| *i == final_index) {
        for (r, lease, token) in &h.acked_releases {
            if let Some(v) = table.holder(r) {
                if v.lease_id == *lease && v.fencing_token == *token {
                    found.push((
                        "S3",
                        format!("node {node} at index {index}: acknowledged release of {r} lease {lease} token {token} is undone"),
                    ));
                }
            }
        }
    }
    // S5: no client believes it holds a grant past the start of another's grant.
    for b in &h.beliefs {
        for ((r, idx, _), g) in &h.grants {
            if *r != b.resource || g.lease_id == b.lease_id || g.token <= b.token {
                continue;
            }
            if g.first_at < b.until && g.first_at > b.since {
                found.push((
                    "S5",
                    format!(
                        "client {} believed it held {r} (lease {}, token {}) until {:?} but lease {} was granted it (token {}, index {idx}) at {:?}",
                        b.client, b.lease_id, b.token, b.until, g.lease_id, g.token, g.first_at
                    ),
                ));
            }
        }
    }
    // L2: a lease whose last renew was committed at r is gone by
    // r + TTL + E (+ leaderless time + slack). r is bounded by the end of
    // the lease's last acquire or renew call, acknowledged or not.
    let end_of_run = h.ended_at;
    for (lease, (send, ttl_ms)) in &h.last_call_end {
        let bound0 = *send + Duration::from_millis(ttl_ms + bounds.e_ms + bounds.slack_ms);
        let ended = h.lease_end.get(lease).map(|(_, at)| *at);
        let upto = ended.unwrap_or(end_of_run);
        let leaderless: Duration = h
            .leaderless
            .iter()
            .map(|(a, b)| (*b).min(upto).saturating_sub((*a).max(*send)))
            .sum();
        let bound = bound0 + leaderless;
        if upto > bound && (ended.is_some() || end_of_run > bound) {
            // Leases still renewed by a live holder are not in question: the
            // last acknowledged send is the latest renew.
            found.push((
                "L2",
                format!(
                    "lease {lease} (TTL {ttl_ms} ms, last renew call ended at {send:?}) still live at {upto:?}, past the bound {bound:?}"
                ),
            ));
        }
    }
    for (p, m) in found {
        h.violation(p, m);
    }
}
