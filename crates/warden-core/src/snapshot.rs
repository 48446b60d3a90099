//! Snapshot encoding of the [`LockTable`]: one version byte, then postcard.
//!
//! Every collection in the table is ordered (`BTreeMap`, `BTreeSet`, `Vec`),
//! so equal tables give byte-identical snapshots on every replica
//! (docs/semantics.md "Time", last point). Decoding never panics: garbage
//! gives a [`SnapshotError`], and a decoded table must pass
//! [`LockTable::check_invariants`].
//!
//! Layout (each part postcard, one after the other):
//!
//! | part | since version |
//! |---|---|
//! | the table body (leases without owners, resources, `(None, _)` outcome records, counters) | 1 |
//! | the forced-release audit trail | 2 |
//! | published values (elections) | 3 |
//! | the auth table (roles, grants, role quotas, principals' roles, cluster-wide limits and default quota) | 4 |
//! | lease owners: lease id → principal, for owned leases | 4 |
//! | principals' outcome records: principal → client id → record | 4 |
//! | the auth audit trail | 4 |
//!
//! An older version loads with the parts it lacks empty: no roles (only
//! `root` and anonymous callers can act), default limits, ownerless leases,
//! every outcome record `(None, id)`, empty trails. Derived state (per
//! principal usage, the outcome table's indexes) is rebuilt on load.

use std::collections::{BTreeMap, VecDeque};

use crate::outcome::NamedRecords;
use crate::table::LockTable;
use crate::types::{AuthAuditRecord, LeaseId, Principal};

/// The current snapshot format version (the first byte): see the module
/// docs for what each version adds. Versions 1 to 3 still load.
pub const SNAPSHOT_VERSION: u8 = 4;

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
        if !(1..=SNAPSHOT_VERSION).contains(version) {
            return Err(SnapshotError::UnsupportedVersion(*version));
        }
        let (mut table, mut rest): (LockTable, &[u8]) =
            postcard::take_from_bytes(body).map_err(|e| SnapshotError::Decode(e.to_string()))?;
        if *version >= 2 {
            let (audit, after) = postcard::take_from_bytes(rest)
                .map_err(|e| SnapshotError::Decode(e.to_string()))?;
            table.audit = audit;
            rest = after;
        }
        if *version >= 3 {
            let (values, after) = postcard::take_from_bytes(rest)
                .map_err(|e| SnapshotError::Decode(e.to_string()))?;
            table.values = values;
            rest = after;
        }
        if *version >= 4 {
            let (auth, after) = postcard::take_from_bytes(rest).map_err(decode)?;
            table.auth = auth;
            let (owners, after): (BTreeMap<LeaseId, Principal>, _) =
                postcard::take_from_bytes(after).map_err(decode)?;
            for (id, owner) in owners {
                let lease = table.leases.get_mut(&id).ok_or_else(|| {
                    SnapshotError::Inconsistent(format!("owner of lease {id}, which is not live"))
                })?;
                lease.owner = Some(owner);
            }
            let (named, after): (NamedRecords, _) =
                postcard::take_from_bytes(after).map_err(decode)?;
            table.outcomes.set_named(named);
            let (auth_audit, after): (VecDeque<AuthAuditRecord>, _) =
                postcard::take_from_bytes(after).map_err(decode)?;
            table.auth_audit = auth_audit;
            rest = after;
        }
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
