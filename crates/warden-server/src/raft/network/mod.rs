//! The peer network: openraft's RPCs over the internal gRPC `Peer` service.
//!
//! Payloads are postcard-encoded openraft messages inside a `Blob`; the reply
//! blob is a postcard `Result<Response, String>`. Every call carries the
//! cluster id in the `warden-cluster-id` metadata entry (docs/semantics.md
//! "Membership and data loss"), and the receiver refuses a mismatch.
//!
//! Replication (openraft's `stream_append`) runs over one `AppendStream` per
//! session: each AppendEntries is one message on a stream already open, its
//! answer a postcard `StreamAppendResult` ([`AppendStream`]). Heartbeats,
//! votes and transfer-leader are unary calls.
//!
//! A snapshot travels on one `InstallSnapshotStream` in chunks of at most
//! 1 MiB, the first carrying the vote and the snapshot meta, the last marked
//! done (`crate::raft::snapshot_chunks`); each chunk has its own timeout,
//! so the transfer's time scales with the snapshot. A peer that answers
//! the stream `Unimplemented` (an older binary) gets the whole snapshot in
//! one unary `InstallSnapshot`, as before, from then on on that connection
//! ([`snapshot_send`]).
//!
//! Every answer reports the log format the peer reads (the
//! `warden-log-format` header); each connection records it in the node's
//! [`LogFormats`] and forgets it when it drops its channel (see
//! [`crate::raft::log_format`]: the log-format gate).
//!
//! Failed calls are logged once per streak and then summarised per peer
//! ([`failures`]), not once per heartbeat.

use std::collections::VecDeque;
use std::fmt::Debug;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use futures::{Stream, StreamExt};
use openraft::base::{BoxFuture, BoxStream};
use openraft::errors::{
    NetworkError, RPCError, ReplicationClosed, StreamingError, Timeout, Unreachable,
};
use openraft::network::{stream_append_sequential, RPCOption, RPCTypes, RaftNetworkFactory};
use openraft::raft::{
    AppendEntriesRequest, AppendEntriesResponse, SnapshotResponse, StreamAppendResult,
    TransferLeaderRequest, TransferLeaderResponse, VoteRequest, VoteResponse,
};
use openraft::{AnyError, RaftNetworkV2};
use serde::{de::DeserializeOwned, Serialize};
use tokio::sync::mpsc;
use tokio_stream::wrappers::UnboundedReceiverStream;
use tonic::transport::{Channel, Endpoint};
use warden_proto::peer::peer_client::PeerClient;
use warden_proto::peer::Blob;

use crate::raft::cluster_time_wire::ClusterTimeSource;
use crate::raft::log_format::{reported_format, LogFormats};
use crate::raft::snapshot_chunks::MAX_SNAPSHOT_CHUNK_BYTES;
use crate::types::{MemberAddr, Snapshot, SnapshotMeta, TypeConfig, Vote};
use failures::PeerFailures;

/// Largest gRPC message between peers: 256 MiB. Still this large for two
/// messages: an AppendEntries batch (up to openraft's `max_payload_entries`,
/// 300, of packed commands, with no smaller bound that always holds), and
/// the unary InstallSnapshot (a whole snapshot) that a binary from before
/// `InstallSnapshotStream` sends and receives during a rolling upgrade.
/// Snapshot chunks have their own bound
/// ([`crate::raft::snapshot_chunks::MAX_SNAPSHOT_CHUNK_MESSAGE_BYTES`]).
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
/// timeout (125 ms with the `lan` preset's 250 ms, 500 ms with `wan`'s 1 s;
/// `cluster status` shows it). A call's timeout is the larger
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
    Duration::from_millis(crate::config::call_timeout_floor_ms(
        election_timeout_min_ms,
    ))
}

