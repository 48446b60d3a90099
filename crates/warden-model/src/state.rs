//! The model's state: three nodes (log, term, and the memory-only B, m_B and heard), the
//! committed prefix as the leader applies it (`now`, L4's markers, the lease), and the client.
//!
//! Every time value is in ticks (`rule.rs`). Real times are exact (the model's omniscient
//! clock); no node reads them except through its own monotonic clock.

use crate::rule::{reading, scale_down, ORIGINS, STEP};

/// What a log entry carries besides its stamp.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    /// A new leader's first entry: `no_expiry_before = B + G` (L4). `started` is the real
    /// time of the election, kept for the L4 check only.
    Marker { no_expiry_before: u32, started: u32 },
    /// An entry that carries nothing but its stamp (the leader's tick).
    Tick,
    /// The client's grant or renew, sent when the client's own clock read `sent`.
    Renew { sent: u32 },
}

/// One log entry: the term of the leader that proposed and stamped it, its stamp `at_ms` in
/// cluster ticks, and what it carries. The stamp's leader is the entry's leader (the model has
/// no forwarded stamps, so apply's "ignore a stamp of another leader" never fires).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Entry {
    pub term: u8,
    pub at: u32,
    pub kind: Kind,
}

/// The largest cluster time a node received with an accepted call: its value, the term of the
/// leader that sent it, and the real time of receipt (the node reads its own clock then).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Heard {
    pub value: u32,
    pub term: u8,
    pub at: u32,
}

/// A leader's B and the real time it took it (m_B is its own clock then).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Lead {
    pub base: u32,
    pub at: u32,
}

/// One node. `log`, `term` and `applied_now` survive a crash (and restart); `heard`, `lead` and `stamped`
/// (a stamp taken and not appended yet) do not.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Node {
    pub term: u8,
    pub log: Vec<Entry>,
    pub heard: Option<Heard>,
    pub lead: Option<Lead>,
    pub stamped: Option<Entry>,
    pub applied_now: u32,
}

/// A lease's last grant or renew, as applied: its log index, the term of the leader that
/// committed it, the real time of its apply, `now` after it, and the number of elections before it (L2's bound counts those
/// after).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Renewal {
    pub index: u8,
    pub term: u8,
    pub real: u32,
    pub now: u32,
    pub elections: u8,
}

/// The lease, as apply of the committed prefix sees it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Lease {
    /// Not granted yet.
    Absent,
    /// Live: its instant (cluster ticks), the largest client send time (client ticks) of an
    /// applied grant or renew (the client's `valid_until` counts from it), its last renewal,
    /// and whether a leader started since then with neither it nor its voter holding a cluster
    /// time heard (or led) since that renewal: L2's bound does not cover what follows.
    Live {
        expires_at: u32,
        sent: u32,
        renewal: Renewal,
        amnesic_election: bool,
    },
    /// Ended by the apply at real time `at`. `sent` as for `Live`; `l4_started` is the real
    /// start of the leader whose marker protected the lease (L4 applies), if any.
    Ended {
        at: u32,
        sent: u32,
        l4_started: Option<u32>,
    },
}

/// A marker applied from the committed prefix: its log index, `no_expiry_before` and the real
/// time its leader started.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Marker {
    pub index: u8,
    pub no_expiry_before: u32,
    pub started: u32,
}

/// The committed prefix and its apply (done once, at the commit on the leader: every other
/// node applies the same entries in the same order later in real time, so decides the same
/// ends, no earlier).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Applied {
    pub committed: Vec<Entry>,
    pub now: u32,
    pub previous_marker: Option<Marker>,
    pub marker: Marker,
    pub lease: Lease,
}

/// The client: its clock rate (ticks a step), sends made, and the send time (own clock) of its
/// latest request, which any leader may receive and propose once.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Client {
    pub rate: u32,
    pub sends: u8,
    pub request: Option<u32>,
}

/// The whole model state.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct State {
    /// Real time, ticks.
    pub t: u32,
    /// Each node's clock rate, ticks a step.
    pub rates: [u32; 3],
    pub nodes: [Node; 3],
    pub applied: Applied,
    pub client: Client,
    pub crashes: u8,
    pub elections: u8,
}

impl State {
    /// Node `n`'s monotonic clock at real time `t`.
    pub fn mono(&self, n: usize, t: u32) -> u32 {
        reading(ORIGINS[n], self.rates[n], t)
    }

    /// Node `n`'s leader clock now, `B + (mono_now − m_B)`, if it leads.
    pub fn leader_clock(&self, n: usize) -> Option<u32> {
        let lead = self.nodes[n].lead?;
        Some(lead.base + self.mono(n, self.t) - self.mono(n, lead.at))
    }

    /// Node `n`'s heard time carried forward to now: `heard + (mono_now − mono_heard) / (1 +
    /// ρ)`, or without the division when `scaled` is false.
    pub fn heard_now(&self, n: usize, scaled: bool) -> Option<u32> {
        let heard = self.nodes[n].heard?;
        let elapsed = self.mono(n, self.t) - self.mono(n, heard.at);
        Some(heard.value + if scaled { scale_down(elapsed) } else { elapsed })
    }

    /// The state with nodes 1 and 2 in a canonical order: they are interchangeable (their
    /// clocks' origins differ, but only differences of one clock's readings are ever used,
    /// except by the planted bug that takes B from a node's own clock, which runs without
    /// this reduction).
    pub fn representative(&self) -> State {
        if (self.rates[1], &self.nodes[1]) <= (self.rates[2], &self.nodes[2]) {
            return self.clone();
        }
        let mut s = self.clone();
        s.rates.swap(1, 2);
        s.nodes.swap(1, 2);
        s
    }

    /// The client's clock at real time `t` (origin 0).
    pub fn client_clock(&self, t: u32) -> u32 {
        self.client.rate * t / STEP
    }
}
