//! This node's Prometheus metrics (`GET /metrics` on `--admin-listen`).
//!
//! One [`Metrics`] per node, with its own `metrics-exporter-prometheus`
//! recorder (no global recorder: the simulator and the tests run several
//! nodes in one process). Every series is registered when the node starts,
//! so a scrape shows each name from the first second, and the handles are
//! kept: updating one is an atomic add, never a lookup.
//!
//! - **Lock side** ([`Metrics::on_effect`], [`Metrics::after_entry`]), fed by
//!   apply with the effects it already reports, never by scanning the table
//!   (a scrape never takes the state machine's lock): `warden_locks_held`,
//!   `warden_waiters`, `warden_grants_total`, `warden_lock_frees_total`,
//!   `warden_wait_duration_seconds`, `warden_hold_duration_seconds`,
//!   `warden_handoff_duration_seconds`, each with a bounded `group` label
//!   ([`groups`]); `warden_leases_live`. Reported by every node: equal
//!   values once applied. The table is counted once only when it is loaded
//!   (start, snapshot install: [`Metrics::load_table`]).
//! - **Durations** are in cluster time (docs/semantics.md "Time"), read
//!   from the replicated table's instants, so every node reports the same
//!   samples, whatever it loaded: a wait is the granting entry's `now` less
//!   the waiter's enqueue time (`Effect::WaiterRemoved`'s
//!   `enqueued_at_ms`), a hold the freeing entry's `now` less the grant's
//!   (`Effect::Freed`'s `granted_at_ms`), a handoff a grant's `now` less
//!   the `now` of the resource's last free this node applied. Cluster time
//!   runs at real time within the clock-rate bound ρ (1 %).
//! - **Raft and storage**: term, leadership, leader changes, commit and
//!   applied index, per-peer lag (leader), proposal duration, commands per
//!   entry, WAL fsync, snapshot duration and size ([`Metrics::raft`]).
//! - **Edge**: acquires by outcome, keep-alives, watch streams, gRPC requests
//!   by method and code ([`Metrics::grpc_request`]; the method label is
//!   bounded: a call to a method that does not exist counts as `unknown`).
//!
//! Histograms are in seconds (`_seconds`) with fixed buckets
//! ([`SECONDS_BUCKETS`]); names follow Prometheus' conventions (units in
//! names, `_total` on counters). Their samples are folded into the buckets
//! by a scrape or by [`keep_up`], every [`UPKEEP_INTERVAL`], so memory stays
//! bounded on a node nobody scrapes.

pub mod groups;

use std::collections::{BTreeMap, HashMap};
use std::sync::{Mutex, Weak};
use std::time::Duration;

use metrics::{Counter, Gauge, Histogram, Key, KeyName, Label, Metadata, Recorder, Unit};
use metrics_exporter_prometheus::{
    Matcher, PrometheusBuilder, PrometheusHandle, PrometheusRecorder,
};
use warden_core::effect::{Effect, FreeReason, WaiterRemovedReason};
use warden_core::table::LockTable;

pub use groups::{Groups, GroupsError, MAX_METRICS_GROUPS};

/// Buckets of every `_seconds` histogram: 0.5 ms to 5 min.
pub const SECONDS_BUCKETS: [f64; 17] = [
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
    60.0, 300.0,
];

/// Buckets of `warden_raft_commands_per_entry`.
pub const COMMANDS_BUCKETS: [f64; 11] = [
    1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0, 512.0, 1024.0,
];

/// Most resources whose last free is remembered for the handoff duration;
/// beyond it a free is not timed (the sample is skipped).
pub const MAX_HANDOFF_STARTS: usize = 16_384;

/// A remembered free older than this (cluster time, ms) is dropped when
/// room is needed.
const HANDOFF_HORIZON_MS: u64 = 60_000;

/// The reasons of `warden_lock_frees_total`, in [`FreeReason`] order.
pub const FREE_REASONS: [&str; 5] = ["release", "expire", "revoke", "force", "max_hold"];

