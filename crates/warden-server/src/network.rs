//! The peer network: openraft's RPCs over the internal gRPC `Peer` service.
//!
//! Payloads are postcard-encoded openraft messages inside a `Blob`; the reply
//! blob is a postcard `Result<Response, String>`. Every call carries the
//! cluster id in the `warden-cluster-id` metadata entry (SEMANTICS
//! "Membership"), and the receiver refuses a mismatch.

use std::future::Future;
use std::time::Duration;

use openraft::errors::{NetworkError, RPCError, ReplicationClosed, StreamingError, Unreachable};
use openraft::network::{RPCOption, RaftNetworkFactory};
use openraft::raft::{
    AppendEntriesRequest, AppendEntriesResponse, SnapshotResponse, TransferLeaderRequest,
    TransferLeaderResponse, VoteRequest, VoteResponse,
};
use openraft::{AnyError, BasicNode, RaftNetworkV2};
use serde::{de::DeserializeOwned, Serialize};
use tonic::transport::{Channel, Endpoint};
use warden_proto::peer::peer_client::PeerClient;
use warden_proto::peer::Blob;

use crate::raft_types::{Snapshot, SnapshotMeta, TypeConfig, Vote};

/// Largest gRPC message between peers (snapshots travel whole): 256 MiB.
pub const MAX_PEER_MESSAGE_BYTES: usize = 256 * 1024 * 1024;

/// How long a peer's calls may keep timing out, with no answer in between,
/// before its connection is dropped and a new one opened: 1 s. A connection
/// that lost bytes to a partition can stay open yet never deliver again (or
/// only after TCP's retransmit backoff); a leader that kept it timed out
/// towards that peer forever after the heal, never reached a quorum and never
/// stepped down, so no call was served (found by the simulator: seed 124 with
/// `--fault-secs 60`). Not at the first timeout: openraft's append and
/// heartbeat calls time out after one heartbeat interval (50 ms), and a
/// connection being opened must get the time to finish.
pub const PEER_RECONNECT_AFTER: Duration = Duration::from_secs(1);

/// Builds connections to peers.
#[derive(Clone, Debug)]
pub struct Network {
    cluster_id: String,
}

impl Network {
    /// A network that stamps `cluster_id` on every call.
    pub fn new(cluster_id: String) -> Self {
        Network { cluster_id }
    }
}

/// Opens a lazily connected channel to `addr` ("host:port") through the
/// process's peer connector (TCP; the simulator injects its own network,
/// see [`crate::inject::set_peer_connector`]).
pub fn channel(addr: &str) -> Result<Channel, tonic::transport::Error> {
    let endpoint = Endpoint::from_shared(format!("http://{addr}"))?
        .connect_timeout(Duration::from_millis(500))
        .tcp_nodelay(true);
    Ok(crate::inject::peer_connector().channel(endpoint))
}

impl RaftNetworkFactory<TypeConfig> for Network {
    type Network = PeerConnection;

    async fn new_client(&mut self, target: u64, node: &BasicNode) -> Self::Network {
        PeerConnection {
            target,
            addr: node.addr.clone(),
            cluster_id: self.cluster_id.clone(),
            client: None,
            timing_out_since: None,
        }
    }
}

/// One peer.
pub struct PeerConnection {
    target: u64,
    addr: String,
    cluster_id: String,
    client: Option<PeerClient<Channel>>,
    /// When this peer's calls started timing out (None: the last call was
    /// answered). See [`PEER_RECONNECT_AFTER`].
    timing_out_since: Option<tokio::time::Instant>,
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
    /// A call timed out: after [`PEER_RECONNECT_AFTER`] of nothing but
    /// timeouts, drop the connection so the next call opens a new one.
    fn timed_out(&mut self) {
        self.timed_out_at(tokio::time::Instant::now());
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
                self.client = None;
                self.timing_out_since = None;
            }
            Some(_) => {}
        }
    }

    fn client(&mut self) -> Result<PeerClient<Channel>, RPCError<TypeConfig>> {
        if self.client.is_none() {
            let ch = channel(&self.addr)
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
        if let Ok(v) = self.cluster_id.parse() {
            request
                .metadata_mut()
                .insert(warden_proto::CLUSTER_ID_METADATA, v);
        }
        let client = self.client()?;
        let reply = match tokio::time::timeout(timeout, f(client, request)).await {
            Err(_) => {
                self.timed_out();
                return Err(unreachable(format!("peer {}: timed out", self.target)));
            }
            Ok(Err(status)) => {
                if status.code() == tonic::Code::Unavailable
                    || status.code() == tonic::Code::Unknown
                {
                    // Drop the channel so the next call reconnects.
                    self.client = None;
                    return Err(unreachable(format!(
                        "peer {}: {}",
                        self.target,
                        status.message()
                    )));
                }
                if status.code() == tonic::Code::Cancelled
                    || status.code() == tonic::Code::DeadlineExceeded
                {
                    // The call timed out ("Timeout expired" is tonic's own
                    // deadline from `set_timeout`).
                    self.timed_out();
                } else {
                    self.timing_out_since = None;
                }
                return Err(network(format!(
                    "peer {}: {}",
                    self.target,
                    status.message()
                )));
            }
            Ok(Ok(r)) => {
                self.timing_out_since = None;
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
        self.call(&rpc, option.hard_ttl(), |mut c, r| async move {
            c.append_entries(r).await
        })
        .await
    }

    async fn vote(
        &mut self,
        rpc: VoteRequest<TypeConfig>,
        option: RPCOption,
    ) -> Result<VoteResponse<TypeConfig>, RPCError<TypeConfig>> {
        self.call(&rpc, option.hard_ttl(), |mut c, r| async move {
            c.vote(r).await
        })
        .await
    }

    async fn pre_vote(
        &mut self,
        rpc: VoteRequest<TypeConfig>,
        option: RPCOption,
    ) -> Result<VoteResponse<TypeConfig>, RPCError<TypeConfig>> {
        self.call(&rpc, option.hard_ttl(), |mut c, r| async move {
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
        self.call(&req, option.hard_ttl(), |mut c, r| async move {
            c.transfer_leader(r).await
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn connection() -> PeerConnection {
        PeerConnection {
            target: 2,
            addr: "127.0.0.1:1".into(),
            cluster_id: "c".into(),
            client: None,
            timing_out_since: None,
        }
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
    // a link that only sometimes exceeds the 50 ms call timeout).
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
}
