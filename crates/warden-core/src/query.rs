//! Read-only views of the [`LockTable`]: holders, leases, waiters,
//! lock-delays, counters, the outcome table's size, identities (permission
//! checks, lease owners, roles, principals, limits, quotas and usage, the
//! auth audit trail) and [`LockTable::check_invariants`]. The server's status
//! endpoints and read paths and the simulator's checkers read the table only
//! through these.

use std::collections::{BTreeMap, BTreeSet};

use crate::auth::{AuthTable, RoleView, Target, Usage};
use crate::limits::MAX_AUTH_AUDIT_RECORDS;
use crate::outcome::OutcomeTable;
use crate::resource::{DelayScope, Grant, ResourceState, Waiter};
use crate::table::{LeaseRecord, LockTable};
use crate::types::{
    AuditRecord, AuthAuditRecord, ClientId, ClusterLimits, FencingToken, LeaseId, LockKind,
    LogIndex, Mode, Permission, Principal, Quota,
};

/// The holder of a resource, as [`LockTable::holder`] reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HolderView {
    /// The holding lease.
    pub lease_id: LeaseId,
    /// The grant's token.
    pub fencing_token: FencingToken,
    /// The lease's TTL in milliseconds at grant time.
    pub ttl_ms: u64,
    /// Index of the entry that made the grant.
    pub grant_index: LogIndex,
    /// Cluster time (ms) of that entry.
    pub granted_at_ms: u64,
    /// Exclusive, or shared (a reader or a semaphore permit).
    pub mode: Mode,
    /// A semaphore permit's slot.
    pub slot: Option<u32>,
}

impl From<&Grant> for HolderView {
    fn from(g: &Grant) -> Self {
        HolderView {
            lease_id: g.lease_id,
            fencing_token: g.fencing_token,
            ttl_ms: g.ttl_ms,
            grant_index: g.grant_index,
            granted_at_ms: g.granted_at_ms,
            mode: g.mode,
            slot: g.slot,
        }
    }
}

/// A token's standing, as [`LockTable::token_state`] reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TokenState {
    /// The resource's current grant.
    Current,
    /// Issued by this cluster, and not the resource's current grant.
    Stale,
    /// Never issued by this cluster.
    Unknown,
}

/// A waiter, as [`LockTable::waiters`] reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WaiterView {
    /// The waiting lease.
    pub lease_id: LeaseId,
    /// Index of its enqueue entry.
    pub enqueue_index: LogIndex,
    /// 1 = next in line.
    pub position: u64,
    /// Cluster time (ms) its wait ends at.
    pub deadline_ms: u64,
}

/// A running lock-delay, as [`LockTable::lock_delays`] reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LockDelayView {
    /// The resource.
    pub resource: String,
    /// Index of the entry that started it.
    pub start_index: LogIndex,
    /// The full delay in milliseconds.
    pub lock_delay_ms: u64,
    /// Cluster time (ms) it ends at.
    pub ends_at_ms: u64,
    /// What it withholds.
    pub scope: DelayScope,
}

/// One outcome record's key and age, as [`LockTable::client_records`]
/// reports it (the leader's idle-client duty).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClientView<'a> {
    /// The principal the record belongs to; None for unwrapped and
    /// anonymous commands.
    pub principal: Option<&'a str>,
    /// The client id.
    pub client_id: ClientId,
    /// Index of the last entry that touched the record.
    pub last_index: LogIndex,
}

/// Size of the outcome table (S7 bounds).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OutcomeStats {
    /// Client records kept, of every principal (unwrapped commands keep it
    /// at most [`crate::limits::MAX_CLIENTS`]; wrapped ones add records only
    /// below the replicated `max_clients`).
    pub clients: usize,
    /// Outcomes stored over all clients.
    pub outcomes: usize,
}

impl LockTable {
    /// True while grant `g` of `resource` has not ended at `now_ms`: its
    /// lease is live and its max-hold, if any, has not run out
    /// (docs/semantics.md "Time").
    pub fn grant_live_at(&self, resource: &str, g: &Grant, now_ms: u64) -> bool {
        self.lease_live_at(g.lease_id, now_ms)
            && self
                .max_holds
                .get(&(resource.to_owned(), g.lease_id))
                .is_none_or(|m| now_ms < m.ends_at_ms)
    }

