//! A cluster spread over regions (docs/operations.md "Latency between
//! nodes"): five nodes in three regions, 2 + 2 + 1, running the `wan`
//! timing preset. Within a region a link takes 1 ms one way; between two
//! regions a fixed 30, 60 or 80 ms, for the whole run. Calls must complete
//! (L3), a walked-away holder's resource must reach its waiter within
//! TTL + the `wan` E (L1), and an uncontended acquire must take at least one
//! round trip from the leader to a quorum (REGIONS: that the latencies
//! apply). The clients sit 0.2–3 ms from every node (turmoil's default), so
//! what an acquire waits for is the cluster's commit.

use warden_client::AcquireOptions;
use warden_server::config::TimingPreset;

use super::client::{client_ctx, connect_at, sleep_until, waiting};
use super::shape::{ms, ClusterShape, Def, Scenario, Setup};
use crate::env::global_now;
use crate::faults::Script;
use crate::world::{drifted_ms, lock, sleep, timing_of};

/// Nodes of the `regions` scenario.
pub const REGION_NODES: u64 = 5;

/// The region of node `id`: 0 for n1, n2; 1 for n3, n4; 2 for n5.
fn region(id: u64) -> u64 {
    match id {
        1 | 2 => 0,
        3 | 4 => 1,
        _ => 2,
    }
}

/// One-way latency between nodes `a` and `b`, in ms: 1 within a region;
/// between regions 0–1 30, 0–2 60, 1–2 80.
pub fn region_latency_ms(a: u64, b: u64) -> u64 {
    match (region(a).min(region(b)), region(a).max(region(b))) {
        (x, y) if x == y => 1,
        (0, 1) => 30,
        (0, 2) => 60,
        _ => 80,
    }
}

/// The shortest round trip from any leader to a quorum, in ms: for each
/// node as the leader, the round trip to the slowest of the nearest
/// majority − 1 others (those whose answers commit an entry); the least of
/// these. 60 ms here (a leader in region 0 or 1 needs its neighbour and one
/// node of the other of the two; one in region 2 needs two far ones).
pub fn quorum_round_trip_ms() -> u64 {
    let nodes: Vec<u64> = (1..=REGION_NODES).collect();
    let others_needed = nodes.len() / 2;
    nodes
        .iter()
        .map(|&leader| {
            let mut rtts: Vec<u64> = nodes
                .iter()
                .filter(|&&n| n != leader)
                .map(|&n| 2 * region_latency_ms(leader, n))
                .collect();
            rtts.sort_unstable();
            rtts[others_needed - 1]
        })
        .min()
        .unwrap_or(0)
}

/// L3, L1 and REGIONS across regions (docs/operations.md "Latency between
/// nodes"; the `wan` preset's values are chosen for round trips up to
/// 200 ms, here at most 160 ms).
pub(super) const REGIONS: Def = Def {
    scenario: Scenario::Regions,
    name: "regions",
    fault_secs: 8,
    faults: Script::None,
    spawn: regions,
    cluster: ClusterShape {
        nodes: Some(REGION_NODES),
        preset: TimingPreset::Wan,
        links: Some(region_latency_ms),
    },
};

