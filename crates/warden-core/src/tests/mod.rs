//! Unit tests with real values. Each test names the property (S1..S8, L1..L4)
//! or public bug it defends.

mod auth;
mod auth_changes;
mod batch;
mod cancel;
mod deny;
mod election;
mod kinds;
mod max_hold;
mod multi;
mod proptests;
mod quota;
mod release;
mod s8;
mod snapshot;
mod table;
mod time;
mod time_limits;

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

/// A stamp of `leader`'s cluster time `at_ms`.
pub(crate) fn stamp(leader: LeaderId, at_ms: u64) -> Stamp {
    Stamp { leader, at_ms }
}

/// A table plus a log index counter and a cluster clock: every `apply` is
/// the next entry, stamped by `leader` at `now_ms`.
pub(crate) struct Log {
    pub t: LockTable,
    pub index: LogIndex,
    pub leader: LeaderId,
    /// The proposing leader's cluster time: the stamp of the next entry.
    pub now_ms: u64,
}

impl Log {
    pub fn new() -> Self {
        Self::of(LockTable::new(), 0)
    }

    /// A log over `t` whose last entry was `index`, its clock at the
    /// table's `now`.
    pub fn of(t: LockTable, index: LogIndex) -> Self {
        let now_ms = t.now_ms();
        Self {
            t,
            index,
            leader: L1,
            now_ms,
        }
    }

    /// The stamp the next entry gets.
    pub fn stamp(&self) -> Stamp {
        stamp(self.leader, self.now_ms)
    }

    pub fn apply(&mut self, cmd: Command) -> Applied {
        self.apply_stamped(self.stamp(), cmd)
    }

    /// Applies `cmd` as the next entry with an explicit stamp.
    pub fn apply_stamped(&mut self, s: Stamp, cmd: Command) -> Applied {
        self.index += 1;
        let out = self.t.apply(self.index, self.leader, s, &cmd);
        assert_eq!(self.t.check_invariants(), Ok(()), "after {cmd:?}");
        out
    }

    /// Moves the proposer's clock `ms` forward (no entry).
    pub fn advance(&mut self, ms: u64) {
        self.now_ms += ms;
    }

    /// Applies a `Tick` at the proposer's clock.
    pub fn tick(&mut self) -> Applied {
        self.apply(Command::Tick)
    }

    /// Moves the clock `ms` forward and applies a `Tick`.
    pub fn advance_and_tick(&mut self, ms: u64) -> Applied {
        self.advance(ms);
        self.tick()
    }

    /// Moves the clock to `at_ms` (never back) and applies a `Tick`.
    pub fn tick_at(&mut self, at_ms: u64) -> Applied {
        self.now_ms = self.now_ms.max(at_ms);
        self.tick()
    }

    /// Applies `cmd` as the next entry without the invariant check (for
    /// loops of thousands of entries; callers check at the end).
    pub fn apply_fast(&mut self, cmd: Command) -> Applied {
        self.index += 1;
        self.t.apply(self.index, self.leader, self.stamp(), &cmd)
    }

    /// `n` session leases of `ttl_ms` from client 900,000 (its requests
    /// acknowledge each other, so its record stays small), granted at the
    /// clock's `now`: items for the sweep to work through. Returns their ids.
    pub fn fillers(&mut self, n: u64, ttl_ms: u64) -> Vec<LeaseId> {
        let first = self.t.next_lease_id();
        let base = self
            .t
            .clients()
            .find(|(c, _)| *c == 900_000)
            .map_or(0, |_| self.index * 1_000);
        for i in 1..=n {
            let h = RequestHeader {
                client_id: 900_000,
                request_id: base + i,
                acked_request_id: base + i - 1,
            };
            let out = self.apply_fast(lease_grant(h, ttl_ms));
            assert!(
                matches!(out.response, Response::LeaseGranted { .. }),
                "{:?}",
                out.response
            );
        }
        assert_eq!(self.t.check_invariants(), Ok(()));
        (first..first + n).collect()
    }

    /// Expires lease `id`: moves the clock to its end and applies a `Tick`
    /// (the sweep ends it there, as the `Expire` entry once did).
    pub fn expire(&mut self, id: LeaseId) -> Applied {
        let end = self
            .t
            .leases
            .get(&id)
            .map(|l| self.t.lease_end_ms(l))
            .expect("lease in the table");
        let out = self.tick_at(end);
        assert!(!self.t.leases.contains_key(&id), "lease {id} swept");
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
    Command::Acquire(Acquire::mutex(h, resource, lease, wait_ms, delay_ms))
}

/// An acquire of a `kind` lock in `mode` (docs/semantics.md "Lock kinds").
pub(crate) fn acquire_kind(
    h: RequestHeader,
    resource: &str,
    lease: LeaseSpec,
    wait_ms: u64,
    delay_ms: u64,
    kind: LockKind,
    mode: Mode,
) -> Command {
    Command::Acquire(Acquire::mutex(h, resource, lease, wait_ms, delay_ms).of_kind(kind, mode))
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
    })
}

pub(crate) fn lease_grant(h: RequestHeader, ttl_ms: u64) -> Command {
    Command::LeaseGrant(LeaseGrant { header: h, ttl_ms })
}

/// The granted token of an acquire response, or a panic naming what came back.
pub(crate) fn granted(a: &Applied) -> (LeaseId, FencingToken) {
    let reply = match &a.response {
        Response::Acquire(reply)
        | Response::AcquireKind { reply, .. }
        | Response::AcquireMulti { reply, .. } => reply,
        other => panic!("expected a grant, got {other:?}"),
    };
    match &reply.outcome {
        AcquireOutcome::Granted {
            lease_id,
            fencing_token,
            ..
        } => (*lease_id, *fencing_token),
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

/// A principal, by name (the test names are valid).
pub(crate) fn who(name: &str) -> Principal {
    Principal::new(name).expect("valid principal")
}

/// `cmd` made on behalf of `principal` (None: an anonymous caller).
pub(crate) fn by(principal: Option<&str>, cmd: Command) -> Command {
    Command::Authorized(Authorized {
        principal: principal.map(who),
        command: Box::new(cmd),
    })
}

/// `cmd` made by the principal `name`.
pub(crate) fn as_(name: &str, cmd: Command) -> Command {
    by(Some(name), cmd)
}

/// An auth change (unwrapped: wrap it with [`as_`]).
pub(crate) fn change(h: RequestHeader, op: AuthOp) -> Command {
    Command::AuthChange(AuthChange {
        header: h,
        op,
        at_unix_ms: 0,
    })
}

/// Grants `permission` on `prefix` to `role`.
pub(crate) fn grant_perm(role: &str, prefix: &str, permission: Permission) -> AuthOp {
    AuthOp::GrantPermission {
        role: role.into(),
        prefix: prefix.into(),
        permission,
    }
}

/// Gives `role` to `user`.
pub(crate) fn grant_role(user: &str, role: &str) -> AuthOp {
    AuthOp::GrantRole {
        user: who(user),
        role: role.into(),
    }
}

impl Log {
    /// Applies `op` as root (client id 999_999, the next request id) and
    /// asserts it applied.
    pub fn root(&mut self, op: AuthOp) {
        let request = self.index + 1;
        let out = self.apply(as_("root", change(hdr(999_999, request), op)));
        assert_eq!(out.response, Response::AuthChanged, "root's change");
    }
}

/// The error of a response, or a panic naming what came back.
pub(crate) fn refused(r: &Response) -> &CommandError {
    match r {
        Response::Error(e) => e,
        other => panic!("expected a refusal, got {other:?}"),
    }
}
