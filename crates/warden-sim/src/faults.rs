//! The fault schedule: one fault at a time (a majority stays up and
//! connected between faults), drawn from the seed, or a scenario's script.
//! Crashing and restarting a node are here too: a crash drops the writes
//! its disks had not synced.

use std::sync::Arc;
use std::time::Duration;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use crate::env::Disks;
use crate::history::SimObserver;
use crate::scenarios::{Scenario, SLOW_LINK_MS};
use crate::world::{data_dir, host};

#[derive(Debug)]
enum Fault {
    /// Two sides cannot talk (both ways).
    Partition(Vec<u64>, Vec<u64>),
    /// `from` cannot reach `to` (one way).
    OneWay(u64, Vec<u64>),
    /// A crashed node (unsynced writes lost), restarted at the end.
    Crash(u64),
    /// A paused node: everything to and from it is held, then delivered.
    Pause(u64),
    /// Slow links around one node.
    Latency(u64),
    /// Every link between two nodes slow (ms each way).
    SlowLinks(u64),
    /// Slow links between a client host and every node (ms each way).
    ClientLatency(&'static str, u64),
    /// A paused client host: everything to and from it is held.
    PauseClient(&'static str),
}

/// The active fault schedule.
pub struct Faults {
    scenario: Scenario,
    nodes: Vec<u64>,
    rng: StdRng,
    active: Option<(Fault, Duration)>,
    next_at: Duration,
    observer: Arc<SimObserver>,
    disks: Arc<Disks>,
}

impl Faults {
    /// A schedule for `scenario` over `nodes`, drawing from `seed`;
    /// `observer` knows the leader and forgets a crashed node, `disks`
    /// crash with it.
    pub fn new(
        scenario: Scenario,
        nodes: Vec<u64>,
        seed: u64,
        observer: Arc<SimObserver>,
        disks: Arc<Disks>,
    ) -> Self {
        Faults {
            scenario,
            nodes,
            rng: StdRng::seed_from_u64(seed ^ 0xfa17),
            active: None,
            next_at: Duration::ZERO,
            observer,
            disks,
        }
    }

    fn others(&self, id: u64) -> Vec<u64> {
        self.nodes.iter().copied().filter(|n| *n != id).collect()
    }

    /// Every pair of distinct nodes, once.
    fn node_pairs(&self) -> Vec<(u64, u64)> {
        let mut pairs = Vec::new();
        for (i, x) in self.nodes.iter().enumerate() {
            for y in &self.nodes[i + 1..] {
                pairs.push((*x, *y));
            }
        }
        pairs
    }

    /// The node that leads now, if any.
    fn leader(&self) -> Option<u64> {
        self.observer.leader_node(None).map(|n| n.id)
    }

    /// Crashes node `id`: its unsynced writes are lost, and the observer
    /// forgets it.
    fn crash(&self, sim: &mut turmoil::Sim<'_>, id: u64) {
        for disk in self.disks.disks_of(&data_dir(id)) {
            disk.crash();
        }
        self.observer.forget(id);
        sim.crash(host(id));
    }

    /// Restarts node `id` on what its disks had synced.
    fn restart(&self, sim: &mut turmoil::Sim<'_>, id: u64) {
        for disk in self.disks.disks_of(&data_dir(id)) {
            disk.restart();
        }
        sim.bounce(host(id));
    }

    fn start(&mut self, sim: &mut turmoil::Sim<'_>, f: Fault) -> Fault {
        match &f {
            Fault::Partition(a, b) => {
                for x in a {
                    for y in b {
                        sim.partition(host(*x), host(*y));
                    }
                }
            }
            Fault::OneWay(from, to) => {
                for y in to {
                    sim.partition_oneway(host(*from), host(*y));
                }
            }
            Fault::Crash(id) => self.crash(sim, *id),
            Fault::Pause(id) => {
                for y in self.others(*id) {
                    sim.hold(host(*id), host(y));
                }
            }
            Fault::Latency(id) => {
                for y in self.others(*id) {
                    sim.set_link_latency(host(*id), host(y), Duration::from_millis(150));
                }
            }
            Fault::SlowLinks(ms) => {
                for (x, y) in self.node_pairs() {
                    sim.set_link_latency(host(x), host(y), Duration::from_millis(*ms));
                }
            }
            Fault::ClientLatency(c, ms) => {
                for y in &self.nodes {
                    sim.set_link_latency(*c, host(*y), Duration::from_millis(*ms));
                }
            }
            Fault::PauseClient(c) => {
                for y in &self.nodes {
                    sim.hold(*c, host(*y));
                }
            }
        }
        f
    }

    fn end(&mut self, sim: &mut turmoil::Sim<'_>, f: Fault) {
        match f {
            Fault::Partition(a, b) => {
                for x in &a {
                    for y in &b {
                        sim.repair(host(*x), host(*y));
                    }
                }
            }
            Fault::OneWay(from, to) => {
                for y in to {
                    sim.repair_oneway(host(from), host(y));
                }
            }
            Fault::Crash(id) => self.restart(sim, id),
            Fault::Pause(id) => {
                for y in self.others(id) {
                    sim.release(host(id), host(y));
                }
            }
            Fault::Latency(id) => {
                for y in self.others(id) {
                    sim.set_link_latency(host(id), host(y), Duration::from_millis(1));
                }
            }
            Fault::SlowLinks(_) => {
                for (x, y) in self.node_pairs() {
                    sim.set_link_latency(host(x), host(y), Duration::from_millis(1));
                }
            }
            Fault::ClientLatency(c, _) => {
                for y in &self.nodes {
                    sim.set_link_latency(c, host(*y), Duration::from_millis(1));
                }
            }
            Fault::PauseClient(c) => {
                for y in &self.nodes {
                    sim.release(c, host(*y));
                }
            }
        }
    }

    /// A fault drawn from the seed (random runs).
    fn pick(&mut self) -> Fault {
        let n = self.nodes.len();
        let leader = self.leader().unwrap_or(self.nodes[0]);
        let victim = if self.rng.random_bool(0.5) {
            leader
        } else {
            self.nodes[self.rng.random_range(0..n)]
        };
        match self.rng.random_range(0..6) {
            0 => {
                // A minority (1 of 3, 1–2 of 5) against the rest.
                let k = if n == 5 {
                    self.rng.random_range(1..=2)
                } else {
                    1
                };
                let mut minority = vec![victim];
                for x in self.nodes.clone() {
                    if minority.len() < k && x != victim {
                        minority.push(x);
                    }
                }
                let rest = self
                    .nodes
                    .iter()
                    .copied()
                    .filter(|x| !minority.contains(x))
                    .collect();
                Fault::Partition(minority, rest)
            }
            1 => Fault::Partition(vec![leader], self.others(leader)),
            2 => {
                let others = self.others(victim);
                let k = self.rng.random_range(1..=others.len());
                Fault::OneWay(victim, others[..k].to_vec())
            }
            3 => Fault::Crash(victim),
            4 => Fault::Pause(victim),
            _ => Fault::Latency(victim),
        }
    }

    /// Advances the schedule to `now`, in a fault phase from `start` to `end`.
    pub fn step(
        &mut self,
        sim: &mut turmoil::Sim<'_>,
        now: Duration,
        start: Duration,
        end: Duration,
    ) {
        if let Some((_, until)) = &self.active {
            if now >= *until || now >= end {
                if let Some((f, _)) = self.active.take() {
                    self.end(sim, f);
                }
                self.next_at = now.saturating_add(self.gap());
            }
            return;
        }
        if now < start || now >= end || now < self.next_at {
            return;
        }
        let scripted = match self.scenario {
            Scenario::Random => {
                let f = self.pick();
                let len = Duration::from_millis(self.rng.random_range(500..5_000));
                Some((f, len))
            }
            Scenario::RepeatedElections => self.leader().map(|l| {
                (
                    Fault::Partition(vec![l], self.others(l)),
                    Duration::from_millis(1_200),
                )
            }),
            Scenario::StalledLeaderExpiry => self.leader().map(|l| {
                self.next_at = Duration::MAX;
                (Fault::Pause(l), Duration::from_millis(6_000))
            }),
            Scenario::DueWaiter => {
                self.next_at = Duration::MAX;
                Some((Fault::PauseClient("w"), Duration::from_secs(30)))
            }
            Scenario::SlowRenewAck => {
                self.next_at = Duration::MAX;
                Some((Fault::ClientLatency("a", 700), Duration::from_secs(30)))
            }
            // Every peer link slow for the whole fault phase.
            Scenario::SlowLinks => {
                self.next_at = Duration::MAX;
                Some((Fault::SlowLinks(SLOW_LINK_MS), Duration::from_secs(600)))
            }
            // The leader crashes 2 s into the faults (snapshots exist by
            // then) and restarts from its snapshot 1 s later; once.
            Scenario::RetryAfterSnapshot => {
                if now < start + Duration::from_secs(2) {
                    return;
                }
                self.next_at = Duration::MAX;
                self.leader()
                    .map(|l| (Fault::Crash(l), Duration::from_secs(1)))
            }
            // These scenarios make their own faults (scenarios.rs).
            _ => None,
        };
        if let Some((f, len)) = scripted {
            if std::env::var_os("WARDEN_SIM_VERBOSE").is_some() {
                eprintln!("{:>8.3} s fault {f:?} for {len:?}", now.as_secs_f64());
            }
            let f = self.start(sim, f);
            self.active = Some((f, now + len));
        } else if self.scenario != Scenario::RepeatedElections {
            self.next_at = Duration::MAX;
        }
    }

    fn gap(&mut self) -> Duration {
        match self.scenario {
            Scenario::RepeatedElections => Duration::from_millis(900),
            Scenario::StalledLeaderExpiry | Scenario::RetryAfterSnapshot => Duration::MAX,
            _ => Duration::from_millis(self.rng.random_range(500..4_000)),
        }
    }

    /// Ends every fault (the healing phase starts).
    pub fn heal(&mut self, sim: &mut turmoil::Sim<'_>) {
        if let Some((f, _)) = self.active.take() {
            self.end(sim, f);
        }
        self.next_at = Duration::MAX;
    }
}
