//! Durable storage: the Raft log (a write-ahead file folded into redb) and
//! vote in redb, and the in-memory state machine (the lock table plus this
//! node's deadline table).
//!
//! What is on disk when each method returns:
//! - [`LogStore`] `append`: returns once the entries are readable (an
//!   in-memory tail) and queued for the log-writer thread, which writes every
//!   queued append as one record of the log's write-ahead file and fsyncs it
//!   (one `write` and one `fdatasync` per group: group commit, see
//!   [`crate::wal`]) and only then fires each IO callback, so Raft never
//!   counts this node towards a quorum for an entry it could lose (S3). Every
//!   4 MiB of records the file is folded into redb in one transaction and
//!   starts over; opening the data dir folds whatever it holds. A write error
//!   reaches openraft through the callback and is fatal for the node. On an
//!   injected disk (the simulator) the write is committed inline before
//!   `append` returns, on a write-ahead file of the injected disk.
//! - `save_vote`, `truncate_after`, `purge`: committed (fsync'd) before
//!   returning (truncate and purge through the writer's queue, in order:
//!   the write-ahead file is folded first, then they run in redb, so the
//!   file only ever holds appends).
//! - `save_committed`: written without an fsync (see the method).
//! - [`StateMachineStore`] keeps the table in memory; applying needs no fsync.
//!   Snapshots are written to redb (fsync'd) when built or installed; on start
//!   the last one is loaded and openraft re-applies the committed log after it.
//!
//! Each entry is stamped with this node's clock when it reaches the local log
//! (kept in memory, and persisted with the clock's epoch beside the entry):
//! apply uses it as the start of a lease's countdown (SEMANTICS "Time"). An
//! entry replayed after a restart on the same epoch gets its persisted stamp;
//! one with no usable stamp uses the apply time, which is later still.

use std::collections::BTreeMap;
use std::fmt::Debug;
use std::io;
use std::ops::RangeBounds;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::{Stream, TryStreamExt};
use openraft::entry::RaftEntry;
use openraft::storage::{EntryResponder, IOFlushed, RaftLogStorage, RaftStateMachine};
use openraft::{EntryPayload, LogState, OptionalSend, RaftLogReader, RaftSnapshotBuilder};
use redb::{Database, ReadableDatabase, ReadableTable, TableDefinition};
use serde::{Deserialize, Serialize};
use tokio::sync::watch;
use warden_core::deadline::Deadlines;
use warden_core::table::LockTable;
use warden_core::types::{Command, LogEntry, Response};

use crate::clock::Clock;
use crate::raft_types::{
    leader_of, Entry, LogId, Snapshot, SnapshotMeta, StoredMembership, TypeConfig, Vote,
};
use crate::wal::{self, Wal};

/// Log index → one row: the entry's append stamp, then the entry (see
/// [`encode_row`]). The stamp is the node clock's epoch and the time the
/// entry reached this node's log (ns), so a process restarted on the same
/// clock epoch (same boot) replays its log with the stamps it had, not with
/// "now" (L2 across crash-restarts). Node-local. One row per entry, so an
/// append writes one B-tree, not two (docs/performance.md).
const LOG: TableDefinition<u64, &[u8]> = TableDefinition::new("raft_log_v2");
const META: TableDefinition<&str, &[u8]> = TableDefinition::new("meta");
/// The log before the stamp moved into the row: postcard entries only.
/// Migrated into [`LOG`] when a data dir is opened.
const OLD_LOG: TableDefinition<u64, &[u8]> = TableDefinition::new("raft_log");
/// The stamps before they moved into the row (16 bytes: epoch, ns).
const OLD_STAMPS: TableDefinition<u64, &[u8]> = TableDefinition::new("append_stamps");
/// Node-local lease deadlines at the last snapshot built here, with the clock
/// epoch they were taken on.
const KEY_SNAPSHOT_DEADLINES: &str = "snapshot_deadlines";

const KEY_VOTE: &str = "vote";
const KEY_COMMITTED: &str = "committed";
const KEY_PURGED: &str = "last_purged";
const KEY_SNAPSHOT: &str = "snapshot";
/// The node id this data dir belongs to.
pub const KEY_NODE_ID: &str = "node_id";
/// The committed cluster id (SEMANTICS "Membership").
pub const KEY_CLUSTER_ID: &str = "cluster_id";
/// A cluster id proposed in bootstrap phase 1, not yet committed.
pub const KEY_PREPARED_CLUSTER_ID: &str = "prepared_cluster_id";

fn io_err(e: impl std::fmt::Display) -> io::Error {
    io::Error::other(e.to_string())
}

fn encode<T: Serialize>(v: &T) -> Result<Vec<u8>, io::Error> {
    postcard::to_allocvec(v).map_err(io_err)
}

fn decode<'a, T: Deserialize<'a>>(b: &'a [u8]) -> Result<T, io::Error> {
    postcard::from_bytes(b).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e.to_string()))
}

/// The node's redb database (one file in the data dir).
#[derive(Clone, Debug)]
pub struct Db {
    db: Arc<Database>,
    /// True on an injected disk (the simulator's memory): IO runs inline
    /// instead of on tokio's blocking pool, whose threads the simulation
    /// does not schedule.
    inline_io: bool,
    /// The log's write-ahead file, recovered (folded into redb) when the
    /// database was opened; [`LogStore::new`] takes it.
    wal: Arc<Mutex<Option<Wal>>>,
}

impl Db {
    /// Opens or creates `DIR/warden.redb`.
    pub fn open(data_dir: &Path) -> Result<Db, io::Error> {
        Self::open_on(data_dir, None)
    }

    /// Opens or creates the database of `data_dir` on an injected disk, or
    /// (None) in the file `DIR/warden.redb`.
    pub fn open_on(
        data_dir: &Path,
        disk: Option<&dyn crate::inject::DiskFactory>,
    ) -> Result<Db, io::Error> {
        let db = match disk {
            Some(disk) => redb::Builder::new()
                .create_with_backend(DiskBackend(disk.open(data_dir)))
                .map_err(io_err)?,
            None => {
                std::fs::create_dir_all(data_dir)?;
                Database::create(data_dir.join("warden.redb")).map_err(|e| match e {
                    // Typed, so a caller can say why (`snapshot restore`).
                    redb::DatabaseError::DatabaseAlreadyOpen => io::Error::new(
                        io::ErrorKind::ResourceBusy,
                        "in use by a running node (its database is locked)",
                    ),
                    e => io_err(e),
                })?
            }
        };
        let tx = db.begin_write().map_err(io_err)?;
        // A database without its tables was created just now.
        let created = !tx
            .list_tables()
            .map_err(io_err)?
            .any(|t| redb::TableHandle::name(&t) == redb::TableHandle::name(&META));
        let wal_path = data_dir.join(WAL_FILE);
        let file = match disk {
            Some(disk) => disk.open(&wal_path),
            None => wal::open_file(&wal_path)?,
        };
        let (mut wal, recovered) = Wal::open(file)?;
        if created && !recovered.rows.is_empty() {
            // The write-ahead file outlived its database (warden.redb was
            // removed, not the whole data dir): its entries without the vote
            // and log before them would pass for a node's state (found in
            // review). Nothing is written (the transaction is dropped).
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "{} holds Raft log entries but {} is new: the write-ahead file belongs \
                     to a database that is gone; remove the whole data dir (and add the \
                     node back) or put the database back",
                    wal_path.display(),
                    data_dir.join("warden.redb").display()
                ),
            ));
        }
        {
            let mut log = tx.open_table(LOG).map_err(io_err)?;
            tx.open_table(META).map_err(io_err)?;
            migrate_old_log(&tx, &mut log)?;
        }
        tx.commit().map_err(io_err)?;
        // The write-ahead file: what it holds goes into redb now, so every
        // reader of the database sees the whole log, then it starts over.
        fold_rows(&db, &recovered.rows, recovered.committed.as_deref())?;
        wal.reset()?;
        if disk.is_none() {
            // Only a speed-up: a node on a disk with less room than this
            // still starts (found in review: it exited with ENOSPC).
            if let Err(e) = wal.preallocate(WAL_PREALLOC_BYTES) {
                tracing::warn!(
                    "{}: cannot preallocate {WAL_PREALLOC_BYTES} bytes ({e}); it grows as needed",
                    wal_path.display()
                );
            }
        }
        Ok(Db {
            db: Arc::new(db),
            inline_io: disk.is_some(),
            wal: Arc::new(Mutex::new(Some(wal))),
        })
    }

    /// Runs `f` (redb IO) on tokio's blocking pool, or inline on an injected disk.
    async fn io<T: Send + 'static>(
        &self,
        f: impl FnOnce(Arc<Database>) -> Result<T, io::Error> + Send + 'static,
    ) -> Result<T, io::Error> {
        let db = self.db.clone();
        if self.inline_io {
            return f(db);
        }
        tokio::task::spawn_blocking(move || f(db))
            .await
            .map_err(io_err)?
    }

    /// Reads one meta value.
    pub fn get_meta(&self, key: &str) -> Result<Option<Vec<u8>>, io::Error> {
        let tx = self.db.begin_read().map_err(io_err)?;
        let t = tx.open_table(META).map_err(io_err)?;
        Ok(t.get(key).map_err(io_err)?.map(|v| v.value().to_vec()))
    }

    /// Writes one meta value durably (fsync'd when this returns).
    pub fn put_meta(&self, key: &str, value: &[u8]) -> Result<(), io::Error> {
        let tx = self.db.begin_write().map_err(io_err)?;
        {
            let mut t = tx.open_table(META).map_err(io_err)?;
            t.insert(key, value).map_err(io_err)?;
        }
        tx.commit().map_err(io_err)
    }

    /// Writes one meta value without an fsync: it is durable once a later
    /// fsync'd commit of this database returns (redb `Durability::None`).
    pub fn put_meta_lazy(&self, key: &str, value: &[u8]) -> Result<(), io::Error> {
        let mut tx = self.db.begin_write().map_err(io_err)?;
        tx.set_durability(redb::Durability::None).map_err(io_err)?;
        {
            let mut t = tx.open_table(META).map_err(io_err)?;
            t.insert(key, value).map_err(io_err)?;
        }
        tx.commit().map_err(io_err)
    }

    /// A meta value as a UTF-8 string.
    pub fn get_meta_string(&self, key: &str) -> Result<Option<String>, io::Error> {
        Ok(self
            .get_meta(key)?
            .map(|v| String::from_utf8_lossy(&v).into_owned()))
    }

    /// The append stamp persisted for `index`, if it was taken on `epoch`.
    pub fn persisted_stamp(&self, index: u64, epoch: u64) -> Result<Option<Duration>, io::Error> {
        let tx = self.db.begin_read().map_err(io_err)?;
        let t = tx.open_table(LOG).map_err(io_err)?;
        let Some(v) = t.get(index).map_err(io_err)? else {
            return Ok(None);
        };
        let (stamp, _) = decode_row(v.value())?;
        Ok(stamp
            .filter(|(e, _)| *e == epoch)
            .map(|(_, ns)| Duration::from_nanos(ns)))
    }

    /// True when this data dir holds no Raft state (no vote, no log, no snapshot).
    pub fn raft_state_is_empty(&self) -> Result<bool, io::Error> {
        let tx = self.db.begin_read().map_err(io_err)?;
        let meta = tx.open_table(META).map_err(io_err)?;
        let log = tx.open_table(LOG).map_err(io_err)?;
        let has_vote = meta.get(KEY_VOTE).map_err(io_err)?.is_some();
        let has_snapshot = meta.get(KEY_SNAPSHOT).map_err(io_err)?.is_some();
        let has_log = log.first().map_err(io_err)?.is_some();
        Ok(!(has_vote || has_snapshot || has_log))
    }
}

