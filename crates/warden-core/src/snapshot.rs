//! Snapshot encoding of the [`LockTable`]: one version byte, then postcard.
//!
//! Every collection in the table is ordered (`BTreeMap`, `BTreeSet`, `Vec`),
//! so equal tables give byte-identical snapshots on every replica
//! (docs/semantics.md "Time", last point). Decoding never panics: garbage
//! gives a [`SnapshotError`], and a decoded table must pass
//! [`LockTable::check_invariants`].
//!
//! Layout (version 1; each part postcard, one after the other): the table
//! body (cluster time, the last two promotes, leases without owners,
//! resources with their instants, `(None, _)` outcome records, counters);
//! the forced-release audit trail; published values; the auth table; lease
//! owners (lease id → principal, for owned leases); principals' outcome
//! records; the auth audit trail; multi-locks; max-holds, then waiters'
//! max-holds. Derived state (per principal usage, the time index, the
//! outcome table's indexes) is rebuilt on load. No other version is read:
//! nothing has been released (docs/operations.md "Upgrades").

use std::collections::{BTreeMap, VecDeque};

use crate::outcome::NamedRecords;
use crate::table::LockTable;
use crate::types::{AuthAuditRecord, LeaseId, Principal};

/// The snapshot format version (the first byte).
pub const SNAPSHOT_VERSION: u8 = 1;

/// Why a snapshot could not be loaded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SnapshotError {
    /// Zero bytes.
    #[error("empty snapshot")]
    Empty,
    /// The version byte names a format this build does not know.
    #[error("unsupported snapshot version {0} (this build reads version {SNAPSHOT_VERSION})")]
    UnsupportedVersion(u8),
    /// The body is not a postcard-encoded table.
    #[error("snapshot does not decode: {0}")]
    Decode(String),
    /// Bytes were left over after the table.
    #[error("snapshot has {0} trailing bytes")]
    TrailingBytes(usize),
    /// The table decoded but is internally inconsistent.
    #[error("snapshot is inconsistent: {0}")]
    Inconsistent(String),
}

fn decode(e: postcard::Error) -> SnapshotError {
    SnapshotError::Decode(e.to_string())
}

impl LockTable {
    /// Encodes the whole table: [`SNAPSHOT_VERSION`] then postcard. Equal
    /// tables give identical bytes.
    pub fn to_snapshot(&self) -> Vec<u8> {
        // postcard cannot fail on these types (every sequence and map has a
        // known length); should it ever, the bare version byte is refused by
        // `from_snapshot` instead of loading a wrong table.
        let owners: BTreeMap<LeaseId, &Principal> = self
            .leases
            .iter()
            .filter_map(|(id, l)| l.owner.as_ref().map(|p| (*id, p)))
            .collect();
        postcard::to_extend(self, vec![SNAPSHOT_VERSION])
            .and_then(|bytes| postcard::to_extend(&self.audit, bytes))
            .and_then(|bytes| postcard::to_extend(&self.values, bytes))
            .and_then(|bytes| postcard::to_extend(&self.auth, bytes))
            .and_then(|bytes| postcard::to_extend(&owners, bytes))
            .and_then(|bytes| postcard::to_extend(self.outcomes.named(), bytes))
            .and_then(|bytes| postcard::to_extend(&self.auth_audit, bytes))
            .and_then(|bytes| postcard::to_extend(&self.multis, bytes))
            .and_then(|bytes| postcard::to_extend(&self.max_holds, bytes))
            .and_then(|bytes| postcard::to_extend(&self.wait_max_holds, bytes))
            .unwrap_or_else(|_| vec![SNAPSHOT_VERSION])
    }

    /// Decodes a snapshot made by [`LockTable::to_snapshot`].
    ///
    /// # Errors
    /// [`SnapshotError`] for an empty input, an unknown version, a body that
    /// does not decode, trailing bytes, or a table that fails
    /// [`LockTable::check_invariants`].
    pub fn from_snapshot(bytes: &[u8]) -> Result<Self, SnapshotError> {
        let (version, body) = bytes.split_first().ok_or(SnapshotError::Empty)?;
        if *version != SNAPSHOT_VERSION {
            return Err(SnapshotError::UnsupportedVersion(*version));
        }
        let (mut table, rest): (LockTable, &[u8]) =
            postcard::take_from_bytes(body).map_err(decode)?;
        let (audit, rest) = postcard::take_from_bytes(rest).map_err(decode)?;
        table.audit = audit;
        let (values, rest) = postcard::take_from_bytes(rest).map_err(decode)?;
        table.values = values;
        let (auth, rest) = postcard::take_from_bytes(rest).map_err(decode)?;
        table.auth = auth;
        let (owners, rest): (BTreeMap<LeaseId, Principal>, _) =
            postcard::take_from_bytes(rest).map_err(decode)?;
        for (id, owner) in owners {
            let lease = table.leases.get_mut(&id).ok_or_else(|| {
                SnapshotError::Inconsistent(format!(
                    "owner of lease {id}, which is not in the table"
                ))
            })?;
            lease.owner = Some(owner);
        }
        let (named, rest): (NamedRecords, _) = postcard::take_from_bytes(rest).map_err(decode)?;
        table.outcomes.set_named(named);
        let (auth_audit, rest): (VecDeque<AuthAuditRecord>, _) =
            postcard::take_from_bytes(rest).map_err(decode)?;
        table.auth_audit = auth_audit;
        let (multis, rest) = postcard::take_from_bytes(rest).map_err(decode)?;
        table.multis = multis;
        let (max_holds, rest) = postcard::take_from_bytes(rest).map_err(decode)?;
        table.max_holds = max_holds;
        let (wait_max_holds, rest) = postcard::take_from_bytes(rest).map_err(decode)?;
        table.wait_max_holds = wait_max_holds;
        table.timeline = table.computed_timeline();
        table.usage = table.computed_usage();
        if !rest.is_empty() {
            return Err(SnapshotError::TrailingBytes(rest.len()));
        }
        table
            .check_invariants()
            .map_err(SnapshotError::Inconsistent)?;
        Ok(table)
    }
}