/// The outcomes of `warden_acquire_duration_seconds`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AcquireOutcome {
    /// The caller got the grant.
    Granted = 0,
    /// Answered, without a grant (held by another, timed out, lock-delay).
    NotGranted = 1,
    /// Refused or failed (bad input, permission, not the leader, unavailable).
    Error = 2,
}

impl AcquireOutcome {
    const ALL: [AcquireOutcome; 3] = [Self::Granted, Self::NotGranted, Self::Error];

    fn label(self) -> &'static str {
        match self {
            Self::Granted => "granted",
            Self::NotGranted => "not_granted",
            Self::Error => "error",
        }
    }
}

/// Every series' name, kind and help text (checked against deploy/metrics.txt
/// by the tests).
pub const DESCRIPTIONS: &[(&str, Kind, &str)] = &[
    ("warden_build_info", Kind::Gauge, "Always 1; the `version` label is this binary's version."),
    ("warden_raft_term", Kind::Gauge, "The Raft term this node is in."),
    ("warden_raft_is_leader", Kind::Gauge, "1 while this node is the leader, else 0."),
    ("warden_raft_leader_changes_total", Kind::Counter, "Times this node saw a leader other than the last one it knew (the first one it sees counts)."),
    ("warden_raft_commit_index", Kind::Gauge, "The highest log index this node knows is committed (sampled every 250 ms)."),
    ("warden_raft_applied_index", Kind::Gauge, "The highest log index this node has applied (sampled every 250 ms)."),
    ("warden_raft_members_log_format", Kind::Gauge, "The oldest log format among the members, each as this node knows it (reported to it, or heard from a leader); 0 while one is unknown (sampled every 250 ms)."),
    ("warden_raft_peers_unconfirmed", Kind::Gauge, "Node ids of this cluster's certificates that this node's membership does not name and that a majority of the voters it knows did not confirm: their Raft calls are refused (each counts for a minute after its last refused confirmation; sampled every 250 ms)."),
    ("warden_raft_peer_lag_entries", Kind::Gauge, "Leader only (0 elsewhere): entries in the leader's log that `peer` has not acknowledged."),
    ("warden_raft_proposal_duration_seconds", Kind::Histogram, "Leader only: one entry of client commands, from its proposal to Raft to its apply (a command's wait to be packed into an entry is not included; failed proposals count too)."),
    ("warden_raft_commands_per_entry", Kind::Histogram, "Leader only: client commands packed into one proposed entry."),
    ("warden_wal_fsync_duration_seconds", Kind::Histogram, "One fsync of the write-ahead log (a group of appended entries)."),
    ("warden_snapshot_duration_seconds", Kind::Histogram, "Building and storing one snapshot of the state machine."),
    ("warden_snapshot_bytes", Kind::Gauge, "Size of the last snapshot this node built or installed."),
    ("warden_snapshot_lock_hold_seconds", Kind::Histogram, "How long one snapshot build held the state machine's lock (apply and reads wait that long)."),
    ("warden_locks_held", Kind::Gauge, "Grants held, by group."),
    ("warden_leases_live", Kind::Gauge, "Live leases (sessions and acquire-made leases)."),
    ("warden_waiters", Kind::Gauge, "Queued acquires, by group."),
    ("warden_grants_total", Kind::Counter, "Grants made, by group."),
    ("warden_lock_frees_total", Kind::Counter, "Grants ended, by group and reason (release, expire, revoke, force)."),
    ("warden_acquire_duration_seconds", Kind::Histogram, "Acquire calls served by this node, from receipt to answer, by outcome (granted, not_granted, error)."),
    ("warden_wait_duration_seconds", Kind::Histogram, "Time a granted waiter spent queued, in cluster time (its enqueue to the entry that granted it), by group."),
    ("warden_hold_duration_seconds", Kind::Histogram, "Grant to free, in cluster time, by group."),
    ("warden_handoff_duration_seconds", Kind::Histogram, "A free to the next grant of the same resource, whoever takes it, in cluster time, by group."),
    ("warden_keepalives_total", Kind::Counter, "Lease keep-alives this node received."),
    ("warden_watch_streams", Kind::Gauge, "Open watch streams on this node."),
    ("warden_grpc_requests_total", Kind::Counter, "gRPC calls answered by this node, by method and code."),
    ("warden_grpc_request_duration_seconds", Kind::Histogram, "gRPC calls from receipt to the end of the answer (for a stream, its whole life), by method."),
];

