//! The openraft state machine: the replicated lock table, applied in
//! memory; snapshots in redb.

use std::io;
use std::sync::{Arc, Mutex};

use futures::{Stream, TryStreamExt};
use openraft::entry::RaftEntry;
use openraft::storage::{EntryResponder, RaftStateMachine};
use openraft::{EntryPayload, OptionalSend, RaftSnapshotBuilder};
use tokio::sync::watch;
use warden_core::table::LockTable;
use warden_core::types::Response;

use super::db::Db;
use super::io_err;
use super::log_store::MaxStamp;
use super::replay::{apply_to_table, replay, Replayed};
use super::snapshot_store::store_snapshot;
use crate::clock::NodeClock;
use crate::types::{leader_of, LogId, Snapshot, SnapshotMeta, StoredMembership, TypeConfig};

/// What the state machine holds: the replicated lock table.
#[derive(Debug)]
pub struct Machine {
    /// The replicated lock table.
    pub table: LockTable,
    /// Last applied log id.
    pub last_applied: Option<LogId>,
    /// Last applied membership.
    pub membership: StoredMembership,
    /// Waiters removed because their principal lost `lock` (node-local).
    pub removed_waiters: RemovedWaiters,
    /// The newest log format of an entry applied since this process
    /// started ([`crate::types::entry_log_format`]; 0 before the first),
    /// published on [`Shared::applied_log_format`] when it rises.
    pub applied_log_format: u32,
}

/// Most waiters [`RemovedWaiters`] remembers.
pub const MAX_REMOVED_WAITERS: usize = 4_096;

/// The waiters this node saw removed for a reason their queued acquire's
/// stream answers differently from a timeout (a `WaiterRemoved` effect with
/// `PermissionRevoked`: PermissionDenied; with `Cancelled`, a `CancelWait`:
/// `cancelled`; with `Granted`: the grant, even once it has ended, so a
/// stream that looks late never answers a granted wait as timed out, S8). A
/// waiter gone and not here timed out or lost its lease. Node-local, fed at
/// apply, the last [`MAX_REMOVED_WAITERS`] only (a follower that finds its
/// waiter gone and not here reports it as timed out).
#[derive(Debug, Default)]
pub struct RemovedWaiters {
    order: std::collections::VecDeque<(String, u64, u64)>,
    reasons: std::collections::BTreeMap<(String, u64, u64), warden_core::WaiterRemovedReason>,
    grants: std::collections::BTreeMap<(String, u64, u64), GrantedWaiter>,
}

/// A hand-off's grant to a waiter, as the table had it at the end of the
/// entry that made it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GrantedWaiter {
    /// The grant's token.
    pub fencing_token: u64,
    /// The lease's TTL in milliseconds.
    pub ttl_ms: u64,
    /// The entry that made the grant.
    pub grant_index: u64,
    /// A semaphore permit's slot.
    pub slot: Option<u32>,
    /// The resource's kind.
    pub kind: Option<warden_core::types::LockKind>,
    /// The grant's mode.
    pub mode: warden_core::types::Mode,
    /// A multi-lock's resources and tokens (empty for one resource).
    pub grants: Vec<warden_core::types::ResourceToken>,
    /// The grant's max-hold in milliseconds (0: none).
    pub max_hold_ms: u64,
}

impl RemovedWaiters {
    /// Records why the waiter of `lease_id` on `resource` enqueued at
    /// `enqueue_index` was removed.
    pub fn record(
        &mut self,
        resource: &str,
        lease_id: u64,
        enqueue_index: u64,
        reason: warden_core::WaiterRemovedReason,
    ) {
        let key = (resource.to_owned(), lease_id, enqueue_index);
        if self.reasons.insert(key.clone(), reason).is_some() {
            return;
        }
        self.order.push_back(key);
        if self.order.len() > MAX_REMOVED_WAITERS {
            if let Some(old) = self.order.pop_front() {
                self.reasons.remove(&old);
                self.grants.remove(&old);
            }
        }
        debug_assert_eq!(self.order.len(), self.reasons.len());
    }

    /// Records the grant a hand-off made to that waiter (its removal with
    /// reason `Granted`).
    pub fn record_grant(
        &mut self,
        resource: &str,
        lease_id: u64,
        enqueue_index: u64,
        grant: GrantedWaiter,
    ) {
        self.record(
            resource,
            lease_id,
            enqueue_index,
            warden_core::WaiterRemovedReason::Granted,
        );
        let key = (resource.to_owned(), lease_id, enqueue_index);
        if self.reasons.contains_key(&key) {
            self.grants.insert(key, grant);
        }
    }

