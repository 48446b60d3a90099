//! The replicated lock table and its deterministic `apply`.
//!
//! [`LockTable::apply`] is the state machine: given the entry's log index, the
//! leader id in the entry's own Raft log id and the command, it changes the
//! table and returns the [`Response`] plus the [`Effect`]s. Same inputs → same
//! state, response and effects on every replica: only ordered maps, no clock,
//! no randomness, no hashing with random seeds. Apply never panics: bad input
//! is refused with [`Response::Error`] and changes nothing (due lists, which
//! are the leader's duty and not part of the request, are still applied).
//!
//! Order of work for one entry:
//! 1. the entry's due list (if its leader id matches the entry's): due leases
//!    whose `last_index` still matches end (their locks go to the next live
//!    waiter, or into lock-delay), then due waiters are removed (S8);
//! 2. [`crate::validate::command`]; a refusal records nothing;
//! 3. the outcome table (S7): replay a stored outcome, refuse an expired or
//!    reused request id, or execute;
//! 4. the command itself, all checks before any change;
//! 5. the outcome is stored.
//!
//! A command wrapped in [`Command::Authorized`] adds, between 3 and 4, the
//! room check for a new client record, the permission and ownership checks,
//! and quotas inside 4 (see [`crate::auth`] for the rules and their order).
//! Unwrapped client commands apply exactly as they did before identities
//! existed.
//!
//! A packed entry (`Command::Batch`) runs 1–5 for each of its commands in
//! order, all at the entry's index; see [`LockTable::apply`].

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use serde::{Deserialize, Serialize};

use crate::auth::quota::check_one_more;
use crate::auth::{AuthTable, QuotaField, Target, Usage};
use crate::duty_clock::DutyClock;
use crate::effect::{Effect, FreeReason, LeaseEndReason, WaiterRemovedReason};
use crate::limits::{
    MAX_AUDIT_RECORDS, MAX_AUTH_AUDIT_RECORDS, MAX_ID, MAX_LEASES, MAX_LOCKS_PER_LEASE,
    MAX_WAITERS_PER_RESOURCE,
};
use crate::max_hold::{HeldKey, MaxHold, WaitKey};
use crate::multi::{MultiKey, MultiLock};
use crate::outcome::{fingerprint, Check, OutcomeTable};
use crate::resource::{Grant, LockDelay, ResourceState, Waiter};
use crate::types::{
    Acquire, AcquireOutcome, AcquireReply, AdvanceClock, AuditRecord, AuthAuditRecord, AuthChange,
    Authorized, CancelOutcome, CancelWait, Checkpoint, Command, DueList, EndLockDelay, ErrorCode,
    FencingToken, ForceRelease, LeaderId, LeaseGrant, LeaseId, LeaseSpec, LockKind, LogIndex, Mode,
    NotGrantedReason, Permission, Principal, Proclaim, Promote, PromoteSlice, Release, RenewBatch,
    RequestHeader, ResourceToken, Response, Revoke,
};
use crate::validate::{self, error};

/// A lease: a TTL that locks and waits hang on (docs/semantics.md "Words").
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct LeaseRecord {
    /// The id, from `next_lease_id`; never reused.
    pub lease_id: LeaseId,
    /// TTL in milliseconds.
    pub ttl_ms: u64,
    /// Index of its last renew, checkpoint or promote. Due lists and
    /// checkpoints name it; apply skips the lease when it has moved (S4).
    pub last_index: LogIndex,
    /// True once a `Promote` has graced it since its last renew (L2/L4: one
    /// grace per lease between two renews).
    pub graced: bool,
    /// Remaining TTL in milliseconds as of `last_index` (the full TTL after a
    /// renew, the proposer's value after a checkpoint, what was left and at
    /// least the grace after a promote). What is left now is this less the
    /// duty clock since then ([`LockTable::lease_remaining_ms`]), read where
    /// a node has no deadline of its own for the lease (snapshot load) and
    /// to cap the ones it set late (advances, a promote).
    pub remaining_ms: u64,
    /// Created by an acquire: it dies when its last lock and last wait are gone.
    pub auto: bool,
    /// Resources it holds.
    pub locks: BTreeSet<String>,
    /// Resources it waits on.
    pub waits: BTreeSet<String>,
    /// The principal that created it; None for a lease made by an unwrapped
    /// legacy command or by an anonymous caller. Only a caller with the same
    /// `Option<Principal>` acquires on, releases, revokes or proclaims with
    /// it (see [`crate::auth`]); its waiters' principal is this owner.
    /// Encoded in a snapshot section of its own (version 4).
    #[serde(skip)]
    pub owner: Option<Principal>,
}

/// What applying one entry produced.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Applied {
    /// The answer to the proposer's client.
    pub response: Response,
    /// Every change, in order, for the deadline table and watchers.
    pub effects: Vec<Effect>,
}

/// The replicated lock table: leases, grants, waiters, lock-delays, the token
/// and lease-id counters and the outcome table. Saved whole in snapshots.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct LockTable {
    /// The next fencing token (S2); bumped by every grant.
    pub(crate) next_token: u64,
    /// The next lease id; never reused.
    pub(crate) next_lease_id: u64,
    pub(crate) leases: BTreeMap<LeaseId, LeaseRecord>,
    pub(crate) resources: BTreeMap<String, ResourceState>,
    pub(crate) outcomes: OutcomeTable,
    pub(crate) last_promote: Option<(LeaderId, LogIndex)>,
    /// The replicated duty clock ([`crate::duty_clock`]): remaining times in
    /// the table count down on it. Encoded last (snapshot version 8).
    #[serde(skip)]
    pub(crate) clock: DutyClock,
    /// The last [`MAX_AUDIT_RECORDS`] forced releases, oldest first. Encoded
    /// after the table by [`LockTable::to_snapshot`] (snapshot version 2), so
    /// version-1 snapshots still load (with an empty trail).
    #[serde(skip)]
    pub(crate) audit: VecDeque<AuditRecord>,
    /// Published values by (lease, resource) (`Proclaim`; elections). Encoded
    /// after the audit trail (snapshot version 3). A value goes when its lease
    /// ends or when the lease's grant of the resource ends.
    #[serde(skip)]
    pub(crate) values: BTreeMap<(LeaseId, String), String>,
    /// Roles, grants, quotas and cluster-wide limits ([`crate::auth`]).
    /// Encoded after the values (snapshot version 4).
    #[serde(skip)]
    pub(crate) auth: AuthTable,
    /// The last [`MAX_AUTH_AUDIT_RECORDS`] auth changes, oldest first.
    /// Encoded last (snapshot version 4).
    #[serde(skip)]
    pub(crate) auth_audit: VecDeque<AuthAuditRecord>,
    /// Multi-locks, waiting or granted, by (lease, first resource)
    /// ([`crate::multi`]). Encoded after the auth audit trail (snapshot version 6).
    #[serde(skip)]
    pub(crate) multis: BTreeMap<MultiKey, MultiLock>,
    /// Max-holds of held grants ([`crate::max_hold`]). Encoded last
    /// (snapshot version 7).
    #[serde(skip)]
    pub(crate) max_holds: BTreeMap<HeldKey, MaxHold>,
    /// Max-holds the grants of waiters will get. Encoded last (snapshot
    /// version 7).
    #[serde(skip)]
    pub(crate) wait_max_holds: BTreeMap<WaitKey, u64>,
    /// Derived, never saved: per lease owner, its leases, locks (held grants
    /// and queued waits) and waiters (`clients` stays 0 here: the outcome
    /// table counts those). No entry is all zero. Kept up to date at every change,
    /// rebuilt on snapshot load, recomputed by `check_invariants`.
    #[serde(skip)]
    pub(crate) usage: BTreeMap<Principal, Usage>,
    /// Simulator-only bug switch (`warden-sim --inject-bug
    /// token-is-log-index`); never set in production, never saved.
    #[serde(skip)]
    pub(crate) token_is_log_index: bool,
    /// Simulator-only bug switch (`warden-sim --inject-bug
    /// skip-lease-owner-check`); never set in production, never saved.
    #[serde(skip)]
    pub(crate) skip_lease_owner_check: bool,
    /// Simulator-only bug switch (`warden-sim --inject-bug
    /// readers-overtake-writers`); never set in production, never saved.
    #[serde(skip)]
    pub(crate) readers_overtake_writers: bool,
}

impl Default for LockTable {
    fn default() -> Self {
        Self::new()
    }
}

pub(crate) fn exhausted(field: Option<&str>, message: impl Into<String>) -> CommandError {
    error(ErrorCode::ResourceExhausted, field, message)
}

/// Who a client command is applied for.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Caller<'a> {
    /// The principal; None for an anonymous caller or a legacy command.
    pub(crate) principal: Option<&'a Principal>,
    /// False for an unwrapped legacy command: no permission, ownership or
    /// quota check, the legacy outcome-table rules.
    pub(crate) wrapped: bool,
}

impl Caller<'_> {
    const LEGACY: Caller<'static> = Caller {
        principal: None,
        wrapped: false,
    };
}

