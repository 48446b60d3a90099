//! The node's redb database: opening a data dir (folding its write-ahead
//! file, refusing an older layout), the meta table, and an injected
//! disk as a redb backend.

use std::fmt::Debug;
use std::io;
use std::path::Path;
use std::sync::{Arc, Mutex};

use redb::{Database, ReadableDatabase, ReadableTable};

use super::log_growth::LogGrowth;
use super::log_writer::{fold_rows, Tail, WAL_FILE, WAL_PREALLOC_BYTES};
use super::snapshot_store::{self, SNAPSHOT_CHUNKS};
use super::wal::{self, Wal};
use super::{encode, io_err, StoredSnapshot, KEY_VOTE, LOG, META};
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
        // Before the write-ahead file is opened: opening creates it, and an
        // older layout's file is not ours to read.
        refuse_old_layout(&tx)?;
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
            tx.open_table(LOG).map_err(io_err)?;
            tx.open_table(META).map_err(io_err)?;
            tx.open_table(SNAPSHOT_CHUNKS).map_err(io_err)?;
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
        snapshot_store::write(&tx, meta, &data)?;
        {
            let mut t = tx.open_table(META).map_err(io_err)?;
            t.insert(KEY_VOTE, vote.as_slice()).map_err(io_err)?;
        }
        tx.commit().map_err(io_err)
    }

    /// The stored snapshot (a head and chunks), if any.
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

/// Refuses a data dir written by an older layout (Warden 0.1: its log
/// table is `raft_log_v2`, its rows carry append stamps), which this
/// version does not read (docs/operations.md "Upgrades"). Nothing is
/// written either way.
pub(super) fn refuse_old_layout(tx: &redb::WriteTransaction) -> Result<(), io::Error> {
    let old = tx
        .list_tables()
        .map_err(io_err)?
        .any(|t| OLD_LAYOUT_TABLES.contains(&redb::TableHandle::name(&t)));
    if old {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "this data dir was written by Warden 0.1, whose log and snapshot formats this version does not read; start from an empty data dir (docs/operations.md \"Upgrades\")",
        ));
    }
    Ok(())
}

/// Tables only an older layout has.
const OLD_LAYOUT_TABLES: [&str; 3] = ["raft_log_v2", "raft_log", "append_stamps"];

#[cfg(test)]
mod tests {
    //! Each test names the property it defends.

    use redb::TableDefinition;

    use super::*;

    /// The log table of Warden 0.1.
    const V01_LOG: TableDefinition<u64, &[u8]> = TableDefinition::new("raft_log_v2");

    /// The names of the files in `dir`.
    fn files(dir: &Path) -> Vec<std::ffi::OsString> {
        let mut out: Vec<_> = std::fs::read_dir(dir)
            .expect("read dir")
            .map(|e| e.expect("entry").file_name())
            .collect();
        out.sort();
        out
    }

    /// A table's name and rows (each key as a string, and its value).
    type TableRows = (String, Vec<(String, Vec<u8>)>);

    /// Every table of the database in `dir` with its rows.
    fn contents(dir: &Path) -> Vec<TableRows> {
        let db = Database::create(dir.join("warden.redb")).expect("db");
        let tx = db.begin_read().expect("read");
        let mut out = Vec::new();
        let mut names: Vec<String> = tx
            .list_tables()
            .expect("tables")
            .map(|t| redb::TableHandle::name(&t).to_string())
            .collect();
        names.sort();
        for name in names {
            let rows = if name == "meta" {
                let t = tx.open_table(META).expect("meta");
                t.iter()
                    .expect("iter")
                    .map(|r| {
                        let (k, v) = r.expect("row");
                        (k.value().to_string(), v.value().to_vec())
                    })
                    .collect()
            } else {
                let t = tx.open_table(V01_LOG).expect("log");
                t.iter()
                    .expect("iter")
                    .map(|r| {
                        let (k, v) = r.expect("row");
                        (k.value().to_string(), v.value().to_vec())
                    })
                    .collect()
            };
            out.push((name, rows));
        }
        out
    }

    // "One format" (docs/operations.md "Upgrades"): a data dir written by
    // Warden 0.1 (its log table is `raft_log_v2`) is refused with an error
    // that says so and where to read on, and the open writes nothing: no
    // table added or changed, no write-ahead file created.
    #[test]
    fn a_warden_0_1_data_dir_is_refused_and_left_untouched() {
        let dir = tempfile::tempdir().expect("tempdir");
        {
            let db = Database::create(dir.path().join("warden.redb")).expect("db");
            let tx = db.begin_write().expect("tx");
            {
                let mut log = tx.open_table(V01_LOG).expect("log");
                log.insert(1u64, [1u8, 2, 3].as_slice()).expect("row");
                let mut meta = tx.open_table(META).expect("meta");
                meta.insert(KEY_VOTE, [7u8].as_slice()).expect("vote");
            }
            tx.commit().expect("commit");
        }
        let before = contents(dir.path());
        assert_eq!(files(dir.path()), vec!["warden.redb"]);
        let err = Db::open(dir.path()).expect_err("a 0.1 data dir must be refused");
        assert_eq!(err.kind(), io::ErrorKind::InvalidData);
        let msg = err.to_string();
        assert!(msg.contains("Warden 0.1"), "{msg}");
        assert!(msg.contains("docs/operations.md"), "{msg}");
        // No write-ahead file created, no table added or changed (redb
        // itself may rewrite its header on open: the data is what counts).
        assert_eq!(files(dir.path()), vec!["warden.redb"]);
        assert_eq!(contents(dir.path()), before);
        assert_eq!(
            before.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>(),
            vec!["meta", "raft_log_v2"]
        );
        // Still refused the second time: nothing was half-migrated.
        assert!(Db::open(dir.path()).is_err());
    }

    // The new layout opens: a fresh data dir gets the `log` table and
    // opens again (the refusal keys on the old tables, not on any table).
    #[test]
    fn a_new_data_dir_opens_and_reopens() {
        let dir = tempfile::tempdir().expect("tempdir");
        drop(Db::open(dir.path()).expect("create"));
        let db = Db::open(dir.path()).expect("reopen");
        assert!(db.raft_state_is_empty().expect("empty"));
    }
}
