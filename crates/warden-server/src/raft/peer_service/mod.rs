//! The internal `Peer` gRPC service: Raft RPCs and the two-phase bootstrap of
//! the cluster id (docs/semantics.md "Membership").
//!
//! Every call reaches a handler through [`crate::raft::peer_access::PeerGate`],
//! which has already checked the caller's certificate, its cluster id and
//! (with certificates) that this node's membership names the certificate's
//! id or a majority of its voters confirmed it, from the headers alone.
//! Each handler then checks the sender named inside the message
//! ([`PeerService::check_sender`]): never this node itself; with
//! certificates, the certificate's node id; without (insecure mode), a member
//! of the membership this node knows. `ConfirmMember` answers whether this
//! node's own membership names an id (`crate::raft::member_confirm`). Every refusal is a
//! [`PeerRefusal`], made a status in one place ([`peer_status`]).

use std::pin::Pin;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use futures::{Stream, StreamExt};
use openraft::async_runtime::WatchReceiver as _;
use serde::{de::DeserializeOwned, Serialize};
use tokio::sync::watch;
use tonic::{Request, Response, Status, Streaming};
use warden_proto::peer::peer_server::Peer;
use warden_proto::peer::{
    Blob, BootstrapId, BootstrapStateRequest, BootstrapStateResponse, MemberAnswer, MemberQuery,
    SnapshotChunk, TakeSnapshotRequest, TakeSnapshotResponse,
};

use crate::raft::cluster_time_wire::TimedAppend;
use crate::raft::network::SnapshotEnvelope;
use crate::raft::peer_access::{peer_status, PeerAccess, PeerCaller, PeerRefusal};
use crate::raft::snapshot_chunks::{Assembly, MAX_SNAPSHOT_CHUNK_BYTES};
use crate::raft::Raft;
use crate::store::{Db, KEY_CLUSTER_ID, KEY_PREPARED_CLUSTER_ID};
use crate::types::{Snapshot, TypeConfig, Vote};
use openraft::raft::{AppendEntriesResponse, StreamAppendError, VoteRequest};

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
    pub leader_contact: crate::raft::LeaderContact,
    /// When to campaign after the leader's replication stream broke.
    pub early_campaign: EarlyCampaign,
    /// Opens channels to peers (bootstrap RPCs).
    pub connector: Arc<dyn crate::raft::network::PeerConnector>,
    /// Who may call (the gate's rules and the removed node ids).
    pub access: Arc<PeerAccess>,
    /// Set just before this node's Raft shuts down: from then on every Raft
    /// call is answered `Unavailable` here, without reaching openraft, which
    /// would log an ERROR for each message its stopped core cannot take (a
    /// clean stop logs none).
    pub stopping: std::sync::atomic::AtomicBool,
    /// The log formats the log-format gate knows (set once Raft runs); a
    /// leader's AppendEntries raises its members' floor (second-hand
    /// reports).
    pub formats: OnceLock<Arc<crate::raft::log_format::LogFormats>>,
    /// Where a cluster time heard from an accepted AppendEntries goes (set
    /// once Raft runs; docs/semantics.md "Time").
    pub heard: OnceLock<Arc<crate::store::Shared>>,
}

/// How long past the leader lease a follower waits before it campaigns
/// early: the other followers' leases end a little after its own (their last
/// message from the leader may be a little later).
pub const EARLY_CAMPAIGN_MARGIN: Duration = Duration::from_millis(10);

