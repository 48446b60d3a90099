//! The transition system: initial states, actions and their effects (elections with B,
//! stamps, replication with heard times and commit, apply with `now = max(now, at_ms)`,
//! crashes and restarts, the client's sends and real time).
//!
//! Raft is abstracted to what cluster time depends on: a candidate wins with one voter (a
//! majority of three) whose log is not more up to date; an accepted AppendEntries makes the
//! follower's log the leader's and commits the leader's whole log (its last entry is always of
//! the leader's term: its election appends its marker). The committed prefix is applied once,
//! at that commit; `apply.rs` holds the apply.
//!
//! Clocks: each node's clock runs at 3/4 or 5/4 for the whole run (8 initial states, one per
//! choice); the client's at 3/4, the edge at which its `valid_until` lies latest in real time.
//! A crash and its restart are one action (a node that stays down is one that does not act).
//! A leader ticks only when the lease is due on its clock; a request is stamped on receipt and
//! appended then or later.

use stateright::Model;

use crate::rule::{Bounds, Bug, Rule, FAST, GRACE, SLOW, STEP};
use crate::state::{Applied, Client, Entry, Heard, Kind, Lead, Lease, Marker, Node, State};

/// The model of the clock rule under `rule`, within `bounds`.
#[derive(Clone, Debug)]
pub struct ClockModel {
    pub rule: Rule,
    pub bounds: Bounds,
}

/// One step of the model. Node ids are 0, 1, 2.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Action {
    /// Real time advances one step; every clock advances at its rate.
    Step,
    /// The client sends a grant (first) or renew, reading its own clock.
    Send,
    /// A node crashes and restarts: B, m_B, heard and a stamp not yet appended are lost; its
    /// log, term and applied `now` are kept. (A node that stays down is one that takes no
    /// action, so the model needs no down state.)
    Restart(u8),
    /// `cand` wins a new term with `voter`'s vote, takes B and appends its marker.
    Elect { cand: u8, voter: u8 },
    /// A leader whose clock has reached the lease's end instant stamps a tick with its clock
    /// and appends it.
    Tick(u8),
    /// A leader receives the client's latest request and stamps it with its clock.
    Stamp(u8),
    /// A leader appends the request it stamped: at once, or after other entries with later
    /// stamps (stamps out of log order).
    AppendStamped(u8),
    /// A leader's AppendEntries (with its cluster time) reaches a node.
    Replicate { from: u8, to: u8 },
}

fn last_id(log: &[Entry]) -> (u8, usize) {
    (log.last().map_or(0, |e| e.term), log.len())
}

fn has_request(node: &Node, sent: u32) -> bool {
    let is_it = |e: &Entry| e.kind == Kind::Renew { sent };
    node.log.iter().any(is_it) || node.stamped.as_ref().is_some_and(is_it)
}

impl ClockModel {
    /// The model of `rule` within `bounds`.
    pub fn new(rule: Rule, bounds: Bounds) -> Self {
        ClockModel { rule, bounds }
    }

    /// Node `n`'s heard time carried forward, if any; under the tightened rule only if it was
    /// heard from the leader of term `term` or later.
    fn heard_time(&self, s: &State, n: usize, term: u8) -> Option<u32> {
        let heard = s.nodes[n].heard?;
        if self.rule.heard_by_term && heard.term < term {
            return None;
        }
        s.heard_now(n, !self.rule.has(Bug::HeardNotScaled))
    }

    /// The cluster time voter `v` offers a candidate whose last log term is `term`: its leader
    /// clock if it leads a term at least `term`, else its heard time as in B (the larger if
    /// both).
    fn voter_time(&self, s: &State, v: usize, term: u8) -> Option<u32> {
        let own = s.leader_clock(v).filter(|_| s.nodes[v].term >= term);
        own.max(self.heard_time(s, v, term))
    }

    /// B for `cand` elected with `voter`'s vote, at real time `s.t`.
    pub fn base(&self, s: &State, cand: usize, voter: usize) -> u32 {
        if self.rule.has(Bug::BaseFromOwnClock) {
            return s.mono(cand, s.t);
        }
        let node = &s.nodes[cand];
        let from_log = if self.rule.has(Bug::BaseFromAppliedNow) {
            node.applied_now
        } else {
            node.log.iter().map(|e| e.at).max().unwrap_or(0)
        };
        let last_term = last_id(&node.log).0;
        let heard = self.heard_time(s, cand, last_term);
        let mut base = from_log.max(heard.unwrap_or(0));
        if self.rule.votes_carry_time {
            base = base.max(self.voter_time(s, voter, last_term).unwrap_or(0));
        }
        base
    }

