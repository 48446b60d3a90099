//! Multi-locks: one acquire of several mutexes, granted all together in one
//! entry (each resource with its own fencing token) or not at all
//! (docs/semantics.md "Multi-locks").
//!
//! A multi-lock that cannot be granted at once queues on every one of its
//! resources, as a plain exclusive [`crate::Waiter`] on each, all with the
//! enqueue index of its entry. It is granted, in the entry that frees the
//! last resource it waits for, when it is the head of every one of those
//! queues and every one of them is free. Enqueue order is one total order
//! (the log), so two multi-locks never wait for each other (no deadlock),
//! and nothing enqueued later overtakes one (no starvation). A free
//! resource whose head waiter is a multi-lock blocked elsewhere stays free
//! for it ("reserved"): a try-lock there is refused with
//! [`crate::types::NotGrantedReason::Reserved`], a later waiter queues
//! behind it.
//!
//! The table keeps one [`MultiLock`] per multi-lock, by (lease, first
//! resource), while it waits or holds. A lease takes a multi-lock only on
//! resources it neither holds nor waits on, so (lease, resource) names at
//! most one multi-lock. Whatever ends one of its waits (a timeout, a
//! cancel, the end of its lease, a revoked permission at hand-off) ends
//! all of them; whatever ends one of its grants (a release naming any one
//! of its resources, a forced release of one, the end of its lease) frees
//! all of them in that same entry, each handed off as a mutex is.

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};

use crate::auth::Target;
use crate::effect::{Effect, WaiterRemovedReason};
use crate::limits::{MAX_ID, MAX_LOCKS_PER_LEASE, MAX_WAITERS_PER_RESOURCE};
use crate::resource::ResourceState;
use crate::table::LockTable;
use crate::types::{
    Acquire, AcquireOutcome, AcquireReply, CommandError, ErrorCode, LeaseId, LeaseSpec, LockKind,
    LogIndex, Mode, NotGrantedReason, Permission, Principal, ResourceToken, Response,
};
use crate::validate::error;

/// One multi-lock, waiting or granted.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct MultiLock {
    /// Its resources, in the request's order (the first is its key's).
    pub resources: Vec<String>,
    /// Index of the entry that applied its acquire: every one of its
    /// waiters has this enqueue index.
    pub enqueue_index: LogIndex,
    /// Index of the entry that granted all of its resources; None while it
    /// waits.
    pub grant_index: Option<LogIndex>,
}

/// A multi-lock as [`LockTable::multi_lock`] shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MultiLockView {
    /// Its lease.
    pub lease_id: LeaseId,
    /// Its resources, in the request's order.
    pub resources: Vec<String>,
    /// Index of the entry that applied its acquire.
    pub enqueue_index: LogIndex,
    /// Index of the entry that granted it, once granted.
    pub grant_index: Option<LogIndex>,
    /// Every resource with its token once granted (the request's order);
    /// empty while it waits.
    pub tokens: Vec<ResourceToken>,
}

/// What the head of a queue did when it is a multi-lock's waiter.
enum HeadStep {
    /// Granted with all of its resources.
    Granted,
    /// Removed with all of its waits (lease gone, permission revoked).
    Removed,
    /// Still blocked on another of its resources: this one stays reserved.
    Blocked,
}

/// The multi-lock key: the lease and the first resource.
pub(crate) type MultiKey = (LeaseId, String);

impl LockTable {
    /// The multi-lock of `lease_id` that names `resource` (waiting or
    /// granted), if any.
    pub fn multi_lock(&self, lease_id: LeaseId, resource: &str) -> Option<MultiLockView> {
        let key = self.multi_of(lease_id, resource)?;
        let m = self.multis.get(&key)?;
        let tokens = match m.grant_index {
            None => Vec::new(),
            Some(_) => m
                .resources
                .iter()
                .filter_map(|r| {
                    let g = self.resources.get(r)?.grant_of(lease_id)?;
                    Some(ResourceToken {
                        resource: r.clone(),
                        fencing_token: g.fencing_token,
                    })
                })
                .collect(),
        };
        Some(MultiLockView {
            lease_id,
            resources: m.resources.clone(),
            enqueue_index: m.enqueue_index,
            grant_index: m.grant_index,
            tokens,
        })
    }