/// Adds to the usage of `owner` (nothing for an ownerless lease).
fn add_usage(
    usage: &mut BTreeMap<Principal, Usage>,
    owner: Option<&Principal>,
    leases: u64,
    locks: u64,
    waiters: u64,
) {
    let Some(owner) = owner else { return };
    let u = match usage.get_mut(owner.as_str()) {
        Some(u) => u,
        None => usage.entry(owner.clone()).or_default(),
    };
    u.leases += leases;
    u.locks += locks;
    u.waiters += waiters;
}

/// Subtracts from the usage of `owner`; drops an entry that reaches zero.
fn sub_usage(
    usage: &mut BTreeMap<Principal, Usage>,
    owner: Option<&Principal>,
    leases: u64,
    locks: u64,
    waiters: u64,
) {
    let Some(owner) = owner else { return };
    let Some(u) = usage.get_mut(owner.as_str()) else {
        debug_assert!(false, "usage of {owner} missing");
        return;
    };
    debug_assert!(u.leases >= leases && u.locks >= locks && u.waiters >= waiters);
    u.leases = u.leases.saturating_sub(leases);
    u.locks = u.locks.saturating_sub(locks);
    u.waiters = u.waiters.saturating_sub(waiters);
    if u.is_zero() {
        usage.remove(owner.as_str());
    }
}

use crate::types::CommandError;

impl LockTable {
    /// An empty table: first token 1, first lease id 1.
    pub fn new() -> Self {
        Self {
            next_token: 1,
            next_lease_id: 1,
            leases: BTreeMap::new(),
            resources: BTreeMap::new(),
            outcomes: OutcomeTable::default(),
            last_promote: None,
            clock: DutyClock::default(),
            audit: VecDeque::new(),
            values: BTreeMap::new(),
            auth: AuthTable::default(),
            auth_audit: VecDeque::new(),
            multis: BTreeMap::new(),
            max_holds: BTreeMap::new(),
            wait_max_holds: BTreeMap::new(),
            usage: BTreeMap::new(),
            token_is_log_index: false,
            skip_lease_owner_check: false,
            readers_overtake_writers: false,
        }
    }

    /// Applies one committed entry (see the module docs for the order of work).
    ///
    /// `index` is the entry's log index; `log_leader` the leader id in the
    /// entry's own log id, compared with the leader id inside leader-duty
    /// commands and due lists (a mismatch ignores them: etcd issue 15247).
    ///
    /// A [`Command::Batch`] applies each of its commands in order at this
    /// same `index` (one entry: one log index, one append stamp on every
    /// node), each exactly as if it were the entry's only command, and answers
    /// [`Response::Batch`] with their responses in order. Every command checks
    /// before it changes anything, so a refused one leaves the table as the
    /// commands before it left it (its refusal is recorded in the outcome
    /// table, as for an entry of its own) and the later ones see exactly that.
    /// A batch that is empty, too long or nested is refused whole.
    pub fn apply(&mut self, index: LogIndex, log_leader: LeaderId, cmd: &Command) -> Applied {
        let mut fx = Vec::new();
        let response = self.apply_one(index, log_leader, cmd, &mut fx);
        Applied {
            response,
            effects: fx,
        }
    }

    /// [`Self::apply`], appending the effects to `fx`.
    fn apply_one(
        &mut self,
        index: LogIndex,
        log_leader: LeaderId,
        cmd: &Command,
        fx: &mut Vec<Effect>,
    ) -> Response {
        match cmd {
            Command::Acquire(_)
            | Command::AcquireKind(_)
            | Command::AcquireMulti(_)
            | Command::AcquireBounded(_)
            | Command::Release(_)
            | Command::Revoke(_)
            | Command::ForceRelease(_)
            | Command::LeaseGrant(_)
            | Command::Proclaim(_)
            | Command::CancelWait(_) => {
                self.apply_due(index, log_leader, cmd.client_due(), fx);
                match validate::command(cmd) {
                    Ok(()) => self.client_command(index, Caller::LEGACY, cmd, fx),
                    Err(e) => Response::Error(e),
                }
            }
            Command::Authorized(w) => self.authorized(index, log_leader, w, fx),
            // Always refused: an auth change must come wrapped.
            Command::AuthChange(_) => match validate::command(cmd) {
                Ok(()) => Response::Done,
                Err(e) => Response::Error(e),
            },
            Command::RenewBatch(b) => self.renew(index, b, fx),
            Command::Promote(p) => self.promote(index, log_leader, p, fx),
            Command::PromoteSlice(p) => self.promote_slice(index, log_leader, p, fx),
            Command::Checkpoint(c) => self.checkpoint(index, log_leader, c, fx),
            Command::Expire(due) => {
                self.apply_due(index, log_leader, Some(due), fx);
                Response::Done
            }
            Command::EndLockDelay(e) => self.end_lock_delay(index, log_leader, e, fx),
            Command::EndMaxHold(e) => self.end_max_hold(index, log_leader, e, fx),
            Command::CheckpointMaxHold(c) => self.checkpoint_max_hold(log_leader, c, fx),
            Command::AdvanceClock(a) => self.advance_clock(index, log_leader, a, fx),
            Command::DropClients(d) => {
                if d.leader == log_leader {
                    for (client, last_index) in &d.clients {
                        self.outcomes.drop_client(*client, *last_index);
                    }
                }
                Response::Done
            }
            Command::Noop => Response::Done,
            Command::RaiseTokenFloor(r) => self.raise_token_floor(r.floor),
            Command::Batch(cmds) => match validate::command(cmd) {
                Err(e) => Response::Error(e),
                Ok(()) => Response::Batch(
                    cmds.iter()
                        .map(|c| self.apply_one(index, log_leader, c, fx))
                        .collect(),
                ),
            },
        }
    }

    /// Simulator only (`warden-sim --inject-bug token-is-log-index`): every
    /// grant made while applying entry *i* gets token *i*, the bug S2 rules
    /// out (one entry can grant one resource twice). Production never calls it.
    #[doc(hidden)]
    pub fn inject_token_is_log_index(&mut self) {
        self.token_is_log_index = true;
    }

    /// Simulator only (`warden-sim --inject-bug skip-lease-owner-check`):
    /// lease ownership is no longer checked (step 5 of `crate::auth`), so a
    /// principal may act on another's lease, the hole of etcd PR 8031.
    /// Production never calls it.
    #[doc(hidden)]
    pub fn inject_skip_lease_owner_check(&mut self) {
        self.skip_lease_owner_check = true;
    }

    /// Simulator only (`warden-sim --inject-bug readers-overtake-writers`):
    /// a shared acquire (a reader, a permit) is granted at once whenever the
    /// resource admits it, even past earlier waiters, against FIFO (S8,
    /// docs/semantics.md "Lock kinds"). Production never calls it.
    #[doc(hidden)]
    pub fn inject_readers_overtake_writers(&mut self) {
        self.readers_overtake_writers = true;
    }

    /// `next_token = max(next_token, floor + 1)`; refused (nothing changes)
    /// when `floor >= MAX_ID`.
    fn raise_token_floor(&mut self, floor: u64) -> Response {
        if let Err(e) = validate::token_floor(floor) {
            return Response::Error(e);
        }
        match floor.checked_add(1) {
            Some(next) => {
                self.next_token = self.next_token.max(next);
                Response::Done
            }
            None => Response::Error(error(
                ErrorCode::InvalidArgument,
                Some("floor"),
                format!("floor must be below {MAX_ID}; got {floor}"),
            )),
        }
    }

    /// [`Command::Authorized`]: the inner command's due list, validation,
    /// then [`Self::client_command`] for the principal (see [`crate::auth`]).
    fn authorized(
        &mut self,
        index: LogIndex,
        log_leader: LeaderId,
        w: &Authorized,
        fx: &mut Vec<Effect>,
    ) -> Response {
        let inner = &*w.command;
        // Leader duties never depend on an identity; a leader duty wrapped
        // here (or a nested Authorized) is refused below and its due list is
        // not applied.
        let due = match inner {
            Command::Authorized(_) => None,
            c => c.client_due(),
        };
        self.apply_due(index, log_leader, due, fx);
        if let Err(e) = validate::authorized(w) {
            return Response::Error(e);
        }
        let caller = Caller {
            principal: w.principal.as_ref(),
            wrapped: true,
        };
        self.client_command(index, caller, inner, fx)
    }

