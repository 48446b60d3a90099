//! The `--inject-bug` switches: each reintroduces one known bug in the
//! simulated run only, so that a checker can be shown to catch it
//! (`tests/seeds.rs`). The server-side ones are
//! `warden_server::sim_hooks::BugSwitches`; the client-side one changes the
//! simulator's own client bookkeeping (`world::ClientCtx::valid_until`).

use warden_server::sim_hooks::BugSwitches;

/// What a run injects: server-side switches and the client-side one.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Bugs {
    /// Server-side switches.
    pub server: BugSwitches,
    /// Clients compute `valid_until` from the reply's receipt, not the send
    /// (against docs/semantics.md S5).
    pub valid_until_from_receipt: bool,
}

/// Turns one switch on.
type SwitchOn = fn(&mut Bugs);

/// Each `--inject-bug` name and the switch it turns on.
const SWITCHES: [(&str, SwitchOn); 14] = [
    ("full-ttl-reset-at-election", |b| {
        b.server.full_ttl_reset_at_election = true
    }),
    ("grant-to-due-waiter", |b| {
        b.server.grant_to_due_waiter = true
    }),
    ("leader-base-from-own-clock", |b| {
        b.server.leader_base_from_own_clock = true
    }),
    ("cluster-clock-runs-fast", |b| {
        b.server.cluster_clock_runs_fast = true
    }),
    ("sweep-skips-leases", |b| b.server.sweep_skips_leases = true),
    ("token-is-log-index", |b| b.server.token_is_log_index = true),
    ("outcome-table-not-in-snapshot", |b| {
        b.server.outcome_table_not_in_snapshot = true
    }),
    ("renew-acked-before-commit", |b| {
        b.server.renew_acked_before_commit = true
    }),
    ("valid-until-from-receipt", |b| {
        b.valid_until_from_receipt = true
    }),
    ("skip-lease-owner-check", |b| {
        b.server.skip_lease_owner_check = true
    }),
    ("semaphore-limit-plus-one", |b| {
        b.server.semaphore_limit_plus_one = true
    }),
    ("exclusive-as-shared", |b| {
        b.server.exclusive_as_shared = true
    }),
    ("readers-overtake-writers", |b| {
        b.server.readers_overtake_writers = true
    }),
    ("multi-grant-first-only", |b| {
        b.server.multi_grant_first_only = true
    }),
];

/// Bugs the simulator can reintroduce (`--inject-bug NAME`), in the order
/// `--list-bugs` prints them.
pub const BUG_NAMES: &[&str] = &{
    let mut names = [""; SWITCHES.len()];
    let mut i = 0;
    while i < SWITCHES.len() {
        names[i] = SWITCHES[i].0;
        i += 1;
    }
    names
};

impl Bugs {
    /// Turns on the switch named `name` (one `--inject-bug` value). An
    /// unknown name is refused with the list of known ones.
    pub fn add(&mut self, name: &str) -> Result<(), String> {
        match SWITCHES.iter().find(|(n, _)| *n == name) {
            Some((_, switch_on)) => {
                switch_on(self);
                Ok(())
            }
            None => Err(format!(
                "--inject-bug: unknown bug {name:?}; known: {}",
                BUG_NAMES.join(", ")
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // "What bad input gets": an unknown --inject-bug name is refused, names
    // the known ones, and turns nothing on.
    #[test]
    fn an_unknown_bug_is_refused_and_changes_nothing() {
        let mut bugs = Bugs::default();
        let err = bugs.add("no-such-bug").unwrap_err();
        assert_eq!(
            err,
            format!(
                "--inject-bug: unknown bug \"no-such-bug\"; known: {}",
                BUG_NAMES.join(", ")
            )
        );
        assert_eq!(bugs, Bugs::default());
    }

    // Every listed name turns on exactly one switch, each a different one
    // (the checkers are shown to bite one bug at a time, tests/seeds.rs).
    #[test]
    fn each_name_turns_on_its_own_switch() {
        let mut seen = Vec::new();
        for name in BUG_NAMES {
            let mut bugs = Bugs::default();
            bugs.add(name).expect("a listed name");
            assert_ne!(bugs, Bugs::default(), "{name} turned nothing on");
            assert!(!seen.contains(&bugs), "{name} repeats another switch");
            seen.push(bugs);
        }
        assert_eq!(seen.len(), 14);
    }
}
