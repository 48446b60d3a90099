//! The shared world of one run, below everything but `env` and `bugs`: the
//! record of what happened ([`History`], behind [`SharedHistory`]), host
//! names and the nodes' timings, the clients' principals ([`Principals`],
//! [`RolesGranted`]), and the clients' honest bookkeeping ([`World`],
//! [`ClientCtx`]). The checkers read the record; the clients, the prober
//! and the observer write it.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use rand::rngs::StdRng;
use rand::Rng;
use warden_client::{AcquireOptions, AcquireResult, Client, GrantKind};
use warden_core::table::LockTable;
use warden_core::types::Mode;
use warden_core::LeaseEndReason;
use warden_fence::{Claim, Fence, Kind, MemoryStore};
use warden_server::config::{Timing, TimingPreset};

use crate::bugs::Bugs;
use crate::env::{global_now, SimClock};

// ---------------------------------------------------------------- hosts

/// Port every node listens on.
pub const PORT: u16 = 7000;

/// The host name of node `id`: `n1`, `n2`, ...
pub fn host(id: u64) -> String {
    format!("n{id}")
}

/// The address clients and peers dial for node `id`.
pub fn endpoint(id: u64) -> String {
    format!("{}:{PORT}", host(id))
}

/// The data dir of node `id` (on its simulated disks).
pub fn data_dir(id: u64) -> PathBuf {
    PathBuf::from(format!("/sim/{}", host(id)))
}

/// The nodes' timings: production defaults (the `lan` preset), but a
/// small snapshot threshold, so snapshots, log purges and snapshot installs
/// happen in a run.
pub fn timing() -> Timing {
    timing_of(TimingPreset::Lan)
}

/// As [`timing`], from `preset`'s values (the `regions` scenario runs the
/// `wan` preset).
pub fn timing_of(preset: TimingPreset) -> Timing {
    Timing {
        snapshot_threshold: 200,
        ..preset.timing()
    }
}

/// E for these timings, in ms: the most leader changes and the sweep may
/// lengthen a lease (docs/semantics.md L1, L2): G + the longest election
/// timeout + the duty interval + a heartbeat.
pub fn bound_e_ms() -> u64 {
    timing().bound_e_ms()
}

/// The clock-rate bound ρ, in parts per million (1 %, as the server's).
pub const RHO_PPM: i64 = warden_server::cluster_time::RHO_PPM as i64;

/// `ms` of cluster time as the most real time it may take: `ms / (1 − ρ)`,
/// rounded up (cluster time runs at no less than 1 − ρ of real time; the
/// liveness bounds of docs/semantics.md L1, L2 and L4 allow for it).
pub fn drifted_ms(ms: u64) -> u64 {
    (ms * 100).div_ceil(99)
}

/// A clock drawn from the run's seed for host `id`: its origin hours from
/// any other's, its rate anywhere within ±ρ (docs/semantics.md "Time").
pub fn random_clock(rng: &mut StdRng, id: u64) -> SimClock {
    SimClock {
        // Hours apart: any comparison of instants across hosts is way off.
        origin: Duration::from_secs(rng.random_range(1..200) * 3_600 + id * 977),
        rate_ppm: rng.random_range(-RHO_PPM..=RHO_PPM),
        epoch: id,
    }
}

/// Locks `m`, also after a panic elsewhere poisoned it (a run reports what
/// it recorded so far rather than a second panic).
pub fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Sleeps `d` of simulated time.
pub async fn sleep(d: Duration) {
    tokio::time::sleep(d).await;
}

// ---------------------------------------------------------------- principals

/// The principal of the run's administrator, who grants every client its
/// role at the start (`warden_core::auth::ROOT`).
pub const ROOT_HOST: &str = "root";

/// The role every client principal gets: `lock` on `""` (every resource;
/// `lock` includes `read`). Isolation between principals is by lease
/// ownership, which no role changes (docs/security.md "Leases have owners").
pub const CLIENT_ROLE: &str = "sim-client";