    /// A validated client command: the outcome table (S7), then room for a
    /// new record, permission and ownership (wrapped commands only), then
    /// the command, then the record. A command without a header (`Proclaim`)
    /// skips the outcome table.
    fn client_command(
        &mut self,
        index: LogIndex,
        caller: Caller<'_>,
        cmd: &Command,
        fx: &mut Vec<Effect>,
    ) -> Response {
        let Some(header) = cmd.request_header() else {
            return self
                .authorize(caller, cmd)
                .and_then(|()| self.execute(index, caller, cmd, fx))
                .unwrap_or_else(Response::Error);
        };
        let fp = fingerprint(cmd);
        let key = caller.principal;
        match self.outcomes.check(key.map(Principal::as_str), header, fp) {
            Check::Refuse(resp) => resp,
            Check::Replay(resp) => {
                self.outcomes
                    .record_for(index, key, header, fp, None, !caller.wrapped);
                match (cmd, resp) {
                    (Command::Acquire(a), Response::Acquire(reply)) => {
                        Response::Acquire(self.replay_acquire(a, reply))
                    }
                    (Command::AcquireKind(k), Response::AcquireKind { reply, .. }) => {
                        let reply = self.replay_acquire(&k.acquire, reply);
                        self.kind_response(&k.acquire.resource, reply)
                    }
                    (Command::AcquireBounded(b), Response::AcquireKind { reply, .. }) => {
                        let a = &b.acquire.acquire;
                        let reply = self.replay_acquire(a, reply);
                        self.kind_response(&a.resource, reply)
                    }
                    (
                        Command::AcquireMulti(m),
                        Response::AcquireMulti { reply, .. } | Response::Acquire(reply),
                    ) => {
                        let reply = self.replay_acquire(&m.acquire, reply);
                        self.multi_response(&m.acquire.resource, reply)
                    }
                    (_, resp) => resp,
                }
            }
            Check::Execute => {
                if let Err(e) = self.client_room(caller, header.client_id) {
                    // No room for a record: nothing is recorded.
                    return Response::Error(e);
                }
                let resp = self
                    .authorize(caller, cmd)
                    .and_then(|()| self.execute(index, caller, cmd, fx))
                    .unwrap_or_else(Response::Error);
                self.outcomes
                    .record_for(index, key, header, fp, Some(&resp), !caller.wrapped);
                resp
            }
        }
    }

    /// Runs a checked client command.
    fn execute(
        &mut self,
        index: LogIndex,
        caller: Caller<'_>,
        cmd: &Command,
        fx: &mut Vec<Effect>,
    ) -> Result<Response, CommandError> {
        match cmd {
            Command::Acquire(a) => self
                .acquire(index, caller, a, LockKind::Mutex, Mode::Exclusive, 0, fx)
                .map(Response::Acquire),
            Command::AcquireKind(k) => {
                let reply = self.acquire(index, caller, &k.acquire, k.kind, k.mode, 0, fx)?;
                Ok(self.kind_response(&k.acquire.resource, reply))
            }
            Command::AcquireBounded(b) => {
                let k = &b.acquire;
                let reply =
                    self.acquire(index, caller, &k.acquire, k.kind, k.mode, b.max_hold_ms, fx)?;
                Ok(self.kind_response(&k.acquire.resource, reply))
            }
            Command::AcquireMulti(m) => self.acquire_multi(index, caller, m, fx),
            Command::Release(r) => self.release(index, r, fx),
            Command::Revoke(r) => self.revoke(index, r, fx),
            Command::ForceRelease(f) => self.force_release(index, caller, f, fx),
            Command::LeaseGrant(g) => self.lease_grant(index, caller, g, fx),
            Command::Proclaim(p) => self.proclaim(p, fx),
            Command::AuthChange(c) => self.auth_change(index, caller, c, fx),
            Command::CancelWait(c) => self.cancel_wait(index, caller, c, fx),
            // Validation lets nothing else through.
            other => Err(error(
                ErrorCode::InvalidArgument,
                Some("command"),
                format!("{} is not a client command", validate::kind(other)),
            )),
        }
    }

    /// S7 bounds: room for the record of a new client id (see
    /// [`crate::outcome`]). Nothing is ever evicted for a wrapped command.
    fn client_room(&self, caller: Caller<'_>, client: u64) -> Result<(), CommandError> {
        let name = caller.principal.map(Principal::as_str);
        if self.outcomes.has(name, client) {
            return Ok(());
        }
        if !caller.wrapped {
            return self.outcomes.legacy_room(client);
        }
        if let (Some(p), Some(q)) = (name, self.auth.effective_quota(name)) {
            let usage = Usage {
                clients: self.outcomes.count_of(p) as u64,
                ..Usage::default()
            };
            check_one_more(p, &q, &usage, QuotaField::Clients)?;
        }
        let max = self.auth.limits().max_clients;
        if self.outcomes.len() as u64 >= max {
            return Err(exhausted(
                Some("client_id"),
                format!(
                    "the cluster keeps at most {max} client records (max_clients); reuse a client id that has one, or wait until idle ones are dropped"
                ),
            ));
        }
        Ok(())
    }

    /// Permission (step 4) and ownership (step 5) of a wrapped command; an
    /// unwrapped one passes (see [`crate::auth`]).
    fn authorize(&self, caller: Caller<'_>, cmd: &Command) -> Result<(), CommandError> {
        if !caller.wrapped {
            return Ok(());
        }
        let p = caller.principal;
        match cmd {
            Command::Acquire(a)
            | Command::AcquireKind(crate::types::AcquireKind { acquire: a, .. })
            | Command::AcquireBounded(crate::types::AcquireBounded {
                acquire: crate::types::AcquireKind { acquire: a, .. },
                ..
            }) => {
                self.auth.check(
                    p,
                    Permission::Lock,
                    Target::Resource(&a.resource),
                    Some("resource"),
                )?;
                if let LeaseSpec::Existing { lease_id } = a.lease {
                    self.check_owner(caller, lease_id)?;
                }
                Ok(())
            }
            Command::AcquireMulti(m) => {
                // `lock` on every resource; the first refused is named.
                for r in &m.resources {
                    self.auth
                        .check(p, Permission::Lock, Target::Resource(r), Some("resources"))?;
                }
                if let LeaseSpec::Existing { lease_id } = m.acquire.lease {
                    self.check_owner(caller, lease_id)?;
                }
                Ok(())
            }
            Command::LeaseGrant(_) => self.auth.check(p, Permission::Lock, Target::Any, None),
            Command::Proclaim(pr) => {
                self.auth.check(
                    p,
                    Permission::Lock,
                    Target::Resource(&pr.resource),
                    Some("resource"),
                )?;
                self.check_owner(caller, pr.lease_id)
            }
            Command::Release(r) => self.check_owner(caller, r.lease_id),
            Command::Revoke(r) => self.check_owner(caller, r.lease_id),
            Command::ForceRelease(_) | Command::AuthChange(_) => {
                self.auth
                    .check(p, Permission::Admin, Target::Prefix(""), None)
            }
            _ => Ok(()),
        }
    }

    /// A live lease acts only for its owner (etcd PR 8031); an unknown lease
    /// is left to the command's own NotFound.
    fn check_owner(&self, caller: Caller<'_>, lease_id: LeaseId) -> Result<(), CommandError> {
        match self.leases.get(&lease_id) {
            Some(l) if l.owner.as_ref() != caller.principal && !self.skip_lease_owner_check => {
                Err(error(
                    ErrorCode::PermissionDenied,
                    Some("lease_id"),
                    format!("lease {lease_id} belongs to another principal"),
                ))
            }
            _ => Ok(()),
        }
    }

    /// Quotas (step 6): refuses when one more of each of `fields` would take
    /// a wrapped command's principal over its quota (root and anonymous
    /// callers have none).
    pub(crate) fn check_quota_n(
        &self,
        caller: Caller<'_>,
        field: QuotaField,
        n: u64,
    ) -> Result<(), CommandError> {
        let Some(p) = caller.principal.filter(|_| caller.wrapped) else {
            return Ok(());
        };
        let Some(q) = self.auth.effective_quota(Some(p.as_str())) else {
            return Ok(());
        };
        let usage = self.usage.get(p.as_str()).copied().unwrap_or_default();
        crate::auth::quota::check_more(p.as_str(), &q, &usage, field, n)
    }

    /// Quotas (step 6) for one more of each of `fields` (see
    /// [`Self::check_quota_n`]).
    fn check_quota(&self, caller: Caller<'_>, fields: &[QuotaField]) -> Result<(), CommandError> {
        let Some(p) = caller.principal.filter(|_| caller.wrapped) else {
            return Ok(());
        };
        let Some(q) = self.auth.effective_quota(Some(p.as_str())) else {
            return Ok(());
        };
        let usage = self.usage.get(p.as_str()).copied().unwrap_or_default();
        fields
            .iter()
            .try_for_each(|f| check_one_more(p.as_str(), &q, &usage, *f))
    }

    /// A retried acquire: the first outcome plus the lease's current state (S7).
    fn replay_acquire(&self, a: &Acquire, reply: AcquireReply) -> AcquireReply {
        let lease_id = match &reply.outcome {
            AcquireOutcome::Granted { lease_id, .. } | AcquireOutcome::Queued { lease_id, .. } => {
                Some(*lease_id)
            }
            AcquireOutcome::NotGranted { .. } => match a.lease {
                LeaseSpec::Existing { lease_id } => Some(lease_id),
                LeaseSpec::New { .. } => None,
            },
        };
        let (lease_live, current_token) = self.lease_state(lease_id, &a.resource);
        AcquireReply {
            outcome: reply.outcome,
            retried: true,
            lease_live,
            current_token,
        }
    }

