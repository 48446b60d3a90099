//! The shapes of a run: the random workload (`random.rs`) and the named
//! scenarios, each after a public bug, with scripted clients (one function
//! per scenario) and a fault script for `faults`. One row per scenario in
//! `TABLE` gives its name, its default length, its fault script, the
//! function that spawns its clients and its cluster's shape (nodes, timing
//! preset, link latencies).
//!
//! | file | scenarios |
//! |---|---|
//! | `random.rs` | `random`: workers drawn from the seed, then the healer (L1, L3) |
//! | `kinds.rs` | `kinds`: as `random`, with each resource drawn as a mutex, a read-write lock or a semaphore (SEMAPHORE, RW, FIFO, S2, FENCE) |
//! | `leases.rs` | renews and expiry: `repeated-elections` (L2), `stalled-leader-expiry` (S4, L4), `slow-renew-ack` (S5), `deposed-leader-renew` (S4, S5) |
//! | `handoff.rs` | hand-offs and releases: `due-waiter` (S8), `batched-handoff` (S2), `retried-release` (S6) |
//! | `retries.rs` | retried requests: `retry-after-snapshot`, `lost-reply-new-leader` (S7) |
//! | `slow_links.rs` | `slow-links` (L3, L1) |
//! | `regions.rs` | `regions`: 5 nodes in 3 regions, `wan` timing (L3, L1, REGIONS) |
//! | `owners.rs` | principals: `foreign-lease` (OWNERS) |
//! | `flood.rs` | principals: `flood`, one principal floods every consumable while others work (QUOTAS) |
//! | `client.rs` | what the scripted clients share (own clocks, finding the leader, cutting a node off, a waiter) |
//! | `shape.rs` | what a scenario is: [`Scenario`], its row, the [`Setup`] its clients get |

use crate::faults::Script;

use shape::Def;
pub use shape::{ClusterShape, Scenario, Setup};

mod client;
mod flood;
mod handoff;
mod kinds;
mod leases;
mod owners;
mod random;
pub mod regions;
mod retries;
mod shape;
mod slow_links;

/// Every scenario, in the order of [`Scenario`]'s variants.
const TABLE: [Def; 15] = [
    random::RANDOM,
    leases::REPEATED_ELECTIONS,
    handoff::DUE_WAITER,
    leases::STALLED_LEADER_EXPIRY,
    retries::RETRY_AFTER_SNAPSHOT,
    leases::SLOW_RENEW_ACK,
    handoff::BATCHED_HANDOFF,
    leases::DEPOSED_LEADER_RENEW,
    retries::LOST_REPLY_NEW_LEADER,
    handoff::RETRIED_RELEASE,
    slow_links::SLOW_LINKS,
    owners::FOREIGN_LEASE,
    kinds::KINDS,
    regions::REGIONS,
    flood::FLOOD,
];

// Row i of the table is the scenario whose discriminant is i.
const _: () = {
    let mut i = 0;
    while i < TABLE.len() {
        assert!(TABLE[i].scenario as usize == i);
        i += 1;
    }
};

impl Scenario {
    /// Every scenario's name.
    pub const NAMES: &[&str] = &{
        let mut names = [""; TABLE.len()];
        let mut i = 0;
        while i < TABLE.len() {
            names[i] = TABLE[i].name;
            i += 1;
        }
        names
    };

    /// Its row of [`TABLE`].
    fn def(self) -> &'static Def {
        &TABLE[self as usize]
    }

    /// Its cluster: nodes, timing preset, link latencies.
    pub fn cluster(self) -> ClusterShape {
        self.def().cluster
    }

    /// Its fault schedule.
    pub fn faults(self) -> Script {
        self.def().faults
    }

    /// Simulated seconds of faults a run of this scenario needs by default
    /// (`--fault-secs`): 60 for random runs (`random`, `kinds`); for a named scenario, the
    /// shortest that still covers its script (its scripted faults end with
    /// the fault phase, and its clients' last step falls before
    /// 3 s + this + a few seconds).
    pub fn default_fault_secs(self) -> u64 {
        self.def().fault_secs
    }

    /// Parses a `--scenario` name; an unknown one is refused with the list
    /// of known ones.
    pub fn parse(s: &str) -> Result<Scenario, String> {
        match TABLE.iter().find(|d| d.name == s) {
            Some(d) => Ok(d.scenario),
            None => Err(format!(
                "--scenario: unknown {s:?}; known: {}",
                Scenario::NAMES.join(", ")
            )),
        }
    }

    /// Spawns this scenario's clients.
    pub fn spawn(self, sim: &mut turmoil::Sim<'_>, setup: &mut Setup<'_>) {
        (self.def().spawn)(sim, setup)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // "What bad input gets": every listed name parses to the scenario whose
    // name it is, and an unknown one is refused naming the known ones.
    #[test]
    fn names_parse_to_their_scenario_and_unknown_ones_are_refused() {
        assert_eq!(Scenario::NAMES.len(), TABLE.len());
        for (name, def) in Scenario::NAMES.iter().zip(&TABLE) {
            let s = Scenario::parse(name).expect("a listed name");
            assert_eq!(s, def.scenario);
            assert_eq!(s.def().name, *name);
        }
        assert_eq!(Scenario::NAMES[0], "random");
        assert_eq!(Scenario::NAMES[10], "slow-links");
        assert_eq!(Scenario::NAMES[11], "foreign-lease");
        assert_eq!(Scenario::NAMES[12], "kinds");
        assert_eq!(Scenario::NAMES[13], "regions");
        assert_eq!(Scenario::NAMES[14], "flood");
        let err = Scenario::parse("no-such").unwrap_err();
        assert!(err.starts_with("--scenario: unknown \"no-such\"; known: random, "));
    }
}
