//! The log writer: group commit of log appends into the write-ahead file
//! (one `write` and one `fdatasync` per group), folds into redb, and the
//! in-memory tail of the newest entries.

use std::collections::BTreeMap;
use std::fmt::Debug;
use std::io;
use std::sync::{Arc, Mutex};

use openraft::storage::IOFlushed;
use redb::Database;

use super::wal::Wal;
use super::{encode, io_err, KEY_COMMITTED, KEY_PURGED, LOG, META};
use crate::types::{Entry, LogId, TypeConfig};

/// Most entries [`LogStore`] keeps in memory after they are on disk (the
/// tail replication reads from without touching redb).
pub(super) const TAIL_MAX_ENTRIES: usize = 4_096;

/// Most queued writes the log writer commits in one group.
pub(super) const MAX_WRITES_PER_COMMIT: usize = 1_024;

/// The log's write-ahead file in the data dir (see [`crate::store::wal`]).
pub const WAL_FILE: &str = "raft-log.wal";
/// Fold the write-ahead file into redb once its records pass this size.
pub(super) const WAL_FOLD_BYTES: u64 = 4 << 20;
/// The write-ahead file is grown to this size with zeros when opened (twice
/// the fold size: a group that starts below it may run past it), so appends
/// overwrite written blocks and `fdatasync` writes no metadata.
pub(super) const WAL_PREALLOC_BYTES: u64 = 2 * WAL_FOLD_BYTES;
/// The fold size on an injected disk (the simulator): small, so crashes land
/// around folds too.
pub(super) const SIM_WAL_FOLD_BYTES: u64 = 16 << 10;

/// The newest log entries, in memory: every entry not yet in redb (queued,
/// or only in the write-ahead file) and up to [`TAIL_MAX_ENTRIES`] that are.
/// A contiguous suffix of the log, so every entry below its first index is in
/// redb (or purged).
#[derive(Debug, Default)]
pub(super) struct Tail {
    ///
    /// Shared (`Arc`), so a reader copies pointers under the lock and the
    /// entries after it. Copied whole, the 4,096 entries of a fast fill
    /// (each a batch of acquires) held the lock for 260–380 ms during a
    /// snapshot build's replay; the Raft core's next `append`, on the
    /// runtime, waited for it and the leader missed its heartbeats (a
    /// leader change with no fault while filling to 400,000 and 1,000,000
    /// locks, docs/performance.md).
    pub(super) entries: BTreeMap<u64, Arc<Entry>>,
    /// Highest index the writer has committed to disk (lowered by a truncate).
    pub(super) flushed: u64,
    /// The newest committed log id from `save_committed` (encoded), for
    /// `read_committed`; the writer gets its own copy through the queue.
    pub(super) committed: Option<Vec<u8>>,
}

/// One write for the log writer, applied in queue order.
pub(super) enum LogWrite {
    /// Log rows (index, row: the encoded entry).
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
pub(super) fn log_transaction(
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
pub(super) fn commit_writes(
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
pub(super) fn fold_rows(
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
/// `write` and one `fdatasync` per group, see [`crate::store::wal`]); now and then
/// the file is folded into redb in one transaction and starts over. A group
/// with a truncate or a purge folds first and then runs as one redb
/// transaction, so the file only ever holds appends (which is what makes its
/// replay safe).
pub(super) struct LogDisk {
    pub(super) db: Arc<Database>,
    pub(super) wal: Wal,
    /// Rows in the write-ahead file that redb does not have yet.
    pub(super) unfolded: BTreeMap<u64, Vec<u8>>,
    /// The newest committed id written to the file since its last fold.
    pub(super) unfolded_committed: Option<Vec<u8>>,
    /// Fold once the file's records exceed this many bytes.
    pub(super) fold_bytes: u64,
    /// An earlier write failed: the file's end is unknown, refuse every write.
    pub(super) broken: bool,
    /// `warden_wal_fsync_duration_seconds`: each group made durable.
    pub(super) fsync: Option<metrics::Histogram>,
}

impl LogDisk {
    pub(super) fn new(db: Arc<Database>, wal: Wal, fold_bytes: u64) -> Self {
        LogDisk {
            db,
            wal,
            unfolded: BTreeMap::new(),
            unfolded_committed: None,
            fold_bytes,
            broken: false,
            fsync: None,
        }
    }

    /// Moves everything in the write-ahead file into redb and starts the
    /// file over (in that order: the records are void only once redb has
    /// them on disk).
    pub(super) fn fold(&mut self) -> Result<(), io::Error> {
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
        // The storage thread's own timing (metrics only).
        let started = std::time::Instant::now();
        let r = self.try_commit(writes, committed);
        if let Some(h) = &self.fsync {
            h.record(started.elapsed().as_secs_f64());
        }
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
pub(super) fn write_group(
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
pub(super) struct LogWriter {
    tx: Mutex<Option<std::sync::mpsc::Sender<LogWrite>>>,
    thread: Mutex<Option<std::thread::JoinHandle<()>>>,
}

impl LogWriter {
    pub(super) fn start(
        disk: Arc<Mutex<LogDisk>>,
        tail: Arc<Mutex<Tail>>,
    ) -> Result<LogWriter, io::Error> {
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

    pub(super) fn send(&self, w: LogWrite) -> Result<(), io::Error> {
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
