//! L2 through restarts (etcd issue 9395's pattern, found here by a
//! fault-injection run): a leader killed with -9 and restarted at once resumes
//! its term without an election. Its cluster clock must resume from the
//! largest stamp in its log (and what it heard), not restart from its replay
//! time, or a crash-looping leader keeps a dead holder's lock forever.

use std::time::{Duration, Instant};

use crate::harness::Cluster;

/// TTL + E with the default timing (E = 1.6 s), plus 2 s for the time without
/// a usable leader that each immediate restart costs (L1: "plus any time
/// without a quorum"); without the fix the lock was never freed in 40 s.
const BOUND: Duration = Duration::from_millis(2_000 + 1_600 + 2_000);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crash_looping_leader_does_not_extend_a_dead_lease() {
    let mut cluster = Cluster::start(3, &[]).await;
    let api = cluster.api();
    let (lease, _) = api
        .acquire(121, 1, "victim", 2_000)
        .await
        .expect("acquire")
        .grant();
    api.renew(lease).await.expect("renew");
    let acked = Instant::now();
    let mut kills = 0;
    let gone = loop {
        let leader = cluster.wait_leader(Duration::from_secs(10)).await;
        // kill -9 and restart at once, before the others time out.
        cluster.kill(leader);
        cluster.spawn(leader);
        kills += 1;
        let st = api.status("victim").await.expect("status");
        let now = Instant::now();
        if st.holder.is_none() {
            break now;
        }
        assert_eq!(st.holder.map(|h| h.lease_id), Some(lease));
        assert!(
            now < acked + BOUND,
            "L2: lease still held {:?} after its last renew, {kills} leader restarts",
            now - acked
        );
    };
    eprintln!(
        "freed {:?} after the renew, {kills} leader restarts",
        gone - acked
    );
}