/// The clients of [`REGIONS`]. `a` acquires, renews and releases r0 again
/// and again, alone (each acquire's send-to-acknowledgement time is
/// recorded as uncontended); each must be acknowledged (L3) and take at
/// least [`quorum_round_trip_ms`] (REGIONS). r1, whose holder `w` walks
/// away, must reach the waiter `b` within TTL + E of `w`'s acquire (L1).
fn regions(sim: &mut turmoil::Sim<'_>, s: &mut Setup<'_>) {
    let a = client_ctx(&s.world, "a", 61, 2_000);
    let w = client_ctx(&s.world, "w", 67, -2_000);
    let b = client_ctx(&s.world, "b", 71, 0);
    let (endpoints, end) = (s.endpoints.clone(), s.fault_end);
    let roles = s.world.roles.clone();
    let history = s.world.history.clone();
    sim.client("a", async move {
        let client = connect_at(&roles, ms(1_000), endpoints, crate::env::client_options()).await?;
        sleep_until(ms(3_200)).await;
        let floor = ms(quorum_round_trip_ms());
        let mut cycles = 0u64;
        while global_now() + ms(1_000) < end {
            let sent = global_now();
            let opts = AcquireOptions::with_ttl(ms(3_000));
            let Some((lease, token, _, _)) = a.acquire(&client, "r0", opts).await else {
                a.violation(
                    "L3",
                    format!("regions: acquire of r0 sent at {sent:?} was not granted (after {cycles} cycles)"),
                );
                break;
            };
            let took = global_now() - sent;
            lock(&history).uncontended_acquires.push(took);
            if took < floor {
                a.violation(
                    "REGIONS",
                    format!("regions: acquire of r0 acknowledged after {took:?}, below one round trip to a quorum ({floor:?}): the region latencies do not apply"),
                );
            }
            if a.renew(&client, "r0", lease, token).await.is_none() {
                a.violation(
                    "L3",
                    format!("regions: renew of lease {lease} failed (after {cycles} cycles)"),
                );
                break;
            }
            a.fenced_write("r0", lease, token);
            if !a.release(&client, "r0", lease, token).await {
                a.violation(
                    "L3",
                    format!("regions: release of lease {lease} was not acknowledged (after {cycles} cycles)"),
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
            None => w.violation("L3", "regions: acquire of r1 was not granted".into()),
        }
        Ok(())
    });
    let endpoints = s.endpoints.clone();
    let roles = s.world.roles.clone();
    let e_ms = timing_of(TimingPreset::Wan).bound_e_ms();
    sim.client("b", async move {
        let client = connect_at(&roles, ms(1_000), endpoints, crate::env::client_options()).await?;
        sleep_until(ms(4_500)).await;
        let opts = waiting(ms(3_000), ms(10_000));
        // L1: w's acquire was sent at 4 s; its lease ends and r1 is granted
        // within TTL + E (the wan preset's), drifted by up to ρ, plus 1 s
        // for the commits.
        let bound = ms(4_000 + drifted_ms(1_500 + e_ms) + 1_000);
        match b.acquire(&client, "r1", opts).await {
            Some((lease, token, _, _)) => {
                let granted_at = global_now();
                if granted_at > bound {
                    b.violation(
                        "L1",
                        format!("regions: r1 granted at {granted_at:?}, after {bound:?}"),
                    );
                }
                b.fenced_write("r1", lease, token);
                if !b.release(&client, "r1", lease, token).await {
                    b.violation(
                        "L3",
                        format!("regions: release of lease {lease} was not acknowledged"),
                    );
                }
            }
            None => b.violation(
                "L1",
                "regions: r1 was not granted to the waiter across the regions".into(),
            ),
        }
        Ok(())
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    // REGIONS: the layout is 2 + 2 + 1 with fixed latencies per region
    // pair, symmetric, and the least leader-to-quorum round trip is the
    // round trip between the two two-node regions (2 × 30 ms).
    #[test]
    fn region_latencies_and_quorum_round_trip() {
        assert_eq!(region_latency_ms(1, 2), 1);
        assert_eq!(region_latency_ms(3, 4), 1);
        assert_eq!(region_latency_ms(1, 3), 30);
        assert_eq!(region_latency_ms(4, 2), 30);
        assert_eq!(region_latency_ms(1, 5), 60);
        assert_eq!(region_latency_ms(5, 3), 80);
        for x in 1..=REGION_NODES {
            for y in 1..=REGION_NODES {
                assert_eq!(region_latency_ms(x, y), region_latency_ms(y, x));
            }
        }
        assert_eq!(quorum_round_trip_ms(), 60);
    }
}
