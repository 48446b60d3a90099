//! The workloads. Each returns one [`Run`] row of the results.
//!
//! - `uncontended`: one client, acquire + release on a fresh resource,
//!   `iterations` timed cycles after `warmup` untimed ones.
//! - `parallel`: 64 clients, each cycling on its own resource, for a fixed
//!   time (the first second is warm-up, not counted).
//! - `contended`: 16 clients, one resource, waiting acquires; handoff latency
//!   = the next grant's arrival − the previous holder's release send (both in
//!   this process), grants per second, grants per client.
//! - `failover`: a holder renews every second; a contender waits on the held
//!   resource; probers cycle on fresh resources; the leader is killed with
//!   SIGKILL. Time without service = the longest gap, from the kill on,
//!   between two successful prober cycles; then whether the holder still
//!   holds (else: lost) and whether the contender was granted (twice).
//! - `sessions`: N sessions kept alive at one heartbeat per second each; CPU
//!   (% of one core) and RSS per node from /proc.
//! - `semaphore` (Warden only): 16 clients on one semaphore of 4 permits,
//!   waiting acquires of a permit and releases, for the `contended` time;
//!   latency = acquire send -> grant, grants per second beside `contended`'s
//!   mutex.
//! - `readers` (Warden only): 15 readers and 1 writer on one read-write
//!   lock, the same loop; latency = a reader's acquire send -> grant, with
//!   the writer's grants and p99 wait beside it (FIFO: the writer is never
//!   starved).

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{anyhow, Result};
use futures::StreamExt;
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use crate::backend::Target;

/// TTL of the `sessions` workload's leases and keys: long enough that the
/// first ones granted outlive granting all 10,000 (heartbeats stay at 1/s).
pub const SESSION_TTL_S: u64 = 60;
use crate::cluster::{proc_usage, Cluster, System};

/// One row of `latest.json`'s `runs`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Run {
    pub workload: String,
    pub backend: String,
    pub config: String,
    /// False for Redis: one node, no fencing, locks lost on restart.
    pub safe: bool,
    pub p50_ms: Option<f64>,
    pub p99_ms: Option<f64>,
    pub p999_ms: Option<f64>,
    pub ops_per_s: Option<f64>,
    /// Timed operations.
    pub count: u64,
    /// Operations that failed (error or timeout).
    pub errors: u64,
    /// Workload-specific measurements.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// Sizes of each workload (`--quick` shrinks them).
#[derive(Debug, Clone)]
pub struct Params {
    pub warmup: u64,
    pub iterations: u64,
    pub parallel_clients: u64,
    pub parallel_s: u64,
    pub contended_clients: u64,
    pub contended_s: u64,
    pub failover_before_s: u64,
    pub failover_after_s: u64,
    pub probers: u64,
    pub sessions: u64,
    pub sessions_s: u64,
}

impl Params {
    pub fn full() -> Params {
        Params {
            warmup: 200,
            iterations: 2_000,
            parallel_clients: 64,
            parallel_s: 10,
            contended_clients: 16,
            contended_s: 10,
            failover_before_s: 3,
            failover_after_s: 6,
            probers: 4,
            sessions: 10_000,
            sessions_s: 15,
        }
    }

    pub fn quick() -> Params {
        Params {
            warmup: 30,
            iterations: 200,
            parallel_clients: 64,
            parallel_s: 3,
            contended_clients: 16,
            contended_s: 2,
            failover_before_s: 1,
            failover_after_s: 3,
            probers: 4,
            sessions: 500,
            sessions_s: 3,
        }
    }
}

fn histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 120_000_000, 3).expect("histogram bounds")
}

fn record(h: &mut Histogram<u64>, d: Duration) {
    let _ = h.record((d.as_micros() as u64).clamp(1, 120_000_000));
}

fn row(workload: &str, target: &Target, system: System, h: &Histogram<u64>) -> Run {
    let ms = |q: f64| (!h.is_empty()).then(|| h.value_at_quantile(q) as f64 / 1000.0);
    Run {
        workload: workload.into(),
        backend: target.backend.into(),
        config: system.config().into(),
        safe: target.backend != "redis",
        p50_ms: ms(0.5),
        p99_ms: ms(0.99),
        p999_ms: ms(0.999),
        ops_per_s: None,
        count: h.len(),
        errors: 0,
        extra: Map::new(),
    }
}