/// Client host name → the principal its connections carry (where a TLS
/// handshake would put its certificate's name). A host is its own
/// principal unless a scenario says it acts for another's
/// ([`World::act_as`]: two hosts of one client process).
pub type Principals = Arc<Mutex<BTreeMap<String, String>>>;

/// Set once root's grants have committed; clients wait for it before their
/// first call ([`RolesGranted::wait`]).
#[derive(Clone, Debug, Default)]
pub struct RolesGranted(Arc<AtomicBool>);

impl RolesGranted {
    /// Root's grants committed.
    pub fn set(&self) {
        self.0.store(true, Ordering::Relaxed);
    }

    /// Whether they have.
    pub fn is_set(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }

    /// Waits (polling every 10 ms of simulated time) until they have.
    pub async fn wait(&self) {
        while !self.is_set() {
            sleep(Duration::from_millis(10)).await;
        }
    }
}

// ---------------------------------------------------------------- the record

/// A checker's finding.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    /// The property (S1, S2, FENCE, S3, S4, S5, S6, S7, S8, OWNERS, L1, L2,
    /// L3, REGIONS).
    pub property: &'static str,
    /// Global simulated time of the finding.
    pub at: Duration,
    /// What was seen.
    pub message: String,
}

/// One client's belief that it holds a grant (docs/semantics.md S5).
#[derive(Clone, Debug)]
pub struct Belief {
    /// The client.
    pub client: String,
    /// The resource.
    pub resource: String,
    /// The lease.
    pub lease_id: u64,
    /// The grant's token.
    pub token: u64,
    /// How it holds the resource: exclusive (a mutex, a writer) or shared
    /// (a reader, a permit).
    pub mode: Mode,
    /// A semaphore permit's slot.
    pub slot: Option<u32>,
    /// Global time the grant was acknowledged to the client.
    pub since: Duration,
    /// Global time until which the client believes it holds the grant
    /// (its `valid_until`, on its own clock, converted to global time).
    pub until: Duration,
}

/// An accepted or refused write at the fenced resource.
#[derive(Clone, Debug)]
pub struct FenceWrite {
    /// The resource.
    pub resource: String,
    /// Token presented.
    pub token: u64,
    /// The writer's lease.
    pub lease_id: u64,
    /// The rule the fence applied: exclusive (a plain token), shared, or a
    /// permit's slot (docs/fencing.md).
    pub kind: Kind,
    /// Accepted by the fence.
    pub accepted: bool,
}

/// A grant as the first node that applied it made it.
#[derive(Clone, Debug)]
pub struct Grant {
    /// The lease it went to.
    pub lease_id: u64,
    /// Its fencing token.
    pub token: u64,
    /// Exclusive, or shared (a reader, a permit).
    pub mode: Mode,
    /// A semaphore permit's slot.
    pub slot: Option<u32>,
    /// Global time of its first apply on any node.
    pub first_at: Duration,
}

/// Everything a run records. The checkers keep their own working state;
/// this is what several of them, the clients and the runner share.
#[derive(Debug, Default)]
pub struct History {
    /// Checker findings, in the order found (at most 50 are kept).
    pub violations: Vec<Violation>,
    /// Resources of the workload (for state digests).
    pub resources: Vec<String>,
    /// (resource, grant index, token) → grant (one entry may grant one
    /// resource more than once, each with its own token).
    pub grants: BTreeMap<(String, u64, u64), Grant>,
    /// lease → (why it ended, first global time any node applied that).
    pub lease_end: BTreeMap<u64, (LeaseEndReason, Duration)>,
    /// Last table per node (after its last apply).
    pub last_table: BTreeMap<u64, (u64, LockTable)>,
    /// Entries applied, all nodes.
    pub applies: u64,
    /// Client beliefs (S5).
    pub beliefs: Vec<Belief>,
    /// lease → (global send time of its last acknowledged acquire or renew, TTL ms).
    pub last_ack_send: BTreeMap<u64, (Duration, u64)>,
    /// lease → (global end time of its last acquire or renew call, acknowledged
    /// or not: a failed call may still have committed; TTL ms). For L2.
    pub last_call_end: BTreeMap<u64, (Duration, u64)>,
    /// Acknowledged grants: (resource, lease, token).
    pub acked_grants: Vec<(String, u64, u64)>,
    /// Acknowledged releases: (resource, lease, token).
    pub acked_releases: Vec<(String, u64, u64)>,
    /// Writes at the fenced resource, in order.
    pub fence_writes: Vec<FenceWrite>,
    /// Global time from which no fault is active (heal).
    pub healed_at: Option<Duration>,
    /// Leaderless time: (from, to) global intervals in which no reachable leader existed.
    pub leaderless: Vec<(Duration, Duration)>,
    /// Global time the run ended (set before the end-of-run checkers).
    pub ended_at: Duration,
    /// Client calls that succeeded.
    pub calls_ok: u64,
    /// Client calls that failed.
    pub calls_failed: u64,
    /// Acknowledged renews: (the caller's principal, lease, global time).
    /// A renew is a leader-made `RenewBatch` without a principal, so the
    /// OWNERS checker judges renews from these.
    pub acked_renews: Vec<(String, u64, Duration)>,
    /// Acknowledged acquires of a free resource with no other call in
    /// flight, each from send to acknowledgement (simulated time): what a
    /// scenario measures as the uncontended acquire latency (`regions`).
    pub uncontended_acquires: Vec<Duration>,
}

