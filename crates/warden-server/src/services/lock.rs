//! The public `warden.v1.Lock` gRPC service.
//!
//! Every mutating call goes through [`Node::submit`] (validated: a typed
//! error naming the field and the limit, nothing changed; proposed to the
//! local Raft handle; answered after the entry commits and applies, S3).
//! A call to a follower gets `Unavailable` with the leader's address in
//! `warden-leader`. Reads are linearizable (read-index) and need `read` on
//! the resource ([`crate::node::read`]); `ClusterStatus` needs only an
//! authenticated caller.

use std::pin::Pin;

use futures::Stream;
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tonic::{Request, Response, Status};
use warden_core::types::{CancelOutcome, CancelWait, Command, Proclaim, Revoke};
use warden_core::TokenState;
use warden_proto::v1 as pb;
use warden_proto::v1::lock_server::Lock;

use super::calls::{
    release, serve_call, serve_calls, start_acquire, CallsStream, CALLS_OUTBOUND_BUFFER,
    MAX_CALLS_IN_PROGRESS,
};
use super::convert::{self, nonzero, request_header, AcquireStart};
use super::principal;
use super::status::lease_not_live;
use super::waiter::{follow_waiter, WaiterOut};
use crate::node::read::HolderStatus;
use crate::node::submit::{Proclaimed, Revoked, WaitCancelled};
use crate::node::NodeCell;

/// The service; answers `Unavailable` until the node has bootstrapped.
#[derive(Clone, Debug)]
pub struct LockService {
    node: NodeCell,
    /// Turns true when the node stops serving: every `Calls` stream then
    /// ends with `Unavailable` (a client never ends its own, and the
    /// server's graceful stop waits for open streams).
    stopping: tokio::sync::watch::Receiver<bool>,
}

impl LockService {
    /// A service over the (not yet started) node; `stopping` turns true when
    /// the node stops serving.
    pub fn new(node: NodeCell, stopping: tokio::sync::watch::Receiver<bool>) -> Self {
        LockService { node, stopping }
    }
}

type AcquireStream = Pin<Box<dyn Stream<Item = Result<pb::AcquireResponse, Status>> + Send>>;

#[tonic::async_trait]
impl Lock for LockService {
    type AcquireStream = AcquireStream;
    type CallsStream = CallsStream;

    async fn acquire(
        &self,
        req: Request<pb::AcquireRequest>,
    ) -> Result<Response<Self::AcquireStream>, Status> {
        let node = self.node.get()?;
        let principal = principal(&req)?;
        let (tx, rx) = mpsc::channel(8);
        let started = tokio::time::Instant::now();
        match start_acquire(&node, &principal, req.into_inner()).await? {
            AcquireStart::Final(m) => {
                let _ = tx.send(Ok(m)).await;
            }
            AcquireStart::Queued {
                resource,
                lease_id,
                enqueue_index,
            } => {
                tokio::spawn(follow_waiter(
                    node.clone(),
                    WaiterOut::Acquire(tx),
                    resource,
                    lease_id,
                    enqueue_index,
                    started,
                ));
            }
        }
        Ok(Response::new(Box::pin(ReceiverStream::new(rx))))
    }

    async fn calls(
        &self,
        req: Request<tonic::Streaming<pb::CallRequest>>,
    ) -> Result<Response<Self::CallsStream>, Status> {
        let node = self.node.get()?;
        let principal = principal(&req)?;
        let (tx, rx) = mpsc::channel(CALLS_OUTBOUND_BUFFER);
        tokio::spawn(serve_calls(
            req.into_inner(),
            move |call, claim, out| serve_call(node.clone(), principal.clone(), call, claim, out),
            MAX_CALLS_IN_PROGRESS,
            tx,
            self.stopping.clone(),
        ));
        Ok(Response::new(Box::pin(ReceiverStream::new(rx))))
    }

    async fn renew(
        &self,
        req: Request<pb::RenewRequest>,
    ) -> Result<Response<pb::RenewResponse>, Status> {
        let node = self.node.get()?;
        let principal = principal(&req)?;
        let r = req.into_inner();
        match node.renew(&principal, r.lease_id).await? {
            Some(ttl_ms) => Ok(Response::new(pb::RenewResponse {
                lease_id: r.lease_id,
                ttl_ms,
                sequence: r.sequence,
            })),
            None => Err(lease_not_live(r.lease_id)),
        }
    }

    async fn release(
        &self,
        req: Request<pb::ReleaseRequest>,
    ) -> Result<Response<pb::ReleaseResponse>, Status> {
        let node = self.node.get()?;
        let principal = principal(&req)?;
        release(&node, &principal, req.into_inner())
            .await
            .map(Response::new)
    }

    async fn lease_revoke(
        &self,
        req: Request<pb::LeaseRevokeRequest>,
    ) -> Result<Response<pb::LeaseRevokeResponse>, Status> {
        let node = self.node.get()?;
        let principal = principal(&req)?;
        let r = req.into_inner();
        let cmd = Command::Revoke(Revoke {
            header: request_header(r.header)?,
            lease_id: r.lease_id,
            at_unix_ms: super::admin::wall_clock_ms(),
        });
        let Revoked { lease_id } = node.submit(&principal, cmd).await?;
        Ok(Response::new(pb::LeaseRevokeResponse {
            lease_id,
            revoked: true,
        }))
    }

