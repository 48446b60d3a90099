//! Named scenarios: scripted clients (and scripted faults, here or in
//! `faults.rs`) that replay a public bug's shape against the production
//! code, each naming the bug it guards against.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use warden_client::{AcquireOptions, AcquireResult, Client, ClientOptions};

use crate::env::{global_now, SimClock};
use crate::world::{bound_e_ms, lock, sleep, ClientCtx, World};

/// The shape of a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scenario {
    /// Random faults and workload drawn from the seed.
    Random,
    /// Repeated elections while a dead holder's lease should run out (L2, etcd 9395).
    RepeatedElections,
    /// A waiter whose lease expired while it waited (S8, Jepsen etcd 3.4.3).
    DueWaiter,
    /// A stalled ex-leader whose expiries go through forwarding (etcd 15247).
    StalledLeaderExpiry,
    /// A waiting acquire re-sent to the new leader after the old one
    /// crashed and restarted from a snapshot (S7).
    RetryAfterSnapshot,
    /// A renew acknowledged late: validity from the send, not the receipt (S5).
    SlowRenewAck,
    /// One expiry entry hands one resource on twice (S2: tokens).
    BatchedHandoff,
    /// Renews sent to a leader cut off from the others (S4/S5, etcd 15247).
    DeposedLeaderRenew,
    /// An acquire whose reply was lost, retried on the new leader (S7).
    LostReplyNewLeader,
    /// A release held in the network, delivered after a newer grant (S6).
    RetriedRelease,
    /// Every peer link slow: calls still complete while it lasts (L3, L1).
    SlowLinks,
}

/// One-way latency of every peer link in the `slow-links` scenario: 40 ms.
/// An append's round trip (80 ms) is then above openraft's own call timeout
/// (one heartbeat interval, 50 ms) and below the floor the peer network puts
/// under it (`warden_server::network::call_timeout_floor`, 125 ms).
pub const SLOW_LINK_MS: u64 = 40;

impl Scenario {
    /// Every scenario's name.
    pub const NAMES: &[&str] = &[
        "random",
        "repeated-elections",
        "due-waiter",
        "stalled-leader-expiry",
        "retry-after-snapshot",
        "slow-renew-ack",
        "batched-handoff",
        "deposed-leader-renew",
        "lost-reply-new-leader",
        "retried-release",
        "slow-links",
    ];

    /// Simulated seconds of faults a run of this scenario needs by default
    /// (`--fault-secs`): 60 for random runs; for a named scenario, the
    /// shortest that still covers its script (its scripted faults end with
    /// the fault phase, and its clients' last step falls before
    /// 3 s + this + a few seconds).
    pub fn default_fault_secs(self) -> u64 {
        match self {
            Scenario::Random => 60,
            Scenario::RepeatedElections => 10,
            Scenario::StalledLeaderExpiry | Scenario::RetryAfterSnapshot => 4,
            Scenario::DueWaiter
            | Scenario::SlowRenewAck
            | Scenario::BatchedHandoff
            | Scenario::DeposedLeaderRenew => 3,
            Scenario::LostReplyNewLeader | Scenario::RetriedRelease => 2,
            Scenario::SlowLinks => 8,
        }
    }

    /// Parses a name.
    pub fn parse(s: &str) -> Result<Scenario, String> {
        Ok(match s {
            "random" => Scenario::Random,
            "repeated-elections" => Scenario::RepeatedElections,
            "due-waiter" => Scenario::DueWaiter,
            "stalled-leader-expiry" => Scenario::StalledLeaderExpiry,
            "retry-after-snapshot" => Scenario::RetryAfterSnapshot,
            "slow-renew-ack" => Scenario::SlowRenewAck,
            "batched-handoff" => Scenario::BatchedHandoff,
            "deposed-leader-renew" => Scenario::DeposedLeaderRenew,
            "lost-reply-new-leader" => Scenario::LostReplyNewLeader,
            "retried-release" => Scenario::RetriedRelease,
            "slow-links" => Scenario::SlowLinks,
            other => {
                return Err(format!(
                    "--scenario: unknown {other:?}; known: {}",
                    Scenario::NAMES.join(", ")
                ))
            }
        })
    }
}

async fn sleep_until(t: Duration) {
    sleep(t.saturating_sub(global_now())).await;
}

fn ctx(world: &World, name: &str, origin_h: u64, rate_ppm: i64) -> ClientCtx {
    world.client(
        name,
        SimClock {
            origin: Duration::from_secs(origin_h * 3_600),
            rate_ppm,
            epoch: 1_000 + origin_h,
        },
    )
}

