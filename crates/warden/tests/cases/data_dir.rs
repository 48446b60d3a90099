//! docs/semantics.md "Membership and data loss": a data dir belongs to one node. A
//! copy of another node's dir would carry that node's vote (it could vote
//! twice in one term), so a node refuses to start on it.

use std::time::Duration;

use crate::harness::Cluster;

fn copy_dir(from: &std::path::Path, to: &std::path::Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for e in std::fs::read_dir(from).expect("read_dir") {
        let e = e.expect("entry");
        std::fs::copy(e.path(), to.join(e.file_name())).expect("copy");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_refuses_another_nodes_data_dir() {
    let mut cluster = Cluster::start(3, &[]).await;
    let leader = cluster.wait_leader(Duration::from_secs(10)).await;
    let victim = (1..=3).find(|id| *id != leader).expect("follower");
    let donor = (1..=3)
        .find(|id| *id != leader && *id != victim)
        .expect("other");
    cluster.kill(victim);
    cluster.kill(donor);
    cluster.wipe(victim);
    let (from, to) = (
        cluster.nodes[&donor].dir.clone(),
        cluster.nodes[&victim].dir.clone(),
    );
    copy_dir(&from, &to);
    let (code, stderr) = cluster.run_to_exit(victim, Duration::from_secs(20));
    assert_eq!(code, Some(65), "lost or foreign data: {stderr}");
    assert!(
        stderr.contains(&format!("belongs to node {donor}")),
        "{stderr}"
    );
}

/// docs/semantics.md "Membership": a data dir from another cluster is refused at
/// start (its peers all name a different cluster id) instead of lingering as
/// a node whose every peer RPC is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_refuses_another_clusters_data_dir() {
    // Cluster B exists only to leave a node-3 data dir of another cluster.
    let mut other = Cluster::start(3, &[]).await;
    for id in 1..=3 {
        other.kill(id);
    }
    let foreign = other.nodes[&3].dir.clone();

    let mut cluster = Cluster::start(3, &[]).await;
    cluster.kill(3);
    cluster.wipe(3);
    let to = cluster.nodes[&3].dir.clone();
    copy_dir(&foreign, &to);
    let (code, stderr) = cluster.run_to_exit(3, Duration::from_secs(20));
    assert_eq!(code, Some(65), "lost or foreign data: {stderr}");
    assert!(stderr.contains("another cluster's data dir"), "{stderr}");
    // The rightful members keep serving.
    let (code, _, err) = cluster.cli(&["acquire", "still-here", "--ttl", "5s"]);
    assert_eq!(code, 0, "{err}");
}