    fn lease_state(
        &self,
        lease_id: Option<LeaseId>,
        resource: &str,
    ) -> (bool, Option<FencingToken>) {
        let Some(id) = lease_id else {
            return (false, None);
        };
        let live = self.leases.contains_key(&id);
        let token = self
            .resources
            .get(resource)
            .and_then(|r| r.grant_of(id))
            .map(|g| g.fencing_token);
        (live, token)
    }

    /// The answer to a [`Command::AcquireKind`]: the reply and the slot of
    /// the permit the reply's lease holds on `resource` now, if any.
    fn kind_response(&self, resource: &str, reply: AcquireReply) -> Response {
        let lease_id = match &reply.outcome {
            AcquireOutcome::Granted { lease_id, .. } | AcquireOutcome::Queued { lease_id, .. } => {
                Some(*lease_id)
            }
            AcquireOutcome::NotGranted { .. } => None,
        };
        let slot = lease_id
            .and_then(|id| self.resources.get(resource)?.grant_of(id))
            .filter(|g| reply.current_token == Some(g.fencing_token))
            .and_then(|g| g.slot);
        Response::AcquireKind { reply, slot }
    }

    // ---------------------------------------------------------------- due lists

    /// S8 / "Time": ends due leases whose `last_index` still matches, then
    /// removes timed-out waiters; ignored when the leader ids differ.
    pub(crate) fn apply_due(
        &mut self,
        index: LogIndex,
        log_leader: LeaderId,
        due: Option<&DueList>,
        fx: &mut Vec<Effect>,
    ) {
        let Some(due) = due else { return };
        if due.leader != log_leader {
            return;
        }
        for d in &due.leases {
            if self
                .leases
                .get(&d.lease_id)
                .is_some_and(|l| l.last_index == d.last_index)
            {
                self.end_lease(
                    index,
                    d.lease_id,
                    LeaseEndReason::Expired,
                    FreeReason::Expired,
                    true,
                    fx,
                );
            }
        }
        for w in &due.waiters {
            if self.remove_waiter(
                index,
                &w.resource,
                w.lease_id,
                w.enqueue_index,
                WaiterRemovedReason::TimedOut,
                fx,
            ) {
                self.settle(index, &w.resource, fx);
                self.drop_auto_if_idle(w.lease_id, fx);
            }
        }
    }

    // ---------------------------------------------------------------- commands

    /// An acquire of `resource` as a `kind` lock, in `mode` (docs/semantics.md
    /// "Lock kinds"): refused when the resource is another kind now; the
    /// lease's own grant or wait comes back unchanged when it asks again in
    /// the same mode (refused in another); granted at once when nobody waits
    /// and the resource admits the mode; else a try-lock is not granted and
    /// any other acquire queues (S8, FIFO). A new grant or wait gets
    /// `max_hold_ms` (0 = none; [`crate::max_hold`]).
    #[allow(clippy::too_many_arguments)]
    fn acquire(
        &mut self,
        index: LogIndex,
        caller: Caller<'_>,
        a: &Acquire,
        kind: LockKind,
        mode: Mode,
        max_hold_ms: u64,
        fx: &mut Vec<Effect>,
    ) -> Result<AcquireReply, CommandError> {
        let res = self.resources.get(&a.resource);
        if let Some(r) = res.filter(|r| r.kind != kind) {
            let field = match (r.kind, kind) {
                (LockKind::Semaphore { .. }, LockKind::Semaphore { .. }) => "limit",
                _ => "kind",
            };
            return Err(error(
                ErrorCode::FailedPrecondition,
                Some(field),
                format!(
                    "{:?} is a {} while it has holders, waiters or a lock-delay; asked for as a {kind}",
                    a.resource, r.kind
                ),
            ));
        }
        // Resolve the lease; nothing changes until every check has passed.
        let (lease_id, ttl_ms, new_lease) = match a.lease {
            LeaseSpec::New { ttl_ms } => (self.next_free_lease_id()?, ttl_ms, true),
            LeaseSpec::Existing { lease_id } => {
                let lease = self
                    .leases
                    .get(&lease_id)
                    .ok_or_else(|| unknown_lease(lease_id))?;
                let wrong_mode = |had: Mode, what: &str| {
                    error(
                        ErrorCode::FailedPrecondition,
                        Some("mode"),
                        format!(
                            "lease {lease_id} {what} {:?} in {had} mode; release it before asking in {mode} mode",
                            a.resource
                        ),
                    )
                };
                if let Some(g) = res.and_then(|r| r.grant_of(lease_id)) {
                    if g.mode != mode {
                        return Err(wrong_mode(g.mode, "holds"));
                    }
                    // Already held by this lease: the existing grant, unchanged.
                    return Ok(acquire_reply(
                        AcquireOutcome::Granted {
                            resource: a.resource.clone(),
                            lease_id,
                            fencing_token: g.fencing_token,
                            ttl_ms: lease.ttl_ms,
                            grant_index: g.grant_index,
                        },
                        true,
                        Some(g.fencing_token),
                    ));
                }
                if let Some((pos, w)) = res.and_then(|r| {
                    r.waiters
                        .iter()
                        .enumerate()
                        .find(|(_, w)| w.lease_id == lease_id)
                }) {
                    if w.mode != mode {
                        return Err(wrong_mode(w.mode, "waits on"));
                    }
                    // Already waiting with this lease: the existing wait, unchanged.
                    return Ok(acquire_reply(
                        AcquireOutcome::Queued {
                            resource: a.resource.clone(),
                            lease_id,
                            position: pos as u64 + 1,
                            enqueue_index: w.enqueue_index,
                            ttl_ms: lease.ttl_ms,
                        },
                        true,
                        None,
                    ));
                }
                if lease.locks.len() + lease.waits.len() >= MAX_LOCKS_PER_LEASE {
                    return Err(exhausted(
                        Some("lease_id"),
                        format!(
                            "a lease holds and waits on at most {MAX_LOCKS_PER_LEASE} resources"
                        ),
                    ));
                }
                (lease_id, lease.ttl_ms, false)
            }
        };
        // FIFO (S8): nobody overtakes a waiter, whatever its mode.
        let overtakes = self.readers_overtake_writers && mode == Mode::Shared;
        let grantable =
            res.is_none_or(|r| (r.waiters.is_empty() || overtakes) && r.admits(mode, false));
        if grantable {
            if self.next_token > MAX_ID {
                return Err(exhausted(
                    None,
                    format!("fencing tokens exhausted (limit {MAX_ID})"),
                ));
            }
            // The quota is the caller's: it owns the lease (checked before).
            if new_lease {
                self.check_quota(caller, &[QuotaField::Leases, QuotaField::Locks])?;
                self.check_lease_limit()?;
                self.create_lease(index, ttl_ms, true, caller.principal.cloned(), fx);
            } else {
                self.check_quota(caller, &[QuotaField::Locks])?;
            }
            self.resources
                .entry(a.resource.clone())
                .or_insert_with(|| ResourceState::of(kind));
            let token = self.grant(index, &a.resource, lease_id, mode, a.lock_delay_ms, fx);
            self.start_max_hold(index, &a.resource, lease_id, token, max_hold_ms, fx);
            return Ok(acquire_reply(
                AcquireOutcome::Granted {
                    resource: a.resource.clone(),
                    lease_id,
                    fencing_token: token,
                    ttl_ms,
                    grant_index: index,
                },
                true,
                Some(token),
            ));
        }
        let holder = res.and_then(|r| r.holder.as_ref()).map(|g| g.lease_id);
        let in_delay = res.is_some_and(|r| r.lock_delay.is_some());
        if a.wait_timeout_ms == 0 {
            // Try-lock: nothing changes; a lease this acquire would create is never made.
            let reason = if in_delay && res.is_some_and(|r| r.admits(mode, true)) {
                NotGrantedReason::LockDelay
            } else if res.is_some_and(|r| {
                r.admits(mode, false)
                    && r.waiters.first().is_some_and(|w| {
                        self.waiting_multi_of(w.lease_id, &a.resource, Some(w.enqueue_index))
                            .is_some()
                    })
            }) {
                // Free, but reserved for the multi-lock at the head.
                NotGrantedReason::Reserved
            } else {
                NotGrantedReason::Held
            };
            return Ok(acquire_reply(
                AcquireOutcome::NotGranted {
                    resource: a.resource.clone(),
                    holder_lease_id: holder,
                    reason,
                },
                !new_lease,
                None,
            ));
        }
        let queue_len = res.map_or(0, |r| r.waiters.len());
        if queue_len >= MAX_WAITERS_PER_RESOURCE {
            return Err(exhausted(
                Some("resource"),
                format!("a resource has at most {MAX_WAITERS_PER_RESOURCE} waiters"),
            ));
        }
        if new_lease {
            self.check_quota(
                caller,
                &[QuotaField::Leases, QuotaField::Locks, QuotaField::Waiters],
            )?;
            self.check_lease_limit()?;
            self.create_lease(index, ttl_ms, true, caller.principal.cloned(), fx);
        } else {
            self.check_quota(caller, &[QuotaField::Locks, QuotaField::Waiters])?;
        }
        let state = self
            .resources
            .entry(a.resource.clone())
            .or_insert_with(|| ResourceState::of(kind));
        state.waiters.push(Waiter {
            lease_id,
            enqueue_index: index,
            wait_timeout_ms: a.wait_timeout_ms,
            remaining_wait_ms: a.wait_timeout_ms,
            lock_delay_ms: a.lock_delay_ms,
            header: a.header,
            mode,
        });
        let position = state.waiters.len() as u64;
        if max_hold_ms > 0 {
            self.wait_max_holds
                .insert((a.resource.clone(), lease_id, index), max_hold_ms);
        }
        if let Some(l) = self.leases.get_mut(&lease_id) {
            if l.waits.insert(a.resource.clone()) {
                add_usage(&mut self.usage, l.owner.as_ref(), 0, 1, 1);
            }
        }
        fx.push(Effect::Queued {
            resource: a.resource.clone(),
            lease_id,
            enqueue_index: index,
            position,
            wait_timeout_ms: a.wait_timeout_ms,
        });
        Ok(acquire_reply(
            AcquireOutcome::Queued {
                resource: a.resource.clone(),
                lease_id,
                position,
                enqueue_index: index,
                ttl_ms,
            },
            true,
            None,
        ))
    }