impl Db {
    /// Seeds an empty data dir with a snapshot and a vote, in one fsync'd
    /// transaction (`warden snapshot restore`, see [`crate::backup`]).
    pub fn seed_snapshot(
        &self,
        meta: &SnapshotMeta,
        data: Vec<u8>,
        vote: &Vote,
    ) -> Result<(), io::Error> {
        let stored = encode(&StoredSnapshot {
            meta: meta.clone(),
            data,
        })?;
        let vote = encode(vote)?;
        let tx = self.db.begin_write().map_err(io_err)?;
        {
            let mut t = tx.open_table(META).map_err(io_err)?;
            t.insert(KEY_SNAPSHOT, stored.as_slice()).map_err(io_err)?;
            t.insert(KEY_VOTE, vote.as_slice()).map_err(io_err)?;
        }
        tx.commit().map_err(io_err)
    }
}

/// An injected disk as a redb backend.
#[derive(Debug)]
struct DiskBackend(Box<dyn redb::StorageBackend>);

impl redb::StorageBackend for DiskBackend {
    fn len(&self) -> Result<u64, io::Error> {
        self.0.len()
    }
    fn read(&self, offset: u64, out: &mut [u8]) -> Result<(), io::Error> {
        self.0.read(offset, out)
    }
    fn set_len(&self, len: u64) -> Result<(), io::Error> {
        self.0.set_len(len)
    }
    fn sync_data(&self) -> Result<(), io::Error> {
        self.0.sync_data()
    }
    fn write(&self, offset: u64, data: &[u8]) -> Result<(), io::Error> {
        self.0.write(offset, data)
    }
    fn close(&self) -> Result<(), io::Error> {
        self.0.close()
    }
}

fn encode_stamp(epoch: u64, stamp: Duration) -> [u8; 16] {
    let ns = u64::try_from(stamp.as_nanos()).unwrap_or(u64::MAX);
    let mut b = [0u8; 16];
    b[..8].copy_from_slice(&epoch.to_be_bytes());
    b[8..].copy_from_slice(&ns.to_be_bytes());
    b
}

fn decode_stamp(b: &[u8]) -> Option<(u64, u64)> {
    let epoch = u64::from_be_bytes(b.get(..8)?.try_into().ok()?);
    let ns = u64::from_be_bytes(b.get(8..16)?.try_into().ok()?);
    Some((epoch, ns))
}

/// A log row: one tag byte (0: no stamp; 1: a 16-byte stamp follows, see
/// [`encode_stamp`]), then the postcard-encoded entry.
fn encode_row(stamp: Option<&[u8; 16]>, entry: &Entry) -> Result<Vec<u8>, io::Error> {
    postcard::to_extend(entry, row_head(stamp, 64)).map_err(io_err)
}

/// The start of a log row, before the entry: the tag byte and the stamp.
fn row_head(stamp: Option<&[u8; 16]>, entry_len: usize) -> Vec<u8> {
    let mut row = Vec::with_capacity(17 + entry_len);
    match stamp {
        Some(p) => {
            row.push(1);
            row.extend_from_slice(p);
        }
        None => row.push(0),
    }
    row
}

/// A persisted append stamp: the clock's epoch and the stamp in ns.
type PersistedStamp = (u64, u64);

/// Splits a log row into its stamp, if any, and the encoded entry.
fn decode_row(row: &[u8]) -> Result<(Option<PersistedStamp>, &[u8]), io::Error> {
    let bad = || io::Error::new(io::ErrorKind::InvalidData, "log row: bad stamp tag");
    match row.split_first() {
        Some((0, rest)) => Ok((None, rest)),
        Some((1, rest)) if rest.len() >= 16 => Ok((decode_stamp(rest), &rest[16..])),
        _ => Err(bad()),
    }
}

/// Decodes the entry of a log row.
fn decode_row_entry(row: &[u8]) -> Result<Entry, io::Error> {
    decode(decode_row(row)?.1)
}

/// Moves a log written before the stamp moved into the row (tables
/// `raft_log` + `append_stamps`) into [`LOG`], in the transaction that opens
/// the data dir, and deletes the old tables. Nothing to do (and nothing
/// written) once they are gone.
fn migrate_old_log(
    tx: &redb::WriteTransaction,
    log: &mut redb::Table<'_, u64, &[u8]>,
) -> Result<(), io::Error> {
    let has_old = tx
        .list_tables()
        .map_err(io_err)?
        .any(|t| redb::TableHandle::name(&t) == redb::TableHandle::name(&OLD_LOG));
    if !has_old {
        return Ok(());
    }
    {
        let old = tx.open_table(OLD_LOG).map_err(io_err)?;
        let stamps = tx.open_table(OLD_STAMPS).map_err(io_err)?;
        for item in old.iter().map_err(io_err)? {
            let (k, v) = item.map_err(io_err)?;
            let index = k.value();
            let stamp: Option<[u8; 16]> = stamps
                .get(index)
                .map_err(io_err)?
                .and_then(|s| s.value().try_into().ok());
            let mut row = row_head(stamp.as_ref(), v.value().len());
            row.extend_from_slice(v.value());
            log.insert(index, row.as_slice()).map_err(io_err)?;
        }
    }
    tx.delete_table(OLD_LOG).map_err(io_err)?;
    tx.delete_table(OLD_STAMPS).map_err(io_err)?;
    Ok(())
}

/// Local append stamps: log index → this node's clock when the entry reached
/// the local log. Memory only; shared between the log store and the state machine.
pub type Stamps = Arc<Mutex<BTreeMap<u64, Duration>>>;

/// Most entries [`LogStore`] keeps in memory after they are on disk (the
/// tail replication reads from without touching redb).
const TAIL_MAX_ENTRIES: usize = 4_096;

/// Most queued writes the log writer commits in one group.
const MAX_WRITES_PER_COMMIT: usize = 1_024;

