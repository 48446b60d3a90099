//! The simulator in CI: a fixed set of seeds must pass every checker, and
//! every `--inject-bug` switch must be caught by its checker within the fixed
//! seeds (the checkers are shown to bite). Replay any of them with
//! `cargo run -p warden-sim --release -- --seed S --scenario NAME [--inject-bug B]`.

use warden_sim::{run, Bugs, RunConfig, Scenario};

/// Simulated seconds of faults per CI run (random runs then heal for 20 s):
/// short, because CI runs the unoptimised build. Sweeps use the release
/// runner with 60 s.
const CI_FAULT_SECS: u64 = 12;

fn outcome_for(seed: u64, scenario: Scenario, bug: Option<&str>, fault_secs: u64) -> Vec<String> {
    let mut bugs = Bugs::default();
    if let Some(b) = bug {
        bugs.add(b).expect("known bug");
    }
    let out = run(RunConfig {
        seed,
        scenario,
        bugs,
        fault_secs,
    });
    out.violations
        .iter()
        .map(|v| format!("{} {}", v.property, v.message))
        .collect()
}

fn outcome(seed: u64, scenario: Scenario, bug: Option<&str>) -> Vec<String> {
    outcome_for(seed, scenario, bug, CI_FAULT_SECS)
}

fn assert_caught(seed: u64, scenario: Scenario, bug: &str, property: &str) {
    let found = outcome(seed, scenario, Some(bug));
    assert!(
        found.iter().any(|v| v.starts_with(property)),
        "--inject-bug {bug} (seed {seed}, {scenario:?}) was not caught by {property}: {found:?}"
    );
}

// S1–S8, L1–L3 and the fence under random faults: the fixed CI seeds pass.
#[test]
fn fixed_seeds_pass_every_checker() {
    for seed in [1, 2] {
        let found = outcome(seed, Scenario::Random, None);
        assert!(found.is_empty(), "seed {seed}: {found:?}");
    }
}

// The named scenarios pass without injected bugs (each cites its public bug
// in scenarios.rs; due-waiter and slow-renew-ack run in the release sweep).
#[test]
fn named_scenarios_pass() {
    for s in [Scenario::RepeatedElections, Scenario::StalledLeaderExpiry] {
        let found = outcome(1, s, None);
        assert!(found.is_empty(), "{s:?}: {found:?}");
    }
}

// L2, etcd issue 9395: a full-TTL reset at each election is caught.
#[test]
fn full_ttl_reset_at_election_is_caught() {
    assert_caught(
        1,
        Scenario::RepeatedElections,
        "full-ttl-reset-at-election",
        "L2",
    );
}

// S8, Jepsen etcd 3.4.3: a grant to a waiter whose lease is due is caught.
#[test]
fn grant_to_due_waiter_is_caught() {
    assert_caught(1, Scenario::DueWaiter, "grant-to-due-waiter", "S8");
}

// S4, etcd issue 15247: a stalled ex-leader's expiry through forwarding is caught.
#[test]
fn expiry_via_forwarding_is_caught() {
    assert_caught(
        1,
        Scenario::StalledLeaderExpiry,
        "expiry-via-forwarding",
        "S4",
    );
}

// S5: valid_until counted from the reply's receipt is caught.
#[test]
fn valid_until_from_receipt_is_caught() {
    assert_caught(1, Scenario::SlowRenewAck, "valid-until-from-receipt", "S5");
}

// "Time": an instant compared across nodes (clocks hours apart) is caught
// (a lease never ends: L1 after the heal).
#[test]
fn instant_across_nodes_is_caught() {
    // 20 s of faults: the bug needs a leader change after leases exist.
    let found = outcome_for(1, Scenario::Random, Some("instant-across-nodes"), 20);
    assert!(
        found.iter().any(|v| v.starts_with("L1")),
        "instant-across-nodes was not caught by L1: {found:?}"
    );
}

// One seed replays one run.
#[test]
fn a_seed_replays_the_same_run() {
    let a = run(RunConfig {
        seed: 5,
        scenario: Scenario::Random,
        bugs: Bugs::default(),
        fault_secs: 3,
    });
    let b = run(RunConfig {
        seed: 5,
        scenario: Scenario::Random,
        bugs: Bugs::default(),
        fault_secs: 3,
    });
    assert_eq!(
        (a.applies, a.calls_ok, a.calls_failed, a.simulated),
        (b.applies, b.calls_ok, b.calls_failed, b.simulated)
    );
}
