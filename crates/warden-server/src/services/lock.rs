//! The public `warden.v1.Lock` gRPC service.
//!
//! Every mutating call is validated (typed error naming the field and the
//! limit, nothing changed), then proposed to the local Raft handle; the reply
//! is sent after the entry commits and applies (S3). A call to a follower gets
//! `Unavailable` with the leader's address in `warden-leader`.

use openraft::async_runtime::WatchReceiver as _;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use futures::Stream;
use openraft::Instant as _;
use openraft::ServerState;
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tonic::{Request, Response, Status};
use warden_core::types::{
    Acquire, AcquireOutcome, Command, LeaseSpec, NotGrantedReason, Proclaim, Release,
    RequestHeader, Response as CoreResponse, Revoke,
};
use warden_core::validate;
use warden_core::TokenState;
use warden_proto::v1 as pb;
use warden_proto::v1::lock_server::Lock;

use crate::node::{Node, NodeCell};
use crate::services::status::command_status;

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

/// Converts and validates a request header (S7: client id and request id).
pub(crate) fn request_header(h: Option<pb::RequestHeader>) -> Result<RequestHeader, Status> {
    let h =
        h.ok_or_else(|| Status::invalid_argument("header: required (client_id, request_id)"))?;
    let h = RequestHeader {
        client_id: h.client_id,
        request_id: h.request_id,
        acked_request_id: h.acked_request_id,
    };
    validate::header(&h).map_err(|e| command_status(&e))?;
    Ok(h)
}

fn reason_str(r: NotGrantedReason) -> &'static str {
    match r {
        NotGrantedReason::Held => "held",
        NotGrantedReason::LockDelay => "lock_delay",
        NotGrantedReason::WaitTimeout => "wait_timeout",
    }
}

/// Confirms leadership with a quorum (read-index), then waits until this node
/// has applied up to that index; returns the index. A read served after this
/// is linearizable.
pub(crate) async fn linearizable_read(node: &Node) -> Result<u64, Status> {
    node.require_leader()?;
    let read = tokio::time::timeout(
        Duration::from_millis(crate::services::status::COMMIT_TIMEOUT_MS),
        node.raft
            .ensure_linearizable(openraft::ReadPolicy::ReadIndex),
    )
    .await
    .map_err(|_| Status::unavailable("no quorum: read-index did not complete in time"))?
    .map_err(|e| Status::unavailable(format!("no quorum: {e}")))?;
    let read_index = read.index();
    node.wait_applied(
        read_index,
        Duration::from_millis(crate::services::status::COMMIT_TIMEOUT_MS),
    )
    .await?;
    Ok(read_index)
}

type AcquireStream = Pin<Box<dyn Stream<Item = Result<pb::AcquireResponse, Status>> + Send>>;

fn granted(
    resource: String,
    lease_id: u64,
    fencing_token: u64,
    ttl_ms: u64,
    log_index: u64,
) -> pb::AcquireResponse {
    pb::AcquireResponse {
        event: Some(pb::acquire_response::Event::Granted(pb::Granted {
            resource,
            lease_id,
            fencing_token,
            ttl_ms,
            log_index,
        })),
    }
}

fn not_granted(
    resource: String,
    holder: Option<u64>,
    reason: NotGrantedReason,
) -> pb::AcquireResponse {
    pb::AcquireResponse {
        event: Some(pb::acquire_response::Event::NotGranted(pb::NotGranted {
            resource,
            holder_lease_id: holder.unwrap_or(0),
            reason: reason_str(reason).to_string(),
        })),
    }
}

/// Shortest time between two `Queued` position reports to one waiter after
/// the first: 100 ms. The first report (it names the waiter's lease) goes at
/// once, and a changed position waits at most this long; the final `granted`
/// or `not_granted` is never held back. Without it every hand-off sent one
/// report to each of the other waiters, so 16 clients queued on one
/// resource cost 15 stream messages per grant (docs/performance.md,
/// "Contended").
pub const QUEUE_POSITION_REPORT_INTERVAL: std::time::Duration =
    std::time::Duration::from_millis(100);