    /// The grant a hand-off made to that waiter, if this node saw it and
    /// still remembers.
    pub fn grant(
        &self,
        resource: &str,
        lease_id: u64,
        enqueue_index: u64,
    ) -> Option<&GrantedWaiter> {
        self.grants
            .get(&(resource.to_owned(), lease_id, enqueue_index))
    }

    /// Why that waiter was removed, if this node saw it and still remembers.
    pub fn reason(
        &self,
        resource: &str,
        lease_id: u64,
        enqueue_index: u64,
    ) -> Option<warden_core::WaiterRemovedReason> {
        self.reasons
            .get(&(resource.to_owned(), lease_id, enqueue_index))
            .copied()
    }
}

/// State shared between the state machine (writer) and the services (readers).
#[derive(Debug)]
pub struct Shared {
    /// The machine. Held only for short, non-async sections.
    pub machine: Mutex<Machine>,
    /// The last applied log index; services wait on it.
    pub applied: watch::Sender<u64>,
    /// This node's clock.
    pub clock: Arc<NodeClock>,
    /// The largest cluster-time stamp this node's log has held.
    pub max_stamp: MaxStamp,
    /// This node's cluster clock: its base while it leads, the time it
    /// last heard from a leader (docs/semantics.md "Time").
    pub cluster_clock: crate::cluster_time::ClusterClock,
    /// Node-local event log for the Watch service, fed at apply.
    pub events: crate::events::EventLog,
    /// Which queued acquires to read again, woken at apply by the resources
    /// each entry touched (node-local).
    pub wakes: Arc<crate::wakes::ResourceWakes>,
    /// Node-local one-minute window behind `warden top`, fed at apply.
    pub hot_locks: crate::hot_locks::HotLocks,
    /// This node's id (for the observer).
    pub node_id: u64,
    /// Simulator-only observer of each apply.
    pub observer: Option<Arc<dyn crate::sim_hooks::Observer>>,
    /// Simulator-only bug switches (all off in production).
    pub bugs: crate::sim_hooks::BugSwitches,
    /// This node's metrics; apply feeds the lock-side series.
    pub metrics: Arc<crate::metrics::Metrics>,
    /// The newest log format of an entry applied since start (0: none yet);
    /// the log-format gates read it as their applied floor
    /// (`raft::log_format`). Sent only when it rises.
    pub applied_log_format: watch::Sender<u32>,
}

/// The openraft state machine over [`Shared`].
#[derive(Clone, Debug)]
pub struct StateMachineStore {
    /// Shared state.
    pub shared: Arc<Shared>,
    pub(super) db: Db,
}

impl StateMachineStore {
    /// Opens the state machine: loads the last snapshot from `db`, if any.
    pub fn open(db: Db, clock: Arc<NodeClock>, max_stamp: MaxStamp) -> Result<Self, io::Error> {
        Self::open_injected(
            db,
            clock,
            max_stamp,
            0,
            None,
            Default::default(),
            Arc::default(),
        )
    }

    /// [`Self::open`] with the simulator's observer and bug switches.
    pub fn open_injected(
        db: Db,
        clock: Arc<NodeClock>,
        max_stamp: MaxStamp,
        node_id: u64,
        observer: Option<Arc<dyn crate::sim_hooks::Observer>>,
        bugs: crate::sim_hooks::BugSwitches,
        metrics: Arc<crate::metrics::Metrics>,
    ) -> Result<Self, io::Error> {
        let mut machine = Machine {
            table: LockTable::new(),
            last_applied: None,
            membership: StoredMembership::default(),
            removed_waiters: RemovedWaiters::default(),
            applied_log_format: 0,
        };
        let stored = db.load_snapshot()?;
        let snapshot_len = stored.as_ref().map_or(0, |s| s.data.len() as u64);
        if let Some(snap) = stored {
            machine.table = LockTable::from_snapshot(&snap.data).map_err(io_err)?;
            // Cluster time continues from the snapshot's (docs/semantics.md
            // "Time"): a leader's clock starts no lower.
            max_stamp.observe(machine.table.now_ms());
            machine.last_applied = snap.meta.last_log_id;
            machine.membership = snap.meta.last_membership.clone();
        }
        let applied_index = machine
            .last_applied
            .as_ref()
            .map(|l| l.index())
            .unwrap_or(0);
        metrics.load_table(&machine.table);
        // What the log grew by since the stored snapshot, before this start.
        let after = db.log_bytes_after(machine.last_applied.as_ref().map(|l| l.index()))?;
        db.growth.appended(after);
        db.growth.snapshot_taken(0, snapshot_len);
        let (applied, _) = watch::channel(applied_index);
        Ok(StateMachineStore {
            shared: Arc::new(Shared {
                machine: Mutex::new(machine),
                applied,
                clock,
                max_stamp,
                cluster_clock: Default::default(),
                events: crate::events::EventLog::new(crate::events::DEFAULT_WINDOW, applied_index),
                wakes: Arc::default(),
                hot_locks: crate::hot_locks::HotLocks::new(),
                node_id,
                observer,
                bugs,
                metrics,
                applied_log_format: watch::channel(0).0,
            }),
            db,
        })
    }