/// The log's write-ahead file in the data dir (see [`crate::wal`]).
pub const WAL_FILE: &str = "raft-log.wal";
/// Fold the write-ahead file into redb once its records pass this size.
const WAL_FOLD_BYTES: u64 = 4 << 20;
/// The write-ahead file is grown to this size with zeros when opened (twice
/// the fold size: a group that starts below it may run past it), so appends
/// overwrite written blocks and `fdatasync` writes no metadata.
const WAL_PREALLOC_BYTES: u64 = 2 * WAL_FOLD_BYTES;
/// The fold size on an injected disk (the simulator): small, so crashes land
/// around folds too.
const SIM_WAL_FOLD_BYTES: u64 = 16 << 10;

/// The newest log entries, in memory: every entry not yet in redb (queued,
/// or only in the write-ahead file) and up to [`TAIL_MAX_ENTRIES`] that are.
/// A contiguous suffix of the log, so every entry below its first index is in
/// redb (or purged).
#[derive(Debug, Default)]
struct Tail {
    entries: BTreeMap<u64, Entry>,
    /// Highest index the writer has committed to disk (lowered by a truncate).
    flushed: u64,
    /// The newest committed log id from `save_committed` (encoded), for
    /// `read_committed`; the writer gets its own copy through the queue.
    committed: Option<Vec<u8>>,
}

/// One write for the log writer, applied in queue order.
enum LogWrite {
    /// Log rows (index, row: the persisted append stamp and the entry).
    Append {
        rows: Vec<(u64, Vec<u8>)>,
        callback: IOFlushed<TypeConfig>,
    },
    /// The newest committed id (encoded), in queue order after the appends it names.
    Committed(Vec<u8>),
    /// Delete every entry from `from` on.
    Truncate {
        from: u64,
        done: tokio::sync::oneshot::Sender<Result<(), String>>,
    },
    /// Delete every entry up to `log_id` and remember it as purged.
    Purge {
        log_id: LogId,
        done: tokio::sync::oneshot::Sender<Result<(), String>>,
    },
}

/// One redb write transaction on the log, committed with
/// `Durability::Immediate` (one fsync): the committed log id (if any) into
/// the meta table, then `f` on the log table.
fn log_transaction(
    db: &Database,
    committed: Option<&[u8]>,
    f: impl FnOnce(&redb::WriteTransaction, &mut redb::Table<'_, u64, &[u8]>) -> Result<(), io::Error>,
) -> Result<(), io::Error> {
    let tx = db.begin_write().map_err(io_err)?;
    {
        if let Some(c) = committed {
            let mut meta = tx.open_table(META).map_err(io_err)?;
            meta.insert(KEY_COMMITTED, c).map_err(io_err)?;
        }
        let mut log = tx.open_table(LOG).map_err(io_err)?;
        f(&tx, &mut log)?;
    }
    tx.commit().map_err(io_err)
}

/// Writes `writes` (and `committed`, the pending committed log id, if any)
/// in one fsync'd redb transaction: the path of a group with a truncate or a
/// purge (after the write-ahead file was folded).
fn commit_writes(
    db: &Database,
    writes: &[LogWrite],
    committed: Option<&[u8]>,
) -> Result<(), io::Error> {
    log_transaction(db, committed, |tx, log| {
        for w in writes {
            match w {
                LogWrite::Append { rows, .. } => {
                    for (idx, bytes) in rows {
                        log.insert(*idx, bytes.as_slice()).map_err(io_err)?;
                    }
                }
                LogWrite::Truncate { from, .. } => {
                    log.retain_in(*from.., |_, _| false).map_err(io_err)?;
                }
                LogWrite::Committed(_) => {}
                LogWrite::Purge { log_id, .. } => {
                    let upto = log_id.index();
                    let mut meta = tx.open_table(META).map_err(io_err)?;
                    meta.insert(KEY_PURGED, encode(log_id)?.as_slice())
                        .map_err(io_err)?;
                    log.retain_in(..=upto, |_, _| false).map_err(io_err)?;
                }
            }
        }
        Ok(())
    })
}

/// Writes the rows of the write-ahead file (and the committed id written with
/// them) into redb in one fsync'd transaction. Nothing to do for no rows and
/// no id. Replaying rows a database already holds changes nothing, so this
/// may run twice for one generation of the file (a crash before its reset).
fn fold_rows(
    db: &Database,
    rows: &BTreeMap<u64, Vec<u8>>,
    committed: Option<&[u8]>,
) -> Result<(), io::Error> {
    if rows.is_empty() && committed.is_none() {
        return Ok(());
    }
    log_transaction(db, committed, |_, log| {
        for (idx, row) in rows {
            log.insert(*idx, row.as_slice()).map_err(io_err)?;
        }
        Ok(())
    })
}

/// The log's two places on disk. Appends go to the write-ahead file (one
/// `write` and one `fdatasync` per group, see [`crate::wal`]); now and then
/// the file is folded into redb in one transaction and starts over. A group
/// with a truncate or a purge folds first and then runs as one redb
/// transaction, so the file only ever holds appends (which is what makes its
/// replay safe).
struct LogDisk {
    db: Arc<Database>,
    wal: Wal,
    /// Rows in the write-ahead file that redb does not have yet.
    unfolded: BTreeMap<u64, Vec<u8>>,
    /// The newest committed id written to the file since its last fold.
    unfolded_committed: Option<Vec<u8>>,
    /// Fold once the file's records exceed this many bytes.
    fold_bytes: u64,
    /// An earlier write failed: the file's end is unknown, refuse every write.
    broken: bool,
}

impl LogDisk {
    fn new(db: Arc<Database>, wal: Wal, fold_bytes: u64) -> Self {
        LogDisk {
            db,
            wal,
            unfolded: BTreeMap::new(),
            unfolded_committed: None,
            fold_bytes,
            broken: false,
        }
    }

    /// Moves everything in the write-ahead file into redb and starts the
    /// file over (in that order: the records are void only once redb has
    /// them on disk).
    fn fold(&mut self) -> Result<(), io::Error> {
        if self.unfolded.is_empty() && self.unfolded_committed.is_none() {
            return Ok(());
        }
        fold_rows(&self.db, &self.unfolded, self.unfolded_committed.as_deref())?;
        self.wal.reset()?;
        self.unfolded.clear();
        self.unfolded_committed = None;
        Ok(())
    }

    /// Makes `writes` (and `committed`) durable: on success every row is in
    /// the write-ahead file or in redb, fsync'd. The rows move out of
    /// `writes` (into `unfolded`); the callbacks stay.
    fn commit(
        &mut self,
        writes: &mut [LogWrite],
        committed: Option<Vec<u8>>,
    ) -> Result<(), io::Error> {
        if self.broken {
            return Err(io::Error::other("an earlier log write failed"));
        }
        let r = self.try_commit(writes, committed);
        self.broken = r.is_err();
        r
    }

    fn try_commit(
        &mut self,
        writes: &mut [LogWrite],
        committed: Option<Vec<u8>>,
    ) -> Result<(), io::Error> {
        let redb_op = writes
            .iter()
            .any(|w| matches!(w, LogWrite::Truncate { .. } | LogWrite::Purge { .. }));
        let bytes: u64 = writes
            .iter()
            .map(|w| match w {
                LogWrite::Append { rows, .. } => rows.iter().map(|(_, r)| r.len() as u64).sum(),
                _ => 0,
            })
            .sum();
        if redb_op
            || self.wal.record_bytes() + bytes > self.fold_bytes
            || self.unfolded.len() >= TAIL_MAX_ENTRIES
        {
            self.fold()?;
        }
        if redb_op {
            return commit_writes(&self.db, writes, committed.as_deref());
        }
        let rows = writes
            .iter()
            .filter_map(|w| match w {
                LogWrite::Append { rows, .. } => Some(rows),
                _ => None,
            })
            .flatten()
            .map(|(i, r)| (*i, r.as_slice()));
        self.wal.append(rows, committed.as_deref())?;
        for w in writes.iter_mut() {
            if let LogWrite::Append { rows, .. } = w {
                self.unfolded.extend(std::mem::take(rows));
            }
        }
        if committed.is_some() {
            self.unfolded_committed = committed;
        }
        Ok(())
    }
}

/// Commits `writes` as one group, then tells each writer the outcome (the
/// append callbacks fire only after the fsync: S3).
fn write_group(
    disk: &mut LogDisk,
    tail: &Mutex<Tail>,
    mut writes: Vec<LogWrite>,
    committed: Option<Vec<u8>>,
) -> Result<(), String> {
    // What this group leaves on disk, in queue order: an append raises the
    // top, a truncate lowers it. (`truncate_after` also lowers `flushed` at
    // once, but an append queued before the truncate may finish after that
    // and must not raise it back above the truncate: found in review, test
    // `queued_entries_below_a_stale_flushed_are_not_evicted`.)
    let mut top: Option<u64> = None;
    let mut cut: Option<u64> = None;
    for w in &writes {
        match w {
            LogWrite::Append { rows, .. } => {
                if let Some((i, _)) = rows.last() {
                    top = Some(top.map_or(*i, |t| t.max(*i)));
                }
            }
            LogWrite::Truncate { from, .. } => {
                let keep = from.saturating_sub(1);
                top = top.map(|t| t.min(keep));
                cut = Some(cut.map_or(keep, |c: u64| c.min(keep)));
            }
            _ => {}
        }
    }
    let res = disk
        .commit(&mut writes, committed)
        .map_err(|e| e.to_string());
    if res.is_ok() {
        if let Ok(mut t) = tail.lock() {
            if let Some(cut) = cut {
                t.flushed = t.flushed.min(cut);
            }
            if let Some(top) = top {
                t.flushed = t.flushed.max(top);
            }
            // Keep a bounded tail: drop the oldest entries that redb has
            // (an entry only in the write-ahead file stays: reads below the
            // tail go to redb).
            let in_redb = match disk.unfolded.first_key_value() {
                Some((first, _)) => t.flushed.min(first.saturating_sub(1)),
                None => t.flushed,
            };
            while t.entries.len() > TAIL_MAX_ENTRIES {
                match t.entries.first_key_value() {
                    Some((i, _)) if *i <= in_redb => {
                        t.entries.pop_first();
                    }
                    _ => break,
                }
            }
        }
    }
    for w in writes {
        let r = res.clone().map_err(io::Error::other);
        match w {
            LogWrite::Append { callback, .. } => callback.io_completed(r),
            LogWrite::Truncate { done, .. } | LogWrite::Purge { done, .. } => {
                let _ = done.send(res.clone());
            }
            LogWrite::Committed(_) => {}
        }
    }
    res
}

/// The log writer thread: group commit. It takes every write queued while
/// the previous group was being fsync'd and commits them together, so
/// concurrent appends share one record of the write-ahead file and one
/// fsync, and the Raft core never waits for the disk (openraft's `append`
/// contract: return once readable, call back once durable).
struct LogWriter {
    tx: Mutex<Option<std::sync::mpsc::Sender<LogWrite>>>,
    thread: Mutex<Option<std::thread::JoinHandle<()>>>,
}

impl LogWriter {
    fn start(disk: Arc<Mutex<LogDisk>>, tail: Arc<Mutex<Tail>>) -> Result<LogWriter, io::Error> {
        let (tx, rx) = std::sync::mpsc::channel::<LogWrite>();
        let thread = std::thread::Builder::new()
            .name("warden-log-writer".into())
            .spawn(move || {
                let Ok(mut disk) = disk.lock() else {
                    return;
                };
                let mut pending: Option<Vec<u8>> = None;
                while let Ok(first) = rx.recv() {
                    let mut group = vec![first];
                    while group.len() < MAX_WRITES_PER_COMMIT {
                        match rx.try_recv() {
                            Ok(w) => group.push(w),
                            Err(_) => break,
                        }
                    }
                    let mut writes = Vec::with_capacity(group.len());
                    for w in group {
                        match w {
                            LogWrite::Committed(c) => pending = Some(c),
                            w => writes.push(w),
                        }
                    }
                    if writes.is_empty() {
                        continue;
                    }
                    // After a failed group the disk refuses every write
                    // (`LogDisk::broken`), the committed id included.
                    let _ = write_group(&mut disk, &tail, writes, pending.take());
                }
                // Stopping: the last committed id, and everything in the
                // write-ahead file, into redb (a restart then replays nothing).
                if !disk.broken {
                    if pending.is_some() {
                        disk.unfolded_committed = pending;
                    }
                    let _ = disk.fold();
                }
            })?;
        Ok(LogWriter {
            tx: Mutex::new(Some(tx)),
            thread: Mutex::new(Some(thread)),
        })
    }

    fn send(&self, w: LogWrite) -> Result<(), io::Error> {
        let tx = self.tx.lock().map_err(io_err)?;
        tx.as_ref()
            .ok_or_else(|| io::Error::other("log writer stopped"))?
            .send(w)
            .map_err(|_| io::Error::other("log writer stopped"))
    }
}

impl Drop for LogWriter {
    /// Finishes every queued write and closes the database handle before
    /// returning, so the data dir can be reopened at once.
    fn drop(&mut self) {
        if let Ok(mut tx) = self.tx.lock() {
            tx.take();
        }
        if let Some(t) = self.thread.lock().ok().and_then(|mut t| t.take()) {
            let _ = t.join();
        }
    }
}

impl Debug for LogWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("LogWriter")
    }
}