    /// A leader that meets a higher term stops leading; under the tightened rule it keeps its
    /// own clock as its heard time.
    fn step_down(&self, s: &mut State, n: usize, term: u8) {
        let clock = s.leader_clock(n);
        let node = &mut s.nodes[n];
        if let (Some(value), true) = (clock, self.rule.votes_carry_time) {
            node.heard = Some(Heard {
                value,
                term: node.term,
                at: s.t,
            });
        }
        node.term = term;
        node.lead = None;
        node.stamped = None;
    }

    fn elect(&self, s: &mut State, cand: usize, voter: usize) {
        let term = s.nodes[cand].term.max(s.nodes[voter].term) + 1;
        let base = self.base(s, cand, voter);
        if let Lease::Live {
            renewal,
            amnesic_election,
            ..
        } = &mut s.applied.lease
        {
            let (since, term) = (renewal.real, renewal.term);
            let fresh = |n: &Node| {
                (n.lead.is_some() && n.term >= term)
                    || n.heard.is_some_and(|h| h.at >= since && h.term >= term)
            };
            if !fresh(&s.nodes[cand]) && !fresh(&s.nodes[voter]) {
                *amnesic_election = true;
            }
        }
        self.step_down(s, voter, term);
        s.nodes[voter].term = term;
        let node = &mut s.nodes[cand];
        node.term = term;
        node.stamped = None;
        node.lead = Some(Lead { base, at: s.t });
        node.log.push(Entry {
            term,
            at: base,
            kind: Kind::Marker {
                no_expiry_before: base + GRACE,
                started: s.t,
            },
        });
        s.elections += 1;
    }

    fn replicate(&self, s: &mut State, from: usize, to: usize) {
        let from_term = s.nodes[from].term;
        if s.nodes[to].term > from_term {
            let term = s.nodes[to].term;
            self.step_down(s, from, term);
            return;
        }
        let value = s.leader_clock(from).expect("only a leader replicates");
        if s.nodes[to].term < from_term && s.nodes[to].lead.is_some() {
            self.step_down(s, to, from_term);
        }
        let log = s.nodes[from].log.clone();
        let applied_before = s.applied.now;
        let by_term = self.rule.heard_by_term;
        let track_applied = self.rule.has(Bug::BaseFromAppliedNow);
        let node = &mut s.nodes[to];
        node.term = from_term;
        node.stamped = None;
        node.log = log;
        if track_applied {
            node.applied_now = applied_before;
        }
        let replace = match node.heard {
            None => true,
            Some(h) => value > h.value || (by_term && from_term > h.term),
        };
        if replace {
            node.heard = Some(Heard {
                value,
                term: from_term,
                at: s.t,
            });
        }
        self.commit(s, from);
    }

    /// Commits leader `from`'s whole log and applies what was not applied yet, at `s.t`.
    fn commit(&self, s: &mut State, from: usize) {
        let log = &s.nodes[from].log;
        let done = s.applied.committed.len();
        assert_eq!(
            &log[..done],
            &s.applied.committed[..],
            "the Raft abstraction lost a committed entry"
        );
        let fresh: Vec<Entry> = log[done..].to_vec();
        for (i, entry) in fresh.into_iter().enumerate() {
            let index = u8::try_from(done + i).expect("logs are short");
            let at = (s.t, s.nodes[from].term, s.elections);
            self.apply(&mut s.applied, index, entry.clone(), at);
            s.applied.committed.push(entry);
        }
        if self.rule.has(Bug::BaseFromAppliedNow) {
            s.nodes[from].applied_now = s.applied.now;
        }
    }
}

impl Model for ClockModel {
    type State = State;
    type Action = Action;