/// Builds connections to peers.
#[derive(Clone, Debug)]
pub struct Network {
    cluster_id: String,
    call_timeout_floor: Duration,
    formats: Arc<LogFormats>,
    /// This node's cluster time as leader, sent with every AppendEntries.
    cluster_time: ClusterTimeSource,
    connector: Arc<dyn PeerConnector>,
    /// Every connection's failed calls, per peer (logged once, then summarised).
    failures: Arc<PeerFailures>,
    /// Most snapshot bytes per chunk sent.
    snapshot_chunk_bytes: usize,
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
            cluster_time: None,
            connector,
            failures: Arc::new(PeerFailures::default()),
            snapshot_chunk_bytes: MAX_SNAPSHOT_CHUNK_BYTES,
        }
    }

    /// The same network sending `cluster_time` (this node's cluster time as
    /// leader) with every AppendEntries (docs/semantics.md "Time").
    pub fn with_cluster_time(mut self, cluster_time: ClusterTimeSource) -> Self {
        self.cluster_time = cluster_time;
        self
    }

    /// The same network sending snapshots in chunks of at most
    /// `chunk_bytes` (clamped to 1 ..= [`MAX_SNAPSHOT_CHUNK_BYTES`]; the
    /// default is the largest): for tests that need a snapshot of many
    /// chunks without a table of many MiB.
    pub fn with_snapshot_chunk_bytes(mut self, chunk_bytes: usize) -> Self {
        self.snapshot_chunk_bytes = chunk_bytes.clamp(1, MAX_SNAPSHOT_CHUNK_BYTES);
        self
    }
}

/// Opens channels to peers. Production: plain TCP on an insecure node
/// ([`TcpConnector`]), TLS with the node certificate on a secure one
/// ([`TlsPeerConnector`]); the simulator injects its own network
/// ([`crate::inject::Injected`]).
pub trait PeerConnector: Send + Sync + Debug + 'static {
    /// A lazily connected channel to node `peer_id` at `endpoint`
    /// (`http://host:port`). A connector that authenticates peers must
    /// refuse a server that is not node `peer_id`.
    fn channel(&self, peer_id: u64, endpoint: Endpoint) -> Channel;
}

/// The insecure node's connector: plain TCP.
#[derive(Debug)]
pub struct TcpConnector;

impl PeerConnector for TcpConnector {
    fn channel(&self, _peer_id: u64, endpoint: Endpoint) -> Channel {
        endpoint.connect_lazy()
    }
}

/// The secure node's connector: TLS 1.3 with this node's certificate as
/// the client identity; the server reached must present node `peer_id`'s
/// certificate from the node's CA bundle (`warden_tls::NodeTls::peer_connector`),
/// checked before a byte of HTTP/2 is sent. Each new connection reads the
/// certificates installed at that moment, so a SIGHUP reload applies to the
/// next connection and established channels go on.
#[derive(Debug, Clone)]
pub struct TlsPeerConnector(pub warden_tls::NodeTls);

impl PeerConnector for TlsPeerConnector {
    fn channel(&self, peer_id: u64, endpoint: Endpoint) -> Channel {
        endpoint.connect_with_connector_lazy(self.0.peer_connector(peer_id))
    }
}

/// Opens a lazily connected channel to node `peer_id` at `addr`
/// ("host:port") through `connector`.
pub fn channel(
    connector: &dyn PeerConnector,
    peer_id: u64,
    addr: &str,
) -> Result<Channel, tonic::transport::Error> {
    let endpoint = Endpoint::from_shared(format!("http://{addr}"))?
        .connect_timeout(Duration::from_millis(500))
        .tcp_nodelay(true);
    Ok(connector.channel(peer_id, endpoint))
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
    /// A connection to `target`'s peer service: its peer address when it
    /// serves one apart (`--peer-listen`), else its client address.
    fn connection(&self, target: u64, node: &MemberAddr, streaming: bool) -> PeerConnection {
        PeerConnection {
            target,
            addr: node.dial_addr().to_string(),
            cluster_id: self.cluster_id.clone(),
            call_timeout_floor: self.call_timeout_floor,
            formats: self.formats.clone(),
            cluster_time: self.cluster_time.clone(),
            connector: self.connector.clone(),
            failures: self.failures.clone(),
            client: None,
            timing_out_since: None,
            timeouts_unreported: 0,
            call_unfinished: false,
            streaming,
            snapshot_stream: true,
            snapshot_chunk_bytes: self.snapshot_chunk_bytes,
            snapshot_chunk_timeout_floor: snapshot_send::SNAPSHOT_CHUNK_TIMEOUT_FLOOR,
        }
    }
}

impl RaftNetworkFactory<TypeConfig> for Network {
    type Network = PeerConnection;

    /// Replication: AppendEntries over one `AppendStream` per session.
    async fn new_client(&mut self, target: u64, node: &MemberAddr) -> Self::Network {
        self.connection(target, node, true)
    }

