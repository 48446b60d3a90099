//! The openraft log store: appends handed to the log writer, reads from
//! the in-memory tail, then redb; the largest cluster-time stamp in the log
//! ([`MaxStamp`]).

use std::fmt::Debug;
use std::io;
use std::ops::RangeBounds;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use openraft::entry::RaftEntry;
use openraft::storage::{IOFlushed, RaftLogStorage};
use openraft::{LogState, OptionalSend, RaftLogReader};
use redb::{ReadableDatabase, ReadableTable};
use serde::Deserialize;

use super::db::Db;
use super::log_writer::{
    write_group, LogDisk, LogWrite, LogWriter, Tail, SIM_WAL_FOLD_BYTES, WAL_FOLD_BYTES,
};
use super::rows::{decode_row_entry, encode_row};
use super::{decode, encode, io_err, KEY_COMMITTED, KEY_PURGED, KEY_VOTE, LOG};
use crate::types::{Entry, LogId, TypeConfig, Vote};

/// The largest cluster-time stamp (ms) of any entry this node's log has
/// held since the process started, uncommitted and truncated ones included
/// (each was read from a real leader's clock before now), and of the log
/// found on disk at start. A new leader's clock starts no lower
/// (docs/semantics.md "Time"). Shared with the node; never decreases.
/// It also keeps the newest term of a stamped entry the log has held: a
/// time heard from an older term's leader is not used for `B`
/// (`crate::cluster_time`).
#[derive(Clone, Debug, Default)]
pub struct MaxStamp(Arc<(AtomicU64, AtomicU64)>);

impl MaxStamp {
    /// The largest stamp seen (0: none).
    pub fn get(&self) -> u64 {
        self.0 .0.load(Ordering::Acquire)
    }

    /// The newest term of a stamped entry seen (0: none).
    pub fn term(&self) -> u64 {
        self.0 .1.load(Ordering::Acquire)
    }

    /// Raises it to `at_ms` if that is larger.
    pub fn observe(&self, at_ms: u64) {
        self.0 .0.fetch_max(at_ms, Ordering::AcqRel);
    }

    /// Raises it to the stamp of `e`, and the term to `e`'s, if it has one
    /// (a Warden command).
    pub fn observe_entry(&self, e: &Entry) {
        if let openraft::EntryPayload::Normal(r) = &e.payload {
            self.observe(r.0.stamp.at_ms);
            self.0
                 .1
                .fetch_max(e.log_id.leader_id.term, Ordering::AcqRel);
        }
    }
}

/// The Raft log store: a write-ahead file folded into redb.
#[derive(Clone)]
pub struct LogStore {
    pub(super) db: Db,
    pub(super) max_stamp: MaxStamp,
    pub(super) tail: Arc<Mutex<Tail>>,
    /// The log's disk; the writer thread holds its lock while it runs.
    pub(super) disk: Arc<Mutex<LogDisk>>,
    /// The group-commit writer; None on an injected disk (the simulator),
    /// where each write is committed inline.
    pub(super) writer: Option<Arc<LogWriter>>,
}

impl Debug for LogStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LogStore")
            .field("writer", &self.writer.is_some())
            .finish_non_exhaustive()
    }
}

impl LogStore {
    /// A log store over `db` that raises `max_stamp` with every entry it
    /// holds. Takes the database's write-ahead file: a second store on one
    /// [`Db`] is refused.
    pub fn new(db: Db, max_stamp: MaxStamp) -> Result<Self, io::Error> {
        Self::with_fsync_metric(db, max_stamp, None)
    }

