//! The stored snapshot: a head in the meta table ([`KEY_SNAPSHOT_HEAD`]:
//! the snapshot's meta, its length and its number of chunks) and the data in
//! rows of at most [`SNAPSHOT_CHUNK_BYTES`] ([`SNAPSHOT_CHUNKS`], chunk
//! number → bytes), written in one redb transaction. No row is larger than
//! a chunk, so one write never asks redb for one huge value.

use std::io;

use redb::{Database, ReadTransaction, ReadableDatabase, TableDefinition, WriteTransaction};
use serde::{Deserialize, Serialize};

use super::{decode, encode, io_err, StoredSnapshot, META};
use crate::types::SnapshotMeta;

/// Chunk number (0, 1, ...) → at most [`SNAPSHOT_CHUNK_BYTES`] of the
/// stored snapshot's data.
pub(super) const SNAPSHOT_CHUNKS: TableDefinition<u64, &[u8]> =
    TableDefinition::new("snapshot_chunks");
/// The stored snapshot's head ([`SnapshotHead`]).
pub(super) const KEY_SNAPSHOT_HEAD: &str = "snapshot_head";
/// Largest row of [`SNAPSHOT_CHUNKS`]: 1 MiB.
pub(super) const SNAPSHOT_CHUNK_BYTES: usize = 1 << 20;

/// What [`KEY_SNAPSHOT_HEAD`] holds.
#[derive(Serialize, Deserialize)]
struct SnapshotHead {
    meta: SnapshotMeta,
    /// Bytes of data in all the chunks.
    len: u64,
    /// Rows in [`SNAPSHOT_CHUNKS`] (0 ..= chunks - 1).
    chunks: u64,
}

fn corrupt(what: String) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!("stored snapshot: {what}"),
    )
}

/// The stored snapshot's meta, without reading its data.
pub(super) fn read_meta(tx: &ReadTransaction) -> Result<Option<SnapshotMeta>, io::Error> {
    let meta = tx.open_table(META).map_err(io_err)?;
    match meta.get(KEY_SNAPSHOT_HEAD).map_err(io_err)? {
        Some(v) => Ok(Some(decode::<SnapshotHead>(v.value())?.meta)),
        None => Ok(None),
    }
}

/// The stored snapshot, if any.
pub(super) fn read(tx: &ReadTransaction) -> Result<Option<StoredSnapshot>, io::Error> {
    let meta = tx.open_table(META).map_err(io_err)?;
    let head = match meta.get(KEY_SNAPSHOT_HEAD).map_err(io_err)? {
        Some(v) => decode::<SnapshotHead>(v.value())?,
        None => return Ok(None),
    };
    let chunks = tx.open_table(SNAPSHOT_CHUNKS).map_err(io_err)?;
    let len = usize::try_from(head.len).map_err(|_| corrupt(format!("{} bytes", head.len)))?;
    let mut data = Vec::with_capacity(len);
    for n in 0..head.chunks {
        let row = chunks
            .get(n)
            .map_err(io_err)?
            .ok_or_else(|| corrupt(format!("chunk {n} of {} is missing", head.chunks)))?;
        data.extend_from_slice(row.value());
    }
    if data.len() != len {
        return Err(corrupt(format!(
            "{} bytes in {} chunks, the head says {len}",
            data.len(),
            head.chunks
        )));
    }
    Ok(Some(StoredSnapshot {
        meta: head.meta,
        data,
    }))
}

/// Replaces the stored snapshot with `meta` and `data` (chunks and head)
/// in `tx`.
pub(super) fn write(
    tx: &WriteTransaction,
    meta: &SnapshotMeta,
    data: &[u8],
) -> Result<(), io::Error> {
    let mut chunks = tx.open_table(SNAPSHOT_CHUNKS).map_err(io_err)?;
    chunks.retain(|_, _| false).map_err(io_err)?;
    let mut n = 0u64;
    for chunk in data.chunks(SNAPSHOT_CHUNK_BYTES) {
        debug_assert!(chunk.len() <= SNAPSHOT_CHUNK_BYTES);
        chunks.insert(n, chunk).map_err(io_err)?;
        n += 1;
    }
    let head = encode(&SnapshotHead {
        meta: meta.clone(),
        len: data.len() as u64,
        chunks: n,
    })?;
    let mut t = tx.open_table(META).map_err(io_err)?;
    t.insert(KEY_SNAPSHOT_HEAD, head.as_slice())
        .map_err(io_err)?;
    Ok(())
}