/// When a waiter's `Queued` position reports go out: the first at once,
/// a changed position at most every [`QUEUE_POSITION_REPORT_INTERVAL`].
#[derive(Debug, Default)]
struct ReportThrottle {
    /// The position last reported (0: none yet).
    reported: u64,
    /// When the next report may go.
    next_at: Option<tokio::time::Instant>,
}

/// What to do with the current position.
#[derive(Debug, PartialEq, Eq)]
enum Report {
    /// Send it now (recorded as reported).
    Send,
    /// It changed, but not before this instant.
    HoldUntil(tokio::time::Instant),
    /// Already reported.
    Nothing,
}

impl ReportThrottle {
    fn offer(&mut self, position: u64, now: tokio::time::Instant) -> Report {
        if position == self.reported {
            return Report::Nothing;
        }
        match self.next_at {
            Some(at) if now < at => Report::HoldUntil(at),
            _ => {
                self.reported = position;
                self.next_at = Some(now + QUEUE_POSITION_REPORT_INTERVAL);
                Report::Send
            }
        }
    }
}

/// Where a queued acquire's messages go.
enum WaiterOut {
    /// A unary `Acquire`'s response stream.
    Acquire(mpsc::Sender<Result<pb::AcquireResponse, Status>>),
    /// One call of a `Calls` stream: each message goes under its call id.
    Call {
        call_id: u64,
        out: mpsc::Sender<Result<pb::CallResponse, Status>>,
    },
}

impl WaiterOut {
    /// Sends `message`; false when the stream is gone.
    async fn send(&self, message: pb::AcquireResponse) -> bool {
        match self {
            WaiterOut::Acquire(tx) => tx.send(Ok(message)).await.is_ok(),
            WaiterOut::Call { call_id, out } => out
                .send(Ok(call_answer(
                    *call_id,
                    pb::call_response::Answer::Acquire(message),
                )))
                .await
                .is_ok(),
        }
    }

    /// Resolves when the stream is gone (the client went away): the waiter
    /// stays queued (S8), its follower ends.
    async fn closed(&self) {
        match self {
            WaiterOut::Acquire(tx) => tx.closed().await,
            WaiterOut::Call { out, .. } => out.closed().await,
        }
    }
}