    fn release(
        &mut self,
        index: LogIndex,
        r: &Release,
        fx: &mut Vec<Effect>,
    ) -> Result<Response, CommandError> {
        let lease = self
            .leases
            .get(&r.lease_id)
            .ok_or_else(|| unknown_lease(r.lease_id))?;
        let resource = match &r.resource {
            Some(name) => name.clone(),
            None => {
                let mut locks = lease.locks.iter();
                match (locks.next(), locks.next()) {
                    (Some(only), None) => only.clone(),
                    _ => {
                        return Err(error(
                            ErrorCode::FailedPrecondition,
                            Some("resource"),
                            format!(
                                "lease {} holds {} locks; name the resource to release",
                                r.lease_id,
                                lease.locks.len()
                            ),
                        ))
                    }
                }
            }
        };
        let grant = self
            .resources
            .get(&resource)
            .and_then(|s| s.grant_of(r.lease_id))
            .ok_or_else(|| {
                error(
                    ErrorCode::FailedPrecondition,
                    Some("resource"),
                    format!("lease {} is not the holder of {resource:?}", r.lease_id),
                )
            })?;
        // S6, etcd issue 22082: a late release never frees a newer grant.
        check_token(r.fencing_token, grant)?;
        let token = grant.fencing_token;
        self.free(
            index,
            &resource,
            r.lease_id,
            FreeReason::Released,
            false,
            fx,
        );
        self.drop_auto_if_idle(r.lease_id, fx);
        Ok(Response::Released {
            resource,
            lease_id: r.lease_id,
            fencing_token: token,
        })
    }

    /// Frees a grant someone else holds, as an involuntary loss (lock-delay
    /// applies), with one audit record per grant freed. Named by token, the
    /// grant with that token (a mutex's holder answers a stale or unknown
    /// token as a release does, S6); without one, every holder of the
    /// resource (all readers, all permits), by lease id. The response names
    /// the first grant freed; the audit trail names each.
    fn force_release(
        &mut self,
        index: LogIndex,
        caller: Caller<'_>,
        f: &ForceRelease,
        fx: &mut Vec<Effect>,
    ) -> Result<Response, CommandError> {
        let state = self.resources.get(&f.resource).filter(|s| s.is_held());
        let Some(state) = state else {
            return Err(error(
                ErrorCode::NotFound,
                Some("resource"),
                format!("{:?} has no holder", f.resource),
            ));
        };
        let victims: Vec<(LeaseId, FencingToken)> = match (f.fencing_token, &state.holder) {
            (Some(t), Some(holder)) => {
                check_token(Some(t), holder)?;
                vec![(holder.lease_id, t)]
            }
            (Some(t), None) => {
                let g = state
                    .shared
                    .values()
                    .find(|g| g.fencing_token == t)
                    .ok_or_else(|| {
                        error(
                            ErrorCode::FailedPrecondition,
                            Some("fencing_token"),
                            format!("no current grant of {:?} has fencing_token {t}", f.resource),
                        )
                    })?;
                vec![(g.lease_id, t)]
            }
            (None, _) => state
                .holders()
                .map(|g| (g.lease_id, g.fencing_token))
                .collect(),
        };
        // A principal's forced release names the principal, never the
        // caller's free text alone.
        let requested_by = match caller.principal.filter(|_| caller.wrapped) {
            Some(p) if f.requested_by == p.as_str() => p.to_string(),
            Some(p) => format!("{p} ({})", f.requested_by),
            None => f.requested_by.clone(),
        };
        for &(lease_id, _) in &victims {
            // A multi-grant ends whole: every resource it held is freed, each
            // with its own audit record.
            let freed = self.free(index, &f.resource, lease_id, FreeReason::Forced, true, fx);
            self.drop_auto_if_idle(lease_id, fx);
            for t in freed {
                if self.audit.len() >= MAX_AUDIT_RECORDS {
                    self.audit.pop_front();
                }
                self.audit.push_back(AuditRecord {
                    index,
                    resource: t.resource,
                    lease_id,
                    fencing_token: t.fencing_token,
                    requested_by: requested_by.clone(),
                    at_unix_ms: f.at_unix_ms,
                });
            }
        }
        let Some(&(lease_id, fencing_token)) = victims.first() else {
            return Err(error(
                ErrorCode::NotFound,
                Some("resource"),
                format!("{:?} has no holder", f.resource),
            ));
        };
        Ok(Response::Released {
            resource: f.resource.clone(),
            lease_id,
            fencing_token,
        })
    }

    /// The id a new lease would get, or `ResourceExhausted` naming
    /// `lease_id` once ids run out (nothing changes either way).
    pub(crate) fn next_free_lease_id(&self) -> Result<LeaseId, CommandError> {
        if self.next_lease_id > MAX_ID {
            return Err(exhausted(
                Some("lease_id"),
                format!("lease ids exhausted (limit {MAX_ID})"),
            ));
        }
        Ok(self.next_lease_id)
    }

    fn lease_grant(
        &mut self,
        index: LogIndex,
        caller: Caller<'_>,
        g: &LeaseGrant,
        fx: &mut Vec<Effect>,
    ) -> Result<Response, CommandError> {
        self.next_free_lease_id()?;
        self.check_quota(caller, &[QuotaField::Leases])?;
        self.check_lease_limit()?;
        let lease_id = self.create_lease(index, g.ttl_ms, false, caller.principal.cloned(), fx);
        Ok(Response::LeaseGranted {
            lease_id,
            ttl_ms: g.ttl_ms,
        })
    }

    /// [`Command::CancelWait`]: takes back the caller's own acquire named by
    /// its request id (same principal and client id, so nobody cancels
    /// another's wait): a queued waiter is removed (and the next one granted
    /// if that is now due, S8); a grant that won the race is released as a
    /// clean release (hand-off in this entry, no lock-delay); an acquire not
    /// applied yet is preempted (it is refused when it applies, queueing
    /// nothing); anything else changes nothing.
    fn cancel_wait(
        &mut self,
        index: LogIndex,
        caller: Caller<'_>,
        c: &CancelWait,
        fx: &mut Vec<Effect>,
    ) -> Result<Response, CommandError> {
        let key = caller.principal;
        let name = key.map(Principal::as_str);
        let client = c.header.client_id;
        let answer = |lease_id, outcome, fencing_token| {
            Ok(Response::WaitCancelled {
                resource: c.resource.clone(),
                lease_id,
                outcome,
                fencing_token,
            })
        };
        let stored = self
            .outcomes
            .stored(name, client, c.acquire_request_id)
            .map(|s| s.response.clone());
        let outcome = match stored {
            None if self.outcomes.forgotten(name, client, c.acquire_request_id) => {
                return answer(0, CancelOutcome::NothingToCancel, None)
            }
            None => {
                // Not applied yet (the cancel overtook it): it is refused
                // when it applies.
                let acquire = RequestHeader {
                    client_id: client,
                    request_id: c.acquire_request_id,
                    acked_request_id: 0,
                };
                let refusal = crate::outcome::preempted(&c.resource);
                self.outcomes
                    .record_for(index, key, &acquire, 0, Some(&refusal), !caller.wrapped);
                return answer(0, CancelOutcome::Preempted, None);
            }
            Some(
                Response::Acquire(reply)
                | Response::AcquireKind { reply, .. }
                | Response::AcquireMulti { reply, .. },
            ) => reply.outcome,
            Some(_) => return answer(0, CancelOutcome::NothingToCancel, None),
        };
        let (resource, lease_id, since, token) = match outcome {
            AcquireOutcome::Queued {
                resource,
                lease_id,
                enqueue_index,
                ..
            } => (resource, lease_id, enqueue_index, None),
            AcquireOutcome::Granted {
                resource,
                lease_id,
                fencing_token,
                grant_index,
                ..
            } => (resource, lease_id, grant_index, Some(fencing_token)),
            AcquireOutcome::NotGranted { .. } => {
                return answer(0, CancelOutcome::NothingToCancel, None)
            }
        };
        if resource != c.resource {
            return Err(error(
                ErrorCode::InvalidArgument,
                Some("resource"),
                format!(
                    "acquire {} asked for {resource:?}, not {:?}",
                    c.acquire_request_id, c.resource
                ),
            ));
        }
        if token.is_none()
            && self.remove_waiter(
                index,
                &resource,
                lease_id,
                since,
                WaiterRemovedReason::Cancelled,
                fx,
            )
        {
            self.settle(index, &resource, fx);
            self.drop_auto_if_idle(lease_id, fx);
            return answer(lease_id, CancelOutcome::Removed, None);
        }
        // Granted by this acquire (at once, or when it reached the head of
        // the queue): its grant, and only its grant, is released.
        let grant = self
            .resources
            .get(&resource)
            .and_then(|s| s.grant_of(lease_id))
            .filter(|g| g.grant_index >= since && token.is_none_or(|t| t == g.fencing_token))
            .map(|g| g.fencing_token);
        let Some(fencing_token) = grant else {
            return answer(lease_id, CancelOutcome::NothingToCancel, None);
        };
        let release = Release {
            header: c.header,
            resource: Some(resource),
            lease_id,
            fencing_token: Some(fencing_token),
            due: None,
        };
        self.release(index, &release, fx)?;
        answer(lease_id, CancelOutcome::Released, Some(fencing_token))
    }

