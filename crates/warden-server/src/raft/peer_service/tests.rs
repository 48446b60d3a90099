use super::*;

// Log-format gate (rolling upgrade): every Raft answer of this peer
// service, success or Raft-level error, advertises LOG_FORMAT.
#[test]
fn raft_answers_advertise_the_log_format() {
    let ok = reply(Ok::<u8, String>(1)).expect("encodes");
    assert_eq!(
        crate::raft::log_format::reported_format(ok.metadata()),
        crate::raft::log_format::LOG_FORMAT
    );
    let refused = reply(Err::<u8, String>("higher vote".into())).expect("encodes");
    assert_eq!(
        refused
            .metadata()
            .get(warden_proto::LOG_FORMAT_METADATA)
            .map(|v| v.to_str().expect("ascii").to_string()),
        Some(crate::raft::log_format::LOG_FORMAT_HEADER_VALUE.to_string())
    );
}

// L3 (failover) and S1: the early campaign comes after the leader lease
// (a voter refuses a pre-vote inside its own lease) plus the margin, and
// before openraft's own campaign at lease + [min, max); followers with
// different ids are staggered so that they do not split the vote.
#[test]
fn an_early_campaign_is_due_after_the_lease_and_before_the_timeout() {
    let delays: Vec<u64> = (1..=3)
        .map(|id| EarlyCampaign::new(id, 250, 500).delay().as_millis() as u64)
        .collect();
    // 500 ms lease + 10 ms margin + id/8 of the 250 ms spread.
    assert_eq!(delays, vec![541, 572, 603]);
    assert!(delays.iter().all(|d| *d > 500 && *d < 500 + 250));
    assert_eq!(EarlyCampaign::new(8, 250, 500).delay().as_millis(), 510);
    // The bench's 200/300 ms: 310 ms + 12, 25, 37 ms.
    let bench: Vec<u64> = (1..=3)
        .map(|id| EarlyCampaign::new(id, 200, 300).delay().as_millis() as u64)
        .collect();
    assert_eq!(bench, vec![322, 335, 347]);
}

// L3 (failover without needless elections): a campaign scheduled at a
// break is dropped when, by its due time, this node has granted its
// vote to a candidate (openraft restarts its own election timer then);
// otherwise the follower pre-votes against that candidate while it still
// counts its votes, the candidate grants it (its vote is not committed
// yet) and is deposed by a second election one term higher.
#[test]
fn an_early_campaign_is_dropped_after_this_node_voted() {
    let contact = tokio::time::Instant::now();
    let b = StreamBreak {
        contact,
        vote: Vote::new_committed(3, 1),
    };
    let at_due = |vote: Vote| AtDue {
        state: openraft::ServerState::Follower,
        contact: Some(contact),
        vote,
    };
    assert!(campaign_still_due(&b, &at_due(Vote::new_committed(3, 1))));
    // Voted for candidate 2 in term 4; its AppendEntries has not come yet.
    assert!(!campaign_still_due(&b, &at_due(Vote::new(4, 2))));
    // Any AppendEntries since, or no longer a follower: dropped too.
    let mut later = at_due(Vote::new_committed(3, 1));
    later.contact = Some(contact + Duration::from_millis(50));
    assert!(!campaign_still_due(&b, &later));
    let mut candidate = at_due(Vote::new_committed(3, 1));
    candidate.state = openraft::ServerState::Candidate;
    assert!(!campaign_still_due(&b, &candidate));
}

// L3: a break while a campaign already waits for an earlier one (a
// replication session the leader cancelled, then the leader's crash)
// is not lost: it gets its own wait (the earlier campaign is dropped when
// due, its contact having moved); two breaks at one contact are waited
// for once.
#[test]
fn a_later_break_gets_its_own_wait() {
    let c = EarlyCampaign::new(2, 250, 500);
    let t0 = tokio::time::Instant::now();
    let vote = Vote::new_committed(3, 1);
    assert!(c.first_for(t0), "the first break is waited for");
    assert!(
        !c.first_for(t0),
        "a second break at the same contact is not"
    );
    // The leader spoke again at 100 ms and its stream broke after that.
    let t1 = t0 + Duration::from_millis(100);
    assert!(c.first_for(t1), "a break after new contact is waited for");
    let at_due = AtDue {
        state: openraft::ServerState::Follower,
        contact: Some(t1),
        vote,
    };
    let first = StreamBreak { contact: t0, vote };
    let later = StreamBreak { contact: t1, vote };
    assert!(!campaign_still_due(&first, &at_due), "superseded");
    assert!(campaign_still_due(&later, &at_due));
}