    fn lock(&self) -> Result<std::sync::MutexGuard<'_, Machine>, io::Error> {
        self.shared.machine.lock().map_err(io_err)
    }

    /// Applies one Warden entry to the table under the machine's lock and
    /// feeds what is derived from its effects: metrics, the hot-lock
    /// window, the watch event log, the removed-waiter reasons, the
    /// simulator's observer. Simulator bug switches act here only.
    fn apply_entry(
        &self,
        m: &mut Machine,
        log_id: &LogId,
        entry: &warden_core::types::LogEntry,
    ) -> warden_core::table::Applied {
        let index = log_id.index();
        let log_leader = leader_of(log_id);
        let bugs = self.shared.bugs;
        let buggy;
        let logged = entry;
        let entry = if bugs == crate::sim_hooks::BugSwitches::default() {
            entry
        } else {
            crate::sim_hooks::inject(&bugs, &mut m.table);
            buggy = crate::sim_hooks::buggy_entry(&bugs, &m.table, log_leader, entry);
            &buggy
        };
        let applied = apply_to_table(&mut m.table, log_id, entry);
        let format = crate::types::entry_log_format(&entry.command);
        if format > m.applied_log_format {
            m.applied_log_format = format;
            self.shared.applied_log_format.send_replace(format);
        }
        let now_ms = m.table.now_ms();
        // One hold of the window's lock per entry.
        let mut hot = (!applied.effects.is_empty()).then(|| self.shared.hot_locks.recorder(now_ms));
        // Hand-offs to waiters: (resource, lease) → enqueue index, then the
        // grant that follows each.
        let mut handed: Vec<(&str, u64, u64)> = Vec::new();
        let mut granted_waiters = Vec::new();
        for effect in &applied.effects {
            self.shared.metrics.on_effect(effect, now_ms);
            if let Some(hot) = &mut hot {
                hot.effect(effect);
            }
            match effect {
                warden_core::Effect::WaiterRemoved {
                    resource,
                    lease_id,
                    enqueue_index,
                    reason: warden_core::WaiterRemovedReason::Granted,
                    ..
                } => handed.push((resource, *lease_id, *enqueue_index)),
                // Only the reasons a waiter's stream answers differently
                // from a timeout are kept.
                warden_core::Effect::WaiterRemoved {
                    resource,
                    lease_id,
                    enqueue_index,
                    reason:
                        reason @ (warden_core::WaiterRemovedReason::PermissionRevoked
                        | warden_core::WaiterRemovedReason::Cancelled),
                    ..
                } => m
                    .removed_waiters
                    .record(resource, *lease_id, *enqueue_index, *reason),
                warden_core::Effect::Granted {
                    resource,
                    lease_id,
                    fencing_token,
                    grant_index,
                    mode,
                    slot,
                } => {
                    let Some(at) = handed
                        .iter()
                        .position(|(r, l, _)| r == resource && l == lease_id)
                    else {
                        continue;
                    };
                    let (_, _, enqueue_index) = handed.swap_remove(at);
                    let t = &m.table;
                    let grant = GrantedWaiter {
                        fencing_token: *fencing_token,
                        ttl_ms: t.lease(*lease_id).map_or(0, |l| l.ttl_ms),
                        grant_index: *grant_index,
                        slot: *slot,
                        kind: t.resource(resource).map(|r| r.kind),
                        mode: *mode,
                        grants: t
                            .multi_lock(*lease_id, resource)
                            .filter(|v| v.grant_index == Some(*grant_index))
                            .map(|v| v.tokens)
                            .unwrap_or_default(),
                        max_hold_ms: t
                            .max_hold(resource, *lease_id)
                            .filter(|h| h.fencing_token == *fencing_token)
                            .map_or(0, |h| h.max_hold_ms),
                    };
                    granted_waiters.push((resource.clone(), *lease_id, enqueue_index, grant));
                }
                _ => {}
            }
        }
        for (resource, lease_id, enqueue_index, grant) in granted_waiters {
            m.removed_waiters
                .record_grant(&resource, lease_id, enqueue_index, grant);
        }
        drop(hot);
        self.shared.metrics.after_entry(&m.table);
        self.shared.events.record(index, &applied.effects);
        if let Some(o) = &self.shared.observer {
            o.on_apply(
                self.shared.node_id,
                index,
                log_leader,
                entry,
                logged,
                &applied,
                &m.table,
            );
        }
        applied
    }

    /// What a snapshot build records under the machine's lock: the
    /// applied log id, the membership, and the log growth mark. The table
    /// itself is not copied (see [`Self::build`]).
    fn view_of(&self, m: &Machine) -> BuildView {
        BuildView {
            meta: SnapshotMeta {
                last_log_id: m.last_applied,
                last_membership: m.membership.clone(),
            },
            growth_mark: self.db.growth.mark(),
        }
    }

    /// Builds and stores a snapshot of the applied state. The machine's lock
    /// is held only to record [`BuildView`]; the table at that applied log
    /// id is rebuilt on tokio's blocking pool from the stored snapshot and
    /// the log after it ([`replay`]), encoded, and stored in chunks in one
    /// redb transaction there. With the simulator's bug switches on (apply
    /// then differs from a replay), with no stored snapshot and a log that
    /// does not start at index 0, or when the log does not hold what was
    /// applied (never expected: a warning), the table is copied under the
    /// lock instead ([`Self::build_by_copy`]); the write still runs off the
    /// runtime.
    async fn build(&self) -> Result<Snapshot, io::Error> {
        if self.shared.bugs != crate::sim_hooks::BugSwitches::default() {
            return self.build_by_copy().await;
        }
        let held = std::time::Instant::now();
        let view = self.view_of(&*self.lock()?);
        self.shared
            .metrics
            .raft
            .snapshot_lock_hold
            .record(held.elapsed().as_secs_f64());
        let Some(upto) = view.meta.last_log_id else {
            return self.build_by_copy().await;
        };
        let tail = self.db.tail.clone();
        let meta = view.meta;
        let built = self
            .db
            .io(move |db| {
                let (meta, data) = match replay(&db, &tail, &upto) {
                    Ok(Replayed::Table(data)) => (meta, data),
                    Ok(Replayed::Stored(meta, data)) => return Ok(Some((meta, data))),
                    Ok(Replayed::NoBase) => return Ok(None),
                    // The log on disk does not hold what was applied after
                    // the stored snapshot (an entry missing, or another one
                    // at the applied index): never expected (see `replay`),
                    // and not fatal, since the live table is still right.
                    Err(e)
                        if matches!(
                            e.kind(),
                            io::ErrorKind::NotFound | io::ErrorKind::InvalidData
                        ) =>
                    {
                        tracing::warn!("{e}; copying the table under the lock instead");
                        return Ok(None);
                    }
                    Err(e) => return Err(e),
                };
                store_snapshot(&db, &meta, &data)?;
                Ok(Some((meta, data)))
            })
            .await?;
        let Some((meta, data)) = built else {
            return self.build_by_copy().await;
        };
        Ok(self.stored(view.growth_mark, meta, data))
    }

    /// A snapshot just stored: the log growth restarts from `growth_mark`
    /// with the snapshot's size (the snapshot rule's input).
    fn stored(&self, growth_mark: u64, meta: SnapshotMeta, data: Vec<u8>) -> Snapshot {
        self.db
            .growth
            .snapshot_taken(growth_mark, data.len() as u64);
        Snapshot {
            meta,
            snapshot: data,
        }
    }

    /// The table copied and encoded under the machine's lock, then stored in
    /// chunks off the runtime: the fallback of [`Self::build`].
    async fn build_by_copy(&self) -> Result<Snapshot, io::Error> {
        let held = std::time::Instant::now();
        let (view, data) = {
            let m = self.lock()?;
            let view = self.view_of(&m);
            let data = if self.shared.bugs.outcome_table_not_in_snapshot {
                crate::sim_hooks::without_outcomes(
                    &m.table,
                    view.meta
                        .last_log_id
                        .as_ref()
                        .map(|l| l.index())
                        .unwrap_or(0),
                    view.meta
                        .last_log_id
                        .as_ref()
                        .map(leader_of)
                        .unwrap_or_default(),
                )
            } else {
                m.table.to_snapshot()
            };
            (view, data)
        };
        self.shared
            .metrics
            .raft
            .snapshot_lock_hold
            .record(held.elapsed().as_secs_f64());
        let meta = view.meta;
        let (meta, data) = self
            .db
            .io(move |db| {
                // A newer stored snapshot (a concurrent install) stays.
                store_snapshot(&db, &meta, &data)?;
                Ok((meta, data))
            })
            .await?;
        Ok(self.stored(view.growth_mark, meta, data))
    }
}

