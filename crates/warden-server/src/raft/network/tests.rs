//! The peer network against fake peers; each test names what it defends.

use super::*;
use crate::raft::log_format::LOG_FORMAT;
use crate::types::Vote;

fn connection() -> PeerConnection {
    PeerConnection {
        target: 2,
        addr: "127.0.0.1:1".into(),
        cluster_id: "c".into(),
        call_timeout_floor: call_timeout_floor(250),
        formats: Arc::new(LogFormats::new(1)),
        cluster_time: None,
        connector: Arc::new(TcpConnector),
        failures: Arc::new(failures::PeerFailures::default()),
        client: None,
        timing_out_since: None,
        timeouts_unreported: 0,
        call_unfinished: false,
        streaming: true,
        snapshot_stream: true,
        snapshot_chunk_bytes: crate::raft::snapshot_chunks::MAX_SNAPSHOT_CHUNK_BYTES,
        snapshot_chunk_timeout_floor: snapshot_send::SNAPSHOT_CHUNK_TIMEOUT_FLOOR,
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
    /// service does (false: a binary without it).
    advertises: bool,
    streamed: std::sync::Arc<std::sync::Mutex<Vec<usize>>>,
    /// Serves `InstallSnapshotStream` (false: a binary from before it,
    /// which answers it `Unimplemented`).
    snapshot_streams: bool,
    /// Every snapshot received: (how it came, its bytes).
    snapshots: std::sync::Arc<std::sync::Mutex<Vec<Received>>>,
    /// `InstallSnapshotStream` calls, answered or not.
    snapshot_stream_calls: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    /// `InstallSnapshotStream` is taken but never read (a peer that stalls).
    snapshot_stalls: bool,
    /// `AppendStream` is taken but never answered (a peer, or a connection,
    /// that stalls).
    append_stalls: bool,
}

/// A snapshot a [`FakePeer`] received: how, and its bytes.
type Received = (SnapshotWay, Vec<u8>);

/// How a snapshot reached a [`FakePeer`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SnapshotWay {
    /// Unary InstallSnapshot.
    Whole,
    /// InstallSnapshotStream, in this many chunks.
    Chunks(usize),
}