    /// The exclusive holder of `resource` (a mutex's holder or a writer)
    /// at the table's `now`, if any; [`Self::holders`] lists shared
    /// holders too.
    pub fn holder(&self, resource: &str) -> Option<HolderView> {
        self.holders_at(resource, self.now_ms)
            .into_iter()
            .find(|g| g.mode == Mode::Exclusive)
    }

    /// Every holder of `resource` at the table's `now`: the exclusive one,
    /// or the shared ones (readers, permits) by lease id.
    pub fn holders(&self, resource: &str) -> Vec<HolderView> {
        self.holders_at(resource, self.now_ms)
    }

    /// [`Self::holders`] at cluster time `now_ms` (a linearizable read
    /// passes the later of the leader's clock and the table's `now`).
    pub fn holders_at(&self, resource: &str, now_ms: u64) -> Vec<HolderView> {
        self.resources.get(resource).map_or_else(Vec::new, |s| {
            s.holders()
                .filter(|g| self.grant_live_at(resource, g, now_ms))
                .map(HolderView::from)
                .collect()
        })
    }

    /// The kind of `resource` while anything is on it (None: free, any kind
    /// may take it).
    pub fn kind(&self, resource: &str) -> Option<LockKind> {
        self.resources.get(resource).map(|s| s.kind)
    }

    /// The value `lease_id` published on `resource` (`Proclaim`), if any.
    pub fn value(&self, lease_id: LeaseId, resource: &str) -> Option<&str> {
        self.values
            .get(&(lease_id, resource.to_owned()))
            .map(String::as_str)
    }

    /// The lease `id`, if live at the table's `now`.
    pub fn lease(&self, id: LeaseId) -> Option<&LeaseRecord> {
        self.leases.get(&id).filter(|_| self.lease_live(id))
    }

    /// Every lease live at the table's `now`, by id.
    pub fn leases(&self) -> impl Iterator<Item = &LeaseRecord> {
        self.leases
            .values()
            .filter(|l| self.now_ms < self.lease_end_ms(l))
    }

    /// What is left of `lease`'s TTL at cluster time `now_ms`, in
    /// milliseconds (0 once it has ended).
    pub fn lease_remaining_ms_at(&self, lease: &LeaseRecord, now_ms: u64) -> u64 {
        self.lease_end_ms(lease).saturating_sub(now_ms)
    }

    /// What is left of `lease`'s TTL at the table's `now`.
    pub fn lease_remaining_ms(&self, lease: &LeaseRecord) -> u64 {
        self.lease_remaining_ms_at(lease, self.now_ms)
    }

    /// The live waiters on `resource` at the table's `now`, in FIFO order
    /// (position 1 first).
    pub fn waiters(&self, resource: &str) -> Vec<WaiterView> {
        self.resources.get(resource).map_or_else(Vec::new, |s| {
            s.waiters
                .iter()
                .filter(|w| self.wait_ended(w).is_none())
                .zip(1u64..)
                .map(|(w, position)| WaiterView {
                    lease_id: w.lease_id,
                    enqueue_index: w.enqueue_index,
                    position,
                    deadline_ms: w.deadline_ms,
                })
                .collect()
        })
    }

    /// The 1-based queue position of `lease_id` on `resource`, if it is
    /// queued there (ended waiters not swept yet still count ahead of it:
    /// one pass, no allocation, since every waiting acquire reads it).
    pub fn waiter_position(&self, resource: &str, lease_id: LeaseId) -> Option<u64> {
        self.resources
            .get(resource)
            .and_then(|s| s.waiters.iter().position(|w| w.lease_id == lease_id))
            .map(|p| p as u64 + 1)
    }

    /// Every lock-delay running at the table's `now`, by resource.
    pub fn lock_delays(&self) -> Vec<LockDelayView> {
        self.resources
            .keys()
            .filter_map(|name| self.lock_delay(name))
            .collect()
    }

    /// The lock-delay of `resource` running at the table's `now`, if any
    /// (a resource in lock-delay has no holder that the delay withholds).
    pub fn lock_delay(&self, resource: &str) -> Option<LockDelayView> {
        self.resources.get(resource).and_then(|s| {
            s.lock_delay
                .as_ref()
                .filter(|d| self.now_ms < d.ends_at_ms)
                .map(|d| LockDelayView {
                    resource: resource.to_owned(),
                    start_index: d.start_index,
                    lock_delay_ms: d.lock_delay_ms,
                    ends_at_ms: d.ends_at_ms,
                    scope: d.scope.clone(),
                })
        })
    }

