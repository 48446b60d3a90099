//! The peer network: openraft's RPCs over the internal gRPC `Peer` service.
//!
//! Payloads are postcard-encoded openraft messages inside a `Blob`; the reply
//! blob is a postcard `Result<Response, String>`. Every call carries the
//! cluster id in the `warden-cluster-id` metadata entry (SEMANTICS
//! "Membership"), and the receiver refuses a mismatch.
//!
//! Replication (openraft's `stream_append`) runs over one `AppendStream` per
//! session: each AppendEntries is one message on a stream already open, its
//! answer a postcard `StreamAppendResult` ([`AppendStream`]). Heartbeats,
//! votes, snapshots and transfer-leader are unary calls.
//!
//! Every answer reports the log format the peer reads (the
//! `warden-log-format` header); each connection records it in the node's
//! [`LogFormats`] and forgets it when it drops its channel (see
//! [`crate::raft::log_format`]: the gate for packed entries).

use std::collections::VecDeque;
use std::fmt::Debug;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use futures::{Stream, StreamExt};
use openraft::base::{BoxFuture, BoxStream};
use openraft::errors::{NetworkError, RPCError, ReplicationClosed, StreamingError, Unreachable};
use openraft::network::{stream_append_sequential, RPCOption, RaftNetworkFactory};
use openraft::raft::{
    AppendEntriesRequest, AppendEntriesResponse, SnapshotResponse, StreamAppendResult,
    TransferLeaderRequest, TransferLeaderResponse, VoteRequest, VoteResponse,
};
use openraft::{AnyError, BasicNode, RaftNetworkV2};
use serde::{de::DeserializeOwned, Serialize};
use tokio::sync::mpsc;
use tokio_stream::wrappers::UnboundedReceiverStream;
use tonic::transport::{Channel, Endpoint};
use warden_proto::peer::peer_client::PeerClient;
use warden_proto::peer::Blob;

use crate::raft::log_format::{reported_format, LogFormats};
use crate::types::{LogId, Snapshot, SnapshotMeta, TypeConfig, Vote};

/// Largest gRPC message between peers (snapshots travel whole): 256 MiB.
pub const MAX_PEER_MESSAGE_BYTES: usize = 256 * 1024 * 1024;

/// How long a peer's calls may keep timing out, with no answer in between,
/// before its connection is dropped and a new one opened: 1 s. A connection
/// that lost bytes to a partition can stay open yet never deliver again (or
/// only after TCP's retransmit backoff); a leader that kept it timed out
/// towards that peer forever after the heal, never reached a quorum and never
/// stepped down, so no call was served (found by the simulator: seed 124 with
/// `--fault-secs 60`). Not at the first timeout: a call times out after
/// [`call_timeout_floor`] (125 ms by default) or, for a heartbeat, after
/// openraft's own one heartbeat interval (50 ms; openraft drops the call, and
/// the next call on that connection counts it as timed out), and a
/// connection being opened must get the time to finish.
pub const PEER_RECONNECT_AFTER: Duration = Duration::from_secs(1);

/// The shortest per-call timeout of a peer call: half the minimum election
/// timeout (125 ms with the default 250 ms). A call's timeout is the larger
/// of this and openraft's `RPCOption::hard_ttl()`.
///
/// Why a floor: openraft derives `hard_ttl` for AppendEntries from the
/// heartbeat interval (50 ms by default). Used as the timeout, every append
/// round trip above 50 ms (25 ms one way) timed out: the entries reached the
/// followers, but the leader never saw an answer, resent them and committed
/// nothing, on a healthy cluster whose nodes were merely far apart (found by
/// the simulator with 150 ms of latency; now the `slow-links` scenario).
///
/// Why half of `election_timeout_min`:
/// - It is above every round trip the cluster can run with at all: openraft
///   drops vote and pre-vote calls after `election_timeout_min`, so a cluster
///   whose round trips exceed that cannot elect a leader; half of it still
///   covers round trips up to 125 ms by default (within a continent, or
///   between neighbouring regions), and it grows with the election timeout
///   an operator sets for slower links.
/// - A call that outlives a follower's election timeout is useless: a
///   follower that heard nothing from the leader for that long is already
///   standing for election, so a lost call (a reset connection) must be
///   noticed and resent well before that. At half the election timeout the
///   resend has the other half to arrive.
///
/// What a longer timeout towards a dead peer costs the others: nothing.
/// openraft runs one replication task per target (`ReplicationCore::spawn`,
/// openraft `replication/mod.rs`) and one heartbeat worker per target
/// (`core/heartbeat/worker.rs`), each with its own [`PeerConnection`] (from
/// `new_client` and `new_heartbeat_client`); a call waiting on a dead peer
/// holds up only that peer's stream, never replication or heartbeats to a
/// live peer. Vote, pre-vote and transfer-leader calls go out in one task
/// per voter, each on a fresh connection, and openraft bounds each by
/// `election_timeout_min` itself, above this floor. Heartbeats are dropped
/// by openraft's heartbeat worker after one heartbeat interval whatever the
/// call's timeout: with round trips above the heartbeat interval the leader
/// sees no heartbeat answer (the followers still receive the heartbeats, so
/// no election starts), and its quorum clock moves only with answered
/// appends, which openraft also counts as heartbeat answers. Writes commit,
/// but a linearizable read waits for an append answered after it;
/// docs/operations.md ("Latency between nodes") says to raise `--heartbeat`
/// above the round trip on such links.
pub fn call_timeout_floor(election_timeout_min_ms: u64) -> Duration {
    Duration::from_millis(election_timeout_min_ms / 2)
}

