//! Unit tests with real values. Each test names the property (S1..S8, L1..L4)
//! or public bug it defends.

mod batch;
mod deadline;
mod election;
mod proptests;
mod table;

use crate::outcome::OutcomeTable;
use crate::table::{Applied, LockTable};
use crate::types::*;

/// The leader of term 1 (node 1), used as both the proposer and the log leader.
pub(crate) const L1: LeaderId = LeaderId {
    term: 1,
    node_id: 1,
};
/// The leader of term 2 (node 2).
pub(crate) const L2: LeaderId = LeaderId {
    term: 2,
    node_id: 2,
};

/// A table plus a log index counter: every `apply` is the next entry.
pub(crate) struct Log {
    pub t: LockTable,
    pub index: LogIndex,
    pub leader: LeaderId,
}

impl Log {
    pub fn new() -> Self {
        Self {
            t: LockTable::new(),
            index: 0,
            leader: L1,
        }
    }

    pub fn apply(&mut self, cmd: Command) -> Applied {
        self.index += 1;
        let out = self.t.apply(self.index, self.leader, &cmd);
        assert_eq!(self.t.check_invariants(), Ok(()), "after {cmd:?}");
        out
    }
}

pub(crate) fn hdr(client: ClientId, request: RequestId) -> RequestHeader {
    RequestHeader {
        client_id: client,
        request_id: request,
        acked_request_id: 0,
    }
}

pub(crate) fn acquire(
    h: RequestHeader,
    resource: &str,
    lease: LeaseSpec,
    wait_ms: u64,
    delay_ms: u64,
) -> Command {
    Command::Acquire(Acquire {
        header: h,
        resource: resource.into(),
        lease,
        wait_timeout_ms: wait_ms,
        lock_delay_ms: delay_ms,
        due: None,
    })
}

pub(crate) fn new_lease(ttl_ms: u64) -> LeaseSpec {
    LeaseSpec::New { ttl_ms }
}

pub(crate) fn on(lease_id: LeaseId) -> LeaseSpec {
    LeaseSpec::Existing { lease_id }
}

pub(crate) fn release(
    h: RequestHeader,
    resource: Option<&str>,
    lease_id: LeaseId,
    token: Option<u64>,
) -> Command {
    Command::Release(Release {
        header: h,
        resource: resource.map(str::to_owned),
        lease_id,
        fencing_token: token,
        due: None,
    })
}

pub(crate) fn lease_grant(h: RequestHeader, ttl_ms: u64) -> Command {
    Command::LeaseGrant(LeaseGrant { header: h, ttl_ms })
}

pub(crate) fn expire(leader: LeaderId, leases: &[(LeaseId, LogIndex)]) -> Command {
    Command::Expire(DueList {
        leader,
        leases: leases
            .iter()
            .map(|&(lease_id, last_index)| DueLease {
                lease_id,
                last_index,
            })
            .collect(),
        waiters: vec![],
    })
}

/// The granted token of an acquire response, or a panic naming what came back.
pub(crate) fn granted(a: &Applied) -> (LeaseId, FencingToken) {
    match &a.response {
        Response::Acquire(AcquireReply {
            outcome:
                AcquireOutcome::Granted {
                    lease_id,
                    fencing_token,
                    ..
                },
            ..
        }) => (*lease_id, *fencing_token),
        other => panic!("expected a grant, got {other:?}"),
    }
}

/// The snapshot bytes of everything except the outcome table (S7 records
/// answers, including refusals after validation, so "the lock state did not
/// change" is checked on these bytes).
pub(crate) fn lock_state(t: &LockTable) -> Vec<u8> {
    let mut c = t.clone();
    c.outcomes = OutcomeTable::default();
    c.to_snapshot()
}
