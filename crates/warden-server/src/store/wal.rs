//! The Raft log's write-ahead file: one `write` and one `fdatasync` per group
//! of appends, instead of a redb transaction per group.
//!
//! redb's commit (B-tree pages, free-page lists, checksums, several page
//! writes) was the largest block of server CPU beside the fsync itself
//! (docs/performance.md). So appends go to this file first, as etcd's do to
//! its WAL before they reach bbolt; [`crate::store`] moves ("folds") them into
//! redb in one transaction now and then and starts the file over.
//!
//! # Layout
//!
//! ```text
//! offset 0   header: magic "WDNWAL01" (8) | generation u64 LE (8) | crc32 of the 16 bytes before (4) | 0 (4)
//! offset 24  record: payload length u32 LE | crc32 of (generation LE ‖ payload) u32 LE | payload
//!            record ...
//! ```
//!
//! A payload is one group: a flag byte (1: a committed log id follows, as a
//! u32 LE length and its bytes; 0: none), then rows, each an index u64 LE, a
//! length u32 LE and the row's bytes (the log row of [`crate::store`]: stamp
//! and entry).
//!
//! # Why this recovers
//!
//! - A group's record is written and fsync'd before its appends are
//!   acknowledged (S3), and the next record is written only after that fsync
//!   returned, so only the last record can be torn. Reading stops at the first
//!   record whose length runs past the file or whose checksum fails.
//! - Starting over ([`Wal::reset`]) writes a header with the next generation
//!   and fsyncs it, and overwrites the old records in place from offset 24 on.
//!   The generation is inside every record's checksum, so a record of an
//!   older generation left beyond the new end fails it and ends the reading.
//!   Overwriting blocks that are already written (the file is preallocated
//!   with zeros, and never shortened) leaves `fdatasync` no metadata to write.
//! - The file holds only appends (the store folds it into redb before any
//!   truncate or purge), and replaying a sequence of appends over a state that
//!   already holds them changes nothing, so a crash between a fold's redb
//!   commit and the reset is harmless: the next open folds the same records
//!   again.
//! - Opening always starts a new generation, even with no records, so a torn
//!   record of the old generation can never be read as part of the new one.

use std::collections::BTreeMap;
use std::io;

const MAGIC: &[u8; 8] = b"WDNWAL01";
/// Bytes of the header; the first record starts here.
pub(crate) const HEADER_BYTES: u64 = 24;
/// Bytes of a record's length and checksum.
const RECORD_HEAD_BYTES: usize = 8;

/// The file a [`Wal`] lives in: redb's storage backend trait, so production
/// (a file) and the simulator (an injected disk that drops unsynced writes on
/// a crash) share one implementation.
pub(crate) type WalFile = Box<dyn redb::StorageBackend>;

/// What a write-ahead file held when it was opened: the rows of its current
/// generation (index → row; a later record's row replaces an earlier one) and
/// the newest committed log id written with them (encoded).
#[derive(Debug, Default)]
pub(crate) struct Recovered {
    pub rows: BTreeMap<u64, Vec<u8>>,
    pub committed: Option<Vec<u8>>,
}

/// An open write-ahead file.
pub(crate) struct Wal {
    file: WalFile,
    generation: u64,
    /// Where the next record goes.
    end: u64,
    /// The file's length (it only grows).
    len: u64,
    /// The last record's buffer, kept for the next one (one allocation less
    /// per group on the write path; dropped when a large group grew it).
    buf: Vec<u8>,
}

/// Largest record buffer kept between appends.
const KEEP_BUF_BYTES: usize = 1 << 20;

impl std::fmt::Debug for Wal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Wal")
            .field("generation", &self.generation)
            .field("end", &self.end)
            .finish()
    }
}

fn bad(what: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!("raft log write-ahead file: {what}"),
    )
}

fn header(generation: u64) -> [u8; HEADER_BYTES as usize] {
    let mut h = [0u8; HEADER_BYTES as usize];
    h[..8].copy_from_slice(MAGIC);
    h[8..16].copy_from_slice(&generation.to_le_bytes());
    let crc = crc32fast::hash(&h[..16]);
    h[16..20].copy_from_slice(&crc.to_le_bytes());
    h
}

fn record_crc(generation: u64, payload: &[u8]) -> u32 {
    let mut c = crc32fast::Hasher::new();
    c.update(&generation.to_le_bytes());
    c.update(payload);
    c.finalize()
}

fn le_u32(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

fn le_u64(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(b.get(at..at + 8)?.try_into().ok()?))
}