/// Builds connections to peers.
#[derive(Clone, Debug)]
pub struct Network {
    cluster_id: String,
    call_timeout_floor: Duration,
    formats: Arc<LogFormats>,
    connector: Arc<dyn PeerConnector>,
}

impl Network {
    /// A network that stamps `cluster_id` on every call, gives each call at
    /// least `call_timeout_floor` (see [`call_timeout_floor`]) and records
    /// the log format each peer's answers report in `formats`, and opens
    /// its channels through `connector`.
    pub fn new(
        cluster_id: String,
        call_timeout_floor: Duration,
        formats: Arc<LogFormats>,
        connector: Arc<dyn PeerConnector>,
    ) -> Self {
        Network {
            cluster_id,
            call_timeout_floor,
            formats,
            connector,
        }
    }
}

/// Opens channels to peers. Production: TCP (`Endpoint::connect_lazy`); the
/// simulator injects its own network ([`crate::inject::Injected`]).
pub trait PeerConnector: Send + Sync + Debug + 'static {
    /// A lazily connected channel for a configured endpoint.
    fn channel(&self, endpoint: Endpoint) -> Channel;
}

/// The production connector: TCP.
#[derive(Debug)]
pub struct TcpConnector;

impl PeerConnector for TcpConnector {
    fn channel(&self, endpoint: Endpoint) -> Channel {
        endpoint.connect_lazy()
    }
}

/// Opens a lazily connected channel to `addr` ("host:port") through
/// `connector`.
pub fn channel(
    connector: &dyn PeerConnector,
    addr: &str,
) -> Result<Channel, tonic::transport::Error> {
    let endpoint = Endpoint::from_shared(format!("http://{addr}"))?
        .connect_timeout(Duration::from_millis(500))
        .tcp_nodelay(true);
    Ok(connector.channel(endpoint))
}

/// Most AppendEntries requests one replication stream has sent and not yet
/// seen answered: 1. The stream takes openraft's next request only after the
/// last one is answered, as the unary call did, so a request carries every
/// entry appended while the last was in flight. With 64 in flight (requests
/// pipelined as soon as entries exist) 64 clients cost the followers 25-60 %
/// more CPU per cycle (many small requests) and throughput fell
/// (docs/perf-worker-side.md).
pub const MAX_APPENDS_IN_FLIGHT: usize = 1;

impl Network {
    fn connection(&self, target: u64, node: &BasicNode, streaming: bool) -> PeerConnection {
        PeerConnection {
            target,
            addr: node.addr.clone(),
            cluster_id: self.cluster_id.clone(),
            call_timeout_floor: self.call_timeout_floor,
            formats: self.formats.clone(),
            connector: self.connector.clone(),
            client: None,
            timing_out_since: None,
            call_unfinished: false,
            streaming,
        }
    }
}

impl RaftNetworkFactory<TypeConfig> for Network {
    type Network = PeerConnection;

    /// Replication: AppendEntries over one `AppendStream` per session.
    async fn new_client(&mut self, target: u64, node: &BasicNode) -> Self::Network {
        self.connection(target, node, true)
    }

    /// Heartbeats: one unary AppendEntries each (openraft sends a heartbeat
    /// as a stream of one request; a gRPC stream per heartbeat would cost
    /// more than the call).
    async fn new_heartbeat_client(&mut self, target: u64, node: &BasicNode) -> Self::Network {
        self.connection(target, node, false)
    }
}

/// One peer.
pub struct PeerConnection {
    target: u64,
    addr: String,
    cluster_id: String,
    /// See [`call_timeout_floor`].
    call_timeout_floor: Duration,
    /// The node's record of its peers' log formats (shared).
    formats: Arc<LogFormats>,
    /// Opens this peer's channel.
    connector: Arc<dyn PeerConnector>,
    client: Option<PeerClient<Channel>>,
    /// When this peer's calls started timing out (None: the last call was
    /// answered). See [`PEER_RECONNECT_AFTER`].
    timing_out_since: Option<tokio::time::Instant>,
    /// A call was sent and has not returned: when the next call starts with
    /// this still set, openraft dropped the last call before its answer (the
    /// heartbeat worker's own timeout), and that counts as a timeout.
    call_unfinished: bool,
    /// Replicate over `AppendStream` (false: one unary AppendEntries per
    /// request, for heartbeats and for a peer that does not know the stream).
    streaming: bool,
}

/// A snapshot on the wire.
#[derive(serde::Serialize, serde::Deserialize)]
pub struct SnapshotEnvelope {
    /// The sender's vote.
    pub vote: Vote,
    /// Snapshot meta.
    pub meta: SnapshotMeta,
    /// Lock-table snapshot bytes.
    pub data: Vec<u8>,
}

fn unreachable(msg: String) -> RPCError<TypeConfig> {
    RPCError::Unreachable(Unreachable::new(&AnyError::error(msg)))
}

fn network(msg: String) -> RPCError<TypeConfig> {
    RPCError::Network(NetworkError::new(&AnyError::error(msg)))
}