    /// Every live waiter: (resource, view), by resource then position.
    pub fn all_waiters(&self) -> Vec<(String, WaiterView)> {
        self.resources
            .keys()
            .flat_map(|name| {
                self.waiters(name)
                    .into_iter()
                    .map(move |w| (name.clone(), w))
            })
            .collect()
    }

    /// The full state of one resource (holder, waiters with their headers,
    /// lock-delay), if anything is on it.
    pub fn resource(&self, resource: &str) -> Option<&ResourceState> {
        self.resources.get(resource)
    }

    /// The waiter `lease_id` queued on `resource` at `enqueue_index`, if it
    /// still waits.
    pub fn waiter(
        &self,
        resource: &str,
        lease_id: LeaseId,
        enqueue_index: LogIndex,
    ) -> Option<&Waiter> {
        self.resources.get(resource).and_then(|s| {
            s.waiters
                .iter()
                .find(|w| w.lease_id == lease_id && w.enqueue_index == enqueue_index)
        })
    }

    /// True if `lease_id` waits on `resource` with this enqueue index.
    pub fn has_waiter(&self, resource: &str, lease_id: LeaseId, enqueue_index: LogIndex) -> bool {
        self.resources.get(resource).is_some_and(|s| {
            s.waiters
                .iter()
                .any(|w| w.lease_id == lease_id && w.enqueue_index == enqueue_index)
        })
    }

    /// The token the next grant gets (S2); every token issued so far is below it.
    pub fn next_token(&self) -> u64 {
        self.next_token
    }

    /// What Validate answers for `token` on `resource`: `Current` when one
    /// of the resource's holders holds that grant, `Unknown` when no grant ever had
    /// it (0, or at or above [`LockTable::next_token`]), `Stale` otherwise.
    pub fn token_state(&self, resource: &str, token: FencingToken) -> TokenState {
        self.token_state_at(resource, token, self.now_ms)
    }

    /// [`Self::token_state`] at cluster time `now_ms`: a grant whose lease
    /// or max-hold has ended is `Stale`.
    pub fn token_state_at(&self, resource: &str, token: FencingToken, now_ms: u64) -> TokenState {
        if self
            .holders_at(resource, now_ms)
            .iter()
            .any(|g| g.fencing_token == token)
        {
            TokenState::Current
        } else if token == 0 || token >= self.next_token {
            TokenState::Unknown
        } else {
            TokenState::Stale
        }
    }

    /// The id the next lease gets.
    pub fn next_lease_id(&self) -> u64 {
        self.next_lease_id
    }

    /// Size of the outcome table (S7).
    pub fn outcome_stats(&self) -> OutcomeStats {
        let (clients, outcomes) = self.outcomes.stats();
        OutcomeStats { clients, outcomes }
    }

