//! The openraft state machine: the replicated lock table and this node's
//! deadline table, applied in memory; snapshots in redb.

use std::io;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::{Stream, TryStreamExt};
use openraft::entry::RaftEntry;
use openraft::storage::{EntryResponder, RaftStateMachine};
use openraft::{EntryPayload, OptionalSend, RaftSnapshotBuilder};
use serde::{Deserialize, Serialize};
use tokio::sync::watch;
use warden_core::deadline::Deadlines;
use warden_core::table::LockTable;
use warden_core::types::{Command, LeaderId, LogEntry, Response};

use super::db::Db;
use super::log_writer::Stamps;
use super::replay::{apply_to_table, replay, Replayed};
use super::snapshot_store::store_snapshot;
use super::{encode, io_err, KEY_SNAPSHOT_DEADLINES};
use crate::clock::NodeClock;
use crate::types::{leader_of, LogId, Snapshot, SnapshotMeta, StoredMembership, TypeConfig};

/// What the state machine holds: the replicated lock table and this node's
/// (non-replicated) deadline table.
#[derive(Debug)]
pub struct Machine {
    /// The replicated lock table.
    pub table: LockTable,
    /// This node's deadlines, filled at apply (docs/semantics.md "Time").
    pub deadlines: Deadlines,
    /// Last applied log id.
    pub last_applied: Option<LogId>,
    /// Last applied membership.
    pub membership: StoredMembership,
    /// Waiters removed because their principal lost `lock` (node-local).
    pub removed_waiters: RemovedWaiters,
    /// Entries at or below this index have no stamp of this node's: the
    /// table this process loaded (its stored snapshot at start, or an
    /// installed one) and entries replayed after a reboot (their append
    /// stamps were taken on another clock epoch). The starts `deadlines`
    /// gives for them are load or apply times, so nothing is timed from
    /// them (`crate::metrics::Ended`), and the hot-lock window skips them.
    pub loaded_through: u64,
    /// The newest log format of an entry applied since this process
    /// started ([`crate::types::entry_log_format`]; 0 before the first),
    /// published on [`Shared::applied_log_format`] when it rises.
    pub applied_log_format: u32,
    /// The last duty-clock advance this node applied (its log index) and
    /// its stamp here: when it reached this node's log, or its apply time
    /// when it has no stamp of this process (never earlier than the
    /// leader's measurement of it). A new leader measures its first advance
    /// from it (docs/semantics.md "Checkpoints"). Node-local.
    pub last_clock_advance: Option<(u64, Duration)>,
    /// The first `PromoteSlice` of the last promotion this node applied:
    /// its leader, log index and stamp here. Every later slice of that
    /// promotion graces and caps from this stamp, as one `Promote` did
    /// (docs/semantics.md "A new leader"); a node that did not apply the
    /// first (it loaded a snapshot taken in between) uses each slice's own
    /// stamp, which is later (never an early expiry). Node-local.
    pub promote_start: Option<(LeaderId, u64, Duration)>,
}

/// Most waiters [`RemovedWaiters`] remembers.
pub const MAX_REMOVED_WAITERS: usize = 4_096;

/// The waiters this node saw removed for a reason their queued acquire's
/// stream answers differently from a timeout (a `WaiterRemoved` effect with
/// `PermissionRevoked`: PermissionDenied; with `Cancelled`, a `CancelWait`:
/// `cancelled`). A waiter gone and not here timed out or lost its lease.
/// Node-local, fed at apply, the last [`MAX_REMOVED_WAITERS`] only (a
/// follower that finds its waiter gone and not here reports it as timed
/// out).
#[derive(Debug, Default)]
pub struct RemovedWaiters {
    order: std::collections::VecDeque<(String, u64, u64)>,
    reasons: std::collections::BTreeMap<(String, u64, u64), warden_core::WaiterRemovedReason>,
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
            }
        }
        debug_assert_eq!(self.order.len(), self.reasons.len());
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
    /// Append stamps.
    pub stamps: Stamps,
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