/// How [`store_snapshot`] left the stored snapshot.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Stored {
    /// The given snapshot is stored now.
    Written,
    /// A snapshot at a later log id was stored already (a concurrent
    /// install); it stays.
    KeptNewer,
}

/// Stores `meta` and `data` in one fsync'd transaction, unless a snapshot at a later log id is stored: the
/// stored snapshot never moves back, since openraft purges the log up to the
/// newest snapshot it was told of and the replay starts from the stored one.
pub(super) fn store_snapshot(
    db: &Database,
    meta: &SnapshotMeta,
    data: &[u8],
) -> Result<Stored, io::Error> {
    let tx = db.begin_write().map_err(io_err)?;
    let newer = {
        let read = db.begin_read().map_err(io_err)?;
        read_meta(&read)?.is_some_and(|m| m.last_log_id > meta.last_log_id)
    };
    if newer {
        tx.abort().map_err(io_err)?;
        return Ok(Stored::KeptNewer);
    }
    write(&tx, meta, data)?;
    tx.commit().map_err(io_err)?;
    Ok(Stored::Written)
}

/// True when `tx` holds a snapshot.
pub(super) fn exists(tx: &ReadTransaction) -> Result<bool, io::Error> {
    let meta = tx.open_table(META).map_err(io_err)?;
    Ok(meta.get(KEY_SNAPSHOT_HEAD).map_err(io_err)?.is_some())
}

#[cfg(test)]
mod tests {
    //! Each test names the property it defends.

    use redb::ReadableTable;

    use super::*;
    use crate::store::test_support::*;
    use crate::store::Db;

    fn meta(index: u64) -> SnapshotMeta {
        SnapshotMeta {
            last_log_id: Some(log_id(1, index)),
            last_membership: Default::default(),
        }
    }

    // A large snapshot is stored in rows of at most 1 MiB (no single huge
    // redb value) and reads back byte for byte; a smaller one written after
    // it leaves no stale chunk behind.
    #[test]
    fn snapshots_are_stored_in_chunks_of_at_most_one_mib() {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = Db::open(dir.path()).expect("db");
        let data: Vec<u8> = (0..(5 * SNAPSHOT_CHUNK_BYTES / 2))
            .map(|i| i as u8)
            .collect();
        assert_eq!(
            store_snapshot(&db.db, &meta(5), &data).expect("store"),
            Stored::Written
        );
        {
            let tx = db.db.begin_read().expect("read");
            let t = tx.open_table(SNAPSHOT_CHUNKS).expect("chunks");
            let sizes: Vec<usize> = t
                .iter()
                .expect("iter")
                .map(|r| r.expect("row").1.value().len())
                .collect();
            assert_eq!(
                sizes,
                vec![
                    SNAPSHOT_CHUNK_BYTES,
                    SNAPSHOT_CHUNK_BYTES,
                    SNAPSHOT_CHUNK_BYTES / 2
                ]
            );
        }
        let got = db.load_snapshot().expect("load").expect("some");
        assert_eq!(got.data, data);
        assert_eq!(got.meta.last_log_id, Some(log_id(1, 5)));
        store_snapshot(&db.db, &meta(6), b"small").expect("store");
        let tx = db.db.begin_read().expect("read");
        let t = tx.open_table(SNAPSHOT_CHUNKS).expect("t");
        assert_eq!(t.iter().expect("iter").count(), 1);
        drop(t);
        drop(tx);
        assert_eq!(
            db.load_snapshot().expect("load").expect("some").data,
            b"small"
        );
    }

    // Compaction safety: the stored snapshot never moves back (a build that
    // finishes after a newer install does not overwrite it), since the log
    // before the newer one may be purged already.
    #[test]
    fn an_older_snapshot_never_replaces_a_newer_one() {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = Db::open(dir.path()).expect("db");
        store_snapshot(&db.db, &meta(9), b"nine").expect("store");
        assert_eq!(
            store_snapshot(&db.db, &meta(4), b"four").expect("store"),
            Stored::KeptNewer
        );
        assert_eq!(
            db.load_snapshot().expect("load").expect("some").data,
            b"nine"
        );
    }
}