impl PeerConnection {
    /// The timeout of a call whose openraft option is `option`: the larger of
    /// its `hard_ttl` and [`call_timeout_floor`].
    fn call_timeout(&self, option: &RPCOption) -> Duration {
        option.hard_ttl().max(self.call_timeout_floor)
    }

    /// A call timed out: after [`PEER_RECONNECT_AFTER`] of nothing but
    /// timeouts, drop the connection so the next call opens a new one.
    fn timed_out(&mut self) {
        self.timed_out_at(tokio::time::Instant::now());
    }

    /// A call starts at `now`: if the last one never returned (openraft
    /// dropped it before its answer, as the heartbeat worker does after one
    /// heartbeat interval), count it as timed out.
    fn count_dropped_call_at(&mut self, now: tokio::time::Instant) {
        if std::mem::take(&mut self.call_unfinished) {
            self.timed_out_at(now);
        }
    }

    fn timed_out_at(&mut self, now: tokio::time::Instant) {
        match self.timing_out_since {
            None => self.timing_out_since = Some(now),
            Some(since) if now.duration_since(since) >= PEER_RECONNECT_AFTER => {
                tracing::info!(
                    peer = self.target,
                    "peer calls timed out for {} ms; reconnecting",
                    now.duration_since(since).as_millis()
                );
                self.drop_client();
                self.timing_out_since = None;
            }
            Some(_) => {}
        }
    }

    /// Drops the channel (the next call opens a new one). The peer's log
    /// format is kept: openraft holds several connections to one peer
    /// (replication, heartbeats, votes), and one of them timing out says
    /// nothing about the process behind the others. A different binary
    /// behind a new connection replaces the report with its first answer
    /// (no header reads as 0).
    fn drop_client(&mut self) {
        self.client = None;
    }

    /// An answer came with `metadata`: record the log format it reports.
    fn answered(&mut self, metadata: &tonic::metadata::MetadataMap) {
        self.timing_out_since = None;
        self.formats.record(self.target, reported_format(metadata));
    }

    fn client(&mut self) -> Result<PeerClient<Channel>, RPCError<TypeConfig>> {
        if self.client.is_none() {
            let ch = channel(self.connector.as_ref(), &self.addr)
                .map_err(|e| unreachable(format!("peer {} at {}: {e}", self.target, self.addr)))?;
            self.client = Some(
                PeerClient::new(ch)
                    .max_decoding_message_size(MAX_PEER_MESSAGE_BYTES)
                    .max_encoding_message_size(MAX_PEER_MESSAGE_BYTES),
            );
        }
        self.client
            .clone()
            .ok_or_else(|| unreachable("no client".into()))
    }

    fn stamp_cluster_id<T>(&self, request: &mut tonic::Request<T>) {
        if let Ok(v) = self.cluster_id.parse() {
            request
                .metadata_mut()
                .insert(warden_proto::CLUSTER_ID_METADATA, v);
        }
    }

    /// What a failed call's status means for this connection: a reset or
    /// unknown error drops the channel (the next call reconnects), a timeout
    /// counts toward [`PEER_RECONNECT_AFTER`], anything else is an answer.
    fn failed(&mut self, status: &tonic::Status) -> RPCError<TypeConfig> {
        let code = status.code();
        if code == tonic::Code::Unavailable || code == tonic::Code::Unknown {
            self.drop_client();
            return unreachable(format!("peer {}: {}", self.target, status.message()));
        }
        if code == tonic::Code::Cancelled || code == tonic::Code::DeadlineExceeded {
            // The call timed out ("Timeout expired" is tonic's own deadline
            // from `set_timeout`).
            self.timed_out();
        } else {
            self.timing_out_since = None;
        }
        network(format!("peer {}: {}", self.target, status.message()))
    }

    async fn call<Req, Resp, F, Fut>(
        &mut self,
        req: &Req,
        timeout: Duration,
        f: F,
    ) -> Result<Resp, RPCError<TypeConfig>>
    where
        Req: Serialize,
        Resp: DeserializeOwned,
        F: FnOnce(PeerClient<Channel>, tonic::Request<Blob>) -> Fut,
        Fut: Future<Output = Result<tonic::Response<Blob>, tonic::Status>>,
    {
        let data = postcard::to_allocvec(req).map_err(|e| network(e.to_string()))?;
        let mut request = tonic::Request::new(Blob { data });
        request.set_timeout(timeout);
        self.stamp_cluster_id(&mut request);
        self.count_dropped_call_at(tokio::time::Instant::now());
        let client = self.client()?;
        self.call_unfinished = true;
        let reply = tokio::time::timeout(timeout, f(client, request)).await;
        self.call_unfinished = false;
        let reply = match reply {
            Err(_) => {
                self.timed_out();
                return Err(unreachable(format!("peer {}: timed out", self.target)));
            }
            Ok(Err(status)) => return Err(self.failed(&status)),
            Ok(Ok(r)) => {
                self.answered(r.metadata());
                r.into_inner()
            }
        };
        let decoded: Result<Resp, String> =
            postcard::from_bytes(&reply.data).map_err(|e| network(e.to_string()))?;
        decoded.map_err(network)
    }
}

impl RaftNetworkV2<TypeConfig> for PeerConnection {
    type SnapshotData = Vec<u8>;

    async fn append_entries(
        &mut self,
        rpc: AppendEntriesRequest<TypeConfig>,
        option: RPCOption,
    ) -> Result<AppendEntriesResponse<TypeConfig>, RPCError<TypeConfig>> {
        self.call(&rpc, self.call_timeout(&option), |mut c, r| async move {
            c.append_entries(r).await
        })
        .await
    }

