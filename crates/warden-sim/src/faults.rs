//! The fault schedule: one fault at a time (a majority stays up and
//! connected between faults), drawn from the seed ([`Script::Random`]) or
//! following a named scenario's script ([`Script::Scripted`], given by the
//! scenario's row in `scenarios`). Crashing and restarting a node are here
//! too: a crash drops the writes its disks had not synced.

use std::sync::Arc;
use std::time::Duration;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use crate::env::Disks;
use crate::history::SimObserver;
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

/// A scenario's fault schedule.
#[derive(Clone, Copy, Debug)]
pub enum Script {
    /// Faults drawn from the seed: a minority partitioned, the leader
    /// isolated, a one-way partition, a crash, a pause or slow links around
    /// one node (the leader half the time), each for 0.5–5 s, 0.5–4 s apart.
    Random,
    /// None: the scenario's clients make their own faults, if any.
    None,
    /// `aim`, first `after` into the fault phase, for `len` each time (a
    /// fault also ends with the fault phase), then again `gap` after each
    /// one ends. A fault aimed at the leader while none is known waits for
    /// one, unless the script has `Gap::Never`: then it is dropped.
    Scripted {
        /// What the fault is, and where.
        aim: Aim,
        /// From the start of the fault phase to the first fault.
        after: Duration,
        /// How long each lasts.
        len: Duration,
        /// From the end of one to the start of the next.
        gap: Gap,
    },
}

/// The fault of a [`Script::Scripted`].
#[derive(Clone, Copy, Debug)]
pub enum Aim {
    /// The leader cut off from every other node, both ways.
    IsolateLeader,
    /// Everything to and from the leader held, then delivered.
    PauseLeader,
    /// The leader crashed (unsynced writes lost), restarted at the end.
    CrashLeader,
    /// Everything to and from a client host held.
    PauseClient(&'static str),
    /// Every link between a client host and the nodes slow (ms each way).
    ClientLatency(&'static str, u64),
    /// Every link between two nodes slow (ms each way).
    SlowLinks(u64),
}

/// The time between two faults of a [`Script::Scripted`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Gap {
    /// Drawn from the seed, 0.5–4 s.
    Drawn,
    /// Always this long.
    Fixed(Duration),
    /// Never again: one fault only.
    Never,
}

/// What the schedule does at a step with no fault active.
enum Due {
    /// Start this fault, for this long.
    Start(Fault, Duration),
    /// Nothing yet; ask again at the next step.
    Wait,
    /// Nothing, now or later.
    Stop,
}

/// The active fault schedule.
pub struct Faults {
    script: Script,
    nodes: Vec<u64>,
    rng: StdRng,
    active: Option<(Fault, Duration)>,
    next_at: Duration,
    observer: Arc<SimObserver>,
    disks: Arc<Disks>,
}

impl Faults {
    /// A schedule following `script` over `nodes`, drawing from `seed`;
    /// `observer` knows the leader and forgets a crashed node, `disks`
    /// crash with it.
    pub fn new(
        script: Script,
        nodes: Vec<u64>,
        seed: u64,
        observer: Arc<SimObserver>,
        disks: Arc<Disks>,
    ) -> Self {
        Faults {
            script,
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
        self.observer.leader_node(None).map(|n| n.node_id())
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

    /// A fault drawn from the seed ([`Script::Random`]).
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

    /// The script's next fault, `now`, in a fault phase that started at `start`.
    fn due(&mut self, now: Duration, start: Duration) -> Due {
        match self.script {
            Script::Random => {
                let f = self.pick();
                let len = Duration::from_millis(self.rng.random_range(500..5_000));
                Due::Start(f, len)
            }
            Script::None => Due::Stop,
            Script::Scripted {
                aim,
                after,
                len,
                gap,
            } => {
                if now < start + after {
                    return Due::Wait;
                }
                let fault = match aim {
                    Aim::IsolateLeader => self
                        .leader()
                        .map(|l| Fault::Partition(vec![l], self.others(l))),
                    Aim::PauseLeader => self.leader().map(Fault::Pause),
                    Aim::CrashLeader => self.leader().map(Fault::Crash),
                    Aim::PauseClient(c) => Some(Fault::PauseClient(c)),
                    Aim::ClientLatency(c, ms) => Some(Fault::ClientLatency(c, ms)),
                    Aim::SlowLinks(ms) => Some(Fault::SlowLinks(ms)),
                };
                match fault {
                    Some(f) => Due::Start(f, len),
                    None if gap == Gap::Never => Due::Stop,
                    None => Due::Wait,
                }
            }
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
        match self.due(now, start) {
            Due::Start(f, len) => {
                if std::env::var_os("WARDEN_SIM_VERBOSE").is_some() {
                    eprintln!("{:>8.3} s fault {f:?} for {len:?}", now.as_secs_f64());
                }
                let f = self.start(sim, f);
                self.active = Some((f, now + len));
            }
            Due::Wait => {}
            Due::Stop => self.next_at = Duration::MAX,
        }
    }

    /// The time from the end of one fault to the start of the next.
    fn gap(&mut self) -> Duration {
        let gap = match self.script {
            Script::Scripted { gap, .. } => gap,
            Script::Random | Script::None => Gap::Drawn,
        };
        match gap {
            Gap::Drawn => Duration::from_millis(self.rng.random_range(500..4_000)),
            Gap::Fixed(d) => d,
            Gap::Never => Duration::MAX,
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
