use super::*;

// docs/security.md "The peer service": an id that leaves the committed
// membership is removed for good (persisted: a reopened data dir still
// refuses it), an id that comes back is no longer removed, and the first
// membership observed removes nothing.
#[test]
fn removed_ids_follow_the_committed_membership_and_persist() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Db::open(dir.path()).expect("db");
    let removed = RemovedNodes::open(db.clone()).expect("open");
    let set = |ids: &[u64]| ids.iter().copied().collect::<BTreeSet<u64>>();
    assert_eq!(
        removed.observe(set(&[1, 2, 3])).expect("observe"),
        Vec::<u64>::new()
    );
    assert!(removed.ids().is_empty());
    // Node 4 added, then node 1 removed.
    assert!(removed
        .observe(set(&[1, 2, 3, 4]))
        .expect("observe")
        .is_empty());
    assert_eq!(removed.observe(set(&[2, 3, 4])).expect("observe"), vec![1]);
    assert!(removed.contains(1) && !removed.contains(4) && !removed.contains(9));
    // Coalesced changes (two removals seen at once) lose nothing.
    assert_eq!(removed.observe(set(&[4])).expect("observe"), vec![2, 3]);
    assert_eq!(removed.ids(), set(&[1, 2, 3]));
    drop(removed);
    let reopened = RemovedNodes::open(db.clone()).expect("reopen");
    assert_eq!(reopened.ids(), set(&[1, 2, 3]));
    // The first membership after a restart removes nothing by itself;
    // node 2 added back is no longer refused.
    assert!(reopened.observe(set(&[2, 4])).expect("observe").is_empty());
    assert_eq!(reopened.ids(), set(&[1, 3]));
    assert_eq!(
        db.get_meta_string(KEY_REMOVED_NODE_IDS)
            .expect("meta")
            .as_deref(),
        Some("1,3")
    );
}

// Bad input never panics: a corrupt persisted list keeps what parses.
#[test]
fn a_corrupt_removed_list_keeps_what_parses() {
    assert_eq!(parse_ids("1,x,,3, 7"), [1, 3, 7].into_iter().collect());
    assert_eq!(format_ids(&[5, 1].into_iter().collect()), "1,5");
}

// The peer service's wire: each refusal has one code, and the messages
// name what was refused.
#[test]
fn refusals_map_to_one_code_each() {
    let cases = [
        (PeerRefusal::NoCertificate, Code::Unauthenticated),
        (
            PeerRefusal::NotANode {
                identity: "client alice".into(),
            },
            Code::PermissionDenied,
        ),
        (PeerRefusal::Removed { node_id: 4 }, Code::PermissionDenied),
        (
            PeerRefusal::ClaimMismatch {
                certificate: 4,
                claimed: 1,
            },
            Code::PermissionDenied,
        ),
        (
            PeerRefusal::NotAMember { node_id: 9 },
            Code::PermissionDenied,
        ),
        (
            PeerRefusal::Unconfirmed {
                node_id: 9,
                yes: 1,
                needed: 2,
                voters: 3,
            },
            Code::PermissionDenied,
        ),
        (PeerRefusal::Confirming { node_id: 9 }, Code::Unavailable),
        (
            PeerRefusal::FromItself { node_id: 3 },
            Code::FailedPrecondition,
        ),
        (PeerRefusal::Bootstrapping, Code::Unavailable),
        (
            PeerRefusal::ClusterMismatch {
                mine: "a".into(),
                theirs: "none".into(),
            },
            Code::PermissionDenied,
        ),
        (PeerRefusal::BadPayload("x".into()), Code::InvalidArgument),
        (PeerRefusal::TooLarge("x".into()), Code::OutOfRange),
    ];
    for (refusal, code) in cases {
        let text = refusal.to_string();
        let status = peer_status(refusal);
        assert_eq!(status.code(), code, "{text}");
        assert_eq!(status.message(), text);
    }
    assert!(PeerRefusal::Removed { node_id: 4 }
        .to_string()
        .starts_with("node 4 was removed"));
    assert!(PeerRefusal::ClaimMismatch {
        certificate: 4,
        claimed: 1
    }
    .to_string()
    .contains("node 4's, but the message is from node 1"));
}

// A certificate's node id is the only sender a Raft message may claim;
// an insecure caller (no certificate) is judged by membership instead.
#[test]
fn a_claim_must_match_the_certificate() {
    let node4 = PeerCaller {
        node_id: Some(4),
        remote: None,
    };
    node4.check_claim(4).expect("its own id");
    assert_eq!(
        node4.check_claim(1),
        Err(PeerRefusal::ClaimMismatch {
            certificate: 4,
            claimed: 1
        })
    );
    PeerCaller {
        node_id: None,
        remote: None,
    }
    .check_claim(1)
    .expect("insecure");
}

// What bad input gets (a scanner at the peer service): at most one line
// per reason per interval, the next line counts what was suppressed,
// and each reason has its own window; refusals that say nothing about
// the caller get no window.
#[test]
fn refusal_lines_are_rate_limited_per_reason() {
    let log = RefusalLog::new(Duration::from_secs(1));
    let t0 = Instant::now();
    assert_eq!(log.admit("removed_node", t0), Some(0));
    for i in 1..=20 {
        assert_eq!(
            log.admit("removed_node", t0 + Duration::from_millis(i * 10)),
            None
        );
    }
    assert_eq!(
        log.admit("claim_mismatch", t0 + Duration::from_millis(300)),
        Some(0)
    );
    assert_eq!(
        log.admit("removed_node", t0 + Duration::from_secs(1)),
        Some(20)
    );
    assert_eq!(
        PeerRefusal::Removed { node_id: 4 }.reason(),
        Some("removed_node")
    );
    assert_eq!(PeerRefusal::Bootstrapping.reason(), None);
    assert_eq!(PeerRefusal::BadPayload("x".into()).reason(), None);
}