/// Campaigning once the leader lease has passed, after the leader's
/// replication stream failed at the transport.
///
/// An openraft follower campaigns when its leader lease
/// (`election_timeout_max` after the last message from the leader, during
/// which it also refuses votes) *and then* a timeout sampled in
/// [`election_timeout_min`, `election_timeout_max`) have passed without the
/// leader (openraft 0.10.0-alpha.37: `raft_core.rs` `handle_tick_election`,
/// `utime.rs` `is_expired`). When the leader's process dies, the kernel
/// resets its connections and this node's inbound `AppendStream` fails at
/// once; the follower then starts a pre-vote (openraft's
/// `Trigger::elect(pre_vote = true)`) as soon as its lease plus
/// [`EARLY_CAMPAIGN_MARGIN`] plus a stagger by node id has passed with
/// nothing more from a leader, instead of waiting out the second timeout.
/// ZooKeeper's followers likewise start an election when the leader's socket
/// closes. The election itself is openraft's (S1): a voter whose own lease
/// is still valid refuses the pre-vote (a live leader's heartbeats keep it
/// so), and openraft's own timer still runs if this round fails.
///
/// Each break gets its own wait, due at its last contact + [`Self::delay`];
/// a campaign is dropped when due if a leader spoke or this node voted since
/// ([`campaign_still_due`]), so a later break supersedes an earlier one by
/// itself. Breaks with the same last contact (two streams failing at once)
/// are waited for once.
#[derive(Debug)]
pub struct EarlyCampaign {
    /// The leader lease plus the margin.
    after: Duration,
    /// Node id modulo 8, in eighths of the election timeout's spread: two
    /// followers that saw the same reset do not pre-vote at the same moment
    /// and split the vote.
    stagger: Duration,
    /// The last contact of the latest break waited for.
    scheduled: Mutex<Option<tokio::time::Instant>>,
}

/// One transport break of the leader's replication stream: what this node
/// knew of the leader at that moment.
#[derive(Debug, Clone, PartialEq)]
struct StreamBreak {
    /// The last accepted AppendEntries from a leader.
    contact: tokio::time::Instant,
    /// This node's vote (term and the node it follows or voted for).
    vote: Vote,
}

/// This node as a campaign finds it when it is due.
#[derive(Debug)]
struct AtDue {
    /// openraft's role for this node.
    state: openraft::ServerState,
    /// The last accepted AppendEntries from a leader.
    contact: Option<tokio::time::Instant>,
    /// This node's vote now.
    vote: Vote,
}

impl EarlyCampaign {
    /// From the node id and openraft's election timeout range (ms).
    pub fn new(node_id: u64, election_timeout_min_ms: u64, election_timeout_max_ms: u64) -> Self {
        let spread = election_timeout_max_ms.saturating_sub(election_timeout_min_ms);
        Self {
            after: Duration::from_millis(election_timeout_max_ms) + EARLY_CAMPAIGN_MARGIN,
            stagger: Duration::from_millis(spread * (node_id % 8) / 8),
            scheduled: Mutex::new(None),
        }
    }

    /// How long after the last contact with the leader this node campaigns.
    pub fn delay(&self) -> Duration {
        self.after + self.stagger
    }

    /// True when no wait is scheduled yet for a break at last contact
    /// `contact` (the caller then schedules one).
    fn first_for(&self, contact: tokio::time::Instant) -> bool {
        let mut scheduled = self
            .scheduled
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        scheduled.replace(contact) != Some(contact)
    }
}

/// Whether a campaign scheduled at break `b` is still wanted when due: this
/// node is still a follower, no AppendEntries came from a leader since, and
/// its vote is unchanged. A vote granted to a candidate since (a new term)
/// restarts openraft's own election timer, and campaigning then could take
/// the pre-vote of that very candidate while it still counts its votes and
/// depose it the moment it wins.
fn campaign_still_due(b: &StreamBreak, now: &AtDue) -> bool {
    now.state == openraft::ServerState::Follower
        && now.contact == Some(b.contact)
        && now.vote == b.vote
}