impl History {
    /// Records a finding (the first 50 of a run are kept).
    pub fn violation(&mut self, property: &'static str, message: String) {
        // Outside a host (end-of-run checkers) the time is the run's end.
        let at = turmoil::sim_elapsed().unwrap_or(self.ended_at);
        if self.violations.len() < 50 {
            self.violations.push(Violation {
                property,
                at,
                message,
            });
        }
    }
}

/// The history every part of a run records into.
pub type SharedHistory = Arc<Mutex<History>>;

// ---------------------------------------------------------------- clients

/// What every client of a run shares.
#[derive(Clone)]
pub struct World {
    /// The history.
    pub history: SharedHistory,
    /// The fenced resource the clients write to.
    pub fence: Arc<Fence<MemoryStore>>,
    /// Injected bugs (clients read `valid_until_from_receipt`).
    pub bugs: Bugs,
    /// Every client host's principal.
    pub principals: Principals,
    /// Set once every principal has its role.
    pub roles: RolesGranted,
}

impl World {
    /// The bookkeeping of client `name` (a host of that name, its own
    /// principal), on its own `clock`.
    pub fn client(&self, name: &str, clock: SimClock) -> ClientCtx {
        self.principal(name);
        ClientCtx {
            name: name.into(),
            principal: name.into(),
            clock,
            history: self.history.clone(),
            fence: self.fence.clone(),
            bugs: self.bugs,
            roles: self.roles.clone(),
        }
    }

    /// Host `name` is a client whose principal is `name` (for a host
    /// without bookkeeping of its own).
    pub fn principal(&self, name: &str) {
        self.act_as(name, name);
    }

    /// Host `host` is a client whose connections carry `principal`'s
    /// certificate: another host of the same client (a request held in the
    /// network, sent from its own host).
    pub fn act_as(&self, host: &str, principal: &str) {
        lock(&self.principals).insert(host.into(), principal.into());
    }
}

/// A grant a client holds ([`ClientCtx::acquire_held`]).
#[derive(Clone, Copy, Debug)]
pub struct Held {
    /// The lease.
    pub lease_id: u64,
    /// The grant's token.
    pub token: u64,
    /// The lease's TTL (ms).
    pub ttl_ms: u64,
    /// The client's `valid_until` (own clock).
    pub valid_until: Duration,
    /// What the client presents at the fenced resource: the token with its
    /// kind's rule (a permit's slot, shared, or exclusive).
    pub claim: Claim,
}

/// A client's own view of time and its honest bookkeeping.
pub struct ClientCtx {
    /// Name (its host's).
    pub name: String,
    /// Its principal.
    pub principal: String,
    /// Its clock.
    pub clock: SimClock,
    /// History.
    pub history: SharedHistory,
    /// Fence.
    pub fence: Arc<Fence<MemoryStore>>,
    /// Bugs.
    pub bugs: Bugs,
    /// Set once every principal has its role.
    pub roles: RolesGranted,
}