/// The Raft log store: a write-ahead file folded into redb.
#[derive(Clone)]
pub struct LogStore {
    db: Db,
    stamps: Stamps,
    clock: Arc<dyn Clock>,
    tail: Arc<Mutex<Tail>>,
    /// The log's disk; the writer thread holds its lock while it runs.
    disk: Arc<Mutex<LogDisk>>,
    /// The group-commit writer; None on an injected disk (the simulator),
    /// where each write is committed inline.
    writer: Option<Arc<LogWriter>>,
}

impl Debug for LogStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LogStore")
            .field("writer", &self.writer.is_some())
            .finish_non_exhaustive()
    }
}

impl LogStore {
    /// A log store over `db`, stamping appends with `clock`. Takes the
    /// database's write-ahead file: a second store on one [`Db`] is refused.
    pub fn new(db: Db, stamps: Stamps, clock: Arc<dyn Clock>) -> Result<Self, io::Error> {
        let wal =
            db.wal.lock().map_err(io_err)?.take().ok_or_else(|| {
                io::Error::other("the log store of this database is already open")
            })?;
        // A smaller file on an injected disk, so the simulator's crashes
        // also land around folds.
        let fold_bytes = if db.inline_io {
            SIM_WAL_FOLD_BYTES
        } else {
            WAL_FOLD_BYTES
        };
        let disk = Arc::new(Mutex::new(LogDisk::new(db.db.clone(), wal, fold_bytes)));
        let tail = Arc::new(Mutex::new(Tail::default()));
        let writer = if db.inline_io {
            None
        } else {
            // A thread that cannot start leaves inline writes, which are
            // slower but equally durable.
            LogWriter::start(disk.clone(), tail.clone())
                .map_err(|e| tracing::warn!("log writer thread: {e}; writing inline"))
                .ok()
                .map(Arc::new)
        };
        Ok(LogStore {
            db,
            stamps,
            clock,
            tail,
            disk,
            writer,
        })
    }

    /// Queues `w` for the writer thread, or (no writer) commits it before
    /// returning, on the blocking pool or inline on an injected disk.
    async fn submit(&self, w: LogWrite) -> Result<(), io::Error> {
        match &self.writer {
            Some(writer) => writer.send(w),
            None => {
                let tail = self.tail.clone();
                let disk = self.disk.clone();
                // As before the writer thread: a failed append is also
                // returned here, not only through its callback.
                self.db
                    .io(move |_| {
                        let mut disk = disk.lock().map_err(io_err)?;
                        write_group(&mut disk, &tail, vec![w], None).map_err(io::Error::other)
                    })
                    .await
            }
        }
    }

    /// Queues a truncate or purge and waits until it is on disk.
    async fn submit_and_wait(
        &self,
        make: impl FnOnce(tokio::sync::oneshot::Sender<Result<(), String>>) -> LogWrite,
    ) -> Result<(), io::Error> {
        let (done, rx) = tokio::sync::oneshot::channel();
        self.submit(make(done)).await?;
        rx.await
            .map_err(|_| io::Error::other("log writer stopped"))?
            .map_err(io::Error::other)
    }

    fn read_opt<T: for<'a> Deserialize<'a>>(&self, key: &str) -> Result<Option<T>, io::Error> {
        match self.db.get_meta(key)? {
            Some(b) => Ok(Some(decode(&b)?)),
            None => Ok(None),
        }
    }
}

