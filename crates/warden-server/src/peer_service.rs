//! The internal `Peer` gRPC service: Raft RPCs and the two-phase bootstrap of
//! the cluster id (SEMANTICS "Membership").

use std::pin::Pin;
use std::sync::{Arc, Mutex, OnceLock};

use futures::{Stream, StreamExt};
use openraft::async_runtime::WatchReceiver as _;
use serde::{de::DeserializeOwned, Serialize};
use tokio::sync::watch;
use tonic::{Request, Response, Status, Streaming};
use warden_proto::peer::peer_server::Peer;
use warden_proto::peer::{
    Blob, BootstrapId, BootstrapStateRequest, BootstrapStateResponse, TakeSnapshotRequest,
    TakeSnapshotResponse,
};

use crate::network::SnapshotEnvelope;
use crate::raft_types::{Raft, Snapshot, TypeConfig};
use crate::store::{Db, KEY_CLUSTER_ID, KEY_PREPARED_CLUSTER_ID};
use openraft::raft::{AppendEntriesRequest, AppendEntriesResponse, StreamAppendError, VoteRequest};

/// State behind the peer service.
#[derive(Debug)]
pub struct PeerState {
    /// This node.
    pub node_id: u64,
    /// The node's database (bootstrap state lives in its meta table).
    pub db: Db,
    /// Set once Raft runs.
    pub raft: OnceLock<Raft>,
    /// The committed cluster id, once known; watched by the bootstrap.
    pub cluster_id: watch::Sender<Option<String>>,
    /// True when the data dir held no Raft state at start.
    pub empty_at_start: bool,
    /// Serialises bootstrap writes.
    pub bootstrap_lock: Mutex<()>,
    /// When an AppendEntries from a leader was last accepted (`/readyz`).
    pub leader_contact: crate::health::LeaderContact,
}

/// The gRPC service.
#[derive(Clone, Debug)]
pub struct PeerService {
    state: Arc<PeerState>,
}

impl PeerService {
    /// A service over `state`.
    pub fn new(state: Arc<PeerState>) -> Self {
        PeerService { state }
    }

    fn check_cluster<T>(&self, req: &Request<T>) -> Result<Raft, Status> {
        let mine = self.state.cluster_id.borrow().clone();
        let Some(mine) = mine else {
            return Err(Status::unavailable("bootstrapping: no cluster id yet"));
        };
        let theirs = req
            .metadata()
            .get(warden_proto::CLUSTER_ID_METADATA)
            .and_then(|v| v.to_str().ok());
        if theirs != Some(mine.as_str()) {
            return Err(Status::permission_denied(format!(
                "cluster id mismatch: this node belongs to cluster {mine}, the caller sent {}",
                theirs.unwrap_or("none")
            )));
        }
        self.state
            .raft
            .get()
            .cloned()
            .ok_or_else(|| Status::unavailable("raft not started yet"))
    }

    fn bootstrap_state(&self) -> Result<BootstrapStateResponse, Status> {
        let db = &self.state.db;
        let internal = |e: std::io::Error| Status::internal(e.to_string());
        Ok(BootstrapStateResponse {
            node_id: self.state.node_id,
            prepared_cluster_id: db
                .get_meta_string(KEY_PREPARED_CLUSTER_ID)
                .map_err(internal)?
                .unwrap_or_default(),
            committed_cluster_id: db
                .get_meta_string(KEY_CLUSTER_ID)
                .map_err(internal)?
                .unwrap_or_default(),
            empty: self.state.empty_at_start,
        })
    }
}

fn decode<T: DeserializeOwned>(b: &Blob) -> Result<T, Status> {
    postcard::from_bytes(&b.data).map_err(|e| Status::invalid_argument(format!("bad payload: {e}")))
}

fn reply<T: Serialize, E: std::fmt::Display>(r: Result<T, E>) -> Result<Response<Blob>, Status> {
    let r: Result<T, String> = r.map_err(|e| e.to_string());
    let data = postcard::to_allocvec(&r).map_err(|e| Status::internal(e.to_string()))?;
    Ok(Response::new(Blob { data }))
}

/// Refuses a Raft call whose sender (the vote's node id) is this node: a
/// member's address that points at this node (a misconfigured `--peers`,
/// e.g. `localhost:7001` and `127.0.0.1:7001` for two ids) made a leader
/// replicate to itself, and openraft's core panics on its own AppendEntries
/// (found with two test nodes given one port). Typed, and nothing changes.
fn refuse_self(me: u64, sender: u64) -> Result<(), Status> {
    if sender == me {
        return Err(Status::failed_precondition(format!(
            "a Raft call from node {me} reached node {me} itself: another member's address \
             points at this node; give each member its own address in --peers"
        )));
    }
    Ok(())
}

