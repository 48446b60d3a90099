//! The exhaustive checks of the cluster-time rule (docs/semantics.md "Time"; CLUSTER-TIME.md):
//! the tightened rule satisfies S4, L2 and L4 in every reachable state of three bounded
//! models; the rule as proposed does not (S4 and L2 counterexamples); each planted bug that
//! the properties can see is found, and the ones they cannot see are stated as such.

use warden_model::{check, Bounds, Bug, ClockModel, Report, Rule, Stop};

/// Threads for the checker: the CI machine has two cores.
const THREADS: usize = 2;

/// Smaller bounds for the bugs no property sees: one election, one send, no crash.
const SMALL: Bounds = Bounds {
    horizon: 2 * warden_model::rule::STEP,
    crashes: 0,
    elections: 1,
    log_len: 4,
    sends: 1,
};

fn exhaustive(rule: Rule, bounds: Bounds) -> Report {
    let report = check(ClockModel::new(rule, bounds), THREADS, Stop::Exhaustive);
    eprintln!(
        "{rule:?} within {bounds:?}: {} states in {:?}",
        report.states, report.elapsed
    );
    report
}

fn first_failure(rule: Rule, bounds: Bounds, stop: Stop) -> Report {
    let report = check(ClockModel::new(rule, bounds), THREADS, stop);
    eprintln!(
        "{rule:?} within {bounds:?}: stopped after {} states in {:?}; {:?}",
        report.states,
        report.elapsed,
        report.discoveries.keys().collect::<Vec<_>>()
    );
    report
}

/// Asserts a clean exhaustive run: no counterexample, both examples reached (the lease ends;
/// a lease renewed before an election is live after it), and at least `min_states` states.
fn assert_clean(report: &Report, min_states: usize) {
    for property in ["S4", "L2", "L4"] {
        assert!(
            !report.violates(property),
            "{property} fails:\n{}",
            report.discoveries[property]
        );
    }
    assert!(report.discoveries.contains_key("lease ends"));
    assert!(report
        .discoveries
        .contains_key("renewed through an election"));
    assert!(
        report.states >= min_states,
        "only {} states: the model lost its reach",
        report.states
    );
}

/// S4, L2, L4 under leader changes (two elections, clocks of another lineage ahead): the
/// tightened rule holds in all of the about 714,000 states (713,820 when written).
#[test]
fn tightened_rule_holds_through_leader_changes() {
    let report = exhaustive(Rule::tightened(), Bounds::LEADER_CHANGES);
    assert_clean(&report, 700_000);
}

/// S4, L2, L4 with a crash and restart (B, m_B, heard lost; log kept): about 319,000 states.
#[test]
fn tightened_rule_holds_through_a_crash() {
    let report = exhaustive(Rule::tightened(), Bounds::CRASHES);
    assert_clean(&report, 300_000);
}

/// S4, L2, L4 with a grant and a renew (a renew of an ended lease is NotFound): about 489,000
/// states.
#[test]
fn tightened_rule_holds_with_renews() {
    let report = exhaustive(Rule::tightened(), Bounds::RENEWS);
    assert_clean(&report, 450_000);
}

/// S4 against the rule as proposed: a candidate that missed the old leader's last heartbeats
/// stamps a grant on a lagging clock; the follower that did hear them keeps the larger heard
/// time (largest ever, whatever the term) and, elected next, jumps cluster time past the
/// grant's instant at once. The lease ends 4 real ticks after the grant (TTL 8 ticks) while
/// the client's `valid_until` is 5⅓ real ticks after its send.
#[test]
fn proposed_rule_ends_a_lease_early() {
    let stop = Stop::FirstFailureOf("S4");
    let report = first_failure(Rule::proposed(), Bounds::LEADER_CHANGES, stop);
    let trace = &report.discoveries["S4"];
    assert!(trace.contains("Ended {"), "{trace}");
}

/// L2 against the rule as proposed: a leader that stepped down holds no heard time, and when
/// it is elected again its B is its log's last stamp; cluster time falls back by the time
/// since (the voter's fresh heard time is not asked for).
#[test]
fn proposed_rule_lets_cluster_time_fall_back() {
    let stop = Stop::FirstFailureOf("L2");
    let report = first_failure(Rule::proposed(), Bounds::LEADER_CHANGES, stop);
    assert!(report.violates("L2"));
}

/// Planted bug "B from the applied now": a leader restarted with its own uncommitted stamp in
/// its log takes a B below it, and cluster time falls back below the committed `now` (L2).
#[test]
fn bug_base_from_applied_now_is_found() {
    let rule = Rule::with_bug(Bug::BaseFromAppliedNow);
    let report = first_failure(rule, Bounds::CRASHES, Stop::FirstFailure);
    assert!(report.violates("L2"));
}

/// Planted bug "B from the node's own clock": node clocks start at different readings, so a
/// new leader's cluster time jumps (S4) or falls back (L2).
#[test]
fn bug_base_from_own_clock_is_found() {
    let rule = Rule::with_bug(Bug::BaseFromOwnClock);
    let report = first_failure(rule, Bounds::LEADER_CHANGES, Stop::FirstFailureOf("L2"));
    assert!(report.violates("L2"), "a clock behind falls back");
    let report = first_failure(rule, Bounds::LEADER_CHANGES, Stop::FirstFailureOf("S4"));
    assert!(
        report.violates("S4"),
        "a clock 24 ticks ahead ends a lease early"
    );
}

/// Planted bugs that S4, L2 and L4 cannot see in this model: `now = at_ms` (going backwards),
/// an instant counted from `at_ms`, and the heard time not divided by (1 + ρ). Every stamp is
/// taken after the request it carries arrived, and cluster time's largest reading rises at
/// most (1 + ρ)× real time with or without the division, so an instant counted from any stamp
/// of the entry's lineage is still reached no sooner than TTL / (1 + ρ) after the send. The
/// test pins that: if one of them becomes visible, the model changed and the report must too.
#[test]
fn bugs_invisible_to_the_properties_stay_invisible() {
    for bug in [
        Bug::NowBackwards,
        Bug::InstantFromStamp,
        Bug::HeardNotScaled,
    ] {
        let report = exhaustive(Rule::with_bug(bug), SMALL);
        assert!(
            !report.violates("S4") && !report.violates("L2") && !report.violates("L4"),
            "{bug:?} is now visible: {:?}",
            report.discoveries
        );
        assert!(report.states > 20_000, "{bug:?}: {} states", report.states);
    }
}
