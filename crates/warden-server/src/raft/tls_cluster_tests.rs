//! In-process Raft clusters over TLS on loopback: each node is this crate's
//! log store, state machine, network ([`TlsPeerConnector`]) and peer service
//! behind its [`PeerGate`], with certificates minted per test. They test the
//! peer service's rules where a membership change is needed (a removed
//! node's certificate; a follower that missed an add and a removal), which
//! the public API does not let a test make without an admin principal.
//! Each node's inbound connections pass a switch ([`Cut`]) so a test can
//! take a node off the network and back without restarting it.

use std::collections::{BTreeMap, BTreeSet};
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::task::{Context, Poll};
use std::time::Duration;

use openraft::async_runtime::WatchReceiver as _;
use openraft::ChangeMembers;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::watch;
use tokio_stream::StreamExt as _;
use tonic::transport::server::Connected;
use tonic::transport::{Channel, Endpoint, Uri};
use tonic::Code;
use warden_proto::peer::peer_client::PeerClient;
use warden_proto::peer::peer_server::PeerServer;
use warden_proto::peer::Blob;
use warden_tls::{NodeTls, TlsConnection};

use crate::raft::network::{call_timeout_floor, Network, PeerConnector, MAX_PEER_MESSAGE_BYTES};
use crate::raft::peer_access::{
    follow_members, PeerAccess, PeerGate, RemovedNodes, MAX_PEER_CONTROL_MESSAGE_BYTES,
};
use crate::raft::peer_service::{EarlyCampaign, PeerService, PeerState};
use crate::raft::snapshot_chunks::MAX_SNAPSHOT_CHUNK_MESSAGE_BYTES;
use crate::raft::Raft;
use crate::store::{Db, LogStore, StateMachineStore};
use crate::types::{Entry, LogId, MemberAddr, TypeConfig, Vote};

const CLUSTER: &str = "tls-test-cluster";
const WAIT: Duration = Duration::from_secs(20);

/// A connection that fails every read and write once its node is cut off.
struct Cut {
    conn: TlsConnection,
    off: Arc<AtomicBool>,
}

impl Cut {
    fn check(&self) -> io::Result<()> {
        if self.off.load(Ordering::SeqCst) {
            return Err(io::Error::new(io::ErrorKind::ConnectionReset, "cut off"));
        }
        Ok(())
    }
}

impl AsyncRead for Cut {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        self.check()?;
        Pin::new(&mut self.conn).poll_read(cx, buf)
    }
}

impl AsyncWrite for Cut {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.check()?;
        Pin::new(&mut self.conn).poll_write(cx, buf)
    }
    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.check()?;
        Pin::new(&mut self.conn).poll_flush(cx)
    }
    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.conn).poll_shutdown(cx)
    }
}

impl Connected for Cut {
    type ConnectInfo = warden_tls::PeerInfo;
    fn connect_info(&self) -> warden_tls::PeerInfo {
        self.conn.info().clone()
    }
}

/// The TLS peer connector, refusing new connections while its node is cut.
#[derive(Debug)]
struct Switched {
    tls: NodeTls,
    off: Arc<AtomicBool>,
}

impl PeerConnector for Switched {
    fn channel(&self, peer_id: u64, endpoint: Endpoint) -> Channel {
        let connector = self.tls.peer_connector(peer_id);
        let off = self.off.clone();
        endpoint.connect_with_connector_lazy(tower::service_fn(move |uri: Uri| {
            let connector = connector.clone();
            let off = off.load(Ordering::SeqCst);
            async move {
                if off {
                    return Err(Box::new(io::Error::other("cut off"))
                        as Box<dyn std::error::Error + Send + Sync>);
                }
                connector.connect(&uri).await.map_err(|e| e.into())
            }
        }))
    }
}

/// Most snapshot bytes per chunk these nodes send: 1 KiB, so that a table
/// of a few hundred locks is a snapshot of several chunks.
const TEST_SNAPSHOT_CHUNK_BYTES: usize = 1024;

/// Records the path of every call that reaches a node (before its gate).
#[derive(Clone)]
struct Recorded<S> {
    inner: S,
    paths: Arc<Mutex<Vec<String>>>,
}

impl<S: tonic::server::NamedService> tonic::server::NamedService for Recorded<S> {
    const NAME: &'static str = S::NAME;
}

impl<S> tower::Service<tonic::codegen::http::Request<tonic::body::Body>> for Recorded<S>
where
    S: tower::Service<tonic::codegen::http::Request<tonic::body::Body>>,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = S::Future;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: tonic::codegen::http::Request<tonic::body::Body>) -> S::Future {
        if let Ok(mut paths) = self.paths.lock() {
            paths.push(request.uri().path().to_string());
        }
        self.inner.call(request)
    }
}

struct TestNode {
    addr: String,
    raft: Raft,
    state: Arc<PeerState>,
    off: Arc<AtomicBool>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
    /// The state machine's shared state (the applied table).
    shared: Arc<crate::store::Shared>,
    /// The path of every call this node was sent ([`Recorded`]).
    paths: Arc<Mutex<Vec<String>>>,
}