    fn init_states(&self) -> Vec<State> {
        let first = Entry {
            term: 1,
            at: 0,
            kind: Kind::Marker {
                no_expiry_before: GRACE,
                started: 0,
            },
        };
        let node = |n: usize| Node {
            term: 1,
            log: vec![first.clone()],
            heard: (n != 0).then_some(Heard {
                value: 0,
                term: 1,
                at: 0,
            }),
            lead: (n == 0).then_some(Lead { base: 0, at: 0 }),
            stamped: None,
            applied_now: 0,
        };
        let mut states = Vec::new();
        for bits in 0..8u32 {
            let rate = |b: u32| if bits & (1 << b) == 0 { SLOW } else { FAST };
            states.push(State {
                t: 0,
                rates: [rate(0), rate(1), rate(2)],
                nodes: [node(0), node(1), node(2)],
                applied: Applied {
                    committed: vec![first.clone()],
                    now: 0,
                    previous_marker: None,
                    marker: Marker {
                        index: 0,
                        no_expiry_before: GRACE,
                        started: 0,
                    },
                    lease: Lease::Absent,
                },
                client: Client {
                    rate: SLOW,
                    sends: 0,
                    request: None,
                },
                crashes: 0,
                elections: 0,
            });
        }
        states
    }

    fn actions(&self, s: &State, actions: &mut Vec<Action>) {
        let b = &self.bounds;
        if s.t + STEP <= b.horizon {
            actions.push(Action::Step);
        }
        let ended = matches!(s.applied.lease, Lease::Ended { .. });
        if s.client.sends < b.sends && !ended && s.client.request != Some(s.client_clock(s.t)) {
            actions.push(Action::Send);
        }
        for n in 0..3u8 {
            let node = &s.nodes[usize::from(n)];
            if s.crashes < b.crashes {
                actions.push(Action::Restart(n));
            }
            let room = node.log.len() < b.log_len;
            if node.lead.is_none() {
                for voter in (0..3u8).filter(|&v| v != n) {
                    let v = &s.nodes[usize::from(voter)];
                    let up_to_date = last_id(&node.log) >= last_id(&v.log);
                    if up_to_date && room && s.elections < b.elections {
                        actions.push(Action::Elect { cand: n, voter });
                    }
                }
                continue;
            }
            let request = s.client.request.filter(|&sent| !has_request(node, sent));
            // The leader ticks when the lease's end instant is due on its clock.
            let due = crate::apply::end_instant(&s.applied)
                .zip(s.leader_clock(n.into()))
                .is_some_and(|(end, clock)| clock >= end);
            if room && due {
                actions.push(Action::Tick(n));
            }
            if request.is_some() && node.stamped.is_none() {
                actions.push(Action::Stamp(n));
            }
            if node.stamped.is_some() && room {
                actions.push(Action::AppendStamped(n));
            }
            for to in (0..3u8).filter(|&to| to != n) {
                actions.push(Action::Replicate { from: n, to });
            }
        }
    }

    fn next_state(&self, last: &State, action: Action) -> Option<State> {
        let mut s = last.clone();
        match action {
            Action::Step => s.t += STEP,
            Action::Send => {
                s.client.sends += 1;
                s.client.request = Some(s.client_clock(s.t));
            }
            Action::Restart(n) => {
                let node = &mut s.nodes[usize::from(n)];
                node.heard = None;
                node.lead = None;
                node.stamped = None;
                s.crashes += 1;
            }
            Action::Elect { cand, voter } => self.elect(&mut s, cand.into(), voter.into()),
            Action::Tick(node) => {
                let n = usize::from(node);
                let at = s.leader_clock(n).expect("only a leader ticks");
                let term = s.nodes[n].term;
                let kind = Kind::Tick;
                s.nodes[n].log.push(Entry { term, at, kind });
            }
            Action::Stamp(node) => {
                let n = usize::from(node);
                let at = s.leader_clock(n).expect("only a leader stamps");
                let sent = s.client.request.expect("a request to stamp");
                let term = s.nodes[n].term;
                s.nodes[n].stamped = Some(Entry {
                    term,
                    at,
                    kind: Kind::Renew { sent },
                });
            }
            Action::AppendStamped(node) => {
                let node = &mut s.nodes[usize::from(node)];
                let entry = node.stamped.take().expect("a stamped entry");
                node.log.push(entry);
            }
            Action::Replicate { from, to } => self.replicate(&mut s, from.into(), to.into()),
        }
        Some(s)
    }

    fn properties(&self) -> Vec<stateright::Property<Self>> {
        crate::props::properties()
    }
}