    /// Replication over one `AppendStream` per session: a request is a DATA
    /// frame on a stream that is already open, instead of a call of its own
    /// (HTTP/2 stream, headers, a task on the receiving side), and the
    /// session's stream stays open while it replicates. A peer that does not
    /// know the stream (an older binary) gets one unary call per request, as
    /// heartbeats do.
    fn stream_append<'s, S>(
        &'s mut self,
        input: S,
        option: RPCOption,
    ) -> BoxFuture<
        's,
        Result<
            BoxStream<'s, Result<StreamAppendResult<TypeConfig>, RPCError<TypeConfig>>>,
            RPCError<TypeConfig>,
        >,
    >
    where
        S: Stream<Item = AppendEntriesRequest<TypeConfig>>
            + openraft::OptionalSend
            + Unpin
            + 'static,
    {
        if !self.streaming {
            return stream_append_sequential(self, input, option);
        }
        Box::pin(async move {
            // The stream opens with the first request, not before: openraft
            // waits out its backoff (after errors) inside the request stream,
            // so opening first would retry a peer that is down in a busy loop
            // (the simulator ran out of ports).
            let mut input = input;
            let Some(first) = input.next().await else {
                let none: BoxStream<'s, _> = Box::pin(futures::stream::empty());
                return Ok(none);
            };
            let input = futures::stream::iter(Some(first)).chain(input);
            let timeout = self.call_timeout(&option);
            let (tx, rx) = mpsc::unbounded_channel();
            let mut request = tonic::Request::new(UnboundedReceiverStream::new(rx));
            self.stamp_cluster_id(&mut request);
            let mut client = self.client()?;
            let opened = tokio::time::timeout(timeout, client.append_stream(request)).await;
            let replies = match opened {
                Err(_) => {
                    self.timed_out();
                    return Err(unreachable(format!(
                        "peer {}: timed out opening the append stream",
                        self.target
                    )));
                }
                Ok(Err(status)) if status.code() == tonic::Code::Unimplemented => {
                    tracing::info!(
                        peer = self.target,
                        "peer has no append stream; replicating with one call per AppendEntries"
                    );
                    self.streaming = false;
                    // A binary from before the stream predates packing too.
                    self.formats.record(self.target, 0);
                    return stream_append_sequential(self, input, option).await;
                }
                Ok(Err(status)) => return Err(self.failed(&status)),
                Ok(Ok(r)) => {
                    self.answered(r.metadata());
                    r.into_inner()
                }
            };
            let stream: BoxStream<'s, _> = Box::pin(AppendStream {
                conn: self,
                input: Some(input),
                tx: Some(tx),
                replies,
                sent: VecDeque::new(),
                acked: None,
                timeout,
                deadline: Box::pin(tokio::time::sleep(timeout)),
                done: false,
            });
            Ok(stream)
        })
    }

    async fn vote(
        &mut self,
        rpc: VoteRequest<TypeConfig>,
        option: RPCOption,
    ) -> Result<VoteResponse<TypeConfig>, RPCError<TypeConfig>> {
        self.call(&rpc, self.call_timeout(&option), |mut c, r| async move {
            c.vote(r).await
        })
        .await
    }

    async fn pre_vote(
        &mut self,
        rpc: VoteRequest<TypeConfig>,
        option: RPCOption,
    ) -> Result<VoteResponse<TypeConfig>, RPCError<TypeConfig>> {
        self.call(&rpc, self.call_timeout(&option), |mut c, r| async move {
            c.pre_vote(r).await
        })
        .await
    }

    async fn full_snapshot(
        &mut self,
        vote: Vote,
        snapshot: Snapshot,
        cancel: impl Future<Output = ReplicationClosed> + openraft::OptionalSend + 'static,
        option: RPCOption,
    ) -> Result<SnapshotResponse<TypeConfig>, StreamingError<TypeConfig>> {
        let env = SnapshotEnvelope {
            vote,
            meta: snapshot.meta,
            data: snapshot.snapshot,
        };
        let timeout = option.hard_ttl().max(Duration::from_secs(10));
        let fut = self.call(&env, timeout, |mut c, r| async move {
            c.install_snapshot(r).await
        });
        tokio::select! {
            closed = cancel => Err(StreamingError::Closed(closed)),
            res = fut => match res {
                Ok(r) => Ok(r),
                Err(RPCError::Unreachable(u)) => Err(StreamingError::Unreachable(u)),
                Err(RPCError::Timeout(t)) => Err(StreamingError::Timeout(t)),
                Err(e) => Err(StreamingError::Network(NetworkError::new(&AnyError::error(e.to_string())))),
            },
        }
    }

    async fn transfer_leader(
        &mut self,
        req: TransferLeaderRequest<TypeConfig>,
        option: RPCOption,
    ) -> Result<TransferLeaderResponse<TypeConfig>, RPCError<TypeConfig>> {
        self.call(&req, self.call_timeout(&option), |mut c, r| async move {
            c.transfer_leader(r).await
        })
        .await
    }
}