impl TestNode {
    /// Starts node `id` on `listener` with the certs in `certs`, data in `dir`.
    async fn start(
        id: u64,
        listener: tokio::net::TcpListener,
        certs: &std::path::Path,
        dir: &std::path::Path,
    ) -> TestNode {
        let addr = listener.local_addr().expect("addr").to_string();
        let tls = NodeTls::load(certs, id).expect("node certs");
        let off = Arc::new(AtomicBool::new(false));
        let connector: Arc<dyn PeerConnector> = Arc::new(Switched {
            tls: tls.clone(),
            off: off.clone(),
        });
        let db = Db::open(dir).expect("db");
        let clock = crate::clock::NodeClock::new(crate::clock::TokioClock::shared());
        let max_stamp = crate::store::MaxStamp::default();
        let log = LogStore::new(db.clone(), max_stamp.clone()).expect("log store");
        let sm = StateMachineStore::open(db.clone(), clock, max_stamp).expect("sm");
        let shared = sm.shared.clone();
        let config = openraft::Config {
            heartbeat_interval: 50,
            election_timeout_min: 300,
            election_timeout_max: 600,
            enable_pre_vote: Some(true),
            ..Default::default()
        }
        .validate()
        .expect("config");
        let formats = Arc::new(crate::raft::log_format::LogFormats::new(id));
        let raft = Raft::new(
            id,
            Arc::new(config),
            Network::new(
                CLUSTER.into(),
                call_timeout_floor(300),
                formats,
                connector.clone(),
            )
            .with_snapshot_chunk_bytes(TEST_SNAPSHOT_CHUNK_BYTES),
            log,
            sm,
        )
        .await
        .expect("raft");
        let (cluster_id, _) = watch::channel(Some(CLUSTER.to_string()));
        let access = Arc::new(
            PeerAccess::new(
                true,
                cluster_id.subscribe(),
                RemovedNodes::open(db.clone()).expect("removed"),
            )
            .confirming_with(id, connector.clone()),
        );
        let state = Arc::new(PeerState {
            node_id: id,
            db,
            raft: OnceLock::new(),
            cluster_id,
            empty_at_start: false,
            bootstrap_lock: Mutex::new(()),
            leader_contact: crate::raft::LeaderContact::default(),
            early_campaign: EarlyCampaign::new(id, 300, 600),
            connector,
            access: access.clone(),
            stopping: Default::default(),
            formats: OnceLock::new(),
            heard: OnceLock::new(),
        });
        let _ = state.raft.set(raft.clone());
        let gate = PeerGate::new(
            access.clone(),
            PeerServer::new(PeerService::new(state.clone()))
                .max_decoding_message_size(MAX_PEER_MESSAGE_BYTES),
            PeerServer::new(PeerService::new(state.clone()))
                .max_decoding_message_size(MAX_SNAPSHOT_CHUNK_MESSAGE_BYTES),
            PeerServer::new(PeerService::new(state.clone()))
                .max_decoding_message_size(MAX_PEER_CONTROL_MESSAGE_BYTES),
        );
        let paths = Arc::new(Mutex::new(Vec::new()));
        let gate = Recorded {
            inner: gate,
            paths: paths.clone(),
        };
        let cut = off.clone();
        let incoming = tls
            .server()
            .incoming(tokio_stream::wrappers::TcpListenerStream::new(listener))
            .map(move |c| {
                c.map(|conn| Cut {
                    conn,
                    off: cut.clone(),
                })
            });
        let server = tokio::spawn(async move {
            let _ = tonic::transport::Server::builder()
                .add_service(gate)
                .serve_with_incoming(incoming)
                .await;
        });
        let follow = tokio::spawn(follow_members(raft.clone(), access));
        TestNode {
            addr,
            raft,
            state,
            off,
            tasks: vec![server, follow],
            shared,
            paths,
        }
    }

    /// The applied lock table, as snapshot bytes.
    fn table_bytes(&self) -> Vec<u8> {
        self.shared
            .machine
            .lock()
            .expect("machine")
            .table
            .to_snapshot()
    }

    /// How many calls to Peer method `method` this node was sent.
    fn calls_to(&self, method: &str) -> usize {
        let path = format!("/warden.peer.v1.Peer/{method}");
        self.paths
            .lock()
            .expect("paths")
            .iter()
            .filter(|p| **p == path)
            .count()
    }

    fn metrics(&self) -> openraft::RaftMetrics<TypeConfig> {
        self.raft.metrics().borrow_watched().clone()
    }

    fn committed_members(&self) -> BTreeSet<u64> {
        self.metrics()
            .committed_membership_config
            .nodes()
            .map(|(id, _)| *id)
            .collect()
    }

    fn set_off(&self, off: bool) {
        self.off.store(off, Ordering::SeqCst);
    }
}

