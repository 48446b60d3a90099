//! The node's redb database: opening a data dir (folding its write-ahead
//! file, migrating an older log layout), the meta table, and an injected
//! disk as a redb backend.

use std::fmt::Debug;
use std::io;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use redb::{Database, ReadableDatabase, ReadableTable};

use super::log_growth::LogGrowth;
use super::log_writer::{fold_rows, Tail, WAL_FILE, WAL_PREALLOC_BYTES};
use super::rows::{decode_row, row_head};
use super::snapshot_store::{self, SNAPSHOT_CHUNKS};
use super::wal::{self, Wal};
use super::{encode, io_err, StoredSnapshot, KEY_VOTE, LOG, META, OLD_LOG, OLD_STAMPS};
use crate::types::{SnapshotMeta, Vote};

/// Opens the storage backend of a node's redb database. None (production):
/// the file `DIR/warden.redb`.
pub trait DiskFactory: Send + Sync + Debug + 'static {
    /// The backend for the database in `data_dir`.
    fn open(&self, data_dir: &Path) -> Box<dyn redb::StorageBackend>;
}

/// The node's redb database (one file in the data dir).
#[derive(Clone, Debug)]
pub struct Db {
    pub(super) db: Arc<Database>,
    /// True on an injected disk (the simulator's memory): IO runs inline
    /// instead of on tokio's blocking pool, whose threads the simulation
    /// does not schedule.
    pub(super) inline_io: bool,
    /// The log's write-ahead file, recovered (folded into redb) when the
    /// database was opened; [`LogStore::new`] takes it.
    pub(super) wal: Arc<Mutex<Option<Wal>>>,
    /// The log's in-memory tail (every entry not yet in redb), shared by the
    /// log store and the snapshot builder's replay.
    pub(super) tail: Arc<Mutex<Tail>>,
    /// Log bytes appended since the last snapshot (the snapshot rule's input).
    pub(super) growth: Arc<LogGrowth>,
}

impl Db {
    /// Opens or creates `DIR/warden.redb`.
    pub fn open(data_dir: &Path) -> Result<Db, io::Error> {
        Self::open_on(data_dir, None)
    }

    /// Opens or creates the database of `data_dir` on an injected disk, or
    /// (None) in the file `DIR/warden.redb`.
    pub fn open_on(data_dir: &Path, disk: Option<&dyn DiskFactory>) -> Result<Db, io::Error> {
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
            tx.open_table(SNAPSHOT_CHUNKS).map_err(io_err)?;
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
            tail: Arc::default(),
            growth: Arc::default(),
        })
    }

    /// Runs `f` (redb IO) on tokio's blocking pool, or inline on an injected disk.
    pub(super) async fn io<T: Send + 'static>(
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

    /// Runs `f` (blocking work on this database, such as [`Self::put_meta`])
    /// on tokio's blocking pool, or inline on an injected disk: the
    /// simulator's runs must not wait on an OS thread, whose timing would
    /// make one seed's runs differ.
    pub async fn blocking<T: Send + 'static>(
        &self,
        f: impl FnOnce() -> T + Send + 'static,
    ) -> Result<T, io::Error> {
        if self.inline_io {
            return Ok(f());
        }
        tokio::task::spawn_blocking(f).await.map_err(io_err)
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
        let has_snapshot = snapshot_store::exists(&tx)?;
        let has_log = log.first().map_err(io_err)?.is_some();
        Ok(!(has_vote || has_snapshot || has_log))
    }
}

impl Db {
    /// Seeds an empty data dir with a snapshot and a vote, in one fsync'd
    /// transaction (`warden snapshot restore`, see [`crate::raft::backup`]).
    pub fn seed_snapshot(
        &self,
        meta: &SnapshotMeta,
        data: Vec<u8>,
        vote: &Vote,
    ) -> Result<(), io::Error> {
        let vote = encode(vote)?;
        let tx = self.db.begin_write().map_err(io_err)?;
        snapshot_store::write(&tx, meta, &data, None)?;
        {
            let mut t = tx.open_table(META).map_err(io_err)?;
            t.insert(KEY_VOTE, vote.as_slice()).map_err(io_err)?;
        }
        tx.commit().map_err(io_err)
    }

    /// The stored snapshot (chunked, or the old single value), if any.
    pub(super) fn load_snapshot(&self) -> Result<Option<StoredSnapshot>, io::Error> {
        let tx = self.db.begin_read().map_err(io_err)?;
        snapshot_store::read(&tx)
    }

    /// Log bytes appended since the last snapshot, and its size.
    pub fn log_growth(&self) -> Arc<LogGrowth> {
        self.growth.clone()
    }

    /// Sum of the log rows' bytes after `index` (what the log has grown by
    /// since a snapshot at `index`).
    pub(super) fn log_bytes_after(&self, index: Option<u64>) -> Result<u64, io::Error> {
        let tx = self.db.begin_read().map_err(io_err)?;
        let t = tx.open_table(LOG).map_err(io_err)?;
        let range = match index {
            Some(i) => t.range(i.saturating_add(1)..),
            None => t.range(0..),
        }
        .map_err(io_err)?;
        let mut bytes = 0u64;
        for item in range {
            bytes += item.map_err(io_err)?.1.value().len() as u64;
        }
        Ok(bytes)
    }
}

/// An injected disk as a redb backend.
#[derive(Debug)]
pub(super) struct DiskBackend(Box<dyn redb::StorageBackend>);

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

/// Moves a log written before the stamp moved into the row (tables
/// `raft_log` + `append_stamps`) into [`LOG`], in the transaction that opens
/// the data dir, and deletes the old tables. Nothing to do (and nothing
/// written) once they are gone.
pub(super) fn migrate_old_log(
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

#[cfg(test)]
mod tests {
    //! Each test names the property it defends.

    use std::time::Duration;

    use openraft::storage::RaftLogStorage;
    use openraft::RaftLogReader;

    use crate::store::rows::encode_stamp;

    use super::*;
    use crate::store::test_support::*;

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
}
