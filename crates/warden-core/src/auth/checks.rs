//! The checks apply makes of a client command before it runs it (see the
//! [module docs](super), "What apply checks, in order"): room for a new
//! outcome record, permission and lease ownership, quotas (with the
//! per-resource wait quota), and what a leader may refuse before the log.
//! They read the table only, but for ending a principal's ended leases
//! before a quota refuses (quotas count live items only).

use crate::auth::quota::check_one_more;
use crate::auth::{QuotaField, Target, Usage};
use crate::effect::Effect;
use crate::outcome::{fingerprint, Check};
use crate::table::{exhausted, unknown_lease, Caller, LockTable};
use crate::types::{
    Authorized, Command, CommandError, ErrorCode, LeaseId, LeaseSpec, LogIndex, Permission,
    Principal,
};
use crate::validate;

impl LockTable {
    /// What a leader may refuse before proposing `w` (docs/security.md
    /// "Refused before the log"), so that a principal cannot fill the log
    /// with refusals. Apply still decides: a change committed in between
    /// binds. None when it may be proposed. Reads only.
    ///
    /// - A request from a client id with no outcome record when there is no
    ///   room for one (the principal's `clients` quota, `max_clients`): apply
    ///   would refuse it, recording nothing, the same way.
    /// - A request from a client id that has a record, not a retry of a
    ///   recorded request (S7: a recorded outcome stands, even after a
    ///   revoke), that its principal may not make on this table
    ///   (permission, lease ownership), or that names a lease the table
    ///   does not hold. A new client's first request goes to
    ///   the log whatever it is: its record is what lets the client's next
    ///   request acknowledge it (else that request would be refused as
    ///   expired).
    pub fn refusal_before_log(&self, w: &Authorized) -> Option<CommandError> {
        if validate::authorized(w).is_err() {
            return None; // apply refuses it, naming the field
        }
        let caller = Caller {
            principal: w.principal.as_ref(),
            wrapped: true,
        };
        let key = caller.principal.map(Principal::as_str);
        if let Some(header) = w.command.request_header() {
            if !self.outcomes.has(key, header.client_id) {
                return self.client_room(caller, header.client_id).err();
            }
            let fp = fingerprint(&w.command);
            if !matches!(self.outcomes.check(key, header, fp), Check::Execute) {
                return None;
            }
        }
        self.authorize(caller, &w.command)
            .and_then(|()| self.lease_exists(&w.command))
            .err()
    }

    /// A command that names an existing lease the table does not hold is
    /// refused NotFound, as apply would (lease ids are never reused, and a
    /// promoted leader's table holds every lease a client was told of).
    /// A lease that has ended but is still in the table goes to the log.
    fn lease_exists(&self, cmd: &Command) -> Result<(), CommandError> {
        let named = match cmd {
            Command::Release(r) => Some(r.lease_id),
            Command::Revoke(r) => Some(r.lease_id),
            Command::Proclaim(p) => Some(p.lease_id),
            Command::Acquire(a) => match a.lease {
                LeaseSpec::Existing { lease_id } => Some(lease_id),
                LeaseSpec::New { .. } => None,
            },
            _ => None,
        };
        match named {
            Some(id) if !self.leases.contains_key(&id) => Err(unknown_lease(id)),
            _ => Ok(()),
        }
    }