async fn connect_within(
    target: &Target,
    within: Duration,
) -> Result<Box<dyn crate::backend::Backend>> {
    tokio::time::timeout(within, target.connect())
        .await
        .map_err(|_| anyhow!("{}: connect timed out", target.backend))?
}

pub async fn uncontended(target: &Target, system: System, p: &Params) -> Result<Run> {
    let mut client = connect_within(target, Duration::from_secs(10)).await?;
    let tag: u32 = rand::random();
    for i in 0..p.warmup {
        client.cycle(&format!("w{tag:x}-{i}")).await?;
    }
    let mut h = histogram();
    let started = Instant::now();
    for i in 0..p.iterations {
        let t = Instant::now();
        client.cycle(&format!("u{tag:x}-{i}")).await?;
        record(&mut h, t.elapsed());
    }
    let wall = started.elapsed().as_secs_f64();
    let mut r = row("uncontended", target, system, &h);
    r.ops_per_s = Some(h.len() as f64 / wall);
    r.extra
        .insert("ops_total".into(), json!(p.warmup + p.iterations));
    Ok(r)
}

pub async fn parallel(target: &Target, system: System, p: &Params) -> Result<Run> {
    let warm = Duration::from_secs(1);
    let run_for = Duration::from_secs(p.parallel_s);
    let mut clients = Vec::new();
    for _ in 0..p.parallel_clients {
        clients.push(connect_within(target, Duration::from_secs(10)).await?);
    }
    let tag: u32 = rand::random();
    let start = Instant::now();
    let (measure_from, stop_at) = (start + warm, start + warm + run_for);
    let mut tasks = Vec::new();
    for (c, mut client) in clients.into_iter().enumerate() {
        tasks.push(tokio::spawn(async move {
            let resource = format!("p{tag:x}-{c}");
            let mut h = histogram();
            let (mut errors, mut all) = (0u64, 0u64);
            loop {
                let t = Instant::now();
                if t >= stop_at {
                    break;
                }
                match tokio::time::timeout(Duration::from_secs(10), client.cycle(&resource)).await {
                    Ok(Ok(())) if t >= measure_from => {
                        record(&mut h, t.elapsed());
                        all += 1;
                    }
                    Ok(Ok(())) => all += 1,
                    _ => errors += 1,
                }
            }
            (h, errors, all)
        }));
    }
    let mut h = histogram();
    let (mut errors, mut all) = (0, 0);
    for t in tasks {
        let (th, e, a) = t.await?;
        h.add(th).map_err(|e| anyhow!("{e:?}"))?;
        errors += e;
        all += a;
    }
    let mut r = row("parallel", target, system, &h);
    r.extra.insert("ops_total".into(), json!(all));
    r.ops_per_s = Some(h.len() as f64 / run_for.as_secs_f64());
    r.errors = errors;
    r.extra.insert("clients".into(), json!(p.parallel_clients));
    Ok(r)
}