impl ClientCtx {
    /// `valid_until` on this client's clock, per S5, for a grant or renew of
    /// `ttl_ms` sent at `send` (own clock) and acknowledged at `receipt`.
    pub fn valid_until(&self, send: Duration, receipt: Duration, ttl_ms: u64) -> Duration {
        let from = if self.bugs.valid_until_from_receipt {
            receipt
        } else {
            send
        };
        from + warden_client::validity(Duration::from_millis(ttl_ms))
    }

    /// Records a finding of this client (a liveness property it waited for,
    /// or a state it read back).
    pub fn violation(&self, property: &'static str, message: String) {
        lock(&self.history).violation(property, message);
    }

    /// Records a belief from now until `valid_until` (own clock), in the
    /// mode and slot of the latest belief about this grant (exclusive, no
    /// slot, for a first one: see [`believe_held`](Self::believe_held)).
    pub fn believe(&self, resource: &str, lease_id: u64, token: u64, valid_until: Duration) {
        let held = {
            let h = lock(&self.history);
            h.beliefs
                .iter()
                .rev()
                .find(|b| b.lease_id == lease_id && b.resource == resource && b.token == token)
                .map(|b| (b.mode, b.slot))
        };
        let (mode, slot) = held.unwrap_or((Mode::Exclusive, None));
        self.believe_held(resource, lease_id, (token, mode, slot), valid_until);
    }

    /// Records a belief from now until `valid_until` (own clock) in a grant
    /// of `token` held in `mode` (and `slot`, for a permit).
    pub fn believe_held(
        &self,
        resource: &str,
        lease_id: u64,
        (token, mode, slot): (u64, Mode, Option<u32>),
        valid_until: Duration,
    ) {
        let until = self.clock.global_at(valid_until);
        lock(&self.history).beliefs.push(Belief {
            client: self.name.clone(),
            resource: resource.into(),
            lease_id,
            token,
            mode,
            slot,
            since: global_now(),
            until,
        });
    }

    /// Ends the latest belief about `lease_id` at global time `at`.
    pub fn stop_believing(&self, lease_id: u64, at: Duration) {
        let mut h = lock(&self.history);
        for b in h.beliefs.iter_mut().filter(|b| b.lease_id == lease_id) {
            b.until = b.until.min(at);
        }
    }

    /// Writes to the fenced resource with `token` (a plain token: the
    /// exclusive rule) and records the outcome.
    pub fn fenced_write(&self, resource: &str, lease_id: u64, token: u64) -> bool {
        let accepted = self.fence.check(resource, token).is_ok();
        self.record_write(resource, lease_id, Claim::exclusive(token), accepted)
    }

    /// Writes to the fenced resource with `claim` (its kind's rule:
    /// warden_fence, docs/fencing.md) and records the outcome.
    pub fn fenced_write_claim(&self, resource: &str, lease_id: u64, claim: Claim) -> bool {
        let accepted = self.fence.check_claim(resource, claim).is_ok();
        self.record_write(resource, lease_id, claim, accepted)
    }

    fn record_write(&self, resource: &str, lease_id: u64, claim: Claim, accepted: bool) -> bool {
        lock(&self.history).fence_writes.push(FenceWrite {
            resource: resource.into(),
            token: claim.token,
            lease_id,
            kind: claim.kind,
            accepted,
        });
        accepted
    }

    /// Acquires; on a grant, records it (acknowledged grant, belief, last
    /// acknowledged send) and returns (lease, token, ttl_ms, valid_until).
    pub async fn acquire(
        &self,
        client: &Client,
        resource: &str,
        opts: AcquireOptions,
    ) -> Option<(u64, u64, u64, Duration)> {
        self.acquire_held(client, resource, opts)
            .await
            .map(|g| (g.lease_id, g.token, g.ttl_ms, g.valid_until))
    }