/// What [`StateMachineStore::build`] records under the machine's lock.
struct BuildView {
    meta: SnapshotMeta,
    growth_mark: u64,
}

impl RaftSnapshotBuilder<TypeConfig> for StateMachineStore {
    type SnapshotData = Vec<u8>;

    async fn build_snapshot(&mut self) -> Result<Snapshot, io::Error> {
        let started = tokio::time::Instant::now();
        let built = self.build().await?;
        let raft = &self.shared.metrics.raft;
        raft.snapshot_duration
            .record(started.elapsed().as_secs_f64());
        raft.snapshot_bytes.set(built.snapshot.len() as f64);
        tracing::info!(
            index = built
                .meta
                .last_log_id
                .as_ref()
                .map(|l| l.index())
                .unwrap_or(0),
            bytes = built.snapshot.len(),
            build_ms = started.elapsed().as_millis() as u64,
            "built a snapshot"
        );
        Ok(built)
    }
}

impl RaftStateMachine<TypeConfig> for StateMachineStore {
    type SnapshotData = Vec<u8>;
    type SnapshotBuilder = Self;

    async fn applied_state(&mut self) -> Result<(Option<LogId>, StoredMembership), io::Error> {
        let m = self.lock()?;
        Ok((m.last_applied, m.membership.clone()))
    }