pub async fn contended(target: &Target, system: System, p: &Params) -> Result<Run> {
    let resource = format!("c{:x}", rand::random::<u32>());
    let last_release: Arc<Mutex<Option<Instant>>> = Arc::new(Mutex::new(None));
    let mut clients = Vec::new();
    for _ in 0..p.contended_clients {
        clients.push(connect_within(target, Duration::from_secs(10)).await?);
    }
    let start = Instant::now();
    let stop_at = start + Duration::from_secs(p.contended_s);
    let mut tasks = Vec::new();
    for mut client in clients {
        let (resource, last_release) = (resource.clone(), last_release.clone());
        tasks.push(tokio::spawn(async move {
            let mut h = histogram();
            let (mut grants, mut errors) = (0u64, 0u64);
            while Instant::now() < stop_at {
                let grant = match client.acquire(&resource, Duration::from_secs(30)).await {
                    Ok(Some(g)) => g,
                    Ok(None) => continue,
                    Err(_) => {
                        errors += 1;
                        continue;
                    }
                };
                let granted_at = Instant::now();
                if let Some(sent) = last_release.lock().expect("lock").take() {
                    if granted_at <= stop_at {
                        record(&mut h, granted_at - sent);
                    }
                }
                if granted_at <= stop_at {
                    grants += 1;
                }
                *last_release.lock().expect("lock") = Some(Instant::now());
                if client.release(&grant).await.is_err() {
                    errors += 1;
                }
            }
            (h, grants, errors)
        }));
    }
    let mut h = histogram();
    let mut per_client = Vec::new();
    let mut errors = 0;
    for t in tasks {
        match tokio::time::timeout(Duration::from_secs(p.contended_s + 60), t).await {
            Ok(Ok((th, g, e))) => {
                h.add(th).map_err(|e| anyhow!("{e:?}"))?;
                per_client.push(g);
                errors += e;
            }
            _ => {
                per_client.push(0);
                errors += 1;
            }
        }
    }
    let total: u64 = per_client.iter().sum();
    let mut r = row("contended", target, system, &h);
    r.ops_per_s = Some(total as f64 / p.contended_s as f64);
    r.errors = errors;
    r.extra.insert("clients".into(), json!(p.contended_clients));
    r.extra.insert("grants".into(), json!(total));
    r.extra
        .insert("grants_per_client".into(), json!(per_client));
    r.extra.insert(
        "latency_is".into(),
        json!("handoff: release send -> next grant arrival"),
    );
    Ok(r)
}