impl RaftLogReader<TypeConfig> for LogStore {
    async fn try_get_log_entries<RB: RangeBounds<u64> + Clone + Debug + OptionalSend>(
        &mut self,
        range: RB,
    ) -> Result<Vec<Entry>, io::Error> {
        use std::ops::Bound::{Excluded, Included, Unbounded};
        let start = range.start_bound().cloned();
        let end = range.end_bound().cloned();
        // The in-memory tail first: every entry below its first index is on
        // disk, and stays there while openraft may read it.
        let (from_tail, tail_first) = {
            let t = self.tail.lock().map_err(io_err)?;
            let first = t.entries.first_key_value().map(|(i, _)| *i);
            let got: Vec<Entry> = match first {
                Some(_) => t
                    .entries
                    .range((start, end))
                    .map(|(_, e)| e.clone())
                    .collect(),
                None => Vec::new(),
            };
            (got, first)
        };
        let disk_end = match (tail_first, end) {
            (None, end) => end,
            (Some(f), Included(e)) if e < f => Included(e),
            (Some(f), Excluded(e)) if e <= f => Excluded(e),
            (Some(f), _) => Excluded(f),
        };
        let needs_disk = match (start, disk_end) {
            (_, Unbounded) => true,
            (Included(s), Excluded(e)) => s < e,
            (Included(s), Included(e)) => s <= e,
            (Excluded(s), Excluded(e)) => s.saturating_add(1) < e,
            (Excluded(s), Included(e)) => s < e,
            (Unbounded, Excluded(e)) => e > 0,
            (Unbounded, Included(_)) => true,
        };
        if !needs_disk {
            return Ok(from_tail);
        }
        let mut out = self
            .db
            .io(move |db| -> Result<Vec<Entry>, io::Error> {
                let tx = db.begin_read().map_err(io_err)?;
                let t = tx.open_table(LOG).map_err(io_err)?;
                let mut out = Vec::new();
                for item in t.range::<u64>((start, disk_end)).map_err(io_err)? {
                    let (_, v) = item.map_err(io_err)?;
                    out.push(decode_row_entry(v.value())?);
                }
                Ok(out)
            })
            .await?;
        out.extend(from_tail);
        Ok(out)
    }

    async fn read_vote(&mut self) -> Result<Option<Vote>, io::Error> {
        self.read_opt(KEY_VOTE)
    }
}

impl RaftLogStorage<TypeConfig> for LogStore {
    type LogReader = Self;

    async fn get_log_state(&mut self) -> Result<LogState<TypeConfig>, io::Error> {
        let last_purged: Option<LogId> = self.read_opt(KEY_PURGED)?;
        let tx = self.db.db.begin_read().map_err(io_err)?;
        let t = tx.open_table(LOG).map_err(io_err)?;
        let in_tail = {
            let tail = self.tail.lock().map_err(io_err)?;
            tail.entries.last_key_value().map(|(_, e)| e.log_id())
        };
        let last = match (in_tail, t.last().map_err(io_err)?) {
            (Some(l), _) => Some(l),
            (None, Some((_, v))) => Some(decode_row_entry(v.value())?.log_id()),
            (None, None) => last_purged,
        };
        Ok(LogState {
            last_purged_log_id: last_purged,
            last_log_id: last,
        })
    }

    async fn get_log_reader(&mut self) -> Self::LogReader {
        self.clone()
    }

    async fn save_vote(&mut self, vote: &Vote) -> Result<(), io::Error> {
        self.db.put_meta(KEY_VOTE, &encode(vote)?)
    }

    /// Not fsync'd, and with the log writer not even its own transaction:
    /// the committed index is a hint that lets a restarted node re-apply
    /// sooner, and openraft calls this between a commit and its apply, i.e.
    /// on every write's critical path (on every node). It goes through the
    /// writer's queue, behind the appends it names (openraft saves it once
    /// they are queued, not once they are durable), and the writer writes
    /// the newest one it has received in its next group that has log writes
    /// (an fsync'd commit), or when the node stops; never after a failed
    /// group. So the id on disk never names an entry that is not on disk: a
    /// node with such an id refused to restart (openraft re-applies up to
    /// it; found in review, test `committed_id_on_disk_never_outruns_the_log`).
    /// A redb write transaction here
    /// cost one more transaction per entry per node, and it waited for redb's
    /// single write lock while the writer fsync'd (docs/performance.md). On
    /// an injected disk (no writer) it is its own `Durability::None`
    /// transaction. If it is lost in a crash, the node applies up to the
    /// commit index the leader sends it instead. Nothing acknowledged depends
    /// on it (S3 rests on the appended entries, which are fsync'd). Because
    /// of this the server runs with openraft's leader restore off: a leader
    /// restored with a stale committed index could serve a read that misses
    /// an acknowledged write (see `enable_leader_restore` in `lib.rs`).
    async fn save_committed(&mut self, committed: Option<LogId>) -> Result<(), io::Error> {
        let bytes = encode(&committed)?;
        if self.writer.is_none() {
            return self.db.put_meta_lazy(KEY_COMMITTED, &bytes);
        }
        self.tail.lock().map_err(io_err)?.committed = Some(bytes.clone());
        self.submit(LogWrite::Committed(bytes)).await
    }

    async fn read_committed(&mut self) -> Result<Option<LogId>, io::Error> {
        let pending = self.tail.lock().map_err(io_err)?.committed.clone();
        match pending {
            Some(b) => Ok(decode::<Option<LogId>>(&b)?),
            None => Ok(self.read_opt::<Option<LogId>>(KEY_COMMITTED)?.flatten()),
        }
    }

    async fn append<I>(
        &mut self,
        entries: I,
        callback: IOFlushed<TypeConfig>,
    ) -> Result<(), io::Error>
    where
        I: IntoIterator<Item = Entry> + OptionalSend,
        I::IntoIter: OptionalSend,
    {
        // The stamp is taken when the entry reaches this node, which is after
        // the client sent it: no deadline derived from it is early (S4).
        let stamp = self.clock.now();
        let persisted = self.clock.epoch().map(|e| encode_stamp(e, stamp));
        let mut rows = Vec::new();
        let mut kept = Vec::new();
        for e in entries {
            rows.push((e.index(), encode_row(persisted.as_ref(), &e)?));
            kept.push(e);
        }
        {
            let mut stamps = self.stamps.lock().map_err(io_err)?;
            for (idx, _) in &rows {
                stamps.insert(*idx, stamp);
            }
        }
        {
            // Readable once this returns (openraft's contract), durable when
            // the callback fires.
            let mut tail = self.tail.lock().map_err(io_err)?;
            for e in kept {
                tail.entries.insert(e.index(), e);
            }
        }
        // The callback fires only after the group holding these rows is
        // committed with an fsync (S3); openraft counts this node towards a
        // quorum only then. The Raft core goes on meanwhile (replication to
        // followers overlaps this node's fsync).
        self.submit(LogWrite::Append { rows, callback }).await
    }

    async fn truncate_after(&mut self, last_log_id: Option<LogId>) -> Result<(), io::Error> {
        let from = last_log_id.map(|l| l.index() + 1).unwrap_or(0);
        {
            let mut stamps = self.stamps.lock().map_err(io_err)?;
            let _ = stamps.split_off(&from);
        }
        {
            let mut tail = self.tail.lock().map_err(io_err)?;
            let _ = tail.entries.split_off(&from);
            tail.flushed = tail.flushed.min(from.saturating_sub(1));
        }
        self.submit_and_wait(|done| LogWrite::Truncate { from, done })
            .await
    }

    async fn purge(&mut self, log_id: LogId) -> Result<(), io::Error> {
        let upto = log_id.index();
        {
            let mut tail = self.tail.lock().map_err(io_err)?;
            let rest = tail.entries.split_off(&(upto + 1));
            tail.entries = rest;
        }
        self.submit_and_wait(|done| LogWrite::Purge { log_id, done })
            .await
    }
}

/// What the state machine holds: the replicated lock table and this node's
/// (non-replicated) deadline table.
#[derive(Debug)]
pub struct Machine {
    /// The replicated lock table.
    pub table: LockTable,
    /// This node's deadlines, filled at apply (SEMANTICS "Time").
    pub deadlines: Deadlines,
    /// Last applied log id.
    pub last_applied: Option<LogId>,
    /// Last applied membership.
    pub membership: StoredMembership,
}

/// State shared between the state machine (writer) and the services (readers).
#[derive(Debug)]
pub struct Shared {
    /// The machine. Held only for short, non-async sections.
    pub machine: Mutex<Machine>,
    /// The last applied log index; services wait on it.
    pub applied: watch::Sender<u64>,
    /// This node's clock.
    pub clock: Arc<dyn Clock>,
    /// Append stamps.
    pub stamps: Stamps,
    /// Node-local event log for the Watch service, fed at apply.
    pub events: crate::watch_service::EventLog,
    /// This node's id (for the observer).
    pub node_id: u64,
    /// Simulator-only observer of each apply.
    pub observer: Option<Arc<dyn crate::inject::Observer>>,
    /// Simulator-only bug switches (all off in production).
    pub bugs: crate::inject::BugSwitches,
}

/// This node's lease deadlines when it built its last snapshot (node-local).
#[derive(Serialize, Deserialize)]
struct SnapshotDeadlines {
    epoch: u64,
    index: u64,
    leases: Vec<(u64, u64)>,
}

#[derive(Serialize, Deserialize)]
struct StoredSnapshot {
    meta: SnapshotMeta,
    data: Vec<u8>,
}

