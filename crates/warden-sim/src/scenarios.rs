//! Named scenarios: scripted clients (and, in `faults.rs`, scripted faults)
//! that replay a public bug's shape against the production code. Each names
//! the bug it guards against.

use std::time::Duration;

use warden_client::{AcquireOptions, Client, ClientOptions};

use crate::env::{global_now, SimClock};
use crate::run::{sleep, ClientCtx, Scenario, WorldCtx};

async fn sleep_until(t: Duration) {
    sleep(t.saturating_sub(global_now())).await;
}

fn ctx(world: &WorldCtx, name: &str, origin_h: u64, rate_ppm: i64) -> ClientCtx {
    ClientCtx {
        name: name.into(),
        clock: SimClock {
            origin: Duration::from_secs(origin_h * 3_600),
            rate_ppm,
            epoch: 1_000 + origin_h,
        },
        history: world.history.clone(),
        fence: world.fence.clone(),
        bugs: world.bugs,
    }
}

fn secs(ms: u64) -> Duration {
    Duration::from_millis(ms)
}

/// Spawns the scenario's clients.
pub fn spawn(
    sim: &mut turmoil::Sim<'_>,
    world: &WorldCtx,
    scenario: Scenario,
    endpoints: Vec<String>,
    end: Duration,
) {
    match scenario {
        Scenario::Random => {}
        // L2, etcd issue 9395: a holder renews twice and walks away while the
        // leader is isolated every ~2 s; its lease must still be gone by
        // r + TTL + E (+ leaderless time), not restarted at every election.
        Scenario::RepeatedElections => {
            let a = ctx(world, "a", 5, 3_000);
            sim.client("a", async move {
                sleep_until(secs(1_000)).await;
                let client = Client::connect(endpoints, ClientOptions::default()).await?;
                let opts = AcquireOptions::with_ttl(secs(3_000));
                if let Some((lease, token, _, _)) = a.acquire(&client, "r0", opts).await {
                    sleep(secs(500)).await;
                    a.renew(&client, "r0", lease, token).await;
                    sleep(secs(1_000)).await;
                    a.renew(&client, "r0", lease, token).await;
                }
                sleep_until(end + secs(6_000)).await;
                Ok(())
            });
        }
        // S8, Jepsen etcd 3.4.3: a queued waiter's process stops (so its
        // lease stops being renewed) before the holder releases; the waiter
        // must be removed, never granted.
        Scenario::DueWaiter => {
            let h = ctx(world, "h", 7, -2_000);
            let w = ctx(world, "w", 11, 4_000);
            let eps = endpoints.clone();
            sim.client("h", async move {
                sleep_until(secs(1_000)).await;
                let client = Client::connect(eps, ClientOptions::default()).await?;
                let opts = AcquireOptions::with_ttl(secs(10_000));
                if let Some((lease, token, _, _)) = h.acquire(&client, "r0", opts).await {
                    sleep_until(secs(3_000)).await;
                    h.renew(&client, "r0", lease, token).await;
                    sleep_until(secs(8_000)).await;
                    h.release(&client, "r0", lease, token).await;
                }
                sleep_until(end).await;
                Ok(())
            });
            sim.client("w", async move {
                sleep_until(secs(2_000)).await;
                let client = Client::connect(endpoints, ClientOptions::default()).await?;
                let opts = AcquireOptions {
                    ttl: secs(1_500),
                    lease_id: None,
                    wait: secs(20_000),
                    lock_delay: Duration::ZERO,
                };
                let _ = tokio::time::timeout(secs(12_000), w.acquire(&client, "r0", opts)).await;
                Ok(())
            });
        }
        // etcd issue 15247: the leader stalls (every message to and from it
        // held) while a holder keeps renewing through the new leader; when
        // the stale leader's expiries reach the cluster they must not end
        // the renewed lease (S4).
        Scenario::StalledLeaderExpiry => {
            let a = ctx(world, "a", 13, -4_000);
            sim.client("a", async move {
                sleep_until(secs(1_000)).await;
                let client = Client::connect(endpoints, ClientOptions::default()).await?;
                let opts = AcquireOptions::with_ttl(secs(2_000));
                if let Some((lease, token, _, _)) = a.acquire(&client, "r0", opts).await {
                    while global_now() < secs(15_000) {
                        sleep(secs(300)).await;
                        a.renew(&client, "r0", lease, token).await;
                    }
                    a.release(&client, "r0", lease, token).await;
                }
                sleep_until(end).await;
                Ok(())
            });
        }
        // S5: a renew whose reply takes 1.4 s; the holder then walks away and
        // a waiter gets the lock at expiry. valid_until counted from the send
        // ends before that grant; counted from the receipt it does not.
        Scenario::SlowRenewAck => {
            let a = ctx(world, "a", 17, 0);
            let b = ctx(world, "b", 19, 0);
            let eps = endpoints.clone();
            sim.client("a", async move {
                sleep_until(secs(1_000)).await;
                let options = ClientOptions {
                    attempt_timeout: secs(2_000),
                    ..ClientOptions::default()
                };
                let client = Client::connect(eps, options).await?;
                let opts = AcquireOptions::with_ttl(secs(4_000));
                if let Some((lease, token, _, _)) = a.acquire(&client, "r0", opts).await {
                    sleep_until(secs(3_500)).await;
                    a.renew(&client, "r0", lease, token).await;
                }
                sleep_until(end).await;
                Ok(())
            });
            sim.client("b", async move {
                sleep_until(secs(4_000)).await;
                let client = Client::connect(endpoints, ClientOptions::default()).await?;
                let opts = AcquireOptions {
                    ttl: secs(4_000),
                    lease_id: None,
                    wait: secs(10_000),
                    lock_delay: Duration::ZERO,
                };
                if let Some((lease, token, _, _)) = b.acquire(&client, "r0", opts).await {
                    b.release(&client, "r0", lease, token).await;
                }
                Ok(())
            });
        }
        Scenario::RetryAfterSnapshot => {}
    }
}