    fn revoke(
        &mut self,
        index: LogIndex,
        r: &Revoke,
        fx: &mut Vec<Effect>,
    ) -> Result<Response, CommandError> {
        if !self.leases.contains_key(&r.lease_id) {
            return Err(unknown_lease(r.lease_id));
        }
        self.end_lease(
            index,
            r.lease_id,
            LeaseEndReason::Revoked,
            FreeReason::Revoked,
            false,
            fx,
        );
        Ok(Response::Revoked {
            lease_id: r.lease_id,
        })
    }

    /// An auth change (admin, checked before): applied to the auth table and
    /// kept in the bounded auth audit trail.
    fn auth_change(
        &mut self,
        index: LogIndex,
        caller: Caller<'_>,
        c: &AuthChange,
        fx: &mut Vec<Effect>,
    ) -> Result<Response, CommandError> {
        self.auth.apply(&c.op)?;
        if self.auth_audit.len() >= MAX_AUTH_AUDIT_RECORDS {
            self.auth_audit.pop_front();
        }
        self.auth_audit.push_back(AuthAuditRecord {
            index,
            principal: caller.principal.cloned(),
            op: c.op.clone(),
            at_unix_ms: c.at_unix_ms,
        });
        fx.push(Effect::AuthChanged { index });
        Ok(Response::AuthChanged)
    }

    /// S4: every live lease restarts its countdown with its full TTL and may
    /// be graced again (L4).
    fn renew(&mut self, index: LogIndex, b: &RenewBatch, fx: &mut Vec<Effect>) -> Response {
        let out = b
            .lease_ids
            .iter()
            .map(|id| match self.leases.get_mut(id) {
                Some(l) => {
                    l.last_index = index;
                    l.graced = false;
                    l.remaining_ms = l.ttl_ms;
                    fx.push(Effect::LeaseSet {
                        lease_id: *id,
                        ttl_ms: l.ttl_ms,
                    });
                    (*id, Some(l.ttl_ms))
                }
                None => (*id, None),
            })
            .collect();
        Response::Renewed(out)
    }

    /// L4 with L2: one grace per lease between two renews.
    fn promote(
        &mut self,
        index: LogIndex,
        log_leader: LeaderId,
        p: &Promote,
        fx: &mut Vec<Effect>,
    ) -> Response {
        if p.leader != log_leader {
            return Response::Done;
        }
        self.grace_leases(index, .., index.saturating_add(1), p.grace_ms, fx);
        self.last_promote = Some((p.leader, index));
        Response::Done
    }

    /// [`Self::promote`] for the leases in one range of ids: those not
    /// graced since their last renew and not renewed since the promotion
    /// started (`last_index` before its first slice). The last slice (no
    /// `to_lease`) records the promotion as done. A slice whose proposer is
    /// not its log's leader, or that names a start at or after its own
    /// index, changes nothing.
    fn promote_slice(
        &mut self,
        index: LogIndex,
        log_leader: LeaderId,
        p: &PromoteSlice,
        fx: &mut Vec<Effect>,
    ) -> Response {
        let started_at = p.start(index);
        if p.leader != log_leader || started_at > index {
            return Response::Done;
        }
        if let Some(range) = p.lease_range() {
            self.grace_leases(index, range, started_at, p.grace_ms, fx);
        }
        if p.to_lease.is_none() {
            self.last_promote = Some((p.leader, index));
        }
        Response::Done
    }

    /// L4 with L2: one grace per lease between two renews, for the leases in
    /// `ids` whose `last_index` is before `before`.
    fn grace_leases(
        &mut self,
        index: LogIndex,
        ids: impl std::ops::RangeBounds<LeaseId>,
        before: LogIndex,
        grace_ms: u64,
        fx: &mut Vec<Effect>,
    ) {
        let clock = &self.clock;
        for l in self
            .leases
            .range_mut(ids)
            .map(|(_, l)| l)
            .filter(|l| !l.graced && l.last_index < before)
        {
            // What is left now on the duty clock, re-counted from here.
            let left = clock.remaining_now(l.remaining_ms, l.last_index);
            l.graced = true;
            l.last_index = index;
            l.remaining_ms = left.max(grace_ms);
            fx.push(Effect::LeaseGraced {
                lease_id: l.lease_id,
                grace_ms,
            });
        }
    }

    /// Records remaining durations; deadlines are only ever shortened by it.
    ///
    /// Once the duty clock runs, a wait's or lock-delay's recorded remaining
    /// time is kept as it is (it counts from its enqueue or start index, and a
    /// value named later would be counted from too early a point); only the
    /// node-local deadlines are capped. A lease's counts from its `last_index`,
    /// which the checkpoint moves, so it is recorded either way.
    fn checkpoint(
        &mut self,
        index: LogIndex,
        log_leader: LeaderId,
        c: &Checkpoint,
        fx: &mut Vec<Effect>,
    ) -> Response {
        if c.leader != log_leader {
            return Response::Done;
        }
        let clock_runs = self.clock.is_running();
        for cl in &c.leases {
            if let Some(l) = self
                .leases
                .get_mut(&cl.lease_id)
                .filter(|l| l.last_index == cl.last_index)
            {
                l.remaining_ms = cl.remaining_ms;
                l.last_index = index;
                fx.push(Effect::LeaseCapped {
                    lease_id: cl.lease_id,
                    remaining_ms: cl.remaining_ms,
                });
            }
        }
        for cd in &c.lock_delays {
            if let Some(d) = self
                .resources
                .get_mut(&cd.resource)
                .and_then(|r| r.lock_delay.as_mut())
                .filter(|d| d.start_index == cd.start_index)
            {
                if !clock_runs {
                    d.remaining_ms = cd.remaining_ms;
                }
                fx.push(Effect::LockDelayCapped {
                    resource: cd.resource.clone(),
                    start_index: cd.start_index,
                    remaining_ms: cd.remaining_ms,
                });
            }
        }
        for cw in &c.waiters {
            if let Some(w) = self.resources.get_mut(&cw.resource).and_then(|r| {
                r.waiters
                    .iter_mut()
                    .find(|w| w.lease_id == cw.lease_id && w.enqueue_index == cw.enqueue_index)
            }) {
                if !clock_runs {
                    w.remaining_wait_ms = cw.remaining_ms;
                }
                fx.push(Effect::WaitCapped {
                    resource: cw.resource.clone(),
                    lease_id: cw.lease_id,
                    enqueue_index: cw.enqueue_index,
                    remaining_ms: cw.remaining_ms,
                });
            }
        }
        Response::Done
    }

    /// Advances the duty clock (docs/semantics.md "Checkpoints"); an advance
    /// proposed in another leader's term is ignored, as every leader duty is,
    /// and so is one measured from an advance that is no longer the last.
    fn advance_clock(
        &mut self,
        index: LogIndex,
        log_leader: LeaderId,
        a: &AdvanceClock,
        fx: &mut Vec<Effect>,
    ) -> Response {
        if a.leader != log_leader || a.after_index != self.clock.last_advance_index() {
            return Response::Done;
        }
        if self.clock.advance(index, a.elapsed_ms) {
            fx.push(Effect::ClockAdvanced { index });
        }
        Response::Done
    }

    /// Ends the named delay (only if `start_index` matches) and hands off (S8).
    fn end_lock_delay(
        &mut self,
        index: LogIndex,
        log_leader: LeaderId,
        e: &EndLockDelay,
        fx: &mut Vec<Effect>,
    ) -> Response {
        self.apply_due(index, log_leader, e.due.as_ref(), fx);
        if e.leader != log_leader {
            return Response::Done;
        }
        let state = self.resources.get_mut(&e.resource);
        if let Some(state) = state {
            if state
                .lock_delay
                .as_ref()
                .is_some_and(|d| d.start_index == e.start_index)
            {
                state.lock_delay = None;
                fx.push(Effect::LockDelayEnded {
                    resource: e.resource.clone(),
                    start_index: e.start_index,
                });
                self.settle(index, &e.resource, fx);
            }
        }
        Response::Done
    }