/// A series' kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Goes up only.
    Counter,
    /// Goes up and down.
    Gauge,
    /// Samples in buckets.
    Histogram,
}

static METADATA: Metadata<'static> =
    Metadata::new("warden_server::metrics", metrics::Level::INFO, None);

/// The lock-side series of one group.
struct GroupSeries {
    locks_held: Gauge,
    waiters: Gauge,
    grants: Counter,
    frees: [Counter; 5],
    wait: Histogram,
    hold: Histogram,
    handoff: Histogram,
}

/// Raft and storage series (see the module docs).
pub struct RaftSeries {
    /// `warden_raft_term`.
    pub term: Gauge,
    /// `warden_raft_is_leader`.
    pub is_leader: Gauge,
    /// `warden_raft_leader_changes_total`.
    pub leader_changes: Counter,
    /// `warden_raft_commit_index`.
    pub commit_index: Gauge,
    /// `warden_raft_applied_index`.
    pub applied_index: Gauge,
    /// `warden_raft_members_log_format`.
    pub members_log_format: Gauge,
    /// `warden_raft_peers_unconfirmed`.
    pub peers_unconfirmed: Gauge,
    /// `warden_raft_proposal_duration_seconds`.
    pub proposal_duration: Histogram,
    /// `warden_raft_commands_per_entry`.
    pub commands_per_entry: Histogram,
    /// `warden_wal_fsync_duration_seconds`.
    pub wal_fsync: Histogram,
    /// `warden_snapshot_duration_seconds`.
    pub snapshot_duration: Histogram,
    /// `warden_snapshot_bytes`.
    pub snapshot_bytes: Gauge,
    /// `warden_snapshot_lock_hold_seconds`.
    pub snapshot_lock_hold: Histogram,
}

/// One gRPC method's series; a code's counter is registered at its first use.
struct GrpcSeries {
    duration: Histogram,
    /// By `tonic::Code` (0..=16).
    codes: [Option<Counter>; 17],
}

/// What one effect ends, timed in cluster time: computed once per effect
/// by the apply hook ([`Ended::of`]) for the metrics and for the hot-lock
/// window.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Ended {
    /// A `WaiterRemoved` with reason `Granted`: how long the waiter was
    /// queued, in ms (its enqueue to the granting entry's `now`).
    pub waited_ms: Option<u64>,
    /// A `Freed`: how long the grant was held, in ms (its grant to the
    /// freeing entry's `now`).
    pub held_ms: Option<u64>,
}

impl Ended {
    /// What `effect` of an entry ends, with `now_ms` the table's cluster
    /// time after that entry applied.
    pub fn of(effect: &Effect, now_ms: u64) -> Ended {
        match effect {
            Effect::WaiterRemoved {
                reason: WaiterRemovedReason::Granted,
                enqueued_at_ms,
                ..
            } => Ended {
                waited_ms: Some(now_ms.saturating_sub(*enqueued_at_ms)),
                held_ms: None,
            },
            Effect::Freed { granted_at_ms, .. } => Ended {
                waited_ms: None,
                held_ms: Some(now_ms.saturating_sub(*granted_at_ms)),
            },
            _ => Ended::default(),
        }
    }
}

