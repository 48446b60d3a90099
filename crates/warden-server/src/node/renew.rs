//! The renew batcher (S4): renewals are committed, one `RenewBatch` entry per
//! short window naming every lease renewed in it, and each is acknowledged
//! only after that entry commits. A renew is never acknowledged from leader
//! memory.
//!
//! Leases have owners (`warden_core::auth`; etcd PR 8031): a lease goes into
//! a batch only when its owner, in the leader's applied table when the batch
//! is formed, is the caller's principal (compared as `Option`s: an anonymous
//! caller renews only ownerless leases, a named one only its own). Another
//! principal's live lease is refused PermissionDenied naming the lease,
//! whatever id and token the caller knows. The owner of a lease never
//! changes, so the check cannot go stale before the batch commits. A lease
//! the table does not hold is answered "not live" at once, but only once
//! this leader's own `Promote` has applied (every entry of earlier terms is
//! applied then, so a lease a client knows of is in the table); before, the
//! renew is refused as not proposed and the client retries.
//!
//! `RenewBatch` itself is a leader-made entry without a principal: renewals,
//! like every leader duty, never depend on the permission layer (etcd issues
//! 13975 and 14616: leases stopped expiring when auth broke).

use std::collections::BTreeSet;
use std::sync::Weak;
use std::time::Duration;

use tokio::sync::{mpsc, oneshot};
use warden_core::types::{Command, RenewBatch, Response};

use super::{Node, Principal, SubmitError};

/// One renew waiting for its batch.
#[derive(Debug)]
pub struct RenewJob {
    /// The lease to renew.
    pub lease_id: u64,
    /// Who asks: the lease's owner must be this principal.
    pub principal: Principal,
    /// Ok(Some(ttl_ms)) renewed; Ok(None) unknown lease; Err(status).
    pub reply: oneshot::Sender<Result<Option<u64>, SubmitError>>,
}

/// Most leases named in one entry.
pub const MAX_RENEWS_PER_BATCH: usize = 4_096;

/// Runs the batcher until the node is gone.
pub async fn run(node: Weak<Node>, mut rx: mpsc::Receiver<RenewJob>, window: Duration) {
    while let Some(first) = rx.recv().await {
        let mut jobs = vec![first];
        if !window.is_zero() {
            tokio::time::sleep(window).await;
        }
        while jobs.len() < MAX_RENEWS_PER_BATCH {
            match rx.try_recv() {
                Ok(j) => jobs.push(j),
                Err(_) => break,
            }
        }
        let Some(node) = node.upgrade() else { return };
        jobs = keep_owned(&node, jobs);
        if jobs.is_empty() {
            continue;
        }
        if node.shared.bugs.renew_acked_before_commit {
            jobs = ack_renews_from_memory(&node, jobs);
        }
        let ids: BTreeSet<u64> = jobs.iter().map(|j| j.lease_id).collect();
        let result = node
            .propose_duty(Command::RenewBatch(RenewBatch {
                lease_ids: ids.into_iter().collect(),
            }))
            .await;
        // Lease id → its TTL if renewed (a map: a batch names up to 4,096
        // leases, and a scan of the reply per job was quadratic).
        let renewed: Result<std::collections::BTreeMap<u64, Option<u64>>, SubmitError> =
            match result {
                Ok((Response::Renewed(list), _)) => Ok(list.into_iter().collect()),
                Ok((other, _)) => Err(SubmitError::fatal(format!("unexpected reply {other:?}"))),
                Err(e) => Err(e),
            };
        for job in jobs {
            let r = match &renewed {
                Ok(map) => Ok(map.get(&job.lease_id).copied().flatten()),
                Err(s) => Err(s.clone()),
            };
            let _ = job.reply.send(r);
        }
    }
}

/// How the batcher answers one renew before any batch (see the module docs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ownership {
    /// The caller owns the live lease: it goes into the batch.
    Owned,
    /// A live lease of another principal (or ownerless, for a named caller;
    /// owned, for an anonymous one).
    Foreign,
    /// Not in the table.
    NotLive,
}