    // ---------------------------------------------------------------- building blocks

    /// At most `max_leases` live leases in the cluster (replicated; default
    /// [`MAX_LEASES`]), for every command, wrapped or not.
    pub(crate) fn check_lease_limit(&self) -> Result<(), CommandError> {
        let max = self.auth.limits().max_leases;
        if self.leases.len() as u64 >= max {
            return Err(exhausted(
                Some("lease_id"),
                format!(
                    "the cluster holds at most {max} live leases (max_leases, default MAX_LEASES = {MAX_LEASES}); revoke or let some expire"
                ),
            ));
        }
        Ok(())
    }

    pub(crate) fn create_lease(
        &mut self,
        index: LogIndex,
        ttl_ms: u64,
        auto: bool,
        owner: Option<Principal>,
        fx: &mut Vec<Effect>,
    ) -> LeaseId {
        let lease_id = self.next_lease_id;
        self.next_lease_id = self.next_lease_id.saturating_add(1);
        self.leases.insert(
            lease_id,
            LeaseRecord {
                lease_id,
                ttl_ms,
                last_index: index,
                graced: false,
                remaining_ms: ttl_ms,
                auto,
                locks: BTreeSet::new(),
                waits: BTreeSet::new(),
                owner,
            },
        );
        if let Some(l) = self.leases.get(&lease_id) {
            add_usage(&mut self.usage, l.owner.as_ref(), 1, 0, 0);
        }
        fx.push(Effect::LeaseSet { lease_id, ttl_ms });
        lease_id
    }

    /// Grants `resource` to `lease_id` in `mode` with a fresh token (S2): as
    /// its exclusive holder, or as a shared holder (a semaphore permit takes
    /// the lowest free slot). The caller has checked `next_token <= MAX_ID`,
    /// that the resource entry exists and that it admits the mode.
    pub(crate) fn grant(
        &mut self,
        index: LogIndex,
        resource: &str,
        lease_id: LeaseId,
        mode: Mode,
        lock_delay_ms: u64,
        fx: &mut Vec<Effect>,
    ) -> FencingToken {
        let mut token = self.next_token;
        if self.token_is_log_index {
            // The reintroduced bug: every grant of entry `index` shares its token.
            token = index;
            self.next_token = self.next_token.max(index);
        }
        self.next_token = self.next_token.saturating_add(1);
        let ttl_ms = self.leases.get(&lease_id).map_or(0, |l| l.ttl_ms);
        if let Some(l) = self.leases.get_mut(&lease_id) {
            if l.waits.remove(resource) {
                sub_usage(&mut self.usage, l.owner.as_ref(), 0, 1, 1);
            }
            if l.locks.insert(resource.to_owned()) {
                add_usage(&mut self.usage, l.owner.as_ref(), 0, 1, 0);
            }
        }
        let state = self
            .resources
            .entry(resource.to_owned())
            .or_insert_with(|| ResourceState::of(LockKind::Mutex));
        let slot = state.free_slot();
        debug_assert!(
            state.admits(mode, false),
            "grant of {resource:?} in {mode} mode that the resource does not admit"
        );
        let grant = Grant {
            lease_id,
            fencing_token: token,
            ttl_ms,
            grant_index: index,
            lock_delay_ms,
            mode,
            slot,
        };
        match mode {
            Mode::Exclusive => state.holder = Some(grant),
            Mode::Shared => {
                state.shared.insert(lease_id, grant);
            }
        }
        fx.push(Effect::Granted {
            resource: resource.to_owned(),
            lease_id,
            fencing_token: token,
            grant_index: index,
            mode,
            slot,
        });
        token
    }

    /// Takes `lease_id`'s grant off `resource` (and, for a multi-grant,
    /// off every one of its resources, in its order) and returns what was
    /// freed; each resource as [`Self::free_one`] does.
    pub(crate) fn free(
        &mut self,
        index: LogIndex,
        resource: &str,
        lease_id: LeaseId,
        reason: FreeReason,
        involuntary: bool,
        fx: &mut Vec<Effect>,
    ) -> Vec<ResourceToken> {
        let Some(key) = self.granted_multi_of(lease_id, resource) else {
            return self
                .free_one(index, resource, lease_id, reason, involuntary, fx)
                .into_iter()
                .collect();
        };
        let Some(m) = self.multis.remove(&key) else {
            return Vec::new();
        };
        m.resources
            .iter()
            .filter_map(|r| self.free_one(index, r, lease_id, reason, involuntary, fx))
            .collect()
    }

    /// Takes `lease_id`'s grant off `resource`; starts (or widens) a
    /// lock-delay when the loss is involuntary and the grant asked for one,
    /// then hands off what is free (S8).
    fn free_one(
        &mut self,
        index: LogIndex,
        resource: &str,
        lease_id: LeaseId,
        reason: FreeReason,
        involuntary: bool,
        fx: &mut Vec<Effect>,
    ) -> Option<ResourceToken> {
        let state = self.resources.get_mut(resource)?;
        let g = if state
            .holder
            .as_ref()
            .is_some_and(|g| g.lease_id == lease_id)
        {
            state.holder.take()
        } else {
            state.shared.remove(&lease_id)
        };
        let g = g?;
        self.values.remove(&(g.lease_id, resource.to_owned()));
        if let Some(m) = self.max_holds.remove(&(resource.to_owned(), g.lease_id)) {
            fx.push(Effect::MaxHoldEnded {
                resource: resource.to_owned(),
                lease_id: g.lease_id,
                fencing_token: m.fencing_token,
            });
        }
        fx.push(Effect::Freed {
            resource: resource.to_owned(),
            lease_id: g.lease_id,
            fencing_token: g.fencing_token,
            reason,
        });
        if involuntary && g.lock_delay_ms > 0 {
            let scope = state.delay_scope_of(&g);
            let (lock_delay_ms, scope) = match state.lock_delay.take() {
                // One delay per resource: the merged one withholds both
                // scopes, for the longer delay counted from now.
                Some(old) => {
                    fx.push(Effect::LockDelayEnded {
                        resource: resource.to_owned(),
                        start_index: old.start_index,
                    });
                    (
                        old.lock_delay_ms.max(g.lock_delay_ms),
                        old.scope.merge(scope),
                    )
                }
                None => (g.lock_delay_ms, scope),
            };
            state.lock_delay = Some(LockDelay {
                start_index: index,
                lock_delay_ms,
                remaining_ms: lock_delay_ms,
                scope,
            });
            fx.push(Effect::LockDelayStarted {
                resource: resource.to_owned(),
                start_index: index,
                lock_delay_ms,
            });
        }
        if let Some(l) = self.leases.get_mut(&g.lease_id) {
            if l.locks.remove(resource) {
                sub_usage(&mut self.usage, l.owner.as_ref(), 0, 1, 0);
            }
        }
        self.settle(index, resource, fx);
        Some(ResourceToken {
            resource: resource.to_owned(),
            fencing_token: g.fencing_token,
        })
    }

    /// S8 handoff: while the head waiter's mode is admitted (for a
    /// read-write lock, every reader at the head together; for a semaphore,
    /// as many as there are free slots), grants it with a new token if its
    /// lease is live and its principal (its lease's owner) still has `lock`
    /// on the resource, else removes it (an acquire-made lease left with
    /// nothing dies); drops the resource entry when nothing is left on it.
    /// A multi-lock's waiter at the head is granted, removed or left
    /// blocked with all of its resources ([`crate::multi`]).
    fn settle(&mut self, index: LogIndex, resource: &str, fx: &mut Vec<Effect>) {
        self.settle_all(index, VecDeque::from([resource.to_owned()]), fx);
    }

    /// One step of [`Self::settle`] for a head waiter that is no
    /// multi-lock's: grants or removes it when the resource admits its
    /// mode (true), else changes nothing (false).
    pub(crate) fn settle_head(
        &mut self,
        index: LogIndex,
        resource: &str,
        fx: &mut Vec<Effect>,
    ) -> bool {
        {
            let Some(state) = self.resources.get_mut(resource) else {
                return false;
            };
            let Some(head) = state.waiters.first() else {
                return false;
            };
            if !state.admits(head.mode, false) {
                return false;
            }
            if self.next_token > MAX_ID {
                // Tokens exhausted: nobody can be granted; the waiters stay queued.
                return false;
            }
            let w = state.waiters.remove(0);
            let max_hold_ms = self
                .wait_max_holds
                .remove(&(resource.to_owned(), w.lease_id, w.enqueue_index))
                .unwrap_or(0);
            // Permission is decided at this index, for the lease's owner.
            let allowed = self.leases.get(&w.lease_id).map(|l| {
                self.auth.allows(
                    l.owner.as_ref().map(Principal::as_str),
                    Permission::Lock,
                    Target::Resource(resource),
                )
            });
            let reason = match allowed {
                None => WaiterRemovedReason::LeaseEnded,
                Some(false) => WaiterRemovedReason::PermissionRevoked,
                Some(true) => WaiterRemovedReason::Granted,
            };
            fx.push(Effect::WaiterRemoved {
                resource: resource.to_owned(),
                lease_id: w.lease_id,
                enqueue_index: w.enqueue_index,
                reason,
            });
            match reason {
                WaiterRemovedReason::Granted => {
                    let token =
                        self.grant(index, resource, w.lease_id, w.mode, w.lock_delay_ms, fx);
                    self.start_max_hold(index, resource, w.lease_id, token, max_hold_ms, fx);
                }
                WaiterRemovedReason::PermissionRevoked => {
                    if let Some(l) = self.leases.get_mut(&w.lease_id) {
                        if l.waits.remove(resource) {
                            sub_usage(&mut self.usage, l.owner.as_ref(), 0, 1, 1);
                        }
                    }
                    self.drop_auto_if_idle(w.lease_id, fx);
                }
                _ => {}
            }
        }
        true
    }