/// This node's metrics; see the module docs.
pub struct Metrics {
    recorder: PrometheusRecorder,
    handle: PrometheusHandle,
    groups: Groups,
    lock: Vec<GroupSeries>,
    leases_live: Gauge,
    keepalives: Counter,
    watch_streams: Gauge,
    acquire: [Histogram; 3],
    /// Raft and storage series.
    pub raft: RaftSeries,
    /// Resource → cluster time of its last free, for the handoff (bounded,
    /// [`MAX_HANDOFF_STARTS`]).
    freed_at: Mutex<FreedAt>,
    peer_lag: Mutex<BTreeMap<u64, Gauge>>,
    grpc: Mutex<HashMap<String, GrpcSeries>>,
    /// Upkeeps run so far (see [`Metrics::upkeep`]).
    upkeeps: std::sync::atomic::AtomicU64,
}

/// How often [`keep_up`] folds the histograms' samples into their buckets.
/// The exporter keeps every recorded sample (8 bytes) until a scrape or an
/// upkeep drains it, so a node nobody scrapes would grow without bound
/// (metrics-exporter-prometheus, "Upkeep and maintenance": a recorder built
/// with `build_recorder` leaves the upkeep to its owner). Its own default.
pub const UPKEEP_INTERVAL: Duration = Duration::from_secs(5);

/// Runs [`Metrics::upkeep`] every [`UPKEEP_INTERVAL`] while the metrics
/// live (it holds them weakly, so a node that fails at start leaves no task
/// behind) or until aborted.
pub async fn keep_up(metrics: Weak<Metrics>) {
    let mut tick = tokio::time::interval(UPKEEP_INTERVAL);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    tick.tick().await;
    loop {
        tick.tick().await;
        match metrics.upgrade() {
            Some(m) => m.upkeep(),
            None => return,
        }
    }
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Metrics")
            .field("groups", &self.groups)
            .finish_non_exhaustive()
    }
}

impl Default for Metrics {
    /// Metrics without configured groups (every resource is `other` or
    /// `election`).
    fn default() -> Self {
        Metrics::new(Groups::default())
    }
}

