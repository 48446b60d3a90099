//! The random workload over every lock kind (docs/semantics.md "Lock
//! kinds"): each resource is drawn from the seed as a mutex, a read-write
//! lock or a semaphore of 2–4 permits (the first resource never a mutex),
//! and 3–5 workers acquire it as that kind asks (readers and writers mixed
//! on a read-write lock, one permit each on a semaphore), renew, write to
//! the fenced resource under their kind's rule (a permit with its slot, a
//! reader as shared), pause past their TTL or walk away, and release; two
//! more clients take `m0` and `m1` together as a multi-lock, in opposite
//! orders (docs/semantics.md "Multi-locks"); the faults are drawn from the
//! seed as for `random`. After the heal the
//! healer must acquire every resource as its kind (L1) and renew and
//! release (L3).

use std::collections::BTreeMap;
use std::time::Duration;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use warden_client::{AcquireOptions, Client, GrantKind};

use super::client::waiting;
use super::random::spawn_healer;
use super::shape::{Def, Scenario, Setup, LAN};
use crate::env::global_now;
use crate::faults::Script;
use crate::world::{random_clock, sleep, ClientCtx};

/// Random faults, and a workload of every lock kind drawn from the seed.
pub(super) const KINDS: Def = Def {
    scenario: Scenario::Kinds,
    name: "kinds",
    fault_secs: 60,
    faults: Script::Random,
    spawn,
    cluster: LAN,
};

/// What the workload asks a resource for: the kind and, for a read-write
/// lock, whether a worker's request is a reader's or a writer's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Asked {
    /// A mutex.
    Mutex,
    /// A read-write lock: each request a reader's or a writer's.
    ReadWrite,
    /// A semaphore of `limit` permits.
    Semaphore { limit: u32 },
}

/// The kind of resource `i` (the first one is never a mutex, so every run
/// has readers and writers or permits).
fn draw_kind(rng: &mut StdRng, i: usize) -> Asked {
    let from = if i == 0 { 1 } else { 0 };
    match rng.random_range(from..3) {
        0 => Asked::Mutex,
        1 => Asked::ReadWrite,
        _ => Asked::Semaphore {
            limit: rng.random_range(2..=4),
        },
    }
}

/// Spawns the workers and the healer.
fn spawn(sim: &mut turmoil::Sim<'_>, s: &mut Setup<'_>) {
    let kinds: BTreeMap<String, Asked> = s
        .resources
        .iter()
        .enumerate()
        .map(|(i, r)| (r.clone(), draw_kind(s.rng, i)))
        .collect();
    let n_clients: u64 = s.rng.random_range(3..=5);
    for c in 0..n_clients {
        let name = format!("c{c}");
        let clock = random_clock(s.rng, 100 + c);
        spawn_worker(
            sim,
            s.world.client(&name, clock),
            s.endpoints.clone(),
            kinds.clone(),
            s.fault_end,
            s.seed.wrapping_add(1000 + c),
        );
    }
    // Two more clients take two resources of their own together, as a
    // multi-lock, in opposite orders (docs/semantics.md "Multi-locks").
    for (c, order) in [["m0", "m1"], ["m1", "m0"]].into_iter().enumerate() {
        let name = format!("multi{c}");
        let clock = random_clock(s.rng, 200 + c as u64);
        spawn_multi_worker(
            sim,
            s.world.client(&name, clock),
            s.endpoints.clone(),
            order.map(str::to_owned).to_vec(),
            s.fault_end,
            s.seed.wrapping_add(2000 + c as u64),
        );
    }
    // The healer takes a read-write lock as a writer (the whole resource).
    let healer_kinds = kinds
        .iter()
        .map(|(r, k)| {
            let g = match *k {
                Asked::Mutex => GrantKind::Mutex,
                Asked::ReadWrite => GrantKind::Exclusive,
                Asked::Semaphore { limit } => GrantKind::Permit { limit },
            };
            (r.clone(), g)
        })
        .collect();
    spawn_healer(
        sim,
        &s.world,
        s.endpoints.clone(),
        s.resources.clone(),
        (s.fault_end, s.heal_end),
        s.healer_done.clone(),
        healer_kinds,
    );
}