/// One replication session over `AppendStream` (see
/// [`PeerConnection::stream_append`]). Polling it takes openraft's requests
/// (at most [`MAX_APPENDS_IN_FLIGHT`] unanswered) into the stream's request
/// body and yields the follower's answers in order. The oldest unanswered
/// request gets the call timeout: past it the session ends as timed out
/// (counted toward [`PEER_RECONNECT_AFTER`]), so a stream on a connection
/// that stopped delivering is given up, as a unary call is. Dropping it drops
/// openraft's request stream with it, as openraft's own sequential session
/// does: no request is taken for a session that has ended.
struct AppendStream<'s, S> {
    conn: &'s mut PeerConnection,
    /// openraft's requests; None once it has ended.
    input: Option<S>,
    /// The request body; dropped (ending the body) when `input` ends.
    tx: Option<mpsc::UnboundedSender<Blob>>,
    replies: tonic::Streaming<Blob>,
    /// When each unanswered request was sent, oldest first.
    sent: VecDeque<tokio::time::Instant>,
    /// The greatest log id the follower acknowledged as matching on this
    /// session (`Some(None)`: it acknowledged an empty log); None before the
    /// first acknowledgement.
    acked: Option<Option<LogId>>,
    timeout: Duration,
    deadline: Pin<Box<tokio::time::Sleep>>,
    done: bool,
}

/// Whether `rpc` is an AppendEntries that only moves the follower's commit
/// index: no entries, and a `prev_log_id` that the follower already
/// acknowledged as matching on this session. openraft sends one after every
/// commit that no entry follows to carry (`stream_state.rs`,
/// `get_log_id_range`): a second round trip per entry on an idle cluster.
/// Such a request is not sent. The follower learns the commit index from the
/// next request with entries, or else from the next heartbeat (every
/// `heartbeat_ms`; openraft's heartbeats carry the leader's commit), as etcd's
/// followers do. Nothing waits for its answer: openraft counts a request
/// acknowledged once a later answer matches at or past its last log id, and
/// its answer would only repeat what the follower has acknowledged. Only
/// when a follower applies moves (at most one heartbeat later); what the
/// leader counts as committed does not (S3).
fn carries_only_a_commit(
    rpc: &AppendEntriesRequest<TypeConfig>,
    acked: Option<&Option<LogId>>,
) -> bool {
    rpc.entries.is_empty() && acked == Some(&rpc.prev_log_id)
}

impl<S> AppendStream<'_, S> {
    fn end(&mut self, e: RPCError<TypeConfig>) -> Poll<Option<<Self as Stream>::Item>>
    where
        S: Stream<Item = AppendEntriesRequest<TypeConfig>> + Unpin,
    {
        self.done = true;
        Poll::Ready(Some(Err(e)))
    }
}

