//! An exhaustive model check of Warden's cluster-time rule (`CLUSTER-TIME.md`, the rule
//! docs/semantics.md "Time" is to state), with the `stateright` model checker.
//!
//! Modules:
//! - [`rule`]: units (ticks; ρ = 1/4, so clocks run at 3/4 or 5/4), TTL, G, the bounds of the
//!   state space, and the switches: the proposed rule, its tightenings, the planted bugs.
//! - [`state`]: three nodes (log, term; B, m_B and heard in memory only), the committed prefix
//!   as applied (`now`, L4's markers, the lease) and the client.
//! - [`model`]: the transitions: real time, client sends, crashes and restarts, elections and
//!   B, stamps (out of log order too), AppendEntries with the leader's cluster time, commit.
//! - [`apply`]: apply of one committed entry (`now = max(now, at_ms)`, the lease's instant
//!   `now + TTL`, its end when `now` ≥ its instant, L4's `no_expiry_before`).
//! - [`props`]: S4, L2 and L4 as checked in every state, and two examples a clean run must
//!   reach.
//!
//! [`check`] runs the checker depth first over every reachable state (or up to the first
//! counterexample) and returns what it found; [`explain`] prints a shortest counterexample
//! state by state. The tests in `tests/` run them on the rule as proposed, the tightened rule
//! and each planted bug; `examples/explore.rs` runs one rule with bounds from the environment.

pub mod apply;
pub mod model;
pub mod props;
pub mod rule;
pub mod state;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use stateright::{Checker, HasDiscoveries, Model};

pub use model::{Action, ClockModel};
pub use rule::{Bounds, Bug, Rule};

/// The outcome of one exhaustive run.
#[derive(Debug)]
pub struct Report {
    /// Distinct states visited.
    pub states: usize,
    /// Wall time of the run.
    pub elapsed: Duration,
    /// For each property with a discovery: the trace, one action a line, the state it ends in
    /// last. An `always` property's discovery is a counterexample; a `sometimes` property's is
    /// an example.
    pub discoveries: BTreeMap<&'static str, String>,
}

impl Report {
    /// Whether the run found a counterexample to `property` (S4, L2 or L4).
    pub fn violates(&self, property: &str) -> bool {
        self.discoveries.contains_key(property)
    }
}

/// How far a run goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stop {
    /// Every reachable state.
    Exhaustive,
    /// The first counterexample to S4, L2 or L4 (or every state, if there is none).
    FirstFailure,
    /// The first counterexample to the one property named.
    FirstFailureOf(&'static str),
}

/// Checks `model` depth first on `threads` threads (with nodes 1 and 2 taken as
/// interchangeable where they are, [`state::State::representative`]) and reports.
pub fn check(model: ClockModel, threads: usize, stop: Stop) -> Report {
    let start = Instant::now();
    let symmetric = model.rule.bug != Some(Bug::BaseFromOwnClock);
    let mut builder = model.checker().threads(threads);
    if symmetric {
        builder = builder.symmetry_fn(state::State::representative);
    }
    match stop {
        Stop::Exhaustive => {}
        Stop::FirstFailure => builder = builder.finish_when(HasDiscoveries::AnyFailures),
        Stop::FirstFailureOf(name) => {
            builder = builder.finish_when(HasDiscoveries::AnyOf([name].into()));
        }
    }
    let checker = builder.spawn_dfs().join();
    let elapsed = start.elapsed();
    let discoveries = checker
        .discoveries()
        .into_iter()
        .map(|(name, path)| {
            let last = format!("{:#?}", path.last_state());
            let steps: Vec<String> = path
                .into_actions()
                .iter()
                .map(|a| format!("{a:?}"))
                .collect();
            (name, format!("{}\nfinal state: {last}", steps.join("\n")))
        })
        .collect();
    Report {
        states: checker.unique_state_count(),
        elapsed,
        discoveries,
    }
}

/// The shortest counterexample to `property` (breadth first, no symmetry reduction), printed
/// state by state for reading; `None` if there is none within the model's bounds.
pub fn explain(model: &ClockModel, property: &'static str, threads: usize) -> Option<String> {
    let checker = model
        .clone()
        .checker()
        .threads(threads)
        .finish_when(HasDiscoveries::AnyOf([property].into()))
        .spawn_bfs()
        .join();
    let path = checker.discovery(property)?;
    let mut out = String::new();
    for (state, action) in path.into_vec() {
        out.push_str(&format!(
            "t={} rates={:?} client={:?} now={} lease={:?}\n",
            state.t, state.rates, state.client, state.applied.now, state.applied.lease
        ));
        for (n, node) in state.nodes.iter().enumerate() {
            out.push_str(&format!(
                "  n{n}: term={} lead={:?} heard={:?} clock={:?} log={:?}\n",
                node.term,
                node.lead,
                node.heard,
                state.leader_clock(n),
                node.log
                    .iter()
                    .map(|e| (e.term, e.at, &e.kind))
                    .collect::<Vec<_>>()
            ));
        }
        if let Some(a) = action {
            out.push_str(&format!("-> {a:?}\n"));
        }
    }
    Some(out)
}