/// Follows a queued acquire until it is granted or removed (S8: a timeout is
/// reported only after the removal has committed; if a grant commits first,
/// the grant is reported).
async fn follow_waiter(
    node: Arc<Node>,
    tx: WaiterOut,
    resource: String,
    lease_id: u64,
    enqueue_index: u64,
) {
    let mut rx = node.shared.applied.subscribe();
    let mut throttle = ReportThrottle::default();
    loop {
        // The final answer, or the waiter's current position.
        let step = {
            let Ok(m) = node.shared.machine.lock() else {
                return;
            };
            match m.table.holder(&resource) {
                Some(h) if h.lease_id == lease_id && h.grant_index >= enqueue_index => Ok(granted(
                    resource.clone(),
                    lease_id,
                    h.fencing_token,
                    h.ttl_ms,
                    h.grant_index,
                )),
                holder => match m.table.waiter_position(&resource, lease_id) {
                    Some(position) => Err(position),
                    None => Ok(not_granted(
                        resource.clone(),
                        holder.map(|h| h.lease_id),
                        NotGrantedReason::WaitTimeout,
                    )),
                },
            }
        };
        let mut held_until = None;
        match step {
            Ok(final_msg) => {
                tx.send(final_msg).await;
                return;
            }
            Err(position) => match throttle.offer(position, tokio::time::Instant::now()) {
                Report::Send => {
                    let msg = pb::AcquireResponse {
                        event: Some(pb::acquire_response::Event::Queued(pb::Queued {
                            position,
                            lease_id,
                        })),
                    };
                    if !tx.send(msg).await {
                        // A dropped stream is not a cancel (S8): the waiter stays.
                        return;
                    }
                }
                Report::HoldUntil(at) => held_until = Some(at),
                Report::Nothing => {}
            },
        }
        let report_due = async {
            match held_until {
                Some(at) => tokio::time::sleep_until(at).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            r = rx.changed() => if r.is_err() { return },
            _ = tx.closed() => return,
            _ = report_due => {}
        }
    }
}

/// How an acquire went once its entry applied.
enum AcquireStart {
    /// Granted or refused: the one final message.
    Final(pb::AcquireResponse),
    /// Queued: [`follow_waiter`] reports the rest.
    Queued {
        resource: String,
        lease_id: u64,
        enqueue_index: u64,
    },
}

/// Validates and proposes an acquire, as both `Acquire` and `Calls` serve it.
async fn start_acquire(node: &Node, r: pb::AcquireRequest) -> Result<AcquireStart, Status> {
    let header = request_header(r.header)?;
    let lease = match (r.ttl_ms, r.lease_id) {
        (0, 0) => {
            return Err(Status::invalid_argument(
                "ttl_ms: set ttl_ms (1000..=3600000) or lease_id",
            ))
        }
        (ttl, 0) => LeaseSpec::New { ttl_ms: ttl },
        (0, id) => LeaseSpec::Existing { lease_id: id },
        _ => {
            return Err(Status::invalid_argument(
                "ttl_ms: set exactly one of ttl_ms and lease_id",
            ))
        }
    };
    let cmd = Command::Acquire(Acquire {
        header,
        resource: r.resource,
        lease,
        wait_timeout_ms: r.wait_timeout_ms,
        lock_delay_ms: r.lock_delay_ms,
        due: None,
    });
    validate::command(&cmd).map_err(|e| command_status(&e))?;
    node.require_leader()?;
    let cmd = match cmd {
        Command::Acquire(mut a) => {
            a.due = node.due_list();
            Command::Acquire(a)
        }
        c => c,
    };
    let reply = match node.propose_command(cmd).await? {
        CoreResponse::Acquire(a) => a,
        other => return Err(crate::services::status::unexpected(&other)),
    };
    Ok(match reply.outcome {
        AcquireOutcome::Granted {
            resource,
            lease_id,
            fencing_token,
            ttl_ms,
            grant_index,
        } => {
            if reply.retried && reply.current_token != Some(fencing_token) {
                return Err(Status::failed_precondition(format!(
                    "request_expired: this acquire was granted token {fencing_token} on lease {lease_id}, which no longer holds it"
                )));
            }
            AcquireStart::Final(granted(
                resource,
                lease_id,
                fencing_token,
                ttl_ms,
                grant_index,
            ))
        }
        AcquireOutcome::NotGranted {
            resource,
            holder_lease_id,
            reason,
        } => AcquireStart::Final(not_granted(resource, holder_lease_id, reason)),
        AcquireOutcome::Queued {
            resource,
            lease_id,
            enqueue_index,
            ..
        } => AcquireStart::Queued {
            resource,
            lease_id,
            enqueue_index,
        },
    })
}

/// Validates and proposes a release, as both `Release` and `Calls` serve it.
async fn release(node: &Node, r: pb::ReleaseRequest) -> Result<pb::ReleaseResponse, Status> {
    let header = request_header(r.header)?;
    validate::lease_id(r.lease_id).map_err(|e| command_status(&e))?;
    let resource = (!r.resource.is_empty()).then_some(r.resource);
    if let Some(res) = &resource {
        validate::resource(res).map_err(|e| command_status(&e))?;
    }
    node.require_leader()?;
    let cmd = Command::Release(Release {
        header,
        resource,
        lease_id: r.lease_id,
        fencing_token: (r.fencing_token != 0).then_some(r.fencing_token),
        due: node.due_list(),
    });
    match node.propose_command(cmd).await? {
        CoreResponse::Released {
            resource, lease_id, ..
        } => Ok(pb::ReleaseResponse {
            resource,
            lease_id,
            released: true,
        }),
        other => Err(crate::services::status::unexpected(&other)),
    }
}

/// Most calls one `Calls` stream has in progress (validating, proposing or
/// waiting for their entry to apply); beyond it the stream is not read until
/// one finishes (backpressure, not an error: the client's further calls wait
/// in the stream's HTTP/2 flow-control window, so the node's memory per
/// stream stays bounded).
/// Queued waiters are not counted (a queued acquire's call is done once it is
/// queued; [`follow_waiter`] reports the rest): the lock table bounds them.
pub const MAX_CALLS_IN_PROGRESS: usize = 1024;

/// Answers of one `Calls` stream waiting to be sent.
const CALLS_OUTBOUND_BUFFER: usize = 64;

type CallsStream = Pin<Box<dyn Stream<Item = Result<pb::CallResponse, Status>> + Send>>;

fn call_answer(call_id: u64, answer: pb::call_response::Answer) -> pb::CallResponse {
    pb::CallResponse {
        call_id,
        answer: Some(answer),
    }
}

/// Serves one call of a `Calls` stream; `None` when a queued acquire's
/// messages are left to [`follow_waiter`] (on `out`, under its call id).
async fn serve_call(
    node: Arc<Node>,
    call: pb::CallRequest,
    out: mpsc::Sender<Result<pb::CallResponse, Status>>,
) -> Option<pb::CallResponse> {
    use pb::call_request::Call;
    use pb::call_response::Answer;
    let id = call.call_id;
    let answer = if id == 0 {
        Err(Status::invalid_argument("call_id: must be 1..=2^64-1"))
    } else {
        match call.call {
            None => Err(Status::invalid_argument(
                "call: required (acquire or release)",
            )),
            Some(Call::Release(r)) => release(&node, r).await.map(Answer::Release),
            Some(Call::Acquire(a)) => match start_acquire(&node, a).await {
                Ok(AcquireStart::Final(m)) => Ok(Answer::Acquire(m)),
                Ok(AcquireStart::Queued {
                    resource,
                    lease_id,
                    enqueue_index,
                }) => {
                    tokio::spawn(follow_waiter(
                        node.clone(),
                        WaiterOut::Call { call_id: id, out },
                        resource,
                        lease_id,
                        enqueue_index,
                    ));
                    return None;
                }
                Err(status) => Err(status),
            },
        }
    };
    Some(call_answer(
        id,
        answer.unwrap_or_else(|status| Answer::Error(warden_proto::call_error(&status))),
    ))
}

/// Reads a `Calls` stream and serves its calls concurrently with `serve`
/// ([`serve_call`] in the service), at most `max_in_progress`
/// ([`MAX_CALLS_IN_PROGRESS`] in the service) at a time: with that many in
/// progress the next call is read only once one of them is answered. After
/// the client half-closes, the calls in progress are still answered. A
/// stream that cannot be read on (a message over `--max-request-bytes`, a
/// malformed one, a connection that broke or that the HTTP/2 keep-alive
/// closed) ends with that status once the calls in progress are answered:
/// the client must not keep sending calls that will never be read (queued
/// waiters, which hold the stream, would otherwise keep the stream open for
/// their whole wait). When the node stops (`stopping`), the stream ends with
/// `Unavailable`.
async fn serve_calls<S, F, Fut>(
    mut inbound: S,
    serve: F,
    max_in_progress: usize,
    out: mpsc::Sender<Result<pb::CallResponse, Status>>,
    mut stopping: tokio::sync::watch::Receiver<bool>,
) where
    S: Stream<Item = Result<pb::CallRequest, Status>> + Unpin,
    F: Fn(pb::CallRequest, mpsc::Sender<Result<pb::CallResponse, Status>>) -> Fut,
    Fut: std::future::Future<Output = Option<pb::CallResponse>>,
{
    use futures::StreamExt as _;
    let mut in_progress = futures::stream::FuturesUnordered::new();
    let mut reading = true;
    let mut unreadable = None;
    loop {
        tokio::select! {
            message = inbound.next(), if reading && in_progress.len() < max_in_progress => {
                match message {
                    Some(Ok(call)) => in_progress.push(serve(call, out.clone())),
                    // Half-closed: finish what is in progress.
                    None => reading = false,
                    // Unreadable (or the connection broke): finish what is
                    // in progress, then end the stream with this status.
                    Some(Err(status)) => {
                        reading = false;
                        unreadable = Some(status);
                    }
                }
            }
            Some(answer) = in_progress.next(), if !in_progress.is_empty() => {
                if let Some(answer) = answer {
                    if out.send(Ok(answer)).await.is_err() {
                        return;
                    }
                }
            }
            _ = out.closed() => return,
            // The node is stopping: end the stream now (its calls are
            // retried elsewhere with their request ids, S7; a queued waiter
            // stays queued, S8), or the graceful stop would wait for it.
            _ = async { stopping.wait_for(|s| *s).await.map(|_| ()) } => {
                let _ = out
                    .send(Err(Status::unavailable(
                        "this node is shutting down; retry at another node",
                    )))
                    .await;
                return;
            }
        }
        if !reading && in_progress.is_empty() {
            if let Some(status) = unreadable {
                let _ = out.send(Err(status)).await;
            }
            return;
        }
    }
}

#[tonic::async_trait]
impl Lock for LockService {
    type AcquireStream = AcquireStream;
    type CallsStream = CallsStream;

    async fn acquire(
        &self,
        req: Request<pb::AcquireRequest>,
    ) -> Result<Response<Self::AcquireStream>, Status> {
        let node = self.node.get()?;
        let (tx, rx) = mpsc::channel(8);
        match start_acquire(&node, req.into_inner()).await? {
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
        let (tx, rx) = mpsc::channel(CALLS_OUTBOUND_BUFFER);
        tokio::spawn(serve_calls(
            req.into_inner(),
            move |call, out| serve_call(node.clone(), call, out),
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
        let r = req.into_inner();
        validate::lease_id(r.lease_id).map_err(|e| command_status(&e))?;
        node.require_leader()?;
        match crate::services::lease::renew_one(&node, r.lease_id).await? {
            Some(ttl_ms) => Ok(Response::new(pb::RenewResponse {
                lease_id: r.lease_id,
                ttl_ms,
                sequence: r.sequence,
            })),
            None => Err(crate::services::status::lease_not_live(r.lease_id)),
        }
    }

    async fn release(
        &self,
        req: Request<pb::ReleaseRequest>,
    ) -> Result<Response<pb::ReleaseResponse>, Status> {
        let node = self.node.get()?;
        release(&node, req.into_inner()).await.map(Response::new)
    }

    async fn lease_revoke(
        &self,
        req: Request<pb::LeaseRevokeRequest>,
    ) -> Result<Response<pb::LeaseRevokeResponse>, Status> {
        let node = self.node.get()?;
        let r = req.into_inner();
        let header = request_header(r.header)?;
        validate::lease_id(r.lease_id).map_err(|e| command_status(&e))?;
        node.require_leader()?;
        let cmd = Command::Revoke(Revoke {
            header,
            lease_id: r.lease_id,
            due: node.due_list(),
        });
        match node.propose_command(cmd).await? {
            CoreResponse::Revoked { lease_id } => Ok(Response::new(pb::LeaseRevokeResponse {
                lease_id,
                revoked: true,
            })),
            other => Err(crate::services::status::unexpected(&other)),
        }
    }

    async fn proclaim(
        &self,
        req: Request<pb::ProclaimRequest>,
    ) -> Result<Response<pb::ProclaimResponse>, Status> {
        let node = self.node.get()?;
        let r = req.into_inner();
        let cmd = Command::Proclaim(Proclaim {
            resource: r.resource,
            lease_id: r.lease_id,
            fencing_token: (r.fencing_token != 0).then_some(r.fencing_token),
            value: r.value,
        });
        validate::command(&cmd).map_err(|e| command_status(&e))?;
        node.require_leader()?;
        match node.propose_command(cmd).await? {
            CoreResponse::Proclaimed { resource, lease_id } => {
                Ok(Response::new(pb::ProclaimResponse { resource, lease_id }))
            }
            other => Err(crate::services::status::unexpected(&other)),
        }
    }

    async fn status(
        &self,
        req: Request<pb::StatusRequest>,
    ) -> Result<Response<pb::StatusResponse>, Status> {
        let node = self.node.get()?;
        let resource = req.into_inner().resource;
        validate::resource(&resource).map_err(|e| command_status(&e))?;
        let read_index = linearizable_read(&node).await?;
        let now = node.shared.clock.now();
        let m = node.machine()?;
        let holder = m.table.holder(&resource).map(|h| pb::Holder {
            lease_id: h.lease_id,
            fencing_token: h.fencing_token,
            ttl_remaining_ms: m.deadlines.remaining_ms(h.lease_id, now).unwrap_or(0),
            ttl_ms: h.ttl_ms,
            value: m
                .table
                .value(h.lease_id, &resource)
                .unwrap_or_default()
                .to_owned(),
        });
        Ok(Response::new(pb::StatusResponse {
            waiters: m.table.waiters(&resource).len() as u64,
            resource,
            holder,
            read_index,
        }))
    }

    async fn validate(
        &self,
        req: Request<pb::ValidateRequest>,
    ) -> Result<Response<pb::ValidateResponse>, Status> {
        let node = self.node.get()?;
        let r = req.into_inner();
        validate::resource(&r.resource).map_err(|e| command_status(&e))?;
        if r.fencing_token == 0 || r.fencing_token > warden_core::limits::MAX_ID {
            return Err(Status::invalid_argument(format!(
                "fencing_token: {} is not in 1..={}",
                r.fencing_token,
                warden_core::limits::MAX_ID
            )));
        }
        // Same read path as `status`: read-index, then serve from the applied table.
        let read_index = linearizable_read(&node).await?;
        let m = node.machine()?;
        let state = match m.table.token_state(&r.resource, r.fencing_token) {
            TokenState::Current => pb::TokenState::Current,
            TokenState::Stale => pb::TokenState::Stale,
            TokenState::Unknown => pb::TokenState::Unknown,
        };
        let holder_token = m
            .table
            .holder(&r.resource)
            .map(|h| h.fencing_token)
            .unwrap_or(0);
        Ok(Response::new(pb::ValidateResponse {
            resource: r.resource,
            fencing_token: r.fencing_token,
            state: state as i32,
            holder_token,
            read_index,
        }))
    }

    async fn cluster_status(
        &self,
        _req: Request<pb::ClusterStatusRequest>,
    ) -> Result<Response<pb::ClusterStatusResponse>, Status> {
        let node = self.node.get()?;
        // A copy: the borrow is a read lock on the watch, and `node.leader()`
        // below borrows again (rare call; not worth holding the lock).
        let m = node.raft.metrics().borrow_watched().clone();
        if m.current_leader.is_some() && m.current_leader != Some(node.id) {
            // The leader's view is the one with replication progress.
            return Err(crate::services::status::not_leader(node.leader()));
        }
        let timing = &node.config.timing;
        let mut members = Vec::new();
        let membership = m.membership_config.membership().clone();
        let voters: Vec<u64> = membership.voter_ids().collect();
        for (id, n) in membership.nodes() {
            let role = if Some(*id) == m.current_leader {
                "leader"
            } else if !voters.contains(id) {
                "learner"
            } else if *id == node.id && m.state == ServerState::Candidate {
                "candidate"
            } else if m.current_leader.is_some() || *id == node.id {
                "follower"
            } else {
                "unknown"
            };
            let applied_index = if *id == node.id {
                m.last_applied.as_ref().map(|l| l.index()).unwrap_or(0)
            } else {
                m.replication
                    .as_ref()
                    .and_then(|r| r.get(id).cloned().flatten())
                    .map(|l| l.index())
                    .unwrap_or(0)
            };
            let last_contact = if *id == node.id {
                Some(0)
            } else {
                m.heartbeat
                    .as_ref()
                    .and_then(|h| h.get(id).cloned().flatten())
                    .map(|t| t.elapsed().as_millis() as u64)
            };
            let last_contact_ms = last_contact.unwrap_or(0);
            // A member the leader has not heard from within two election
            // timeouts is shown as unreachable.
            let unreachable_after_ms = 2 * timing.election_timeout_max_ms;
            let role = match last_contact {
                Some(ms) if ms <= unreachable_after_ms => role,
                _ if m.state == ServerState::Leader => "unreachable",
                _ => role,
            };
            let (term, lag_entries) =
                crate::node::membership::term_and_lag(&m, *id, role, applied_index);
            members.push(pb::Member {
                id: *id,
                addr: n.addr.clone(),
                role: role.to_string(),
                applied_index,
                last_contact_ms,
                matched_index: applied_index,
                term,
                lag_entries,
                contacted: last_contact.is_some(),
            });
        }
        Ok(Response::new(pb::ClusterStatusResponse {
            cluster_id: node.cluster_id.clone(),
            leader_id: m.current_leader.unwrap_or(0),
            term: m.current_term,
            commit_index: m.local_committed.as_ref().map(|l| l.index()).unwrap_or(0),
            members,
            node_id: node.id,
            last_log_index: m.last_log_index.unwrap_or(0),
            timing: Some(pb::Timing {
                heartbeat_ms: timing.heartbeat_ms,
                election_timeout_min_ms: timing.election_timeout_min_ms,
                election_timeout_max_ms: timing.election_timeout_max_ms,
                checkpoint_interval_ms: timing.checkpoint_interval_ms,
                promotion_grace_ms: timing.promotion_grace_ms,
                renew_batch_window_ms: timing.renew_batch_window_ms,
                min_ttl_ms: warden_core::limits::MIN_TTL_MS,
                max_ttl_ms: warden_core::limits::MAX_TTL_MS,
                max_wait_timeout_ms: warden_core::limits::MAX_WAIT_TIMEOUT_MS,
                max_lock_delay_ms: warden_core::limits::MAX_LOCK_DELAY_MS,
                bound_e_ms: timing.bound_e_ms(),
                bound_g_ms: timing.promotion_grace_ms,
            }),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // S8 (a dropped stream is not a cancel, but nothing outlives it): a
    // queued acquire's messages on a `Calls` stream go under its call id,
    // and the waiter's `closed()` (which `follow_waiter` selects on) resolves
    // as soon as the stream is gone, even while the waiter has nothing to
    // report. A relay task that noticed only at its next message kept a
    // waiter whose position did not change until its grant or timeout, on a
    // node that stopped applying for ever.
    #[tokio::test]
    async fn a_queued_calls_waiter_sends_under_its_call_id_and_ends_with_its_stream() {
        let (out, mut answers) = mpsc::channel(8);
        let waiter = WaiterOut::Call { call_id: 5, out };
        let queued = pb::AcquireResponse {
            event: Some(pb::acquire_response::Event::Queued(pb::Queued {
                position: 2,
                lease_id: 9,
            })),
        };
        assert!(waiter.send(queued.clone()).await);
        let answer = answers.recv().await.unwrap().unwrap();
        assert_eq!(answer.call_id, 5);
        assert_eq!(
            answer.answer,
            Some(pb::call_response::Answer::Acquire(queued.clone()))
        );
        drop(answers);
        tokio::time::timeout(Duration::from_secs(10), waiter.closed())
            .await
            .expect("the waiter sees its stream gone");
        assert!(!waiter.send(queued).await, "nothing more is sent");
    }

    // Bounded server memory per stream (MAX_CALLS_IN_PROGRESS): a `Calls`
    // stream has at most the limit in progress, reads the next call only
    // once one of them is answered (in any order), and answers every call
    // once under its id. The stream is polled by hand: `Pending` means it
    // has done all it can, so a call not read then is held back.
    #[tokio::test]
    async fn a_calls_stream_reads_no_more_than_the_limit_in_progress() {
        use futures::StreamExt as _;
        use std::collections::BTreeMap;
        use std::sync::atomic::{AtomicUsize, Ordering};
        use std::task::Poll;
        use tokio::sync::oneshot;

        const LIMIT: usize = 2;
        const CALLS: u64 = 5;
        let (calls_tx, calls_rx) = mpsc::unbounded_channel();
        for id in 1..=CALLS {
            calls_tx
                .send(Ok(pb::CallRequest {
                    call_id: id,
                    call: None,
                }))
                .unwrap();
        }
        let read = Arc::new(AtomicUsize::new(0));
        let counted = read.clone();
        let inbound = tokio_stream::wrappers::UnboundedReceiverStream::new(calls_rx).inspect(
            move |_: &Result<pb::CallRequest, Status>| {
                counted.fetch_add(1, Ordering::SeqCst);
            },
        );
        // Each call stays in progress until its gate opens.
        let mut open = BTreeMap::new();
        let gates = Arc::new(std::sync::Mutex::new(BTreeMap::new()));
        for id in 1..=CALLS {
            let (tx, rx) = oneshot::channel::<()>();
            open.insert(id, tx);
            gates.lock().unwrap().insert(id, rx);
        }
        let serve = move |call: pb::CallRequest, _out| {
            let gate = gates.lock().unwrap().remove(&call.call_id);
            async move {
                gate.expect("each call is read once").await.unwrap();
                Some(call_answer(
                    call.call_id,
                    pb::call_response::Answer::Release(pb::ReleaseResponse::default()),
                ))
            }
        };
        let (out, mut answers) = mpsc::channel(CALLS_OUTBOUND_BUFFER);
        let (_stop_tx, stopping) = tokio::sync::watch::channel(false);
        let mut stream = std::pin::pin!(serve_calls(inbound, serve, LIMIT, out, stopping));
        let mut answered = Vec::new();
        let mut step = async |open_now: &[u64]| {
            for id in open_now {
                open.remove(id).unwrap().send(()).unwrap();
            }
            assert_eq!(futures::poll!(stream.as_mut()), Poll::Pending);
            while let Ok(answer) = answers.try_recv() {
                answered.push(answer.unwrap().call_id);
            }
            let mut ids = answered.clone();
            ids.sort();
            (read.load(Ordering::SeqCst), ids)
        };

        assert_eq!(step(&[]).await, (2, vec![]), "the limit is read, no more");
        assert_eq!(
            step(&[2]).await,
            (3, vec![2]),
            "one answered, one more read"
        );
        assert_eq!(step(&[1, 3]).await, (5, vec![1, 2, 3]));
        assert_eq!(step(&[4, 5]).await, (5, vec![1, 2, 3, 4, 5]));
        // Half-closed with nothing in progress: the stream ends.
        drop(calls_tx);
        assert_eq!(futures::poll!(stream.as_mut()), Poll::Ready(()));
    }

    // The queue position a waiter sees (S8's `Queued` reports): the first
    // report goes at once, a changed position is held back at most
    // QUEUE_POSITION_REPORT_INTERVAL and then sent, an unchanged one never
    // again. (The cluster test cannot tell a lost hold-back timer from a
    // later entry waking the waiter; this can.)
    #[test]
    fn position_reports_are_held_back_at_most_the_interval() {
        let t0 = tokio::time::Instant::now();
        let ms = |n| t0 + Duration::from_millis(n);
        let mut t = ReportThrottle::default();
        assert_eq!(t.offer(3, t0), Report::Send);
        assert_eq!(t.offer(3, ms(1)), Report::Nothing);
        assert_eq!(t.offer(2, ms(10)), Report::HoldUntil(ms(100)));
        assert_eq!(t.offer(1, ms(99)), Report::HoldUntil(ms(100)));
        assert_eq!(t.offer(1, ms(100)), Report::Send);
        assert_eq!(t.offer(1, ms(500)), Report::Nothing);
        // A move after a quiet spell goes at once.
        assert_eq!(t.offer(2, ms(500)), Report::Send);
    }
}
