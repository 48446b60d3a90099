//! The replicated lock table and its deterministic `apply`.
//!
//! [`LockTable::apply`] is the state machine: given the entry's log index, the
//! leader id in the entry's own Raft log id, its stamp and the command, it changes the
//! table and returns the [`Response`] plus the [`Effect`]s. Same inputs → same
//! state, response and effects on every replica: only ordered maps, no clock
//! (time arrives as the entry's stamp), no randomness, no hashing with random
//! seeds. Apply never panics: bad input is refused with [`Response::Error`]
//! and changes nothing (the sweep, which is the entry's and not the
//! request's, still runs).
//!
//! Order of work for one entry:
//! 1. cluster time: `now = max(now, at_ms)` when the stamp's leader is the
//!    entry's own (docs/semantics.md "Time"), then the sweep: at most
//!    [`crate::expiry::MAX_SWEEP_PER_ENTRY`] due items end, in instant order;
//! 2. [`crate::validate::command`]; a refusal records nothing;
//! 3. the outcome table (S7): replay a stored outcome, refuse an expired or
//!    reused request id, or execute;
//! 4. the command itself: what has ended on the resources it touches ends
//!    first ([`crate::expiry`]), then all checks before any change;
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

use crate::auth::{AuthTable, QuotaField, Target, Usage};
use crate::effect::{Effect, FreeReason, LeaseEndReason, WaiterRemovedReason};
use crate::expiry::{Promotion, Timed, Timeline, MAX_SWEEP_PER_ENTRY};
use crate::limits::{
    MAX_AUDIT_RECORDS, MAX_AUTH_AUDIT_RECORDS, MAX_ID, MAX_LEASES, MAX_LOCKS_PER_LEASE,
    MAX_WAITERS_PER_RESOURCE,
};
use crate::max_hold::{HeldKey, MaxHold, WaitKey};
use crate::multi::{MultiKey, MultiLock};
use crate::outcome::{fingerprint, Check, OutcomeTable};
use crate::resource::{Grant, LockDelay, ResourceState, Waiter};
use crate::types::{
    Acquire, AcquireOutcome, AcquireReply, AuditRecord, AuthAuditRecord, AuthChange, Authorized,
    CancelOutcome, CancelWait, Command, ErrorCode, FencingToken, ForceRelease, LeaderId,
    LeaseGrant, LeaseId, LeaseSpec, LockKind, LogIndex, Mode, NotGrantedReason, Permission,
    Principal, Release, RenewBatch, RequestHeader, ResourceToken, Response, Revoke, Stamp,
};
use crate::validate::{self, error};

/// A lease: a TTL that locks and waits hang on (docs/semantics.md "Words").
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct LeaseRecord {
    /// The id, from `next_lease_id`; never reused.
    pub lease_id: LeaseId,
    /// TTL in milliseconds.
    pub ttl_ms: u64,
    /// Cluster time (ms) it ends at unless renewed: `now` at the apply of
    /// its grant or last renew, plus `ttl_ms` (S4). A promote may keep it
    /// a little longer ([`LockTable::lease_end_ms`], L4).
    pub expires_at_ms: u64,
    /// Index of its grant or last renew (L4 compares it with the previous
    /// promote's).
    pub renew_index: LogIndex,
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
    /// Encoded in a snapshot section of its own.
    #[serde(skip)]
    pub owner: Option<Principal>,
}