    async fn apply<Strm>(&mut self, mut entries: Strm) -> Result<(), io::Error>
    where
        Strm: Stream<Item = Result<EntryResponder<TypeConfig>, io::Error>> + Unpin + OptionalSend,
    {
        while let Some((entry, responder)) = entries.try_next().await? {
            let log_id = entry.log_id();
            let index = log_id.index();
            // The entry's effects, for the waiters woken once the machine
            // lock is released (they read the table).
            let mut touched = Vec::new();
            let response = {
                let mut m = self.lock()?;
                m.last_applied = Some(log_id);
                match entry.payload {
                    EntryPayload::Blank => Response::Done,
                    EntryPayload::Membership(mem) => {
                        m.membership = StoredMembership::new(Some(log_id), mem);
                        Response::Done
                    }
                    EntryPayload::Normal(req) => {
                        let mut applied = self.apply_entry(&mut m, &log_id, &req.0);
                        touched = std::mem::take(&mut applied.effects);
                        applied.response
                    }
                }
            };
            self.shared.wakes.wake(&touched);
            self.shared.applied.send_replace(index);
            if let Some(r) = responder {
                r.send(response);
            }
        }
        Ok(())
    }

    async fn get_snapshot_builder(&mut self) -> Self::SnapshotBuilder {
        self.clone()
    }

    async fn install_snapshot(
        &mut self,
        meta: &SnapshotMeta,
        snapshot: Vec<u8>,
    ) -> Result<(), io::Error> {
        // Decoded and stored on tokio's blocking pool (inline on an
        // injected disk): a large table never stalls the runtime.
        let stored_meta = meta.clone();
        let mark = self.db.growth.mark();
        let (table, snapshot_bytes) = self
            .db
            .io(move |db| {
                let table = LockTable::from_snapshot(&snapshot).map_err(io_err)?;
                store_snapshot(&db, &stored_meta, &snapshot)?;
                Ok((table, snapshot.len()))
            })
            .await?;
        self.db.growth.snapshot_taken(mark, snapshot_bytes as u64);
        let index = {
            let mut m = self.lock()?;
            self.shared.max_stamp.observe(table.now_ms());
            self.shared.metrics.load_table(&table);
            self.shared
                .metrics
                .raft
                .snapshot_bytes
                .set(snapshot_bytes as f64);
            m.table = table;
            m.last_applied = meta.last_log_id;
            m.membership = meta.last_membership.clone();
            m.last_applied.as_ref().map(|l| l.index()).unwrap_or(0)
        };
        self.shared.events.reset(index);
        self.shared.wakes.wake_all();
        self.shared.applied.send_replace(index);
        tracing::info!(index, "installed a snapshot from the leader");
        Ok(())
    }

    async fn get_current_snapshot(&mut self) -> Result<Option<Snapshot>, io::Error> {
        let db = self.db.clone();
        let stored = self.db.io(move |_| db.load_snapshot()).await?;
        Ok(stored.map(|s| Snapshot {
            meta: s.meta,
            snapshot: s.data,
        }))
    }
}