/// openraft's answers on one replication stream.
type RaftReplies = Pin<
    Box<
        dyn Stream<
                Item = Result<
                    openraft::raft::StreamAppendResult<TypeConfig>,
                    openraft::errors::Fatal<TypeConfig>,
                >,
            > + Send
            + 'static,
    >,
>;

/// The replies of one replication stream (see [`PeerService::append_stream`]).
pub type AppendReplies = Pin<Box<dyn Stream<Item = Result<Blob, Status>> + Send + 'static>>;

#[tonic::async_trait]
impl Peer for PeerService {
    type AppendStreamStream = AppendReplies;

    /// Replication over one long-lived stream (docs/perf-worker-side.md):
    /// each request goes to openraft's `stream_append`, which answers an entry
    /// only after the log store has it on disk (S3) and answers in order. A
    /// request that does not decode, or that comes from this node itself,
    /// ends the stream with that error after the replies already due.
    async fn append_stream(
        &self,
        req: Request<Streaming<Blob>>,
    ) -> Result<Response<Self::AppendStreamStream>, Status> {
        let raft = self.check_cluster(&req)?;
        let me = self.state.node_id;
        let refused: Arc<Mutex<Option<Status>>> = Arc::default();
        let slot = refused.clone();
        let requests = req.into_inner().scan((), move |_, message| {
            let rpc = message.and_then(|b| {
                let rpc: AppendEntriesRequest<TypeConfig> = decode(&b)?;
                refuse_self(me, rpc.vote.leader_id.node_id)?;
                Ok(rpc)
            });
            let next = match rpc {
                Ok(rpc) => Some(rpc),
                Err(status) => {
                    if let Ok(mut s) = slot.lock() {
                        *s = Some(status);
                    }
                    None
                }
            };
            futures::future::ready(next)
        });
        let contact = self.state.leader_contact.clone();
        // `stream_append` spawns its reading task through openraft's runtime,
        // which derives the task's randomness seed from a task-local that
        // only Raft's own tasks carry (`raft_types::Rt`); a gRPC handler
        // enters one here. The task draws no randomness, so the seed is moot.
        let replies = crate::raft_types::Rt::scope(0, async move {
            let replies: RaftReplies = Box::pin(raft.stream_append(requests));
            replies
        })
        .await;
        let replies = replies
            .map(move |r| match r {
                Ok(result) => {
                    // As for AppendEntries: any answer but "your vote is
                    // stale" means the sender is the leader this node follows.
                    if !matches!(result, Err(StreamAppendError::HigherVote(_))) {
                        contact.touch();
                    }
                    postcard::to_allocvec(&result)
                        .map(|data| Blob { data })
                        .map_err(|e| Status::internal(e.to_string()))
                }
                Err(fatal) => Err(Status::unavailable(fatal.to_string())),
            })
            .chain(
                futures::stream::once(
                    async move { refused.lock().ok().and_then(|mut s| s.take()) },
                )
                .filter_map(|refusal| futures::future::ready(refusal.map(Err))),
            );
        Ok(Response::new(Box::pin(replies)))
    }

    async fn append_entries(&self, req: Request<Blob>) -> Result<Response<Blob>, Status> {
        let raft = self.check_cluster(&req)?;
        let rpc: openraft::raft::AppendEntriesRequest<TypeConfig> = decode(req.get_ref())?;
        refuse_self(self.state.node_id, rpc.vote.leader_id.node_id)?;
        let r = raft.append_entries(rpc).await;
        // Any answer but "your vote is stale" means the sender is the leader
        // this node follows (a log conflict is still contact).
        if matches!(&r, Ok(resp) if !matches!(resp, AppendEntriesResponse::HigherVote(_))) {
            self.state.leader_contact.touch();
        }
        reply(r)
    }

    async fn vote(&self, req: Request<Blob>) -> Result<Response<Blob>, Status> {
        let raft = self.check_cluster(&req)?;
        let rpc: VoteRequest<TypeConfig> = decode(req.get_ref())?;
        refuse_self(self.state.node_id, rpc.vote.leader_id.node_id)?;
        crate::membership::refuse_non_member(&raft, rpc.vote.leader_id.node_id)?;
        reply(raft.vote(rpc).await)
    }

    async fn pre_vote(&self, req: Request<Blob>) -> Result<Response<Blob>, Status> {
        let raft = self.check_cluster(&req)?;
        let rpc: VoteRequest<TypeConfig> = decode(req.get_ref())?;
        refuse_self(self.state.node_id, rpc.vote.leader_id.node_id)?;
        crate::membership::refuse_non_member(&raft, rpc.vote.leader_id.node_id)?;
        reply(raft.pre_vote(rpc).await)
    }

