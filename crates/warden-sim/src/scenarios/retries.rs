//! Scenarios about retried requests: a retry after a leader change or a
//! restart from a snapshot replays the first outcome, never a second
//! execution (S7).

use warden_client::{AcquireOptions, AcquireResult, ClientOptions};

use super::client::{
    client_ctx, connect_at, cut_off, leader_host, node_hosts, reconnect, sleep_until, spawn_waiter,
    Waiter,
};
use super::shape::{ms, Def, Scenario, Setup, LAN};
use crate::faults::{Aim, Gap, Script};
use crate::world::sleep;

/// S7, Raft dissertation §6.3 (a client's session, i.e. its outcome record,
/// must be in the snapshot, or a retry after a restart executes twice): the
/// leader crashes 2 s into the faults (snapshots exist by then) and
/// restarts from its snapshot 1 s later; once.
pub(super) const RETRY_AFTER_SNAPSHOT: Def = Def {
    scenario: Scenario::RetryAfterSnapshot,
    name: "retry-after-snapshot",
    fault_secs: 4,
    faults: Script::Scripted {
        aim: Aim::CrashLeader,
        after: ms(2_000),
        len: ms(1_000),
        gap: Gap::Never,
    },
    spawn: retry_after_snapshot,
    cluster: LAN,
};

/// The clients of [`RETRY_AFTER_SNAPSHOT`]: the waiter `w`'s acquire
/// executes, snapshots follow (the hammer `k` makes entries), then the
/// leader crashes and restarts from its snapshot; `w` re-sends the same
/// request id to the new leader, and the restarted node applies that retry
/// too. It must replay the first outcome everywhere.
fn retry_after_snapshot(sim: &mut turmoil::Sim<'_>, s: &mut Setup<'_>) {
    let h = client_ctx(&s.world, "h", 23, 1_000);
    let w = client_ctx(&s.world, "w", 29, -1_000);
    let endpoints = s.endpoints.clone();
    let roles = s.world.roles.clone();
    sim.client("h", async move {
        let client = connect_at(&roles, ms(1_000), endpoints, crate::env::client_options()).await?;
        let opts = AcquireOptions::with_ttl(ms(3_000));
        if let Some((lease, token, _, _)) = h.acquire(&client, "r0", opts).await {
            h.renew_every(&client, "r0", (lease, token), ms(500), ms(7_000))
                .await;
            h.release(&client, "r0", lease, token).await;
        }
        Ok(())
    });
    let waiter = Waiter {
        at: ms(1_500),
        ttl: ms(3_000),
        wait: ms(12_000),
        fenced_write: false,
    };
    spawn_waiter(sim, w, s.endpoints.clone(), waiter);
    // The hammer: 240 renews one after another (one entry each), so that a
    // snapshot (every 200 entries in the simulator) covers the waiter's
    // acquire before the crash.
    let endpoints = s.endpoints.clone();
    let roles = s.world.roles.clone();
    s.world.principal("k");
    sim.client("k", async move {
        let client = connect_at(&roles, ms(1_600), endpoints, crate::env::client_options()).await?;
        let lease = client.lease_grant(ms(3_000)).await?.lease_id;
        for _ in 0..240 {
            let _ = client.renew(lease).await;
        }
        let _ = client.revoke(lease).await;
        Ok(())
    });
}

/// S7, Raft paper §8 and etcd issue 18424 (a client retry after a leader
/// change executes a non-idempotent request twice): the client drops the
/// replies and cuts the leader off itself, so no scripted faults.
pub(super) const LOST_REPLY_NEW_LEADER: Def = Def {
    scenario: Scenario::LostReplyNewLeader,
    name: "lost-reply-new-leader",
    fault_secs: 2,
    faults: Script::None,
    spawn: lost_reply_new_leader,
    cluster: LAN,
};

/// The client of [`LOST_REPLY_NEW_LEADER`]: the replies from every node to
/// `x` are dropped, so its try-lock executes on the leader but `x` never
/// hears; the leader is then cut off, and `x`'s retry (same request id)
/// reaches the new leader. It must get the first grant back, not a second
/// execution.
fn lost_reply_new_leader(sim: &mut turmoil::Sim<'_>, s: &mut Setup<'_>) {
    let x = client_ctx(&s.world, "x", 53, 0);
    let endpoints = s.endpoints.clone();
    let hosts = node_hosts(&s.endpoints);
    let roles = s.world.roles.clone();
    sim.client("x", async move {
        let options = ClientOptions {
            deadline: ms(8_000),
            ..crate::env::client_options()
        };
        let client = connect_at(&roles, ms(1_000), endpoints, options).await?;
        // A first grant makes the client send its next call to the leader.
        if let Ok(AcquireResult::Granted { lease_id, .. }) = client
            .acquire("warm", AcquireOptions::with_ttl(ms(2_000)))
            .await
        {
            let _ = client.release(lease_id, Some("warm".into()), None).await;
        }
        let leader = leader_host(&client).await;
        for n in &hosts {
            turmoil::partition_oneway(n.as_str(), "x");
        }
        let iso = leader.clone();
        let hosts2 = hosts.clone();
        tokio::spawn(async move {
            sleep(ms(300)).await;
            cut_off(&iso, &hosts2);
            for n in hosts2.iter().filter(|n| **n != iso) {
                turmoil::repair_oneway(n.as_str(), "x");
            }
            sleep(ms(3_000)).await;
            reconnect(&iso, &hosts2);
            turmoil::repair_oneway(iso.as_str(), "x");
        });
        let opts = AcquireOptions::with_ttl(ms(4_000));
        match x.acquire(&client, "r0", opts).await {
            Some((lease, token, _, _)) => {
                x.fenced_write("r0", lease, token);
                x.release(&client, "r0", lease, token).await;
            }
            None => x.violation(
                "L3",
                "lost-reply-new-leader: the retried acquire was not granted".into(),
            ),
        }
        sleep_until(ms(5_000)).await;
        Ok(())
    });
}
