//! `--peer-listen` with real processes (docs/security.md "The peer
//! service"): a cluster whose every node serves the peer (Raft) service on a
//! port of its own elects, grants, survives its leader's kill and adds a
//! fourth node with `cluster add-node --peer-addr`; a peer call with a node
//! certificate on a client port, and a client call on a peer port, find no
//! service; leader hints and `ClusterStatus` carry client addresses.

use std::time::{Duration, Instant};

use tonic::Code;
use warden_proto::peer::peer_client::PeerClient;
use warden_proto::peer::{Blob, BootstrapStateRequest};
use warden_proto::v1 as pb;
use warden_proto::v1::lock_client::LockClient;
use warden_tls::ClientTls;

use crate::harness::{certs, cluster_status_at, take, Cluster};

/// A peer client of the node at `addr`, presenting node `from`'s certificate.
fn node_peer(from: u64, addr: &str) -> PeerClient<tonic::transport::Channel> {
    let tls = ClientTls::load_node(&certs().node_dir(from), from).expect("node certificate");
    PeerClient::new(tls.channel_lazy(addr).expect("channel"))
}

/// root's client certificate.
fn root_tls() -> ClientTls {
    ClientTls::load_client(certs().client_dir_with("root"), "root").expect("root certificate")
}

fn with_timeout<T>(message: T, cluster_id: Option<&str>) -> tonic::Request<T> {
    let mut r = tonic::Request::new(message);
    if let Some(id) = cluster_id {
        r.metadata_mut().insert(
            warden_proto::CLUSTER_ID_METADATA,
            id.parse().expect("ascii"),
        );
    }
    r.set_timeout(Duration::from_secs(5));
    r
}

/// A vote request from `candidate` at `term` (what a forger would send to
/// depose the leader), encoded as the peer service carries it.
fn vote_blob(term: u64, candidate: u64, s: &pb::ClusterStatusResponse) -> Blob {
    use warden_server::types::{LogId, TypeConfig, Vote};
    let last = LogId::new(
        openraft::vote::leader_id_adv::LeaderId {
            term: s.term,
            node_id: s.leader_id,
        },
        s.last_log_index,
    );
    let vote =
        openraft::raft::VoteRequest::<TypeConfig>::new(Vote::new(term, candidate), Some(last));
    Blob {
        data: postcard::to_allocvec(&vote).expect("encode"),
    }
}

/// The leader's ClusterStatus (through `cluster_status_at`, which follows
/// no hint: asked of the leader itself).
async fn leader_status(cluster: &Cluster, within: Duration) -> pb::ClusterStatusResponse {
    let leader = cluster.wait_leader(within).await;
    cluster_status_at(&cluster.addr(leader))
        .await
        .expect("the leader's status")
}

