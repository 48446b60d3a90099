//! The scale run's Warden driver, on the raw gRPC API so that one process
//! can drive 100,000s of sessions:
//!
//! - [`setup_principal`]: mints the load principal's client certificate
//!   (`scale`), raises the cluster limits, and gives `scale` a role with
//!   `lock` on everything and the quota [`LOAD_QUOTA`].
//! - [`Keeper`]: keeps leases alive over a few `Lease/LeaseKeepAlive`
//!   streams (one lease id per request, many requests per stream: the
//!   wire's batching; the server commits renewals in batched entries),
//!   following the leader, counting leases answered `live = false`.
//! - [`Calls`]: one `Lock/Calls` stream to the leader; every acquire and
//!   release carries its own (client id, request id), so 100,000 waits can
//!   be in flight on one stream (a client id may have only 64 requests in
//!   flight beyond its acknowledged watermark: S7).
//! - [`Probe`]: acquire + release of a fresh resource in a loop through
//!   `warden_client` (its own client id), recording each cycle's latency.

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};
use futures::StreamExt;
use hdrhistogram::Histogram;
use tokio::sync::{mpsc, oneshot};
use warden_client::{ClusterLimits, Permission, Quota, TlsOptions};
use warden_proto::v1 as pb;

use crate::cluster::{status_over, Cluster};

/// The load principal: the name in its client certificate.
pub const LOAD_USER: &str = "scale";
/// The load principal's role.
pub const LOAD_ROLE: &str = "scale-load";
/// The cluster-wide limits the scale run sets (each at its ceiling).
pub const LOAD_LIMITS: (u64, u64) = (1_000_000, 262_144);
/// The quota of [`LOAD_ROLE`] (each field at its ceiling).
pub const LOAD_QUOTA: Quota = Quota {
    leases: 1_000_000,
    locks: 10_000_000,
    waiters: 1_000_000,
    clients: 262_144,
    values: 100_000,
    value_bytes: 409_600_000,
    waits_per_resource: 10_000,
};

/// How the scale run reaches one Warden cluster.
#[derive(Clone)]
pub struct Wt {
    pub endpoints: Vec<String>,
    /// `certs/` of the cluster: `root`'s and `scale`'s certificates.
    pub certs: PathBuf,
    /// The round trip between nodes the driver put there (the `wan`
    /// proxy); zero on plain loopback. A write's commit takes at least this.
    pub peer_round_trip: Duration,
}

impl Wt {
    pub fn options(&self, user: &str) -> warden_client::ClientOptions {
        warden_client::ClientOptions {
            tls: Some(TlsOptions::new(self.certs.clone(), user)),
            ..Default::default()
        }
    }

    pub async fn client(&self, user: &str) -> Result<warden_client::Client> {
        Ok(warden_client::Client::connect(self.endpoints.clone(), self.options(user)).await?)
    }

    /// A lazily connected channel to `addr` as the load principal.
    pub fn channel(&self, addr: &str) -> Result<tonic::transport::Channel> {
        Ok(warden_tls::ClientTls::load_client(&self.certs, LOAD_USER)?.channel_lazy(addr)?)
    }