/// The answer of an install: success at the sender's vote.
fn installed(vote: Vote) -> Answer<Blob> {
    let ok: Result<SnapshotResponse<TypeConfig>, String> = Ok(SnapshotResponse { vote });
    let data = postcard::to_allocvec(&ok).expect("encode");
    Ok(tonic::Response::new(Blob { data }))
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
        if self.append_stalls {
            let held = req.into_inner();
            let never: crate::raft::peer_service::AppendReplies =
                Box::pin(futures::stream::pending().chain(futures::stream::iter(
                    // Keeps the request body open (and unread) while the
                    // answers never come.
                    std::iter::once(held).filter_map(|_| None),
                )));
            return Ok(tonic::Response::new(never));
        }
        let streamed = self.streamed.clone();
        let replies = req.into_inner().map(move |blob| {
            let blob = blob?;
            let timed: crate::raft::cluster_time_wire::TimedAppend =
                postcard::from_bytes(&blob.data).expect("request decodes");
            let rpc = timed.rpc;
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
    async fn install_snapshot(&self, req: tonic::Request<Blob>) -> Answer<Blob> {
        let env: SnapshotEnvelope = postcard::from_bytes(&req.get_ref().data).expect("envelope");
        self.snapshots
            .lock()
            .expect("log")
            .push((SnapshotWay::Whole, env.data));
        installed(env.vote)
    }
    async fn install_snapshot_stream(
        &self,
        req: tonic::Request<tonic::Streaming<warden_proto::peer::SnapshotChunk>>,
    ) -> Answer<Blob> {
        self.snapshot_stream_calls
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        if !self.snapshot_streams {
            return Err(tonic::Status::unimplemented("no InstallSnapshotStream"));
        }
        if self.snapshot_stalls {
            let _held = &req;
            futures::future::pending::<()>().await;
        }
        let mut stream = req.into_inner();
        use crate::raft::snapshot_chunks::Assembly;
        let (head, first) = Assembly::head(stream.message().await?).expect("first chunk");
        let mut assembly = Assembly::new(&head).expect("declared size");
        assembly.push(first).expect("first chunk's data");
        let mut count = 1;
        while !assembly.is_done() {
            let Some(chunk) = stream.message().await? else {
                break;
            };
            count += 1;
            assembly.push(chunk).expect("chunk");
        }
        let data = assembly.finish().expect("whole");
        self.snapshots
            .lock()
            .expect("log")
            .push((SnapshotWay::Chunks(count), data));
        installed(head.vote)
    }
    type TakeSnapshotStreamStream = crate::raft::peer_service::SnapshotParts;
    async fn take_snapshot_stream(
        &self,
        _: tonic::Request<warden_proto::peer::TakeSnapshotRequest>,
    ) -> Answer<Self::TakeSnapshotStreamStream> {
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
    async fn confirm_member(
        &self,
        _: tonic::Request<warden_proto::peer::MemberQuery>,
    ) -> Answer<warden_proto::peer::MemberAnswer> {
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
    let request = |prev: Option<u64>, indexes: &[u64], commit: Option<u64>| AppendEntriesRequest::<
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

/// The answers to one empty AppendEntries sent to `c` with `ttl`, over a
/// stream session when `c` streams.
async fn append_answers(
    c: &mut PeerConnection,
    ttl: Duration,
) -> Vec<Result<StreamAppendResult<TypeConfig>, RPCError<TypeConfig>>> {
    let rpc = AppendEntriesRequest::<TypeConfig> {
        vote: Vote::new_committed(1, 1),
        prev_log_id: None,
        leader_commit: None,
        entries: vec![],
    };
    c.stream_append(futures::stream::iter(vec![rpc]), RPCOption::new(ttl))
        .await
        .expect("session opens")
        .collect()
        .await
}

/// One AppendEntries (empty) to `c`, answered.
async fn one_append(c: &mut PeerConnection) {
    let answers = append_answers(c, Duration::from_secs(5)).await;
    assert!(matches!(answers.as_slice(), [Ok(Ok(None))]), "{answers:?}");
}

// Log-format gate (rolling upgrade): a peer that advertises its log
// format is recorded with it, on the AppendStream and on unary calls; one
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
        assert_eq!(
            c.formats.reported(2),
            Some(LOG_FORMAT),
            "streams: {streams}"
        );
        c.failed(&tonic::Status::unavailable("reset"));
        assert!(c.client.is_none(), "the channel was dropped");
        assert_eq!(
            c.formats.reported(2),
            Some(LOG_FORMAT),
            "kept with the channel"
        );
        c.formats.record(2, 0);
        one_append(&mut c).await;
        assert_eq!(
            c.formats.reported(2),
            Some(LOG_FORMAT),
            "the new answer replaced it"
        );
        server.abort();
    }
    // An older binary: no stream, no header.
    let (mut c, server) = serve(FakePeer::default());
    one_append(&mut c).await;
    assert!(!c.streaming);
    assert_eq!(c.formats.reported(2), Some(0));
    server.abort();
}

// Review of the log-format gate (docs/safety.md S3 "reported, in its latest
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
    assert_eq!(replication.formats.reported(2), Some(LOG_FORMAT));
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
        Some(LOG_FORMAT),
        "the live replication connection's report was forgotten"
    );
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

/// A snapshot of `len` bytes (a pattern, so that a reordered or dropped
/// chunk shows).
fn snapshot_of(len: usize) -> Snapshot {
    Snapshot {
        meta: SnapshotMeta {
            last_log_id: Some(crate::types::LogId::new(
                openraft::vote::leader_id_adv::LeaderId {
                    term: 3,
                    node_id: 1,
                },
                42,
            )),
            last_membership: Default::default(),
        },
        snapshot: (0..len).map(|i| (i % 253) as u8).collect(),
    }
}

/// A `cancel` future that never fires.
fn never_cancelled() -> impl Future<Output = ReplicationClosed> + Send + 'static {
    futures::future::pending()
}

// Bounded snapshot messages: a snapshot of several chunks reaches the peer
// on InstallSnapshotStream in chunks of the connection's size (here 1 KiB:
// 4.5 KiB is 5 chunks), byte for byte, and its answer is the peer's.
#[tokio::test]
async fn a_snapshot_travels_in_chunks() {
    let peer = FakePeer {
        snapshot_streams: true,
        ..FakePeer::default()
    };
    let (mut c, server) = serve(peer.clone());
    c.snapshot_chunk_bytes = 1024;
    let snapshot = snapshot_of(4608);
    let vote = Vote::new_committed(2, 1);
    let r = c
        .full_snapshot(
            vote,
            snapshot.clone(),
            never_cancelled(),
            RPCOption::new(Duration::from_secs(5)),
        )
        .await
        .expect("installed");
    assert_eq!(r.vote, vote);
    let got = peer.snapshots.lock().expect("log").clone();
    assert_eq!(got, vec![(SnapshotWay::Chunks(5), snapshot.snapshot)]);
    assert!(c.snapshot_stream, "the stream stays in use");
    server.abort();
}

// Rolling upgrade (L3: a mixed cluster still catches a follower up): a
// peer that answers InstallSnapshotStream Unimplemented gets the snapshot
// as one unary InstallSnapshot, and the connection remembers it: the next
// snapshot goes unary at once, without trying the stream again.
#[tokio::test]
async fn a_peer_without_the_snapshot_stream_gets_the_snapshot_whole() {
    let peer = FakePeer::default();
    let (mut c, server) = serve(peer.clone());
    c.snapshot_chunk_bytes = 1024;
    let vote = Vote::new_committed(2, 1);
    for len in [3000, 10] {
        let r = c
            .full_snapshot(
                vote,
                snapshot_of(len),
                never_cancelled(),
                RPCOption::new(Duration::from_secs(5)),
            )
            .await
            .expect("installed");
        assert_eq!(r.vote, vote);
    }
    assert!(!c.snapshot_stream, "fell back to the unary call");
    assert_eq!(
        peer.snapshot_stream_calls
            .load(std::sync::atomic::Ordering::SeqCst),
        1,
        "the stream was tried once"
    );
    let got = peer.snapshots.lock().expect("log").clone();
    assert_eq!(
        got,
        vec![
            (SnapshotWay::Whole, snapshot_of(3000).snapshot),
            (SnapshotWay::Whole, snapshot_of(10).snapshot)
        ]
    );
    server.abort();
}

// openraft's cancel (the replication session closed) ends a transfer at
// once with `Closed`, whatever the peer does.
#[tokio::test]
async fn a_cancelled_snapshot_ends_closed() {
    let peer = FakePeer {
        snapshot_streams: true,
        ..FakePeer::default()
    };
    let (mut c, server) = serve(peer.clone());
    let r = c
        .full_snapshot(
            Vote::new_committed(2, 1),
            snapshot_of(100),
            async { ReplicationClosed::new("session closed") },
            RPCOption::new(Duration::from_secs(5)),
        )
        .await;
    assert!(matches!(r, Err(StreamingError::Closed(_))), "{r:?}");
    server.abort();
}

// A chunk's timeout is openraft's install_snapshot_timeout, never below
// the 10 s the whole transfer had before chunking.
#[test]
fn each_chunk_gets_at_least_ten_seconds() {
    use snapshot_send::{snapshot_chunk_timeout, SNAPSHOT_CHUNK_TIMEOUT_FLOOR};
    assert_eq!(SNAPSHOT_CHUNK_TIMEOUT_FLOOR, Duration::from_secs(10));
    let floor = SNAPSHOT_CHUNK_TIMEOUT_FLOOR;
    assert_eq!(
        snapshot_chunk_timeout(&RPCOption::new(Duration::from_millis(200)), floor),
        Duration::from_secs(10)
    );
    assert_eq!(
        snapshot_chunk_timeout(&RPCOption::new(Duration::from_secs(30)), floor),
        Duration::from_secs(30)
    );
    assert_eq!(connection().snapshot_chunk_timeout_floor, floor);
}

// Timeouts scale per chunk (snapshot_send's module docs): a peer that
// takes the stream and never reads it stalls the transfer once HTTP/2 flow
// control fills, and the transfer fails Unreachable ("timed out") after
// one chunk's timeout instead of hanging; the connection counts the
// timeout and no call is left marked unfinished.
#[tokio::test]
async fn a_stalled_snapshot_times_out_per_chunk() {
    let peer = FakePeer {
        snapshot_streams: true,
        snapshot_stalls: true,
        ..FakePeer::default()
    };
    let (mut c, server) = serve(peer.clone());
    c.snapshot_chunk_timeout_floor = Duration::from_millis(300);
    let r = c
        .full_snapshot(
            Vote::new_committed(2, 1),
            snapshot_of(8 * crate::raft::snapshot_chunks::MAX_SNAPSHOT_CHUNK_BYTES),
            never_cancelled(),
            RPCOption::new(Duration::from_millis(100)),
        )
        .await;
    match r {
        Err(StreamingError::Unreachable(u)) => {
            assert!(u.to_string().contains("timed out after 300 ms"), "{u}")
        }
        other => panic!("not a timeout: {other:?}"),
    }
    assert!(!c.call_unfinished);
    assert!(c.timing_out_since.is_some(), "the timeout was counted");
    assert_eq!(
        peer.snapshot_stream_calls
            .load(std::sync::atomic::Ordering::SeqCst),
        1
    );
    assert!(c.snapshot_stream, "a timeout is no reason to fall back");
    server.abort();
}

// Replication backoff (`PeerConnection::timeout_error`): an append that no
// answer follows within the call timeout ends the session with openraft's
// Timeout, which alone does not pause replication, not Unreachable, which
// pauses it for the whole backoff (a busy leader's late timer paused every
// commit 84 times in 80 s); the timeout still counts toward the reconnect.
#[tokio::test]
async fn an_unanswered_append_ends_the_session_as_a_timeout() {
    let peer = FakePeer {
        streams: true,
        append_stalls: true,
        ..FakePeer::default()
    };
    let (mut c, server) = serve(peer);
    let answers = append_answers(&mut c, Duration::from_millis(10)).await;
    match answers.as_slice() {
        [Err(RPCError::Timeout(t))] => {
            assert_eq!(t.action, RPCTypes::AppendEntries);
            assert_eq!((t.id, t.target), (1, 2));
            assert_eq!(
                t.timeout,
                call_timeout_floor(250),
                "the floor, not the 10 ms ttl"
            );
        }
        other => panic!("not a timeout: {other:?}"),
    }
    assert!(c.timing_out_since.is_some(), "the timeout was counted");
    server.abort();
}
