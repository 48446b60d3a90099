//! Snapshot encoding of the [`LockTable`]: one version byte, then postcard.
//!
//! Every collection in the table is ordered (`BTreeMap`, `BTreeSet`, `Vec`),
//! so equal tables give byte-identical snapshots on every replica (SEMANTICS
//! "Time", last point). Decoding never panics: garbage gives a
//! [`SnapshotError`], and a decoded table must pass
//! [`LockTable::check_invariants`].

use crate::table::LockTable;

/// The current snapshot format version (the first byte). Version 2 is
/// version 1's table followed by the forced-release audit trail; version 3
/// adds the published values (elections) after the trail. Versions 1 and 2
/// still load (with an empty trail / no values).
pub const SNAPSHOT_VERSION: u8 = 3;

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

impl LockTable {
    /// Encodes the whole table: [`SNAPSHOT_VERSION`] then postcard. Equal
    /// tables give identical bytes.
    pub fn to_snapshot(&self) -> Vec<u8> {
        // postcard cannot fail on these types (every sequence and map has a
        // known length); should it ever, the bare version byte is refused by
        // `from_snapshot` instead of loading a wrong table.
        postcard::to_extend(self, vec![SNAPSHOT_VERSION])
            .and_then(|bytes| postcard::to_extend(&self.audit, bytes))
            .and_then(|bytes| postcard::to_extend(&self.values, bytes))
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
        if !rest.is_empty() {
            return Err(SnapshotError::TrailingBytes(rest.len()));
        }
        table
            .check_invariants()
            .map_err(SnapshotError::Inconsistent)?;
        Ok(table)
    }
}