/// The openraft state machine over [`Shared`].
#[derive(Clone, Debug)]
pub struct StateMachineStore {
    /// Shared state.
    pub shared: Arc<Shared>,
    db: Db,
}

impl StateMachineStore {
    /// Opens the state machine: loads the last snapshot from `db`, if any.
    pub fn open(db: Db, clock: Arc<dyn Clock>, stamps: Stamps) -> Result<Self, io::Error> {
        Self::open_injected(db, clock, stamps, 0, None, Default::default())
    }

    /// [`Self::open`] with the simulator's observer and bug switches.
    pub fn open_injected(
        db: Db,
        clock: Arc<dyn Clock>,
        stamps: Stamps,
        node_id: u64,
        observer: Option<Arc<dyn crate::inject::Observer>>,
        bugs: crate::inject::BugSwitches,
    ) -> Result<Self, io::Error> {
        let mut machine = Machine {
            table: LockTable::new(),
            deadlines: Deadlines::default(),
            last_applied: None,
            membership: StoredMembership::default(),
        };
        if let Some(bytes) = db.get_meta(KEY_SNAPSHOT)? {
            let snap: StoredSnapshot = decode(&bytes)?;
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
                                let effect = warden_core::Effect::LeaseSet {
                                    lease_id,
                                    ttl_ms: 0,
                                };
                                machine.deadlines.on_effect(
                                    &effect,
                                    Duration::from_nanos(ns),
                                    clock.now(),
                                );
                            }
                        }
                    }
                }
            }
            machine.last_applied = snap.meta.last_log_id;
            machine.membership = snap.meta.last_membership.clone();
        }
        let applied_index = machine
            .last_applied
            .as_ref()
            .map(|l| l.index())
            .unwrap_or(0);
        let (applied, _) = watch::channel(applied_index);
        Ok(StateMachineStore {
            shared: Arc::new(Shared {
                machine: Mutex::new(machine),
                applied,
                clock,
                stamps,
                events: crate::watch_service::EventLog::new(
                    crate::watch_service::DEFAULT_WINDOW,
                    applied_index,
                ),
                node_id,
                observer,
                bugs,
            }),
            db,
        })
    }

    fn lock(&self) -> Result<std::sync::MutexGuard<'_, Machine>, io::Error> {
        self.shared.machine.lock().map_err(io_err)
    }

    fn build(&self) -> Result<Snapshot, io::Error> {
        let (meta, data, side) = {
            let m = self.lock()?;
            let meta = SnapshotMeta {
                last_log_id: m.last_applied,
                last_membership: m.membership.clone(),
            };
            let side = self.shared.clock.epoch().map(|epoch| SnapshotDeadlines {
                epoch,
                index: m.last_applied.as_ref().map(|l| l.index()).unwrap_or(0),
                leases: m
                    .table
                    .leases()
                    .filter_map(|l| {
                        let d = m.deadlines.lease_deadline(l.lease_id)?;
                        Some((l.lease_id, u64::try_from(d.as_nanos()).ok()?))
                    })
                    .collect(),
            });
            let data = if self.shared.bugs.outcome_table_not_in_snapshot {
                crate::inject::without_outcomes(&m.table, meta.last_log_id.as_ref())
            } else {
                m.table.to_snapshot()
            };
            (meta, data, side)
        };
        // Written before the snapshot and tied to its index: a crash between
        // the two writes leaves a sidecar that the old snapshot ignores.
        if let Some(side) = side {
            self.db.put_meta(KEY_SNAPSHOT_DEADLINES, &encode(&side)?)?;
        }
        let stored = StoredSnapshot {
            meta: meta.clone(),
            data: data.clone(),
        };
        self.db.put_meta(KEY_SNAPSHOT, &encode(&stored)?)?;
        Ok(Snapshot {
            meta,
            snapshot: data,
        })
    }
}

impl RaftSnapshotBuilder<TypeConfig> for StateMachineStore {
    type SnapshotData = Vec<u8>;

    async fn build_snapshot(&mut self) -> Result<Snapshot, io::Error> {
        self.build()
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
            let stamp = match (stamp, self.shared.clock.epoch()) {
                (Some(s), _) => s,
                (None, Some(epoch)) => self.db.persisted_stamp(index, epoch)?.unwrap_or(now),
                (None, None) => now,
            };
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
                        let mut stamp = stamp;
                        let buggy;
                        let cmd = if bugs == crate::inject::BugSwitches::default() {
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
                            buggy = crate::inject::buggy_command(&bugs, &m.table, log_leader, cmd);
                            &buggy
                        };
                        let applied = m.table.apply(index, log_leader, cmd);
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
                        for effect in &applied.effects {
                            m.deadlines.on_effect(effect, stamp, stamp);
                        }
                        if bugs.full_ttl_reset_at_election && matches!(cmd, Command::Promote(_)) {
                            crate::inject::reset_full_ttls(&mut m, now);
                        }
                        self.shared.events.record(index, &applied.effects);
                        if let Some(o) = &self.shared.observer {
                            o.on_apply(
                                self.shared.node_id,
                                index,
                                log_leader,
                                cmd,
                                &applied,
                                &m.table,
                                &m.deadlines,
                                stamp,
                                now,
                            );
                        }
                        applied.response
                    }
                }
            };
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
        let table = LockTable::from_snapshot(&snapshot).map_err(io_err)?;
        let stored = StoredSnapshot {
            meta: meta.clone(),
            data: snapshot,
        };
        self.db.put_meta(KEY_SNAPSHOT, &encode(&stored)?)?;
        let index = {
            let mut m = self.lock()?;
            m.deadlines = Deadlines::load(&table, self.shared.clock.now());
            m.table = table;
            m.last_applied = meta.last_log_id;
            m.membership = meta.last_membership.clone();
            m.last_applied.as_ref().map(|l| l.index()).unwrap_or(0)
        };
        self.shared.events.reset(index);
        self.shared.applied.send_replace(index);
        tracing::info!(index, "installed a snapshot from the leader");
        Ok(())
    }

    async fn get_current_snapshot(&mut self) -> Result<Option<Snapshot>, io::Error> {
        match self.db.get_meta(KEY_SNAPSHOT)? {
            Some(b) => {
                let s: StoredSnapshot = decode(&b)?;
                Ok(Some(Snapshot {
                    meta: s.meta,
                    snapshot: s.data,
                }))
            }
            None => Ok(None),
        }
    }
}

#[cfg(test)]
mod tests {
    //! The redb log store and the snapshot path, on a temp dir. Each test
    //! names the property it defends.

    use std::time::Duration;

    use openraft::impls::leader_id_adv::LeaderId as RaftLeaderId;
    use openraft::storage::{IOFlushed, RaftLogStorage, RaftStateMachine};
    use openraft::{EntryPayload, RaftLogReader};
    use warden_core::types::{Command, LeaseGrant, LogEntry, RequestHeader};

    use super::*;
    use crate::clock::Clock;
    use crate::raft_types::Request;

    /// A clock the test sets by hand.
    #[derive(Debug, Default)]
    struct FixedClock(Mutex<Duration>);

    impl Clock for FixedClock {
        fn now(&self) -> Duration {
            *self.0.lock().expect("clock")
        }
    }

    /// A hand-set clock with an epoch: two instances share one time base,
    /// like two processes of one boot.
    #[derive(Debug, Default)]
    struct EpochClock(Mutex<Duration>);

    /// Applies `entries` as openraft hands them over after a commit (no
    /// responders), or as a restarted node replays them.
    async fn apply_entries(sm: &mut StateMachineStore, entries: Vec<Entry>) {
        sm.apply(futures::stream::iter(
            entries.into_iter().map(|e| Ok((e, None))),
        ))
        .await
        .expect("apply");
    }

    /// A node's log and state machine on `dir`, as a (re)started process opens them.
    fn open_stores(dir: &Path, clock: Arc<EpochClock>) -> (LogStore, StateMachineStore) {
        let db = Db::open(dir).expect("db");
        let stamps: Stamps = Arc::new(Mutex::new(BTreeMap::new()));
        let log = LogStore::new(db.clone(), stamps.clone(), clock.clone()).expect("log store");
        let sm = StateMachineStore::open(db, clock, stamps).expect("sm");
        (log, sm)
    }

    impl Clock for EpochClock {
        fn now(&self) -> Duration {
            *self.0.lock().expect("clock")
        }
        fn epoch(&self) -> Option<u64> {
            Some(42)
        }
    }

    fn log_id(term: u64, index: u64) -> LogId {
        LogId::new(RaftLeaderId { term, node_id: 1 }, index)
    }

    fn entry(term: u64, index: u64, cmd: Command) -> Entry {
        Entry {
            log_id: log_id(term, index),
            payload: EntryPayload::Normal(Request(LogEntry::V1(cmd))),
        }
    }