    /// [`LogStore::new`], recording each durable write of a group of
    /// entries (one fsync) in `fsync` (`warden_wal_fsync_duration_seconds`).
    /// Given here, not later: the writer thread holds the disk from its
    /// start.
    pub fn with_fsync_metric(
        db: Db,
        max_stamp: MaxStamp,
        fsync: Option<metrics::Histogram>,
    ) -> Result<Self, io::Error> {
        // The log on disk (folded at open): one decode per entry, once.
        {
            let tx = db.db.begin_read().map_err(io_err)?;
            let t = tx.open_table(LOG).map_err(io_err)?;
            for item in t.iter().map_err(io_err)? {
                let (_, v) = item.map_err(io_err)?;
                max_stamp.observe_entry(&decode_row_entry(v.value())?);
            }
        }
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
        let mut disk = LogDisk::new(db.db.clone(), wal, fold_bytes);
        disk.fsync = fsync;
        let disk = Arc::new(Mutex::new(disk));
        let tail = db.tail.clone();
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
            max_stamp,
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
            // Pointers only under the lock (see `Tail::entries`).
            let got: Vec<Arc<Entry>> = match first {
                Some(_) => t
                    .entries
                    .range((start, end))
                    .map(|(_, e)| Arc::clone(e))
                    .collect(),
                None => Vec::new(),
            };
            (got, first)
        };
        let from_tail: Vec<Entry> = from_tail.into_iter().map(Arc::unwrap_or_clone).collect();
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
        let mut rows = Vec::new();
        let mut kept = Vec::new();
        let mut bytes = 0u64;
        for e in entries {
            let row = encode_row(&e)?;
            bytes += row.len() as u64;
            self.max_stamp.observe_entry(&e);
            rows.push((e.index(), row));
            kept.push(e);
        }
        self.db.growth.appended(bytes);
        {
            // Readable once this returns (openraft's contract), durable when
            // the callback fires.
            let mut tail = self.tail.lock().map_err(io_err)?;
            for e in kept {
                tail.entries.insert(e.index(), Arc::new(e));
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

#[cfg(test)]
mod tests {
    //! Each test names the property it defends.

    use openraft::storage::IOFlushed;
    use redb::ReadableDatabase;
    use warden_core::types::Command;

    use crate::store::wal::{self, Wal};
    use crate::store::WAL_FILE;

    use super::*;
    use crate::store::test_support::*;

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
            <crate::types::TypeConfig as openraft::type_config::TypeConfigExt>::oneshot();
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
                <crate::types::TypeConfig as openraft::type_config::TypeConfigExt>::oneshot();
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
                <crate::types::TypeConfig as openraft::type_config::TypeConfigExt>::oneshot();
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

    // Raft log repair: truncate_after drops the suffix;
    // purge drops the prefix and remembers the last purged id.
    #[tokio::test]
    async fn truncate_and_purge() {
        let dir = tempfile::tempdir().expect("tempdir");
        let clock = Arc::new(FixedClock::default());
        let (mut log, _) = stores(dir.path(), clock);
        let entries = (1..=6).map(|i| entry(1, i, Command::Tick));
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
    // again, and their stamps count towards the log's largest stamp ("Time":
    // a new leader's clock starts no lower); a torn record after them is
    // dropped, not read (nor its stamp).
    #[tokio::test]
    async fn entries_only_in_the_write_ahead_file_are_recovered_on_open() {
        let dir = tempfile::tempdir().expect("tempdir");
        drop(Db::open(dir.path()).expect("create"));
        {
            let file = wal::open_file(&dir.path().join(WAL_FILE)).expect("file");
            let (mut wal, rec) = Wal::open(file).expect("wal");
            assert!(rec.rows.is_empty());
            let rows: Vec<(u64, Vec<u8>)> = (1..=3)
                .map(|i| {
                    let e = stamped(1, i, 7_000 + i, grant(i, 5_000));
                    (i, encode_row(&e).expect("row"))
                })
                .collect();
            wal.append(rows.iter().map(|(i, r)| (*i, r.as_slice())), None)
                .expect("append");
            let committed = encode(&Some(log_id(1, 2))).expect("id");
            let torn = encode_row(&stamped(1, 4, 99_000, Command::Tick)).expect("row");
            wal.append([(4, torn.as_slice())].into_iter(), Some(&committed))
                .expect("append");
            // The last record loses its final byte: it was never fsync'd.
            let end = wal.end_for_test();
            wal.file_for_test().write(end - 1, &[0x5A]).expect("tear");
        }
        let (mut log, _) = stores(dir.path(), Arc::new(FixedClock::default()));
        let state = log.get_log_state().await.expect("state");
        assert_eq!(state.last_log_id, Some(log_id(1, 3)));
        assert_eq!(
            log.max_stamp.get(),
            7_003,
            "the torn record's stamp is not read"
        );
        let got = log.try_get_log_entries(1..10).await.expect("read");
        assert_eq!(
            got.iter().map(|e| e.log_id.index()).collect::<Vec<_>>(),
            vec![1, 2, 3]
        );
        assert_eq!(log.read_committed().await.expect("committed"), None);
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
                    <crate::types::TypeConfig as openraft::type_config::TypeConfigExt>::oneshot();
                let entries = (start..start + 50).map(|i| entry(1, i, Command::Tick));
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
                (1..=6).map(|i| entry(1, i, Command::Tick)),
                IOFlushed::noop(),
            )
            .await
            .expect("append");
            log.truncate_after(Some(log_id(1, 3)))
                .await
                .expect("truncate");
            let (tx, rx) =
                <crate::types::TypeConfig as openraft::type_config::TypeConfigExt>::oneshot();
            log.append(
                (4..=5).map(|i| entry(2, i, Command::Tick)),
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
}