    /// One pair per client id: (client id, the highest `last_index` among its
    /// records of every principal), by client id. The leader proposes
    /// `DropClients` for those idle too long; that drops every record of the
    /// id with that `last_index`, and a record of the same id left behind
    /// (older, under another principal) shows up here next. Prefer
    /// [`Self::client_records`], which lists each record.
    pub fn clients(&self) -> impl Iterator<Item = (ClientId, LogIndex)> + '_ {
        let mut by_client: BTreeMap<ClientId, LogIndex> = BTreeMap::new();
        for (_, client, r) in self.outcomes.records() {
            let e = by_client.entry(client).or_insert(r.last_index);
            *e = (*e).max(r.last_index);
        }
        by_client.into_iter()
    }

    /// Every outcome record of every principal: the `(None, _)` records by
    /// client id, then each principal's by name and client id. The leader
    /// tracks each `(principal, client_id)` for its idle timeout and proposes
    /// `DropClients { clients: vec![(client_id, last_index), ..] }` for the
    /// idle ones (the entry format names no principal: it drops every record
    /// of that id whose `last_index` matches, and records touched by one
    /// entry are equally idle).
    pub fn client_records(&self) -> impl Iterator<Item = ClientView<'_>> + '_ {
        self.outcomes.records().map(|(p, client_id, r)| ClientView {
            principal: p.map(Principal::as_str),
            client_id,
            last_index: r.last_index,
        })
    }

    /// The outcome records after `after` (`(principal, client id)`), in
    /// [`Self::client_records`]' order; every record when None. The leader
    /// walks the records a slice at a time from where its last slice ended,
    /// so no duty holds the machine for a walk of every client.
    pub fn client_records_after(
        &self,
        after: Option<(Option<&str>, ClientId)>,
    ) -> impl Iterator<Item = ClientView<'_>> + '_ {
        self.outcomes
            .records_after(after)
            .map(|(p, client_id, r)| ClientView {
                principal: p.map(Principal::as_str),
                client_id,
                last_index: r.last_index,
            })
    }

    /// The outcome table itself (read-only).
    pub fn outcome_table(&self) -> &OutcomeTable {
        &self.outcomes
    }

    /// The forced-release audit trail, oldest first (at most
    /// [`crate::limits::MAX_AUDIT_RECORDS`] records).
    pub fn audit_trail(&self) -> impl DoubleEndedIterator<Item = &AuditRecord> + '_ {
        self.audit.iter()
    }

    /// Every resource with a holder, a waiter or a lock-delay whose name
    /// starts with `prefix`, in name order.
    pub fn resources_with_prefix<'a>(
        &'a self,
        prefix: &'a str,
    ) -> impl Iterator<Item = (&'a String, &'a ResourceState)> + 'a {
        self.resources
            .range::<str, _>((
                std::ops::Bound::Included(prefix),
                std::ops::Bound::Unbounded,
            ))
            .take_while(move |(name, _)| name.starts_with(prefix))
    }

    // ------------------------------------------------------------ identities

    /// True when `principal` has `permission` on `target`, at the table's
    /// current index (see [`crate::auth`] for matching; `None`, an anonymous
    /// caller in insecure mode, and `root` are always allowed). The server's
    /// read paths (`list`, `watch`: [`Target::Prefix`]) ask this.
    pub fn allows(
        &self,
        principal: Option<&str>,
        permission: Permission,
        target: Target<'_>,
    ) -> bool {
        self.auth.allows(principal, permission, target)
    }

    /// The owner of lease `lease_id`: None if the lease is not live,
    /// `Some(None)` for an ownerless lease, `Some(Some(name))` otherwise. The
    /// server renews a lease for a caller only when this is
    /// `Some(caller's principal)`.
    pub fn lease_owner(&self, lease_id: LeaseId) -> Option<Option<&str>> {
        self.leases
            .get(&lease_id)
            .map(|l| l.owner.as_ref().map(Principal::as_str))
    }

    /// The auth table (roles, principals, limits).
    pub fn auth(&self) -> &AuthTable {
        &self.auth
    }

    /// Every role, by name (`role list`).
    pub fn roles(&self) -> impl Iterator<Item = RoleView<'_>> + '_ {
        self.auth.roles()
    }

    /// Every principal that holds a role, owns anything in the table (a
    /// lease, with its locks, waits and values; client records) or is
    /// denied, and its roles
    /// (none for one that only owns or is denied), by name (`user list`):
    /// a principal whose roles were revoked still shows while it holds
    /// something.
    pub fn users(&self) -> Vec<(&str, Vec<String>)> {
        let mut out: BTreeMap<&str, Vec<String>> = self
            .auth
            .users()
            .map(|(name, roles)| (name, roles.iter().cloned().collect()))
            .collect();
        for owner in self.usage.keys() {
            out.entry(owner.as_str()).or_default();
        }
        for denied in self.auth.denied_principals() {
            out.entry(denied.as_str()).or_default();
        }
        for recorded in self.outcomes.principals() {
            out.entry(recorded.as_str()).or_default();
        }
        out.into_iter().collect()
    }

    /// The cluster-wide limits and the default per-principal quota.
    pub fn limits(&self) -> &ClusterLimits {
        self.auth.limits()
    }

    /// The quota binding `principal` (None: root or anonymous, bound only by
    /// the cluster-wide limits).
    pub fn effective_quota(&self, principal: Option<&str>) -> Option<Quota> {
        self.auth.effective_quota(principal)
    }

    /// What `principal` holds: leases it owns, locks and waits on them, and
    /// its outcome records.
    pub fn usage(&self, principal: &str) -> Usage {
        let mut u = self.usage.get(principal).copied().unwrap_or_default();
        u.clients = self.outcomes.count_of(principal) as u64;
        u
    }

    /// The auth audit trail, oldest first (at most
    /// [`crate::limits::MAX_AUTH_AUDIT_RECORDS`] records).
    pub fn auth_audit_trail(&self) -> impl DoubleEndedIterator<Item = &AuthAuditRecord> + '_ {
        self.auth_audit.iter()
    }

    /// Number of leases in the table, ended ones not swept yet included
    /// (bounded by the replicated `max_leases`).
    pub fn lease_count(&self) -> usize {
        self.leases.len()
    }

    /// Number of resources with a holder (exclusive or shared).
    pub fn resources_held(&self) -> usize {
        self.resources.values().filter(|s| s.is_held()).count()
    }

    /// Checks the table's internal consistency: S1 (at most one holder, never
    /// together with a lock-delay), every holder and waiter on a live lease and
    /// listed in it, waiters in strictly increasing enqueue order, counters
    /// above every id and token in use; the auth table valid and bounded,
    /// lease owners valid principals, the per-principal usage equal to a
    /// recount, the outcome table's indexes in step. A waiter stores no
    /// principal (its principal is its lease's owner), so there is nothing
    /// more to compare for it. Used on snapshot load and by tests.
    ///
    /// # Errors
    /// A description of the first inconsistency found.
    pub fn check_invariants(&self) -> Result<(), String> {
        if self.next_token == 0 || self.next_lease_id == 0 {
            return Err("counters must start at 1".into());
        }
        self.auth.check_invariants()?;
        self.outcomes.check_invariants()?;
        self.check_max_hold_invariants()?;
        if self.timeline != self.computed_timeline() {
            return Err("time index out of step with the table's instants".into());
        }
        if self.promotion.prev_index > self.promotion.index {
            return Err("promotes out of order".into());
        }
        if self.auth_audit.len() > MAX_AUTH_AUDIT_RECORDS {
            return Err("auth audit trail over its bound".into());
        }
        for l in self.leases.values() {
            if let Some(owner) = &l.owner {
                crate::validate::principal(owner.as_str())
                    .map_err(|e| format!("lease {}: {}", l.lease_id, e.message))?;
            }
        }
        if self.usage != self.computed_usage() {
            return Err("per-principal usage out of step with the leases".into());
        }
        for (id, l) in &self.leases {
            if *id != l.lease_id || *id >= self.next_lease_id {
                return Err(format!("lease {id}: bad id"));
            }
            for r in &l.locks {
                if self
                    .resources
                    .get(r)
                    .and_then(|s| s.grant_of(*id))
                    .is_none()
                {
                    return Err(format!("lease {id} lists lock {r:?} it does not hold"));
                }
            }
            for r in &l.waits {
                if self
                    .resources
                    .get(r)
                    .is_none_or(|s| !s.waiters.iter().any(|w| w.lease_id == *id))
                {
                    return Err(format!("lease {id} lists wait {r:?} that is not queued"));
                }
            }
        }
        if let Some(((lease, resource), _)) = self
            .values
            .iter()
            .find(|((lease, _), _)| !self.leases.contains_key(lease))
        {
            return Err(format!(
                "value of {resource:?} published by lease {lease}, which is not live"
            ));
        }
        for (name, s) in &self.resources {
            if s.is_empty() {
                return Err(format!("resource {name:?} kept empty"));
            }
            self.check_kind(name, s)?;
            for g in s.holders() {
                if g.fencing_token == 0 || g.fencing_token >= self.next_token {
                    return Err(format!(
                        "resource {name:?}: token {} not below next_token",
                        g.fencing_token
                    ));
                }
                if self
                    .leases
                    .get(&g.lease_id)
                    .is_none_or(|l| !l.locks.contains(name))
                {
                    return Err(format!(
                        "resource {name:?} held by lease {} that does not list it",
                        g.lease_id
                    ));
                }
            }
            // S8: a hand-off happens in the entry that frees the resource,
            // so a head waiter the resource admits has been granted (unless
            // tokens are exhausted, when nobody can be). An ended head
            // waiter is removed at the latest when something touches the
            // resource, so it may still head the queue here.
            // A multi-lock's waiter at the head may be blocked on another of
            // its resources: this one is then reserved for it (checked with
            // the multi-lock, below).
            if s.waiters.first().is_some_and(|w| {
                self.wait_ended(w).is_none()
                    && s.admits(w.mode, false)
                    && self
                        .waiting_multi_of(w.lease_id, name, Some(w.enqueue_index))
                        .is_none()
            }) && self.next_token <= crate::limits::MAX_ID
            {
                return Err(format!(
                    "resource {name:?}: its head waiter could be granted and was not"
                ));
            }
            let mut prev = None;
            let mut seen = BTreeSet::new();
            for w in &s.waiters {
                // Non-decreasing: waiters enqueued by one packed entry
                // (`Command::Batch`) share its index, in the entry's order.
                if prev.is_some_and(|p| p > w.enqueue_index) {
                    return Err(format!("resource {name:?}: waiters out of FIFO order"));
                }
                prev = Some(w.enqueue_index);
                if !seen.insert(w.lease_id) || s.grant_of(w.lease_id).is_some() {
                    return Err(format!(
                        "resource {name:?}: lease {} queued twice or holder queued",
                        w.lease_id
                    ));
                }
                if self
                    .leases
                    .get(&w.lease_id)
                    .is_none_or(|l| !l.waits.contains(name))
                {
                    return Err(format!(
                        "resource {name:?}: waiter lease {} dead or not listing it",
                        w.lease_id
                    ));
                }
            }
        }
        self.check_multis()
    }

    /// One resource's kind rules (docs/semantics.md "Lock kinds"): a mutex
    /// has only an exclusive holder and exclusive waiters; a read-write lock
    /// a writer or readers, never both; a semaphore at most `limit` permits
    /// in distinct slots below `limit`; a lock-delay never beside a grant
    /// it withholds.
    fn check_kind(&self, name: &str, s: &ResourceState) -> Result<(), String> {
        let bad = |what: &str| Err(format!("resource {name:?} ({}): {what}", s.kind));
        for (id, g) in &s.shared {
            if *id != g.lease_id || g.mode != Mode::Shared {
                return bad("a shared grant filed under another lease or not shared");
            }
        }
        if s.holder
            .as_ref()
            .is_some_and(|g| g.mode != Mode::Exclusive || g.slot.is_some())
        {
            return bad("an exclusive holder that is shared or has a slot");
        }
        let delay = s.lock_delay.as_ref().map(|d| &d.scope);
        match s.kind {
            LockKind::Mutex | LockKind::ReadWrite => {
                if s.kind == LockKind::Mutex
                    && (!s.shared.is_empty() || s.waiters.iter().any(|w| w.mode != Mode::Exclusive))
                {
                    return bad("a shared grant or a shared waiter on a mutex");
                }
                if s.holder.is_some() && !s.shared.is_empty() {
                    return bad("a writer beside readers");
                }
                if s.shared.values().any(|g| g.slot.is_some()) {
                    return bad("a reader with a slot");
                }
                match delay {
                    Some(DelayScope::All) if s.is_held() => bad("held during lock-delay"),
                    Some(DelayScope::Writers) if s.kind == LockKind::Mutex => {
                        bad("a writers-only lock-delay on a mutex")
                    }
                    Some(DelayScope::Writers) if s.holder.is_some() => {
                        bad("a writer during a writers-only lock-delay")
                    }
                    Some(DelayScope::Slots(_)) => bad("a slot lock-delay"),
                    _ => Ok(()),
                }
            }
            LockKind::Semaphore { limit } => {
                if limit == 0 || limit > crate::limits::MAX_SEMAPHORE_LIMIT {
                    return bad("limit out of range");
                }
                if s.holder.is_some() || s.waiters.iter().any(|w| w.mode != Mode::Shared) {
                    return bad("an exclusive holder or waiter");
                }
                if s.shared.len() as u64 > u64::from(limit) {
                    return bad("more permits than its limit");
                }
                let mut slots = BTreeSet::new();
                for g in s.shared.values() {
                    match g.slot {
                        Some(slot) if slot < limit && slots.insert(slot) => {}
                        _ => return bad("a permit without a slot, out of range or shared"),
                    }
                }
                match delay {
                    Some(DelayScope::All) if s.is_held() => bad("held during lock-delay"),
                    Some(DelayScope::Writers) => bad("a writers-only lock-delay"),
                    Some(DelayScope::Slots(w))
                        if w.is_empty() || w.iter().any(|x| *x >= limit || slots.contains(x)) =>
                    {
                        bad("a lock-delay on an empty, out-of-range or held slot")
                    }
                    _ => Ok(()),
                }
            }
        }
    }
}
