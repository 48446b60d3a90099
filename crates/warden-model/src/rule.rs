//! The model's constants (units, ρ, TTL, G, bounds) and the switches that choose the rule
//! under check: the rule as CLUSTER-TIME.md proposes it, its tightenings, and the planted
//! bugs.
//!
//! Units: one *tick* is the unit of every time value (real time, a node's monotonic clock,
//! cluster time, the client's clock). Real time moves in steps of [`STEP`] ticks; ρ = 1/4, so a
//! node's clock moves [`SLOW`] or [`FAST`] ticks a step (rates 3/4 and 5/4, the edges of
//! [1 − ρ, 1 + ρ]) and every reading is an exact integer.

/// Real ticks per step of real time (4, so that rates 1 ± ρ with ρ = 1/4 are whole ticks).
pub const STEP: u32 = 4;
/// Clock ticks a step at rate 1 − ρ = 3/4.
pub const SLOW: u32 = 3;
/// Clock ticks a step at rate 1 + ρ = 5/4.
pub const FAST: u32 = 5;
/// The lease's TTL, in cluster-time ticks (two steps of real time at rate 1).
pub const TTL: u32 = 8;
/// L4's grace G, in cluster-time ticks: `no_expiry_before = B + G`.
pub const GRACE: u32 = 2;
/// What the client takes off the TTL for its validity: `valid_until = s + TTL · (1 − 2ρ)` with
/// margin 0, i.e. `s + TTL / 2` ticks on its own clock.
pub const CLIENT_VALIDITY: u32 = TTL / 2;
/// Each node's monotonic clock reading at real time 0. They differ (as CLOCK_BOOTTIME does
/// between machines), so a leader that used its own clock as cluster time would jump it.
pub const ORIGINS: [u32; 3] = [0, 24, 48];

/// The bounds that keep the state space finite.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Bounds {
    /// Real time stops at this many ticks.
    pub horizon: u32,
    /// Crashes over a whole run (a crash loses B, m_B, heard and an unappended stamp).
    pub crashes: u8,
    /// Elections over a whole run (after the initial leader's).
    pub elections: u8,
    /// Entries in any log, the initial leader's first entry included.
    pub log_len: usize,
    /// Client sends (the grant, then renews).
    pub sends: u8,
}

impl Bounds {
    /// Leader changes: two elections, no crash, one client send, two steps of real time,
    /// logs of five entries (enough for a leader's clock to fall behind another lineage's and
    /// a second election to jump it forward).
    pub const LEADER_CHANGES: Bounds = Bounds {
        horizon: 2 * STEP,
        crashes: 0,
        elections: 2,
        log_len: 5,
        sends: 1,
    };
    /// Crashes: one crash and restart, one election, one send, two steps, logs of four.
    pub const CRASHES: Bounds = Bounds {
        horizon: 2 * STEP,
        crashes: 1,
        elections: 1,
        log_len: 4,
        sends: 1,
    };
    /// Renews: a grant and a renew, one election, no crash, two steps, logs of four.
    pub const RENEWS: Bounds = Bounds {
        horizon: 2 * STEP,
        crashes: 0,
        elections: 1,
        log_len: 4,
        sends: 2,
    };
}

/// A deliberate bug in the rule (each test that plants one asserts the checker finds it).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Bug {
    /// B's log term is the node's applied `now`, not the largest stamp in its log.
    BaseFromAppliedNow,
    /// B is the new leader's own monotonic clock reading.
    BaseFromOwnClock,
    /// Apply sets `now = at_ms` instead of `now = max(now, at_ms)`.
    NowBackwards,
    /// A renew's instant is `at_ms + TTL` instead of `now + TTL`.
    InstantFromStamp,
    /// B's heard term is `heard + (mono_now − mono_heard)`, not divided by (1 + ρ).
    HeardNotScaled,
}

/// Which rule the model runs: the proposal, optionally tightened, optionally with a bug.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Rule {
    /// Tightening 1: heard times are kept by term. A node replaces its heard time with the
    /// time carried by a call from a leader of a higher term than the one it last heard from
    /// (the proposal keeps the largest value ever heard, whatever its term), and B uses a
    /// heard time only if it came from the leader of the last term in the candidate's log or
    /// a later one.
    pub heard_by_term: bool,
    /// Tightening 2: a vote carries the voter's cluster time (its own clock if it leads, else
    /// its heard time as B would use it, under the same term condition), B is at least that,
    /// and a leader that steps down keeps its own clock as its heard time.
    pub votes_carry_time: bool,
    /// A planted bug, if any.
    pub bug: Option<Bug>,
}

impl Rule {
    /// The rule exactly as CLUSTER-TIME.md proposes it.
    pub const fn proposed() -> Self {
        Rule {
            heard_by_term: false,
            votes_carry_time: false,
            bug: None,
        }
    }

    /// The proposal with both tightenings.
    pub const fn tightened() -> Self {
        Rule {
            heard_by_term: true,
            votes_carry_time: true,
            bug: None,
        }
    }

    /// The tightened rule with one bug planted.
    pub const fn with_bug(bug: Bug) -> Self {
        Rule {
            bug: Some(bug),
            ..Rule::tightened()
        }
    }

    pub(crate) fn has(&self, bug: Bug) -> bool {
        self.bug == Some(bug)
    }
}

/// A reading of a clock that runs at `rate` ticks a step from `origin` at real time `t`.
pub fn reading(origin: u32, rate: u32, t: u32) -> u32 {
    origin + rate * t / STEP
}

/// `elapsed / (1 + ρ)`, rounded down: `elapsed · 4 / 5`.
pub fn scale_down(elapsed: u32) -> u32 {
    elapsed * 4 / 5
}