    /// Records that `lease_id` waits on `resource` (and its owner's usage).
    pub(crate) fn note_wait(&mut self, lease_id: LeaseId, resource: &str) {
        if let Some(l) = self.leases.get_mut(&lease_id) {
            if l.waits.insert(resource.to_owned()) {
                add_usage(&mut self.usage, l.owner.as_ref(), 0, 1, 1);
            }
        }
    }

    /// Records that `lease_id` no longer waits on `resource`.
    pub(crate) fn forget_wait(&mut self, lease_id: LeaseId, resource: &str) {
        if let Some(l) = self.leases.get_mut(&lease_id) {
            if l.waits.remove(resource) {
                sub_usage(&mut self.usage, l.owner.as_ref(), 0, 1, 1);
            }
        }
    }

    /// Removes one exact waiter; true if it was there. A multi-lock's
    /// waiter goes with all of its others, whose resources are settled
    /// here (the caller settles `resource`).
    fn remove_waiter(
        &mut self,
        index: LogIndex,
        resource: &str,
        lease_id: LeaseId,
        enqueue_index: LogIndex,
        reason: WaiterRemovedReason,
        fx: &mut Vec<Effect>,
    ) -> bool {
        let Some(state) = self.resources.get_mut(resource) else {
            return false;
        };
        let Some(pos) = state
            .waiters
            .iter()
            .position(|w| w.lease_id == lease_id && w.enqueue_index == enqueue_index)
        else {
            return false;
        };
        if let Some(key) = self.waiting_multi_of(lease_id, resource, Some(enqueue_index)) {
            let others: VecDeque<String> = self
                .remove_multi_waits(&key, reason, fx)
                .into_iter()
                .filter(|r| r != resource)
                .collect();
            self.settle_all(index, others, fx);
            return true;
        }
        if let Some(s) = self.resources.get_mut(resource) {
            s.waiters.remove(pos);
        }
        self.wait_max_holds
            .remove(&(resource.to_owned(), lease_id, enqueue_index));
        if let Some(l) = self.leases.get_mut(&lease_id) {
            if l.waits.remove(resource) {
                sub_usage(&mut self.usage, l.owner.as_ref(), 0, 1, 1);
            }
        }
        fx.push(Effect::WaiterRemoved {
            resource: resource.to_owned(),
            lease_id,
            enqueue_index,
            reason,
        });
        true
    }

    /// Ends a lease: removes its waits (S8), frees its locks (lock-delay if
    /// `involuntary`), then reports it ended.
    fn end_lease(
        &mut self,
        index: LogIndex,
        lease_id: LeaseId,
        reason: LeaseEndReason,
        free_reason: FreeReason,
        involuntary: bool,
        fx: &mut Vec<Effect>,
    ) {
        let Some(lease) = self.remove_lease(lease_id) else {
            return;
        };
        self.drop_values(lease_id);
        for r in &lease.waits {
            let enq = self
                .resources
                .get(r)
                .and_then(|s| s.waiters.iter().find(|w| w.lease_id == lease_id))
                .map(|w| w.enqueue_index);
            if let Some(enq) = enq {
                self.remove_waiter(index, r, lease_id, enq, WaiterRemovedReason::LeaseEnded, fx);
                self.settle(index, r, fx);
            }
        }
        for r in &lease.locks {
            if self
                .resources
                .get(r)
                .is_some_and(|s| s.grant_of(lease_id).is_some())
            {
                self.free(index, r, lease_id, free_reason, involuntary, fx);
            }
        }
        fx.push(Effect::LeaseEnded { lease_id, reason });
    }

    /// Takes a lease out of the table, and its counts out of its owner's usage.
    fn remove_lease(&mut self, lease_id: LeaseId) -> Option<LeaseRecord> {
        let l = self.leases.remove(&lease_id)?;
        let (locks, waits) = (l.locks.len() as u64, l.waits.len() as u64);
        sub_usage(&mut self.usage, l.owner.as_ref(), 1, locks + waits, waits);
        Some(l)
    }

    /// Usage computed from the leases (for snapshot load and
    /// `check_invariants`; apply keeps `usage` up to date incrementally).
    pub(crate) fn computed_usage(&self) -> BTreeMap<Principal, Usage> {
        let mut usage = BTreeMap::new();
        for l in self.leases.values() {
            let (locks, waits) = (l.locks.len() as u64, l.waits.len() as u64);
            add_usage(&mut usage, l.owner.as_ref(), 1, locks + waits, waits);
        }
        usage.retain(|_, u: &mut Usage| !u.is_zero());
        usage
    }

    /// Forgets every value `lease_id` published.
    fn drop_values(&mut self, lease_id: LeaseId) {
        let keys: Vec<(LeaseId, String)> = self
            .values
            .range((lease_id, String::new())..)
            .take_while(|((l, _), _)| *l == lease_id)
            .map(|(k, _)| k.clone())
            .collect();
        for k in keys {
            self.values.remove(&k);
        }
    }

    /// Publishes a value (elections). A candidate's value (no token) needs a
    /// live lease; a holder's needs the exact grant (a deposed leader's
    /// proclaim is refused).
    fn proclaim(&mut self, p: &Proclaim, fx: &mut Vec<Effect>) -> Result<Response, CommandError> {
        if !self.leases.contains_key(&p.lease_id) {
            return Err(unknown_lease(p.lease_id));
        }
        if let Some(token) = p.fencing_token {
            let grant = self
                .resources
                .get(&p.resource)
                .and_then(|s| s.grant_of(p.lease_id));
            if grant.is_none_or(|g| g.fencing_token != token) {
                return Err(error(
                    ErrorCode::FailedPrecondition,
                    Some("fencing_token"),
                    format!(
                        "lease {} does not hold {:?} with fencing token {token}",
                        p.lease_id, p.resource
                    ),
                ));
            }
        }
        let key = (p.lease_id, p.resource.clone());
        if !self.values.contains_key(&key) && self.values.len() >= crate::limits::MAX_VALUES {
            return Err(exhausted(
                Some("value"),
                format!(
                    "the table keeps at most {} published values",
                    crate::limits::MAX_VALUES
                ),
            ));
        }
        self.values.insert(key, p.value.clone());
        fx.push(Effect::Proclaimed {
            resource: p.resource.clone(),
            lease_id: p.lease_id,
            fencing_token: p.fencing_token.unwrap_or(0),
        });
        Ok(Response::Proclaimed {
            resource: p.resource.clone(),
            lease_id: p.lease_id,
        })
    }

    /// An acquire-created lease with no lock and no wait left dies.
    pub(crate) fn drop_auto_if_idle(&mut self, lease_id: LeaseId, fx: &mut Vec<Effect>) {
        if self
            .leases
            .get(&lease_id)
            .is_some_and(|l| l.auto && l.locks.is_empty() && l.waits.is_empty())
        {
            self.remove_lease(lease_id);
            self.drop_values(lease_id);
            fx.push(Effect::LeaseEnded {
                lease_id,
                reason: LeaseEndReason::Released,
            });
        }
    }
}

pub(crate) fn unknown_lease(id: LeaseId) -> CommandError {
    error(
        ErrorCode::NotFound,
        Some("lease_id"),
        format!("lease {id} not found (expired, revoked or never granted)"),
    )
}

fn acquire_reply(
    outcome: AcquireOutcome,
    lease_live: bool,
    current_token: Option<FencingToken>,
) -> AcquireReply {
    AcquireReply {
        outcome,
        retried: false,
        lease_live,
        current_token,
    }
}

/// A release naming a token acts only on that exact grant (S6).
fn check_token(named: Option<FencingToken>, grant: &Grant) -> Result<(), CommandError> {
    match named {
        Some(t) if t < grant.fencing_token => Err(error(
            ErrorCode::FailedPrecondition,
            Some("fencing_token"),
            format!(
                "stale fencing_token {t}: the current grant has token {}",
                grant.fencing_token
            ),
        )),
        Some(t) if t > grant.fencing_token => Err(error(
            ErrorCode::FailedPrecondition,
            Some("fencing_token"),
            format!(
                "fencing_token {t} was never this grant's: the current grant has the lower token {}",
                grant.fencing_token
            ),
        )),
        _ => Ok(()),
    }
}
