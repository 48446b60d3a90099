//! A durable [`FenceStore`] in one redb file.
//!
//! Each check is one redb write transaction: read the highs the claim is
//! checked against, decide ([`decide_claim`]), write the ones that changed,
//! commit with `Durability::Immediate` (redb's default: fsync'd before
//! `commit` returns). redb runs one write transaction at a time, so the read
//! and the write are atomic. [`RedbStore::check_claim_and_write`] (and
//! [`RedbStore::check_and_write`] for an exclusive token) runs the caller's
//! own writes inside that transaction, so the record and the protected write
//! commit together or not at all.
//!
//! Tables:
//!
//! | table | key → value | holds |
//! |---|---|---|
//! | `warden_fence_highest` | resource → u64 | the highest exclusive token (a mutex's, a read-write lock's exclusive); the first version's only table, unchanged, so its files open with their highs kept |
//! | `warden_fence_shared_highest` | resource → u64 | the highest shared token or permit |
//! | `warden_fence_slot_highest` | (resource, slot u32) → u64 | the highest permit per slot |

use std::path::Path;

use redb::{Database, ReadableDatabase, ReadableTable, TableDefinition, WriteTransaction};

use crate::fence::{decide_claim, validate, Accepted, Claim, FenceError, FenceStore, Highs};

/// resource → highest accepted exclusive token (the first version's table:
/// every token it recorded was a mutex's, an exclusive grant).
const HIGHEST: TableDefinition<&str, u64> = TableDefinition::new("warden_fence_highest");
/// resource → highest accepted shared token or permit.
const SHARED: TableDefinition<&str, u64> = TableDefinition::new("warden_fence_shared_highest");
/// (resource, slot) → highest accepted permit.
const SLOTS: TableDefinition<(&str, u32), u64> = TableDefinition::new("warden_fence_slot_highest");

/// A redb-backed fence store.
#[derive(Debug)]
pub struct RedbStore {
    db: Database,
}

fn store_err(e: impl std::fmt::Display) -> FenceError {
    FenceError::Store(e.to_string())
}

/// In `tx`: reads the highs `claim` is checked against, decides, and writes
/// the ones that changed.
fn record(tx: &WriteTransaction, resource: &str, claim: Claim) -> Result<Accepted, FenceError> {
    let mut exclusive = tx.open_table(HIGHEST).map_err(store_err)?;
    let mut shared = tx.open_table(SHARED).map_err(store_err)?;
    let mut slots = match claim.slot() {
        Some(_) => Some(tx.open_table(SLOTS).map_err(store_err)?),
        None => None,
    };
    let old = Highs {
        exclusive: exclusive
            .get(resource)
            .map_err(store_err)?
            .map(|v| v.value()),
        shared: shared.get(resource).map_err(store_err)?.map(|v| v.value()),
        slot: match (&slots, claim.slot()) {
            (Some(table), Some(slot)) => table
                .get((resource, slot))
                .map_err(store_err)?
                .map(|v| v.value()),
            _ => None,
        },
    };
    let (accepted, new) = decide_claim(resource, claim, old)?;
    if let Some(t) = new.exclusive.filter(|_| new.exclusive != old.exclusive) {
        exclusive.insert(resource, t).map_err(store_err)?;
    }
    if let Some(t) = new.shared.filter(|_| new.shared != old.shared) {
        shared.insert(resource, t).map_err(store_err)?;
    }
    if let (Some(table), Some(slot), Some(t)) = (slots.as_mut(), claim.slot(), new.slot) {
        if new.slot != old.slot {
            table.insert((resource, slot), t).map_err(store_err)?;
        }
    }
    Ok(accepted)
}

impl RedbStore {
    /// Opens (or creates) the store file at `path`. A file written before
    /// permits and shared grants existed opens as is: its table is the
    /// highest exclusive token per resource, and the new tables are added
    /// empty.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, FenceError> {
        let db = Database::create(path.as_ref()).map_err(|e| {
            FenceError::Store(format!("cannot open {}: {e}", path.as_ref().display()))
        })?;
        let tx = db.begin_write().map_err(store_err)?;
        {
            tx.open_table(HIGHEST).map_err(store_err)?;
            tx.open_table(SHARED).map_err(store_err)?;
            tx.open_table(SLOTS).map_err(store_err)?;
        }
        tx.commit().map_err(store_err)?;
        Ok(RedbStore { db })
    }

    /// The database, for the caller's own tables (read them with
    /// `begin_read`; write them only through [`RedbStore::check_and_write`]
    /// or [`RedbStore::check_claim_and_write`]).
    pub fn database(&self) -> &Database {
        &self.db
    }

    /// In one transaction: checks `token` for `resource` (an exclusive
    /// claim: a mutex's token), records it, and runs `write` (which may open
    /// and change the caller's own tables). Commits (fsync'd) only if the
    /// check passes and `write` returns `Ok`; otherwise nothing is recorded
    /// or written. `write` gets what the check found.
    pub fn check_and_write<T, E>(
        &self,
        resource: &str,
        token: u64,
        write: impl FnOnce(&WriteTransaction, Accepted) -> Result<T, E>,
    ) -> Result<T, E>
    where
        E: From<FenceError>,
    {
        self.check_claim_and_write(resource, Claim::exclusive(token), write)
    }

    /// [`RedbStore::check_and_write`] for any kind of claim: checks `claim`
    /// by its kind's rule, records it and runs `write`, in one fsync'd
    /// transaction that commits only if both pass.
    pub fn check_claim_and_write<T, E>(
        &self,
        resource: &str,
        claim: Claim,
        write: impl FnOnce(&WriteTransaction, Accepted) -> Result<T, E>,
    ) -> Result<T, E>
    where
        E: From<FenceError>,
    {
        validate(resource, claim.token)?;
        let tx = self.db.begin_write().map_err(store_err)?;
        // On any error below, `tx` is dropped: redb aborts it.
        let accepted = record(&tx, resource, claim)?;
        let out = write(&tx, accepted)?;
        tx.commit().map_err(store_err)?;
        Ok(out)
    }
}

impl FenceStore for RedbStore {
    fn check_claim_and_record(&self, resource: &str, claim: Claim) -> Result<Accepted, FenceError> {
        self.check_claim_and_write(resource, claim, |_, accepted| Ok::<_, FenceError>(accepted))
    }

    fn highs(&self, resource: &str, slot: Option<u32>) -> Result<Highs, FenceError> {
        let tx = self.db.begin_read().map_err(store_err)?;
        let get = |table: TableDefinition<&str, u64>| -> Result<Option<u64>, FenceError> {
            let table = tx.open_table(table).map_err(store_err)?;
            Ok(table.get(resource).map_err(store_err)?.map(|v| v.value()))
        };
        let (exclusive, shared) = (get(HIGHEST)?, get(SHARED)?);
        let slot = match slot {
            Some(s) => {
                let table = tx.open_table(SLOTS).map_err(store_err)?;
                table
                    .get((resource, s))
                    .map_err(store_err)?
                    .map(|v| v.value())
            }
            None => None,
        };
        Ok(Highs {
            exclusive,
            shared,
            slot,
        })
    }
}
