//! The public `warden.v1.Lease` gRPC service: sessions (docs/semantics.md "Words").
//!
//! A session is a lease created without a lock; many locks and waits hang on
//! it and one keep-alive renews them all. Renewals go through the same batcher
//! as `Lock.Renew` (S4: committed in `RenewBatch` entries, acknowledged after
//! commit); each reply echoes the request's sequence (S5). A keep-alive and
//! a lease's time-to-live need ownership of the lease (`admin` on `""` may
//! read any lease's time-to-live): leases have owners (etcd PR 8031).

use std::pin::Pin;

use futures::{Stream, StreamExt};
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tonic::{Request, Response, Status, Streaming};
use warden_core::types::{Command, LeaseGrant};
use warden_proto::v1 as pb;
use warden_proto::v1::lease_server::Lease;

use super::convert::request_header;
use super::principal;
use super::status::lease_not_live;
use crate::node::submit::LeaseGranted;
use crate::node::{Node, NodeCell, Principal};

/// Most keep-alive requests one stream may have in flight at once.
pub const MAX_KEEPALIVES_IN_FLIGHT: usize = 1_024;

/// The service; answers `Unavailable` until the node has bootstrapped.
#[derive(Clone, Debug)]
pub struct LeaseService {
    node: NodeCell,
}

impl LeaseService {
    /// A service over the (not yet started) node.
    pub fn new(node: NodeCell) -> Self {
        LeaseService { node }
    }
}

/// Renews the lease a keep-alive names and builds its reply (echoing the
/// request's sequence, S5).
async fn keep_alive_reply(
    node: &Node,
    principal: &Principal,
    msg: pb::LeaseKeepAliveRequest,
) -> Result<pb::LeaseKeepAliveResponse, Status> {
    node.metrics().keepalives(1);
    let ttl_ms = node.renew(principal, msg.lease_id).await?;
    Ok(pb::LeaseKeepAliveResponse {
        lease_id: msg.lease_id,
        ttl_ms: ttl_ms.unwrap_or(0),
        sequence: msg.sequence,
        live: ttl_ms.is_some(),
    })
}

type KeepAliveStream =
    Pin<Box<dyn Stream<Item = Result<pb::LeaseKeepAliveResponse, Status>> + Send>>;

#[tonic::async_trait]
impl Lease for LeaseService {
    async fn lease_grant(
        &self,
        req: Request<pb::LeaseGrantRequest>,
    ) -> Result<Response<pb::LeaseGrantResponse>, Status> {
        let node = self.node.get()?;
        let principal = principal(&req)?;
        let r = req.into_inner();
        let cmd = Command::LeaseGrant(LeaseGrant {
            header: request_header(r.header)?,
            ttl_ms: r.ttl_ms,
        });
        let LeaseGranted { lease_id, ttl_ms } = node.submit(&principal, cmd).await?;
        Ok(Response::new(pb::LeaseGrantResponse { lease_id, ttl_ms }))
    }

    type LeaseKeepAliveStream = KeepAliveStream;

    async fn lease_keep_alive(
        &self,
        req: Request<Streaming<pb::LeaseKeepAliveRequest>>,
    ) -> Result<Response<Self::LeaseKeepAliveStream>, Status> {
        let node = self.node.get()?;
        node.require_leader()?;
        let principal = principal(&req)?;
        let mut incoming = req.into_inner();
        let (tx, rx) = mpsc::channel(MAX_KEEPALIVES_IN_FLIGHT);
        // One task per stream: each renew waits for its own batch inside it
        // (no task per message: a committed batch answers ~100 renews at
        // once, and a task each cost a spawn and a wake-up apiece). Replies
        // may overtake each other, which the echoed sequence makes harmless.
        // At most MAX_KEEPALIVES_IN_FLIGHT wait at once; beyond that the
        // stream is not read until one is answered.
        tokio::spawn(async move {
            let mut waiting = futures::stream::FuturesUnordered::new();
            let mut open = true;
            loop {
                tokio::select! {
                    msg = incoming.next(), if open && waiting.len() < MAX_KEEPALIVES_IN_FLIGHT => {
                        let msg = match msg {
                            Some(Ok(m)) => m,
                            _ => {
                                open = false;
                                continue;
                            }
                        };
                        if let Err(e) = node.require_leader() {
                            let _ = tx.send(Err(e.into())).await;
                            return;
                        }
                        let node = node.clone();
                        let principal = principal.clone();
                        waiting.push(async move { keep_alive_reply(&node, &principal, msg).await });
                    }
                    Some(reply) = waiting.next(), if !waiting.is_empty() => {
                        if tx.send(reply).await.is_err() {
                            return;
                        }
                    }
                    else => return,
                }
            }
        });
        Ok(Response::new(Box::pin(ReceiverStream::new(rx))))
    }

    async fn lease_time_to_live(
        &self,
        req: Request<pb::LeaseTimeToLiveRequest>,
    ) -> Result<Response<pb::LeaseTimeToLiveResponse>, Status> {
        let node = self.node.get()?;
        let principal = principal(&req)?;
        let lease_id = req.into_inner().lease_id;
        let lease = node
            .lease_status(&principal, lease_id)
            .await?
            .ok_or_else(|| lease_not_live(lease_id))?;
        Ok(Response::new(pb::LeaseTimeToLiveResponse {
            lease_id,
            ttl_ms: lease.ttl_ms,
            ttl_remaining_ms: lease.ttl_remaining_ms,
            locks: lease.locks,
            waits: lease.waits,
            graced: lease.graced,
            read_index: lease.read_index,
        }))
    }
}
