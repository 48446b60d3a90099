//! The shared world of one run, at the bottom of the crate: the record of
//! what happened ([`History`], behind [`SharedHistory`]). The checkers read
//! it; the clients, the prober and the observer write it.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use warden_core::table::LockTable;
use warden_core::LeaseEndReason;

/// Locks `m`, also after a panic elsewhere poisoned it (a run reports what
/// it recorded so far rather than a second panic).
pub fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

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

/// One client's belief that it holds a grant (docs/semantics.md S5).
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

/// A grant as the first node that applied it made it.
#[derive(Clone, Debug)]
pub struct Grant {
    /// The lease it went to.
    pub lease_id: u64,
    /// Its fencing token.
    pub token: u64,
    /// Global time of its first apply on any node.
    pub first_at: Duration,
}

/// Everything a run records. The checkers keep their own working state;
/// this is what several of them, the clients and the runner share.
#[derive(Debug, Default)]
pub struct History {
    /// Checker findings, in the order found (at most 50 are kept).
    pub violations: Vec<Violation>,
    /// Resources of the workload (for state digests).
    pub resources: Vec<String>,
    /// (resource, grant index, token) → grant (one entry may grant one
    /// resource more than once, each with its own token).
    pub grants: BTreeMap<(String, u64, u64), Grant>,
    /// lease → (why it ended, first global time any node applied that).
    pub lease_end: BTreeMap<u64, (LeaseEndReason, Duration)>,
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
    /// Client calls that succeeded.
    pub calls_ok: u64,
    /// Client calls that failed.
    pub calls_failed: u64,
}

impl History {
    /// Records a finding (the first 50 of a run are kept).
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

/// The history every part of a run records into.
pub type SharedHistory = Arc<Mutex<History>>;