/// Parses one payload into `into`. A payload whose checksum held but which
/// does not parse was written by a different format: an error, not a torn tail.
fn parse_payload(p: &[u8], into: &mut Recovered) -> Result<(), io::Error> {
    let malformed = || bad("a record with a valid checksum does not parse");
    let mut at = 1;
    match p.first() {
        Some(0) => {}
        Some(1) => {
            let n = le_u32(p, at).ok_or_else(malformed)? as usize;
            at += 4;
            let c = p.get(at..at + n).ok_or_else(malformed)?;
            into.committed = Some(c.to_vec());
            at += n;
        }
        _ => return Err(malformed()),
    }
    while at < p.len() {
        let index = le_u64(p, at).ok_or_else(malformed)?;
        let n = le_u32(p, at + 8).ok_or_else(malformed)? as usize;
        at += 12;
        let row = p.get(at..at + n).ok_or_else(malformed)?;
        into.rows.insert(index, row.to_vec());
        at += n;
    }
    Ok(())
}

impl Wal {
    /// Opens the write-ahead file and reads what its current generation
    /// holds. The caller folds that into redb and then calls [`Wal::reset`]
    /// before the first [`Wal::append`]. An empty or all-zero file holds
    /// nothing; a file whose header is not ours is refused (typed
    /// `InvalidData`, nothing changed).
    pub(crate) fn open(file: WalFile) -> Result<(Wal, Recovered), io::Error> {
        let len = file.len()?;
        let mut bytes = vec![0u8; usize::try_from(len).map_err(|_| bad("too large"))?];
        if len > 0 {
            file.read(0, &mut bytes)?;
        }
        let mut out = Recovered::default();
        let head = bytes.get(..HEADER_BYTES as usize);
        let generation = match head {
            None => {
                if bytes.iter().any(|b| *b != 0) {
                    return Err(bad("shorter than its header and not empty"));
                }
                0
            }
            Some(h) if h.iter().all(|b| *b == 0) => 0,
            Some(h) => {
                if &h[..8] != MAGIC {
                    return Err(bad("not a Warden write-ahead file (bad magic)"));
                }
                if le_u32(h, 16) != Some(crc32fast::hash(&h[..16])) {
                    return Err(bad("header checksum mismatch"));
                }
                let generation = le_u64(h, 8).ok_or_else(|| bad("header"))?;
                let mut at = HEADER_BYTES as usize;
                while let (Some(n), Some(crc)) = (le_u32(&bytes, at), le_u32(&bytes, at + 4)) {
                    let start = at + RECORD_HEAD_BYTES;
                    let Some(payload) = bytes.get(start..start + n as usize) else {
                        break;
                    };
                    if n == 0 || record_crc(generation, payload) != crc {
                        break;
                    }
                    parse_payload(payload, &mut out)?;
                    at = start + n as usize;
                }
                generation
            }
        };
        Ok((
            Wal {
                file,
                generation,
                end: HEADER_BYTES,
                len,
                buf: Vec::new(),
            },
            out,
        ))
    }

    /// Starts the file over with the next generation (header written and
    /// fsync'd): every record written before is void from now on. Call only
    /// once they are durable elsewhere (folded into redb).
    pub(crate) fn reset(&mut self) -> Result<(), io::Error> {
        let next = self.generation + 1;
        self.write_at(0, &header(next))?;
        self.file.sync_data()?;
        self.generation = next;
        self.end = HEADER_BYTES;
        Ok(())
    }

    /// Grows the file with zeros to at least `bytes` (fsync'd), so that
    /// records overwrite written blocks and `fdatasync` has no size or
    /// allocation to record. Never shrinks it below its length before the
    /// call: if growing fails (a full disk), the file goes back to that
    /// length (only zeros beyond the records are dropped) and the error is
    /// returned; the log still works, growing the file as records need.
    pub(crate) fn preallocate(&mut self, bytes: u64) -> Result<(), io::Error> {
        if self.len >= bytes {
            return Ok(());
        }
        let before = self.len;
        let chunk = vec![0u8; 1 << 20];
        let mut at = self.len;
        let grown = (|| {
            while at < bytes {
                let n = (bytes - at).min(chunk.len() as u64);
                self.write_at(at, &chunk[..n as usize])?;
                at += n;
            }
            self.file.sync_data()
        })();
        if grown.is_err() && self.file.set_len(before).is_ok() {
            self.len = before;
        }
        grown
    }

    /// Writes `data` at `offset`, growing the file first if it ends beyond it
    /// (a storage backend need not grow on a write).
    fn write_at(&mut self, offset: u64, data: &[u8]) -> Result<(), io::Error> {
        let end = offset + data.len() as u64;
        if end > self.len {
            self.file.set_len(end)?;
            self.len = end;
        }
        self.file.write(offset, data)
    }