/// Polls `f` until it is true or [`WAIT`] passes (then fails with `what`).
async fn wait_until(what: &str, mut f: impl FnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + WAIT;
    while !f() {
        assert!(tokio::time::Instant::now() < deadline, "timed out: {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The leader the running nodes agree on (every one of `nodes` not cut off).
async fn wait_leader(nodes: &[&TestNode]) -> u64 {
    let mut leader = 0;
    wait_until("a leader", || {
        let leaders: BTreeSet<Option<u64>> = nodes
            .iter()
            .filter(|n| !n.off.load(Ordering::SeqCst))
            .map(|n| n.metrics().current_leader)
            .collect();
        match leaders.into_iter().collect::<Vec<_>>().as_slice() {
            [Some(l)] => {
                leader = *l;
                true
            }
            _ => false,
        }
    })
    .await;
    leader
}

/// A Peer client of node `from`'s certificate (`certs`) to node `to` at `addr`.
fn peer_client(certs: &std::path::Path, from: u64, to: u64, addr: &str) -> PeerClient<Channel> {
    let tls = NodeTls::load(certs, from).expect("certs");
    let channel = warden_tls::endpoint(addr)
        .expect("endpoint")
        .connect_with_connector_lazy(tls.peer_connector(to));
    PeerClient::new(channel)
}

fn with_cluster_id<T>(message: T) -> tonic::Request<T> {
    let mut request = tonic::Request::new(message);
    request.metadata_mut().insert(
        warden_proto::CLUSTER_ID_METADATA,
        CLUSTER.parse().expect("ascii"),
    );
    request
}

/// A forged AppendEntries from `leader` at `term`: one blank entry after
/// `last` (or a heartbeat without entries).
fn forged_append(leader: u64, term: u64, last: Option<LogId>, entry: bool) -> Blob {
    let vote = Vote::new_committed(term, leader);
    let entries = if entry {
        let index = last.map_or(1, |l| l.index() + 1);
        vec![Entry {
            log_id: LogId::new(
                openraft::vote::leader_id_adv::LeaderId {
                    term,
                    node_id: leader,
                },
                index,
            ),
            payload: openraft::EntryPayload::Blank,
        }]
    } else {
        Vec::new()
    };
    let rpc = openraft::raft::AppendEntriesRequest::<TypeConfig> {
        vote,
        prev_log_id: last,
        leader_commit: last,
        entries,
    };
    // As a leader sends it: with its cluster time (none here).
    let timed = crate::raft::cluster_time_wire::TimedAppend {
        cluster_time_ms: None,
        rpc,
    };
    Blob {
        data: postcard::to_allocvec(&timed).expect("encode"),
    }
}

async fn run_scoped<F: std::future::Future<Output = ()>>(f: F) {
    // openraft's runtime draws from a seeded generator set up per node
    // (`run_injected`); a bare `Raft::new` needs the same scope.
    crate::types::Rt::scope(17, f).await;
}

// docs/security.md "The peer service" (and the attack on it): a follower
// that was down while node 4 was added and the old leader, node 1, removed
// still follows the new leader, node 4, which its own membership does not
// name (node 2, a voter it knows, confirms node 4, which with itself is a
// majority of the voters it knows); once caught up it knows node 1 was
// removed. Then node 1's certificate forges
// AppendEntries with an entry at a higher term, and heartbeats, to every
// member: each is refused before its body is read, no log moves, no term
// moves, and node 4 stays leader. A client certificate calling
// AppendEntries, Vote and InstallSnapshot directly is refused too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_follower_follows_a_new_leader_and_a_removed_node_is_refused() {
    run_scoped(follower_and_removed_body()).await;
}

async fn follower_and_removed_body() {
    let root = tempfile::tempdir().expect("tempdir");
    let set = warden_tls::mint::loopback_set(root.path(), &[1, 2, 3, 4], &["alice"]).expect("mint");
    let mut listeners = BTreeMap::new();
    for id in 1..=4u64 {
        listeners.insert(
            id,
            tokio::net::TcpListener::bind("127.0.0.1:0")
                .await
                .expect("bind"),
        );
    }
    let mut nodes = BTreeMap::new();
    for (id, listener) in listeners {
        let dir = root.path().join(format!("data-{id}"));
        let node = TestNode::start(id, listener, &set.node_dirs[&id], &dir).await;
        nodes.insert(id, node);
    }
    let members: BTreeMap<u64, MemberAddr> = (1..=3)
        .map(|id| (id, MemberAddr::client_only(nodes[&id].addr.clone())))
        .collect();
    nodes[&1]
        .raft
        .initialize(members)
        .await
        .expect("initialize");
    let leader = wait_leader(&[&nodes[&1], &nodes[&2], &nodes[&3]]).await;
    if leader != 1 {
        nodes[&leader]
            .raft
            .trigger()
            .transfer_leader(1)
            .await
            .expect("transfer to 1");
    }
    wait_until("node 1 leads", || {
        nodes[&1].metrics().current_leader == Some(1)
    })
    .await;
    wait_until("every member applied the first membership", || {
        (1..=3).all(|id| {
            nodes[&id].committed_members() == BTreeSet::from([1, 2, 3])
                && nodes[&id].metrics().last_applied.map(|l| l.index())
                    >= nodes[&1].metrics().last_log_index
        })
    })
    .await;

    // Node 3 goes down; node 4 is added and node 1 removed meanwhile.
    nodes[&3].set_off(true);
    let n1 = &nodes[&1].raft;
    n1.add_learner(4, MemberAddr::client_only(nodes[&4].addr.clone()), true)
        .await
        .expect("add learner 4");
    n1.change_membership(ChangeMembers::AddVoterIds(BTreeSet::from([4])), false)
        .await
        .expect("4 a voter");
    n1.trigger()
        .transfer_leader(4)
        .await
        .expect("transfer to 4");
    wait_until("node 4 leads", || {
        nodes[&4].metrics().current_leader == Some(4)
    })
    .await;
    // The new leader takes the change once its own term's first entry
    // committed the last membership (openraft answers InProgress before).
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let removed = nodes[&4]
            .raft
            .change_membership(ChangeMembers::RemoveVoters(BTreeSet::from([1])), false)
            .await;
        match removed {
            Ok(_) => break,
            Err(e) => assert!(tokio::time::Instant::now() < deadline, "remove 1: {e}"),
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    wait_until("node 2 committed the removal", || {
        nodes[&2].committed_members() == BTreeSet::from([2, 3, 4])
    })
    .await;
    assert_eq!(
        nodes[&3].committed_members(),
        BTreeSet::from([1, 2, 3]),
        "node 3 was down through both changes"
    );
    wait_until("node 2 recorded the removal", || {
        nodes[&2].state.access.removed.ids() == BTreeSet::from([1])
    })
    .await;

    // Node 3 comes back and follows node 4, a leader it has not heard of.
    nodes[&3].set_off(false);
    wait_until("node 3 follows node 4 and knows the new membership", || {
        let m = nodes[&3].metrics();
        m.current_leader == Some(4) && nodes[&3].committed_members() == BTreeSet::from([2, 3, 4])
    })
    .await;
    let leader_log = nodes[&4].metrics().last_log_index;
    wait_until("node 3 caught up", || {
        nodes[&3].metrics().last_applied.map(|l| l.index()) >= leader_log
    })
    .await;
    wait_until("node 3 learned the removal by catching up", || {
        nodes[&3].state.access.removed.ids() == BTreeSet::from([1])
    })
    .await;

    // Node 1's certificate forges appends and heartbeats at a higher term.
    let before: BTreeMap<u64, (u64, Option<u64>)> = [2u64, 3, 4]
        .iter()
        .map(|id| {
            let m = nodes[id].metrics();
            (*id, (m.current_term, m.last_log_index))
        })
        .collect();
    for target in [2u64, 3, 4] {
        let m = nodes[&target].metrics();
        let last = m.last_applied;
        let term = m.current_term + 1;
        let mut client = peer_client(&set.node_dirs[&1], 1, target, &nodes[&target].addr);
        for entry in [true, false, false, false] {
            let e = client
                .append_entries(with_cluster_id(forged_append(1, term, last, entry)))
                .await
                .expect_err("a removed node's append");
            assert_eq!(e.code(), Code::PermissionDenied, "{e:?}");
            assert!(
                e.message().contains("node 1 was removed"),
                "{}",
                e.message()
            );
        }
        let vote = openraft::raft::VoteRequest::<TypeConfig>::new(Vote::new(term, 1), last);
        let e = client
            .pre_vote(with_cluster_id(Blob {
                data: postcard::to_allocvec(&vote).expect("encode"),
            }))
            .await
            .expect_err("a removed node's pre-vote");
        assert_eq!(e.code(), Code::PermissionDenied, "{e:?}");
    }

    // A client certificate may call none of the Raft RPCs.
    let alice = warden_tls::ClientTls::load_client(&set.client_dir, "alice").expect("alice");
    let mut as_alice = PeerClient::new(alice.channel_lazy(&nodes[&3].addr).expect("channel"));
    let last = nodes[&3].metrics().last_applied;
    let term = nodes[&3].metrics().current_term + 1;
    let e = as_alice
        .append_entries(with_cluster_id(forged_append(4, term, last, true)))
        .await
        .expect_err("alice's append");
    assert_eq!(e.code(), Code::PermissionDenied, "{e:?}");
    assert!(e.message().contains("client alice"), "{}", e.message());
    let vote = openraft::raft::VoteRequest::<TypeConfig>::new(Vote::new(term, 2), last);
    let e = as_alice
        .vote(with_cluster_id(Blob {
            data: postcard::to_allocvec(&vote).expect("encode"),
        }))
        .await
        .expect_err("alice's vote");
    assert_eq!(e.code(), Code::PermissionDenied, "{e:?}");
    let e = as_alice
        .install_snapshot(with_cluster_id(Blob { data: vec![0; 16] }))
        .await
        .expect_err("alice's snapshot");
    assert_eq!(e.code(), Code::PermissionDenied, "{e:?}");
    // Nor the membership question peers confirm unknown ids with (a node
    // certificate's call only: a client must not learn who is a member).
    let e = as_alice
        .confirm_member(with_cluster_id(warden_proto::peer::MemberQuery {
            from_node_id: 2,
            node_id: 3,
        }))
        .await
        .expect_err("alice's membership question");
    assert_eq!(e.code(), Code::PermissionDenied, "{e:?}");

    // Node 4's own certificate cannot speak for node 2 either.
    let mut as_4 = peer_client(&set.node_dirs[&4], 4, 3, &nodes[&3].addr);
    let e = as_4
        .append_entries(with_cluster_id(forged_append(2, term, last, true)))
        .await
        .expect_err("a claim of another node");
    assert_eq!(e.code(), Code::PermissionDenied, "{e:?}");
    assert!(
        e.message()
            .contains("node 4's, but the message is from node 2"),
        "{}",
        e.message()
    );

    // Nothing moved, and node 4 still leads.
    for id in [2u64, 3, 4] {
        let m = nodes[&id].metrics();
        assert_eq!(m.current_leader, Some(4), "node {id}");
        let (term, last_index) = before[&id];
        assert_eq!(m.current_term, term, "node {id}'s term moved");
        assert!(
            m.last_log_index == last_index,
            "node {id}'s log moved: {last_index:?} -> {:?}",
            m.last_log_index
        );
    }

    for node in nodes.into_values() {
        let _ = node.raft.shutdown().await;
        for t in node.tasks {
            t.abort();
        }
    }
}

// docs/security.md "The peer service" and "Certificates" (the attack: a
// node certificate for an id that was never a member sent AppendEntries
// that the followers accepted and committed). In a cluster of nodes 1-3
// whose certificates name cluster "blue":
// - node 9's certificate (same CA, same cluster, never added) is refused
//   by every member on AppendEntries (with an entry at a higher term, and
//   heartbeats), AppendStream, PreVote and TakeSnapshot: its id is in no
//   member's log, and the voters asked do not confirm it; each member
//   lists it as unconfirmed;
// - node 4's certificate minted by the same CA for cluster "green" fails
//   the handshake: no call reaches a gate;
// - ConfirmMember answers from the answering node's own membership;
// and no member's log length, term or leader moved.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_never_member_and_another_clusters_certificate_are_refused() {
    run_scoped(never_member_body()).await;
}

async fn never_member_body() {
    let root = tempfile::tempdir().expect("tempdir");
    let set = warden_tls::mint::loopback_set_in(root.path(), Some("blue"), &[1, 2, 3, 9], &[])
        .expect("mint");
    let green = root.path().join("green-4");
    std::fs::create_dir_all(&green).expect("dir");
    std::fs::copy(set.client_dir.join("ca.crt"), green.join("ca.crt")).expect("ca");
    warden_tls::mint::create_node(
        &green,
        &set.ca_key,
        4,
        &warden_tls::mint::LOOPBACK_HOSTS,
        &warden_tls::mint::CertOptions {
            cluster: Some("green".into()),
            ..Default::default()
        },
    )
    .expect("green node 4");
    let mut nodes = BTreeMap::new();
    for id in 1..=3u64 {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let dir = root.path().join(format!("data-{id}"));
        nodes.insert(
            id,
            TestNode::start(id, listener, &set.node_dirs[&id], &dir).await,
        );
    }
    let members: BTreeMap<u64, MemberAddr> = nodes
        .iter()
        .map(|(id, n)| (*id, MemberAddr::client_only(n.addr.clone())))
        .collect();
    nodes[&1]
        .raft
        .initialize(members)
        .await
        .expect("initialize");
    let all: Vec<&TestNode> = nodes.values().collect();
    let leader = wait_leader(&all).await;
    wait_until("every member applied the leader's log", || {
        let last = nodes[&leader].metrics().last_log_index;
        nodes
            .values()
            .all(|n| n.metrics().last_applied.map(|l| l.index()) >= last)
    })
    .await;
    let before: BTreeMap<u64, (u64, Option<u64>)> = nodes
        .iter()
        .map(|(id, n)| {
            let m = n.metrics();
            (*id, (m.current_term, m.last_log_index))
        })
        .collect();

    let not_member = "node 9 is not in this node's membership";
    for (&target, node) in &nodes {
        let m = node.metrics();
        let last = m.last_applied;
        let term = m.current_term + 1;
        let mut client = peer_client(&set.node_dirs[&9], 9, target, &node.addr);
        for entry in [true, false, false] {
            let e = client
                .append_entries(with_cluster_id(forged_append(9, term, last, entry)))
                .await
                .expect_err("a never-member's append");
            assert_eq!(e.code(), Code::PermissionDenied, "node {target}: {e:?}");
            assert!(e.message().contains(not_member), "{}", e.message());
        }
        let frames = tokio_stream::iter(vec![forged_append(9, term, last, true)]);
        let e = client
            .append_stream(with_cluster_id(frames))
            .await
            .expect_err("a never-member's stream");
        assert_eq!(e.code(), Code::PermissionDenied, "node {target}: {e:?}");
        let vote = openraft::raft::VoteRequest::<TypeConfig>::new(Vote::new(term, 9), last);
        let e = client
            .pre_vote(with_cluster_id(Blob {
                data: postcard::to_allocvec(&vote).expect("encode"),
            }))
            .await
            .expect_err("a never-member's pre-vote");
        assert_eq!(e.code(), Code::PermissionDenied, "node {target}: {e:?}");
        let e = client
            .take_snapshot(with_cluster_id(warden_proto::peer::TakeSnapshotRequest {}))
            .await
            .expect_err("a never-member reads the table");
        assert_eq!(e.code(), Code::PermissionDenied, "node {target}: {e:?}");
        assert_eq!(
            node.state.access.unconfirmed(),
            BTreeSet::from([9]),
            "node {target}"
        );
    }

    // Another cluster's node certificate from the same CA: the handshake
    // fails, so no call reaches a gate.
    for (&target, node) in &nodes {
        let m = node.metrics();
        let mut client = peer_client(&green, 4, target, &node.addr);
        let e = client
            .append_entries(with_cluster_id(forged_append(
                4,
                m.current_term + 1,
                m.last_applied,
                true,
            )))
            .await
            .expect_err("another cluster's node");
        assert_eq!(e.code(), Code::Unavailable, "node {target}: {e:?}");
        // A call nobody else makes: it never reaches the node's gate.
        let e = client
            .take_snapshot(with_cluster_id(warden_proto::peer::TakeSnapshotRequest {}))
            .await
            .expect_err("another cluster's node reads the table");
        assert_eq!(e.code(), Code::Unavailable, "node {target}: {e:?}");
        assert_eq!(
            node.calls_to("TakeSnapshot"),
            1,
            "node {target}: only node 9's call reached the gate"
        );
    }

    // ConfirmMember answers from the node's own membership; the asker must
    // be its certificate's node.
    let mut as_2 = peer_client(&set.node_dirs[&2], 2, 1, &nodes[&1].addr);
    for (asked, member) in [(9u64, false), (3, true), (4, false)] {
        let a = as_2
            .confirm_member(with_cluster_id(warden_proto::peer::MemberQuery {
                from_node_id: 2,
                node_id: asked,
            }))
            .await
            .expect("an answer")
            .into_inner();
        assert_eq!((a.node_id, a.member), (1, member), "node {asked}");
    }
    let e = as_2
        .confirm_member(with_cluster_id(warden_proto::peer::MemberQuery {
            from_node_id: 3,
            node_id: 9,
        }))
        .await
        .expect_err("a claim of another node");
    assert_eq!(e.code(), Code::PermissionDenied, "{e:?}");

    // Nothing moved.
    for (id, node) in &nodes {
        let m = node.metrics();
        assert_eq!(m.current_leader, Some(leader), "node {id}");
        assert_eq!(
            (m.current_term, m.last_log_index),
            before[id],
            "node {id}'s term or log moved"
        );
    }
    for node in nodes.into_values() {
        let _ = node.raft.shutdown().await;
        for t in node.tasks {
            t.abort();
        }
    }
}

// docs/security.md "The peer service": the gate decides from the
// certificate and the headers before the body is read. A caller without a
// certificate is Unauthenticated, and one whose body never comes is still
// answered at once; a wrong cluster id is refused; a node certificate from
// another CA cannot even connect; an admitted peer's vote above the
// control bound is refused (OutOfRange) without being buffered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_gate_decides_before_the_body() {
    run_scoped(gate_body()).await;
}

async fn gate_body() {
    let root = tempfile::tempdir().expect("tempdir");
    let set =
        warden_tls::mint::loopback_set(&root.path().join("a"), &[1, 2], &["alice"]).expect("mint");
    let other = warden_tls::mint::loopback_set(&root.path().join("b"), &[2], &[]).expect("mint");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let node = TestNode::start(1, listener, &set.node_dirs[&1], &root.path().join("d")).await;
    node.raft
        .initialize(BTreeMap::from([(
            1,
            MemberAddr::client_only(node.addr.clone()),
        )]))
        .await
        .expect("initialize");
    wait_leader(&[&node]).await;
    // Node 2's certificate calls below as a member: a learner that never
    // runs (its address answers nothing).
    node.raft
        .add_learner(2, MemberAddr::client_only("127.0.0.1:9"), false)
        .await
        .expect("learner 2");
    wait_until("node 1 knows node 2", || {
        node.state.access.known().members.contains(&2)
    })
    .await;

    let anonymous =
        warden_tls::ClientTls::anonymous(&set.client_dir.join("ca.crt")).expect("anonymous");
    let mut client = PeerClient::new(anonymous.channel_lazy(&node.addr).expect("channel"));
    let e = client
        .append_entries(with_cluster_id(Blob { data: vec![] }))
        .await
        .expect_err("no certificate");
    assert_eq!(e.code(), Code::Unauthenticated, "{e:?}");
    // A stream whose first message never comes: refused from its headers.
    let (_hold, rx) = tokio::sync::mpsc::unbounded_channel::<Blob>();
    let body = tokio_stream::wrappers::UnboundedReceiverStream::new(rx);
    let e = tokio::time::timeout(
        Duration::from_secs(5),
        client.append_stream(with_cluster_id(body)),
    )
    .await
    .expect("answered without the body")
    .expect_err("no certificate");
    assert_eq!(e.code(), Code::Unauthenticated, "{e:?}");

    let mut peer = peer_client(&set.node_dirs[&2], 2, 1, &node.addr);
    let e = peer
        .append_entries(tonic::Request::new(Blob { data: vec![] }))
        .await
        .expect_err("no cluster id");
    assert_eq!(e.code(), Code::PermissionDenied, "{e:?}");
    assert!(
        e.message().contains("the caller sent none"),
        "{}",
        e.message()
    );
    // An admitted peer's oversized vote.
    let e = peer
        .vote(with_cluster_id(Blob {
            data: vec![0; MAX_PEER_CONTROL_MESSAGE_BYTES + 1],
        }))
        .await
        .expect_err("oversized");
    assert_eq!(e.code(), Code::OutOfRange, "{e:?}");
    // A bad snapshot from an admitted peer is a typed refusal, not a panic.
    let e = peer
        .install_snapshot(with_cluster_id(Blob {
            data: vec![1, 2, 3],
        }))
        .await
        .expect_err("garbage");
    assert_eq!(e.code(), Code::InvalidArgument, "{e:?}");

    // The snapshot stream: refused from its headers before a chunk is
    // read, and bounded per chunk for an admitted peer.
    snapshot_stream_refusals(&set, &node).await;

    // Another CA's node 2: the handshake fails, nothing is served.
    let mut stranger = peer_client(&other.node_dirs[&2], 2, 1, &node.addr);
    let e = stranger
        .append_entries(with_cluster_id(Blob { data: vec![] }))
        .await
        .expect_err("another CA");
    assert_eq!(e.code(), Code::Unavailable, "{e:?}");

    let _ = node.raft.shutdown().await;
    for t in node.tasks {
        t.abort();
    }
}

/// A request stream of `chunks` with the cluster id.
fn chunk_stream(
    chunks: Vec<warden_proto::peer::SnapshotChunk>,
) -> tonic::Request<impl tokio_stream::Stream<Item = warden_proto::peer::SnapshotChunk>> {
    with_cluster_id(tokio_stream::iter(chunks))
}

/// A first chunk from node `from`'s vote declaring `data_bytes`, carrying
/// `data`.
fn first_chunk(from: u64, data_bytes: u64, data: Vec<u8>) -> warden_proto::peer::SnapshotChunk {
    let head = crate::raft::snapshot_chunks::SnapshotHead {
        vote: Vote::new_committed(1, from),
        meta: Default::default(),
        data_bytes,
    };
    warden_proto::peer::SnapshotChunk {
        head: postcard::to_allocvec(&head).expect("encode"),
        data,
        done: false,
    }
}

// docs/security.md "The peer service", for InstallSnapshotStream and
// TakeSnapshotStream: a caller without a certificate is Unauthenticated
// and a client certificate PermissionDenied, both answered from the
// headers while the first chunk never comes; an admitted peer's chunk of
// more data than 1 MiB is refused with OutOfRange naming the limit, a
// chunk message above the decode bound by tonic before it is buffered,
// and a stream cut before its last chunk installs nothing. Through all of
// it the node's snapshot, log and term do not move.
async fn snapshot_stream_refusals(set: &warden_tls::mint::LoopbackSet, node: &TestNode) {
    use crate::raft::snapshot_chunks::{
        MAX_SNAPSHOT_CHUNK_BYTES, MAX_SNAPSHOT_CHUNK_MESSAGE_BYTES,
    };
    use warden_proto::peer::{SnapshotChunk, TakeSnapshotRequest};
    let before = node.metrics();
    let never = || {
        let (hold, rx) = tokio::sync::mpsc::unbounded_channel::<SnapshotChunk>();
        (
            hold,
            with_cluster_id(tokio_stream::wrappers::UnboundedReceiverStream::new(rx)),
        )
    };

    let anonymous =
        warden_tls::ClientTls::anonymous(&set.client_dir.join("ca.crt")).expect("anonymous");
    let mut as_nobody = PeerClient::new(anonymous.channel_lazy(&node.addr).expect("channel"));
    let (_hold, body) = never();
    let e = tokio::time::timeout(WAIT, as_nobody.install_snapshot_stream(body))
        .await
        .expect("answered without a chunk")
        .expect_err("no certificate");
    assert_eq!(e.code(), Code::Unauthenticated, "{e:?}");
    let e = as_nobody
        .take_snapshot_stream(with_cluster_id(TakeSnapshotRequest {}))
        .await
        .expect_err("no certificate");
    assert_eq!(e.code(), Code::Unauthenticated, "{e:?}");

    let alice = warden_tls::ClientTls::load_client(&set.client_dir, "alice").expect("alice");
    let mut as_alice = PeerClient::new(alice.channel_lazy(&node.addr).expect("channel"));
    let (_hold, body) = never();
    let e = tokio::time::timeout(WAIT, as_alice.install_snapshot_stream(body))
        .await
        .expect("answered without a chunk")
        .expect_err("a client certificate");
    assert_eq!(e.code(), Code::PermissionDenied, "{e:?}");
    assert!(e.message().contains("client alice"), "{}", e.message());
    let e = as_alice
        .take_snapshot_stream(with_cluster_id(TakeSnapshotRequest {}))
        .await
        .expect_err("a client certificate");
    assert_eq!(e.code(), Code::PermissionDenied, "{e:?}");

    let mut peer = peer_client(&set.node_dirs[&2], 2, 1, &node.addr);
    let over = MAX_SNAPSHOT_CHUNK_BYTES + 1;
    let e = peer
        .install_snapshot_stream(chunk_stream(vec![first_chunk(
            2,
            over as u64,
            vec![0; over],
        )]))
        .await
        .expect_err("an oversized chunk");
    assert_eq!(e.code(), Code::OutOfRange, "{e:?}");
    assert!(
        e.message().contains("the limit is 1048576 bytes"),
        "{}",
        e.message()
    );
    let e = peer
        .install_snapshot_stream(chunk_stream(vec![first_chunk(
            2,
            (MAX_SNAPSHOT_CHUNK_MESSAGE_BYTES + 1) as u64,
            vec![0; MAX_SNAPSHOT_CHUNK_MESSAGE_BYTES + 1],
        )]))
        .await
        .expect_err("a chunk message above the decode bound");
    assert_eq!(e.code(), Code::OutOfRange, "{e:?}");
    assert!(
        e.message().contains(&format!(
            "the limit is: {MAX_SNAPSHOT_CHUNK_MESSAGE_BYTES} bytes"
        )),
        "{}",
        e.message()
    );
    // A sender that stopped after its first chunk (no `done`).
    let e = peer
        .install_snapshot_stream(chunk_stream(vec![first_chunk(2, 2048, vec![0; 1024])]))
        .await
        .expect_err("cut off");
    assert_eq!(e.code(), Code::InvalidArgument, "{e:?}");
    assert!(
        e.message().contains("nothing was installed"),
        "{}",
        e.message()
    );
    // A head that speaks for another node than the certificate.
    let e = peer
        .install_snapshot_stream(chunk_stream(vec![first_chunk(3, 0, vec![])]))
        .await
        .expect_err("a claim of another node");
    assert_eq!(e.code(), Code::PermissionDenied, "{e:?}");

    let after = node.metrics();
    assert_eq!(after.snapshot, before.snapshot, "the snapshot moved");
    assert_eq!(after.current_term, before.current_term, "the term moved");
    assert_eq!(
        after.last_log_index, before.last_log_index,
        "the log moved: {before:?} -> {after:?}"
    );
}

// Bounded snapshot messages (docs/operations.md "Give peers a port of their
// own"): a follower that was away while the leader wrote a few hundred
// locks and purged its log is caught up with a snapshot of more than 3
// chunks, over InstallSnapshotStream only (never the unary call), and then
// holds the leader's table byte for byte. TakeSnapshotStream returns the
// same bytes as TakeSnapshot, in messages of at most 1 MiB.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_follower_installs_a_snapshot_in_chunks() {
    run_scoped(chunked_snapshot_body()).await;
}

