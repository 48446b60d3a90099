//! Scenarios about who gets a resource next: a due waiter is never granted
//! (S8), two grants by one entry carry growing tokens (S2), and a late
//! release never frees a newer grant (S6).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use warden_client::{AcquireOptions, ClientOptions};

use super::client::{
    client_ctx, connect_at, cut_off, leader_host, node_hosts, queue_and_abandon, reconnect,
    sleep_until, spawn_waiter, waiting, Waiter,
};
use super::shape::{ms, Def, Scenario, Setup, LAN};
use crate::env::global_now;
use crate::faults::Script;
use crate::world::{lock, sleep};

/// S8, Jepsen etcd 3.4.3 (a waiter whose lease expired while it waited
/// was granted the lock): the holder's client cuts the leader off from the
/// other nodes itself, so no scripted faults.
pub(super) const DUE_WAITER: Def = Def {
    scenario: Scenario::DueWaiter,
    name: "due-waiter",
    fault_secs: 3,
    faults: Script::None,
    spawn: due_waiter,
    cluster: LAN,
};

/// The clients of [`DUE_WAITER`]: holder `h` takes r0 with a 1.5 s lease
/// and walks away; three waiters of `w` queue behind it, their waits
/// ending 30, 60 and 90 ms after `h`'s lease. `h`'s client cuts the leader
/// off 60 ms before that lease ends, so nothing applies until the new
/// leader's first entry, by when all four have ended: its sweep ends `h`'s
/// lease first (instant order) and the hand-off must skip the three ended
/// waits (docs/semantics.md S8: one predicate, `now` from the entry).
fn due_waiter(sim: &mut turmoil::Sim<'_>, s: &mut Setup<'_>) {
    let h = client_ctx(&s.world, "h", 7, -2_000);
    s.world.principal("w");
    let granted_at: Arc<Mutex<Option<Duration>>> = Arc::new(Mutex::new(None));
    let (endpoints, end) = (s.endpoints.clone(), s.fault_end);
    let hosts = node_hosts(&s.endpoints);
    let roles = s.world.roles.clone();
    let granted = granted_at.clone();
    sim.client("h", async move {
        let client = connect_at(&roles, ms(1_000), endpoints, crate::env::client_options()).await?;
        let opts = AcquireOptions::with_ttl(ms(1_500));
        if h.acquire(&client, "r0", opts).await.is_some() {
            let t_a = global_now();
            *lock(&granted) = Some(t_a);
            let leader = leader_host(&client).await;
            sleep_until(t_a + ms(1_440)).await;
            cut_off(&leader, &hosts);
            sleep_until(t_a + ms(3_000)).await;
            reconnect(&leader, &hosts);
        }
        sleep_until(end).await;
        Ok(())
    });
    let endpoints = s.endpoints.clone();
    let roles = s.world.roles.clone();
    sim.client("w", async move {
        let client = connect_at(&roles, ms(1_000), endpoints, crate::env::client_options()).await?;
        let t_a = loop {
            if let Some(t) = *lock(&granted_at) {
                break t;
            }
            sleep(ms(10)).await;
        };
        sleep_until(t_a + ms(300)).await;
        for ends in [1_530, 1_560, 1_590] {
            let wait = (t_a + ms(ends)).saturating_sub(global_now());
            // Queued, then abandoned without its cancel: only its wait's
            // end removes it.
            queue_and_abandon(client.acquire("r0", waiting(ms(20_000), wait)), ms(20)).await;
        }
        Ok(())
    });
}

/// S2 (docs/semantics.md S2: "the bare log index is not enough", one entry
/// can make several grants of one resource): the clients make the shape
/// themselves, so no scripted faults.
pub(super) const BATCHED_HANDOFF: Def = Def {
    scenario: Scenario::BatchedHandoff,
    name: "batched-handoff",
    fault_secs: 3,
    faults: Script::None,
    spawn: batched_handoff,
    cluster: LAN,
};

