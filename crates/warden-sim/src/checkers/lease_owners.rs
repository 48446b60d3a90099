//! OWNERS, principal isolation (docs/security.md "Leases have owners",
//! `warden_core::auth` step 5; etcd PR 8031): no command of principal P
//! ever changes a lease of principal Q ≠ P, unless P holds `admin` and the
//! command is a forced release.
//!
//! **Owner.** A lease's owner is the principal of the command that created
//! it, recorded here when that command applies (not read back from the
//! table, which the check is about): `Authorized { principal: P, .. }` whose
//! acquire (of any kind) with a new lease was granted or queued, or whose `LeaseGrant`
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
//! | an acquire of any kind with `lease_id = L` | `Granted` or `Queued` (a grant or a wait hung on L) |
//! | `Release` | `Released { lease_id: L }` |
//! | `Revoke` | `Revoked { lease_id: L }` |
//! | `Proclaim` | `Proclaimed { lease_id: L }` |
//! | `CancelWait` | `WaitCancelled { lease_id: L }` |
//! | `ForceRelease` | `Released { lease_id: L }`: allowed for any L if P holds `admin` on `""` in the table after the entry (else a finding) |
//!
//! L must be owned by P. Replayed outcomes (S7) are judged the same way: a
//! lease's owner never changes, so a replay of an allowed change is allowed.
//! Not counted: what the leader's duties and apply's sweep do (expiry,
//! promotion, ticks, lock-delays, dropped clients: no principal), and
//! hand-offs (a release of P's grant that grants Q's waiting lease is Q's
//! wait being served, S8).
//!
//! **Renewals** are leader-made `RenewBatch` entries without a principal
//! (the leader checks ownership before batching, `warden_server::node::renew`),
//! so they are judged from the clients' side at the end of the run: every
//! acknowledged renew (`History::acked_renews`, the caller's principal and
//! the lease) must be of a lease the caller owns.

use std::collections::BTreeMap;

use warden_core::auth::Target;
use warden_core::types::{AcquireOutcome, Command, LeaseSpec, Permission, Response};

use super::checker::{acquire_reply, Checker, Entry};
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
    if let Some((a, r)) = acquire_reply(cmd, response) {
        if !matches!(a.lease, LeaseSpec::New { .. }) || r.retried {
            return None;
        }
        return match r.outcome {
            AcquireOutcome::Granted { lease_id, .. } | AcquireOutcome::Queued { lease_id, .. } => {
                Some(lease_id)
            }
            AcquireOutcome::NotGranted { .. } => None,
        };
    }
    match (cmd, response) {
        (Command::LeaseGrant(_), Response::LeaseGranted { lease_id, .. }) => Some(*lease_id),
        _ => None,
    }
}

