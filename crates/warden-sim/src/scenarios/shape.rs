//! What a scenario is: the [`Scenario`] names a run's shape, its row
//! ([`Def`]) gives its name, default length, fault script and clients, and
//! its clients are given a [`Setup`].

use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use rand::rngs::StdRng;

use warden_server::config::TimingPreset;

use crate::faults::Script;
use crate::world::World;

/// The shape of a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scenario {
    /// Random faults and workload drawn from the seed.
    Random,
    /// Repeated elections while a dead holder's lease should run out (L2, etcd 9395).
    RepeatedElections,
    /// A waiter whose lease expired while it waited (S8, Jepsen etcd 3.4.3).
    DueWaiter,
    /// A leader stalled while a holder keeps renewing through the election
    /// (S4, L4, etcd 15247).
    StalledLeaderExpiry,
    /// A waiting acquire re-sent to the new leader after the old one
    /// crashed and restarted from a snapshot (S7).
    RetryAfterSnapshot,
    /// A renew acknowledged late: validity from the send, not the receipt (S5).
    SlowRenewAck,
    /// One expiry entry hands one resource on twice (S2: tokens).
    BatchedHandoff,
    /// Renews sent to a leader cut off from the others (S4/S5, etcd 15247).
    DeposedLeaderRenew,
    /// An acquire whose reply was lost, retried on the new leader (S7).
    LostReplyNewLeader,
    /// A release held in the network, delivered after a newer grant (S6).
    RetriedRelease,
    /// Every peer link slow: calls still complete while it lasts (L3, L1).
    SlowLinks,
    /// One principal tries to renew, use, release and revoke another's
    /// lease (OWNERS, etcd PR 8031).
    ForeignLease,
    /// Random faults and a workload of every lock kind: mutexes, read-write
    /// locks, semaphores (docs/semantics.md "Lock kinds").
    Kinds,
    /// Five nodes in three regions with the `wan` timing preset, the leader
    /// crashed once (L1, L3; docs/operations.md "Latency between nodes").
    Regions,
    /// One principal floods every consumable (leases, values, a queue,
    /// client ids) while others acquire, renew, proclaim and queue (QUOTAS).
    Flood,
}

/// What a scenario's clients are given.
pub struct Setup<'a> {
    /// What every client shares (history, fence, bugs).
    pub world: World,
    /// The nodes' addresses.
    pub endpoints: Vec<String>,
    /// The random workload's resources.
    pub resources: Vec<String>,
    /// Global time the fault phase ends.
    pub fault_end: Duration,
    /// Global time the healing phase ends at the latest.
    pub heal_end: Duration,
    /// Set by the random workload's healer when it is done.
    pub healer_done: Arc<AtomicBool>,
    /// The run's seed.
    pub seed: u64,
    /// The run's random draws (clients of the random workload).
    pub rng: &'a mut StdRng,
}

/// Spawns a scenario's clients.
pub type Spawn = fn(&mut turmoil::Sim<'_>, &mut Setup<'_>);

/// One scenario: its row of the table in `scenarios/mod.rs`.
pub struct Def {
    /// Its variant (its row's position in the table is its discriminant).
    pub scenario: Scenario,
    /// Its `--scenario` name.
    pub name: &'static str,
    /// Simulated seconds of faults it needs by default (`--fault-secs`).
    pub fault_secs: u64,
    /// Its fault schedule.
    pub faults: Script,
    /// Spawns its clients.
    pub spawn: Spawn,
    /// Its cluster: how many nodes (None: 3, or 5 for 30 % of `random`
    /// seeds), the timing preset they run, and the one-way latency of each
    /// link between two nodes for the whole run (None: turmoil's
    /// 0.2–3 ms everywhere; a fault may change links for its time).
    pub cluster: ClusterShape,
}

/// How many nodes a scenario runs, with which timing, how far apart.
#[derive(Clone, Copy, Debug)]
pub struct ClusterShape {
    /// Nodes (None: drawn, see [`Def::cluster`]).
    pub nodes: Option<u64>,
    /// The nodes' timing preset.
    pub preset: TimingPreset,
    /// (node, node) → one-way latency in ms, for the whole run.
    pub links: Option<fn(u64, u64) -> u64>,
}

/// The shape of every scenario but `regions`: 3 nodes (or drawn), the
/// `lan` preset, turmoil's latencies.
pub const LAN: ClusterShape = ClusterShape {
    nodes: None,
    preset: TimingPreset::Lan,
    links: None,
};

/// `ms` milliseconds.
pub const fn ms(ms: u64) -> Duration {
    Duration::from_millis(ms)
}