    /// Heartbeats: one unary AppendEntries each (openraft sends a heartbeat
    /// as a stream of one request; a gRPC stream per heartbeat would cost
    /// more than the call).
    async fn new_heartbeat_client(&mut self, target: u64, node: &MemberAddr) -> Self::Network {
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
    /// This node's cluster time as leader (shared).
    pub(super) cluster_time: ClusterTimeSource,
    /// Opens this peer's channel.
    connector: Arc<dyn PeerConnector>,
    /// The node's record of failed calls (shared by its connections).
    failures: Arc<PeerFailures>,
    client: Option<PeerClient<Channel>>,
    /// When this peer's calls started timing out (None: the last call was
    /// answered). See [`PEER_RECONNECT_AFTER`].
    timing_out_since: Option<tokio::time::Instant>,
    /// Calls that timed out since `timing_out_since` and are not logged yet
    /// (see `timed_out_at`).
    timeouts_unreported: u64,
    /// A call was sent and has not returned: when the next call starts with
    /// this still set, openraft dropped the last call before its answer (the
    /// heartbeat worker's own timeout), and that counts as a timeout.
    call_unfinished: bool,
    /// Replicate over `AppendStream` (false: one unary AppendEntries per
    /// request, for heartbeats and for a peer that does not know the stream).
    streaming: bool,
    /// Send snapshots over `InstallSnapshotStream` (false: the peer answered
    /// it `Unimplemented`; one unary InstallSnapshot each, [`snapshot_send`]).
    snapshot_stream: bool,
    /// Most snapshot bytes per chunk.
    snapshot_chunk_bytes: usize,
    /// See [`snapshot_send::SNAPSHOT_CHUNK_TIMEOUT_FLOOR`] (shorter only in
    /// tests of a stalled transfer).
    snapshot_chunk_timeout_floor: Duration,
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

pub(super) fn unreachable(msg: String) -> RPCError<TypeConfig> {
    RPCError::Unreachable(Unreachable::new(&AnyError::error(msg)))
}

pub(super) fn network(msg: String) -> RPCError<TypeConfig> {
    RPCError::Network(NetworkError::new(&AnyError::error(msg)))
}

impl PeerConnection {
    /// The timeout of a call whose openraft option is `option`: the larger of
    /// its `hard_ttl` and [`call_timeout_floor`].
    fn call_timeout(&self, option: &RPCOption) -> Duration {
        option.hard_ttl().max(self.call_timeout_floor)
    }

    /// The error of a call of `action` to this peer that got no answer
    /// within `timeout`: openraft's `Timeout`, not `Unreachable`.
    ///
    /// openraft ranks a replication error before it starts the next session:
    /// `Unreachable` (100) pauses replication to that follower at once for its
    /// backoff (200 ms by default), `Timeout` (2) only after more than ten
    /// failures in a row (`errors/mod.rs`, `backoff_rank`; the threshold 20 is
    /// in `replication/backoff_state.rs`). A timeout is often this node
    /// running late, not the peer: on a busy node the timer wakes the call
    /// before the connection's task has read the answer that is already in
    /// its socket, so both followers time out together. As Unreachable, every
    /// such timeout paused the commit of every write by 200 ms: 84 of them in
    /// 80 s while 100,000 expired leases were handed to their waiters, and a
    /// separate client's acquire p99 was 0.46-3.3 s. A peer that is really
    /// gone still backs off: its timeouts add up past the threshold, and a
    /// refused connection is `Unreachable`.
    fn timeout_error(&self, action: RPCTypes, timeout: Duration) -> RPCError<TypeConfig> {
        RPCError::Timeout(Timeout {
            action,
            id: self.formats.me(),
            target: self.target,
            timeout,
        })
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

    /// Also what is logged: a timeout alone (a heartbeat dropped on a busy
    /// node, answered the next time) is not a failure; the calls of a run of
    /// timeouts are, once it has lasted [`PEER_RECONNECT_AFTER`].
    fn timed_out_at(&mut self, now: tokio::time::Instant) {
        self.timeouts_unreported += 1;
        match self.timing_out_since {
            None => self.timing_out_since = Some(now),
            Some(since) if now.duration_since(since) >= PEER_RECONNECT_AFTER => {
                let calls = std::mem::take(&mut self.timeouts_unreported);
                self.failures.failed(
                    self.target,
                    calls,
                    &format!(
                        "no answer for {} ms (calls timed out)",
                        now.duration_since(since).as_millis()
                    ),
                );
                // Reported (once per streak, then summarised) by
                // `failures` above; the reconnect itself is a detail.
                tracing::debug!(
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
        self.answered_now();
        self.formats.record(self.target, reported_format(metadata));
    }

    /// A call (or a message on the append stream) was answered.
    fn answered_now(&mut self) {
        self.timing_out_since = None;
        self.timeouts_unreported = 0;
        self.failures.answered(self.target);
    }

    fn client(&mut self) -> Result<PeerClient<Channel>, RPCError<TypeConfig>> {
        if self.client.is_none() {
            let ch = channel(self.connector.as_ref(), self.target, &self.addr)
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

    /// Stamps the cluster id, and the formats this node knows its members
    /// read (`raft::log_format`, second-hand reports), on a Raft request.
    fn stamp_cluster_id<T>(&self, request: &mut tonic::Request<T>) {
        if let Ok(v) = self.cluster_id.parse() {
            request
                .metadata_mut()
                .insert(warden_proto::CLUSTER_ID_METADATA, v);
        }
        if let Some(members) = self.formats.members_header() {
            request
                .metadata_mut()
                .insert(warden_proto::MEMBERS_LOG_FORMAT_METADATA, members);
        }
    }

    /// What a failed call's status means for this connection: a reset or
    /// unknown error drops the channel (the next call reconnects), a timeout
    /// counts toward [`PEER_RECONNECT_AFTER`], anything else is an answer.
    fn failed(&mut self, status: &tonic::Status) -> RPCError<TypeConfig> {
        let code = status.code();
        if code != tonic::Code::Cancelled && code != tonic::Code::DeadlineExceeded {
            // A timeout is recorded by `timed_out`.
            self.failures
                .failed(self.target, 1, &format!("{code:?}: {}", status.message()));
        }
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
            self.timeouts_unreported = 0;
        }
        network(format!("peer {}: {}", self.target, status.message()))
    }

    async fn call<Req, Resp, F, Fut>(
        &mut self,
        action: RPCTypes,
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
                return Err(self.timeout_error(action, timeout));
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
        let timed = crate::raft::cluster_time_wire::timed(&self.cluster_time, rpc);
        self.call(
            RPCTypes::AppendEntries,
            &timed,
            self.call_timeout(&option),
            |mut c, r| async move { c.append_entries(r).await },
        )
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
                    return Err(self.timeout_error(RPCTypes::AppendEntries, timeout));
                }
                Ok(Err(status)) if status.code() == tonic::Code::Unimplemented => {
                    tracing::info!(
                        peer = self.target,
                        "peer has no append stream; replicating with one call per AppendEntries"
                    );
                    self.streaming = false;
                    // A binary without the stream reports no format either.
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
        self.call(
            RPCTypes::Vote,
            &rpc,
            self.call_timeout(&option),
            |mut c, r| async move { c.vote(r).await },
        )
        .await
    }

    async fn pre_vote(
        &mut self,
        rpc: VoteRequest<TypeConfig>,
        option: RPCOption,
    ) -> Result<VoteResponse<TypeConfig>, RPCError<TypeConfig>> {
        self.call(
            RPCTypes::Vote,
            &rpc,
            self.call_timeout(&option),
            |mut c, r| async move { c.pre_vote(r).await },
        )
        .await
    }

    /// A snapshot in chunks, or in one call to an older peer; see
    /// [`snapshot_send`] for the timeouts. `cancel` ends the transfer at
    /// once, whichever chunk it is at.
    async fn full_snapshot(
        &mut self,
        vote: Vote,
        snapshot: Snapshot,
        cancel: impl Future<Output = ReplicationClosed> + openraft::OptionalSend + 'static,
        option: RPCOption,
    ) -> Result<SnapshotResponse<TypeConfig>, StreamingError<TypeConfig>> {
        let fut = self.send_snapshot(vote, snapshot, &option);
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
        self.call(
            RPCTypes::TransferLeader,
            &req,
            self.call_timeout(&option),
            |mut c, r| async move { c.transfer_leader(r).await },
        )
        .await
    }
}

mod append_stream;
pub mod failures;
pub mod snapshot_send;
#[cfg(test)]
mod tests;

use append_stream::AppendStream;