impl<S> Stream for AppendStream<'_, S>
where
    S: Stream<Item = AppendEntriesRequest<TypeConfig>> + Unpin,
{
    type Item = Result<StreamAppendResult<TypeConfig>, RPCError<TypeConfig>>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        if this.done {
            return Poll::Ready(None);
        }
        // 1. Send what openraft has, up to the in-flight bound.
        while this.sent.len() < MAX_APPENDS_IN_FLIGHT {
            let Some(input) = this.input.as_mut() else {
                break;
            };
            match input.poll_next_unpin(cx) {
                Poll::Ready(Some(rpc)) => {
                    if carries_only_a_commit(&rpc, this.acked.as_ref()) {
                        continue;
                    }
                    let data = match postcard::to_allocvec(&rpc) {
                        Ok(data) => data,
                        Err(e) => return this.end(network(e.to_string())),
                    };
                    // A failed send means the stream is gone; its error
                    // arrives with the replies (or the timeout does).
                    if let Some(tx) = &this.tx {
                        let _ = tx.send(Blob { data });
                    }
                    this.sent.push_back(tokio::time::Instant::now());
                }
                Poll::Ready(None) => {
                    this.input = None;
                    this.tx = None;
                }
                Poll::Pending => break,
            }
        }
        // 2. The next answer.
        match Pin::new(&mut this.replies).poll_next(cx) {
            Poll::Ready(Some(Ok(blob))) => {
                this.sent.pop_front();
                this.conn.timing_out_since = None;
                return match postcard::from_bytes::<StreamAppendResult<TypeConfig>>(&blob.data) {
                    Ok(result) => {
                        if let Ok(matching) = &result {
                            this.acked = this.acked.max(Some(*matching));
                        }
                        Poll::Ready(Some(Ok(result)))
                    }
                    Err(e) => this.end(network(format!(
                        "peer {}: bad append answer: {e}",
                        this.conn.target
                    ))),
                };
            }
            Poll::Ready(Some(Err(status))) => {
                let e = this.conn.failed(&status);
                return this.end(e);
            }
            Poll::Ready(None) => {
                this.done = true;
                return Poll::Ready(None);
            }
            Poll::Pending => {}
        }
        // 3. The oldest unanswered request's timeout.
        if let Some(oldest) = this.sent.front() {
            let due = *oldest + this.timeout;
            if this.deadline.deadline() != due {
                this.deadline.as_mut().reset(due);
            }
            if this.deadline.as_mut().poll(cx).is_ready() {
                this.conn.timed_out();
                let target = this.conn.target;
                return this.end(unreachable(format!(
                    "peer {target}: append stream timed out"
                )));
            }
        }
        Poll::Pending
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::Vote;

    fn connection() -> PeerConnection {
        PeerConnection {
            target: 2,
            addr: "127.0.0.1:1".into(),
            cluster_id: "c".into(),
            call_timeout_floor: call_timeout_floor(250),
            formats: Arc::new(LogFormats::new(1)),
            connector: Arc::new(TcpConnector),
            client: None,
            timing_out_since: None,
            call_unfinished: false,
            streaming: true,
        }
    }

    /// A fake follower. Without `streams` it is a peer from before
    /// `AppendStream` (a rolling upgrade): it answers unary AppendEntries with
    /// success and everything else with `Unimplemented`. With `streams` it
    /// also serves `AppendStream`, records whether each streamed request
    /// carried entries, and acknowledges each at its last log id.
    #[derive(Clone, Default)]
    struct FakePeer {
        appends: std::sync::Arc<std::sync::atomic::AtomicUsize>,
        streams: bool,
        /// Answers carry the log-format header, as this binary's peer
        /// service does (false: a binary from before packing).
        advertises: bool,
        streamed: std::sync::Arc<std::sync::Mutex<Vec<usize>>>,
    }

    type Answer<T> = Result<tonic::Response<T>, tonic::Status>;

    #[tonic::async_trait]
    impl warden_proto::peer::peer_server::Peer for FakePeer {
        type AppendStreamStream = crate::raft::peer_service::AppendReplies;

        async fn append_stream(
            &self,
            req: tonic::Request<tonic::Streaming<Blob>>,
        ) -> Answer<Self::AppendStreamStream> {
            if !self.streams {
                return Err(tonic::Status::unimplemented("no AppendStream"));
            }
            let streamed = self.streamed.clone();
            let replies = req.into_inner().map(move |blob| {
                let blob = blob?;
                let rpc: AppendEntriesRequest<TypeConfig> =
                    postcard::from_bytes(&blob.data).expect("request decodes");
                streamed.lock().expect("log").push(rpc.entries.len());
                let last = rpc.entries.last().map(|e| e.log_id).or(rpc.prev_log_id);
                let ok: StreamAppendResult<TypeConfig> = Ok(last);
                let data = postcard::to_allocvec(&ok).expect("encode");
                Ok(Blob { data })
            });
            let mut response: tonic::Response<Self::AppendStreamStream> =
                tonic::Response::new(Box::pin(replies));
            if self.advertises {
                crate::raft::log_format::advertise(&mut response);
            }
            Ok(response)
        }
        async fn append_entries(&self, _: tonic::Request<Blob>) -> Answer<Blob> {
            self.appends
                .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            let ok: Result<AppendEntriesResponse<TypeConfig>, String> =
                Ok(AppendEntriesResponse::Success);
            let data = postcard::to_allocvec(&ok).expect("encode");
            let mut response = tonic::Response::new(Blob { data });
            if self.advertises {
                crate::raft::log_format::advertise(&mut response);
            }
            Ok(response)
        }
        async fn vote(&self, _: tonic::Request<Blob>) -> Answer<Blob> {
            Err(tonic::Status::unimplemented(""))
        }
        async fn pre_vote(&self, _: tonic::Request<Blob>) -> Answer<Blob> {
            Err(tonic::Status::unimplemented(""))
        }
        async fn install_snapshot(&self, _: tonic::Request<Blob>) -> Answer<Blob> {
            Err(tonic::Status::unimplemented(""))
        }
        async fn transfer_leader(&self, _: tonic::Request<Blob>) -> Answer<Blob> {
            Err(tonic::Status::unimplemented(""))
        }
        async fn bootstrap_state(
            &self,
            _: tonic::Request<warden_proto::peer::BootstrapStateRequest>,
        ) -> Answer<warden_proto::peer::BootstrapStateResponse> {
            Err(tonic::Status::unimplemented(""))
        }
        async fn bootstrap_prepare(
            &self,
            _: tonic::Request<warden_proto::peer::BootstrapId>,
        ) -> Answer<warden_proto::peer::BootstrapStateResponse> {
            Err(tonic::Status::unimplemented(""))
        }
        async fn bootstrap_commit(
            &self,
            _: tonic::Request<warden_proto::peer::BootstrapId>,
        ) -> Answer<warden_proto::peer::BootstrapStateResponse> {
            Err(tonic::Status::unimplemented(""))
        }
        async fn take_snapshot(
            &self,
            _: tonic::Request<warden_proto::peer::TakeSnapshotRequest>,
        ) -> Answer<warden_proto::peer::TakeSnapshotResponse> {
            Err(tonic::Status::unimplemented(""))
        }
    }

    // Rolling upgrade (L3: a mixed cluster keeps replicating): a peer that
    // does not know AppendStream gets the entries as unary AppendEntries,
    // on this session and every later one.
    #[tokio::test]
    async fn a_peer_without_the_append_stream_gets_unary_appends() {
        let peer = FakePeer::default();
        let (mut c, server) = serve(peer.clone());
        let request = || AppendEntriesRequest::<TypeConfig> {
            vote: Vote::new_committed(1, 1),
            prev_log_id: None,
            leader_commit: None,
            entries: vec![],
        };
        let option = RPCOption::new(Duration::from_secs(5));
        for session in 1..=2 {
            let input = futures::stream::iter(vec![request(), request()]);
            let answers: Vec<_> = c
                .stream_append(input, option.clone())
                .await
                .expect("session opens")
                .collect()
                .await;
            assert_eq!(answers.len(), 2, "session {session}");
            for a in answers {
                assert!(matches!(a, Ok(Ok(None))), "session {session}: {a:?}");
            }
        }
        assert!(!c.streaming, "fell back to unary calls");
        assert_eq!(
            peer.appends.load(std::sync::atomic::Ordering::SeqCst),
            4,
            "every request reached the peer as one AppendEntries"
        );
        server.abort();
    }

    /// Serves `peer` on a loopback port from :0; returns a connection to it.
    fn serve(peer: FakePeer) -> (PeerConnection, tokio::task::JoinHandle<()>) {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        listener.set_nonblocking(true).expect("nonblocking");
        let addr = listener.local_addr().expect("addr");
        let listener = tokio::net::TcpListener::from_std(listener).expect("tokio listener");
        let server = tonic::transport::Server::builder()
            .add_service(warden_proto::peer::peer_server::PeerServer::new(peer))
            .serve_with_incoming(tokio_stream::wrappers::TcpListenerStream::new(listener));
        let server = tokio::spawn(async move {
            let _ = server.await;
        });
        let mut c = connection();
        c.addr = addr.to_string();
        (c, server)
    }

    // S3 (an entry is acknowledged only once the follower has it) and the
    // commit-only AppendEntries that openraft sends after each commit no
    // entry follows: a request without entries whose prev_log_id the
    // follower already acknowledged on this session is not sent; a probe
    // (nothing acknowledged yet) and every request with entries are, and
    // the answers still come in order.
    #[tokio::test]
    async fn a_commit_only_append_after_an_acknowledgement_is_not_sent() {
        let peer = FakePeer {
            streams: true,
            ..FakePeer::default()
        };
        let (mut c, server) = serve(peer.clone());
        let id = |index| {
            openraft::LogId::new(
                openraft::vote::leader_id_adv::LeaderId {
                    term: 1,
                    node_id: 1,
                },
                index,
            )
        };
        let request =
            |prev: Option<u64>, indexes: &[u64], commit: Option<u64>| AppendEntriesRequest::<
                TypeConfig,
            > {
                vote: Vote::new_committed(1, 1),
                prev_log_id: prev.map(id),
                leader_commit: commit.map(id),
                entries: indexes
                    .iter()
                    .map(|i| openraft::Entry {
                        log_id: id(*i),
                        payload: openraft::EntryPayload::Blank,
                    })
                    .collect(),
            };
        let input = futures::stream::iter(vec![
            // A probe: nothing acknowledged yet, so it is sent.
            request(Some(1), &[], Some(1)),
            request(Some(1), &[2], Some(1)),
            // Only the commit of 2, which the follower acknowledged.
            request(Some(2), &[], Some(2)),
            request(Some(2), &[3, 4], Some(2)),
            // prev_log_id 3 is not the acknowledged 4: sent.
            request(Some(3), &[], Some(4)),
        ]);
        let answers: Vec<_> = c
            .stream_append(input, RPCOption::new(Duration::from_secs(5)))
            .await
            .expect("session opens")
            .collect()
            .await;
        let matched: Vec<_> = answers
            .into_iter()
            .map(|a| match a {
                Ok(Ok(m)) => m.map(|l| l.index),
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(matched, vec![Some(1), Some(2), Some(4), Some(3)]);
        assert_eq!(
            *peer.streamed.lock().expect("log"),
            vec![0, 1, 2, 0],
            "entries per request that reached the follower"
        );
        assert!(c.streaming);
        server.abort();
    }

    /// One AppendEntries (empty) to `c`, over a stream session when `c`
    /// streams.
    async fn one_append(c: &mut PeerConnection) {
        let rpc = AppendEntriesRequest::<TypeConfig> {
            vote: Vote::new_committed(1, 1),
            prev_log_id: None,
            leader_commit: None,
            entries: vec![],
        };
        let answers: Vec<_> = c
            .stream_append(
                futures::stream::iter(vec![rpc]),
                RPCOption::new(Duration::from_secs(5)),
            )
            .await
            .expect("session opens")
            .collect()
            .await;
        assert!(matches!(answers.as_slice(), [Ok(Ok(None))]), "{answers:?}");
    }

    // Packing gate (rolling upgrade; issue 7): a peer that advertises log
    // format 2 is recorded as 2, on the AppendStream and on unary calls; one
    // that sends no header (an older binary) as 0; a dropped connection keeps
    // the report (another connection to the peer may be live) and the next
    // answer, on a new connection, replaces it.
    #[tokio::test]
    async fn each_answer_records_the_peers_log_format() {
        for streams in [true, false] {
            let peer = FakePeer {
                streams,
                advertises: true,
                ..FakePeer::default()
            };
            let (mut c, server) = serve(peer);
            c.streaming = streams;
            assert_eq!(c.formats.reported(2), None);
            one_append(&mut c).await;
            assert_eq!(c.formats.reported(2), Some(2), "streams: {streams}");
            c.failed(&tonic::Status::unavailable("reset"));
            assert!(c.client.is_none(), "the channel was dropped");
            assert_eq!(c.formats.reported(2), Some(2), "kept with the channel");
            c.formats.record(2, 0);
            one_append(&mut c).await;
            assert_eq!(c.formats.reported(2), Some(2), "the new answer replaced it");
            server.abort();
        }
        // An older binary: no stream, no header.
        let (mut c, server) = serve(FakePeer::default());
        one_append(&mut c).await;
        assert!(!c.streaming);
        assert_eq!(c.formats.reported(2), Some(0));
        server.abort();
    }

    // Review of the packing gate (issue 7; docs/safety.md S3 "reported, in its latest
    // answer on a live connection"): openraft opens one connection per purpose to a
    // peer (replication, heartbeats, votes, snapshots). One of them being dropped (a
    // heartbeat connection that timed out) must not forget the format that the
    // replication stream, still open to the same process, reported: otherwise the
    // gate closes and stays closed until some other call happens to answer.
    #[tokio::test]
    async fn one_dropped_connection_does_not_forget_what_a_live_one_reported() {
        let peer = FakePeer {
            streams: true,
            advertises: true,
            ..FakePeer::default()
        };
        let (mut replication, server) = serve(peer);
        replication.formats.set_members([1, 2]);
        let mut heartbeat = connection();
        heartbeat.addr = replication.addr.clone();
        heartbeat.formats = replication.formats.clone();
        heartbeat.streaming = false;
        one_append(&mut replication).await;
        one_append(&mut heartbeat).await;
        assert!(replication.formats.may_pack());
        // Links slower than one heartbeat interval (the simulator's
        // slow-links scenario: 80 ms round trips, 50 ms heartbeats): openraft
        // drops every heartbeat call before its answer, so after
        // PEER_RECONNECT_AFTER the heartbeat connection is replaced. The
        // replication stream to the same peer process is untouched.
        let t0 = tokio::time::Instant::now();
        heartbeat.call_unfinished = true;
        heartbeat.count_dropped_call_at(t0);
        heartbeat.call_unfinished = true;
        heartbeat.count_dropped_call_at(t0 + PEER_RECONNECT_AFTER);
        assert!(
            heartbeat.client.is_none(),
            "the heartbeat connection was replaced"
        );
        assert_eq!(
            replication.formats.reported(2),
            Some(2),
            "the live replication connection's report was forgotten"
        );
        assert!(replication.formats.may_pack());
        server.abort();
    }

    // Liveness after a partition heals (L3; simulator seed 124): a connection
    // whose calls only time out is replaced after PEER_RECONNECT_AFTER, not
    // at the first timeout.
    #[tokio::test]
    async fn a_connection_that_only_times_out_is_replaced_after_a_second() {
        let mut c = connection();
        c.client().expect("lazy channel");
        let t0 = tokio::time::Instant::now();
        c.timed_out_at(t0);
        c.timed_out_at(t0 + Duration::from_millis(999));
        assert!(c.client.is_some(), "kept within the first second");
        c.timed_out_at(t0 + PEER_RECONNECT_AFTER);
        assert!(c.client.is_none(), "dropped after a second of timeouts");
        assert_eq!(c.timing_out_since, None);
    }

    // An answered call in between restarts the count (no reconnect churn on
    // a link that only sometimes exceeds the call timeout).
    #[tokio::test]
    async fn an_answer_in_between_restarts_the_count() {
        let mut c = connection();
        c.client().expect("lazy channel");
        let t0 = tokio::time::Instant::now();
        c.timed_out_at(t0);
        c.timing_out_since = None; // what an answered call does
        c.timed_out_at(t0 + Duration::from_millis(900));
        c.timed_out_at(t0 + Duration::from_millis(1_800));
        assert!(c.client.is_some());
        assert_eq!(c.timing_out_since, Some(t0 + Duration::from_millis(900)));
    }

    // L3 on slow links (simulator scenario `slow-links`): an append gets at
    // least half the minimum election timeout, not openraft's one heartbeat
    // interval; longer openraft timeouts (votes) are kept.
    #[test]
    fn a_call_gets_at_least_half_the_election_timeout() {
        assert_eq!(call_timeout_floor(250), Duration::from_millis(125));
        let c = connection();
        let append = RPCOption::new(Duration::from_millis(50));
        assert_eq!(c.call_timeout(&append), Duration::from_millis(125));
        let vote = RPCOption::new(Duration::from_millis(250));
        assert_eq!(c.call_timeout(&vote), Duration::from_millis(250));
    }

    // Liveness after a partition heals (L3; seed 124) with the floor in
    // place: a heartbeat call that openraft drops after one heartbeat
    // interval (before the call's own timeout) counts as a timeout when the
    // next call starts, so a dead heartbeat connection is still replaced
    // after PEER_RECONNECT_AFTER.
    #[tokio::test]
    async fn calls_dropped_by_openraft_count_as_timeouts() {
        let mut c = connection();
        c.client().expect("lazy channel");
        let t0 = tokio::time::Instant::now();
        c.call_unfinished = true; // a call was sent, then dropped
        c.count_dropped_call_at(t0);
        assert!(!c.call_unfinished);
        assert_eq!(c.timing_out_since, Some(t0));
        c.count_dropped_call_at(t0 + Duration::from_millis(50));
        assert_eq!(c.timing_out_since, Some(t0), "no call was dropped");
        c.call_unfinished = true;
        c.count_dropped_call_at(t0 + Duration::from_millis(999));
        assert!(c.client.is_some(), "kept within the first second");
        c.call_unfinished = true;
        c.count_dropped_call_at(t0 + PEER_RECONNECT_AFTER);
        assert!(
            c.client.is_none(),
            "dropped after a second of dropped calls"
        );
    }
}
