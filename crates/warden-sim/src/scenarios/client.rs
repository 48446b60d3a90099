//! What the scripted clients of the named scenarios share: a client on its
//! own clock, connecting at a set time, finding the leader, cutting a node
//! off from the others, and the plain waiter several scenarios use.

use std::time::Duration;

use warden_client::{AcquireOptions, Client, ClientError, ClientOptions};

use super::shape::ms;
use crate::env::{global_now, SimClock};
use crate::world::{host, sleep, ClientCtx, RolesGranted, World};

/// Sleeps until global time `t` (at once if it has passed).
pub async fn sleep_until(t: Duration) {
    sleep(t.saturating_sub(global_now())).await;
}

/// Client `name`'s bookkeeping, on a clock `origin_h` hours from zero that
/// runs `rate_ppm` off (docs/semantics.md "Time": instants of two hosts are
/// never comparable).
pub fn client_ctx(world: &World, name: &str, origin_h: u64, rate_ppm: i64) -> ClientCtx {
    world.client(
        name,
        SimClock {
            origin: Duration::from_secs(origin_h * 3_600),
            rate_ppm,
            epoch: 1_000 + origin_h,
        },
    )
}

/// At global time `at`, once every principal has its role (`roles`), a
/// client of `endpoints` with `options`.
pub async fn connect_at(
    roles: &RolesGranted,
    at: Duration,
    endpoints: Vec<String>,
    options: ClientOptions,
) -> Result<Client, ClientError> {
    sleep_until(at).await;
    roles.wait().await;
    Client::connect(endpoints, options).await
}

/// Acquire options for a new lease of `ttl` that waits in the queue up to
/// `wait`, without lock-delay.
pub fn waiting(ttl: Duration, wait: Duration) -> AcquireOptions {
    AcquireOptions {
        ttl,
        lease_id: None,
        wait,
        lock_delay: Duration::ZERO,
        kind: warden_client::GrantKind::Mutex,
        max_hold: None,
    }
}

/// Runs `call` (a waiting acquire) for `queued_within`, long enough for its
/// wait to be queued, then abandons it as a process that froze or crashed
/// mid-wait would: the future is forgotten, not dropped (a dropped one would
/// take its wait back with CancelWait), so the waiter stays until its wait
/// times out or its lease ends (a stream that ends is not a cancel,
/// docs/semantics.md S8).
pub async fn queue_and_abandon<F: std::future::Future>(call: F, queued_within: Duration) {
    let mut call = Box::pin(call);
    let _ = tokio::time::timeout(queued_within, call.as_mut()).await;
    std::mem::forget(call);
}

/// The host name of the node that leads, as a linearizable cluster-status
/// read reports it (retried until one is known).
pub async fn leader_host(client: &Client) -> String {
    loop {
        if let Ok(s) = client.cluster_status().await {
            if s.leader_id != 0 {
                return host(s.leader_id);
            }
        }
        sleep(ms(100)).await;
    }
}

/// Node host names: `n1`, `n2`, ...
pub fn node_hosts(endpoints: &[String]) -> Vec<String> {
    endpoints
        .iter()
        .filter_map(|e| e.split(':').next().map(str::to_owned))
        .collect()
}

/// Cuts (both ways) `host` from every node in `others` but itself.
pub fn cut_off(host: &str, others: &[String]) {
    for o in others.iter().filter(|o| *o != host) {
        turmoil::partition(host, o.as_str());
    }
}

/// Undoes [`cut_off`].
pub fn reconnect(host: &str, others: &[String]) {
    for o in others.iter().filter(|o| *o != host) {
        turmoil::repair(host, o.as_str());
    }
}

/// A plain waiter for r0.
pub struct Waiter {
    /// Global time it connects and queues.
    pub at: Duration,
    /// Its lease's TTL.
    pub ttl: Duration,
    /// How long it waits in the queue.
    pub wait: Duration,
    /// Whether it writes to the fenced resource once granted.
    pub fenced_write: bool,
}

/// Spawns `waiter` as the client `ctx.name`: at `waiter.at` it connects and
/// queues for r0; once granted it writes with its token (if
/// `waiter.fenced_write`) and releases.
pub fn spawn_waiter(
    sim: &mut turmoil::Sim<'_>,
    ctx: ClientCtx,
    endpoints: Vec<String>,
    waiter: Waiter,
) {
    sim.client(ctx.name.clone(), async move {
        let roles = ctx.roles.clone();
        let client = connect_at(&roles, waiter.at, endpoints, crate::env::client_options()).await?;
        let opts = waiting(waiter.ttl, waiter.wait);
        if let Some((lease, token, _, _)) = ctx.acquire(&client, "r0", opts).await {
            if waiter.fenced_write {
                ctx.fenced_write("r0", lease, token);
            }
            ctx.release(&client, "r0", lease, token).await;
        }
        Ok(())
    });
}
