//! A durable [`FenceStore`] in one redb file.
//!
//! Each check is one redb write transaction: read the highest token, compare
//! ([`decide`]), write the new one, commit with `Durability::Immediate`
//! (redb's default: fsync'd before `commit` returns). redb runs one write
//! transaction at a time, so the read and the write are atomic.
//! [`RedbStore::check_and_write`] runs the caller's own writes inside that
//! transaction, so the record and the protected write commit together or not
//! at all.

use std::path::Path;

use redb::{Database, ReadableDatabase, ReadableTable, TableDefinition, WriteTransaction};

use crate::fence::{decide, validate, Accepted, FenceError, FenceStore};

/// resource → highest accepted token.
const HIGHEST: TableDefinition<&str, u64> = TableDefinition::new("warden_fence_highest");

/// A redb-backed fence store.
#[derive(Debug)]
pub struct RedbStore {
    db: Database,
}

fn store_err(e: impl std::fmt::Display) -> FenceError {
    FenceError::Store(e.to_string())
}

impl RedbStore {
    /// Opens (or creates) the store file at `path`.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, FenceError> {
        let db = Database::create(path.as_ref()).map_err(|e| {
            FenceError::Store(format!("cannot open {}: {e}", path.as_ref().display()))
        })?;
        let tx = db.begin_write().map_err(store_err)?;
        {
            tx.open_table(HIGHEST).map_err(store_err)?;
        }
        tx.commit().map_err(store_err)?;
        Ok(RedbStore { db })
    }

    /// The database, for the caller's own tables (read them with
    /// `begin_read`; write them only through [`RedbStore::check_and_write`]).
    pub fn database(&self) -> &Database {
        &self.db
    }

    /// In one transaction: checks `token` for `resource`, records it, and runs
    /// `write` (which may open and change the caller's own tables). Commits
    /// (fsync'd) only if the check passes and `write` returns `Ok`; otherwise
    /// nothing is recorded or written. `write` gets what the check found.
    pub fn check_and_write<T, E>(
        &self,
        resource: &str,
        token: u64,
        write: impl FnOnce(&WriteTransaction, Accepted) -> Result<T, E>,
    ) -> Result<T, E>
    where
        E: From<FenceError>,
    {
        validate(resource, token)?;
        let tx = self.db.begin_write().map_err(store_err)?;
        let accepted = {
            let mut table = tx.open_table(HIGHEST).map_err(store_err)?;
            let highest = table.get(resource).map_err(store_err)?.map(|v| v.value());
            let accepted = decide(resource, highest, token)?;
            table.insert(resource, token).map_err(store_err)?;
            accepted
        };
        // On any error below, `tx` is dropped: redb aborts it.
        let out = write(&tx, accepted)?;
        tx.commit().map_err(store_err)?;
        Ok(out)
    }
}

impl FenceStore for RedbStore {
    fn check_and_record(&self, resource: &str, token: u64) -> Result<Accepted, FenceError> {
        self.check_and_write(resource, token, |_, accepted| Ok::<_, FenceError>(accepted))
    }

    fn highest(&self, resource: &str) -> Result<Option<u64>, FenceError> {
        let tx = self.db.begin_read().map_err(store_err)?;
        let table = tx.open_table(HIGHEST).map_err(store_err)?;
        Ok(table.get(resource).map_err(store_err)?.map(|v| v.value()))
    }
}