    /// Every multi-lock, by (lease, first resource).
    pub fn multi_locks(&self) -> impl Iterator<Item = MultiLockView> + '_ {
        self.multis
            .keys()
            .filter_map(|(lease_id, first)| self.multi_lock(*lease_id, first))
    }

    /// The multi-lock of `lease_id` that names `resource`, if any.
    pub(crate) fn multi_of(&self, lease_id: LeaseId, resource: &str) -> Option<MultiKey> {
        self.multis
            .range((lease_id, String::new())..)
            .take_while(|((l, _), _)| *l == lease_id)
            .find(|(_, m)| m.resources.iter().any(|r| r == resource))
            .map(|(k, _)| k.clone())
    }

    /// [`Self::multi_of`] while it waits (with this enqueue index, if named).
    pub(crate) fn waiting_multi_of(
        &self,
        lease_id: LeaseId,
        resource: &str,
        enqueue_index: Option<LogIndex>,
    ) -> Option<MultiKey> {
        let key = self.multi_of(lease_id, resource)?;
        let m = self.multis.get(&key)?;
        (m.grant_index.is_none() && enqueue_index.is_none_or(|i| i == m.enqueue_index))
            .then_some(key)
    }

    /// [`Self::multi_of`] once granted.
    pub(crate) fn granted_multi_of(&self, lease_id: LeaseId, resource: &str) -> Option<MultiKey> {
        let key = self.multi_of(lease_id, resource)?;
        self.multis.get(&key)?.grant_index.map(|_| key)
    }

    /// True when the waiting multi-lock `key` could be granted now: it
    /// heads every one of its queues, each resource is free and enough
    /// tokens are left.
    pub(crate) fn multi_grantable(&self, key: &MultiKey) -> bool {
        let Some(m) = self.multis.get(key) else {
            return false;
        };
        let n = m.resources.len() as u64;
        if self.next_token.saturating_add(n.saturating_sub(1)) > MAX_ID {
            return false;
        }
        m.resources.iter().all(|r| {
            self.resources.get(r).is_some_and(|s| {
                s.waiters
                    .first()
                    .is_some_and(|w| w.lease_id == key.0 && w.enqueue_index == m.enqueue_index)
                    && s.admits(Mode::Exclusive, false)
            })
        })
    }

    /// A multi-lock's [`Acquire`]:
    /// refused when a resource is another kind than a mutex, or when the
    /// lease already holds or waits on one of them; granted whole when
    /// every resource is free with nobody queued; else a try-lock is not
    /// granted (naming the first resource that blocks it) and any other
    /// queues on every resource.
    pub(crate) fn acquire_multi(
        &mut self,
        index: LogIndex,
        caller: crate::table::Caller<'_>,
        a: &Acquire,
        fx: &mut Vec<Effect>,
    ) -> Result<Response, CommandError> {
        let names = &a.resources;
        let n = names.len() as u64;
        // What has ended on its resources ends first ("Time").
        for r in names {
            self.refresh(index, r, fx);
        }
        if let LeaseSpec::Existing { lease_id } = a.lease {
            self.end_if_dead(index, lease_id, fx);
        }
        for r in names {
            if let Some(s) = self.resources.get(r).filter(|s| s.kind != LockKind::Mutex) {
                return Err(error(
                    ErrorCode::FailedPrecondition,
                    Some("kind"),
                    format!(
                        "{r:?} is a {} while it has holders, waiters or a lock-delay; a multi-lock takes mutexes only",
                        s.kind
                    ),
                ));
            }
        }
        let (lease_id, ttl_ms, new_lease) = match a.lease {
            LeaseSpec::New { ttl_ms } => (self.next_free_lease_id()?, ttl_ms, true),
            LeaseSpec::Existing { lease_id } => {
                let lease = self
                    .leases
                    .get(&lease_id)
                    .ok_or_else(|| crate::table::unknown_lease(lease_id))?;
                if let Some(r) = names
                    .iter()
                    .find(|r| lease.locks.contains(*r) || lease.waits.contains(*r))
                {
                    let what = if lease.locks.contains(r) {
                        "holds"
                    } else {
                        "waits on"
                    };
                    return Err(error(
                        ErrorCode::FailedPrecondition,
                        Some("resources"),
                        format!(
                            "lease {lease_id} already {what} {r:?}; a multi-lock takes only resources its lease neither holds nor waits on (a deadlock with its own locks would start there)"
                        ),
                    ));
                }
                if (lease.locks.len() + lease.waits.len()) as u64 + n > MAX_LOCKS_PER_LEASE as u64 {
                    return Err(crate::table::exhausted(
                        Some("lease_id"),
                        format!(
                            "a lease holds and waits on at most {MAX_LOCKS_PER_LEASE} resources"
                        ),
                    ));
                }
                (lease_id, lease.ttl_ms, false)
            }
        };
        let blocked = names.iter().find(|r| {
            self.resources
                .get(*r)
                .is_some_and(|s| !s.waiters.is_empty() || !s.admits(Mode::Exclusive, false))
        });
        let first = names[0].clone();
        let Some(blocked) = blocked else {
            if self.next_token.saturating_add(n - 1) > MAX_ID {
                return Err(crate::table::exhausted(
                    None,
                    format!("fencing tokens exhausted (limit {MAX_ID})"),
                ));
            }
            self.make_room(index, caller, new_lease, ttl_ms, n, 0, fx)?;
            let mut grants = Vec::with_capacity(names.len());
            for r in names {
                self.resources
                    .entry(r.clone())
                    .or_insert_with(|| ResourceState::of(LockKind::Mutex));
                let fencing_token =
                    self.grant(index, r, lease_id, Mode::Exclusive, a.lock_delay_ms, fx);
                grants.push(ResourceToken {
                    resource: r.clone(),
                    fencing_token,
                });
            }
            self.multis.insert(
                (lease_id, first.clone()),
                MultiLock {
                    resources: names.clone(),
                    enqueue_index: index,
                    grant_index: Some(index),
                },
            );
            let token = grants[0].fencing_token;
            return Ok(Response::AcquireMulti {
                reply: reply(
                    AcquireOutcome::Granted {
                        resource: first,
                        lease_id,
                        fencing_token: token,
                        ttl_ms,
                        grant_index: index,
                    },
                    true,
                    Some(token),
                ),
                grants,
            });
        };
        if a.wait_timeout_ms == 0 {
            // Try-lock: nothing changes; a lease it would create is never made.
            let s = self.resources.get(blocked);
            let reason = match s {
                Some(s) if s.is_held() => NotGrantedReason::Held,
                Some(s) if s.lock_delay.is_some() => NotGrantedReason::LockDelay,
                _ => NotGrantedReason::Reserved,
            };
            return Ok(Response::AcquireMulti {
                reply: reply(
                    AcquireOutcome::NotGranted {
                        resource: blocked.clone(),
                        holder_lease_id: s.and_then(|s| s.holder.as_ref()).map(|g| g.lease_id),
                        reason,
                    },
                    !new_lease,
                    None,
                ),
                grants: Vec::new(),
            });
        }
        let full = |t: &Self| {
            names.iter().find(|r| {
                t.resources
                    .get(*r)
                    .is_some_and(|s| s.waiters.len() >= MAX_WAITERS_PER_RESOURCE)
            })
        };
        if let Some(r) = full(self).cloned() {
            self.drop_ended_waiters(index, &r, fx);
        }
        if let Some(r) = full(self) {
            return Err(crate::table::exhausted(
                Some("resources"),
                format!("{r:?} has {MAX_WAITERS_PER_RESOURCE} waiters, the most a resource has"),
            ));
        }
        for r in names {
            self.check_waits_on(caller, r)?;
        }
        self.make_room(index, caller, new_lease, ttl_ms, n, n, fx)?;
        let mut first_position = 0;
        for r in names {
            let position = self.enqueue(index, r, LockKind::Mutex, lease_id, Mode::Exclusive, a);
            if first_position == 0 {
                first_position = position;
            }
            self.note_wait(lease_id, r);
            fx.push(Effect::Queued {
                resource: r.clone(),
                lease_id,
                enqueue_index: index,
                position,
                wait_timeout_ms: a.wait_timeout_ms,
            });
        }
        self.multis.insert(
            (lease_id, first.clone()),
            MultiLock {
                resources: names.clone(),
                enqueue_index: index,
                grant_index: None,
            },
        );
        Ok(Response::AcquireMulti {
            reply: reply(
                AcquireOutcome::Queued {
                    resource: first,
                    lease_id,
                    position: first_position,
                    enqueue_index: index,
                    ttl_ms,
                },
                true,
                None,
            ),
            grants: Vec::new(),
        })
    }

    /// Quotas for `locks` more locks and `waiters` more waiters (and a new
    /// lease when `new_lease`), the lease limit, then the new lease.
    #[allow(clippy::too_many_arguments)]
    fn make_room(
        &mut self,
        index: LogIndex,
        caller: crate::table::Caller<'_>,
        new_lease: bool,
        ttl_ms: u64,
        locks: u64,
        waiters: u64,
        fx: &mut Vec<Effect>,
    ) -> Result<(), CommandError> {
        use crate::auth::QuotaField;
        if new_lease {
            self.check_quota_n(index, caller, QuotaField::Leases, 1, fx)?;
        }
        self.check_quota_n(index, caller, QuotaField::Locks, locks, fx)?;
        if waiters > 0 {
            self.check_quota_n(index, caller, QuotaField::Waiters, waiters, fx)?;
        }
        if new_lease {
            self.check_lease_limit(index, fx)?;
            self.create_lease(index, ttl_ms, true, caller.principal.cloned(), fx);
        }
        Ok(())
    }

    /// The head step of `resource`'s queue when its head waiter belongs to
    /// the waiting multi-lock `key` (S8 hand-off): removed whole when its
    /// lease is gone or its owner lacks `lock` on one of its resources,
    /// granted whole when [`Self::multi_grantable`], else blocked. The
    /// resources whose queues changed (other than those granted) go to
    /// `work` to be settled.
    fn multi_head(
        &mut self,
        index: LogIndex,
        key: &MultiKey,
        work: &mut VecDeque<String>,
        fx: &mut Vec<Effect>,
    ) -> HeadStep {
        let Some(m) = self.multis.get(key) else {
            return HeadStep::Blocked;
        };
        // Every waiter of a multi-lock has its wait's deadline and lease.
        let ended = m.resources.first().and_then(|r| {
            let s = self.resources.get(r)?;
            let w = s
                .waiters
                .iter()
                .find(|w| w.lease_id == key.0 && w.enqueue_index == m.enqueue_index)?;
            self.wait_ended(w)
        });
        let allowed = self.leases.get(&key.0).map(|l| {
            m.resources.iter().all(|r| {
                self.auth.allows(
                    l.owner.as_ref().map(Principal::as_str),
                    Permission::Lock,
                    Target::Resource(r),
                )
            })
        });
        let reason = match allowed {
            _ if ended.is_some() => ended.unwrap_or(WaiterRemovedReason::LeaseEnded),
            None => WaiterRemovedReason::LeaseEnded,
            Some(false) => WaiterRemovedReason::PermissionRevoked,
            Some(true) if self.multi_grantable(key) => WaiterRemovedReason::Granted,
            Some(true) => return HeadStep::Blocked,
        };
        if reason != WaiterRemovedReason::Granted {
            let freed = self.remove_multi_waits(key, reason, fx);
            work.extend(freed);
            self.drop_auto_if_idle(key.0, fx);
            return HeadStep::Removed;
        }
        let Some(m) = self.multis.get_mut(key) else {
            return HeadStep::Blocked;
        };
        m.grant_index = Some(index);
        let resources = m.resources.clone();
        for r in &resources {
            let Some(w) = self.take_head(r) else {
                continue;
            };
            fx.push(Effect::WaiterRemoved {
                resource: r.clone(),
                lease_id: w.lease_id,
                enqueue_index: w.enqueue_index,
                reason: WaiterRemovedReason::Granted,
                enqueued_at_ms: w.enqueued_at_ms(),
            });
            self.grant(index, r, w.lease_id, Mode::Exclusive, w.lock_delay_ms, fx);
        }
        HeadStep::Granted
    }

    /// Takes the waiting multi-lock `key` out with every one of its
    /// waiters (one removal effect each, `reason`); returns its resources.
    pub(crate) fn remove_multi_waits(
        &mut self,
        key: &MultiKey,
        reason: WaiterRemovedReason,
        fx: &mut Vec<Effect>,
    ) -> Vec<String> {
        let Some(m) = self.multis.remove(key) else {
            return Vec::new();
        };
        for r in &m.resources {
            let Some(state) = self.resources.get_mut(r) else {
                continue;
            };
            let Some(pos) = state
                .waiters
                .iter()
                .position(|w| w.lease_id == key.0 && w.enqueue_index == m.enqueue_index)
            else {
                continue;
            };
            let w = state.waiters.remove(pos);
            let enqueued_at_ms = w.enqueued_at_ms();
            self.timeline.remove(&(
                w.deadline_ms,
                crate::expiry::Timed::Wait(r.clone(), key.0, m.enqueue_index),
            ));
            self.forget_wait(key.0, r);
            fx.push(Effect::WaiterRemoved {
                resource: r.clone(),
                lease_id: key.0,
                enqueue_index: m.enqueue_index,
                reason,
                enqueued_at_ms,
            });
        }
        m.resources
    }

    /// S8 hand-off of every resource in `work` (and of any whose queue a
    /// hand-off changes): while the head waiter's mode is admitted, grants
    /// it, or removes it when its lease is gone or its owner lacks `lock`;
    /// a multi-lock's waiter at the head is granted, removed or left
    /// blocked whole ([`Self::multi_head`]). Drops a resource entry with
    /// nothing left on it.
    pub(crate) fn settle_all(
        &mut self,
        index: LogIndex,
        mut work: VecDeque<String>,
        fx: &mut Vec<Effect>,
    ) {
        while let Some(resource) = work.pop_front() {
            while let Some(head) = self
                .resources
                .get(&resource)
                .and_then(|s| s.waiters.first())
            {
                let (lease_id, enqueue_index) = (head.lease_id, head.enqueue_index);
                if let Some(key) = self.waiting_multi_of(lease_id, &resource, Some(enqueue_index)) {
                    match self.multi_head(index, &key, &mut work, fx) {
                        HeadStep::Granted | HeadStep::Removed => continue,
                        HeadStep::Blocked => break,
                    }
                }
                if !self.settle_head(index, &resource, fx) {
                    break;
                }
            }
            if self
                .resources
                .get(&resource)
                .is_some_and(ResourceState::is_empty)
            {
                self.resources.remove(&resource);
            }
        }
    }

    /// The answer to a multi-lock's acquire: the reply
    /// and, while the reply's lease holds the multi-grant, every resource's
    /// token.
    pub(crate) fn multi_response(&self, first: &str, reply: AcquireReply) -> Response {
        let lease_id = match &reply.outcome {
            AcquireOutcome::Granted { lease_id, .. } | AcquireOutcome::Queued { lease_id, .. } => {
                Some(*lease_id)
            }
            AcquireOutcome::NotGranted { .. } => None,
        };
        let grants = lease_id
            .and_then(|id| self.multi_lock(id, first))
            .map(|v| v.tokens)
            .filter(|t| t.first().map(|t| t.fencing_token) == reply.current_token)
            .unwrap_or_default();
        Response::AcquireMulti { reply, grants }
    }

    /// `check_invariants` for multi-locks: each names a live lease, 1..=64
    /// distinct mutexes, its key's first resource; a granted one is the
    /// exclusive holder of every one of its resources, all granted by one
    /// entry with tokens growing in its order; a waiting one has a waiter
    /// with its enqueue index on every one of its resources and cannot be
    /// granted now (else a hand-off was missed, S8).
    pub(crate) fn check_multis(&self) -> Result<(), String> {
        let mut named: std::collections::BTreeSet<(LeaseId, &str)> =
            std::collections::BTreeSet::new();
        for (key, m) in &self.multis {
            let bad = |what: &str| {
                Err(format!(
                    "multi-lock of lease {} on {:?}: {what}",
                    key.0, key.1
                ))
            };
            if !self.leases.contains_key(&key.0) {
                return bad("its lease is not in the table");
            }
            let distinct: std::collections::BTreeSet<&String> = m.resources.iter().collect();
            if m.resources.is_empty()
                || m.resources.len() > crate::limits::MAX_MULTI_RESOURCES
                || distinct.len() != m.resources.len()
                || m.resources[0] != key.1
            {
                return bad("bad resource list");
            }
            let mut last_token = 0;
            for r in &m.resources {
                let Some(s) = self.resources.get(r) else {
                    return bad("a resource the table does not keep");
                };
                if s.kind != LockKind::Mutex {
                    return bad("a resource that is not a mutex");
                }
                if !named.insert((key.0, r.as_str())) {
                    return bad("a resource another multi-lock of its lease names");
                }
                match m.grant_index {
                    Some(gi) => {
                        let Some(g) = s.holder.as_ref().filter(|g| g.lease_id == key.0) else {
                            return bad("granted, and a resource not held by its lease");
                        };
                        if g.grant_index != gi {
                            return bad("granted, and a resource granted by another entry");
                        }
                        if g.fencing_token <= last_token {
                            return bad("tokens not growing in its resources' order");
                        }
                        last_token = g.fencing_token;
                    }
                    None => {
                        if !s
                            .waiters
                            .iter()
                            .any(|w| w.lease_id == key.0 && w.enqueue_index == m.enqueue_index)
                        {
                            return bad("waiting, and not queued on a resource");
                        }
                    }
                }
            }
            if m.grant_index.is_none() && self.multi_grantable(key) {
                return bad("it could be granted and was not");
            }
        }
        Ok(())
    }
}

fn reply(
    outcome: AcquireOutcome,
    lease_live: bool,
    current_token: Option<crate::types::FencingToken>,
) -> AcquireReply {
    AcquireReply {
        outcome,
        retried: false,
        lease_live,
        current_token,
    }
}
