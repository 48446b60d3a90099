//! The stamp a leader puts on every entry it proposes (docs/semantics.md
//! "Time"): its cluster clock's reading and its own leader id, taken after
//! the request arrived (S4's argument starts from it).

use warden_core::types::{Command, LeaderId, Stamp};

use crate::node::{Node, SubmitError};

/// How long a client command waits for a new leader's promote before it is
/// refused as not proposed (the client then retries): 1 s.
pub const PROMOTE_WAIT_MS: u64 = 1_000;

impl Node {
    /// Starts this node's cluster clock for its term as `leader` ("Time":
    /// the base is the largest stamp its log has held, the snapshot's
    /// `now`, and the heard time advanced by the elapsed time over 1 + ρ).
    /// Returns the base.
    pub(crate) fn start_leading(&self, leader: LeaderId) -> u64 {
        let mono = self.shared.clock.now();
        if self.shared.bugs.leader_base_from_own_clock {
            // The reintroduced bug: this node's own clock as cluster time.
            let own = u64::try_from(mono.as_millis()).unwrap_or(u64::MAX);
            self.shared.cluster_clock.set_base(leader, own, mono);
            return own;
        }
        let stamps = &self.shared.max_stamp;
        self.shared
            .cluster_clock
            .start_leading(leader, stamps.get(), stamps.term(), mono)
    }

    /// Cluster time now while this node leads as `leader`, starting its
    /// clock on first use in a term.
    pub(crate) fn cluster_now_ms(&self, leader: LeaderId) -> Option<u64> {
        let mono = self.shared.clock.now();
        match self.shared.cluster_clock.now_ms(leader, mono) {
            Some(t) if self.shared.bugs.cluster_clock_runs_fast => {
                // The reintroduced bug: three times the elapsed time.
                let base = self.shared.cluster_clock.base(leader).unwrap_or(t);
                Some(base.saturating_add(t.saturating_sub(base).saturating_mul(3)))
            }
            Some(t) => Some(t),
            None if self.leader_id_if_leader() == Some(leader) => Some(self.start_leading(leader)),
            None => None,
        }
    }

    /// Refuses a client command or a duty before this leader's own
    /// `Promote` has applied: an entry applied before it would judge a lease
    /// renewed since the previous promote without this leader's grace (L4).
    /// The client retries ("not proposed"); the duty loop promotes within a
    /// duty period of the election.
    pub(crate) fn require_promoted(&self) -> Result<LeaderId, SubmitError> {
        let leader = self.require_leader()?;
        if self.promoted_leader() != Some(leader) {
            return Err(SubmitError::NotProposed {
                reason: "this leader's promote has not applied yet (L4); retry".into(),
            });
        }
        Ok(leader)
    }

    /// [`Self::require_promoted`], waiting up to [`PROMOTE_WAIT_MS`] for a
    /// new leader's promote (proposed within a duty period of its election)
    /// before refusing.
    pub(crate) async fn await_promoted(&self) -> Result<LeaderId, SubmitError> {
        let deadline =
            tokio::time::Instant::now() + std::time::Duration::from_millis(PROMOTE_WAIT_MS);
        loop {
            match self.require_promoted() {
                Err(SubmitError::NotProposed { .. }) if tokio::time::Instant::now() < deadline => {
                    tokio::time::sleep(std::time::Duration::from_millis(5)).await;
                }
                r => return r,
            }
        }
    }

    /// The stamp for an entry holding `cmd`: only a `Promote` goes before
    /// this leader's promote has applied ([`Self::require_promoted`]).
    pub(crate) fn stamp_for(&self, cmd: &Command) -> Result<Stamp, SubmitError> {
        if !matches!(cmd, Command::Promote(_)) {
            self.require_promoted()?;
        }
        self.stamp()
    }

    /// The stamp for an entry this node proposes now: NotLeader when it
    /// does not lead.
    pub(crate) fn stamp(&self) -> Result<Stamp, SubmitError> {
        let leader = self
            .leader_id_if_leader()
            .ok_or_else(|| SubmitError::NotProposed {
                reason: "not the leader".into(),
            })?;
        let at_ms = self
            .cluster_now_ms(leader)
            .ok_or_else(|| SubmitError::NotProposed {
                reason: "not the leader".into(),
            })?;
        Ok(Stamp { leader, at_ms })
    }
}