    fn grant(request_id: u64, ttl_ms: u64) -> Command {
        Command::LeaseGrant(LeaseGrant {
            header: RequestHeader {
                client_id: 9,
                request_id,
                acked_request_id: 0,
            },
            ttl_ms,
        })
    }

    fn stores(dir: &Path, clock: Arc<FixedClock>) -> (LogStore, StateMachineStore) {
        let db = Db::open(dir).expect("open db");
        let stamps: Stamps = Arc::new(Mutex::new(BTreeMap::new()));
        let log = LogStore::new(db.clone(), stamps.clone(), clock.clone()).expect("log store");
        let sm = StateMachineStore::open(db, clock, stamps).expect("open sm");
        (log, sm)
    }

    /// What a node restarted now would find on disk: the log indexes and the
    /// committed index, from the write-ahead file (read first: a fold moves
    /// rows from it into redb, never the other way) and then redb.
    fn on_disk(dir: &Path, db: &Database) -> (BTreeMap<u64, ()>, Option<u64>) {
        let file = wal::open_file(&dir.join(WAL_FILE)).expect("wal file");
        let (_, rec) = Wal::open(file).expect("read wal");
        let mut rows: BTreeMap<u64, ()> = rec.rows.keys().map(|i| (*i, ())).collect();
        let mut committed = rec
            .committed
            .map(|c| decode::<Option<LogId>>(&c).expect("decode"))
            .map(|c| c.map(|l| l.index()));
        let tx = db.begin_read().expect("read");
        let meta = tx.open_table(META).expect("meta");
        if committed.is_none() {
            committed = meta
                .get(KEY_COMMITTED)
                .expect("get")
                .map(|v| decode::<Option<LogId>>(v.value()).expect("dec"))
                .map(|c| c.map(|l| l.index()));
        }
        let log = tx.open_table(LOG).expect("log");
        for item in log.iter().expect("iter") {
            rows.insert(item.expect("row").0.value(), ());
        }
        (rows, committed.flatten())
    }

    // S3: what `append` acknowledged, `save_vote` and `save_committed` wrote
    // are there after the database is closed and reopened.
    #[tokio::test]
    async fn log_vote_and_commit_survive_reopen() {
        let dir = tempfile::tempdir().expect("tempdir");
        let clock = Arc::new(FixedClock::default());
        {
            let (mut log, _) = stores(dir.path(), clock.clone());
            assert!(log.db.raft_state_is_empty().expect("empty"));
            let entries = (1..=5).map(|i| entry(1, i, grant(i, 10_000)));
            log.append(entries, IOFlushed::noop())
                .await
                .expect("append");
            let vote = Vote::new_committed(1, 1);
            log.save_vote(&vote).await.expect("vote");
            log.save_committed(Some(log_id(1, 4)))
                .await
                .expect("commit");
        }
        let (mut log, _) = stores(dir.path(), clock);
        assert!(!log.db.raft_state_is_empty().expect("not empty"));
        let state = log.get_log_state().await.expect("state");
        assert_eq!(state.last_log_id, Some(log_id(1, 5)));
        assert_eq!(state.last_purged_log_id, None);
        assert_eq!(
            log.read_vote().await.expect("vote"),
            Some(Vote::new_committed(1, 1))
        );
        assert_eq!(
            log.read_committed().await.expect("committed"),
            Some(log_id(1, 4))
        );
        let got = log.try_get_log_entries(2..4).await.expect("read");
        assert_eq!(
            got.iter().map(|e| e.log_id.index()).collect::<Vec<_>>(),
            vec![2, 3]
        );
    }

    // S3 and L2 across an upgrade: a data dir written with the old layout
    // (entries in `raft_log`, stamps in `append_stamps`) opens with every
    // entry and its persisted stamp, in the one-row layout, old tables gone.
    #[tokio::test]
    async fn old_log_layout_is_migrated_on_open() {
        let dir = tempfile::tempdir().expect("tempdir");
        {
            let db = Database::create(dir.path().join("warden.redb")).expect("db");
            let tx = db.begin_write().expect("tx");
            {
                let mut log = tx.open_table(OLD_LOG).expect("log");
                let mut st = tx.open_table(OLD_STAMPS).expect("stamps");
                for i in 1..=3u64 {
                    let e = encode(&entry(1, i, grant(i, 10_000))).expect("encode");
                    log.insert(i, e.as_slice()).expect("insert");
                }
                // Entry 3 has no stamp (written by a clock without an epoch).
                for i in 1..=2u64 {
                    let p = encode_stamp(42, Duration::from_millis(100 * i));
                    st.insert(i, p.as_slice()).expect("stamp");
                }
            }
            tx.commit().expect("commit");
        }
        let (mut log, _) = open_stores(dir.path(), Arc::new(EpochClock::default()));
        let got = log.try_get_log_entries(1..=3).await.expect("read");
        assert_eq!(
            got.iter().map(|e| e.log_id.index()).collect::<Vec<_>>(),
            vec![1, 2, 3]
        );
        assert_eq!(
            log.get_log_state().await.expect("state").last_log_id,
            Some(log_id(1, 3))
        );
        let stamp = |i| log.db.persisted_stamp(i, 42).expect("stamp");
        assert_eq!(stamp(1), Some(Duration::from_millis(100)));
        assert_eq!(stamp(2), Some(Duration::from_millis(200)));
        assert_eq!(stamp(3), None);
        assert_eq!(log.db.persisted_stamp(1, 7).expect("other epoch"), None);
        let tx = log.db.db.begin_read().expect("read");
        let names: Vec<String> = tx
            .list_tables()
            .expect("tables")
            .map(|t| redb::TableHandle::name(&t).to_string())
            .collect();
        assert!(!names.contains(&"raft_log".to_string()), "{names:?}");
        assert!(!names.contains(&"append_stamps".to_string()), "{names:?}");
    }