// docs/security.md "The peer service" (the client/peer port split, as etcd's
// 2379/2380): with `--peer-listen` on every node the cluster elects and
// grants over its peer ports; ClusterStatus shows each member's client
// address as `addr` and its peer port as `peer_addr`, and a follower's
// NotLeader hint names the leader's client address; a Vote at a higher
// term and a BootstrapState with a member's node certificate on a client
// port are Unimplemented and move neither leader nor term, while the same
// BootstrapState on the peer port is answered; a client call (ClusterStatus,
// as root) on a peer port is Unimplemented. The cluster survives its
// leader's kill with the lock still held at its token (S2, S3), and `warden
// cluster add-node --peer-addr` adds a fourth node with its own peer port,
// which catches up and answers with the leader's client address.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cluster_on_peer_ports_serves_peers_there_only() {
    let mut cluster = Cluster::prepare(3, &[]);
    cluster.use_peer_ports();
    for id in 1..=3 {
        cluster.spawn(id);
    }
    let s = leader_status(&cluster, Duration::from_secs(20)).await;
    let leader = s.leader_id;
    let mut shown: Vec<(u64, String, String)> = s
        .members
        .iter()
        .map(|m| (m.id, m.addr.clone(), m.peer_addr.clone()))
        .collect();
    shown.sort();
    let expected: Vec<(u64, String, String)> = (1..=3)
        .map(|id| (id, cluster.addr(id), cluster.peer_addr(id)))
        .collect();
    assert_eq!(shown, expected, "ClusterStatus: client addr and peer_addr");

    let api = cluster.api().client().await;
    let (lease_id, fencing_token) = take(&api, "held", Duration::from_secs(120)).await;

    // A follower's NotLeader hint: the leader's client address.
    let followers: Vec<u64> = (1..=3).filter(|id| *id != leader).collect();
    for &f in &followers {
        let e = cluster_status_at(&cluster.addr(f))
            .await
            .expect_err("a follower redirects");
        assert_eq!(
            warden_client::leader_hint(e.metadata()).as_deref(),
            Some(cluster.addr(leader).as_str()),
            "node {f}: {e:?}"
        );
    }

    // Peer calls with a member's node certificate on every client port.
    for id in 1..=3 {
        let from = if id == leader { followers[0] } else { leader };
        let mut on_client_port = node_peer(from, &cluster.addr(id));
        let e = on_client_port
            .vote(with_timeout(
                vote_blob(s.term + 5, from, &s),
                Some(&s.cluster_id),
            ))
            .await
            .expect_err("a vote on the client port");
        assert_eq!(e.code(), Code::Unimplemented, "node {id}: {e:?}");
        let e = on_client_port
            .bootstrap_state(with_timeout(
                BootstrapStateRequest { from_node_id: from },
                None,
            ))
            .await
            .expect_err("bootstrap state on the client port");
        assert_eq!(e.code(), Code::Unimplemented, "node {id}: {e:?}");
        // The same call on the peer port is the peer service's.
        let answer = node_peer(from, &cluster.peer_addr(id))
            .bootstrap_state(with_timeout(
                BootstrapStateRequest { from_node_id: from },
                None,
            ))
            .await
            .expect("bootstrap state on the peer port")
            .into_inner();
        assert_eq!(
            (answer.node_id, answer.committed_cluster_id.as_str()),
            (id, s.cluster_id.as_str())
        );
        // A client call on the peer port.
        let mut client_on_peer_port = LockClient::new(
            root_tls()
                .channel_lazy(&cluster.peer_addr(id))
                .expect("channel"),
        );
        let e = client_on_peer_port
            .cluster_status(with_timeout(pb::ClusterStatusRequest {}, None))
            .await
            .expect_err("a client call on the peer port");
        assert_eq!(e.code(), Code::Unimplemented, "node {id}: {e:?}");
    }
    let after = leader_status(&cluster, Duration::from_secs(5)).await;
    assert_eq!(
        (after.leader_id, after.term),
        (s.leader_id, s.term),
        "the refused vote moved the leader or the term"
    );

    // The leader is killed; the others elect over their peer ports.
    cluster.kill(leader);
    let s2 = leader_status(&cluster, Duration::from_secs(20)).await;
    assert_ne!(s2.leader_id, leader);
    assert!(s2.term > s.term, "{} > {}", s2.term, s.term);
    let st = api.status("held").await.expect("status after the kill");
    assert_eq!(
        st.holder.map(|h| (h.lease_id, h.fencing_token)),
        Some((lease_id, fencing_token)),
        "S3: the held lock survives the leader's kill"
    );
    let (_, next) = take(&api, "after-kill", Duration::from_secs(30)).await;
    assert!(next > fencing_token, "S2: {next} > {fencing_token}");
    // The killed node comes back.
    cluster.spawn(leader);
    cluster.wait_applied(leader, Duration::from_secs(20)).await;

    // Node 4 joins with a peer port of its own, added with the CLI.
    let addr4 = cluster.spawn_joiner(4, &[]);
    let peer4 = cluster.peer_addr(4);
    let deadline = Instant::now() + Duration::from_secs(30);
    let added = loop {
        let (code, json, stderr) = cluster.cli(&[
            "cluster",
            "add-node",
            "4",
            "--addr",
            &addr4,
            "--peer-addr",
            &peer4,
        ]);
        if code == 0 {
            break json;
        }
        // A joiner that has just started is retried until the deadline.
        let transient = stderr.contains("unreachable");
        assert!(
            transient && Instant::now() < deadline,
            "add-node: exit {code}: {stderr}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert!(
        added["voters"]
            .as_array()
            .is_some_and(|v| v.iter().any(|id| id == 4)),
        "{added}"
    );
    cluster.wait_applied(4, Duration::from_secs(30)).await;
    let s3 = leader_status(&cluster, Duration::from_secs(10)).await;
    let m4 = s3.members.iter().find(|m| m.id == 4).expect("member 4");
    assert_eq!(
        (m4.addr.as_str(), m4.peer_addr.as_str()),
        (addr4.as_str(), peer4.as_str())
    );
    assert_eq!(m4.role, "follower");
    let e = cluster_status_at(&addr4).await.expect_err("node 4 follows");
    assert_eq!(
        warden_client::leader_hint(e.metadata()).as_deref(),
        Some(cluster.addr(s3.leader_id).as_str())
    );
    // And what it applied is the cluster's: the lock is held at its token.
    let st = api.status("held").await.expect("status");
    assert_eq!(
        st.holder.map(|h| (h.lease_id, h.fencing_token)),
        Some((lease_id, fencing_token))
    );
    for id in 1..=4 {
        cluster.kill(id);
    }
}