impl Metrics {
    /// A node's metrics with `groups` for the `group` label; every series
    /// registered (see the module docs).
    pub fn new(groups: Groups) -> Self {
        let builder = PrometheusBuilder::new()
            .set_buckets_for_metric(Matcher::Suffix("_seconds".into()), &SECONDS_BUCKETS)
            .and_then(|b| {
                b.set_buckets_for_metric(
                    Matcher::Full("warden_raft_commands_per_entry".into()),
                    &COMMANDS_BUCKETS,
                )
            })
            .unwrap_or_else(|_| PrometheusBuilder::new());
        let recorder = builder.build_recorder();
        let handle = recorder.handle();
        for (name, kind, help) in DESCRIPTIONS {
            let key = KeyName::from_const_str(name);
            let unit = name.ends_with("_seconds").then_some(Unit::Seconds);
            let help = metrics::SharedString::const_str(help);
            match kind {
                Kind::Counter => recorder.describe_counter(key, unit, help),
                Kind::Gauge => recorder.describe_gauge(key, unit, help),
                Kind::Histogram => recorder.describe_histogram(key, unit, help),
            }
        }
        let gauge = |name: &'static str, labels: Vec<Label>| {
            recorder.register_gauge(&Key::from_parts(name, labels), &METADATA)
        };
        let counter = |name: &'static str, labels: Vec<Label>| {
            recorder.register_counter(&Key::from_parts(name, labels), &METADATA)
        };
        let histogram = |name: &'static str, labels: Vec<Label>| {
            recorder.register_histogram(&Key::from_parts(name, labels), &METADATA)
        };
        gauge(
            "warden_build_info",
            vec![Label::new("version", env!("CARGO_PKG_VERSION"))],
        )
        .set(1.0);
        let lock = groups
            .labels()
            .map(|g| {
                let by = |extra: Option<(&'static str, &'static str)>| {
                    let mut labels = vec![Label::new("group", g.to_owned())];
                    if let Some((k, v)) = extra {
                        labels.push(Label::new(k, v));
                    }
                    labels
                };
                GroupSeries {
                    locks_held: gauge("warden_locks_held", by(None)),
                    waiters: gauge("warden_waiters", by(None)),
                    grants: counter("warden_grants_total", by(None)),
                    frees: FREE_REASONS
                        .map(|r| counter("warden_lock_frees_total", by(Some(("reason", r))))),
                    wait: histogram("warden_wait_duration_seconds", by(None)),
                    hold: histogram("warden_hold_duration_seconds", by(None)),
                    handoff: histogram("warden_handoff_duration_seconds", by(None)),
                }
            })
            .collect();
        let raft = RaftSeries {
            term: gauge("warden_raft_term", vec![]),
            is_leader: gauge("warden_raft_is_leader", vec![]),
            leader_changes: counter("warden_raft_leader_changes_total", vec![]),
            commit_index: gauge("warden_raft_commit_index", vec![]),
            applied_index: gauge("warden_raft_applied_index", vec![]),
            members_log_format: gauge("warden_raft_members_log_format", vec![]),
            peers_unconfirmed: gauge("warden_raft_peers_unconfirmed", vec![]),
            proposal_duration: histogram("warden_raft_proposal_duration_seconds", vec![]),
            commands_per_entry: histogram("warden_raft_commands_per_entry", vec![]),
            wal_fsync: histogram("warden_wal_fsync_duration_seconds", vec![]),
            snapshot_duration: histogram("warden_snapshot_duration_seconds", vec![]),
            snapshot_bytes: gauge("warden_snapshot_bytes", vec![]),
            snapshot_lock_hold: histogram("warden_snapshot_lock_hold_seconds", vec![]),
        };
        let acquire = AcquireOutcome::ALL.map(|o| {
            histogram(
                "warden_acquire_duration_seconds",
                vec![Label::new("outcome", o.label())],
            )
        });
        let metrics = Metrics {
            leases_live: gauge("warden_leases_live", vec![]),
            keepalives: counter("warden_keepalives_total", vec![]),
            watch_streams: gauge("warden_watch_streams", vec![]),
            acquire,
            raft,
            lock,
            groups,
            freed_at: Mutex::new(FreedAt::default()),
            peer_lag: Mutex::new(BTreeMap::new()),
            grpc: Mutex::new(HashMap::new()),
            upkeeps: Default::default(),
            handle,
            recorder,
        };
        // The series with a label set only known later still show their
        // names (and help) from the start.
        metrics.grpc_request("unknown", tonic::Code::Unimplemented, None);
        metrics
    }

    /// The Prometheus text exposition of every series.
    pub fn render(&self) -> String {
        self.handle.render()
    }

    /// Folds the samples recorded since the last scrape or upkeep into their
    /// histograms' buckets (nothing is lost: a scrape shows them as before),
    /// which frees them; see [`UPKEEP_INTERVAL`].
    pub fn upkeep(&self) {
        self.handle.run_upkeep();
        self.upkeeps
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }

    /// How many upkeeps ran (tests: the node keeps them up).
    pub fn upkeeps(&self) -> u64 {
        self.upkeeps.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Counts the table once when it is loaded (at start from the stored
    /// snapshot, or when a snapshot is installed): the gauges are set from
    /// it. What it holds is timed when it ends, from the table's instants
    /// like any other; a handoff from a free before the load is not.
    pub fn load_table(&self, table: &LockTable) {
        let mut held = vec![0u64; self.lock.len()];
        let mut waiting = vec![0u64; self.lock.len()];
        for (name, state) in table.resources_with_prefix("") {
            let g = self.groups.of(name);
            held[g] += u64::from(state.holder.is_some());
            waiting[g] += state.waiters.len() as u64;
        }
        for (i, series) in self.lock.iter().enumerate() {
            series.locks_held.set(held[i] as f64);
            series.waiters.set(waiting[i] as f64);
        }
        self.leases_live.set(table.lease_count() as f64);
        if let Ok(mut freed_at) = self.freed_at.lock() {
            *freed_at = FreedAt::default();
        }
    }

    /// One effect of an applied entry, with `now_ms` the table's cluster
    /// time after that entry ([`warden_core::LockTable::now_ms`]).
    pub fn on_effect(&self, effect: &Effect, now_ms: u64) {
        let ended = Ended::of(effect, now_ms);
        match effect {
            Effect::Granted { resource, .. } => {
                let series = &self.lock[self.groups.of(resource)];
                series.grants.increment(1);
                series.locks_held.increment(1.0);
                let freed = self
                    .freed_at
                    .lock()
                    .ok()
                    .and_then(|mut f| f.at.remove(resource));
                if let Some(at) = freed {
                    series.handoff.record(seconds(now_ms.saturating_sub(at)));
                }
            }
            Effect::Freed {
                resource, reason, ..
            } => {
                let series = &self.lock[self.groups.of(resource)];
                series.frees[free_reason_index(*reason)].increment(1);
                series.locks_held.decrement(1.0);
                if let Some(held) = ended.held_ms {
                    series.hold.record(seconds(held));
                }
                if let Ok(mut freed_at) = self.freed_at.lock() {
                    freed_at.remember(resource, now_ms);
                }
            }
            Effect::Queued { resource, .. } => {
                self.lock[self.groups.of(resource)].waiters.increment(1.0);
            }
            Effect::WaiterRemoved { resource, .. } => {
                let series = &self.lock[self.groups.of(resource)];
                series.waiters.decrement(1.0);
                if let Some(waited) = ended.waited_ms {
                    series.wait.record(seconds(waited));
                }
            }
            _ => {}
        }
    }

    /// After every effect of one entry: the counts read from the table in
    /// O(1).
    pub fn after_entry(&self, table: &LockTable) {
        self.leases_live.set(table.lease_count() as f64);
    }

    /// One acquire call answered by this node after `elapsed`.
    pub fn acquire(&self, outcome: AcquireOutcome, elapsed: Duration) {
        self.acquire[outcome as usize].record(elapsed.as_secs_f64());
    }

    /// `n` keep-alives received.
    pub fn keepalives(&self, n: u64) {
        self.keepalives.increment(n);
    }

    /// A watch stream opened: `warden_watch_streams` counts it until the
    /// returned guard drops.
    pub fn watch_stream(&self) -> OpenStream {
        self.watch_streams.increment(1.0);
        OpenStream(self.watch_streams.clone())
    }

    /// One gRPC call on `method` (a path a service answered, or `unknown`:
    /// the caller bounds the set) ended with `code` after `elapsed` (None:
    /// register the series only).
    pub fn grpc_request(&self, method: &str, code: tonic::Code, elapsed: Option<Duration>) {
        let Ok(mut grpc) = self.grpc.lock() else {
            return;
        };
        if !grpc.contains_key(method) {
            let series = GrpcSeries {
                duration: self.recorder.register_histogram(
                    &Key::from_parts(
                        "warden_grpc_request_duration_seconds",
                        vec![Label::new("method", method.to_owned())],
                    ),
                    &METADATA,
                ),
                codes: Default::default(),
            };
            grpc.insert(method.to_owned(), series);
        }
        let Some(series) = grpc.get_mut(method) else {
            return;
        };
        let counter = series.codes[code as usize].get_or_insert_with(|| {
            self.recorder.register_counter(
                &Key::from_parts(
                    "warden_grpc_requests_total",
                    vec![
                        Label::new("method", method.to_owned()),
                        Label::new("code", code_label(code)),
                    ],
                ),
                &METADATA,
            )
        });
        if let Some(e) = elapsed {
            counter.increment(1);
            series.duration.record(e.as_secs_f64());
        }
    }

    /// The lag per peer (`(peer, entries behind)`): the leader's view; a
    /// follower passes every other member with 0. A peer seen before and
    /// not listed now (removed) reads 0.
    pub fn peer_lag(&self, lags: &[(u64, u64)]) {
        let Ok(mut gauges) = self.peer_lag.lock() else {
            return;
        };
        for (peer, _) in lags {
            gauges.entry(*peer).or_insert_with(|| {
                self.recorder.register_gauge(
                    &Key::from_parts(
                        "warden_raft_peer_lag_entries",
                        vec![Label::new("peer", peer.to_string())],
                    ),
                    &METADATA,
                )
            });
        }
        for (peer, g) in gauges.iter() {
            let lag = lags.iter().find(|(p, _)| p == peer).map_or(0, |(_, l)| *l);
            g.set(lag as f64);
        }
    }
}

/// An open stream counted in a gauge until dropped ([`Metrics::watch_stream`]).
#[derive(Debug)]
pub struct OpenStream(Gauge);

impl Drop for OpenStream {
    fn drop(&mut self) {
        self.0.decrement(1.0);
    }
}

/// Milliseconds of cluster time as a histogram's seconds.
fn seconds(ms: u64) -> f64 {
    ms as f64 / 1_000.0
}

fn free_reason_index(reason: FreeReason) -> usize {
    match reason {
        FreeReason::Released => 0,
        FreeReason::Expired => 1,
        FreeReason::Revoked => 2,
        FreeReason::Forced => 3,
        FreeReason::MaxHold => 4,
    }
}

/// The cluster times (ms) of recent frees, by resource: where a handoff
/// starts.
#[derive(Debug, Default)]
struct FreedAt {
    at: HashMap<String, u64>,
    /// When the map, full, was last pruned of frees older than
    /// [`HANDOFF_HORIZON_MS`] (a full map of recent frees is pruned again a
    /// second later at the soonest, not on every free: each prune is a pass
    /// over [`MAX_HANDOFF_STARTS`] entries).
    pruned_at: Option<u64>,
}

impl FreedAt {
    /// Remembers `resource`'s free at cluster time `now_ms`, within
    /// [`MAX_HANDOFF_STARTS`]: when full, frees older than
    /// [`HANDOFF_HORIZON_MS`] go first; if none is that old, this free is
    /// not remembered (its handoff is not timed).
    fn remember(&mut self, resource: &str, now_ms: u64) {
        if let Some(at) = self.at.get_mut(resource) {
            *at = now_ms;
            return;
        }
        if self.at.len() >= MAX_HANDOFF_STARTS {
            if self
                .pruned_at
                .is_some_and(|p| now_ms.saturating_sub(p) < 1_000)
            {
                return;
            }
            self.pruned_at = Some(now_ms);
            let horizon = now_ms.saturating_sub(HANDOFF_HORIZON_MS);
            self.at.retain(|_, at| *at > horizon);
            if self.at.len() >= MAX_HANDOFF_STARTS {
                return;
            }
        }
        self.at.insert(resource.to_owned(), now_ms);
        debug_assert!(self.at.len() <= MAX_HANDOFF_STARTS);
    }
}

/// gRPC's canonical code names, as grpc-go prints them (`OK`, `NotFound`).
fn code_label(code: tonic::Code) -> &'static str {
    use tonic::Code::*;
    match code {
        Ok => "OK",
        Cancelled => "Canceled",
        Unknown => "Unknown",
        InvalidArgument => "InvalidArgument",
        DeadlineExceeded => "DeadlineExceeded",
        NotFound => "NotFound",
        AlreadyExists => "AlreadyExists",
        PermissionDenied => "PermissionDenied",
        ResourceExhausted => "ResourceExhausted",
        FailedPrecondition => "FailedPrecondition",
        Aborted => "Aborted",
        OutOfRange => "OutOfRange",
        Unimplemented => "Unimplemented",
        Internal => "Internal",
        Unavailable => "Unavailable",
        DataLoss => "DataLoss",
        Unauthenticated => "Unauthenticated",
    }
}

#[cfg(test)]
mod tests;