    // S3 (restart): the committed id on disk never names an entry that is not
    // on disk with it. Found in review: the writer took the newest committed
    // id into a group formed before the entries it named were queued (here a
    // backlog above MAX_WRITES_PER_COMMIT), and a node killed after that
    // group refused to restart (openraft re-applies up to the committed id).
    // A watcher thread reads every committed state while the backlog drains.
    #[tokio::test]
    async fn committed_id_on_disk_never_outruns_the_log() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (mut log, _sm) = stores(dir.path(), Arc::new(FixedClock::default()));
        let db = log.db.db.clone();
        let hold = db.begin_write().expect("hold the write lock");
        log.append([entry(1, 0, grant(1, 10_000))], IOFlushed::noop())
            .await
            .expect("append 0");
        for i in 1..1100u64 {
            log.append([entry(1, i, grant(i + 1, 10_000))], IOFlushed::noop())
                .await
                .expect("append");
        }
        let (last_tx, last_rx) =
            <crate::raft_types::TypeConfig as openraft::type_config::TypeConfigExt>::oneshot();
        log.append(
            [entry(1, 1100, grant(1101, 10_000))],
            IOFlushed::signal(last_tx),
        )
        .await
        .expect("append 1100");
        log.save_committed(Some(log_id(1, 1100)))
            .await
            .expect("commit");
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (db2, stop2) = (db.clone(), stop.clone());
        let dir2 = dir.path().to_path_buf();
        let watcher = std::thread::spawn(move || {
            let mut seen: Option<(u64, Option<u64>)> = None;
            while !stop2.load(std::sync::atomic::Ordering::Relaxed) {
                let (rows, c) = on_disk(&dir2, &db2);
                let last = rows.last_key_value().map(|(k, _)| *k);
                if let Some(c) = c {
                    if last.is_none_or(|l| c > l) {
                        seen = Some((c, last));
                        break;
                    }
                }
            }
            seen
        });
        drop(hold);
        // Every group is on disk once the last append's callback fired.
        last_rx.await.expect("callback").expect("flushed");
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        let seen = watcher.join().expect("watcher");
        assert_eq!(
            seen, None,
            "a committed state had committed > last log row: (committed, last row)"
        );
    }

    // S3 (restart): `save_committed` opens no redb transaction of its own
    // (it would be one more per entry on every node); the id is on disk once
    // the next append's callback fired, read here from the table itself.
    #[tokio::test]
    async fn committed_id_rides_in_the_next_append_group() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (mut log, _) = stores(dir.path(), Arc::new(FixedClock::default()));
        let committed_on_disk = |log: &LogStore| on_disk(dir.path(), &log.db.db).1;
        async fn append(log: &mut LogStore, i: u64) {
            let (tx, rx) =
                <crate::raft_types::TypeConfig as openraft::type_config::TypeConfigExt>::oneshot();
            log.append([entry(1, i, grant(i, 10_000))], IOFlushed::signal(tx))
                .await
                .expect("append");
            rx.await.expect("callback").expect("flushed");
        }
        append(&mut log, 1).await;
        log.save_committed(Some(log_id(1, 1)))
            .await
            .expect("commit");
        assert_eq!(committed_on_disk(&log), None, "no write of its own");
        assert_eq!(
            log.read_committed().await.expect("read"),
            Some(log_id(1, 1))
        );
        append(&mut log, 2).await;
        assert_eq!(committed_on_disk(&log), Some(1));
    }

    // S3 with group commit: when `append`'s IO callback fires (openraft then
    // counts this node towards the quorum), every entry of the call is on
    // disk (the write-ahead file or redb), read here from the files
    // themselves and not from the in-memory tail the writer serves reads from.
    #[tokio::test]
    async fn append_callback_fires_after_the_entries_are_committed() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (mut log, _) = stores(dir.path(), Arc::new(FixedClock::default()));
        for round in 0..20u64 {
            let (tx, rx) =
                <crate::raft_types::TypeConfig as openraft::type_config::TypeConfigExt>::oneshot();
            let first = round * 3 + 1;
            let entries = (first..first + 3).map(|i| entry(1, i, grant(i, 10_000)));
            log.append(entries, IOFlushed::signal(tx))
                .await
                .expect("append");
            rx.await.expect("callback").expect("flushed");
            let (rows, _) = on_disk(dir.path(), &log.db.db);
            for i in first..first + 3 {
                assert!(
                    rows.contains_key(&i),
                    "entry {i} acknowledged before it was on disk"
                );
            }
        }
    }

    // Raft log repair: truncate_after drops the suffix (and its stamps);
    // purge drops the prefix and remembers the last purged id.
    #[tokio::test]
    async fn truncate_and_purge() {
        let dir = tempfile::tempdir().expect("tempdir");
        let clock = Arc::new(FixedClock::default());
        let (mut log, _) = stores(dir.path(), clock);
        let entries = (1..=6).map(|i| entry(1, i, Command::Noop));
        log.append(entries, IOFlushed::noop())
            .await
            .expect("append");
        log.truncate_after(Some(log_id(1, 4)))
            .await
            .expect("truncate");
        assert_eq!(
            log.get_log_state().await.expect("state").last_log_id,
            Some(log_id(1, 4))
        );
        assert_eq!(
            log.stamps
                .lock()
                .expect("stamps")
                .keys()
                .copied()
                .collect::<Vec<_>>(),
            vec![1, 2, 3, 4]
        );
        log.purge(log_id(1, 2)).await.expect("purge");
        let state = log.get_log_state().await.expect("state");
        assert_eq!(state.last_purged_log_id, Some(log_id(1, 2)));
        assert_eq!(state.last_log_id, Some(log_id(1, 4)));
        let got = log.try_get_log_entries(0..10).await.expect("read");
        assert_eq!(
            got.iter().map(|e| e.log_id.index()).collect::<Vec<_>>(),
            vec![3, 4]
        );
    }

    // S3 across a crash: entries that reached only the write-ahead file (the
    // node died before a fold) are in the log when the data dir is opened
    // again, with their persisted stamps (L2); a torn record after them is
    // dropped, not read.
    #[tokio::test]
    async fn entries_only_in_the_write_ahead_file_are_recovered_on_open() {
        let dir = tempfile::tempdir().expect("tempdir");
        drop(Db::open(dir.path()).expect("create"));
        {
            let file = wal::open_file(&dir.path().join(WAL_FILE)).expect("file");
            let (mut wal, rec) = Wal::open(file).expect("wal");
            assert!(rec.rows.is_empty());
            let stamp = encode_stamp(42, Duration::from_secs(7));
            let rows: Vec<(u64, Vec<u8>)> = (1..=3)
                .map(|i| {
                    (
                        i,
                        encode_row(Some(&stamp), &entry(1, i, grant(i, 5_000))).expect("row"),
                    )
                })
                .collect();
            wal.append(rows.iter().map(|(i, r)| (*i, r.as_slice())), None)
                .expect("append");
            let committed = encode(&Some(log_id(1, 2))).expect("id");
            let torn = encode_row(None, &entry(1, 4, Command::Noop)).expect("row");
            wal.append([(4, torn.as_slice())].into_iter(), Some(&committed))
                .expect("append");
            // The last record loses its final byte: it was never fsync'd.
            let end = wal.end_for_test();
            wal.file_for_test().write(end - 1, &[0x5A]).expect("tear");
        }
        let (mut log, _) = open_stores(dir.path(), Arc::new(EpochClock::default()));
        let state = log.get_log_state().await.expect("state");
        assert_eq!(state.last_log_id, Some(log_id(1, 3)));
        let got = log.try_get_log_entries(1..10).await.expect("read");
        assert_eq!(
            got.iter().map(|e| e.log_id.index()).collect::<Vec<_>>(),
            vec![1, 2, 3]
        );
        assert_eq!(log.read_committed().await.expect("committed"), None);
        assert_eq!(
            log.db.persisted_stamp(2, 42).expect("stamp"),
            Some(Duration::from_secs(7))
        );
    }

    // S3 through folds: with far more appends than one write-ahead file holds
    // before it is folded (4,096 entries), every entry stays readable, redb
    // holds the folded ones, and all of them survive a reopen.
    #[tokio::test]
    async fn folds_keep_every_entry_readable() {
        let dir = tempfile::tempdir().expect("tempdir");
        let clock = Arc::new(FixedClock::default());
        let total = 10_000u64;
        {
            let (mut log, _) = stores(dir.path(), clock.clone());
            // One append at a time, so each is its own group (a backlog
            // would be one group, and one record, of all of them).
            for start in (1..=total).step_by(50) {
                let (tx, rx) =
                    <crate::raft_types::TypeConfig as openraft::type_config::TypeConfigExt>::oneshot();
                let entries = (start..start + 50).map(|i| entry(1, i, Command::Noop));
                log.append(entries, IOFlushed::signal(tx))
                    .await
                    .expect("append");
                rx.await.expect("callback").expect("flushed");
            }
            let in_redb = {
                let tx = log.db.db.begin_read().expect("read");
                redb::ReadableTableMetadata::len(&tx.open_table(LOG).expect("log")).expect("len")
            };
            assert!(in_redb >= 4_096, "only {in_redb} entries folded into redb");
            let got = log.try_get_log_entries(1..=total).await.expect("read");
            assert_eq!(got.len() as u64, total);
            assert!(got.iter().zip(1..).all(|(e, i)| e.log_id.index() == i));
        }
        let (mut log, _) = stores(dir.path(), clock);
        let got = log.try_get_log_entries(1..=total).await.expect("read");
        assert_eq!(got.len() as u64, total);
        assert_eq!(
            log.get_log_state().await.expect("state").last_log_id,
            Some(log_id(1, total))
        );
    }

    // S3 and Raft's log matching: entries a truncate removed never come back
    // from the write-ahead file, and the entries appended after it (a new
    // term) are what a reopen finds.
    #[tokio::test]
    async fn truncated_entries_do_not_come_back_on_reopen() {
        let dir = tempfile::tempdir().expect("tempdir");
        let clock = Arc::new(FixedClock::default());
        {
            let (mut log, _) = stores(dir.path(), clock.clone());
            log.append(
                (1..=6).map(|i| entry(1, i, Command::Noop)),
                IOFlushed::noop(),
            )
            .await
            .expect("append");
            log.truncate_after(Some(log_id(1, 3)))
                .await
                .expect("truncate");
            let (tx, rx) =
                <crate::raft_types::TypeConfig as openraft::type_config::TypeConfigExt>::oneshot();
            log.append(
                (4..=5).map(|i| entry(2, i, Command::Noop)),
                IOFlushed::signal(tx),
            )
            .await
            .expect("append");
            rx.await.expect("callback").expect("flushed");
            let (rows, _) = on_disk(dir.path(), &log.db.db);
            assert_eq!(
                rows.keys().copied().collect::<Vec<_>>(),
                vec![1, 2, 3, 4, 5]
            );
        }
        let (mut log, _) = stores(dir.path(), clock);
        let got = log.try_get_log_entries(0..10).await.expect("read");
        assert_eq!(
            got.iter().map(|e| e.log_id).collect::<Vec<_>>(),
            vec![
                log_id(1, 1),
                log_id(1, 2),
                log_id(1, 3),
                log_id(2, 4),
                log_id(2, 5)
            ]
        );
    }

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
            let snap = sm.build().expect("build snapshot");
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
        use warden_core::types::{LeaderId, Promote};
        let dir = tempfile::tempdir().expect("tempdir");
        let open = |clock: Arc<EpochClock>| open_stores(dir.path(), clock);
        let promote = Command::Promote(Promote {
            leader: LeaderId {
                term: 2,
                node_id: 1,
            },
            grace_ms: 1_000,
        });
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
            sm.build().expect("snapshot");
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
}

#[cfg(test)]
#[path = "store_attack_tests.rs"]
mod attack_tests;
