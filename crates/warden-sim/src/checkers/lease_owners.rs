//! OWNERS, principal isolation (docs/security.md "Leases have owners",
//! `warden_core::auth` step 5; etcd PR 8031): no command of principal P
//! ever changes a lease of principal Q ≠ P, unless P holds `admin` and the
//! command is a forced release.
//!
//! **Owner.** A lease's owner is the principal of the command that created
//! it, recorded here when that command applies (not read back from the
//! table, which the check is about): `Authorized { principal: P, .. }` whose
//! `Acquire` with a new lease was granted or queued, or whose `LeaseGrant`
//! answered `LeaseGranted`. An unwrapped or anonymous creation has owner
//! None. Owners compare as `Option`s, as the core compares them: a named
//! principal owns no ownerless lease, an anonymous caller no owned one.
//! `root` is bound like anyone. At creation the table's own record of the
//! owner must agree.
//!
//! **What counts as changing a lease**, for each command applied inside
//! `Authorized { principal: P, command }`, decided by its response (a
//! refused command changed nothing):
//!
//! | command | changes lease L when it answers |
//! |---|---|
//! | `Acquire` with `lease_id = L` | `Granted` or `Queued` (a grant or a wait hung on L) |
//! | `Release` | `Released { lease_id: L }` |
//! | `Revoke` | `Revoked { lease_id: L }` |
//! | `Proclaim` | `Proclaimed { lease_id: L }` |
//! | `CancelWait` | `WaitCancelled { lease_id: L }` |
//! | `ForceRelease` | `Released { lease_id: L }`: allowed for any L if P holds `admin` on `""` in the table after the entry (else a finding) |
//!
//! L must be owned by P. Replayed outcomes (S7) are judged the same way: a
//! lease's owner never changes, so a replay of an allowed change is allowed.
//! Not counted: what the leader's duties do (expiry, promotion, checkpoints,
//! lock-delays, dropped clients: no principal), the due list a command
//! carries (the leader's, applied first), and hand-offs (a release of P's
//! grant that grants Q's waiting lease is Q's wait being served, S8).
//!
//! **Renewals** are leader-made `RenewBatch` entries without a principal
//! (the leader checks ownership before batching, `warden_server::node::renew`),
//! so they are judged from the clients' side at the end of the run: every
//! acknowledged renew (`History::acked_renews`, the caller's principal and
//! the lease) must be of a lease the caller owns.

use std::collections::BTreeMap;

use warden_core::auth::Target;
use warden_core::types::{AcquireOutcome, Command, LeaseSpec, Permission, Response};

use super::checker::{Checker, Entry};
use crate::world::History;

const PROPERTY: &str = "OWNERS";

/// See the module docs.
#[derive(Debug, Default)]
pub struct LeaseOwners {
    /// lease → its owner, from the command that created it (the first node
    /// to apply it; every node applies the same log, S3).
    owners: BTreeMap<u64, Option<String>>,
}

/// Who: a principal's name, or "anonymous".
fn who(p: Option<&str>) -> &str {
    p.unwrap_or("anonymous")
}

/// The lease a new-lease command created, by its response.
fn created(cmd: &Command, response: &Response) -> Option<u64> {
    match (cmd, response) {
        (Command::Acquire(a), Response::Acquire(r))
            if matches!(a.lease, LeaseSpec::New { .. }) && !r.retried =>
        {
            match r.outcome {
                AcquireOutcome::Granted { lease_id, .. }
                | AcquireOutcome::Queued { lease_id, .. } => Some(lease_id),
                AcquireOutcome::NotGranted { .. } => None,
            }
        }
        (Command::LeaseGrant(_), Response::LeaseGranted { lease_id, .. }) => Some(*lease_id),
        _ => None,
    }
}

/// The lease a client command changed and what it did to it (see the
/// table in the module docs); `ForceRelease` is judged apart.
fn changed(cmd: &Command, response: &Response) -> Option<(&'static str, u64)> {
    match (cmd, response) {
        (Command::Acquire(a), Response::Acquire(r)) => match (a.lease, &r.outcome) {
            (
                LeaseSpec::Existing { lease_id },
                AcquireOutcome::Granted { .. } | AcquireOutcome::Queued { .. },
            ) => Some(("acquire on", lease_id)),
            _ => None,
        },
        (Command::Release(_), Response::Released { lease_id, .. }) => {
            Some(("release of", *lease_id))
        }
        (Command::Revoke(_), Response::Revoked { lease_id }) => Some(("revoke of", *lease_id)),
        (Command::Proclaim(_), Response::Proclaimed { lease_id, .. }) => {
            Some(("proclaim on", *lease_id))
        }
        (Command::CancelWait(_), Response::WaitCancelled { lease_id, .. }) => {
            Some(("cancel-wait on", *lease_id))
        }
        _ => None,
    }
}

impl Checker for LeaseOwners {
    fn property(&self) -> &'static str {
        PROPERTY
    }

    fn on_entry(&mut self, e: &Entry<'_>, h: &mut History) {
        for (part, response) in &e.parts {
            let (principal, cmd) = match part {
                Command::Authorized(w) => (w.principal.as_ref().map(|p| p.as_str()), &*w.command),
                other => (None, *other),
            };
            if let Some(lease_id) = created(cmd, response) {
                self.owners
                    .entry(lease_id)
                    .or_insert_with(|| principal.map(str::to_owned));
                if let Some(recorded) = e.table.lease_owner(lease_id) {
                    if recorded != principal {
                        h.violation(
                            PROPERTY,
                            format!(
                                "node {} index {}: lease {lease_id} made by principal {} is recorded as owned by {}",
                                e.node_id,
                                e.index,
                                who(principal),
                                who(recorded)
                            ),
                        );
                    }
                }
                continue;
            }
            // Only wrapped commands carry a principal; an unwrapped one
            // (before every member read log format 3) is nobody's.
            if !matches!(part, Command::Authorized(_)) {
                continue;
            }
            if let (Command::ForceRelease(_), Response::Released { lease_id, .. }) = (cmd, response)
            {
                let admin = e
                    .table
                    .auth()
                    .allows(principal, Permission::Admin, Target::Prefix(""));
                if !admin {
                    h.violation(
                        PROPERTY,
                        format!(
                            "node {} index {}: principal {} without admin force-released lease {lease_id}",
                            e.node_id,
                            e.index,
                            who(principal)
                        ),
                    );
                }
                continue;
            }
            let Some((what, lease_id)) = changed(cmd, response) else {
                continue;
            };
            // Unknown: created before anything this run observed (never:
            // every node applies from index 1 or from a snapshot a node
            // that applied the creation made).
            let Some(owner) = self.owners.get(&lease_id) else {
                continue;
            };
            if owner.as_deref() != principal {
                h.violation(
                    PROPERTY,
                    format!(
                        "node {} index {}: principal {}'s {what} lease {lease_id} of principal {}",
                        e.node_id,
                        e.index,
                        who(principal),
                        who(owner.as_deref())
                    ),
                );
            }
        }
    }

    fn at_end(&mut self, h: &mut History) {
        let renews = std::mem::take(&mut h.acked_renews);
        for (principal, lease_id, at) in &renews {
            let Some(owner) = self.owners.get(lease_id) else {
                continue;
            };
            if owner.as_deref() != Some(principal.as_str()) {
                h.violation(
                    PROPERTY,
                    format!(
                        "principal {principal}'s renew of lease {lease_id} of principal {} was acknowledged at {:.3} s",
                        who(owner.as_deref()),
                        at.as_secs_f64()
                    ),
                );
            }
        }
        h.acked_renews = renews;
    }
}
