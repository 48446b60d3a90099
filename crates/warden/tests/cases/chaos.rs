//! Real-process chaos on real disks (issue 6, part 3): a kill -9 loop under a
//! client load, and a leader stopped with SIGSTOP past the election timeout.
//! The simulator (`warden-sim`) covers the same properties under many more
//! fault schedules; these tests keep the real redb files, fsyncs and signals
//! honest. A network-namespace partition test is not written yet (see
//! docs/testing.md).

use std::time::{Duration, Instant};

use crate::harness::{cluster_status_at, Cluster};

/// Rounds of the kill -9 loop: `WARDEN_CHAOS_ROUNDS`, default 20 (CI).
fn chaos_rounds() -> u64 {
    std::env::var("WARDEN_CHAOS_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20)
}

/// Long enough that no grant of the loop expires while the loop runs.
const LOOP_TTL_MS: u64 = 600_000;

// S3 and S2 under kill -9: each round acquires a new resource and releases
// the previous round's, then kills a node with SIGKILL (the leader on even
// rounds) and restarts it. After each round, every acknowledged grant is
// still held with its token, every acknowledged release is still free, and
// tokens only grew.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill9_loop_loses_no_acknowledged_change() {
    let rounds = chaos_rounds();
    let mut cluster = Cluster::start(3, &[]).await;
    let api = cluster.api();
    let mut last_token = 0u64;
    let mut previous: Option<(String, u64, u64)> = None;
    let started = Instant::now();
    for round in 0..rounds {
        let resource = format!("chaos-{round}");
        let (lease, token) = api
            .acquire(7_001, 2 * round + 1, &resource, LOOP_TTL_MS)
            .await
            .unwrap_or_else(|e| panic!("round {round}: acquire: {e}"))
            .grant();
        assert!(
            token > last_token,
            "S2: round {round}: token {token} after token {last_token}"
        );
        last_token = token;
        if let Some((r, l, t)) = &previous {
            api.release(7_001, 2 * round + 2, r, *l, *t)
                .await
                .unwrap_or_else(|e| panic!("round {round}: release: {e}"));
        }
        let victim = if round % 2 == 0 {
            cluster.wait_leader(Duration::from_secs(15)).await
        } else {
            1 + (round / 2) % 3
        };
        cluster.kill(victim);
        cluster.spawn(victim);
        cluster.wait_leader(Duration::from_secs(15)).await;
        let held = api
            .status(&resource)
            .await
            .unwrap_or_else(|e| panic!("round {round}: status: {e}"));
        assert_eq!(
            held.holder.map(|h| (h.lease_id, h.fencing_token)),
            Some((lease, token)),
            "S3: round {round}: the acknowledged grant of {resource} was lost (killed node {victim})"
        );
        if let Some((r, _, _)) = &previous {
            let freed = api
                .status(r)
                .await
                .unwrap_or_else(|e| panic!("round {round}: status: {e}"));
            assert!(
                freed.holder.is_none(),
                "S3: round {round}: the acknowledged release of {r} was undone: {:?}",
                freed.holder
            );
        }
        previous = Some((resource, lease, token));
    }
    eprintln!(
        "{rounds} kill -9 rounds in {:.1} s",
        started.elapsed().as_secs_f64()
    );
}

fn signal(cluster: &Cluster, id: u64, sig: nix::sys::signal::Signal) {
    let child = cluster.nodes[&id].child.as_ref().expect("node running");
    let pid = nix::unistd::Pid::from_raw(i32::try_from(child.id()).expect("pid"));
    nix::sys::signal::kill(pid, sig).expect("signal");
}

// etcd issue 15247 on real processes: a leader stopped with SIGSTOP past the
// election timeout wakes with every lease due on its own clock. It must not
// act as leader: the lease its holder kept renewing through the new leader
// stays held with the same token, and the woken node names the new leader.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigstopped_leader_does_not_act_as_leader_when_continued() {
    use nix::sys::signal::Signal;
    let cluster = Cluster::start(3, &[]).await;
    let api = cluster.api();
    let old = cluster.wait_leader(Duration::from_secs(15)).await;
    let (lease, token) = api
        .acquire(7_101, 1, "stopped-leader", 6_000)
        .await
        .expect("acquire")
        .grant();
    signal(&cluster, old, Signal::SIGSTOP);
    // Renew through whoever leads until another node leads and the old
    // leader has been stopped for longer than the lease's TTL (6 s: each
    // renew may first time out on the stopped node).
    let stopped_at = Instant::now();
    let mut renew_every = tokio::time::interval(Duration::from_millis(400));
    let mut new_leader = None;
    while new_leader.is_none() || stopped_at.elapsed() < Duration::from_millis(7_000) {
        renew_every.tick().await;
        api.renew(lease)
            .await
            .expect("renew while the leader is stopped");
        if new_leader.is_none() {
            for id in cluster.nodes.keys().filter(|id| **id != old) {
                if let Ok(s) = cluster_status_at(&cluster.addr(*id)).await {
                    if s.leader_id != 0 && s.leader_id != old {
                        new_leader = Some(s.leader_id);
                    }
                }
            }
        }
        assert!(
            stopped_at.elapsed() < Duration::from_secs(30),
            "no new leader within 30 s of stopping the old one"
        );
    }
    let new_leader = new_leader.expect("new leader");
    signal(&cluster, old, Signal::SIGCONT);
    // The woken node's clock jumped: every lease is due in its own table.
    // Whatever it tries, the holder that kept renewing keeps its grant.
    for _ in 0..10 {
        renew_every.tick().await;
        api.renew(lease)
            .await
            .expect("renew after the old leader woke");
        let st = api.status("stopped-leader").await.expect("status");
        assert_eq!(
            st.holder.map(|h| (h.lease_id, h.fencing_token)),
            Some((lease, token)),
            "S4/S5: the woken ex-leader ended a lease renewed through the new leader"
        );
    }
    if let Ok(s) = cluster_status_at(&cluster.addr(old)).await {
        eprintln!(
            "woken node {old} names leader {} (new leader {new_leader})",
            s.leader_id
        );
    }
    // A few more renew rounds after it rejoined: its stale expiries (if it
    // proposed any) must not have applied.
    for _ in 0..5 {
        renew_every.tick().await;
        api.renew(lease).await.expect("renew");
    }
    let st = api.status("stopped-leader").await.expect("status");
    assert_eq!(
        st.holder.map(|h| (h.lease_id, h.fencing_token)),
        Some((lease, token))
    );
}