fn secs(ms: u64) -> Duration {
    Duration::from_millis(ms)
}

/// The node id that leads, as a linearizable cluster-status read reports it
/// (retried until one is known).
async fn leader_id(client: &Client) -> u64 {
    loop {
        if let Ok(s) = client.cluster_status().await {
            if s.leader_id != 0 {
                return s.leader_id;
            }
        }
        sleep(secs(100)).await;
    }
}

/// Node host names: `n1`, `n2`, ...
fn node_hosts(endpoints: &[String]) -> Vec<String> {
    endpoints
        .iter()
        .filter_map(|e| e.split(':').next().map(str::to_owned))
        .collect()
}

/// Cuts (both ways) `host` from every node in `others` but itself.
fn cut_off(host: &str, others: &[String]) {
    for o in others.iter().filter(|o| *o != host) {
        turmoil::partition(host, o.as_str());
    }
}

/// Undoes [`cut_off`].
fn reconnect(host: &str, others: &[String]) {
    for o in others.iter().filter(|o| *o != host) {
        turmoil::repair(host, o.as_str());
    }
}

/// Spawns the scenario's clients.
pub fn spawn(
    sim: &mut turmoil::Sim<'_>,
    world: &World,
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
                sleep_until(end + secs(4_000)).await;
                Ok(())
            });
        }
        // S8, Jepsen etcd 3.4.3 ("a waiter whose lease expired while it
        // waited"): a queued waiter's process stops (so its lease stops being
        // renewed) before the holder releases; the waiter must be removed,
        // never granted.
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
                    sleep_until(secs(5_500)).await;
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
                let _ = tokio::time::timeout(secs(5_000), w.acquire(&client, "r0", opts)).await;
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
                    while global_now() < secs(9_000) {
                        sleep(secs(300)).await;
                        a.renew(&client, "r0", lease, token).await;
                    }
                    a.release(&client, "r0", lease, token).await;
                }
                sleep_until(end).await;
                Ok(())
            });
        }
        // S5, Kleppmann "How to do distributed locking": a renew whose reply
        // takes 1.4 s; the holder then walks away and a waiter gets the lock
        // at expiry. valid_until counted from the send ends before that
        // grant; counted from the receipt it does not.
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
        // S7, Raft dissertation §6.3 (a client's session, i.e. its outcome
        // record, must be in the snapshot, or a retry after a restart
        // executes twice): a waiter's acquire executes, snapshots follow
        // (a hammer client makes entries), then the leader crashes and
        // restarts from its snapshot (`faults.rs`); the waiter re-sends the
        // same request id to the new leader, and the restarted node applies
        // that retry too. It must replay the first outcome everywhere.
        Scenario::RetryAfterSnapshot => {
            let h = ctx(world, "h", 23, 1_000);
            let w = ctx(world, "w", 29, -1_000);
            let (eps_h, eps_w) = (endpoints.clone(), endpoints.clone());
            sim.client("h", async move {
                sleep_until(secs(1_000)).await;
                let client = Client::connect(eps_h, ClientOptions::default()).await?;
                let opts = AcquireOptions::with_ttl(secs(3_000));
                if let Some((lease, token, _, _)) = h.acquire(&client, "r0", opts).await {
                    while global_now() < secs(7_000) {
                        sleep(secs(500)).await;
                        h.renew(&client, "r0", lease, token).await;
                    }
                    h.release(&client, "r0", lease, token).await;
                }
                Ok(())
            });
            sim.client("w", async move {
                sleep_until(secs(1_500)).await;
                let client = Client::connect(eps_w, ClientOptions::default()).await?;
                let opts = AcquireOptions {
                    ttl: secs(3_000),
                    lease_id: None,
                    wait: secs(12_000),
                    lock_delay: Duration::ZERO,
                };
                if let Some((lease, token, _, _)) = w.acquire(&client, "r0", opts).await {
                    w.release(&client, "r0", lease, token).await;
                }
                Ok(())
            });
            // The hammer: 240 renews one after another (one entry each), so
            // that a snapshot (every 200 entries in the simulator) covers
            // the waiter's acquire before the crash.
            sim.client("k", async move {
                sleep_until(secs(1_600)).await;
                let client = Client::connect(endpoints, ClientOptions::default()).await?;
                let lease = client.lease_grant(secs(3_000)).await?.lease_id;
                for _ in 0..240 {
                    let _ = client.renew(lease).await;
                }
                let _ = client.revoke(lease).await;
                Ok(())
            });
        }
        // S2 ("the bare log index is not enough", SEMANTICS S2): a holder
        // `a` and a waiter `b` of r0 stop renewing after one renew of both
        // in one batch, so one `Expire` entry ends both: r0 goes to `b` and,
        // when `b`'s lease ends in the same entry, on to `c`. Two grants of
        // one resource in one entry must carry two growing tokens.
        Scenario::BatchedHandoff => {
            let a = ctx(world, "a", 37, 2_000);
            let c = ctx(world, "c", 41, -2_000);
            let eps = endpoints.clone();
            sim.client("a", async move {
                sleep_until(secs(1_000)).await;
                let client = Client::connect(eps, ClientOptions::default()).await?;
                let opts = AcquireOptions::with_ttl(secs(3_000));
                let Some((la, token, _, _)) = a.acquire(&client, "r0", opts).await else {
                    return Ok(());
                };
                let lb = client.lease_grant(secs(3_000)).await?.lease_id;
                let wait = AcquireOptions {
                    ttl: secs(3_000),
                    lease_id: Some(lb),
                    wait: secs(30_000),
                    lock_delay: Duration::ZERO,
                };
                // Queued, then the call is dropped: the waiter stays (a
                // dropped stream is not a cancel) and nobody renews lb.
                let _ = tokio::time::timeout(secs(300), client.acquire("r0", wait)).await;
                sleep_until(secs(2_000)).await;
                let (_, _) = tokio::join!(a.renew(&client, "r0", la, token), client.renew(lb));
                sleep_until(end).await;
                Ok(())
            });
            sim.client("c", async move {
                sleep_until(secs(1_800)).await;
                let client = Client::connect(endpoints, ClientOptions::default()).await?;
                let opts = AcquireOptions {
                    ttl: secs(10_000),
                    lease_id: None,
                    wait: secs(15_000),
                    lock_delay: Duration::ZERO,
                };
                if let Some((lease, token, _, _)) = c.acquire(&client, "r0", opts).await {
                    c.fenced_write("r0", lease, token);
                    c.release(&client, "r0", lease, token).await;
                }
                Ok(())
            });
        }
        // S4/S5, etcd issue 15247 (item 2: "the old leader still handles
        // lease keep alive requests") and etcd PR 7029: the leader is cut off
        // from the other nodes (not from the clients) while a holder keeps
        // renewing; renews sent to it must fail over to the new leader, not
        // be acknowledged by the deposed one. A waiter gets the lock only
        // when the holder releases.
        Scenario::DeposedLeaderRenew => {
            let a = ctx(world, "a", 43, 3_000);
            let b = ctx(world, "b", 47, -3_000);
            let (eps_a, eps_b) = (endpoints.clone(), endpoints.clone());
            let hosts = node_hosts(&endpoints);
            sim.client("a", async move {
                sleep_until(secs(1_000)).await;
                let client = Client::connect(eps_a, ClientOptions::default()).await?;
                let opts = AcquireOptions::with_ttl(secs(3_000));
                let Some((lease, token, _, _)) = a.acquire(&client, "r0", opts).await else {
                    return Ok(());
                };
                let leader = format!("n{}", leader_id(&client).await);
                sleep_until(secs(2_000)).await;
                cut_off(&leader, &hosts);
                while global_now() < secs(6_000) {
                    sleep(secs(500)).await;
                    a.renew(&client, "r0", lease, token).await;
                }
                reconnect(&leader, &hosts);
                a.release(&client, "r0", lease, token).await;
                sleep_until(end).await;
                Ok(())
            });
            sim.client("b", async move {
                sleep_until(secs(2_500)).await;
                let client = Client::connect(eps_b, ClientOptions::default()).await?;
                let opts = AcquireOptions {
                    ttl: secs(3_000),
                    lease_id: None,
                    wait: secs(10_000),
                    lock_delay: Duration::ZERO,
                };
                if let Some((lease, token, _, _)) = b.acquire(&client, "r0", opts).await {
                    b.fenced_write("r0", lease, token);
                    b.release(&client, "r0", lease, token).await;
                }
                Ok(())
            });
        }
        // S7, Raft paper §8 and etcd issue 18424 (a client retry after a
        // leader change executes a non-idempotent request twice): the
        // replies from every node to `x` are dropped, so its try-lock
        // executes on the leader but `x` never hears; the leader is then cut
        // off, and `x`'s retry (same request id) reaches the new leader. It
        // must get the first grant back, not a second execution.
        Scenario::LostReplyNewLeader => {
            let x = ctx(world, "x", 53, 0);
            let hosts = node_hosts(&endpoints);
            sim.client("x", async move {
                sleep_until(secs(1_000)).await;
                let options = ClientOptions {
                    deadline: secs(8_000),
                    ..ClientOptions::default()
                };
                let client = Client::connect(endpoints, options).await?;
                // A first grant makes the client send its next call to the leader.
                if let Ok(AcquireResult::Granted { lease_id, .. }) = client
                    .acquire("warm", AcquireOptions::with_ttl(secs(2_000)))
                    .await
                {
                    let _ = client.release(lease_id, Some("warm".into()), None).await;
                }
                let leader = format!("n{}", leader_id(&client).await);
                for n in &hosts {
                    turmoil::partition_oneway(n.as_str(), "x");
                }
                let iso = leader.clone();
                let hosts2 = hosts.clone();
                tokio::spawn(async move {
                    sleep(secs(300)).await;
                    cut_off(&iso, &hosts2);
                    for n in hosts2.iter().filter(|n| **n != iso) {
                        turmoil::repair_oneway(n.as_str(), "x");
                    }
                    sleep(secs(3_000)).await;
                    reconnect(&iso, &hosts2);
                    turmoil::repair_oneway(iso.as_str(), "x");
                });
                let opts = AcquireOptions::with_ttl(secs(4_000));
                match x.acquire(&client, "r0", opts).await {
                    Some((lease, token, _, _)) => {
                        x.fenced_write("r0", lease, token);
                        x.release(&client, "r0", lease, token).await;
                    }
                    None => lock(&x.history).violation(
                        "L3",
                        "lost-reply-new-leader: the retried acquire was not granted".into(),
                    ),
                }
                sleep_until(secs(5_000)).await;
                Ok(())
            });
        }
        // S6, etcd issue 22082 (a late release carrying an old token freed
        // a newer grant): `x1` releases grant t1 of a shared lease, but the
        // request is held in the network; meanwhile `x2` (same lease)
        // releases t1 itself and acquires r0 again (t2). When the held
        // release arrives it must be refused, and t2 must stay.
        Scenario::RetriedRelease => {
            let x2 = ctx(world, "x2", 59, 1_000);
            let shared: Arc<Mutex<Option<(u64, u64)>>> = Arc::new(Mutex::new(None));
            let shared2 = shared.clone();
            let eps = endpoints.clone();
            let hosts = node_hosts(&endpoints);
            let history = world.history.clone();
            sim.client("x2", async move {
                sleep_until(secs(1_000)).await;
                let client = Client::connect(eps, ClientOptions::default()).await?;
                let lease = client.lease_grant(secs(5_000)).await?.lease_id;
                let opts = AcquireOptions {
                    ttl: secs(5_000),
                    lease_id: Some(lease),
                    wait: Duration::ZERO,
                    lock_delay: Duration::ZERO,
                };
                let Some((_, t1, _, _)) = x2.acquire(&client, "r0", opts).await else {
                    return Ok(());
                };
                *shared.lock().unwrap_or_else(std::sync::PoisonError::into_inner) =
                    Some((lease, t1));
                sleep_until(secs(2_500)).await;
                x2.release(&client, "r0", lease, t1).await;
                let Some((_, t2, _, _)) = x2.acquire(&client, "r0", opts).await else {
                    return Ok(());
                };
                // x1's held release is delivered at 4 s.
                while global_now() < secs(5_000) {
                    x2.renew(&client, "r0", lease, t2).await;
                    sleep(secs(1_000)).await;
                }
                match client.status("r0").await {
                    Ok(s) => {
                        let holder = s.holder.map(|h| (h.lease_id, h.fencing_token));
                        if holder != Some((lease, t2)) {
                            lock(&x2.history).violation(
                                "S6",
                                format!("retried-release: r0 is held by {holder:?}, not by lease {lease} token {t2}"),
                            );
                        }
                    }
                    Err(e) => lock(&x2.history)
                        .violation("L3", format!("retried-release: status failed: {e}")),
                }
                x2.fenced_write("r0", lease, t2);
                x2.release(&client, "r0", lease, t2).await;
                Ok(())
            });
            sim.client("x1", async move {
                sleep_until(secs(1_000)).await;
                let options = ClientOptions {
                    deadline: secs(8_000),
                    ..ClientOptions::default()
                };
                let client = Client::connect(endpoints, options).await?;
                // Warm the connections: a status read from every node.
                let _ = client.cluster_status().await;
                sleep_until(secs(2_000)).await;
                let Some((lease, t1)) = *shared2
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                else {
                    return Ok(());
                };
                for n in &hosts {
                    turmoil::hold("x1", n.as_str());
                }
                let hosts2 = hosts.clone();
                tokio::spawn(async move {
                    sleep_until(secs(4_000)).await;
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
        // L3 and L1 on slow links (a simulator finding: with more than
        // about 25 ms of one-way latency between the nodes nothing
        // committed, because every append timed out after openraft's one
        // heartbeat interval, 50 ms): every peer link has SLOW_LINK_MS each
        // way for the whole fault phase, a healthy cluster whose nodes are
        // merely far apart. While the links are slow, each of `a`'s
        // acquires, renews and releases must be acknowledged (L3), and r1,
        // whose holder `w` walks away, must reach the waiter `b` within
        // TTL + E of `w`'s acquire (L1). The faults start at 3 s.
        Scenario::SlowLinks => {
            let a = ctx(world, "a", 61, 2_000);
            let w = ctx(world, "w", 67, -2_000);
            let b = ctx(world, "b", 71, 0);
            let (eps_a, eps_w) = (endpoints.clone(), endpoints.clone());
            sim.client("a", async move {
                sleep_until(secs(1_000)).await;
                let client = Client::connect(eps_a, ClientOptions::default()).await?;
                sleep_until(secs(3_200)).await;
                let mut cycles = 0u64;
                while global_now() + secs(1_000) < end {
                    let sent = global_now();
                    let opts = AcquireOptions::with_ttl(secs(3_000));
                    let Some((lease, token, _, _)) = a.acquire(&client, "r0", opts).await else {
                        lock(&a.history).violation(
                            "L3",
                            format!("slow-links: acquire of r0 sent at {sent:?} was not granted (after {cycles} cycles)"),
                        );
                        break;
                    };
                    if a.renew(&client, "r0", lease, token).await.is_none() {
                        lock(&a.history).violation(
                            "L3",
                            format!("slow-links: renew of lease {lease} failed (after {cycles} cycles)"),
                        );
                        break;
                    }
                    a.fenced_write("r0", lease, token);
                    if !a.release(&client, "r0", lease, token).await {
                        lock(&a.history).violation(
                            "L3",
                            format!("slow-links: release of lease {lease} was not acknowledged (after {cycles} cycles)"),
                        );
                        break;
                    }
                    cycles += 1;
                    sleep(secs(200)).await;
                }
                Ok(())
            });
            // `w` takes r1 at 4 s and walks away (TTL 1.5 s).
            sim.client("w", async move {
                sleep_until(secs(1_000)).await;
                let client = Client::connect(eps_w, ClientOptions::default()).await?;
                sleep_until(secs(4_000)).await;
                match w
                    .acquire(&client, "r1", AcquireOptions::with_ttl(secs(1_500)))
                    .await
                {
                    Some((lease, token, _, _)) => {
                        w.fenced_write("r1", lease, token);
                    }
                    None => lock(&w.history)
                        .violation("L3", "slow-links: acquire of r1 was not granted".into()),
                }
                Ok(())
            });
            sim.client("b", async move {
                sleep_until(secs(1_000)).await;
                let client = Client::connect(endpoints, ClientOptions::default()).await?;
                sleep_until(secs(4_500)).await;
                let opts = AcquireOptions {
                    ttl: secs(3_000),
                    lease_id: None,
                    wait: secs(6_000),
                    lock_delay: Duration::ZERO,
                };
                // L1: w's acquire was sent at 4 s; its lease ends and r1 is
                // granted within TTL + E, plus 1 s for the commits.
                let bound = secs(4_000 + 1_500 + bound_e_ms() + 1_000);
                match b.acquire(&client, "r1", opts).await {
                    Some((lease, token, _, _)) => {
                        let granted_at = global_now();
                        if granted_at > bound {
                            lock(&b.history).violation(
                                "L1",
                                format!(
                                    "slow-links: r1 granted at {granted_at:?}, after {bound:?}"
                                ),
                            );
                        }
                        b.fenced_write("r1", lease, token);
                        if !b.release(&client, "r1", lease, token).await {
                            lock(&b.history).violation(
                                "L3",
                                format!(
                                    "slow-links: release of lease {lease} was not acknowledged"
                                ),
                            );
                        }
                    }
                    None => lock(&b.history).violation(
                        "L1",
                        "slow-links: r1 was not granted to the waiter while the links were slow"
                            .into(),
                    ),
                }
                Ok(())
            });
        }
    }
}