    /// S7 bounds: room for the record of a new client id (see
    /// [`crate::outcome`]). Nothing is ever evicted for a wrapped command.
    pub(crate) fn client_room(&self, caller: Caller<'_>, client: u64) -> Result<(), CommandError> {
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
    pub(crate) fn authorize(&self, caller: Caller<'_>, cmd: &Command) -> Result<(), CommandError> {
        if !caller.wrapped {
            return Ok(());
        }
        let p = caller.principal;
        if let Some(name) = p.filter(|n| self.auth.is_denied(n.as_str())) {
            return Err(validate::error(
                ErrorCode::PermissionDenied,
                None,
                format!("principal {name} is denied (on the deny list: warden user deny)"),
            ));
        }
        match cmd {
            Command::Acquire(a) if a.is_multi() => {
                // `lock` on every resource; the first refused is named.
                for r in &a.resources {
                    self.auth
                        .check(p, Permission::Lock, Target::Resource(r), Some("resources"))?;
                }
                if let LeaseSpec::Existing { lease_id } = a.lease {
                    self.check_owner(caller, lease_id)?;
                }
                Ok(())
            }
            Command::Acquire(a) => {
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
            // An admin may revoke anyone's lease (audited in `revoke`).
            Command::Revoke(_) if self.is_admin(caller) => Ok(()),
            Command::Revoke(r) => self.check_owner(caller, r.lease_id),
            Command::ForceRelease(_) | Command::AuthChange(_) => {
                self.auth
                    .check(p, Permission::Admin, Target::Prefix(""), None)
            }
            _ => Ok(()),
        }
    }

    /// A wrapped, named caller with `admin` on `""` (an anonymous caller
    /// never acts on an owned lease).
    pub(crate) fn is_admin(&self, caller: Caller<'_>) -> bool {
        caller.wrapped
            && caller.principal.is_some()
            && self
                .auth
                .check(
                    caller.principal,
                    Permission::Admin,
                    Target::Prefix(""),
                    None,
                )
                .is_ok()
    }

    /// A live lease acts only for its owner (etcd PR 8031); an unknown lease
    /// is left to the command's own NotFound.
    ///
    /// Another principal's lease is answered exactly as a lease that does
    /// not exist ([`unknown_lease`]), so lease ids (small and sequential)
    /// tell nobody which sessions are live (docs/security.md "Leases have
    /// owners").
    pub(crate) fn check_owner(
        &self,
        caller: Caller<'_>,
        lease_id: LeaseId,
    ) -> Result<(), CommandError> {
        match self.leases.get(&lease_id) {
            Some(l) if l.owner.as_ref() != caller.principal && !self.skip_lease_owner_check => {
                Err(unknown_lease(lease_id))
            }
            _ => Ok(()),
        }
    }

    /// Quotas (step 6): refuses when `n` more of `field` would take a
    /// wrapped command's principal over its quota (root and anonymous
    /// callers have none). Quotas count live items only: before refusing,
    /// the principal's leases that have ended are ended ([`crate::expiry`]).
    pub(crate) fn check_quota_n(
        &mut self,
        index: LogIndex,
        caller: Caller<'_>,
        field: QuotaField,
        n: u64,
        fx: &mut Vec<Effect>,
    ) -> Result<(), CommandError> {
        self.check_quota_with(index, caller, fx, |p, q, usage| {
            crate::auth::quota::check_more(p, q, usage, field, n)
        })
    }

    /// Quotas (step 6) for one more of each of `fields` (see
    /// [`Self::check_quota_n`]).
    pub(crate) fn check_quota(
        &mut self,
        index: LogIndex,
        caller: Caller<'_>,
        fields: &[QuotaField],
        fx: &mut Vec<Effect>,
    ) -> Result<(), CommandError> {
        self.check_quota_with(index, caller, fx, |p, q, usage| {
            fields
                .iter()
                .try_for_each(|f| check_one_more(p, q, usage, *f))
        })
    }

    /// Quota `waits_per_resource`: refuses a wrapped caller whose live
    /// leases already wait that many times on `resource` (ResourceExhausted,
    /// field `quota.waits_per_resource`), so one principal never fills a
    /// queue others share (docs/security.md "Quotas and limits"). Counts
    /// only when the queue is at least that long, and then at most
    /// [`crate::limits::MAX_WAITERS_PER_RESOURCE`] waiters.
    pub(crate) fn check_waits_on(
        &self,
        caller: Caller<'_>,
        resource: &str,
    ) -> Result<(), CommandError> {
        let Some(p) = caller.principal.filter(|_| caller.wrapped) else {
            return Ok(());
        };
        let Some(q) = self.auth.effective_quota(Some(p.as_str())) else {
            return Ok(());
        };
        let limit = q.waits_per_resource;
        let Some(state) = self.resources.get(resource) else {
            return Ok(());
        };
        if (state.waiters.len() as u64) < limit {
            return Ok(());
        }
        let now = self.now_ms;
        let mine = state
            .waiters
            .iter()
            .filter(|w| w.deadline_ms > now && self.lease_live(w.lease_id))
            .filter(|w| {
                self.leases
                    .get(&w.lease_id)
                    .is_some_and(|l| l.owner.as_ref() == Some(p))
            })
            .count() as u64;
        if mine < limit {
            return Ok(());
        }
        Err(exhausted(
            Some("quota.waits_per_resource"),
            format!(
                "quota waits_per_resource of principal {p} reached on {resource:?}: {limit} (raise it per role)"
            ),
        ))
    }

    /// Runs `check` on the caller's quota and usage; when it refuses, ends
    /// the caller's ended leases and runs it again.
    pub(crate) fn check_quota_with(
        &mut self,
        index: LogIndex,
        caller: Caller<'_>,
        fx: &mut Vec<Effect>,
        check: impl Fn(&str, &crate::types::Quota, &Usage) -> Result<(), CommandError>,
    ) -> Result<(), CommandError> {
        let Some(p) = caller.principal.filter(|_| caller.wrapped) else {
            return Ok(());
        };
        let Some(q) = self.auth.effective_quota(Some(p.as_str())) else {
            return Ok(());
        };
        let usage = |t: &Self| t.usage.get(p.as_str()).copied().unwrap_or_default();
        if check(p.as_str(), &q, &usage(self)).is_ok() {
            return Ok(());
        }
        self.end_dead_leases(index, Some(Some(p.as_str())), u64::MAX, fx);
        check(p.as_str(), &q, &usage(self))
    }
}