// Bad input never panics the server: a Raft call from this node itself
// (a member's address pointing here) is refused, typed, naming the fix;
// calls from other nodes pass.
#[test]
fn a_raft_call_from_this_node_itself_is_refused() {
    let e = peer_status(refuse_self(3, 3).expect_err("own call"));
    assert_eq!(e.code(), tonic::Code::FailedPrecondition);
    assert!(e.message().contains("node 3 itself"), "{}", e.message());
    assert!(e.message().contains("--peers"), "{}", e.message());
    refuse_self(3, 1).expect("another node");
}

// A removed member cannot campaign (docs/operations.md "Changing
// membership"): once a node knows a membership, Vote/PreVote from an id
// outside it are refused; on an insecure node, replication and
// snapshots from outside the committed membership too.
#[tokio::test]
async fn votes_from_non_members_are_refused() {
    // openraft's runtime draws from a seeded generator set up per node
    // (`run_injected`); a bare `Raft::new` needs the same scope.
    crate::types::Rt::scope(7, votes_from_non_members_are_refused_body()).await;
}

async fn votes_from_non_members_are_refused_body() {
    use crate::types::MemberAddr;
    use std::collections::BTreeMap;
    use std::sync::Arc;

    use crate::store::{Db, LogStore, MaxStamp, StateMachineStore};

    let dir = tempfile::tempdir().expect("tempdir");
    let db = Db::open(dir.path()).expect("db");
    let clock = crate::clock::NodeClock::new(crate::clock::TokioClock::shared());
    let max_stamp = MaxStamp::default();
    let log = LogStore::new(db.clone(), max_stamp.clone()).expect("log store");
    let sm = StateMachineStore::open(db.clone(), clock, max_stamp).expect("sm");
    let config = openraft::Config::default().validate().expect("config");
    let floor = crate::raft::network::call_timeout_floor(config.election_timeout_min);
    let raft = Raft::new(
        1,
        Arc::new(config),
        crate::raft::network::Network::new(
            "c".into(),
            floor,
            Arc::new(crate::raft::log_format::LogFormats::new(1)),
            Arc::new(crate::raft::network::TcpConnector),
        ),
        log,
        sm,
    )
    .await
    .expect("raft");
    // No membership known yet: nothing to judge by.
    refuse_non_member(&raft, 9, false).expect("unknown membership");
    refuse_non_member(&raft, 9, true).expect("unknown membership");
    let members = BTreeMap::from([(1, MemberAddr::client_only("127.0.0.1:1"))]);
    raft.initialize(members).await.expect("initialize");
    let mut rx = raft.metrics();
    tokio::time::timeout(Duration::from_secs(10), async {
        while rx
            .borrow_watched()
            .committed_membership_config
            .membership()
            .get_node(&1)
            .is_none()
        {
            rx.changed().await.expect("metrics");
        }
    })
    .await
    .expect("membership applied");
    refuse_non_member(&raft, 1, false).expect("a member");
    // Insecure mode judges AppendEntries and snapshots by the committed
    // membership: node 4 is refused there too, node 1 is not.
    refuse_non_member(&raft, 1, true).expect("a committed member");
    assert_eq!(
        refuse_non_member(&raft, 4, true),
        Err(PeerRefusal::NotAMember { node_id: 4 })
    );
    let e = peer_status(refuse_non_member(&raft, 4, false).expect_err("a non-member"));
    assert_eq!(e.code(), tonic::Code::PermissionDenied);
    assert!(
        e.message().contains("node 4 is not a member"),
        "{}",
        e.message()
    );
    // A clean stop: once `stopping` is set (just before the Raft core
    // shuts down), peers' calls are answered Unavailable here and never
    // reach openraft, whose stopped core logged an ERROR for each.
    let (cluster_id, _) = watch::channel(Some("c".to_string()));
    let state = Arc::new(PeerState {
        node_id: 1,
        db: db.clone(),
        raft: OnceLock::new(),
        access: Arc::new(PeerAccess::new(
            false,
            cluster_id.subscribe(),
            crate::raft::peer_access::RemovedNodes::open(db).expect("removed"),
        )),
        cluster_id,
        empty_at_start: false,
        bootstrap_lock: Mutex::new(()),
        leader_contact: crate::raft::LeaderContact::default(),
        early_campaign: EarlyCampaign::new(1, 150, 300),
        connector: Arc::new(crate::raft::network::TcpConnector),
        stopping: Default::default(),
        formats: OnceLock::new(),
        heard: OnceLock::new(),
    });
    let _ = state.raft.set(raft.clone());
    let service = PeerService::new(state.clone());
    service.raft().expect("serving");
    state
        .stopping
        .store(true, std::sync::atomic::Ordering::Release);
    let e = peer_status(service.raft().expect_err("stopping"));
    assert_eq!(e.code(), tonic::Code::Unavailable);
    assert!(e.message().contains("stopping"), "{}", e.message());
    raft.shutdown().await.expect("shutdown");
}
