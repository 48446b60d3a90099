//! The properties checked in every reachable state: S4, L2 and L4 (docs/semantics.md), in the
//! model's units, plus two examples the checker must reach so that a clean run is not vacuous.

use stateright::Property;

use crate::model::ClockModel;
use crate::rule::{CLIENT_VALIDITY, GRACE};
use crate::state::{Lease, State};

/// S4: the apply that ends the lease happens, in real time, no earlier than the client's
/// `valid_until = s + TTL · (1 − 2ρ)` on its own clock (margin 0), for the latest send `s` of
/// a renew that applied.
pub fn s4(_: &ClockModel, s: &State) -> bool {
    match s.applied.lease {
        Lease::Ended { at, sent, .. } => s.client_clock(at) >= sent + CLIENT_VALIDITY,
        _ => true,
    }
}

/// L4: a lease renewed before a new leader's marker (and after the previous one) does not end
/// before that leader's start + G / (1 + ρ) in real time: 5 · (end − start) ≥ 4 · G.
pub fn l4(_: &ClockModel, s: &State) -> bool {
    match s.applied.lease {
        Lease::Ended {
            at,
            l4_started: Some(started),
            ..
        } => 5 * (at - started) >= 4 * GRACE,
        _ => true,
    }
}

/// L2, as the rate it rests on: while the lease is live, the leader of the highest term (if
/// that term is at least the one that committed the lease's last renewal) reads at least `now` after that renewal plus (1 − ρ) / (1 + ρ) = 3/5 of
/// the real time since, less one tick for each election since (B rounds down). A slow clock
/// runs at 3/4; a heard time carried through an election at 3/4 · 4/5. So cluster time reaches
/// the lease's instant (`now` + TTL, or a marker's B + G) within a bound of real time over any
/// number of leader changes, as long as each electing pair held a cluster time heard since the
/// renewal (`amnesic_election` marks runs where none did: there the rule falls back to the
/// log's last stamp, and only the leader's ticks bound the loss).
pub fn l2(_: &ClockModel, s: &State) -> bool {
    let Lease::Live {
        renewal,
        amnesic_election: false,
        ..
    } = s.applied.lease
    else {
        return true;
    };
    let floor = renewal.now + (s.t - renewal.real) * 3 / 5;
    let slack = u32::from(s.elections - renewal.elections);
    let top = s.nodes.iter().map(|n| n.term).max().unwrap_or(0);
    (0..3).all(|n| {
        s.nodes[n].term < top.max(renewal.term)
            || s.leader_clock(n).is_none_or(|clock| clock + slack >= floor)
    })
}

/// Example: the lease is granted and later ended.
fn lease_ends(_: &ClockModel, s: &State) -> bool {
    matches!(s.applied.lease, Lease::Ended { .. })
}

/// Example: a lease renewed before an election, and still live after the new leader's marker
/// applied (L4's case).
fn renewed_through_election(_: &ClockModel, s: &State) -> bool {
    matches!(s.applied.lease, Lease::Live { renewal, .. }
        if s.applied.previous_marker.is_some_and(|m| renewal.index > m.index)
            && renewal.index < s.applied.marker.index)
}

pub(crate) fn properties() -> Vec<Property<ClockModel>> {
    vec![
        Property::always("S4", s4),
        Property::always("L2", l2),
        Property::always("L4", l4),
        Property::sometimes("lease ends", lease_ends),
        Property::sometimes("renewed through an election", renewed_through_election),
    ]
}