    /// The leader's client address (asked of the cluster).
    pub async fn leader(&self) -> Result<String> {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            for addr in &self.endpoints {
                let own = status_over(self.channel(addr)?, Duration::from_millis(500)).await;
                if own.is_some_and(|s| s.leader_id != 0 && s.leader_id == s.node_id) {
                    return Ok(addr.clone());
                }
            }
            if Instant::now() > deadline {
                bail!("no Warden leader within 30 s");
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// (node id, its own applied index, the commit index it knows) as the
    /// node at `addr` reports itself.
    pub async fn applied(&self, addr: &str) -> Option<(u64, u64, u64)> {
        let s = status_over(self.channel(addr).ok()?, Duration::from_millis(500)).await?;
        let me = s.members.iter().find(|m| m.id == s.node_id)?;
        Some((s.node_id, me.applied_index, s.commit_index))
    }

    /// Node `node_id`'s applied index: the larger of its own report and
    /// the leader's view of it (a follower may not know its own yet).
    pub async fn applied_of(&self, addr: &str, node_id: u64) -> Option<u64> {
        let own = self.applied(addr).await.map(|a| a.1).unwrap_or(0);
        let leader = self.leader().await.ok()?;
        let view = status_over(self.channel(&leader).ok()?, Duration::from_millis(500))
            .await
            .and_then(|s| {
                s.members
                    .iter()
                    .find(|m| m.id == node_id)
                    .map(|m| m.applied_index.max(m.matched_index))
            })
            .unwrap_or(0);
        Some(own.max(view))
    }
}

/// Runs `warden cert create-client NAME` for the cluster in `dir`.
fn mint_client(warden_bin: &Path, dir: &Path, name: &str) -> Result<()> {
    let out = std::process::Command::new(warden_bin)
        .args(["cert", "create-client", name, "--certs-dir"])
        .arg(dir.join("certs"))
        .arg("--ca-key")
        .arg(dir.join("ca.key"))
        .stdin(std::process::Stdio::null())
        .output()
        .context("spawn warden cert create-client")?;
    if !out.status.success() {
        bail!(
            "warden cert create-client {name}: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(())
}

/// Mints `scale`'s certificate and, as `root`, raises the cluster limits
/// and gives `scale` the role [`LOAD_ROLE`] (lock on "", quota
/// [`LOAD_QUOTA`]). Returns how to reach the cluster.
pub async fn setup_principal(cluster: &Cluster, warden_bin: &Path) -> Result<Wt> {
    let wt = Wt {
        endpoints: cluster.endpoints(),
        certs: cluster.dir().join("certs"),
        peer_round_trip: Duration::ZERO,
    };
    mint_client(warden_bin, cluster.dir(), LOAD_USER)?;
    let root = wt.client(warden_client::DEFAULT_USER).await?;
    let admin = root.admin();
    admin
        .set_limits(ClusterLimits {
            max_leases: LOAD_LIMITS.0,
            max_clients: LOAD_LIMITS.1,
            default_quota: Quota::default(),
        })
        .await
        .context("set limits")?;
    admin
        .grant_permission(LOAD_ROLE, "", Permission::Lock)
        .await
        .context("grant permission")?;
    admin
        .set_role_quota(LOAD_ROLE, Some(LOAD_QUOTA))
        .await
        .context("set role quota")?;
    admin
        .grant_role(LOAD_USER, LOAD_ROLE)
        .await
        .context("grant role")?;
    Ok(wt)
}

/// Client ids of the raw calls: a random base per run, so two runs never
/// share outcome records; each session or waiter takes the next one.
pub struct Ids(AtomicU64);

impl Ids {
    pub fn new() -> Ids {
        Ids(AtomicU64::new(
            (rand::random::<u64>() >> 14).max(1) & ((1 << 52) - 1),
        ))
    }
    pub fn next(&self) -> u64 {
        self.0.fetch_add(1, Ordering::Relaxed) + 1
    }
}

fn header(client_id: u64, request_id: u64) -> pb::RequestHeader {
    pb::RequestHeader {
        client_id,
        request_id,
        acked_request_id: request_id - 1,
    }
}

/// Grants `n` leases of `ttl`, each under its own client id (request 1),
/// `in_flight` at a time, each lease added to `keeper` as soon as granted.
/// Returns (lease id, client id) of each granted lease, and the failures.
pub async fn grant_leases(
    wt: &Wt,
    ids: &Ids,
    n: u64,
    ttl: Duration,
    keeper: Option<&Keeper>,
) -> Result<(Vec<(u64, u64)>, u64)> {
    let leader = wt.leader().await?;
    let channels: Vec<_> = (0..4).map(|_| wt.channel(&leader)).collect::<Result<_>>()?;
    let results: Vec<Result<(u64, u64)>> = futures::stream::iter(0..n)
        .map(|i| {
            let mut c = pb::lease_client::LeaseClient::new(channels[i as usize % 4].clone());
            let client_id = ids.next();
            async move {
                let mut tries = 0;
                loop {
                    let r = c
                        .lease_grant(pb::LeaseGrantRequest {
                            header: Some(header(client_id, 1)),
                            ttl_ms: ttl.as_millis() as u64,
                        })
                        .await;
                    match r {
                        Ok(r) => {
                            let lease_id = r.into_inner().lease_id;
                            // Kept alive from now on: added only after the
                            // whole ramp (8-11 s at 100,000 leases), the
                            // first leases of a 12 s TTL expired before
                            // their first keep-alive.
                            if let Some(k) = keeper {
                                k.add(&[lease_id]);
                            }
                            return Ok((lease_id, client_id));
                        }
                        Err(e) if tries < 3 && e.code() == tonic::Code::Unavailable => {
                            tries += 1;
                            tokio::time::sleep(Duration::from_millis(100)).await;
                        }
                        Err(e) => return Err(anyhow!("lease grant: {e}")),
                    }
                }
            }
        })
        .buffer_unordered(256)
        .collect()
        .await;
    let mut granted = Vec::new();
    let mut failed = 0;
    let mut first_error = None;
    for r in results {
        match r {
            Ok(g) => granted.push(g),
            Err(e) => {
                failed += 1;
                first_error.get_or_insert(e);
            }
        }
    }
    if let Some(e) = first_error {
        eprintln!("   {failed} lease grants failed, first: {e:#}");
    }
    Ok((granted, failed))
}

// ---------------------------------------------------------------- keeper

/// Keeps leases alive: `streams` keep-alive streams to the leader, each
/// lease renewed once every `every`, the renewals spread evenly.
pub struct Keeper {
    shards: Vec<Arc<Mutex<Vec<u64>>>>,
    next: AtomicU64,
    stop: Arc<AtomicBool>,
    /// Leases answered `live = false` at least once.
    pub lost: Arc<Mutex<BTreeSet<u64>>>,
    pub acked: Arc<AtomicU64>,
    /// Stream (re)opens after the first.
    pub reopened: Arc<AtomicU64>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl Drop for Keeper {
    fn drop(&mut self) {
        for t in &self.tasks {
            t.abort();
        }
    }
}

impl Keeper {
    pub fn start(wt: &Wt, streams: usize, every: Duration) -> Keeper {
        let stop = Arc::new(AtomicBool::new(false));
        let lost = Arc::new(Mutex::new(BTreeSet::new()));
        let acked = Arc::new(AtomicU64::new(0));
        let reopened = Arc::new(AtomicU64::new(0));
        let mut shards = Vec::new();
        let mut tasks = Vec::new();
        for _ in 0..streams.max(1) {
            let shard: Arc<Mutex<Vec<u64>>> = Arc::default();
            shards.push(shard.clone());
            let (wt, stop, lost, acked, reopened) = (
                wt.clone(),
                stop.clone(),
                lost.clone(),
                acked.clone(),
                reopened.clone(),
            );
            tasks.push(tokio::spawn(async move {
                let mut opened = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    if opened > 0 {
                        reopened.fetch_add(1, Ordering::Relaxed);
                    }
                    opened += 1;
                    let _ = keep_stream(&wt, &shard, every, &stop, &lost, &acked).await;
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            }));
        }
        Keeper {
            shards,
            next: AtomicU64::new(0),
            stop,
            lost,
            acked,
            reopened,
            tasks,
        }
    }

    pub fn add(&self, leases: &[u64]) {
        for l in leases {
            let s = self.next.fetch_add(1, Ordering::Relaxed) as usize % self.shards.len();
            self.shards[s].lock().expect("shard").push(*l);
        }
    }

    pub fn lost_count(&self) -> u64 {
        self.lost.lock().expect("lost").len() as u64
    }

    /// Stops renewing every lease at once (the streams end).
    pub fn stop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for t in &self.tasks {
            t.abort();
        }
    }
}

async fn keep_stream(
    wt: &Wt,
    shard: &Mutex<Vec<u64>>,
    every: Duration,
    stop: &AtomicBool,
    lost: &Arc<Mutex<BTreeSet<u64>>>,
    acked: &Arc<AtomicU64>,
) -> Result<()> {
    let leader = wt.leader().await?;
    let mut c = pb::lease_client::LeaseClient::new(wt.channel(&leader)?);
    let (tx, rx) = mpsc::channel::<pb::LeaseKeepAliveRequest>(4096);
    let mut replies = c
        .lease_keep_alive(tokio_stream::wrappers::ReceiverStream::new(rx))
        .await?
        .into_inner();
    let (lost, acked) = (lost.clone(), acked.clone());
    let mut reader = tokio::spawn(async move {
        while let Some(Ok(r)) = replies.next().await {
            if r.live {
                acked.fetch_add(1, Ordering::Relaxed);
            } else {
                lost.lock().expect("lost").insert(r.lease_id);
            }
        }
    });
    let mut seq = 0u64;
    loop {
        let round = Instant::now();
        let ids: Vec<u64> = shard.lock().expect("shard").clone();
        let n = ids.len().max(1) as u32;
        for (i, id) in ids.iter().enumerate() {
            if stop.load(Ordering::Relaxed) {
                return Ok(());
            }
            seq += 1;
            tokio::time::sleep_until((round + every * i as u32 / n).into()).await;
            if reader.is_finished() {
                bail!("keep-alive stream ended");
            }
            tx.send(pb::LeaseKeepAliveRequest {
                lease_id: *id,
                sequence: seq,
            })
            .await
            .map_err(|_| anyhow!("keep-alive stream closed"))?;
        }
        tokio::select! {
            _ = tokio::time::sleep_until((round + every).into()) => {}
            _ = &mut reader => bail!("keep-alive stream ended"),
        }
    }
}

// ---------------------------------------------------------------- calls

/// The final answer of one call on a [`Calls`] stream.
#[derive(Debug)]
pub enum Answer {
    Granted,
    NotGranted,
    Released,
    /// The call's status: code and message.
    Error(String),
}

type Waiting = HashMap<u64, (Option<oneshot::Sender<()>>, oneshot::Sender<Answer>)>;

/// One `Lock/Calls` stream to a node.
pub struct Calls {
    tx: mpsc::UnboundedSender<pb::CallRequest>,
    waiting: Arc<Mutex<Waiting>>,
    next_call: AtomicU64,
    reader: tokio::task::JoinHandle<()>,
}

impl Drop for Calls {
    fn drop(&mut self) {
        self.reader.abort();
    }
}

impl Calls {
    pub async fn open(wt: &Wt, addr: &str) -> Result<Calls> {
        let mut c = pb::lock_client::LockClient::new(wt.channel(addr)?);
        let (tx, rx) = mpsc::unbounded_channel();
        let mut answers = c
            .calls(tokio_stream::wrappers::UnboundedReceiverStream::new(rx))
            .await?
            .into_inner();
        let waiting: Arc<Mutex<Waiting>> = Arc::default();
        let w = waiting.clone();
        let reader = tokio::spawn(async move {
            while let Some(Ok(r)) = answers.next().await {
                use pb::acquire_response::Event;
                use pb::call_response::Answer as A;
                let answer = match r.answer {
                    Some(A::Acquire(pb::AcquireResponse {
                        event: Some(Event::Queued(_)),
                    })) => {
                        let mut w = w.lock().expect("waiting");
                        if let Some((queued, _)) = w.get_mut(&r.call_id) {
                            if let Some(q) = queued.take() {
                                let _ = q.send(());
                            }
                        }
                        continue;
                    }
                    Some(A::Acquire(pb::AcquireResponse {
                        event: Some(Event::Granted(_)),
                    })) => Answer::Granted,
                    Some(A::Acquire(pb::AcquireResponse {
                        event: Some(Event::NotGranted(_)),
                    })) => Answer::NotGranted,
                    Some(A::Release(_)) => Answer::Released,
                    Some(A::Error(e)) => Answer::Error(format!("code {}: {}", e.code, e.message)),
                    _ => continue,
                };
                if let Some((_, done)) = w.lock().expect("waiting").remove(&r.call_id) {
                    let _ = done.send(answer);
                }
            }
            // The stream ended: every open call fails (its sender drops).
            w.lock().expect("waiting").clear();
        });
        Ok(Calls {
            tx,
            waiting,
            next_call: AtomicU64::new(0),
            reader,
        })
    }

    /// Sends one call; returns (queued, answer) receivers. `queued` fires
    /// when the server reports the acquire queued.
    pub fn start(
        &self,
        call: pb::call_request::Call,
    ) -> Result<(oneshot::Receiver<()>, oneshot::Receiver<Answer>)> {
        let id = self.next_call.fetch_add(1, Ordering::Relaxed) + 1;
        let (qtx, qrx) = oneshot::channel();
        let (dtx, drx) = oneshot::channel();
        self.waiting
            .lock()
            .expect("waiting")
            .insert(id, (Some(qtx), dtx));
        self.tx
            .send(pb::CallRequest {
                call_id: id,
                call: Some(call),
            })
            .map_err(|_| anyhow!("calls stream closed"))?;
        Ok((qrx, drx))
    }

    /// Acquire `resource` on `lease_id` as (client id, request id), waiting
    /// up to `wait`; the final answer.
    pub async fn acquire(
        &self,
        client_id: u64,
        request_id: u64,
        resource: String,
        lease_id: u64,
        wait: Duration,
    ) -> Result<Answer> {
        let (_, done) = self.start(acquire_call(
            client_id, request_id, resource, lease_id, wait,
        ))?;
        done.await.map_err(|_| anyhow!("calls stream ended"))
    }
}

pub fn acquire_call(
    client_id: u64,
    request_id: u64,
    resource: String,
    lease_id: u64,
    wait: Duration,
) -> pb::call_request::Call {
    pb::call_request::Call::Acquire(pb::AcquireRequest {
        header: Some(header(client_id, request_id)),
        resource,
        lease_id,
        wait_timeout_ms: wait.as_millis() as u64,
        ..Default::default()
    })
}

/// Fills the cluster: for each (lease, client id) session, `each` locks
/// `{prefix}{session}-{k}` on its lease, request ids 2.. (1 was the lease
/// grant), sessions `parallel` at a time, each session's acquires in
/// order. Returns (locks granted, failures, acquire latency histogram).
pub async fn fill(
    wt: &Wt,
    sessions: &[(u64, u64)],
    each: u64,
    prefix: &str,
    first_request: u64,
) -> Result<Filled> {
    let streams = LeaderStreams::open(wt).await?;
    let streams = &streams;
    // When the count of granted locks crossed each multiple of
    // RATE_STEP_LOCKS: the fill rate along the fill (`rate_curve`).
    let started = Instant::now();
    let granted_so_far = std::sync::atomic::AtomicU64::new(0);
    let crossings = std::sync::Mutex::new(vec![(0u64, started)]);
    let (granted_so_far, crossings) = (&granted_so_far, &crossings);
    let results: Filled = futures::stream::iter(sessions.iter().enumerate())
        .map(|(s, (lease, client_id))| {
            let (lease, client_id) = (*lease, *client_id);
            let prefix = prefix.to_owned();
            async move {
                let mut f = Filled::default();
                for k in 0..each {
                    let t = Instant::now();
                    let mut attempts = 0;
                    let granted = loop {
                        attempts += 1;
                        let (generation, calls) = streams.get(s).await;
                        let r = calls
                            .acquire(
                                client_id,
                                first_request + k,
                                format!("{prefix}{s}-{k}"),
                                lease,
                                Duration::ZERO,
                            )
                            .await;
                        match r {
                            Ok(Answer::Granted) => break true,
                            Ok(Answer::Error(e)) => {
                                *f.errors.entry(error_kind(&e)).or_default() += 1;
                                // Unavailable: retried with the same request
                                // id, as warden-client does (S7 makes it
                                // safe), at most 9 times more; "not the
                                // leader" first moves every stream to the
                                // new leader.
                                if !(e.starts_with("code 14:") && attempts < 10) {
                                    break false;
                                }
                                if e.contains("not the leader") {
                                    streams.follow(generation).await;
                                } else {
                                    tokio::time::sleep(Duration::from_millis(50)).await;
                                }
                            }
                            Ok(other) => {
                                *f.errors.entry(format!("{other:?}")).or_default() += 1;
                                break false;
                            }
                            Err(e) => {
                                *f.errors.entry(error_kind(&format!("{e:#}"))).or_default() += 1;
                                break false;
                            }
                        }
                    };
                    if granted {
                        f.ok += 1;
                        crate::scale::record(&mut f.latency, t.elapsed());
                        let n =
                            granted_so_far.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
                        if n % RATE_STEP_LOCKS == 0 {
                            if let Ok(mut c) = crossings.lock() {
                                c.push((n, Instant::now()));
                            }
                        }
                    } else {
                        f.failed += 1;
                    }
                }
                f
            }
        })
        .buffer_unordered(1024)
        // Folded as they finish: 100,000 sessions' histograms kept until
        // the end took 19 GiB of the load generator (and the OOM killer
        // took it) once latencies reached seconds.
        .fold(Filled::default(), |mut all, f| async move {
            all.ok += f.ok;
            all.failed += f.failed;
            let _ = all.latency.add(f.latency);
            for (k, n) in f.errors {
                *all.errors.entry(k).or_default() += n;
            }
            all
        })
        .await;
    let mut all = results;
    all.leader_changes = streams.generation().await;
    all.rate_curve = rate_curve(&crossings.lock().map(|c| c.clone()).unwrap_or_default());
    Ok(all)
}

/// Four `Calls` streams to the leader, moved to the new leader when a call
/// finds the old one is not ([`LeaderStreams::follow`]).
struct LeaderStreams<'a> {
    wt: &'a Wt,
    /// (generation, streams): the generation counts the moves.
    now: tokio::sync::RwLock<(u64, Vec<Arc<Calls>>)>,
}

impl<'a> LeaderStreams<'a> {
    async fn open(wt: &'a Wt) -> Result<LeaderStreams<'a>> {
        let streams = Self::to_leader(wt).await?;
        Ok(LeaderStreams {
            wt,
            now: tokio::sync::RwLock::new((0, streams)),
        })
    }

    async fn to_leader(wt: &Wt) -> Result<Vec<Arc<Calls>>> {
        let leader = wt.leader().await?;
        let mut v = Vec::new();
        for _ in 0..4 {
            v.push(Arc::new(Calls::open(wt, &leader).await?));
        }
        Ok(v)
    }

    /// The stream for session `s`, with the generation it belongs to.
    async fn get(&self, s: usize) -> (u64, Arc<Calls>) {
        let now = self.now.read().await;
        (now.0, now.1[s % now.1.len()].clone())
    }

    /// Moves the streams to the current leader, unless another call already
    /// did since `generation`; on failure the old streams stay.
    async fn follow(&self, generation: u64) {
        let mut now = self.now.write().await;
        if now.0 != generation {
            return;
        }
        if let Ok(streams) = Self::to_leader(self.wt).await {
            *now = (now.0 + 1, streams);
        }
    }

    async fn generation(&self) -> u64 {
        self.now.read().await.0
    }
}

/// The fill records the time at every this many granted locks.
const RATE_STEP_LOCKS: u64 = 10_000;

/// The fill rate along the fill from its crossings (locks, instant): the
/// rate over the second RATE_STEP_LOCKS (from 10,000 to 20,000 held; the
/// first includes opening the streams and 1,024 sessions starting at once),
/// then over each tenth of the fill (at least RATE_STEP_LOCKS), as (locks
/// held at the segment's end, acquires per second within it).
fn rate_curve(crossings: &[(u64, Instant)]) -> Vec<(u64, f64)> {
    let Some(&(total, _)) = crossings.last() else {
        return Vec::new();
    };
    let tenth = (total / 10).max(RATE_STEP_LOCKS);
    let mut out = Vec::new();
    let Some(&first) = crossings.iter().find(|(n, _)| *n == RATE_STEP_LOCKS) else {
        return Vec::new();
    };
    let mut prev = first;
    for &(n, at) in crossings.iter().filter(|(n, _)| *n > RATE_STEP_LOCKS) {
        if n == 2 * RATE_STEP_LOCKS || n % tenth == 0 || n == total {
            let secs = at.duration_since(prev.1).as_secs_f64();
            if secs > 0.0 && n > prev.0 {
                out.push((n, ((n - prev.0) as f64 / secs).round()));
            }
            prev = (n, at);
        }
    }
    out
}

/// What [`fill`] did: acquires granted (after at most nine retries of
/// Unavailable) and failed, the granted ones' latency from the first
/// attempt, every failed attempt by kind ([`error_kind`]), and how many
/// times the streams moved to a new leader.
#[derive(Debug)]
pub struct Filled {
    pub ok: u64,
    pub failed: u64,
    pub leader_changes: u64,
    pub latency: Histogram<u64>,
    pub errors: std::collections::BTreeMap<String, u64>,
    /// (locks held, acquires per second) along the fill ([`rate_curve`]).
    pub rate_curve: Vec<(u64, f64)>,
}

impl Default for Filled {
    fn default() -> Self {
        Filled {
            ok: 0,
            failed: 0,
            leader_changes: 0,
            latency: crate::scale::histogram(),
            errors: Default::default(),
            rate_curve: Vec::new(),
        }
    }
}

/// An error's kind for counting: its text up to the first digit after the
/// status code (so "did not commit within 3000 ms" and its siblings with
/// other ids count together), at most 80 characters.
pub fn error_kind(text: &str) -> String {
    let (code, rest) = match text.split_once(": ") {
        Some((code, rest)) if code.starts_with("code ") => (format!("{code}: "), rest),
        _ => (String::new(), text),
    };
    let cut = rest
        .find(|c: char| c.is_ascii_digit())
        .unwrap_or(rest.len());
    let mut kind = format!("{code}{}", rest[..cut].trim_end());
    kind.truncate(80);
    kind
}

// ---------------------------------------------------------------- probe

/// Acquire + release of fresh resources in a loop (one client, one at a
/// time), until stopped; each cycle's latency and the failures.
///
/// The probe is a separate client: it runs on an OS thread of its own with
/// its own single-threaded runtime and its own connection, so its latency
/// is the cluster's and not the wait of its task behind the load
/// generator's (tens of thousands of streams and keep-alives on the same
/// runtime put hundreds of milliseconds of queueing into a probe that
/// shared it).
pub struct Probe {
    stop: Arc<AtomicBool>,
    done: tokio::sync::oneshot::Receiver<ProbeResult>,
}

/// What a probe measured: every cycle's latency, the cycles that failed,
/// and its slowest cycles as (seconds from the probe's start to the
/// cycle's start, ms), slowest first, at most [`PROBE_SLOWEST`].
pub type ProbeResult = (Histogram<u64>, u64, Vec<(f64, f64)>);

/// How many of its slowest cycles a probe reports with their times.
pub const PROBE_SLOWEST: usize = 10;

impl Probe {
    pub async fn start(wt: &Wt) -> Result<Probe> {
        let stop = Arc::new(AtomicBool::new(false));
        let (ready_tx, ready) = tokio::sync::oneshot::channel::<Result<()>>();
        let (done_tx, done) = tokio::sync::oneshot::channel();
        let s = stop.clone();
        let wt = wt.clone();
        std::thread::Builder::new()
            .name("probe".into())
            .spawn(move || {
                let rt = match tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                {
                    Ok(rt) => rt,
                    Err(e) => {
                        let _ = ready_tx.send(Err(e.into()));
                        return;
                    }
                };
                rt.block_on(async move {
                    let client = match wt.client(LOAD_USER).await {
                        Ok(c) => c,
                        Err(e) => {
                            let _ = ready_tx.send(Err(e));
                            return;
                        }
                    };
                    let _ = ready_tx.send(Ok(()));
                    let mut h = crate::scale::histogram();
                    let mut failed = 0u64;
                    let mut samples: Vec<(f64, f64)> = Vec::new();
                    let tag: u32 = rand::random();
                    let mut i = 0u64;
                    let started = Instant::now();
                    while !s.load(Ordering::Relaxed) {
                        i += 1;
                        let t = Instant::now();
                        let r = cycle(&client, &format!("probe-{tag:x}-{i}")).await;
                        match r {
                            Ok(()) => {
                                let took = t.elapsed();
                                crate::scale::record(&mut h, took);
                                samples.push(((t - started).as_secs_f64(), crate::scale::ms(took)));
                            }
                            Err(_) => {
                                failed += 1;
                                tokio::time::sleep(Duration::from_millis(20)).await;
                            }
                        }
                        // ~50 cycles/s at most: a probe, not load.
                        tokio::time::sleep(Duration::from_millis(20)).await;
                    }
                    samples.sort_by(|a, b| b.1.total_cmp(&a.1));
                    samples.truncate(PROBE_SLOWEST);
                    let slowest = samples
                        .into_iter()
                        .map(|(at, ms)| ((at * 100.0).round() / 100.0, ms))
                        .collect();
                    let _ = done_tx.send((h, failed, slowest));
                });
            })?;
        ready
            .await
            .map_err(|_| anyhow::anyhow!("the probe thread ended"))??;
        Ok(Probe { stop, done })
    }

    pub async fn finish(self) -> ProbeResult {
        self.stop.store(true, Ordering::Relaxed);
        self.done
            .await
            .unwrap_or_else(|_| (crate::scale::histogram(), 0, Vec::new()))
    }
}

/// One acquire + release of `resource` on a new lease (TTL 12 s).
pub async fn cycle(client: &warden_client::Client, resource: &str) -> Result<()> {
    let options = warden_client::AcquireOptions::with_ttl(Duration::from_secs(12));
    match client.acquire(resource, options).await? {
        warden_client::AcquireResult::Granted {
            lease_id,
            fencing_token,
            ..
        } => {
            client
                .release(lease_id, Some(resource.to_owned()), Some(fencing_token))
                .await?;
            Ok(())
        }
        warden_client::AcquireResult::NotGranted { .. } => bail!("{resource} not granted"),
    }
}

/// Time until an acquire + release of a fresh resource succeeds, trying
/// every 20 ms with short deadlines, from `from`, giving up after `limit`.
pub async fn until_served(wt: &Wt, from: Instant, limit: Duration) -> Option<f64> {
    // An attempt must outlast a commit: with a 100 ms one-way peer link a
    // write waits up to two round trips (one append in flight, then its
    // own), and a fixed 300 ms timed out every attempt for a minute.
    let attempt_timeout = Duration::from_millis(300) + 2 * wt.peer_round_trip;
    let deadline = Duration::from_millis(1000).max(3 * attempt_timeout);
    let options = warden_client::ClientOptions {
        deadline,
        attempt_timeout,
        ..wt.options(LOAD_USER)
    };
    let tag: u32 = rand::random();
    let mut i = 0;
    let mut client = None;
    let mut last_error = None;
    while from.elapsed() < limit {
        i += 1;
        if client.is_none() {
            client = tokio::time::timeout(
                Duration::from_secs(2),
                warden_client::Client::connect(wt.endpoints.clone(), options.clone()),
            )
            .await
            .ok()
            .and_then(Result::ok);
        }
        if let Some(c) = &client {
            let cycle_limit = Duration::from_secs(2).max(2 * deadline);
            let r = tokio::time::timeout(cycle_limit, cycle(c, &format!("served-{tag:x}-{i}")))
                .await
                .unwrap_or_else(|_| Err(anyhow!("cycle timed out after {cycle_limit:?}")));
            match r {
                Ok(()) => return Some(crate::scale::ms(from.elapsed())),
                Err(e) => {
                    // A fresh client next time: a real one reconnects.
                    last_error = Some(e);
                    client = None;
                }
            }
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    if let Some(e) = last_error {
        eprintln!("   not served within {limit:?}: {e:#}");
    }
    None
}

/// SaveSnapshot through the admin client: (bytes, ms of the call).
pub async fn save_snapshot(wt: &Wt) -> Result<(u64, f64)> {
    let options = warden_client::ClientOptions {
        deadline: Duration::from_secs(60),
        ..wt.options(warden_client::DEFAULT_USER)
    };
    let root = warden_client::Client::connect(wt.endpoints.clone(), options).await?;
    let t = Instant::now();
    let s = root.admin().save_snapshot().await?;
    Ok((s.data.len() as u64, crate::scale::ms(t.elapsed())))
}

/// The node's own snapshot metrics (`warden_snapshot_bytes`, and the mean
/// of `warden_snapshot_duration_seconds` in ms, with how many it built),
/// read from its admin listener's /metrics with `root`'s certificate
/// (curl: the bench has no HTTP client of its own).
pub fn snapshot_metrics(wt: &Wt, admin_addr: &str) -> Option<serde_json::Value> {
    let out = std::process::Command::new("curl")
        .args(["-sS", "--max-time", "5", "--cacert"])
        .arg(wt.certs.join("ca.crt"))
        .arg("--cert")
        .arg(wt.certs.join("client.root.crt"))
        .arg("--key")
        .arg(wt.certs.join("client.root.key"))
        .arg(format!("https://{admin_addr}/metrics"))
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    let get = |name: &str| {
        text.lines()
            .find(|l| l.starts_with(name) && l[name.len()..].starts_with([' ', '{']))
            .and_then(|l| l.rsplit(' ').next())
            .and_then(|v| v.parse::<f64>().ok())
    };
    let bytes = get("warden_snapshot_bytes")?;
    let sum = get("warden_snapshot_duration_seconds_sum").unwrap_or(0.0);
    let count = get("warden_snapshot_duration_seconds_count").unwrap_or(0.0);
    Some(serde_json::json!({
        "bytes": bytes,
        "built": count,
        "mean_ms": if count > 0.0 { Some((sum / count * 1e3 * 10.0).round() / 10.0) } else { None },
    }))
}