/// The leader's replication stream failed at the transport: schedule an
/// early campaign (see [`EarlyCampaign`]) for when the leader lease has
/// passed since the last contact. It is dropped if anything comes from a
/// leader before it is due, if this node voted since, or if it is no longer
/// a follower.
fn campaign_after_broken_stream(state: &Arc<PeerState>) {
    let Some(raft) = state.raft.get().cloned() else {
        return;
    };
    let Some(contact) = state.leader_contact.last() else {
        return;
    };
    if !state.early_campaign.first_for(contact) {
        return;
    }
    let b = StreamBreak {
        contact,
        vote: raft.metrics().borrow_watched().vote,
    };
    let state = state.clone();
    tokio::spawn(async move {
        let delay = state.early_campaign.delay();
        tokio::time::sleep_until(b.contact + delay).await;
        let now = {
            let m = raft.metrics();
            let m = m.borrow_watched();
            AtDue {
                state: m.state,
                contact: state.leader_contact.last(),
                vote: m.vote,
            }
        };
        if campaign_still_due(&b, &now) {
            tracing::info!(
                silent_ms = delay.as_millis() as u64,
                "the leader's replication stream broke and no leader has spoken since: campaigning (pre-vote)"
            );
            let _ = raft.trigger().elect(true).await;
        } else {
            tracing::debug!(
                state = ?now.state,
                contact_moved = now.contact != Some(b.contact),
                voted = now.vote != b.vote,
                "early campaign dropped"
            );
        }
    });
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

    /// The cluster id of `req` (the gate checked it already; checked again
    /// so that a handler is safe on its own), then the Raft handle.
    fn check_cluster<T>(&self, req: &Request<T>) -> Result<Raft, PeerRefusal> {
        self.state.access.check_cluster(req.metadata().as_ref())?;
        self.raft()
    }

    /// Takes a leader's word on the formats its members read (its
    /// request's [`warden_proto::MEMBERS_LOG_FORMAT_METADATA`], if any) as
    /// second-hand reports (`raft::log_format`). The sender passed the peer
    /// gate: it is a member.
    fn note_members_read<T>(&self, req: &Request<T>) {
        let Some(formats) = self.state.formats.get() else {
            return;
        };
        if let Some(value) = req
            .metadata()
            .get(warden_proto::MEMBERS_LOG_FORMAT_METADATA)
            .and_then(|v| v.to_str().ok())
        {
            formats.heard(&crate::raft::log_format::parse_members_header(value));
        }
    }

    fn raft(&self) -> Result<Raft, PeerRefusal> {
        if self
            .state
            .stopping
            .load(std::sync::atomic::Ordering::Acquire)
        {
            return Err(PeerRefusal::Unavailable("this node is stopping".into()));
        }
        self.state
            .raft
            .get()
            .cloned()
            .ok_or(PeerRefusal::RaftNotStarted)
    }

    /// The sender `sender` named inside a message from `caller`: never this
    /// node; with a certificate, the certificate's node; on an insecure node,
    /// a voter or learner of the committed membership once one is known
    /// (`members`: [`Membership::Committed`] for replication and
    /// snapshots, [`Membership::Latest`] for votes, as before).
    /// A refusal is logged ([`PeerAccess::refused`]) under `method`.
    fn check_sender(
        &self,
        method: &str,
        caller: PeerCaller,
        sender: u64,
        members: Membership,
    ) -> Result<(), PeerRefusal> {
        let checked = (|| {
            refuse_self(self.state.node_id, sender)?;
            caller.check_claim(sender)?;
            let insecure = !self.state.access.secure();
            match (members, self.state.raft.get()) {
                (Membership::Latest, Some(raft)) => refuse_non_member(raft, sender, false),
                (Membership::Committed, Some(raft)) if insecure => {
                    refuse_non_member(raft, sender, true)
                }
                _ => Ok(()),
            }
        })();
        if let Err(refusal) = &checked {
            self.state.access.refused(caller.remote, method, refusal);
        }
        checked
    }

    /// A bootstrap call's sender `claimed` must be the caller's certificate
    /// ([`PeerCaller::check_claim`]); a refusal is logged.
    fn check_claim<T>(&self, method: &str, req: &Request<T>, claimed: u64) -> Result<(), Status> {
        let caller = PeerCaller::of(req);
        caller.check_claim(claimed).map_err(|refusal| {
            self.state.access.refused(caller.remote, method, &refusal);
            peer_status(refusal)
        })
    }

    fn bootstrap_state(&self) -> Result<BootstrapStateResponse, PeerRefusal> {
        let db = &self.state.db;
        let internal = |e: std::io::Error| PeerRefusal::Internal(e.to_string());
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

/// Which membership judges a sender (see [`PeerService::check_sender`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Membership {
    /// The latest this node knows (openraft's effective membership).
    Latest,
    /// The committed one (in insecure mode only).
    Committed,
}

fn decode<T: DeserializeOwned>(b: &Blob) -> Result<T, PeerRefusal> {
    postcard::from_bytes(&b.data).map_err(|e| PeerRefusal::BadPayload(e.to_string()))
}

fn reply<T: Serialize, E: std::fmt::Display>(r: Result<T, E>) -> Result<Response<Blob>, Status> {
    let r: Result<T, String> = r.map_err(|e| e.to_string());
    let data =
        postcard::to_allocvec(&r).map_err(|e| peer_status(PeerRefusal::Internal(e.to_string())))?;
    let mut response = Response::new(Blob { data });
    crate::raft::log_format::advertise(&mut response);
    Ok(response)
}

/// Refuses a Raft call whose sender (the vote's node id) is this node: a
/// member's address that points at this node (a misconfigured `--peers`,
/// e.g. `localhost:7001` and `127.0.0.1:7001` for two ids) made a leader
/// replicate to itself, and openraft's core panics on its own AppendEntries
/// (found with two test nodes given one port). Typed, and nothing changes.
fn refuse_self(me: u64, sender: u64) -> Result<(), PeerRefusal> {
    if sender == me {
        return Err(PeerRefusal::FromItself { node_id: me });
    }
    Ok(())
}

/// A Raft call from `sender`: refused when this node knows a membership
/// (the committed one with `committed`, else the latest) and the sender is
/// not in it (removed, or never added).
fn refuse_non_member(raft: &Raft, sender: u64, committed: bool) -> Result<(), PeerRefusal> {
    let rx = raft.metrics();
    let m = rx.borrow_watched();
    let config = if committed {
        &m.committed_membership_config
    } else {
        &m.membership_config
    };
    let membership = config.membership();
    if membership.nodes().next().is_none() || membership.get_node(&sender).is_some() {
        return Ok(());
    }
    Err(PeerRefusal::NotAMember { node_id: sender })
}

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

/// The chunks of `TakeSnapshotStream` (see [`PeerService::take_snapshot_stream`]).
pub type SnapshotParts =
    Pin<Box<dyn Stream<Item = Result<TakeSnapshotResponse, Status>> + Send + 'static>>;

impl PeerService {
    /// A snapshot of this node's state machine built now (for
    /// `TakeSnapshot` and `TakeSnapshotStream`): the cluster id checked,
    /// then a snapshot at least as new as the last applied entry.
    async fn fresh_snapshot<T>(&self, req: &Request<T>) -> Result<Snapshot, Status> {
        let raft = self.check_cluster(req)?;
        let unavailable = |e: String| peer_status(PeerRefusal::Unavailable(e));
        let mut rx = raft.metrics();
        let target = rx.borrow_watched().last_applied.as_ref().map(|l| l.index());
        raft.trigger()
            .snapshot()
            .await
            .map_err(|e| unavailable(e.to_string()))?;
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
            .map_err(|_| unavailable("snapshot did not complete in time".into()))?;
        raft.get_snapshot()
            .await
            .map_err(|e| unavailable(e.to_string()))?
            .ok_or_else(|| unavailable("no snapshot".into()))
    }
}

/// The log index a snapshot covers (0: none).
fn snapshot_index(snapshot: &Snapshot) -> u64 {
    snapshot
        .meta
        .last_log_id
        .as_ref()
        .map(|l| l.index())
        .unwrap_or(0)
}

#[tonic::async_trait]
impl Peer for PeerService {
    type AppendStreamStream = AppendReplies;

    /// Replication over one long-lived stream (docs/perf-worker-side.md):
    /// each request goes to openraft's `stream_append`, which answers an entry
    /// only after the log store has it on disk (S3) and answers in order. A
    /// request that does not decode, or whose sender is refused
    /// ([`PeerService::check_sender`]), ends the stream with that error after
    /// the replies already due.
    async fn append_stream(
        &self,
        req: Request<Streaming<Blob>>,
    ) -> Result<Response<Self::AppendStreamStream>, Status> {
        let raft = self.check_cluster(&req)?;
        // The opening passed the peer gate (a member's certificate); its
        // frames' senders are checked one by one below.
        self.note_members_read(&req);
        let caller = PeerCaller::of(&req);
        let refused: Arc<Mutex<Option<Status>>> = Arc::default();
        let slot = refused.clone();
        let state = self.state.clone();
        let service = self.clone();
        let times: Arc<Mutex<std::collections::VecDeque<Option<(u64, u64)>>>> = Arc::default();
        let times_in = times.clone();
        let heard = self.state.heard.get().cloned();
        // Only a stream that carried a frame from an admitted leader may
        // start an early campaign when it breaks: a stream opened and cut
        // by anyone else says nothing about the leader.
        let requests = req
            .into_inner()
            .scan(false, move |admitted_frame, message| {
                if message.is_err() && *admitted_frame {
                    campaign_after_broken_stream(&state);
                }
                let rpc = message.and_then(|b| {
                    let TimedAppend {
                        cluster_time_ms,
                        rpc,
                    } = decode(&b)?;
                    service.check_sender(
                        "AppendStream",
                        caller,
                        rpc.vote.leader_id.node_id,
                        Membership::Committed,
                    )?;
                    *admitted_frame = true;
                    // Answered in order: the reply to this frame takes it.
                    if let Ok(mut t) = times_in.lock() {
                        t.push_back(cluster_time_ms.map(|at| (at, rpc.vote.leader_id.term)));
                    }
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
        let replies = crate::types::Rt::scope(0, async move {
            let replies: RaftReplies = Box::pin(raft.stream_append(requests));
            replies
        })
        .await;
        let replies = replies
            .map(move |r| match r {
                Ok(result) => {
                    let time = times.lock().ok().and_then(|mut t| t.pop_front()).flatten();
                    // As for AppendEntries: any answer but "your vote is
                    // stale" means the sender is the leader this node follows.
                    if !matches!(result, Err(StreamAppendError::HigherVote(_))) {
                        contact.touch();
                        if let (Some((t, term)), Some(shared)) = (time, &heard) {
                            crate::raft::cluster_time_wire::heard(shared, t, term);
                        }
                    }
                    postcard::to_allocvec(&result)
                        .map(|data| Blob { data })
                        .map_err(|e| peer_status(PeerRefusal::Internal(e.to_string())))
                }
                Err(fatal) => Err(peer_status(PeerRefusal::Unavailable(fatal.to_string()))),
            })
            .chain(
                futures::stream::once(
                    async move { refused.lock().ok().and_then(|mut s| s.take()) },
                )
                .filter_map(|refusal| futures::future::ready(refusal.map(Err))),
            );
        let mut response: Response<Self::AppendStreamStream> = Response::new(Box::pin(replies));
        crate::raft::log_format::advertise(&mut response);
        Ok(response)
    }

    async fn append_entries(&self, req: Request<Blob>) -> Result<Response<Blob>, Status> {
        self.check_cluster(&req)?;
        let TimedAppend {
            cluster_time_ms,
            rpc,
        } = decode(req.get_ref())?;
        self.check_sender(
            "AppendEntries",
            PeerCaller::of(&req),
            rpc.vote.leader_id.node_id,
            Membership::Committed,
        )?;
        self.note_members_read(&req);
        let term = rpc.vote.leader_id.term;
        let r = self.raft()?.append_entries(rpc).await;
        // Any answer but "your vote is stale" means the sender is the leader
        // this node follows (a log conflict is still contact).
        if matches!(&r, Ok(resp) if !matches!(resp, AppendEntriesResponse::HigherVote(_))) {
            self.state.leader_contact.touch();
            if let (Some(t), Some(shared)) = (cluster_time_ms, self.state.heard.get()) {
                crate::raft::cluster_time_wire::heard(shared, t, term);
            }
        }
        reply(r)
    }

    async fn vote(&self, req: Request<Blob>) -> Result<Response<Blob>, Status> {
        self.check_cluster(&req)?;
        let rpc: VoteRequest<TypeConfig> = decode(req.get_ref())?;
        self.check_sender(
            "Vote",
            PeerCaller::of(&req),
            rpc.vote.leader_id.node_id,
            Membership::Latest,
        )?;
        reply(self.raft()?.vote(rpc).await)
    }

    async fn pre_vote(&self, req: Request<Blob>) -> Result<Response<Blob>, Status> {
        self.check_cluster(&req)?;
        let rpc: VoteRequest<TypeConfig> = decode(req.get_ref())?;
        self.check_sender(
            "PreVote",
            PeerCaller::of(&req),
            rpc.vote.leader_id.node_id,
            Membership::Latest,
        )?;
        reply(self.raft()?.pre_vote(rpc).await)
    }

    async fn install_snapshot(&self, req: Request<Blob>) -> Result<Response<Blob>, Status> {
        self.check_cluster(&req)?;
        let env: SnapshotEnvelope = decode(req.get_ref())?;
        self.check_sender(
            "InstallSnapshot",
            PeerCaller::of(&req),
            env.vote.leader_id.node_id,
            Membership::Committed,
        )?;
        let snapshot = Snapshot {
            meta: env.meta,
            snapshot: env.data,
        };
        reply(self.raft()?.install_full_snapshot(env.vote, snapshot).await)
    }

    /// A snapshot in chunks (`crate::raft::snapshot_chunks`): the gate
    /// admitted the caller from the headers (node certificate, not removed,
    /// this cluster's id) before this reads a chunk; the first chunk's head
    /// names the sender, checked as InstallSnapshot's envelope is; then every
    /// chunk is bounded, the whole checked against the head, and installed
    /// as InstallSnapshot installs it. A refusal installs nothing.
    async fn install_snapshot_stream(
        &self,
        req: Request<Streaming<SnapshotChunk>>,
    ) -> Result<Response<Blob>, Status> {
        self.check_cluster(&req)?;
        let caller = PeerCaller::of(&req);
        let mut chunks = req.into_inner();
        // tonic refuses a chunk message above the gate's decode bound
        // (`OutOfRange`, naming the limit) before buffering it; anything
        // else is the transport failing under the stream.
        let broke = |s: Status| {
            peer_status(if s.code() == tonic::Code::OutOfRange {
                PeerRefusal::TooLarge(format!("snapshot chunk: {}", s.message()))
            } else {
                PeerRefusal::Unavailable(format!("snapshot stream: {}", s.message()))
            })
        };
        let first = chunks.message().await.map_err(broke)?;
        let (head, first) = Assembly::head(first).map_err(PeerRefusal::from)?;
        self.check_sender(
            "InstallSnapshotStream",
            caller,
            head.vote.leader_id.node_id,
            Membership::Committed,
        )?;
        let mut assembly = Assembly::new(&head).map_err(PeerRefusal::from)?;
        assembly.push(first).map_err(PeerRefusal::from)?;
        // Up to the chunk marked `done`; an end of stream before it is
        // refused by `finish`.
        while !assembly.is_done() {
            let Some(chunk) = chunks.message().await.map_err(broke)? else {
                break;
            };
            assembly.push(chunk).map_err(PeerRefusal::from)?;
        }
        let snapshot = Snapshot {
            meta: head.meta,
            snapshot: assembly.finish().map_err(PeerRefusal::from)?,
        };
        reply(
            self.raft()?
                .install_full_snapshot(head.vote, snapshot)
                .await,
        )
    }

    async fn transfer_leader(&self, req: Request<Blob>) -> Result<Response<Blob>, Status> {
        self.check_cluster(&req)?;
        let rpc: openraft::raft::TransferLeaderRequest<TypeConfig> = decode(req.get_ref())?;
        self.check_sender(
            "TransferLeader",
            PeerCaller::of(&req),
            rpc.from_leader().leader_id.node_id,
            Membership::Committed,
        )?;
        reply(self.raft()?.handle_transfer_leader(rpc).await)
    }

    async fn bootstrap_state(
        &self,
        req: Request<BootstrapStateRequest>,
    ) -> Result<Response<BootstrapStateResponse>, Status> {
        self.check_claim("BootstrapState", &req, req.get_ref().from_node_id)?;
        Ok(Response::new(self.bootstrap_state()?))
    }

    async fn bootstrap_prepare(
        &self,
        req: Request<BootstrapId>,
    ) -> Result<Response<BootstrapStateResponse>, Status> {
        self.check_claim("BootstrapPrepare", &req, req.get_ref().from_node_id)?;
        let id = req.into_inner().cluster_id;
        if id.is_empty() || id.len() > 64 {
            return Err(PeerRefusal::BadPayload("cluster_id: 1..=64 bytes".into()).into());
        }
        {
            let _g = self
                .state
                .bootstrap_lock
                .lock()
                .map_err(|_| PeerRefusal::Internal("poisoned".into()))?;
            let db = &self.state.db;
            let internal = |e: std::io::Error| PeerRefusal::Internal(e.to_string());
            let committed = db.get_meta_string(KEY_CLUSTER_ID).map_err(internal)?;
            if committed.is_none() {
                db.put_meta(KEY_PREPARED_CLUSTER_ID, id.as_bytes())
                    .map_err(internal)?;
            }
        }
        Ok(Response::new(self.bootstrap_state()?))
    }

    async fn bootstrap_commit(
        &self,
        req: Request<BootstrapId>,
    ) -> Result<Response<BootstrapStateResponse>, Status> {
        self.check_claim("BootstrapCommit", &req, req.get_ref().from_node_id)?;
        let id = req.into_inner().cluster_id;
        {
            let _g = self
                .state
                .bootstrap_lock
                .lock()
                .map_err(|_| PeerRefusal::Internal("poisoned".into()))?;
            let db = &self.state.db;
            let internal = |e: std::io::Error| PeerRefusal::Internal(e.to_string());
            match db.get_meta_string(KEY_CLUSTER_ID).map_err(internal)? {
                Some(c) if c == id => {}
                Some(c) => {
                    return Err(PeerRefusal::Precondition(format!(
                        "this node already belongs to cluster {c}"
                    ))
                    .into())
                }
                None => {
                    let prepared = db
                        .get_meta_string(KEY_PREPARED_CLUSTER_ID)
                        .map_err(internal)?;
                    if prepared.as_deref() != Some(id.as_str()) {
                        return Err(PeerRefusal::Precondition(
                            "commit of a cluster id this node has not prepared".into(),
                        )
                        .into());
                    }
                    db.put_meta(KEY_CLUSTER_ID, id.as_bytes())
                        .map_err(internal)?;
                    self.state.cluster_id.send_replace(Some(id.clone()));
                }
            }
        }
        Ok(Response::new(self.bootstrap_state()?))
    }

    /// Whether this node's own membership names `node_id` (voter or
    /// learner, not removed): asked by a node that got a Raft call from an
    /// id it does not know (`crate::raft::member_confirm`). The gate
    /// checked the asker's certificate and cluster id; the asker must be
    /// the certificate's node. Answers from this node's log or snapshot
    /// only, never from a confirmation it made itself.
    async fn confirm_member(
        &self,
        req: Request<MemberQuery>,
    ) -> Result<Response<MemberAnswer>, Status> {
        self.check_claim("ConfirmMember", &req, req.get_ref().from_node_id)?;
        self.check_cluster(&req)?;
        let node_id = req.get_ref().node_id;
        Ok(Response::new(MemberAnswer {
            node_id: self.state.node_id,
            member: self.state.access.is_member(node_id),
        }))
    }

    /// The whole state machine: a node certificate only (the gate), as every
    /// Peer call.
    async fn take_snapshot(
        &self,
        req: Request<TakeSnapshotRequest>,
    ) -> Result<Response<TakeSnapshotResponse>, Status> {
        let snap = self.fresh_snapshot(&req).await?;
        Ok(Response::new(TakeSnapshotResponse {
            node_id: self.state.node_id,
            index: snapshot_index(&snap),
            data: snap.snapshot,
        }))
    }

    type TakeSnapshotStreamStream = SnapshotParts;

    /// The whole state machine as `TakeSnapshot` returns it, in messages of
    /// at most [`MAX_SNAPSHOT_CHUNK_BYTES`] of data each (at least one):
    /// the same checks (a node certificate only, at the gate; the cluster
    /// id). Complete when the stream ends with status OK.
    async fn take_snapshot_stream(
        &self,
        req: Request<TakeSnapshotRequest>,
    ) -> Result<Response<Self::TakeSnapshotStreamStream>, Status> {
        let snap = self.fresh_snapshot(&req).await?;
        let node_id = self.state.node_id;
        let index = snapshot_index(&snap);
        let data = Arc::new(snap.snapshot);
        let count = data.len().div_ceil(MAX_SNAPSHOT_CHUNK_BYTES).max(1);
        let parts = futures::stream::iter(0..count).map(move |i| {
            let start = (i * MAX_SNAPSHOT_CHUNK_BYTES).min(data.len());
            let end = (start + MAX_SNAPSHOT_CHUNK_BYTES).min(data.len());
            Ok(TakeSnapshotResponse {
                node_id,
                index,
                data: data[start..end].to_vec(),
            })
        });
        Ok(Response::new(Box::pin(parts)))
    }
}

#[cfg(test)]
mod tests;