/// A multi-lock worker until global time `until`: takes `resources`
/// together (a try or a queued wait, drawn from `seed`), holds them a
/// moment and releases them by naming the first. The MULTI checker judges
/// its grants; it writes nothing to the fence.
fn spawn_multi_worker(
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
            let ttl = Duration::from_millis(rng.random_range(1_500..4_000));
            let wait = if rng.random_bool(0.4) {
                Duration::ZERO
            } else {
                Duration::from_millis(rng.random_range(500..3_000))
            };
            let granted = client
                .acquire_all(resources.clone(), waiting(ttl, wait))
                .await;
            if let Ok(warden_client::AcquireResult::Granted {
                lease_id, grants, ..
            }) = granted
            {
                sleep(Duration::from_millis(rng.random_range(100..800))).await;
                if let Some(first) = grants.first() {
                    let _ = client
                        .release(
                            lease_id,
                            Some(first.resource.clone()),
                            Some(first.fencing_token),
                        )
                        .await;
                }
            }
            sleep(Duration::from_millis(rng.random_range(50..400))).await;
        }
        Ok(())
    });
}

/// One worker, drawing from `seed` until global time `until`: acquire a
/// resource as its kind asks (try-lock or queued; on a read-write lock a
/// reader 60 % of the time), then a few rounds of renews, honest writes
/// (after checking `valid_until`, S5) under the kind's fence rule, a pause
/// past the TTL and a write without a check (the fence must refuse it if a
/// conflicting grant wrote since), or walking away (L1); release if still
/// held.
fn spawn_worker(
    sim: &mut turmoil::Sim<'_>,
    ctx: ClientCtx,
    endpoints: Vec<String>,
    kinds: BTreeMap<String, Asked>,
    until: Duration,
    seed: u64,
) {
    sim.client(ctx.name.clone(), async move {
        let mut rng = StdRng::seed_from_u64(seed);
        let resources: Vec<(String, Asked)> = kinds.into_iter().collect();
        sleep(Duration::from_millis(rng.random_range(500..1500))).await;
        ctx.roles.wait().await;
        let client = Client::connect(endpoints, crate::env::client_options()).await?;
        while global_now() < until {
            let (resource, asked) = resources[rng.random_range(0..resources.len())].clone();
            let kind = match asked {
                Asked::Mutex => GrantKind::Mutex,
                Asked::ReadWrite if rng.random_bool(0.6) => GrantKind::Shared,
                Asked::ReadWrite => GrantKind::Exclusive,
                Asked::Semaphore { limit } => GrantKind::Permit { limit },
            };
            let ttl = Duration::from_millis(rng.random_range(1_500..4_000));
            let wait = if rng.random_bool(0.4) {
                Duration::ZERO
            } else {
                Duration::from_millis(rng.random_range(500..3_000))
            };
            let opts = AcquireOptions {
                kind,
                ..waiting(ttl, wait)
            };
            let Some(held) = ctx.acquire_held(&client, &resource, opts).await else {
                sleep(Duration::from_millis(rng.random_range(50..400))).await;
                continue;
            };
            let (lease, token, ttl_ms) = (held.lease_id, held.token, held.ttl_ms);
            let mut vu = held.valid_until;
            let rounds = rng.random_range(1..8);
            let mut ended = false;
            for _ in 0..rounds {
                match rng.random_range(0..10) {
                    0..=4 => {
                        if let Some(v) = ctx.renew(&client, &resource, lease, token).await {
                            vu = v;
                        }
                    }
                    5..=7 => {
                        if ctx.clock.now() < vu {
                            ctx.fenced_write_claim(&resource, lease, held.claim);
                        }
                    }
                    8 => {
                        sleep(Duration::from_millis(ttl_ms + rng.random_range(100..2_000))).await;
                        ctx.fenced_write_claim(&resource, lease, held.claim);
                        ended = true;
                        break;
                    }
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
