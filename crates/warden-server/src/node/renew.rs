//! The renew batcher (S4): renewals are committed, one `RenewBatch` entry per
//! short window naming every lease renewed in it, and each is acknowledged
//! only after that entry commits. A renew is never acknowledged from leader
//! memory.

use std::collections::BTreeSet;
use std::sync::Weak;
use std::time::Duration;

use tokio::sync::{mpsc, oneshot};
use warden_core::types::{Command, RenewBatch, Response};

use super::{Node, SubmitError};

/// One renew waiting for its batch.
#[derive(Debug)]
pub struct RenewJob {
    /// The lease to renew.
    pub lease_id: u64,
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
                reply,
            }
        })
        .collect()
}
