//! The random workload: 2–4 workers drawn from the seed run a lock workload
//! against the fenced resource during the fault phase; after the heal the
//! healer must acquire every resource (L1) and renew and release (L3).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use warden_client::{AcquireOptions, Client, GrantKind};

use super::client::waiting;
use super::shape::{Def, Scenario, Setup, LAN};
use crate::env::{global_now, SimClock};
use crate::faults::Script;
use crate::world::{bound_e_ms, drifted_ms, random_clock, sleep, ClientCtx, World};

/// Random faults and a random workload, drawn from the seed.
pub(super) const RANDOM: Def = Def {
    scenario: Scenario::Random,
    name: "random",
    fault_secs: 60,
    faults: Script::Random,
    spawn,
    cluster: LAN,
};

/// Spawns the workers and the healer.
fn spawn(sim: &mut turmoil::Sim<'_>, s: &mut Setup<'_>) {
    let n_clients: u64 = s.rng.random_range(2..=4);
    for c in 0..n_clients {
        let name = format!("c{c}");
        let clock = random_clock(s.rng, 100 + c);
        spawn_worker(
            sim,
            s.world.client(&name, clock),
            s.endpoints.clone(),
            s.resources.clone(),
            s.fault_end,
            s.seed.wrapping_add(1000 + c),
        );
    }
    spawn_healer(
        sim,
        &s.world,
        s.endpoints.clone(),
        s.resources.clone(),
        (s.fault_end, s.heal_end),
        s.healer_done.clone(),
        BTreeMap::new(),
    );
}

/// One worker, drawing from `seed` until global time `until`: acquire
/// (try-lock or queued), then a few rounds of renews, honest writes (after
/// checking `valid_until`, S5), a pause past the TTL and a write without a
/// check (the fence must refuse it if another grant wrote since), or
/// walking away (L1: the lock must free itself); release if still held.
fn spawn_worker(
    sim: &mut turmoil::Sim<'_>,
    ctx: ClientCtx,
    endpoints: Vec<String>,
    resources: Vec<String>,
    until: Duration,
    seed: u64,
) {
    sim.client(ctx.name.clone(), async move {
        let mut rng = StdRng::seed_from_u64(seed);
        sleep(Duration::from_millis(rng.random_range(500..1500))).await;
        ctx.roles.wait().await;
        let client = Client::connect(endpoints, crate::env::client_options()).await?;
        while global_now() < until {
            let resource = resources[rng.random_range(0..resources.len())].clone();
            let ttl = Duration::from_millis(rng.random_range(1_500..4_000));
            let wait = if rng.random_bool(0.5) {
                Duration::ZERO
            } else {
                Duration::from_millis(rng.random_range(500..3_000))
            };
            let opts = waiting(ttl, wait);
            let Some((lease, token, ttl_ms, mut vu)) = ctx.acquire(&client, &resource, opts).await
            else {
                sleep(Duration::from_millis(rng.random_range(50..400))).await;
                continue;
            };
            let rounds = rng.random_range(1..8);
            let mut ended = false;
            for _ in 0..rounds {
                match rng.random_range(0..10) {
                    // Renew.
                    0..=4 => {
                        if let Some(v) = ctx.renew(&client, &resource, lease, token).await {
                            vu = v;
                        }
                    }
                    // An honest write: check validity first (S5's `check()`).
                    5..=7 => {
                        if ctx.clock.now() < vu {
                            ctx.fenced_write(&resource, lease, token);
                        }
                    }
                    // A pause past the TTL, then a write without a check:
                    // the fence must refuse it if another grant wrote since.
                    8 => {
                        sleep(Duration::from_millis(ttl_ms + rng.random_range(100..2_000))).await;
                        ctx.fenced_write(&resource, lease, token);
                        ended = true;
                        break;
                    }
                    // Stop renewing: walk away (L1: the lock must free itself).
                    _ => {
                        ended = true;
                        break;
                    }
                }
                sleep(Duration::from_millis(
                    rng.random_range(100..(ttl_ms / 3).max(101)),
                ))
                .await;
            }
            if !ended {
                ctx.release(&client, &resource, lease, token).await;
            }
        }
        Ok(())
    });
}

/// After the heal (from `heal_at`, until `heal_end` at the latest): every
/// resource must become grantable (L1) and calls must complete (L3). Sets
/// `done` when it is. Each resource is asked for as `kinds` names it (a
/// read-write lock as a writer, a semaphore as one permit), else as a mutex.
pub(super) fn spawn_healer(
    sim: &mut turmoil::Sim<'_>,
    world: &World,
    endpoints: Vec<String>,
    resources: Vec<String>,
    (heal_at, heal_end): (Duration, Duration),
    done: Arc<AtomicBool>,
    kinds: BTreeMap<String, GrantKind>,
) {
    let ctx = world.client(
        "healer",
        SimClock {
            origin: Duration::from_secs(7_200),
            rate_ppm: 0,
            epoch: 99,
        },
    );
    sim.client("healer", async move {
        let now = global_now();
        sleep(heal_at.saturating_sub(now)).await;
        ctx.roles.wait().await;
        let client = Client::connect(endpoints, crate::env::client_options()).await?;
        // L1: the longest TTL + lock-delay (0) + E, drifted by up to ρ,
        // plus election time.
        let bound = Duration::from_millis(drifted_ms(4_000 + bound_e_ms()) + 2_000);
        for resource in &resources {
            let started = global_now();
            let mut granted = None;
            while global_now() < started + bound && global_now() < heal_end {
                let opts = AcquireOptions {
                    kind: kinds.get(resource).copied().unwrap_or_default(),
                    ..waiting(Duration::from_secs(5), Duration::from_millis(1_000))
                };
                if let Some(g) = ctx.acquire_held(&client, resource, opts).await {
                    granted = Some(g);
                    break;
                }
            }
            match granted {
                Some(g) => {
                    if kinds.contains_key(resource) {
                        ctx.fenced_write_claim(resource, g.lease_id, g.claim);
                    } else {
                        ctx.fenced_write(resource, g.lease_id, g.token);
                    }
                    ctx.release(&client, resource, g.lease_id, g.token).await;
                }
                None => ctx.violation(
                    "L1",
                    format!("{resource} was not grantable within {bound:?} after the heal"),
                ),
            }
        }
        // L3: renew and release complete with a majority up.
        match client.lease_grant(Duration::from_secs(3)).await {
            Ok(l) => {
                if client.renew(l.lease_id).await.is_err() {
                    ctx.violation("L3", "renew failed after the heal".into());
                }
                let _ = client.revoke(l.lease_id).await;
            }
            Err(e) => ctx.violation("L3", format!("lease grant failed after the heal: {e}")),
        }
        done.store(true, Ordering::Relaxed);
        Ok(())
    });
}
