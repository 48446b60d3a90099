//! Cluster time on the replication path, through the peer service
//! (docs/semantics.md "Time", [`crate::raft::cluster_time_wire`]). Each
//! test names the property it defends.
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use openraft::raft::AppendEntriesRequest;
use tokio::sync::watch;
use warden_proto::peer::peer_server::Peer;
use warden_proto::peer::Blob;

use warden_core::types::LeaderId;

use crate::clock::{Clock, ClockError, NodeClock};
use crate::raft::cluster_time_wire::TimedAppend;
use crate::raft::peer_access::{PeerAccess, RemovedNodes};
use crate::raft::peer_service::{EarlyCampaign, PeerService, PeerState};
use crate::raft::Raft;
use crate::store::{Db, LogStore, MaxStamp, StateMachineStore};
use crate::types::{TypeConfig, Vote};

/// This node's clock, set by the test.
#[derive(Debug, Default)]
struct Manual(Mutex<Duration>);

impl Clock for Manual {
    fn now(&self) -> Result<Duration, ClockError> {
        Ok(*self.0.lock().expect("clock"))
    }
}

/// An AppendEntries heartbeat of leader 1 in `term`, carrying its
/// cluster time `at_ms`, as the peer client sends it.
fn heartbeat(term: u64, at_ms: Option<u64>) -> tonic::Request<Blob> {
    let rpc = AppendEntriesRequest::<TypeConfig> {
        vote: Vote::new_committed(term, 1),
        prev_log_id: None,
        leader_commit: None,
        entries: Vec::new(),
    };
    let data = postcard::to_allocvec(&TimedAppend {
        cluster_time_ms: at_ms,
        rpc,
    })
    .expect("encode");
    let mut req = tonic::Request::new(Blob { data });
    req.metadata_mut().insert(
        warden_proto::CLUSTER_ID_METADATA,
        "c".parse().expect("ascii"),
    );
    req
}

/// The answer's result: true for a success, false for `HigherVote`.
fn accepted(answer: tonic::Response<Blob>) -> bool {
    let r: Result<openraft::raft::AppendEntriesResponse<TypeConfig>, String> =
        postcard::from_bytes(&answer.get_ref().data).expect("decode");
    match r.expect("a Raft answer") {
        openraft::raft::AppendEntriesResponse::Success => true,
        openraft::raft::AppendEntriesResponse::HigherVote(_) => false,
        other => panic!("unexpected answer {other:?}"),
    }
}

// "Time" (continuity through elections): a follower that accepted an
// AppendEntries keeps the cluster time it carried, with its own clock
// then, so that if it is elected its clock starts from that time plus
// its own elapsed time over 1 + ρ; a call it refused (a stale leader's,
// answered HigherVote) and a call without a time change nothing.
#[tokio::test]
async fn a_follower_keeps_the_cluster_time_of_an_accepted_append() {
    crate::types::Rt::scope(7, follower_keeps_heard_time()).await;
}

async fn follower_keeps_heard_time() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Db::open(dir.path()).expect("db");
    let manual = Arc::new(Manual::default());
    *manual.0.lock().expect("clock") = Duration::from_secs(10);
    let clock = NodeClock::new(manual.clone());
    let max_stamp = MaxStamp::default();
    let log = LogStore::new(db.clone(), max_stamp.clone()).expect("log store");
    let sm = StateMachineStore::open(db.clone(), clock, max_stamp).expect("sm");
    let shared = sm.shared.clone();
    let config = openraft::Config::default().validate().expect("config");
    let floor = crate::raft::network::call_timeout_floor(config.election_timeout_min);
    let raft = Raft::new(
        2,
        Arc::new(config),
        crate::raft::network::Network::new(
            "c".into(),
            floor,
            Arc::new(crate::raft::log_format::LogFormats::new(2)),
            Arc::new(crate::raft::network::TcpConnector),
        ),
        log,
        sm,
    )
    .await
    .expect("raft");
    let (cluster_id, _) = watch::channel(Some("c".to_string()));
    let state = Arc::new(PeerState {
        node_id: 2,
        db: db.clone(),
        raft: OnceLock::new(),
        access: Arc::new(PeerAccess::new(
            false,
            cluster_id.subscribe(),
            RemovedNodes::open(db).expect("removed"),
        )),
        cluster_id,
        empty_at_start: false,
        bootstrap_lock: Mutex::new(()),
        leader_contact: crate::raft::LeaderContact::default(),
        early_campaign: EarlyCampaign::new(2, 150, 300),
        connector: Arc::new(crate::raft::network::TcpConnector),
        stopping: Default::default(),
        formats: OnceLock::new(),
        heard: OnceLock::new(),
    });
    let _ = state.raft.set(raft.clone());
    let _ = state.heard.set(shared.clone());
    let service = PeerService::new(state);

    // Leader 1 of term 2 at cluster time 50 s: accepted, kept.
    let answer = service
        .append_entries(heartbeat(2, Some(50_000)))
        .await
        .expect("answered");
    assert!(accepted(answer), "term 2's heartbeat is accepted");
    // A stale leader (term 1) with a later time: refused, not kept.
    let answer = service
        .append_entries(heartbeat(1, Some(90_000)))
        .await
        .expect("answered");
    assert!(!accepted(answer), "term 1's heartbeat is refused");
    // A leader without a base yet: accepted, nothing to keep.
    let answer = service
        .append_entries(heartbeat(2, None))
        .await
        .expect("answered");
    assert!(accepted(answer));

    // 1,010 ms later on this node's clock, it starts leading with an
    // empty log: 50,000 + 1,010 / 1.01.
    *manual.0.lock().expect("clock") = Duration::from_millis(11_010);
    let me = LeaderId {
        term: 3,
        node_id: 2,
    };
    let base = shared.cluster_clock.start_leading(
        me,
        shared.max_stamp.get(),
        shared.max_stamp.term(),
        shared.clock.now(),
    );
    assert_eq!(base, 51_000);
    raft.shutdown().await.expect("shutdown");
}