/// The clients of [`BATCHED_HANDOFF`]: a holder `a` and a waiter (lease
/// `lb`, queued by `a`'s client) of r0 stop renewing after one renew of both
/// in one batch, so both leases end at one instant and one entry's sweep
/// ends both, in lease order: r0 is freed, the hand-off skips `lb`'s ended
/// wait (S8: one predicate, however the two wait on each other: `lb` also
/// holds r1, on which `a`'s lease waits) and grants r0 to `c` with a fresh
/// token (S2).
fn batched_handoff(sim: &mut turmoil::Sim<'_>, s: &mut Setup<'_>) {
    let a = client_ctx(&s.world, "a", 37, 2_000);
    let c = client_ctx(&s.world, "c", 41, -2_000);
    let (endpoints, end) = (s.endpoints.clone(), s.fault_end);
    let roles = s.world.roles.clone();
    sim.client("a", async move {
        let client = connect_at(&roles, ms(1_000), endpoints, crate::env::client_options()).await?;
        let opts = AcquireOptions::with_ttl(ms(3_000));
        let Some((la, token, _, _)) = a.acquire(&client, "r0", opts).await else {
            return Ok(());
        };
        let lb = client.lease_grant(ms(3_000)).await?.lease_id;
        let hold_r1 = AcquireOptions {
            lease_id: Some(lb),
            ..AcquireOptions::with_ttl(ms(3_000))
        };
        let _ = client.acquire("r1", hold_r1).await;
        let la_waits = AcquireOptions {
            lease_id: Some(la),
            ..waiting(ms(3_000), ms(30_000))
        };
        queue_and_abandon(client.acquire("r1", la_waits), ms(300)).await;
        let wait = AcquireOptions {
            lease_id: Some(lb),
            ..waiting(ms(3_000), ms(30_000))
        };
        // Queued, then abandoned without its cancel; nobody renews lb.
        queue_and_abandon(client.acquire("r0", wait), ms(300)).await;
        sleep_until(ms(2_000)).await;
        let (_, _) = tokio::join!(a.renew(&client, "r0", la, token), client.renew(lb));
        sleep_until(end).await;
        Ok(())
    });
    let waiter = Waiter {
        at: ms(1_800),
        ttl: ms(10_000),
        wait: ms(15_000),
        fenced_write: true,
    };
    spawn_waiter(sim, c, s.endpoints.clone(), waiter);
}

/// S6, etcd issue 22082 (a late release carrying an old token freed a newer
/// grant): the clients hold and deliver the late release themselves, so no
/// scripted faults.
pub(super) const RETRIED_RELEASE: Def = Def {
    scenario: Scenario::RetriedRelease,
    name: "retried-release",
    fault_secs: 2,
    faults: Script::None,
    spawn: retried_release,
    cluster: LAN,
};

/// The clients of [`RETRIED_RELEASE`]: `x1` releases grant t1 of a shared
/// lease, but the request is held in the network; meanwhile `x2` (same
/// lease) releases t1 itself and acquires r0 again (t2). When the held
/// release arrives it must be refused, and t2 must stay.
fn retried_release(sim: &mut turmoil::Sim<'_>, s: &mut Setup<'_>) {
    let x2 = client_ctx(&s.world, "x2", 59, 1_000);
    let shared: Arc<Mutex<Option<(u64, u64)>>> = Arc::new(Mutex::new(None));
    let shared2 = shared.clone();
    let endpoints = s.endpoints.clone();
    let hosts = node_hosts(&s.endpoints);
    let history = s.world.history.clone();
    let roles = s.world.roles.clone();
    sim.client("x2", async move {
        let client = connect_at(&roles, ms(1_000), endpoints, crate::env::client_options()).await?;
        let lease = client.lease_grant(ms(5_000)).await?.lease_id;
        let opts = AcquireOptions {
            lease_id: Some(lease),
            ..waiting(ms(5_000), ms(0))
        };
        let Some((_, t1, _, _)) = x2.acquire(&client, "r0", opts).await else {
            return Ok(());
        };
        *lock(&shared) = Some((lease, t1));
        sleep_until(ms(2_500)).await;
        x2.release(&client, "r0", lease, t1).await;
        let Some((_, t2, _, _)) = x2.acquire(&client, "r0", opts).await else {
            return Ok(());
        };
        // x1's held release is delivered at 4 s.
        while global_now() < ms(5_000) {
            x2.renew(&client, "r0", lease, t2).await;
            sleep(ms(1_000)).await;
        }
        match client.status("r0").await {
            Ok(s) => {
                let holder = s.holder.map(|h| (h.lease_id, h.fencing_token));
                if holder != Some((lease, t2)) {
                    x2.violation(
                        "S6",
                        format!("retried-release: r0 is held by {holder:?}, not by lease {lease} token {t2}"),
                    );
                }
            }
            Err(e) => x2.violation("L3", format!("retried-release: status failed: {e}")),
        }
        x2.fenced_write("r0", lease, t2);
        x2.release(&client, "r0", lease, t2).await;
        Ok(())
    });
    let endpoints = s.endpoints.clone();
    let roles = s.world.roles.clone();
    // x1 is x2's second host (the same client, the same lease): it sends as
    // principal x2.
    s.world.act_as("x1", "x2");
    sim.client("x1", async move {
        let options = ClientOptions {
            deadline: ms(8_000),
            ..crate::env::client_options()
        };
        let client = connect_at(&roles, ms(1_000), endpoints, options).await?;
        // Warm the connections: a status read from every node.
        let _ = client.cluster_status().await;
        sleep_until(ms(2_000)).await;
        let Some((lease, t1)) = *lock(&shared2) else {
            return Ok(());
        };
        for n in &hosts {
            turmoil::hold("x1", n.as_str());
        }
        let hosts2 = hosts.clone();
        tokio::spawn(async move {
            sleep_until(ms(4_000)).await;
            for n in &hosts2 {
                turmoil::release("x1", n.as_str());
            }
        });
        if let Ok(r) = client.release(lease, Some("r0".into()), Some(t1)).await {
            if r.released {
                lock(&history).acked_releases.push(("r0".into(), lease, t1));
            }
        }
        Ok(())
    });
}