    /// As [`acquire`](Self::acquire), for a grant of any kind: the belief
    /// is in the mode `opts.kind` asks for and the grant's slot.
    pub async fn acquire_held(
        &self,
        client: &Client,
        resource: &str,
        opts: AcquireOptions,
    ) -> Option<Held> {
        let mode = match opts.kind {
            GrantKind::Mutex | GrantKind::Exclusive => Mode::Exclusive,
            GrantKind::Shared | GrantKind::Permit { .. } => Mode::Shared,
        };
        let send_g = global_now();
        let send = self.clock.now();
        let r = client.acquire(resource, opts).await;
        let receipt = self.clock.now();
        match r {
            Ok(AcquireResult::Granted {
                lease_id,
                fencing_token,
                ttl_ms,
                slot,
                ..
            }) => {
                {
                    let mut h = lock(&self.history);
                    h.calls_ok += 1;
                    h.acked_grants
                        .push((resource.to_string(), lease_id, fencing_token));
                    h.last_ack_send.insert(lease_id, (send_g, ttl_ms));
                    h.last_call_end.insert(lease_id, (global_now(), ttl_ms));
                }
                let vu = self.valid_until(send, receipt, ttl_ms);
                self.believe_held(resource, lease_id, (fencing_token, mode, slot), vu);
                Some(Held {
                    lease_id,
                    token: fencing_token,
                    ttl_ms,
                    valid_until: vu,
                    claim: match (opts.kind, slot) {
                        (GrantKind::Permit { .. }, Some(slot)) => {
                            Claim::permit(slot, fencing_token)
                        }
                        (GrantKind::Shared, _) => Claim::shared(fencing_token),
                        _ => Claim::exclusive(fencing_token),
                    },
                })
            }
            Ok(_) => {
                lock(&self.history).calls_ok += 1;
                None
            }
            Err(_) => {
                lock(&self.history).calls_failed += 1;
                None
            }
        }
    }

    /// Renews; on success extends the belief and returns the new valid_until.
    pub async fn renew(
        &self,
        client: &Client,
        resource: &str,
        lease_id: u64,
        token: u64,
    ) -> Option<Duration> {
        let send_g = global_now();
        let send = self.clock.now();
        let r = client.renew(lease_id).await;
        let receipt = self.clock.now();
        {
            let mut h = lock(&self.history);
            let ttl = h.last_call_end.get(&lease_id).map(|(_, t)| *t).unwrap_or(0);
            h.last_call_end.insert(lease_id, (global_now(), ttl));
        }
        match r {
            Ok(res) => {
                {
                    let mut h = lock(&self.history);
                    h.calls_ok += 1;
                    h.last_ack_send.insert(lease_id, (send_g, res.ttl_ms));
                    h.acked_renews
                        .push((self.principal.clone(), lease_id, global_now()));
                }
                let vu = self.valid_until(send, receipt, res.ttl_ms);
                self.believe(resource, lease_id, token, vu);
                Some(vu)
            }
            Err(_) => {
                lock(&self.history).calls_failed += 1;
                None
            }
        }
    }

    /// Until global time `until`: waits `every`, then renews (each renew
    /// recorded as by [`renew`](Self::renew)).
    pub async fn renew_every(
        &self,
        client: &Client,
        resource: &str,
        (lease_id, token): (u64, u64),
        every: Duration,
        until: Duration,
    ) {
        while global_now() < until {
            sleep(every).await;
            self.renew(client, resource, lease_id, token).await;
        }
    }

    /// Releases; on acknowledgement records it (S3). Returns whether the
    /// release of this grant was acknowledged.
    pub async fn release(
        &self,
        client: &Client,
        resource: &str,
        lease_id: u64,
        token: u64,
    ) -> bool {
        self.stop_believing(lease_id, global_now());
        match client
            .release(lease_id, Some(resource.into()), Some(token))
            .await
        {
            Ok(r) => {
                let mut h = lock(&self.history);
                h.calls_ok += 1;
                if r.released {
                    h.acked_releases.push((resource.into(), lease_id, token));
                }
                h.last_ack_send.remove(&lease_id);
                h.last_call_end.remove(&lease_id);
                r.released
            }
            Err(_) => {
                lock(&self.history).calls_failed += 1;
                false
            }
        }
    }
}
