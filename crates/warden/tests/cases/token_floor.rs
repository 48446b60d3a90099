//! The operator-supplied token floor (S2, docs/semantics.md "Membership and data
//! loss"): a cluster re-created from empty data dirs with `--token-floor N`
//! issues only tokens above N, so fences that saw the old cluster's tokens
//! keep refusing stale writers. Real processes.

use crate::harness::Cluster;

// S2, docs/semantics.md "Membership and data loss": after total loss, the new
// cluster's first token is above the floor, and tokens keep increasing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn new_cluster_tokens_start_above_the_floor() {
    let cluster = Cluster::start(3, &["--token-floor", "1000"]).await;
    let api = cluster.api();
    let (lease, first) = api
        .acquire(41, 1, "orders", 10_000)
        .await
        .expect("acquire")
        .grant();
    assert!(first > 1000, "first token {first} is not above the floor");
    api.release(41, 2, "orders", lease, first)
        .await
        .expect("release");
    let (_, second) = api
        .acquire(42, 1, "orders", 10_000)
        .await
        .expect("acquire")
        .grant();
    assert!(second > first, "{second} <= {first}");
}

// A bad floor is refused at startup with an error naming the flag.
#[test]
fn out_of_range_floor_names_the_flag() {
    let mut cluster = Cluster::prepare(1, &["--token-floor", "9007199254740991"]);
    let (code, out) = cluster.run_to_exit(1, std::time::Duration::from_secs(20));
    assert_ne!(code, Some(0));
    assert!(out.contains("--token-floor"), "{out}");
}