/// The lease a client command changed and what it did to it (see the
/// table in the module docs); `ForceRelease` is judged apart.
fn changed(cmd: &Command, response: &Response) -> Option<(&'static str, u64)> {
    if let Some((a, r)) = acquire_reply(cmd, response) {
        return match (a.lease, &r.outcome) {
            (
                LeaseSpec::Existing { lease_id },
                AcquireOutcome::Granted { .. } | AcquireOutcome::Queued { .. },
            ) => Some(("acquire on", lease_id)),
            _ => None,
        };
    }
    match (cmd, response) {
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
            // (the simulator's direct commands) is nobody's.
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

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use warden_core::table::LockTable;
    use warden_core::types::{
        AuthChange, AuthOp, Authorized, LeaderId, LeaseGrant, Principal, RequestHeader, Revoke,
        Stamp,
    };

    use super::*;

    const LEADER: LeaderId = LeaderId {
        term: 1,
        node_id: 1,
    };

    fn as_(who: &str, command: Command) -> Command {
        Command::Authorized(Authorized {
            principal: Some(Principal::new(who).expect("principal")),
            command: Box::new(command),
        })
    }

    fn hdr(client_id: u64, request_id: u64) -> RequestHeader {
        RequestHeader {
            client_id,
            request_id,
            acked_request_id: request_id - 1,
        }
    }

    fn auth(request_id: u64, op: AuthOp) -> Command {
        as_(
            "root",
            Command::AuthChange(AuthChange {
                header: hdr(9, request_id),
                op,
                at_unix_ms: 0,
            }),
        )
    }

    /// Applies `cmds` in order on one table (indexes from 1), feeding the
    /// checker as the observer does, then ends the run with `acked_renews`;
    /// returns the findings.
    fn findings(
        table: &mut LockTable,
        cmds: &[Command],
        acked_renews: Vec<(String, u64, Duration)>,
    ) -> Vec<String> {
        let mut checker = LeaseOwners::default();
        let mut h = History::default();
        for (i, cmd) in cmds.iter().enumerate() {
            let index = i as u64 + 1;
            let stamp = Stamp {
                leader: LEADER,
                at_ms: index,
            };
            let applied = table.apply(index, LEADER, stamp, cmd);
            let entry = Entry {
                node_id: 1,
                index,
                log_leader: LEADER,
                stamp,
                cmd,
                parts: vec![(cmd, &applied.response)],
                logged: cmd,
                logged_parts: vec![(cmd, &applied.response)],
                table,
                before: None,
                at: Duration::ZERO,
                digest: 0,
            };
            checker.on_entry(&entry, &mut h);
        }
        h.acked_renews = acked_renews;
        checker.at_end(&mut h);
        h.violations.into_iter().map(|v| v.message).collect()
    }

    /// alice and bob may lock anything; alice makes lease 1, then bob
    /// revokes it.
    fn bob_revokes_alices_lease() -> Vec<Command> {
        let role = "r".to_string();
        vec![
            auth(
                1,
                AuthOp::GrantPermission {
                    role: role.clone(),
                    prefix: String::new(),
                    permission: Permission::Lock,
                },
            ),
            auth(
                2,
                AuthOp::GrantRole {
                    user: Principal::new("alice").expect("principal"),
                    role: role.clone(),
                },
            ),
            auth(
                3,
                AuthOp::GrantRole {
                    user: Principal::new("bob").expect("principal"),
                    role,
                },
            ),
            as_(
                "alice",
                Command::LeaseGrant(LeaseGrant {
                    header: hdr(1, 1),
                    ttl_ms: 5_000,
                }),
            ),
            as_(
                "bob",
                Command::Revoke(Revoke {
                    header: hdr(2, 1),
                    lease_id: 1,
                    at_unix_ms: 0,
                }),
            ),
        ]
    }

    // OWNERS (docs/security.md "Leases have owners", etcd PR 8031): the
    // core refuses bob's revoke of alice's lease, and the checker, fed the
    // real table's answers, finds nothing; with the owner check skipped the
    // revoke applies and the checker names bob, the lease and alice.
    #[test]
    fn a_revoke_of_another_principals_lease_is_found_only_when_it_applies() {
        let cmds = bob_revokes_alices_lease();
        let mut table = LockTable::default();
        assert_eq!(
            findings(&mut table, &cmds, Vec::new()),
            Vec::<String>::new()
        );
        assert_eq!(table.lease_owner(1), Some(Some("alice")), "still alive");

        let mut buggy = LockTable::default();
        buggy.inject_skip_lease_owner_check();
        assert_eq!(
            findings(&mut buggy, &cmds, Vec::new()),
            ["node 1 index 5: principal bob's revoke of lease 1 of principal alice"]
        );
        assert_eq!(buggy.lease_owner(1), None, "revoked");
    }

    // OWNERS, renewals: an acknowledged renew is judged by the caller's
    // principal against the owner recorded at creation; the owner's own
    // renew passes, another principal's is a finding.
    #[test]
    fn an_acknowledged_renew_of_another_principals_lease_is_found() {
        let mut cmds = bob_revokes_alices_lease();
        cmds.pop();
        let renews = vec![
            ("alice".into(), 1, Duration::from_millis(1_000)),
            ("bob".into(), 1, Duration::from_millis(2_000)),
        ];
        assert_eq!(
            findings(&mut LockTable::default(), &cmds, renews),
            ["principal bob's renew of lease 1 of principal alice was acknowledged at 2.000 s"]
        );
    }
}