    async fn install_snapshot(&self, req: Request<Blob>) -> Result<Response<Blob>, Status> {
        let raft = self.check_cluster(&req)?;
        let env: SnapshotEnvelope = decode(req.get_ref())?;
        let snapshot = Snapshot {
            meta: env.meta,
            snapshot: env.data,
        };
        reply(raft.install_full_snapshot(env.vote, snapshot).await)
    }

    async fn transfer_leader(&self, req: Request<Blob>) -> Result<Response<Blob>, Status> {
        let raft = self.check_cluster(&req)?;
        let rpc = decode(req.get_ref())?;
        reply(raft.handle_transfer_leader(rpc).await)
    }

    async fn bootstrap_state(
        &self,
        _req: Request<BootstrapStateRequest>,
    ) -> Result<Response<BootstrapStateResponse>, Status> {
        Ok(Response::new(self.bootstrap_state()?))
    }

    async fn bootstrap_prepare(
        &self,
        req: Request<BootstrapId>,
    ) -> Result<Response<BootstrapStateResponse>, Status> {
        let id = req.into_inner().cluster_id;
        if id.is_empty() || id.len() > 64 {
            return Err(Status::invalid_argument("cluster_id: 1..=64 bytes"));
        }
        {
            let _g = self
                .state
                .bootstrap_lock
                .lock()
                .map_err(|_| Status::internal("poisoned"))?;
            let db = &self.state.db;
            let committed = db
                .get_meta_string(KEY_CLUSTER_ID)
                .map_err(|e| Status::internal(e.to_string()))?;
            if committed.is_none() {
                db.put_meta(KEY_PREPARED_CLUSTER_ID, id.as_bytes())
                    .map_err(|e| Status::internal(e.to_string()))?;
            }
        }
        Ok(Response::new(self.bootstrap_state()?))
    }

    async fn bootstrap_commit(
        &self,
        req: Request<BootstrapId>,
    ) -> Result<Response<BootstrapStateResponse>, Status> {
        let id = req.into_inner().cluster_id;
        {
            let _g = self
                .state
                .bootstrap_lock
                .lock()
                .map_err(|_| Status::internal("poisoned"))?;
            let db = &self.state.db;
            let internal = |e: std::io::Error| Status::internal(e.to_string());
            match db.get_meta_string(KEY_CLUSTER_ID).map_err(internal)? {
                Some(c) if c == id => {}
                Some(c) => {
                    return Err(Status::failed_precondition(format!(
                        "this node already belongs to cluster {c}"
                    )))
                }
                None => {
                    let prepared = db
                        .get_meta_string(KEY_PREPARED_CLUSTER_ID)
                        .map_err(internal)?;
                    if prepared.as_deref() != Some(id.as_str()) {
                        return Err(Status::failed_precondition(
                            "commit of a cluster id this node has not prepared",
                        ));
                    }
                    db.put_meta(KEY_CLUSTER_ID, id.as_bytes())
                        .map_err(internal)?;
                    self.state.cluster_id.send_replace(Some(id.clone()));
                }
            }
        }
        Ok(Response::new(self.bootstrap_state()?))
    }

    async fn take_snapshot(
        &self,
        req: Request<TakeSnapshotRequest>,
    ) -> Result<Response<TakeSnapshotResponse>, Status> {
        let raft = self.check_cluster(&req)?;
        let mut rx = raft.metrics();
        let target = rx.borrow_watched().last_applied.as_ref().map(|l| l.index());
        raft.trigger()
            .snapshot()
            .await
            .map_err(|e| Status::unavailable(e.to_string()))?;
        let wait = async {
            loop {
                let have = rx.borrow_watched().snapshot.as_ref().map(|l| l.index());
                if have >= target {
                    return;
                }
                if rx.changed().await.is_err() {
                    return;
                }
            }
        };
        tokio::time::timeout(std::time::Duration::from_secs(10), wait)
            .await
            .map_err(|_| Status::unavailable("snapshot did not complete in time"))?;
        let snap = raft
            .get_snapshot()
            .await
            .map_err(|e| Status::unavailable(e.to_string()))?
            .ok_or_else(|| Status::unavailable("no snapshot"))?;
        Ok(Response::new(TakeSnapshotResponse {
            node_id: self.state.node_id,
            index: snap
                .meta
                .last_log_id
                .as_ref()
                .map(|l| l.index())
                .unwrap_or(0),
            data: snap.snapshot,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Bad input never panics the server: a Raft call from this node itself
    // (a member's address pointing here) is refused, typed, naming the fix;
    // calls from other nodes pass.
    #[test]
    fn a_raft_call_from_this_node_itself_is_refused() {
        let e = refuse_self(3, 3).expect_err("own call");
        assert_eq!(e.code(), tonic::Code::FailedPrecondition);
        assert!(e.message().contains("node 3 itself"), "{}", e.message());
        assert!(e.message().contains("--peers"), "{}", e.message());
        refuse_self(3, 1).expect("another node");
    }
}