pub async fn failover(target: &Target, cluster: &mut Cluster, p: &Params) -> Result<Run> {
    let system = cluster.system;
    let held = format!("f{:x}", rand::random::<u32>());
    let mut holder = connect_within(target, Duration::from_secs(10)).await?;
    let grant = holder
        .acquire(&held, Duration::ZERO)
        .await?
        .ok_or_else(|| anyhow!("failover: held resource not granted"))?;
    let holder = Arc::new(tokio::sync::Mutex::new(holder));
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let renew_errors = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let renewer = {
        let (holder, grant, stop, renew_errors) = (
            holder.clone(),
            grant.clone(),
            stop.clone(),
            renew_errors.clone(),
        );
        tokio::spawn(async move {
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                tokio::time::sleep(Duration::from_secs(1)).await;
                let mut h = holder.lock().await;
                match tokio::time::timeout(Duration::from_secs(3), h.renew(&grant)).await {
                    Ok(Ok(())) => {}
                    _ => {
                        renew_errors.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    }
                }
            }
        })
    };
    // The contender waits on the held resource for the whole run: any grant
    // while the holder holds is a second grant.
    let contender_granted: Arc<Mutex<Option<Instant>>> = Arc::new(Mutex::new(None));
    let contender = {
        let (target, held, granted) = (target.clone(), held.clone(), contender_granted.clone());
        tokio::spawn(async move {
            let deadline = Instant::now() + Duration::from_secs(120);
            let mut client = None;
            while Instant::now() < deadline {
                if client.is_none() {
                    client = connect_within(&target, Duration::from_secs(1)).await.ok();
                }
                if let Some(c) = client.as_mut() {
                    let left = deadline.saturating_duration_since(Instant::now());
                    match c.acquire(&held, left).await {
                        Ok(Some(_)) => {
                            *granted.lock().expect("lock") = Some(Instant::now());
                            return;
                        }
                        Ok(None) => {}
                        // A broken connection: a real client reconnects.
                        Err(_) => client = None,
                    }
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        })
    };
    // Probers.
    let completions: Arc<Mutex<Vec<Instant>>> = Arc::new(Mutex::new(Vec::new()));
    let mut probers = Vec::new();
    for c in 0..p.probers {
        let (target, stop, completions) = (target.clone(), stop.clone(), completions.clone());
        probers.push(tokio::spawn(async move {
            let mut h = histogram();
            let mut errors = 0u64;
            let mut client = None;
            let mut i = 0u64;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                if client.is_none() {
                    match connect_within(&target, Duration::from_secs(1)).await {
                        Ok(cl) => client = Some(cl),
                        Err(_) => {
                            errors += 1;
                            tokio::time::sleep(Duration::from_millis(10)).await;
                            continue;
                        }
                    }
                }
                let cl = client.as_mut().expect("client");
                i += 1;
                let t = Instant::now();
                match tokio::time::timeout(Duration::from_secs(2), cl.cycle(&format!("fp{c}-{i}")))
                    .await
                {
                    Ok(Ok(())) => {
                        record(&mut h, t.elapsed());
                        completions.lock().expect("lock").push(Instant::now());
                    }
                    Ok(Err(_)) => {
                        errors += 1;
                        client = None;
                    }
                    Err(_) => errors += 1,
                }
            }
            (h, errors)
        }));
    }
    tokio::time::sleep(Duration::from_secs(p.failover_before_s)).await;
    let leader = cluster
        .leader()
        .await
        .ok_or_else(|| anyhow!("failover: no leader before the kill"))?;
    let killed_at = Instant::now();
    cluster.kill9(leader)?;
    if system == System::Redis {
        // A supervisor restarts the one node at once.
        cluster.restart(leader)?;
    }
    // When a surviving node first reports itself leader (Redis: the
    // restarted node answers PING), polled every 20 ms.
    let mut new_leader_ms = None;
    let after_until = killed_at + Duration::from_secs(p.failover_after_s);
    while Instant::now() < after_until {
        if new_leader_ms.is_none() && cluster.leader().await.is_some() {
            new_leader_ms = Some((killed_at.elapsed().as_secs_f64() * 1e4).round() / 10.0);
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let mut h = histogram();
    let mut errors = 0;
    for t in probers {
        if let Ok(Ok((th, e))) = tokio::time::timeout(Duration::from_secs(10), t).await {
            h.add(th).map_err(|e| anyhow!("{e:?}"))?;
            errors += e;
        }
    }
    let _ = renewer.await;
    // Time without service: the longest gap from the kill on.
    let mut after: Vec<Instant> = completions
        .lock()
        .expect("lock")
        .iter()
        .copied()
        .filter(|t| *t >= killed_at)
        .collect();
    after.sort_unstable();
    let mut gap = Duration::ZERO;
    let mut prev = killed_at;
    for t in &after {
        gap = gap.max(*t - prev);
        prev = *t;
    }
    let served_again = !after.is_empty();
    if !served_again {
        gap = Duration::from_secs(p.failover_after_s);
    }
    // Does the holder still hold its grant?
    let check_deadline = Instant::now() + Duration::from_secs(15);
    let holds = loop {
        let mut hc = holder.lock().await;
        match tokio::time::timeout(Duration::from_secs(3), hc.holds(&grant)).await {
            Ok(Ok(b)) => break Some(b),
            _ if Instant::now() > check_deadline => break None,
            _ => {}
        }
        drop(hc);
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let contender_at = *contender_granted.lock().expect("lock");
    contender.abort();
    let mut r = row("failover", target, system, &h);
    r.ops_per_s = Some(h.len() as f64 / (p.failover_before_s + p.failover_after_s) as f64);
    r.errors = errors;
    r.extra.insert(
        "unavailable_ms".into(),
        json!((gap.as_secs_f64() * 1e4).round() / 10.0),
    );
    r.extra.insert("served_again".into(), json!(served_again));
    r.extra.insert("new_leader_ms".into(), json!(new_leader_ms));
    r.extra.insert("killed_node".into(), json!(leader + 1));
    r.extra.insert("lost".into(), json!(holds != Some(true)));
    r.extra.insert(
        "holder_check".into(),
        json!(match holds {
            Some(true) => "holds",
            Some(false) => "lost",
            None => "unknown (no answer)",
        }),
    );
    r.extra
        .insert("granted_twice".into(), json!(contender_at.is_some()));
    r.extra.insert(
        "renew_errors".into(),
        json!(renew_errors.load(std::sync::atomic::Ordering::Relaxed)),
    );
    r.extra.insert(
        "latency_is".into(),
        json!("probers' acquire+release cycles across the failover"),
    );
    Ok(r)
}

/// Keeps `n` sessions alive at one heartbeat per second each for `seconds`;
/// returns acknowledged heartbeats.
async fn keep_sessions(
    target: &Target,
    n: u64,
    seconds: u64,
    measure: impl FnOnce() -> futures::future::BoxFuture<'static, ()>,
) -> Result<(u64, u64)> {
    let acked = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let failed = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let ramp = Duration::from_secs(2);
    match target.backend {
        "warden" | "warden-insecure" => {
            use warden_proto::v1 as pb;
            // Find the leader: keep-alive streams go there.
            let client =
                warden_client::Client::connect(target.endpoints.clone(), target.warden_options())
                    .await?;
            let status = client.cluster_status().await?;
            let leader = status
                .members
                .iter()
                .find(|m| m.id == status.leader_id)
                .map(|m| m.addr.clone())
                .unwrap_or_else(|| target.endpoints[0].clone());
            let leases: Vec<u64> = futures::stream::iter(0..n)
                .map(|_| {
                    let client = client.clone();
                    async move {
                        client
                            .lease_grant(Duration::from_secs(SESSION_TTL_S))
                            .await
                            .map(|g| g.lease_id)
                    }
                })
                .buffer_unordered(64)
                .collect::<Vec<_>>()
                .await
                .into_iter()
                .collect::<Result<_, _>>()?;
            let streams = 16usize;
            let mut tasks = Vec::new();
            for s in 0..streams {
                let ids: Vec<u64> = leases.iter().copied().skip(s).step_by(streams).collect();
                let mut c = pb::lease_client::LeaseClient::new(target.warden_channel(&leader)?);
                let (acked, failed) = (acked.clone(), failed.clone());
                tasks.push(tokio::spawn(async move {
                    let (tx, rx) = tokio::sync::mpsc::channel(ids.len().max(1) * 2);
                    let Ok(replies) = c
                        .lease_keep_alive(tokio_stream::wrappers::ReceiverStream::new(rx))
                        .await
                    else {
                        return;
                    };
                    let mut replies = replies.into_inner();
                    let reader = tokio::spawn(async move {
                        while let Some(Ok(r)) = replies.next().await {
                            if r.live {
                                acked.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                            } else {
                                failed.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                            }
                        }
                    });
                    let count = ids.len().max(1) as u32;
                    let mut seq = 0u64;
                    for _ in 0..seconds + ramp.as_secs() {
                        let round = Instant::now();
                        for (i, id) in ids.iter().enumerate() {
                            seq += 1;
                            tokio::time::sleep_until(
                                (round + Duration::from_secs(1) * i as u32 / count).into(),
                            )
                            .await;
                            if tx
                                .send(pb::LeaseKeepAliveRequest {
                                    lease_id: *id,
                                    sequence: seq,
                                })
                                .await
                                .is_err()
                            {
                                return;
                            }
                        }
                        tokio::time::sleep_until((round + Duration::from_secs(1)).into()).await;
                    }
                    drop(tx);
                    let _ = tokio::time::timeout(Duration::from_secs(2), reader).await;
                }));
            }
            run_measured(ramp, measure, &acked, &failed, tasks, seconds).await
        }
        "etcd" | "etcd-session" => {
            let options = etcd_client::ConnectOptions::new().with_timeout(Duration::from_secs(5));
            let mut conns = Vec::new();
            for _ in 0..16 {
                conns.push(
                    etcd_client::Client::connect(&target.endpoints, Some(options.clone())).await?,
                );
            }
            // First every lease, at most 64 grants in flight (as for the
            // other systems), then the keep-alives.
            let leases: Vec<(usize, Result<i64, etcd_client::Error>)> =
                futures::stream::iter(0..n as usize)
                    .map(|i| {
                        let mut c = conns[i % conns.len()].clone();
                        async move {
                            (
                                i,
                                c.lease_grant(SESSION_TTL_S as i64, None)
                                    .await
                                    .map(|g| g.id()),
                            )
                        }
                    })
                    .buffer_unordered(64)
                    .collect()
                    .await;
            let mut tasks = Vec::new();
            for (i, lease) in leases {
                let Ok(id) = lease else {
                    failed.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    continue;
                };
                let mut c = conns[i % conns.len()].clone();
                let (acked, failed) = (acked.clone(), failed.clone());
                let offset = Duration::from_secs(1) * (i % 1000) as u32 / 1000;
                tasks.push(tokio::spawn(async move {
                    let Ok((mut keeper, mut stream)) = c.lease_keep_alive(id).await else {
                        failed.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        return;
                    };
                    tokio::time::sleep(offset).await;
                    let start = Instant::now();
                    for k in 0..seconds + ramp.as_secs() + 1 {
                        tokio::time::sleep_until((start + Duration::from_secs(k)).into()).await;
                        let ok = keeper.keep_alive().await.is_ok()
                            && matches!(stream.message().await, Ok(Some(r)) if r.ttl() > 0);
                        let counter = if ok { &acked } else { &failed };
                        counter.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    }
                }));
            }
            run_measured(ramp, measure, &acked, &failed, tasks, seconds).await
        }
        "zookeeper" => {
            // The client pings an idle session every 3/8 of its connection
            // timeout: 2,667 ms gives one ping per second.
            let clients: Vec<zookeeper_client::Client> = futures::stream::iter(0..n)
                .map(|i| {
                    let endpoint = target.endpoints[i as usize % target.endpoints.len()].clone();
                    async move {
                        zookeeper_client::Client::connector()
                            .with_session_timeout(Duration::from_secs(SESSION_TTL_S))
                            .with_connection_timeout(Duration::from_millis(2_667))
                            .connect(&endpoint)
                            .await
                    }
                })
                .buffer_unordered(64)
                .collect::<Vec<_>>()
                .await
                .into_iter()
                .collect::<Result<_, _>>()?;
            tokio::time::sleep(ramp).await;
            let f = measure();
            tokio::time::sleep(Duration::from_secs(seconds)).await;
            f.await;
            let alive = clients
                .iter()
                .filter(|c| c.state() == zookeeper_client::SessionState::SyncConnected)
                .count() as u64;
            drop(clients);
            // Pings are internal to the client: count one per live session per second.
            Ok((alive * seconds, n - alive))
        }
        "redis" => {
            let client = redis::Client::open(format!("redis://{}/", target.endpoints[0]))?;
            let mut conns = Vec::new();
            for _ in 0..16 {
                conns.push(client.get_multiplexed_async_connection().await?);
            }
            let mut tasks = Vec::new();
            for i in 0..n {
                let mut c = conns[i as usize % conns.len()].clone();
                let (acked, failed) = (acked.clone(), failed.clone());
                let offset = Duration::from_secs(1) * (i % 1000) as u32 / 1000;
                tasks.push(tokio::spawn(async move {
                    let key = format!("session-{i}");
                    let _: Result<(), _> = redis::cmd("SET")
                        .arg(&key)
                        .arg(1)
                        .arg("PX")
                        .arg(SESSION_TTL_S * 1000)
                        .query_async(&mut c)
                        .await;
                    tokio::time::sleep(offset).await;
                    let start = Instant::now();
                    for k in 0..seconds + ramp.as_secs() + 1 {
                        tokio::time::sleep_until((start + Duration::from_secs(k)).into()).await;
                        let r: Result<i64, _> = redis::cmd("PEXPIRE")
                            .arg(&key)
                            .arg(SESSION_TTL_S * 1000)
                            .query_async(&mut c)
                            .await;
                        let counter = if matches!(r, Ok(1)) { &acked } else { &failed };
                        counter.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    }
                }));
            }
            run_measured(ramp, measure, &acked, &failed, tasks, seconds).await
        }
        other => Err(anyhow!("sessions: unknown backend {other}")),
    }
}

async fn run_measured(
    ramp: Duration,
    measure: impl FnOnce() -> futures::future::BoxFuture<'static, ()>,
    acked: &Arc<std::sync::atomic::AtomicU64>,
    failed: &Arc<std::sync::atomic::AtomicU64>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
    seconds: u64,
) -> Result<(u64, u64)> {
    tokio::time::sleep(ramp).await;
    let a0 = acked.load(std::sync::atomic::Ordering::Relaxed);
    let f0 = failed.load(std::sync::atomic::Ordering::Relaxed);
    let f = measure();
    tokio::time::sleep(Duration::from_secs(seconds)).await;
    f.await;
    let a1 = acked.load(std::sync::atomic::Ordering::Relaxed);
    let f1 = failed.load(std::sync::atomic::Ordering::Relaxed);
    for t in tasks {
        t.abort();
    }
    Ok((a1 - a0, f1 - f0))
}

pub async fn sessions(target: &Target, cluster: &Cluster, p: &Params) -> Result<Run> {
    let pids: Vec<Option<u32>> = cluster.pids();
    let leader = cluster.leader().await;
    let usage: Arc<Mutex<Vec<(f64, u64)>>> = Arc::new(Mutex::new(Vec::new()));
    let seconds = p.sessions_s;
    let measure = {
        let (pids, usage) = (pids.clone(), usage.clone());
        move || -> futures::future::BoxFuture<'static, ()> {
            let before: Vec<(u64, u64)> = pids
                .iter()
                .map(|p| p.map(proc_usage).unwrap_or((0, 0)))
                .collect();
            let t0 = Instant::now();
            Box::pin(async move {
                // Called after `seconds` of load.
                let wall = t0.elapsed().as_secs_f64().max(0.001);
                let after: Vec<(u64, u64)> = pids
                    .iter()
                    .map(|p| p.map(proc_usage).unwrap_or((0, 0)))
                    .collect();
                let mut u = usage.lock().expect("lock");
                for (b, a) in before.iter().zip(&after) {
                    u.push((a.0.saturating_sub(b.0) as f64 / 100.0 / wall * 100.0, a.1));
                }
            })
        }
    };
    let (acked, failed) = keep_sessions(target, p.sessions, seconds, measure).await?;
    let usage = usage.lock().expect("lock").clone();
    let h = histogram();
    let mut r = row("sessions", target, cluster.system, &h);
    r.ops_per_s = Some(acked as f64 / seconds as f64);
    r.count = acked;
    r.errors = failed;
    r.extra.insert("sessions".into(), json!(p.sessions));
    r.extra.insert(
        "nodes".into(),
        json!(usage
            .iter()
            .enumerate()
            .map(|(i, (cpu, rss))| json!({
                "node": i + 1,
                "leader": leader == Some(i),
                "cpu_pct_of_one_core": (cpu * 10.0).round() / 10.0,
                "rss_mib": (*rss as f64 / 1024.0 * 10.0).round() / 10.0,
            }))
            .collect::<Vec<_>>()),
    );
    if let Some(l) = leader {
        if let Some((cpu, _)) = usage.get(l) {
            r.extra.insert(
                "leader_cpu_pct_of_one_core".into(),
                json!((cpu * 10.0).round() / 10.0),
            );
        }
    }
    r.extra.insert(
        "latency_is".into(),
        json!("none: ops_per_s is acknowledged heartbeats per second"),
    );
    Ok(r)
}

/// One client's loop on `resource` until `stop_at`: a waiting acquire of
/// `kind`, then its release. Returns the waits (send -> grant) of the
/// grants made before `stop_at`, their number and the errors.
async fn grant_loop(
    mut client: Box<dyn crate::backend::Backend>,
    resource: String,
    kind: warden_client::GrantKind,
    stop_at: Instant,
) -> (Histogram<u64>, u64, u64) {
    let mut h = histogram();
    let (mut grants, mut errors) = (0u64, 0u64);
    while Instant::now() < stop_at {
        let sent = Instant::now();
        let grant = match client
            .acquire_kind(&resource, Duration::from_secs(30), kind)
            .await
        {
            Ok(Some(g)) => g,
            Ok(None) => continue,
            Err(_) => {
                errors += 1;
                continue;
            }
        };
        let granted_at = Instant::now();
        if granted_at <= stop_at {
            record(&mut h, granted_at - sent);
            grants += 1;
        }
        if client.release(&grant).await.is_err() {
            errors += 1;
        }
    }
    (h, grants, errors)
}

/// Runs `kinds.len()` clients, client i as `kinds[i]`, on one fresh
/// resource for `seconds`; returns each client's (waits, grants, errors).
async fn run_kinds(
    target: &Target,
    kinds: &[warden_client::GrantKind],
    seconds: u64,
) -> Result<Vec<(Histogram<u64>, u64, u64)>> {
    let resource = format!("k{:x}", rand::random::<u32>());
    let mut clients = Vec::new();
    for _ in kinds {
        clients.push(connect_within(target, Duration::from_secs(10)).await?);
    }
    let stop_at = Instant::now() + Duration::from_secs(seconds);
    let tasks: Vec<_> = clients
        .into_iter()
        .zip(kinds)
        .map(|(c, k)| tokio::spawn(grant_loop(c, resource.clone(), *k, stop_at)))
        .collect();
    let mut out = Vec::new();
    for t in tasks {
        match tokio::time::timeout(Duration::from_secs(seconds + 60), t).await {
            Ok(Ok(r)) => out.push(r),
            _ => out.push((histogram(), 0, 1)),
        }
    }
    Ok(out)
}

/// Clients and permits of `semaphore`.
const SEMAPHORE_CLIENTS: usize = 16;
const SEMAPHORE_PERMITS: u32 = 4;

pub async fn semaphore(target: &Target, system: System, p: &Params) -> Result<Run> {
    let kinds = vec![
        warden_client::GrantKind::Permit {
            limit: SEMAPHORE_PERMITS
        };
        SEMAPHORE_CLIENTS
    ];
    let each = run_kinds(target, &kinds, p.contended_s).await?;
    let mut h = histogram();
    let mut per_client = Vec::new();
    let mut errors = 0;
    for (th, g, e) in each {
        h.add(th).map_err(|e| anyhow!("{e:?}"))?;
        per_client.push(g);
        errors += e;
    }
    let total: u64 = per_client.iter().sum();
    let mut r = row("semaphore", target, system, &h);
    r.ops_per_s = Some(total as f64 / p.contended_s as f64);
    r.errors = errors;
    r.extra.insert("clients".into(), json!(SEMAPHORE_CLIENTS));
    r.extra.insert("permits".into(), json!(SEMAPHORE_PERMITS));
    r.extra.insert("grants".into(), json!(total));
    r.extra
        .insert("grants_per_client".into(), json!(per_client));
    r.extra
        .insert("latency_is".into(), json!("acquire send -> permit grant"));
    Ok(r)
}

/// Readers of `readers` (and one writer).
const READERS: usize = 15;

pub async fn readers(target: &Target, system: System, p: &Params) -> Result<Run> {
    let mut kinds = vec![warden_client::GrantKind::Shared; READERS];
    kinds.push(warden_client::GrantKind::Exclusive);
    let mut each = run_kinds(target, &kinds, p.contended_s).await?;
    let (writer_h, writer_grants, writer_errors) = each.pop().expect("the writer");
    let mut h = histogram();
    let mut per_reader = Vec::new();
    let mut errors = writer_errors;
    for (th, g, e) in each {
        h.add(th).map_err(|e| anyhow!("{e:?}"))?;
        per_reader.push(g);
        errors += e;
    }
    let reads: u64 = per_reader.iter().sum();
    let mut r = row("readers", target, system, &h);
    r.ops_per_s = Some((reads + writer_grants) as f64 / p.contended_s as f64);
    r.errors = errors;
    r.extra
        .insert("ops_total".into(), json!(reads + writer_grants));
    r.extra.insert("readers".into(), json!(READERS));
    r.extra.insert("reader_grants".into(), json!(reads));
    r.extra
        .insert("grants_per_reader".into(), json!(per_reader));
    r.extra.insert("writer_grants".into(), json!(writer_grants));
    let ms = |q: f64| (!writer_h.is_empty()).then(|| writer_h.value_at_quantile(q) as f64 / 1000.0);
    r.extra.insert("writer_p50_ms".into(), json!(ms(0.5)));
    r.extra.insert("writer_p99_ms".into(), json!(ms(0.99)));
    r.extra.insert(
        "latency_is".into(),
        json!("a reader's acquire send -> shared grant"),
    );
    Ok(r)
}