async fn chunked_snapshot_body() {
    use warden_core::types::{Acquire, Command, LeaseSpec, LogEntry, RequestHeader};
    let root = tempfile::tempdir().expect("tempdir");
    let set = warden_tls::mint::loopback_set(root.path(), &[1, 2, 3], &[]).expect("mint");
    let mut nodes = BTreeMap::new();
    for id in 1..=3u64 {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let dir = root.path().join(format!("data-{id}"));
        nodes.insert(
            id,
            TestNode::start(id, listener, &set.node_dirs[&id], &dir).await,
        );
    }
    let members: BTreeMap<u64, MemberAddr> = (1..=3)
        .map(|id| (id, MemberAddr::client_only(nodes[&id].addr.clone())))
        .collect();
    nodes[&1]
        .raft
        .initialize(members)
        .await
        .expect("initialize");
    let first_leader = wait_leader(&[&nodes[&1], &nodes[&2], &nodes[&3]]).await;
    let behind = (1..=3u64)
        .rev()
        .find(|id| *id != first_leader)
        .expect("a follower");
    nodes[&behind].set_off(true);
    let live: Vec<&TestNode> = (1..=3u64)
        .filter(|id| *id != behind)
        .map(|id| &nodes[&id])
        .collect();

    // On two busy cores the live follower may campaign while the other node
    // is away (a leader whose lease lapsed answers ForwardToLeader): each
    // write follows the leader the live nodes agree on, with the same
    // request id, so a retried write is applied once.
    for i in 0..300u64 {
        let cmd = Command::Acquire(Acquire::mutex(
            RequestHeader {
                client_id: 9,
                request_id: i + 1,
                acked_request_id: 0,
            },
            format!("chunked-snapshot/resource-{i:04}"),
            LeaseSpec::New { ttl_ms: 600_000 },
            0,
            0,
        ));
        let deadline = tokio::time::Instant::now() + WAIT;
        loop {
            let leader = wait_leader(&live).await;
            match nodes[&leader]
                .raft
                .client_write(crate::types::Request(LogEntry {
                    stamp: Default::default(),
                    command: cmd.clone(),
                }))
                .await
            {
                Ok(_) => break,
                Err(openraft::error::RaftError::APIError(
                    openraft::error::ClientWriteError::ForwardToLeader(to),
                )) => {
                    assert!(
                        tokio::time::Instant::now() < deadline,
                        "write {i} still refused: {to:?}"
                    );
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
                Err(e) => panic!("write {i}: {e:?}"),
            }
        }
    }
    // Both live nodes apply every write, snapshot and purge their logs, so
    // whichever of them leads when the follower returns must send it a
    // snapshot.
    let leader = wait_leader(&live).await;
    let l = &nodes[&leader];
    let applied = l
        .metrics()
        .last_applied
        .map(|id| id.index())
        .expect("applied");
    for n in &live {
        wait_until("both live nodes applied the writes", || {
            n.metrics().last_applied.map(|id| id.index()) >= Some(applied)
        })
        .await;
        n.raft.trigger().snapshot().await.expect("snapshot");
        wait_until("the snapshot covers the writes", || {
            n.metrics().snapshot.map(|id| id.index()) >= Some(applied)
        })
        .await;
        n.raft.trigger().purge_log(applied).await.expect("purge");
        wait_until("the log is purged", || {
            n.metrics().purged.map(|id| id.index()) >= Some(applied)
        })
        .await;
    }
    let snapshot = l
        .raft
        .get_snapshot()
        .await
        .expect("read")
        .expect("a snapshot");
    assert!(
        snapshot.snapshot.len() > 3 * TEST_SNAPSHOT_CHUNK_BYTES,
        "{} bytes is not more than 3 chunks",
        snapshot.snapshot.len()
    );

    nodes[&behind].set_off(false);
    let b = &nodes[&behind];
    wait_until("the follower installed the snapshot", || {
        b.metrics().snapshot.map(|id| id.index()) >= Some(applied)
            && b.metrics().last_applied == l.metrics().last_applied
    })
    .await;
    assert!(b.calls_to("InstallSnapshotStream") >= 1, "streamed");
    assert_eq!(b.calls_to("InstallSnapshot"), 0, "never unary");
    assert_eq!(b.table_bytes(), l.table_bytes(), "the tables differ");
    assert!(
        l.shared
            .machine
            .lock()
            .expect("machine")
            .table
            .to_snapshot()
            .len()
            > 3 * TEST_SNAPSHOT_CHUNK_BYTES
    );

    // TakeSnapshotStream: the bytes TakeSnapshot returns, in parts of at
    // most 1 MiB, every part naming the node and the index.
    let other = (1..=3u64).find(|id| *id != leader).expect("another node");
    let mut client = peer_client(&set.node_dirs[&other], other, leader, &l.addr);
    let whole = client
        .take_snapshot(with_cluster_id(warden_proto::peer::TakeSnapshotRequest {}))
        .await
        .expect("take snapshot")
        .into_inner();
    let mut parts = client
        .take_snapshot_stream(with_cluster_id(warden_proto::peer::TakeSnapshotRequest {}))
        .await
        .expect("take snapshot stream")
        .into_inner();
    let mut streamed = Vec::new();
    let mut count = 0;
    while let Some(part) = parts.message().await.expect("part") {
        assert!(part.data.len() <= crate::raft::snapshot_chunks::MAX_SNAPSHOT_CHUNK_BYTES);
        assert_eq!((part.node_id, part.index), (leader, whole.index));
        streamed.extend_from_slice(&part.data);
        count += 1;
    }
    assert!(count >= 1);
    assert_eq!(streamed, whole.data);

    for node in nodes.into_values() {
        let _ = node.raft.shutdown().await;
        for t in node.tasks {
            t.abort();
        }
    }
}