    async fn cancel_wait(
        &self,
        req: Request<pb::CancelWaitRequest>,
    ) -> Result<Response<pb::CancelWaitResponse>, Status> {
        let node = self.node.get()?;
        let principal = principal(&req)?;
        let r = req.into_inner();
        super::trace::record_resource(&r.resource);
        let cmd = Command::CancelWait(CancelWait {
            header: request_header(r.header)?,
            acquire_request_id: r.acquire_request_id,
            resource: r.resource,
        });
        let WaitCancelled {
            resource,
            lease_id,
            outcome,
            fencing_token,
        } = node.submit(&principal, cmd).await?;
        Ok(Response::new(pb::CancelWaitResponse {
            resource,
            lease_id,
            outcome: match outcome {
                CancelOutcome::Removed => "removed",
                CancelOutcome::Released => "released",
                CancelOutcome::Preempted => "preempted",
                CancelOutcome::NothingToCancel => "none",
            }
            .to_string(),
            fencing_token: fencing_token.unwrap_or(0),
        }))
    }

    async fn proclaim(
        &self,
        req: Request<pb::ProclaimRequest>,
    ) -> Result<Response<pb::ProclaimResponse>, Status> {
        let node = self.node.get()?;
        let principal = principal(&req)?;
        let r = req.into_inner();
        super::trace::record_resource(&r.resource);
        let cmd = Command::Proclaim(Proclaim {
            resource: r.resource,
            lease_id: r.lease_id,
            fencing_token: nonzero(r.fencing_token),
            value: r.value,
        });
        let Proclaimed { resource, lease_id } = node.submit(&principal, cmd).await?;
        Ok(Response::new(pb::ProclaimResponse { resource, lease_id }))
    }

    async fn status(
        &self,
        req: Request<pb::StatusRequest>,
    ) -> Result<Response<pb::StatusResponse>, Status> {
        let node = self.node.get()?;
        let principal = principal(&req)?;
        let resource = req.into_inner().resource;
        super::trace::record_resource(&resource);
        let s = node.resource_status(&principal, &resource).await?;
        let holder = |h: &HolderStatus| pb::Holder {
            lease_id: h.lease_id,
            fencing_token: h.fencing_token,
            ttl_remaining_ms: h.ttl_remaining_ms,
            ttl_ms: h.ttl_ms,
            value: h.value.clone(),
            mode: convert::wire_mode(s.kind, h.mode) as i32,
            slot: h.slot,
        };
        let (kind, limit) = convert::kind_name(s.kind);
        Ok(Response::new(pb::StatusResponse {
            resource,
            holder: s.holder().map(holder),
            holders: s.holders.iter().map(holder).collect(),
            kind: kind.to_owned(),
            limit,
            waiters: s.waiters,
            read_index: s.read_index,
            lock_delay_remaining_ms: s.lock_delay_remaining_ms,
        }))
    }

    async fn validate(
        &self,
        req: Request<pb::ValidateRequest>,
    ) -> Result<Response<pb::ValidateResponse>, Status> {
        let node = self.node.get()?;
        let principal = principal(&req)?;
        let r = req.into_inner();
        super::trace::record_resource(&r.resource);
        let check = node
            .token_check(&principal, &r.resource, r.fencing_token)
            .await?;
        let state = match check.state {
            TokenState::Current => pb::TokenState::Current,
            TokenState::Stale => pb::TokenState::Stale,
            TokenState::Unknown => pb::TokenState::Unknown,
        };
        Ok(Response::new(pb::ValidateResponse {
            resource: r.resource,
            fencing_token: r.fencing_token,
            state: state as i32,
            holder_token: check.holder_token,
            read_index: check.read_index,
        }))
    }

    async fn cluster_status(
        &self,
        req: Request<pb::ClusterStatusRequest>,
    ) -> Result<Response<pb::ClusterStatusResponse>, Status> {
        let node = self.node.get()?;
        // Any authenticated principal (and any caller of an insecure node).
        principal(&req)?;
        let view = node.cluster_view()?;
        let timing = &node.config().timing;
        Ok(Response::new(pb::ClusterStatusResponse {
            cluster_id: view.cluster_id,
            leader_id: view.leader_id,
            term: view.term,
            commit_index: view.commit_index,
            members: view
                .members
                .into_iter()
                .map(|m| pb::Member {
                    id: m.id,
                    addr: m.addr,
                    peer_addr: m.peer_addr.unwrap_or_default(),
                    role: m.role.to_string(),
                    applied_index: m.applied_index,
                    last_contact_ms: m.last_contact_ms,
                    matched_index: m.applied_index,
                    term: m.term,
                    lag_entries: m.lag_entries,
                    contacted: m.contacted,
                })
                .collect(),
            node_id: view.node_id,
            last_log_index: view.last_log_index,
            insecure: node.config().certs_dir.is_none(),
            election_prefix: warden_core::limits::ELECTION_PREFIX.to_string(),
            max_requests_in_flight: warden_core::limits::MAX_OUTCOMES_PER_CLIENT as u64,
            members_log_format: node.members_log_format(),
            unconfirmed_peers: node.unconfirmed_peers(),
            timing: Some(pb::Timing {
                heartbeat_ms: timing.heartbeat_ms,
                election_timeout_min_ms: timing.election_timeout_min_ms,
                election_timeout_max_ms: timing.election_timeout_max_ms,
                // No checkpoints since log format 1: always 0.
                checkpoint_interval_ms: 0,
                promotion_grace_ms: timing.promotion_grace_ms,
                renew_batch_window_ms: timing.renew_batch_window_ms,
                min_ttl_ms: warden_core::limits::MIN_TTL_MS,
                max_ttl_ms: warden_core::limits::MAX_TTL_MS,
                max_wait_timeout_ms: warden_core::limits::MAX_WAIT_TIMEOUT_MS,
                max_lock_delay_ms: warden_core::limits::MAX_LOCK_DELAY_MS,
                bound_e_ms: timing.bound_e_ms(),
                bound_g_ms: timing.promotion_grace_ms,
                preset: timing.preset.name().to_string(),
                call_timeout_floor_ms: timing.call_timeout_floor_ms(),
            }),
        }))
    }
}