    /// Appends one record holding `rows` (index, row) and, if given, the
    /// newest committed log id, and fsyncs it. Durable when this returns Ok.
    /// After an error the file's end is unknown: the caller must stop using
    /// it (the node goes down; the next open reads up to the last good record).
    pub(crate) fn append<'a>(
        &mut self,
        rows: impl Iterator<Item = (u64, &'a [u8])> + Clone,
        committed: Option<&[u8]>,
    ) -> Result<(), io::Error> {
        let body: usize = rows.clone().map(|(_, r)| 12 + r.len()).sum();
        let extra = committed.map_or(0, |c| 4 + c.len());
        let mut buf = std::mem::take(&mut self.buf);
        buf.clear();
        buf.reserve(RECORD_HEAD_BYTES + 1 + extra + body);
        buf.extend_from_slice(&[0u8; RECORD_HEAD_BYTES]);
        match committed {
            Some(c) => {
                buf.push(1);
                buf.extend_from_slice(
                    &u32::try_from(c.len())
                        .map_err(|_| bad("large"))?
                        .to_le_bytes(),
                );
                buf.extend_from_slice(c);
            }
            None => buf.push(0),
        }
        for (index, row) in rows {
            buf.extend_from_slice(&index.to_le_bytes());
            let n = u32::try_from(row.len()).map_err(|_| bad("row over 4 GiB"))?;
            buf.extend_from_slice(&n.to_le_bytes());
            buf.extend_from_slice(row);
        }
        let payload_len =
            u32::try_from(buf.len() - RECORD_HEAD_BYTES).map_err(|_| bad("record over 4 GiB"))?;
        let crc = record_crc(self.generation, &buf[RECORD_HEAD_BYTES..]);
        buf[..4].copy_from_slice(&payload_len.to_le_bytes());
        buf[4..8].copy_from_slice(&crc.to_le_bytes());
        self.write_at(self.end, &buf)?;
        self.file.sync_data()?;
        self.end += buf.len() as u64;
        if buf.capacity() <= KEEP_BUF_BYTES {
            self.buf = buf;
        }
        Ok(())
    }

    /// Where the next record goes (tests tear the last record with it).
    #[cfg(test)]
    pub(crate) fn end_for_test(&self) -> u64 {
        self.end
    }

    /// The file itself (tests write behind the log's back with it).
    #[cfg(test)]
    pub(crate) fn file_for_test(&self) -> &dyn redb::StorageBackend {
        self.file.as_ref()
    }

    /// Bytes of records in the current generation.
    pub(crate) fn record_bytes(&self) -> u64 {
        self.end - HEADER_BYTES
    }
}

/// Opens (creating if needed) the write-ahead file at `path` on the real disk.
pub(crate) fn open_file(path: &std::path::Path) -> Result<WalFile, io::Error> {
    let existed = path.exists();
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)?;
    if !existed {
        // The new file's name is durable only once its directory is synced
        // (found in review: a power loss could drop the file with entries
        // not yet folded).
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::File::open(dir)?.sync_all()?;
        }
    }
    let backend = redb::backends::FileBackend::new(file)
        .map_err(|e| io::Error::other(format!("{}: {e}", path.display())))?;
    Ok(Box::new(backend))
}

#[cfg(test)]
mod tests {
    use super::*;
    use redb::backends::InMemoryBackend;
    use std::sync::{Arc, Mutex};

    /// An in-memory file two `Wal`s can share (a reopen), with a way to write
    /// bytes behind the Wal's back (a torn write), on a disk that holds at
    /// most `room` bytes (a full disk refuses to grow the file).
    #[derive(Debug, Clone)]
    struct Shared {
        file: Arc<Mutex<InMemoryBackend>>,
        room: u64,
    }

    impl Default for Shared {
        fn default() -> Self {
            Shared {
                file: Arc::default(),
                room: u64::MAX,
            }
        }
    }

    impl redb::StorageBackend for Shared {
        fn len(&self) -> Result<u64, io::Error> {
            self.file.lock().expect("file").len()
        }
        fn read(&self, offset: u64, out: &mut [u8]) -> Result<(), io::Error> {
            self.file.lock().expect("file").read(offset, out)
        }
        fn set_len(&self, len: u64) -> Result<(), io::Error> {
            if len > self.room {
                return Err(io::Error::other("No space left on device"));
            }
            self.file.lock().expect("file").set_len(len)
        }
        fn sync_data(&self) -> Result<(), io::Error> {
            Ok(())
        }
        fn write(&self, offset: u64, data: &[u8]) -> Result<(), io::Error> {
            self.file.lock().expect("file").write(offset, data)
        }
    }

