//! A healthy cluster whose nodes are merely far apart: calls must complete
//! while every peer link is slow (L3), and a walked-away holder's resource
//! must still reach its waiter in time (L1).

use warden_client::AcquireOptions;

use super::client::{client_ctx, connect_at, sleep_until, waiting};
use super::shape::{ms, Def, Scenario, Setup, LAN};
use crate::env::global_now;
use crate::faults::{Aim, Gap, Script};
use crate::world::{bound_e_ms, drifted_ms, sleep};

/// One-way latency of every peer link in the `slow-links` scenario: 40 ms.
/// An append's round trip (80 ms) is then above openraft's own call timeout
/// (one heartbeat interval, 50 ms) and below the floor the peer network puts
/// under it (`warden_server::raft::network::call_timeout_floor`, 125 ms).
pub const SLOW_LINK_MS: u64 = 40;

/// L3 and L1 on slow links (this simulator's own finding, not a public
/// bug: with more than about 25 ms of one-way latency between the nodes
/// nothing committed, because every append timed out after openraft's one
/// heartbeat interval, 50 ms): every peer link has [`SLOW_LINK_MS`] each
/// way for the whole fault phase.
pub(super) const SLOW_LINKS: Def = Def {
    scenario: Scenario::SlowLinks,
    name: "slow-links",
    fault_secs: 8,
    faults: Script::Scripted {
        aim: Aim::SlowLinks(SLOW_LINK_MS),
        after: ms(0),
        len: ms(600_000),
        gap: Gap::Drawn,
    },
    spawn: slow_links,
    cluster: LAN,
};

/// The clients of [`SLOW_LINKS`]. While the links are slow, each of `a`'s
/// acquires, renews and releases must be acknowledged (L3), and r1, whose
/// holder `w` walks away, must reach the waiter `b` within TTL + E of `w`'s
/// acquire (L1). The faults start at 3 s.
fn slow_links(sim: &mut turmoil::Sim<'_>, s: &mut Setup<'_>) {
    let a = client_ctx(&s.world, "a", 61, 2_000);
    let w = client_ctx(&s.world, "w", 67, -2_000);
    let b = client_ctx(&s.world, "b", 71, 0);
    let (endpoints, end) = (s.endpoints.clone(), s.fault_end);
    let roles = s.world.roles.clone();
    sim.client("a", async move {
        let client = connect_at(&roles, ms(1_000), endpoints, crate::env::client_options()).await?;
        sleep_until(ms(3_200)).await;
        let mut cycles = 0u64;
        while global_now() + ms(1_000) < end {
            let sent = global_now();
            let opts = AcquireOptions::with_ttl(ms(3_000));
            let Some((lease, token, _, _)) = a.acquire(&client, "r0", opts).await else {
                a.violation(
                    "L3",
                    format!("slow-links: acquire of r0 sent at {sent:?} was not granted (after {cycles} cycles)"),
                );
                break;
            };
            if a.renew(&client, "r0", lease, token).await.is_none() {
                a.violation(
                    "L3",
                    format!("slow-links: renew of lease {lease} failed (after {cycles} cycles)"),
                );
                break;
            }
            a.fenced_write("r0", lease, token);
            if !a.release(&client, "r0", lease, token).await {
                a.violation(
                    "L3",
                    format!("slow-links: release of lease {lease} was not acknowledged (after {cycles} cycles)"),
                );
                break;
            }
            cycles += 1;
            sleep(ms(200)).await;
        }
        Ok(())
    });
    // `w` takes r1 at 4 s and walks away (TTL 1.5 s).
    let endpoints = s.endpoints.clone();
    let roles = s.world.roles.clone();
    sim.client("w", async move {
        let client = connect_at(&roles, ms(1_000), endpoints, crate::env::client_options()).await?;
        sleep_until(ms(4_000)).await;
        match w
            .acquire(&client, "r1", AcquireOptions::with_ttl(ms(1_500)))
            .await
        {
            Some((lease, token, _, _)) => {
                w.fenced_write("r1", lease, token);
            }
            None => w.violation("L3", "slow-links: acquire of r1 was not granted".into()),
        }
        Ok(())
    });
    let endpoints = s.endpoints.clone();
    let roles = s.world.roles.clone();
    sim.client("b", async move {
        let client = connect_at(&roles, ms(1_000), endpoints, crate::env::client_options()).await?;
        sleep_until(ms(4_500)).await;
        let opts = waiting(ms(3_000), ms(6_000));
        // L1: w's acquire was sent at 4 s; its lease ends and r1 is granted
        // within TTL + E (drifted by up to ρ), plus 1 s for the commits.
        let bound = ms(4_000 + drifted_ms(1_500 + bound_e_ms()) + 1_000);
        match b.acquire(&client, "r1", opts).await {
            Some((lease, token, _, _)) => {
                let granted_at = global_now();
                if granted_at > bound {
                    b.violation(
                        "L1",
                        format!("slow-links: r1 granted at {granted_at:?}, after {bound:?}"),
                    );
                }
                b.fenced_write("r1", lease, token);
                if !b.release(&client, "r1", lease, token).await {
                    b.violation(
                        "L3",
                        format!("slow-links: release of lease {lease} was not acknowledged"),
                    );
                }
            }
            None => b.violation(
                "L1",
                "slow-links: r1 was not granted to the waiter while the links were slow".into(),
            ),
        }
        Ok(())
    });
}