/// What applying one entry produced.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Applied {
    /// The answer to the proposer's client.
    pub response: Response,
    /// Every change, in order, for watchers, metrics and waiting acquires.
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
    /// Cluster time in milliseconds: the largest stamp of a matching leader
    /// applied so far ([`crate::expiry`]).
    pub(crate) now_ms: u64,
    /// The last two promotes (L4).
    pub(crate) promotion: Promotion,
    /// The last [`MAX_AUDIT_RECORDS`] forced releases, oldest first. Encoded
    /// after the table by [`LockTable::to_snapshot`].
    #[serde(skip)]
    pub(crate) audit: VecDeque<AuditRecord>,
    /// Published values by (lease, resource) (`Proclaim`; elections). Encoded
    /// after the audit trail. A value goes when its lease
    /// ends or when the lease's grant of the resource ends.
    #[serde(skip)]
    pub(crate) values: BTreeMap<(LeaseId, String), String>,
    /// Roles, grants, quotas and cluster-wide limits ([`crate::auth`]).
    /// Encoded after the values.
    #[serde(skip)]
    pub(crate) auth: AuthTable,
    /// The last [`MAX_AUTH_AUDIT_RECORDS`] auth changes, oldest first.
    /// Encoded last.
    #[serde(skip)]
    pub(crate) auth_audit: VecDeque<AuthAuditRecord>,
    /// Multi-locks, waiting or granted, by (lease, first resource)
    /// ([`crate::multi`]). Encoded after the auth audit trail.
    #[serde(skip)]
    pub(crate) multis: BTreeMap<MultiKey, MultiLock>,
    /// Max-holds of held grants ([`crate::max_hold`]). Encoded last.
    #[serde(skip)]
    pub(crate) max_holds: BTreeMap<HeldKey, MaxHold>,
    /// Max-holds the grants of waiters will get. Encoded last (snapshot
    /// version 7).
    #[serde(skip)]
    pub(crate) wait_max_holds: BTreeMap<WaitKey, u64>,
    /// Derived, never saved: every instant in the table, in instant order
    /// ([`crate::expiry`]). Kept up to date at every change, rebuilt on
    /// snapshot load, recomputed by `check_invariants`.
    #[serde(skip)]
    pub(crate) timeline: Timeline,
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
    /// Simulator-only bug switch (`warden-sim --inject-bug
    /// grant-to-due-waiter`): hand-off ignores `now`; never set in
    /// production, never saved.
    #[serde(skip)]
    pub(crate) handoff_ignores_now: bool,
    /// Simulator-only bug switch (`warden-sim --inject-bug
    /// sweep-skips-leases`); never set in production, never saved.
    #[serde(skip)]
    pub(crate) sweep_skips_leases: bool,
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
            now_ms: 0,
            promotion: Promotion::default(),
            audit: VecDeque::new(),
            values: BTreeMap::new(),
            auth: AuthTable::default(),
            auth_audit: VecDeque::new(),
            multis: BTreeMap::new(),
            max_holds: BTreeMap::new(),
            wait_max_holds: BTreeMap::new(),
            usage: BTreeMap::new(),
            timeline: Timeline::new(),
            token_is_log_index: false,
            skip_lease_owner_check: false,
            readers_overtake_writers: false,
            handoff_ignores_now: false,
            sweep_skips_leases: false,
        }
    }

    /// Applies one committed entry (see the module docs for the order of work).
    ///
    /// `index` is the entry's log index; `log_leader` the leader id in the
    /// entry's own log id, compared with the stamp's (a mismatch ignores
    /// the stamp and a promote: etcd issue 15247); `stamp` the proposer's
    /// cluster time.
    ///
    /// A [`Command::Batch`] applies each of its commands in order at this
    /// same `index` and cluster time, each exactly as if it were the
    /// entry's only command, and answers
    /// [`Response::Batch`] with their responses in order. Every command checks
    /// before it changes anything, so a refused one leaves the table as the
    /// commands before it left it (its refusal is recorded in the outcome
    /// table, as for an entry of its own) and the later ones see exactly that.
    /// A batch that is empty, too long or nested is refused whole.
    pub fn apply(
        &mut self,
        index: LogIndex,
        log_leader: LeaderId,
        stamp: Stamp,
        cmd: &Command,
    ) -> Applied {
        let mut fx = Vec::new();
        let own = stamp.leader == log_leader;
        if own {
            self.advance_now(stamp.at_ms);
        }
        self.sweep(index, MAX_SWEEP_PER_ENTRY, &mut fx);
        let response = self.apply_one(index, own, cmd, &mut fx);
        Applied {
            response,
            effects: fx,
        }
    }

    /// [`Self::apply`] of one command, appending the effects to `fx`; `own`
    /// is whether the entry's stamp is its own leader's.
    fn apply_one(
        &mut self,
        index: LogIndex,
        own: bool,
        cmd: &Command,
        fx: &mut Vec<Effect>,
    ) -> Response {
        match cmd {
            Command::Acquire(_)
            | Command::Release(_)
            | Command::Revoke(_)
            | Command::ForceRelease(_)
            | Command::LeaseGrant(_)
            | Command::Proclaim(_)
            | Command::CancelWait(_) => match validate::command(cmd) {
                Ok(()) => self.client_command(index, Caller::LEGACY, cmd, fx),
                Err(e) => Response::Error(e),
            },
            Command::Authorized(w) => self.authorized(index, w, fx),
            // Always refused: an auth change must come wrapped.
            Command::AuthChange(_) => match validate::command(cmd) {
                Ok(()) => Response::Done,
                Err(e) => Response::Error(e),
            },
            Command::RenewBatch(b) => self.renew(index, b, fx),
            Command::Promote(p) => {
                if own {
                    self.promote(index, p.no_expiry_before_ms);
                }
                Response::Done
            }
            Command::DropClients(d) => {
                if own {
                    for (client, last_index) in &d.clients {
                        self.outcomes.drop_client(*client, *last_index);
                    }
                }
                Response::Done
            }
            Command::Tick => Response::Done,
            Command::RaiseTokenFloor(r) => self.raise_token_floor(r.floor),
            Command::Batch(cmds) => match validate::command(cmd) {
                Err(e) => Response::Error(e),
                Ok(()) => Response::Batch(
                    cmds.iter()
                        .map(|c| self.apply_one(index, own, c, fx))
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

    /// Simulator only (`warden-sim --inject-bug grant-to-due-waiter`):
    /// hand-off ignores cluster time, so a waiter whose wait or lease has
    /// ended is granted (S8). Production never calls it.
    #[doc(hidden)]
    pub fn inject_handoff_ignores_now(&mut self) {
        self.handoff_ignores_now = true;
    }

    /// Simulator only (`warden-sim --inject-bug sweep-skips-leases`): the
    /// sweep drops a due lease from the time index without ending it, so
    /// only a command that touches its resources ends it (L1, L2: a dead
    /// holder of a resource nobody touches keeps it). Production never
    /// calls it.
    #[doc(hidden)]
    pub fn inject_sweep_skips_leases(&mut self) {
        self.sweep_skips_leases = true;
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

    /// [`Command::Authorized`]: validation, then [`Self::client_command`]
    /// for the principal (see [`crate::auth`]). Leader duties never depend
    /// on an identity: one wrapped here is refused.
    fn authorized(&mut self, index: LogIndex, w: &Authorized, fx: &mut Vec<Effect>) -> Response {
        if let Err(e) = validate::authorized(w) {
            return Response::Error(e);
        }
        let caller = Caller {
            principal: w.principal.as_ref(),
            wrapped: true,
        };
        self.client_command(index, caller, &w.command, fx)
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
                    (
                        Command::Acquire(a),
                        Response::Acquire(reply)
                        | Response::AcquireKind { reply, .. }
                        | Response::AcquireMulti { reply, .. },
                    ) => {
                        let reply = self.replay_acquire(a, reply);
                        self.acquire_response(a, reply)
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
            Command::Acquire(a) if a.is_multi() => self.acquire_multi(index, caller, a, fx),
            Command::Acquire(a) => {
                let reply = self.acquire(index, caller, a, fx)?;
                Ok(self.acquire_response(a, reply))
            }
            Command::Release(r) => self.release(index, r, fx),
            Command::Revoke(r) => self.revoke(index, caller, r, fx),
            Command::ForceRelease(f) => self.force_release(index, caller, f, fx),
            Command::LeaseGrant(g) => self.lease_grant(index, caller, g, fx),
            Command::Proclaim(p) => self.proclaim(index, caller, p, fx),
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
        let live = self.lease_live(id);
        let token = self
            .resources
            .get(resource)
            .and_then(|r| r.grant_of(id))
            .map(|g| g.fencing_token);
        (live, token)
    }

    /// The answer to `a` in its shape (see [`Acquire`]).
    fn acquire_response(&self, a: &Acquire, reply: AcquireReply) -> Response {
        if a.is_multi() {
            self.multi_response(&a.resource, reply)
        } else if a.is_plain_mutex() {
            Response::Acquire(reply)
        } else {
            self.kind_response(&a.resource, reply)
        }
    }

    /// The answer to an acquire of another kind or with a max-hold: the
    /// reply and the slot of the permit the reply's lease holds on
    /// `resource` now, if any.
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

    // ---------------------------------------------------------------- commands

    /// An acquire of `resource` as a `kind` lock, in `mode` (docs/semantics.md
    /// "Lock kinds"): refused when the resource is another kind now; the
    /// lease's own grant or wait comes back unchanged when it asks again in
    /// the same mode (refused in another); granted at once when nobody waits
    /// and the resource admits the mode; else a try-lock is not granted and
    /// any other acquire queues (S8, FIFO). A new grant or wait gets
    /// `max_hold_ms` (0 = none; [`crate::max_hold`]).
    fn acquire(
        &mut self,
        index: LogIndex,
        caller: Caller<'_>,
        a: &Acquire,
        fx: &mut Vec<Effect>,
    ) -> Result<AcquireReply, CommandError> {
        let (kind, mode, max_hold_ms) = (a.kind, a.mode, a.max_hold_ms);
        // What has ended on the resource ends first: an acquire never jumps
        // the queue or a running lock-delay ("Time").
        self.refresh(index, &a.resource, fx);
        if let LeaseSpec::Existing { lease_id } = a.lease {
            self.end_if_dead(index, lease_id, fx);
        }
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
                self.check_quota(index, caller, &[QuotaField::Leases, QuotaField::Locks], fx)?;
                self.check_lease_limit(index, fx)?;
                self.create_lease(index, ttl_ms, true, caller.principal.cloned(), fx);
            } else {
                self.check_quota(index, caller, &[QuotaField::Locks], fx)?;
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
        if res.is_some_and(|r| r.waiters.len() >= MAX_WAITERS_PER_RESOURCE) {
            self.drop_ended_waiters(index, &a.resource, fx);
        }
        let queue_len = self
            .resources
            .get(&a.resource)
            .map_or(0, |r| r.waiters.len());
        if queue_len >= MAX_WAITERS_PER_RESOURCE {
            return Err(exhausted(
                Some("resource"),
                format!("a resource has at most {MAX_WAITERS_PER_RESOURCE} waiters"),
            ));
        }
        self.check_waits_on(caller, &a.resource)?;
        if new_lease {
            self.check_quota(
                index,
                caller,
                &[QuotaField::Leases, QuotaField::Locks, QuotaField::Waiters],
                fx,
            )?;
            self.check_lease_limit(index, fx)?;
            self.create_lease(index, ttl_ms, true, caller.principal.cloned(), fx);
        } else {
            self.check_quota(index, caller, &[QuotaField::Locks, QuotaField::Waiters], fx)?;
        }
        let position = self.enqueue(index, &a.resource, kind, lease_id, mode, a);
        if max_hold_ms > 0 {
            self.wait_max_holds
                .insert((a.resource.clone(), lease_id, index), max_hold_ms);
        }
        self.note_wait(lease_id, &a.resource);
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
        self.end_if_dead(index, r.lease_id, fx);
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
        self.refresh(index, &resource, fx);
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
        self.free(index, &resource, r.lease_id, FreeReason::Released, None, fx);
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
        self.refresh(index, &f.resource, fx);
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
            let now = Some(self.now_ms);
            let freed = self.free(index, &f.resource, lease_id, FreeReason::Forced, now, fx);
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
        self.check_quota(index, caller, &[QuotaField::Leases], fx)?;
        self.check_lease_limit(index, fx)?;
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
        self.refresh(index, &c.resource, fx);
        self.drop_ended_waiters(index, &c.resource, fx);
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
        };
        self.release(index, &release, fx)?;
        answer(lease_id, CancelOutcome::Released, Some(fencing_token))
    }

    /// Its owner's revoke ends the lease cleanly (no lock-delay). An
    /// admin's revoke of another principal's lease (authorized before) is an
    /// involuntary loss of every grant, as a forced release: lock-delay
    /// applies, and each freed grant gets an audit record naming the admin.
    fn revoke(
        &mut self,
        index: LogIndex,
        caller: Caller<'_>,
        r: &Revoke,
        fx: &mut Vec<Effect>,
    ) -> Result<Response, CommandError> {
        self.end_if_dead(index, r.lease_id, fx);
        let Some(lease) = self.leases.get(&r.lease_id) else {
            return Err(unknown_lease(r.lease_id));
        };
        let by_admin = caller.wrapped && lease.owner.as_ref() != caller.principal;
        let (reason, loss_at) = if by_admin {
            (FreeReason::Forced, Some(self.now_ms))
        } else {
            (FreeReason::Revoked, None)
        };
        let start = fx.len();
        self.end_lease(
            index,
            r.lease_id,
            LeaseEndReason::Revoked,
            reason,
            loss_at,
            fx,
        );
        if by_admin {
            let requested_by = match caller.principal {
                Some(p) => format!("{p} (revoke of lease {})", r.lease_id),
                None => format!("revoke of lease {}", r.lease_id),
            };
            let freed: Vec<(String, FencingToken)> = fx[start..]
                .iter()
                .filter_map(|e| match e {
                    Effect::Freed {
                        resource,
                        lease_id,
                        fencing_token,
                        ..
                    } if *lease_id == r.lease_id => Some((resource.clone(), *fencing_token)),
                    _ => None,
                })
                .collect();
            for (resource, fencing_token) in freed {
                if self.audit.len() >= MAX_AUDIT_RECORDS {
                    self.audit.pop_front();
                }
                self.audit.push_back(AuditRecord {
                    index,
                    resource,
                    lease_id: r.lease_id,
                    fencing_token,
                    requested_by: requested_by.clone(),
                    at_unix_ms: r.at_unix_ms,
                });
            }
        }
        Ok(Response::Revoked {
            lease_id: r.lease_id,
        })
    }

    /// An auth change (admin, checked before): applied to the auth table,
    /// kept in the bounded auth audit trail, and the waits it no longer
    /// permits ended ([`crate::auth`], "Auth changes").
    fn auth_change(
        &mut self,
        index: LogIndex,
        caller: Caller<'_>,
        c: &AuthChange,
        fx: &mut Vec<Effect>,
    ) -> Result<Response, CommandError> {
        let narrowed = self.auth.narrowed_by(&c.op);
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
        self.end_unpermitted_waits(index, &narrowed, fx);
        Ok(Response::AuthChanged)
    }

    /// S4: every live lease restarts its countdown with its full TTL from
    /// `now`; an ended one is not resurrected (None, as for an unknown one).
    fn renew(&mut self, index: LogIndex, b: &RenewBatch, fx: &mut Vec<Effect>) -> Response {
        let mut out = Vec::with_capacity(b.lease_ids.len());
        for id in &b.lease_ids {
            self.end_if_dead(index, *id, fx);
            let now = self.now_ms;
            let Some(l) = self.leases.get_mut(id) else {
                out.push((*id, None));
                continue;
            };
            let before = (l.expires_at_ms, Timed::Lease(*id));
            l.expires_at_ms = now.saturating_add(l.ttl_ms);
            l.renew_index = index;
            let (after, ttl_ms) = ((l.expires_at_ms, Timed::Lease(*id)), l.ttl_ms);
            self.timeline.remove(&before);
            self.timeline.insert(after);
            fx.push(Effect::LeaseSet {
                lease_id: *id,
                ttl_ms,
            });
            out.push((*id, Some(ttl_ms)));
        }
        Response::Renewed(out)
    }

    // ---------------------------------------------------------------- building blocks

    /// At most `max_leases` live leases in the cluster (replicated; default
    /// [`MAX_LEASES`]), for every command, wrapped or not.
    /// Live leases only: before refusing, ended ones are ended.
    pub(crate) fn check_lease_limit(
        &mut self,
        index: LogIndex,
        fx: &mut Vec<Effect>,
    ) -> Result<(), CommandError> {
        let max = self.auth.limits().max_leases;
        let over = |t: &Self| {
            (t.leases.len() as u64)
                .saturating_add(1)
                .saturating_sub(max)
        };
        if over(self) > 0 {
            self.end_dead_leases(index, None, over(self), fx);
        }
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
        let expires_at_ms = self.now_ms.saturating_add(ttl_ms);
        self.timeline
            .insert((expires_at_ms, Timed::Lease(lease_id)));
        self.leases.insert(
            lease_id,
            LeaseRecord {
                lease_id,
                ttl_ms,
                expires_at_ms,
                renew_index: index,
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
            granted_at_ms: self.now_ms,
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
    /// freed; each resource as [`Self::free_one`] does. `loss_at` is the
    /// cluster time of an involuntary loss (lock-delay counts from it);
    /// None for a clean release.
    pub(crate) fn free(
        &mut self,
        index: LogIndex,
        resource: &str,
        lease_id: LeaseId,
        reason: FreeReason,
        loss_at: Option<u64>,
        fx: &mut Vec<Effect>,
    ) -> Vec<ResourceToken> {
        let Some(key) = self.granted_multi_of(lease_id, resource) else {
            return self
                .free_one(index, resource, lease_id, reason, loss_at, fx)
                .into_iter()
                .collect();
        };
        let Some(m) = self.multis.remove(&key) else {
            return Vec::new();
        };
        m.resources
            .iter()
            .filter_map(|r| self.free_one(index, r, lease_id, reason, loss_at, fx))
            .collect()
    }

    /// Takes `lease_id`'s grant off `resource`; starts (or widens) a
    /// lock-delay when the loss is involuntary (`loss_at`) and the grant
    /// asked for one, counted from the loss (none when that is already
    /// over), then hands off what is free (S8).
    fn free_one(
        &mut self,
        index: LogIndex,
        resource: &str,
        lease_id: LeaseId,
        reason: FreeReason,
        loss_at: Option<u64>,
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
        self.forget_value(g.lease_id, resource);
        if let Some(m) = self.max_holds.remove(&(resource.to_owned(), g.lease_id)) {
            self.timeline.remove(&(
                m.ends_at_ms,
                Timed::MaxHold(resource.to_owned(), g.lease_id),
            ));
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
            granted_at_ms: g.granted_at_ms,
        });
        if let Some(at) = loss_at.filter(|_| g.lock_delay_ms > 0) {
            self.start_lock_delay(index, resource, &g, at, fx);
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

    /// The lock-delay after `g` was lost at cluster time `at`: it ends at
    /// `at + g.lock_delay_ms`; nothing when that is not after `now`. One
    /// delay per resource: a running one merges with it, withholding both
    /// scopes until the later end.
    fn start_lock_delay(
        &mut self,
        index: LogIndex,
        resource: &str,
        g: &Grant,
        at: u64,
        fx: &mut Vec<Effect>,
    ) {
        let ends_at_ms = at.saturating_add(g.lock_delay_ms);
        if ends_at_ms <= self.now_ms {
            return;
        }
        let Some(state) = self.resources.get_mut(resource) else {
            return;
        };
        let scope = state.delay_scope_of(g);
        let (lock_delay_ms, ends_at_ms, scope) = match state.lock_delay.take() {
            Some(old) => {
                self.timeline
                    .remove(&(old.ends_at_ms, Timed::LockDelay(resource.to_owned())));
                fx.push(Effect::LockDelayEnded {
                    resource: resource.to_owned(),
                    start_index: old.start_index,
                });
                (
                    old.lock_delay_ms.max(g.lock_delay_ms),
                    old.ends_at_ms.max(ends_at_ms),
                    old.scope.merge(scope),
                )
            }
            None => (g.lock_delay_ms, ends_at_ms, scope),
        };
        state.lock_delay = Some(LockDelay {
            start_index: index,
            lock_delay_ms,
            ends_at_ms,
            scope,
        });
        self.timeline
            .insert((ends_at_ms, Timed::LockDelay(resource.to_owned())));
        fx.push(Effect::LockDelayStarted {
            resource: resource.to_owned(),
            start_index: index,
            lock_delay_ms,
            ends_at_ms,
        });
    }

    /// S8 handoff: while the head waiter's mode is admitted (for a
    /// read-write lock, every reader at the head together; for a semaphore,
    /// as many as there are free slots), grants it with a new token if its
    /// lease is live and its principal (its lease's owner) still has `lock`
    /// on the resource, else removes it (an acquire-made lease left with
    /// nothing dies); drops the resource entry when nothing is left on it.
    /// A multi-lock's waiter at the head is granted, removed or left
    /// blocked with all of its resources ([`crate::multi`]).
    pub(crate) fn settle(&mut self, index: LogIndex, resource: &str, fx: &mut Vec<Effect>) {
        self.settle_all(index, VecDeque::from([resource.to_owned()]), fx);
    }

    /// One step of [`Self::settle`] for a head waiter that is no
    /// multi-lock's: removes it when its wait or its lease has ended (S8,
    /// "Time"), else grants or removes it when the resource admits its mode
    /// (true), else changes nothing (false).
    pub(crate) fn settle_head(
        &mut self,
        index: LogIndex,
        resource: &str,
        fx: &mut Vec<Effect>,
    ) -> bool {
        let Some(state) = self.resources.get(resource) else {
            return false;
        };
        let Some(head) = state.waiters.first() else {
            return false;
        };
        let ended = self.wait_ended(head);
        // Tokens exhausted: nobody can be granted; live waiters stay queued.
        if ended.is_none() && (!state.admits(head.mode, false) || self.next_token > MAX_ID) {
            return false;
        }
        let Some(w) = self.take_head(resource) else {
            return false;
        };
        let max_hold_ms = self
            .wait_max_holds
            .remove(&(resource.to_owned(), w.lease_id, w.enqueue_index))
            .unwrap_or(0);
        // Permission is decided at this index, for the lease's owner.
        let reason = ended.unwrap_or_else(|| {
            let owner = self.leases.get(&w.lease_id).and_then(|l| l.owner.as_ref());
            if self.auth.allows(
                owner.map(Principal::as_str),
                Permission::Lock,
                Target::Resource(resource),
            ) {
                WaiterRemovedReason::Granted
            } else {
                WaiterRemovedReason::PermissionRevoked
            }
        });
        fx.push(Effect::WaiterRemoved {
            resource: resource.to_owned(),
            lease_id: w.lease_id,
            enqueue_index: w.enqueue_index,
            reason,
            enqueued_at_ms: w.enqueued_at_ms(),
        });
        if reason == WaiterRemovedReason::Granted {
            let token = self.grant(index, resource, w.lease_id, w.mode, w.lock_delay_ms, fx);
            self.start_max_hold(index, resource, w.lease_id, token, max_hold_ms, fx);
        } else {
            self.forget_wait(w.lease_id, resource);
            self.drop_auto_if_idle(w.lease_id, fx);
        }
        true
    }

    /// Why `w` has ended at `now`, if it has: its wait ran out, or its
    /// lease ended ("Time": one predicate for every decision).
    pub(crate) fn wait_ended(&self, w: &Waiter) -> Option<WaiterRemovedReason> {
        if self.handoff_ignores_now {
            // The reintroduced bug: only a lease gone from the table counts.
            return (!self.leases.contains_key(&w.lease_id))
                .then_some(WaiterRemovedReason::LeaseEnded);
        }
        if w.deadline_ms <= self.now_ms {
            Some(WaiterRemovedReason::TimedOut)
        } else if !self.lease_live(w.lease_id) {
            Some(WaiterRemovedReason::LeaseEnded)
        } else {
            None
        }
    }

    /// Takes the head waiter off `resource`'s queue and out of the time
    /// index (its lease's `waits` and usage are the caller's).
    pub(crate) fn take_head(&mut self, resource: &str) -> Option<Waiter> {
        let state = self.resources.get_mut(resource)?;
        if state.waiters.is_empty() {
            return None;
        }
        let w = state.waiters.remove(0);
        self.timeline.remove(&(
            w.deadline_ms,
            Timed::Wait(resource.to_owned(), w.lease_id, w.enqueue_index),
        ));
        Some(w)
    }

    /// Queues `lease_id` on `resource` in `mode` for acquire `a` (FIFO,
    /// S8), its wait ending at `now + wait_timeout_ms`; creates the
    /// resource entry as a `kind` lock if needed. Returns its 1-based
    /// position. The lease's `waits` and usage are the caller's.
    pub(crate) fn enqueue(
        &mut self,
        index: LogIndex,
        resource: &str,
        kind: LockKind,
        lease_id: LeaseId,
        mode: Mode,
        a: &Acquire,
    ) -> u64 {
        let deadline_ms = self.now_ms.saturating_add(a.wait_timeout_ms);
        let state = self
            .resources
            .entry(resource.to_owned())
            .or_insert_with(|| ResourceState::of(kind));
        state.waiters.push(Waiter {
            lease_id,
            enqueue_index: index,
            wait_timeout_ms: a.wait_timeout_ms,
            deadline_ms,
            lock_delay_ms: a.lock_delay_ms,
            header: a.header,
            mode,
        });
        let position = state.waiters.len() as u64;
        self.timeline.insert((
            deadline_ms,
            Timed::Wait(resource.to_owned(), lease_id, index),
        ));
        position
    }

    /// Removes every waiter on `resource` whose wait or lease has ended (a
    /// queue at its bound counts live waiters only), then hands off.
    pub(crate) fn drop_ended_waiters(
        &mut self,
        index: LogIndex,
        resource: &str,
        fx: &mut Vec<Effect>,
    ) {
        let ended: Vec<(LeaseId, LogIndex, WaiterRemovedReason)> = self
            .resources
            .get(resource)
            .map(|s| {
                s.waiters
                    .iter()
                    .filter_map(|w| Some((w.lease_id, w.enqueue_index, self.wait_ended(w)?)))
                    .collect()
            })
            .unwrap_or_default();
        for (lease_id, enqueue_index, reason) in ended {
            if self.remove_waiter(index, resource, lease_id, enqueue_index, reason, fx) {
                self.drop_auto_if_idle(lease_id, fx);
            }
        }
        self.settle(index, resource, fx);
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
    pub(crate) fn remove_waiter(
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
        let mut enqueued_at_ms = 0;
        if let Some(s) = self.resources.get_mut(resource) {
            let w = s.waiters.remove(pos);
            self.timeline.remove(&(
                w.deadline_ms,
                Timed::Wait(resource.to_owned(), lease_id, enqueue_index),
            ));
            enqueued_at_ms = w.enqueued_at_ms();
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
            enqueued_at_ms,
        });
        true
    }

    /// Ends a lease: removes its waits (S8), frees its locks (an
    /// involuntary loss at `loss_at`, when given: lock-delay counts from
    /// it), then reports it ended.
    pub(crate) fn end_lease(
        &mut self,
        index: LogIndex,
        lease_id: LeaseId,
        reason: LeaseEndReason,
        free_reason: FreeReason,
        loss_at: Option<u64>,
        fx: &mut Vec<Effect>,
    ) {
        let Some(lease) = self.remove_lease(lease_id) else {
            return;
        };
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
                self.free(index, r, lease_id, free_reason, loss_at, fx);
            }
        }
        fx.push(Effect::LeaseEnded { lease_id, reason });
    }

    /// Takes a lease out of the table, and its counts out of its owner's usage.
    /// Its published values go with it ([`crate::values`]).
    fn remove_lease(&mut self, lease_id: LeaseId) -> Option<LeaseRecord> {
        let l = self.leases.remove(&lease_id)?;
        self.timeline
            .remove(&(l.expires_at_ms, Timed::Lease(lease_id)));
        self.drop_values(lease_id, l.owner.as_ref());
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
        self.add_value_usage(&mut usage);
        usage.retain(|_, u: &mut Usage| !u.is_zero());
        usage
    }

    /// An acquire-created lease with no lock and no wait left dies.
    pub(crate) fn drop_auto_if_idle(&mut self, lease_id: LeaseId, fx: &mut Vec<Effect>) {
        if self
            .leases
            .get(&lease_id)
            .is_some_and(|l| l.auto && l.locks.is_empty() && l.waits.is_empty())
        {
            let reason = if self.lease_live(lease_id) {
                LeaseEndReason::Released
            } else {
                LeaseEndReason::Expired
            };
            self.remove_lease(lease_id);
            fx.push(Effect::LeaseEnded { lease_id, reason });
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