/// This node's lease deadlines when it built its last snapshot (node-local).
#[derive(Serialize, Deserialize)]
struct SnapshotDeadlines {
    epoch: u64,
    index: u64,
    leases: Vec<(u64, u64)>,
}

/// The openraft state machine over [`Shared`].
#[derive(Clone, Debug)]
pub struct StateMachineStore {
    /// Shared state.
    pub shared: Arc<Shared>,
    pub(super) db: Db,
}

/// The duty clock's last advance in a table this node loaded rather than
/// applied, stamped with the load time `now` (later than its proposer's
/// measurement of it), for [`Machine::last_clock_advance`].
fn loaded_clock_advance(table: &LockTable, now: Duration) -> Option<(u64, Duration)> {
    table.duty_clock().last_advance_index().map(|i| (i, now))
}

impl StateMachineStore {
    /// Opens the state machine: loads the last snapshot from `db`, if any.
    pub fn open(db: Db, clock: Arc<NodeClock>, stamps: Stamps) -> Result<Self, io::Error> {
        Self::open_injected(
            db,
            clock,
            stamps,
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
        stamps: Stamps,
        node_id: u64,
        observer: Option<Arc<dyn crate::sim_hooks::Observer>>,
        bugs: crate::sim_hooks::BugSwitches,
        metrics: Arc<crate::metrics::Metrics>,
    ) -> Result<Self, io::Error> {
        let mut machine = Machine {
            table: LockTable::new(),
            deadlines: Deadlines::default(),
            last_applied: None,
            membership: StoredMembership::default(),
            removed_waiters: RemovedWaiters::default(),
            loaded_through: 0,
            applied_log_format: 0,
            last_clock_advance: None,
            promote_start: None,
        };
        let stored = db.load_snapshot()?;
        let snapshot_len = stored.as_ref().map_or(0, |s| s.data.len() as u64);
        if let Some(snap) = stored {
            machine.table = LockTable::from_snapshot(&snap.data).map_err(io_err)?;
            // A lease loaded without being applied gets now + remaining_ms,
            // unless this node built the snapshot on this clock epoch: then
            // it gets back the exact deadline it had (L2 across restarts).
            machine.deadlines = Deadlines::load(&machine.table, clock.now());
            let index = snap.meta.last_log_id.as_ref().map(|l| l.index());
            if let (Some(epoch), Some(bytes)) =
                (clock.epoch(), db.get_meta(KEY_SNAPSHOT_DEADLINES)?)
            {
                if let Ok(side) = postcard::from_bytes::<SnapshotDeadlines>(&bytes) {
                    if side.epoch == epoch && Some(side.index) == index {
                        for (lease_id, ns) in side.leases {
                            if machine.table.lease(lease_id).is_some() {
                                // Still capped by later clock advances: the
                                // deadline saved may itself have been loaded.
                                machine
                                    .deadlines
                                    .restore_lease_deadline(lease_id, Duration::from_nanos(ns));
                            }
                        }
                    }
                }
            }
            machine.last_applied = snap.meta.last_log_id;
            machine.membership = snap.meta.last_membership.clone();
            // The table's last clock advance was measured before now: a
            // first advance proposed from here may count from this load.
            machine.last_clock_advance = loaded_clock_advance(&machine.table, clock.now());
        }
        let applied_index = machine
            .last_applied
            .as_ref()
            .map(|l| l.index())
            .unwrap_or(0);
        machine.loaded_through = applied_index;
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
                stamps,
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

    /// What a snapshot build records under the machine's lock: the
    /// applied log id, the membership and this node's lease deadlines (one
    /// pass over them), and the log growth mark. The table itself is not
    /// copied (see [`Self::build`]).
    fn view_of(&self, m: &Machine) -> BuildView {
        BuildView {
            meta: SnapshotMeta {
                last_log_id: m.last_applied,
                last_membership: m.membership.clone(),
            },
            side: self.shared.clock.epoch().map(|epoch| SnapshotDeadlines {
                epoch,
                index: m.last_applied.as_ref().map(|l| l.index()).unwrap_or(0),
                leases: {
                    // Sized once: this runs under the lock, once per lease.
                    let mut leases = Vec::with_capacity(m.deadlines.lease_count());
                    leases.extend(
                        m.deadlines
                            .lease_deadlines()
                            .filter_map(|(id, d)| Some((id, u64::try_from(d.as_nanos()).ok()?))),
                    );
                    leases
                },
            }),
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
        let side = view.side;
        let meta = view.meta;
        let built = self
            .db
            .io(move |db| {
                // Encoded here, not on the runtime: one row per lease.
                let side = side.as_ref().map(encode).transpose()?;
                let (meta, data, side) = match replay(&db, &tail, &upto) {
                    Ok(Replayed::Table(data)) => (meta, data, side),
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
                store_snapshot(&db, &meta, &data, side.as_deref())?;
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
        let side = view.side;
        let meta = view.meta;
        let (meta, data) = self
            .db
            .io(move |db| {
                let side = side.as_ref().map(encode).transpose()?;
                // Written with its deadlines in one transaction; a newer
                // stored snapshot (a concurrent install) stays.
                store_snapshot(&db, &meta, &data, side.as_deref())?;
                Ok((meta, data))
            })
            .await?;
        Ok(self.stored(view.growth_mark, meta, data))
    }
}

/// What [`StateMachineStore::build`] records under the machine's lock.
struct BuildView {
    meta: SnapshotMeta,
    side: Option<SnapshotDeadlines>,
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
            let now = self.shared.clock.now();
            let stamp = {
                let mut stamps = self.shared.stamps.lock().map_err(io_err)?;
                // Stamps at or below the applied index are no longer needed;
                // drop them in place (no new map per applied entry).
                while stamps.first_key_value().is_some_and(|(k, _)| *k < index) {
                    stamps.pop_first();
                }
                stamps.remove(&index)
            };
            // Replayed after a restart: the stamp persisted at append, if it
            // was taken on this clock's epoch (same boot); else the apply time,
            // which is later still (never an early expiry).
            let persisted = match (stamp, self.shared.clock.epoch()) {
                (Some(s), _) => Some(s),
                (None, Some(epoch)) => self.db.persisted_stamp(index, epoch)?,
                (None, None) => None,
            };
            // No stamp of this node's (a replay after a reboot): the apply
            // time stands in for deadlines, but nothing is timed from it.
            let guessed = persisted.is_none();
            let stamp = persisted.unwrap_or(now);
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
                        let LogEntry::V1(cmd) = &req.0;
                        let log_leader = leader_of(&log_id);
                        let bugs = self.shared.bugs;
                        let logged = cmd;
                        let mut stamp = stamp;
                        let buggy;
                        let cmd = if bugs == crate::sim_hooks::BugSwitches::default() {
                            cmd
                        } else {
                            if bugs.instant_across_nodes {
                                if let Some(o) = &self.shared.observer {
                                    stamp = o.clock_of(log_leader.node_id).unwrap_or(stamp);
                                }
                            }
                            if bugs.token_is_log_index {
                                m.table.inject_token_is_log_index();
                            }
                            if bugs.skip_lease_owner_check {
                                m.table.inject_skip_lease_owner_check();
                            }
                            if bugs.readers_overtake_writers {
                                m.table.inject_readers_overtake_writers();
                            }
                            buggy =
                                crate::sim_hooks::buggy_command(&bugs, &m.table, log_leader, cmd);
                            &buggy
                        };
                        let mut applied = apply_to_table(&mut m.table, &log_id, cmd);
                        let format = crate::types::entry_log_format(cmd);
                        if format > m.applied_log_format {
                            m.applied_log_format = format;
                            self.shared.applied_log_format.send_replace(format);
                        }
                        // A promotion grace counts from the Promote's stamp
                        // (when it reached this log), not from the apply
                        // time: a node restarted on the same clock epoch
                        // replays its log with the persisted stamps, and a
                        // grace re-based at each replay let a leader that
                        // crash-loops and keeps winning push a dead lease a
                        // second past every restart (L2: gone by r + TTL +
                        // lock-delay + E; tests/cases/crash_loop.rs). The
                        // stamp is no earlier than this leader's election, so
                        // L4's T + G still holds. `on_effect` reads `now`
                        // for `LeaseGraced` only.
                        if guessed {
                            m.loaded_through = m.loaded_through.max(index);
                        }
                        // A promotion in slices graces (and caps) from its
                        // first slice's stamp here, as one `Promote` did.
                        let promote_slice = match cmd {
                            Command::PromoteSlice(p) if p.leader == log_leader => Some(*p),
                            _ => None,
                        };
                        let grace_from = match promote_slice {
                            Some(p) if p.is_first() => {
                                m.promote_start = Some((p.leader, index, stamp));
                                stamp
                            }
                            Some(p) => match m.promote_start {
                                Some((l, i, at)) if l == p.leader && i == p.started_at => at,
                                _ => stamp,
                            },
                            None => stamp,
                        };
                        // One hold of the window's lock per entry.
                        let mut hot = (!guessed && !applied.effects.is_empty())
                            .then(|| self.shared.hot_locks.recorder(stamp));
                        for effect in &applied.effects {
                            // Read before the deadlines forget what it
                            // ends: the start of a hold or a wait.
                            let ended = crate::metrics::Ended::of(
                                effect,
                                &m.deadlines,
                                stamp,
                                m.loaded_through,
                            );
                            self.shared.metrics.on_effect(effect, ended, stamp);
                            if let Some(hot) = &mut hot {
                                hot.effect(effect, ended.waited);
                            }
                            m.deadlines.on_effect(effect, stamp, grace_from);
                            if let warden_core::Effect::WaiterRemoved {
                                resource,
                                lease_id,
                                enqueue_index,
                                reason,
                            } = effect
                            {
                                // Only the reasons a waiter's stream answers
                                // differently from a timeout are kept.
                                if matches!(
                                    reason,
                                    warden_core::WaiterRemovedReason::PermissionRevoked
                                        | warden_core::WaiterRemovedReason::Cancelled
                                ) {
                                    m.removed_waiters.record(
                                        resource,
                                        *lease_id,
                                        *enqueue_index,
                                        *reason,
                                    );
                                }
                            }
                        }
                        drop(hot);
                        if guessed {
                            // Stamped with its apply time, after a reboot:
                            // as late as a loaded deadline, capped as one.
                            m.deadlines.mark_loaded(&applied.effects);
                        }
                        if matches!(cmd, Command::Promote(p) if p.leader == log_leader) {
                            // A new term: every deadline this node set late
                            // (it lagged, or replayed after a reboot) is
                            // capped at what the duty clock derives, before
                            // its first duty if it is the new leader (L2).
                            let m = &mut *m;
                            m.deadlines.cap_all(&m.table, stamp);
                        }
                        if let Some(p) = promote_slice.filter(|p| p.start(index) <= index) {
                            let graced = applied
                                .effects
                                .iter()
                                .filter_map(|e| match e {
                                    warden_core::Effect::LeaseGraced { lease_id, .. } => {
                                        Some(*lease_id)
                                    }
                                    _ => None,
                                })
                                .collect();
                            let m = &mut *m;
                            m.deadlines
                                .cap_promote_slice(&m.table, grace_from, &p, index, &graced);
                        }
                        if let Some(advance) = applied.effects.iter().find_map(|e| match e {
                            warden_core::Effect::ClockAdvanced { index } => Some(*index),
                            _ => None,
                        }) {
                            // Deadlines this node loaded (not applied) are
                            // capped at what the clock derives now.
                            let m = &mut *m;
                            m.deadlines.on_clock_advanced(&m.table, stamp);
                            m.last_clock_advance = Some((advance, stamp));
                        }
                        // After the whole promotion's caps (its last slice).
                        let election = matches!(cmd, Command::Promote(_))
                            || matches!(cmd, Command::PromoteSlice(p) if p.to_lease.is_none());
                        if bugs.full_ttl_reset_at_election && election {
                            let m = &mut *m;
                            crate::sim_hooks::reset_full_ttls(&m.table, &mut m.deadlines, now);
                        }
                        self.shared.metrics.after_entry(&m.table);
                        self.shared.events.record(index, &applied.effects);
                        if let Some(o) = &self.shared.observer {
                            o.on_apply(
                                self.shared.node_id,
                                index,
                                log_leader,
                                cmd,
                                logged,
                                &applied,
                                &m.table,
                                &m.deadlines,
                                stamp,
                                now,
                            );
                        }
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
                store_snapshot(&db, &stored_meta, &snapshot, None)?;
                Ok((table, snapshot.len()))
            })
            .await?;
        self.db.growth.snapshot_taken(mark, snapshot_bytes as u64);
        let index = {
            let mut m = self.lock()?;
            m.deadlines = Deadlines::load(&table, self.shared.clock.now());
            m.last_clock_advance = loaded_clock_advance(&table, self.shared.clock.now());
            m.loaded_through = meta.last_log_id.as_ref().map(|l| l.index()).unwrap_or(0);
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

#[cfg(test)]
mod tests {
    //! Each test names the property it defends.

    use std::time::Duration;

    use openraft::storage::{IOFlushed, RaftLogStorage};
    use openraft::RaftLogReader;
    use warden_core::types::Command;

    use super::*;
    use crate::store::test_support::*;

    // S4 / "Time": an entry's lease countdown starts at its local append
    // stamp; a snapshot loaded on restart gives each lease now + remaining_ms
    // (never an earlier deadline), and snapshot bytes round-trip exactly.
    #[tokio::test]
    async fn stamps_start_countdowns_and_snapshots_reload() {
        let dir = tempfile::tempdir().expect("tempdir");
        let clock = Arc::new(FixedClock::default());
        *clock.0.lock().expect("clock") = Duration::from_secs(100);
        let snapshot_bytes = {
            let (mut log, mut sm) = stores(dir.path(), clock.clone());
            log.append([entry(1, 1, grant(1, 10_000))], IOFlushed::noop())
                .await
                .expect("append");
            // Applied 3 s after it reached the log: the deadline still counts
            // from the append (100 s + 10 s).
            *clock.0.lock().expect("clock") = Duration::from_secs(103);
            let e = log.try_get_log_entries(1..2).await.expect("read");
            apply_entries(&mut sm, e).await;
            {
                let m = sm.shared.machine.lock().expect("machine");
                assert_eq!(
                    m.deadlines.lease_deadline(1),
                    Some(Duration::from_secs(110))
                );
                assert_eq!(m.last_applied, Some(log_id(1, 1)));
            }
            assert_eq!(*sm.shared.applied.borrow(), 1);
            let snap = sm.build().await.expect("build snapshot");
            assert_eq!(snap.meta.last_log_id, Some(log_id(1, 1)));
            snap.snapshot
        };
        // Restart 50 s later: the lease gets now + remaining_ms (10 s).
        *clock.0.lock().expect("clock") = Duration::from_secs(153);
        let (_, mut sm) = stores(dir.path(), clock);
        let (applied, _) = sm.applied_state().await.expect("applied");
        assert_eq!(applied, Some(log_id(1, 1)));
        let current = sm
            .get_current_snapshot()
            .await
            .expect("snapshot")
            .expect("some");
        assert_eq!(current.snapshot, snapshot_bytes);
        let m = sm.shared.machine.lock().expect("machine");
        assert_eq!(
            m.deadlines.lease_deadline(1),
            Some(Duration::from_secs(163))
        );
        assert_eq!(m.table.to_snapshot(), snapshot_bytes);
    }

    // L2 across crash-restarts (tests/cases/crash_loop.rs): a promotion
    // grace counts from the Promote's stamp, so replaying the Promote after a
    // restart on the same epoch does not grant the grace again from the replay
    // time (a crash-looping leader kept a dead lease a second past each restart).
    #[tokio::test]
    async fn replayed_promote_does_not_restart_the_grace() {
        let dir = tempfile::tempdir().expect("tempdir");
        let open = |clock: Arc<EpochClock>| open_stores(dir.path(), clock);
        let promote = promote(2, 1_000);
        let clock = Arc::new(EpochClock::default());
        *clock.0.lock().expect("clock") = Duration::from_secs(100);
        {
            let (mut log, mut sm) = open(clock.clone());
            log.append([entry(1, 1, grant(1, 2_000))], IOFlushed::noop())
                .await
                .expect("append");
            *clock.0.lock().expect("clock") = Duration::from_millis(101_500);
            log.append([entry(2, 2, promote)], IOFlushed::noop())
                .await
                .expect("append");
            let e = log.try_get_log_entries(1..3).await.expect("read");
            apply_entries(&mut sm, e).await;
            let m = sm.shared.machine.lock().expect("machine");
            assert_eq!(
                m.deadlines.lease_deadline(1),
                Some(Duration::from_millis(102_500))
            );
        }
        // Restarted 8.5 s later on the same boot: the replay keeps 102.5 s.
        let clock2 = Arc::new(EpochClock::default());
        *clock2.0.lock().expect("clock") = Duration::from_secs(110);
        let (mut log, mut sm) = open(clock2);
        let e = log.try_get_log_entries(1..3).await.expect("read");
        assert_eq!(e.len(), 2);
        apply_entries(&mut sm, e).await;
        let m = sm.shared.machine.lock().expect("machine");
        assert_eq!(
            m.deadlines.lease_deadline(1),
            Some(Duration::from_millis(102_500))
        );
    }

    // L2 (docs/semantics.md "Checkpoints"): a node that applied a renew late
    // (it lagged: its stamp, and so its deadline, is 50 s after the
    // leader's) caps every deadline at what the duty clock derives when a
    // Promote applies, as the named checkpoints it no longer gets used to.
    #[tokio::test]
    async fn a_promote_caps_a_late_deadline_at_what_the_clock_derives() {
        let dir = tempfile::tempdir().expect("tempdir");
        let clock = Arc::new(FixedClock::default());
        *clock.0.lock().expect("clock") = Duration::from_secs(150);
        let (mut log, mut sm) = stores(dir.path(), clock.clone());
        let promote = promote(2, 1_000);
        log.append(
            [
                entry(1, 1, grant(1, 60_000)),
                entry(1, 2, advance(None, 0)),
                entry(1, 3, advance(Some(2), 10_000)),
                entry(1, 4, advance(Some(3), 40_000)),
            ],
            IOFlushed::noop(),
        )
        .await
        .expect("append");
        let e = log.try_get_log_entries(1..5).await.expect("read");
        apply_entries(&mut sm, e).await;
        {
            let m = sm.shared.machine.lock().expect("machine");
            assert_eq!(
                m.deadlines.lease_deadline(1),
                Some(Duration::from_secs(210))
            );
            assert_eq!(m.last_clock_advance, Some((4, Duration::from_secs(150))));
        }
        *clock.0.lock().expect("clock") = Duration::from_secs(151);
        log.append([entry(2, 5, promote)], IOFlushed::noop())
            .await
            .expect("append");
        let e = log.try_get_log_entries(5..6).await.expect("read");
        apply_entries(&mut sm, e).await;
        // From index 1 the second advance is index 3: 40 s since, 20 s left.
        let m = sm.shared.machine.lock().expect("machine");
        assert_eq!(
            m.deadlines.lease_deadline(1),
            Some(Duration::from_secs(171))
        );
    }

    // L4 and L2 with a promotion in slices (docs/semantics.md "A new
    // leader"): every slice graces and caps from this node's stamp of the
    // first slice, as one Promote did, so a slice applied later gives no
    // more than G from the start; and a lease renewed after the start keeps
    // the deadline its renew set (capping it from the earlier start stamp
    // would end it a second early, S4).
    #[tokio::test]
    async fn promotion_slices_grace_from_the_first_slice_and_leave_a_renewed_lease() {
        use warden_core::types::{LeaderId, PromoteSlice, RenewBatch};
        let dir = tempfile::tempdir().expect("tempdir");
        let clock = Arc::new(FixedClock::default());
        let set = |ms: u64| *clock.0.lock().expect("clock") = Duration::from_millis(ms);
        set(150_000);
        let (mut log, mut sm) = stores(dir.path(), clock.clone());
        let l2 = LeaderId {
            term: 2,
            node_id: 1,
        };
        let slice = |started_at, from_lease, to_lease| {
            Command::PromoteSlice(PromoteSlice {
                leader: l2,
                grace_ms: 1_000,
                started_at,
                from_lease,
                to_lease,
            })
        };
        let shared = Arc::clone(&sm.shared);
        let mut apply = async |index: u64, term: u64, cmd: Command| {
            log.append([entry(term, index, cmd)], IOFlushed::noop())
                .await
                .expect("append");
            let e = log
                .try_get_log_entries(index..index + 1)
                .await
                .expect("read");
            apply_entries(&mut sm, e).await;
        };
        // Leases 1 to 4 (TTL 60 s, 60 s, 1 s, 60 s) stamped at 150 s; the
        // clock then counts 40 s since the second advance after them.
        apply(1, 1, grant(1, 60_000)).await;
        apply(2, 1, grant(2, 60_000)).await;
        apply(3, 1, grant(3, 1_000)).await;
        apply(4, 1, grant(4, 60_000)).await;
        apply(5, 1, advance(None, 0)).await;
        apply(6, 1, advance(Some(5), 10_000)).await;
        apply(7, 1, advance(Some(6), 40_000)).await;
        set(151_000);
        apply(8, 2, slice(0, 0, Some(2))).await;
        set(152_000);
        apply(9, 2, Command::RenewBatch(RenewBatch { lease_ids: vec![2] })).await;
        set(153_500);
        {
            let m = shared.machine.lock().expect("machine");
            assert_eq!(m.table.last_promote(), None, "the promotion is not over");
        }
        apply(10, 2, slice(8, 2, None)).await;
        let m = shared.machine.lock().expect("machine");
        // Lease 1 (first slice): capped at 151 s + the 20 s the clock leaves.
        assert_eq!(
            m.deadlines.lease_deadline(1),
            Some(Duration::from_secs(171))
        );
        // Lease 2, renewed at 152 s after the start: 152 s + 60 s, untouched.
        assert_eq!(
            m.deadlines.lease_deadline(2),
            Some(Duration::from_secs(212))
        );
        assert!(!m.table.lease(2).expect("lease 2").graced);
        // Lease 3 (run out by the clock), graced by the last slice: G from
        // the first slice's stamp (152 s), not from its own (154.5 s).
        assert_eq!(
            m.deadlines.lease_deadline(3),
            Some(Duration::from_secs(152))
        );

        let lease3 = m.table.lease(3).expect("lease 3");
        assert_eq!((lease3.graced, lease3.last_index), (true, 10));
        // Lease 4 (last slice): capped, as lease 1, at 151 s + 20 s.
        assert_eq!(
            m.deadlines.lease_deadline(4),
            Some(Duration::from_secs(171))
        );
        assert_eq!(m.table.last_promote(), Some((l2, 10)));
    }

    // L2 across crash-restarts (etcd issue 9395 through restarts): a node
    // restarted on the same clock epoch replays its log with the stamps it
    // persisted and reloads its own snapshot with the deadlines it had, so its
    // downtime does not lengthen a lease.
    #[tokio::test]
    async fn restart_on_the_same_epoch_keeps_deadlines() {
        let dir = tempfile::tempdir().expect("tempdir");
        let open = |clock: Arc<EpochClock>| open_stores(dir.path(), clock);
        let clock = Arc::new(EpochClock::default());
        *clock.0.lock().expect("clock") = Duration::from_secs(100);
        {
            let (mut log, mut sm) = open(clock.clone());
            log.append([entry(1, 1, grant(1, 10_000))], IOFlushed::noop())
                .await
                .expect("append");
            let e = log.try_get_log_entries(1..2).await.expect("read");
            apply_entries(&mut sm, e).await;
            // A snapshot at index 1, then lease 2 granted at 104 s (log only).
            sm.build().await.expect("snapshot");
            *clock.0.lock().expect("clock") = Duration::from_secs(104);
            log.append([entry(1, 2, grant(2, 10_000))], IOFlushed::noop())
                .await
                .expect("append");
        }
        // The process restarts 30 s later on the same boot and replays entry 2.
        let clock2 = Arc::new(EpochClock::default());
        *clock2.0.lock().expect("clock") = Duration::from_secs(134);
        let (mut log, mut sm) = open(clock2);
        let e = log.try_get_log_entries(2..3).await.expect("read");
        apply_entries(&mut sm, e).await;
        let m = sm.shared.machine.lock().expect("machine");
        // Lease 1 from the snapshot's sidecar, lease 2 from its persisted stamp:
        // both already due, not now + TTL.
        assert_eq!(
            m.deadlines.lease_deadline(1),
            Some(Duration::from_secs(110))
        );
        assert_eq!(
            m.deadlines.lease_deadline(2),
            Some(Duration::from_secs(114))
        );
    }

    // Metrics ("a sample whose start came from a snapshot or a restart is
    // skipped, not guessed"): after a reboot (no stamp of this epoch) the
    // replayed entries stand on the apply time, so a hold that started in
    // the replay is not timed, while one started after it is.
    #[tokio::test]
    async fn holds_started_in_a_replay_after_a_reboot_are_not_timed() {
        use warden_core::types::{Acquire, LeaseSpec, Release};
        let dir = tempfile::tempdir().expect("tempdir");
        let header = |request_id| warden_core::types::RequestHeader {
            client_id: 5,
            request_id,
            acked_request_id: 0,
        };
        let acquire = |request_id, resource: &str| {
            Command::Acquire(Acquire {
                header: header(request_id),
                resource: resource.into(),
                lease: LeaseSpec::New { ttl_ms: 60_000 },
                wait_timeout_ms: 0,
                lock_delay_ms: 0,
                due: None,
            })
        };
        let release = |request_id, resource: &str, lease_id| {
            Command::Release(Release {
                header: header(request_id),
                resource: Some(resource.into()),
                lease_id,
                fencing_token: None,
                due: None,
            })
        };
        let clock = Arc::new(FixedClock::default());
        *clock.0.lock().expect("clock") = Duration::from_secs(100);
        {
            let (mut log, _) = stores(dir.path(), clock.clone());
            log.append([entry(1, 1, acquire(1, "before"))], IOFlushed::noop())
                .await
                .expect("append");
        }
        // Another boot: no epoch, the entry's stamp is gone.
        *clock.0.lock().expect("clock") = Duration::from_secs(500);
        let (mut log, mut sm) = stores(dir.path(), clock.clone());
        let e = log.try_get_log_entries(1..2).await.expect("read");
        apply_entries(&mut sm, e).await;
        *clock.0.lock().expect("clock") = Duration::from_secs(510);
        log.append(
            [
                entry(2, 2, acquire(2, "after")),
                entry(2, 3, release(3, "before", 1)),
            ],
            IOFlushed::noop(),
        )
        .await
        .expect("append");
        *clock.0.lock().expect("clock") = Duration::from_secs(513);
        log.append([entry(2, 4, release(4, "after", 2))], IOFlushed::noop())
            .await
            .expect("append");
        let e = log.try_get_log_entries(2..5).await.expect("read");
        apply_entries(&mut sm, e).await;
        let text = sm.shared.metrics.render();
        let value = |series: &str| {
            text.lines()
                .find_map(|l| {
                    l.strip_prefix(series)?
                        .strip_prefix(' ')?
                        .parse::<f64>()
                        .ok()
                })
                .unwrap_or_else(|| panic!("{series} in {text}"))
        };
        assert_eq!(
            value(r#"warden_lock_frees_total{group="other",reason="release"}"#),
            2.0
        );
        // Only "after" (510 s → 513 s) is timed; "before" started in the replay.
        assert_eq!(
            value(r#"warden_hold_duration_seconds_count{group="other"}"#),
            1.0
        );
        assert_eq!(
            value(r#"warden_hold_duration_seconds_sum{group="other"}"#),
            3.0
        );
    }
}