/// Whether `caller` may renew a lease whose owner the table reports as
/// `owner` ([`warden_core::table::LockTable::lease_owner`]).
pub fn ownership(owner: Option<Option<&str>>, caller: &Principal) -> Ownership {
    match owner {
        None => Ownership::NotLive,
        Some(owner) if owner == caller.as_ref().map(|p| p.as_str()) => Ownership::Owned,
        Some(_) => Ownership::Foreign,
    }
}

/// The jobs whose lease the caller owns; every other job is answered now:
/// "not live" (or, before this leader's `Promote` applied, "not proposed")
/// for a lease the table does not hold, and exactly the same for another
/// principal's, so a renew tells nobody which lease ids are live
/// (docs/security.md "Leases have owners").
fn keep_owned(node: &Node, jobs: Vec<RenewJob>) -> Vec<RenewJob> {
    let promoted = node.promoted_leader().is_some();
    let Ok(m) = node.shared.machine.lock() else {
        for job in jobs {
            let _ = job.reply.send(Err(SubmitError::NotProposed {
                reason: "state poisoned".into(),
            }));
        }
        return Vec::new();
    };
    let mut kept = Vec::with_capacity(jobs.len());
    for job in jobs {
        let mut owns = ownership(m.table.lease_owner(job.lease_id), &job.principal);
        // A denied principal renews nothing, even on a connection that has
        // not been closed yet (docs/security.md "A key was stolen").
        let denied = job
            .principal
            .as_ref()
            .is_some_and(|p| m.table.auth().is_denied(p.as_str()));
        if denied {
            owns = Ownership::Foreign;
        }
        if node.shared.bugs.skip_lease_owner_check && owns == Ownership::Foreign {
            owns = Ownership::Owned;
        }
        match owns {
            Ownership::Owned => kept.push(job),
            Ownership::Foreign | Ownership::NotLive if promoted => {
                let _ = job.reply.send(Ok(None));
            }
            Ownership::Foreign | Ownership::NotLive => {
                let _ = job.reply.send(Err(SubmitError::NotProposed {
                    reason: "this leader has not applied its first entry yet".into(),
                }));
            }
        }
    }
    kept
}

/// `renew_acked_before_commit`: a node that believes it leads answers every
/// renew of the batch at once from its own table (the lease's TTL, or "not
/// live"), before the batch is proposed; the returned jobs carry detached
/// reply channels, so the batch is still proposed and its result dropped.
pub(crate) fn ack_renews_from_memory(node: &Node, jobs: Vec<RenewJob>) -> Vec<RenewJob> {
    if node.leader_id_if_leader().is_none() {
        return jobs;
    }
    let Ok(m) = node.shared.machine.lock() else {
        return jobs;
    };
    jobs.into_iter()
        .map(|job| {
            let ttl_ms = m.table.lease(job.lease_id).map(|l| l.ttl_ms);
            let _ = job.reply.send(Ok(ttl_ms));
            let (reply, _) = tokio::sync::oneshot::channel();
            RenewJob {
                lease_id: job.lease_id,
                principal: job.principal,
                reply,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn named(name: &str) -> Principal {
        Some(warden_core::types::Principal::new(name).expect("principal"))
    }

    // Leases have owners (etcd PR 8031): only the owner renews a lease, even
    // with the right id; an anonymous caller renews only ownerless leases
    // and a named one never an ownerless one (made before owners existed);
    // a lease not in the table is not live.
    #[test]
    fn only_the_owner_renews_a_lease() {
        let alice = named("alice");
        assert_eq!(ownership(Some(Some("alice")), &alice), Ownership::Owned);
        assert_eq!(ownership(Some(Some("bob")), &alice), Ownership::Foreign);
        assert_eq!(
            ownership(Some(Some("alice")), &named("root")),
            Ownership::Foreign
        );
        assert_eq!(ownership(Some(None), &alice), Ownership::Foreign);
        assert_eq!(ownership(Some(None), &None), Ownership::Owned);
        assert_eq!(ownership(Some(Some("alice")), &None), Ownership::Foreign);
        assert_eq!(ownership(None, &alice), Ownership::NotLive);
        assert_eq!(ownership(None, &None), Ownership::NotLive);
    }
}