    fn open(f: &Shared) -> (Wal, Recovered) {
        Wal::open(Box::new(f.clone())).expect("open")
    }

    fn rows(r: &Recovered) -> Vec<(u64, Vec<u8>)> {
        r.rows.iter().map(|(i, v)| (*i, v.clone())).collect()
    }

    // S3: every record written (and synced) is read back on open, with the
    // newest committed id, and a later row for an index replaces an earlier one.
    #[test]
    fn records_are_read_back_in_order() {
        let f = Shared::default();
        let (mut wal, got) = open(&f);
        assert!(got.rows.is_empty() && got.committed.is_none());
        wal.reset().expect("reset");
        wal.append([(1, &b"a"[..]), (2, &b"bb"[..])].into_iter(), None)
            .expect("append");
        wal.append([(3, &b"ccc"[..])].into_iter(), Some(b"c2"))
            .expect("append");
        wal.append([(3, &b"C"[..])].into_iter(), Some(b"c3"))
            .expect("append");
        let (_, got) = open(&f);
        assert_eq!(
            rows(&got),
            vec![(1, b"a".to_vec()), (2, b"bb".to_vec()), (3, b"C".to_vec())]
        );
        assert_eq!(got.committed.as_deref(), Some(&b"c3"[..]));
    }

    // S3 with a crash mid-write: a torn last record is dropped, every record
    // before it is kept, and the next generation never reads the torn bytes.
    #[test]
    fn a_torn_last_record_ends_the_log() {
        let f = Shared::default();
        let (mut wal, _) = open(&f);
        wal.reset().expect("reset");
        wal.append([(1, &b"one"[..])].into_iter(), None)
            .expect("append");
        let end = wal.end;
        wal.append([(2, &b"two-two-two"[..])].into_iter(), None)
            .expect("append");
        // Tear the second record: its last bytes never reached the disk.
        let torn_at = wal.end - 3;
        redb::StorageBackend::write(&f, torn_at, &[0xAB; 3]).expect("tear");
        let (mut wal, got) = open(&f);
        assert_eq!(rows(&got), vec![(1, b"one".to_vec())]);
        assert_eq!(end, HEADER_BYTES + 8 + 1 + 12 + 3);
        // A new generation starts over: the old records are void.
        wal.reset().expect("reset");
        wal.append([(5, &b"x"[..])].into_iter(), None)
            .expect("append");
        let (_, got) = open(&f);
        assert_eq!(rows(&got), vec![(5, b"x".to_vec())]);
    }

    // S3: records of an older generation beyond the new end are not read,
    // even when they are intact (the generation is in their checksum).
    #[test]
    fn old_generation_records_are_void_after_reset() {
        let f = Shared::default();
        let (mut wal, _) = open(&f);
        wal.preallocate(4096).expect("prealloc");
        wal.reset().expect("reset");
        for i in 1..=5u64 {
            wal.append([(i, &b"old-row"[..])].into_iter(), None)
                .expect("append");
        }
        wal.reset().expect("reset");
        wal.append([(6, &b"new"[..])].into_iter(), None)
            .expect("append");
        let (_, got) = open(&f);
        assert_eq!(rows(&got), vec![(6, b"new".to_vec())]);
        assert_eq!(redb::StorageBackend::len(&f).expect("len"), 4096);
    }

    // Restartability on a full disk (found in review): preallocating fails,
    // the file keeps only what it had, and records still append and read back.
    #[test]
    fn a_failed_preallocate_leaves_a_working_log() {
        let f = Shared::default();
        let full = Shared {
            room: 3 << 20,
            ..f.clone()
        };
        let (mut wal, _) = Wal::open(Box::new(full)).expect("open");
        wal.reset().expect("reset");
        assert!(wal.preallocate(8 << 20).is_err());
        assert_eq!(redb::StorageBackend::len(&f).expect("len"), HEADER_BYTES);
        wal.append([(1, &b"a"[..])].into_iter(), None)
            .expect("append after a failed preallocate");
        let (_, got) = open(&f);
        assert_eq!(rows(&got), vec![(1, b"a".to_vec())]);
    }

    // Bad input from the disk: a file that is not ours is refused with a
    // typed error naming the file's role, not read as an empty log.
    #[test]
    fn a_foreign_file_is_refused() {
        let f = Shared::default();
        let junk = b"this is not a write-ahead file at all";
        redb::StorageBackend::set_len(&f, junk.len() as u64).expect("grow");
        redb::StorageBackend::write(&f, 0, junk).expect("write");
        let err = Wal::open(Box::new(f.clone())).expect_err("refused");
        assert_eq!(err.kind(), io::ErrorKind::InvalidData);
        assert!(err.to_string().contains("bad magic"), "{err}");
    }
}
