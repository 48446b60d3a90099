//! Scenarios about who gets a resource next: a due waiter is never granted
//! (S8), two grants by one entry carry growing tokens (S2), and a late
//! release never frees a newer grant (S6).

use std::sync::{Arc, Mutex};

use warden_client::{AcquireOptions, ClientOptions};

use super::client::{
    client_ctx, connect_at, node_hosts, queue_and_abandon, sleep_until, spawn_waiter, waiting,
    Waiter,
};
use super::shape::{ms, Def, Scenario, Setup, LAN};
use crate::env::global_now;
use crate::faults::{Aim, Gap, Script};
use crate::world::{lock, sleep};

/// S8, Jepsen etcd 3.4.3 ("a waiter whose lease expired while it waited"
/// was granted the lock): client `w`'s host is paused (everything to and
/// from it held) for the whole fault phase.
pub(super) const DUE_WAITER: Def = Def {
    scenario: Scenario::DueWaiter,
    name: "due-waiter",
    fault_secs: 3,
    faults: Script::Scripted {
        aim: Aim::PauseClient("w"),
        after: ms(0),
        len: ms(30_000),
        gap: Gap::Drawn,
    },
    spawn: due_waiter,
    cluster: LAN,
};

/// The clients of [`DUE_WAITER`]: the queued waiter `w`'s process stops (so
/// its lease stops being renewed) before the holder `h` releases; the
/// waiter must be removed, never granted.
fn due_waiter(sim: &mut turmoil::Sim<'_>, s: &mut Setup<'_>) {
    let h = client_ctx(&s.world, "h", 7, -2_000);
    let w = client_ctx(&s.world, "w", 11, 4_000);
    let (endpoints, end) = (s.endpoints.clone(), s.fault_end);
    let roles = s.world.roles.clone();
    sim.client("h", async move {
        let client = connect_at(&roles, ms(1_000), endpoints, crate::env::client_options()).await?;
        let opts = AcquireOptions::with_ttl(ms(10_000));
        if let Some((lease, token, _, _)) = h.acquire(&client, "r0", opts).await {
            sleep_until(ms(3_000)).await;
            h.renew(&client, "r0", lease, token).await;
            sleep_until(ms(5_500)).await;
            h.release(&client, "r0", lease, token).await;
        }
        sleep_until(end).await;
        Ok(())
    });
    let endpoints = s.endpoints.clone();
    let roles = s.world.roles.clone();
    sim.client("w", async move {
        let client = connect_at(&roles, ms(2_000), endpoints, crate::env::client_options()).await?;
        let opts = waiting(ms(1_500), ms(20_000));
        // The process stops mid-wait: only the lease's end can remove the
        // waiter.
        queue_and_abandon(w.acquire(&client, "r0", opts), ms(5_000)).await;
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
/// in one batch, so one `Expire` entry ends both: r0 goes to the waiter and,
/// as its lease ends in the same entry, on to `c`. Two grants of one
/// resource in one entry must carry two growing tokens. `lb` also holds r1,
/// on which `la` waits: a due list ends a lease before the listed holders
/// of what it waits on (S8), so only a cycle of waits, which has no such
/// order, still hands r0 to `lb` inside the entry that ends it
/// (docs/semantics.md S8, "not covered yet").
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
