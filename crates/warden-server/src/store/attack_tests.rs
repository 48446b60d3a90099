//! Review attack on the write-ahead log (S3, Raft log matching): every crash
//! point of a random workload of append groups, mixed truncate groups,
//! purges, re-appends and committed ids, replayed from the files as they
//! were on disk at that instant (optionally with the in-flight write torn
//! sector by sector), must reopen, keep every acknowledged entry, bring back
//! no truncated entry, and keep a committed id that names an entry on disk.

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use openraft::impls::leader_id_adv::LeaderId as RaftLeaderId;
use openraft::storage::{IOFlushed, RaftLogStorage};
use openraft::{EntryPayload, RaftLogReader};
use redb::{ReadableDatabase, ReadableTable};
use warden_core::types::{Command, LogEntry, Stamp};

use super::log_writer::{write_group, LogDisk, LogWrite, Tail, WAL_FOLD_BYTES};
use super::rows::{decode_row_entry, encode_row};
use super::wal::Wal;
use super::*;
use crate::types::{Entry, LogId};

/// Every file of the node, with what reached the disk at each fsync.
#[derive(Debug, Default)]
struct Rec {
    cur: BTreeMap<PathBuf, Vec<u8>>,
    /// One event per fsync: the file and its full content after it.
    events: Vec<(PathBuf, Vec<u8>)>,
}

#[derive(Debug, Clone)]
struct RecFile {
    rec: Arc<Mutex<Rec>>,
    path: PathBuf,
}

impl redb::StorageBackend for RecFile {
    fn len(&self) -> Result<u64, io::Error> {
        let r = self.rec.lock().expect("rec");
        Ok(r.cur.get(&self.path).map_or(0, |f| f.len() as u64))
    }
    fn read(&self, offset: u64, out: &mut [u8]) -> Result<(), io::Error> {
        let r = self.rec.lock().expect("rec");
        let f = r.cur.get(&self.path).cloned().unwrap_or_default();
        let end = offset as usize + out.len();
        if end > f.len() {
            return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "past end"));
        }
        out.copy_from_slice(&f[offset as usize..end]);
        Ok(())
    }
    fn set_len(&self, len: u64) -> Result<(), io::Error> {
        let mut r = self.rec.lock().expect("rec");
        r.cur
            .entry(self.path.clone())
            .or_default()
            .resize(len as usize, 0);
        Ok(())
    }
    fn sync_data(&self) -> Result<(), io::Error> {
        let mut r = self.rec.lock().expect("rec");
        let img = r.cur.get(&self.path).cloned().unwrap_or_default();
        r.events.push((self.path.clone(), img));
        Ok(())
    }
    fn write(&self, offset: u64, data: &[u8]) -> Result<(), io::Error> {
        let mut r = self.rec.lock().expect("rec");
        let f = r.cur.entry(self.path.clone()).or_default();
        let end = offset as usize + data.len();
        if end > f.len() {
            f.resize(end, 0);
        }
        f[offset as usize..end].copy_from_slice(data);
        Ok(())
    }
}

#[derive(Debug, Clone)]
struct Factory(Arc<Mutex<Rec>>);

impl DiskFactory for Factory {
    fn open(&self, data_dir: &Path) -> Box<dyn redb::StorageBackend> {
        Box::new(RecFile {
            rec: self.0.clone(),
            path: data_dir.to_path_buf(),
        })
    }
}

/// What the node must hold after acknowledging everything so far.
#[derive(Debug, Clone, Default, PartialEq)]
struct Model {
    /// index → term
    log: BTreeMap<u64, u64>,
    purged: u64,
    /// The newest committed (index, term) written with a group that returned Ok.
    committed: Option<(u64, u64)>,
}

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            0
        } else {
            self.next() % n
        }
    }
}

fn lid(term: u64, index: u64) -> LogId {
    LogId::new(RaftLeaderId { term, node_id: 1 }, index)
}

fn row(term: u64, index: u64, pad: usize) -> (u64, Vec<u8>) {
    // A payload that varies in size so groups cross the fold size.
    let cmd = if pad == 0 {
        Command::Tick
    } else {
        Command::LeaseGrant(warden_core::types::LeaseGrant {
            header: warden_core::types::RequestHeader {
                client_id: pad as u64,
                request_id: index,
                acked_request_id: 0,
            },
            ttl_ms: 1_000,
        })
    };
    let e = Entry {
        log_id: lid(term, index),
        payload: EntryPayload::Normal(crate::types::Request(LogEntry {
            stamp: Stamp::default(),
            command: cmd,
        })),
    };
    (index, encode_row(&e).expect("row"))
}

fn append(rows: Vec<(u64, Vec<u8>)>) -> LogWrite {
    LogWrite::Append {
        rows,
        callback: IOFlushed::noop(),
    }
}

/// Runs a random workload on the recording disk; returns the acknowledged
/// model after each group with the number of fsyncs done by then.
fn run_workload(seed: u64, ops: usize, rec: &Arc<Mutex<Rec>>) -> Vec<(usize, Model)> {
    let dir = PathBuf::from("/node");
    let factory = Factory(rec.clone());
    let db = Db::open_on(&dir, Some(&factory)).expect("open");
    let wal = db.wal.lock().expect("wal").take().expect("wal");
    let mut disk = LogDisk::new(db.db.clone(), wal, 1 << 10);
    let tail = Mutex::new(Tail::default());
    let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
    let mut m = Model::default();
    let mut term = 1u64;
    let mut acks = vec![(rec.lock().expect("rec").events.len(), m.clone())];
    for _ in 0..ops {
        let last = m.log.last_key_value().map_or(m.purged, |(i, _)| *i);
        let c_idx = m.committed.map_or(0, |c| c.0);
        let mut next = m.clone();
        let mut writes = Vec::new();
        let mut committed = None;
        match rng.below(10) {
            // append group, maybe with a committed id
            0..=4 => {
                let mut at = last + 1;
                for _ in 0..=rng.below(3) {
                    let big = rng.below(8) == 0;
                    let n = 1 + rng.below(if big { 40 } else { 5 });
                    let pad = rng.below(3) as usize;
                    let rows: Vec<_> = (at..at + n).map(|i| row(term, i, pad)).collect();
                    for (i, _) in &rows {
                        next.log.insert(*i, term);
                    }
                    at += n;
                    writes.push(append(rows));
                }
                let top = at - 1;
                if rng.below(2) == 0 && top > c_idx {
                    let ci = c_idx + 1 + rng.below(top - c_idx);
                    let ct = next.log[&ci];
                    committed = Some(encode(&Some(lid(ct, ci))).expect("c"));
                    next.committed = Some((ci, ct));
                }
            }
            // re-append what we already have (same ids), uncommitted part
            5 => {
                if last > c_idx && last > m.purged {
                    let from = (c_idx + 1).max(m.purged + 1);
                    let rows: Vec<_> = (from..=last).map(|i| row(m.log[&i], i, 0)).collect();
                    writes.push(append(rows));
                } else {
                    continue;
                }
            }
            // truncate (maybe mixed with appends before and after)
            6..=7 => {
                if last <= c_idx || last <= m.purged {
                    continue;
                }
                let floor = c_idx.max(m.purged);
                let x = floor + rng.below(last - floor);
                if rng.below(2) == 0 {
                    // appends that the truncate then removes
                    let rows: Vec<_> = (last + 1..last + 3).map(|i| row(term, i, 0)).collect();
                    writes.push(append(rows));
                }
                let (done, _rx) = tokio::sync::oneshot::channel();
                writes.push(LogWrite::Truncate { from: x + 1, done });
                let _ = next.log.split_off(&(x + 1));
                term += 1;
                if rng.below(2) == 0 {
                    let n = 1 + rng.below(4);
                    let rows: Vec<_> = (x + 1..x + 1 + n).map(|i| row(term, i, 1)).collect();
                    for (i, _) in &rows {
                        next.log.insert(*i, term);
                    }
                    writes.push(append(rows));
                }
            }
            // purge
            8 => {
                if c_idx <= m.purged {
                    continue;
                }
                let p = m.purged + 1 + rng.below(c_idx - m.purged);
                let t = m.log[&p];
                let (done, _rx) = tokio::sync::oneshot::channel();
                writes.push(LogWrite::Purge {
                    log_id: lid(t, p),
                    done,
                });
                next.log = next.log.split_off(&(p + 1));
                next.purged = p;
            }
            // a committed id alone (rides in the next group)
            _ => {
                let rows = vec![row(term, last + 1, 0)];
                next.log.insert(last + 1, term);
                writes.push(append(rows));
                if last + 1 > c_idx {
                    committed = Some(encode(&Some(lid(term, last + 1))).expect("c"));
                    next.committed = Some((last + 1, term));
                }
            }
        }
        write_group(&mut disk, &tail, writes, committed).expect("group");
        m = next;
        acks.push((rec.lock().expect("rec").events.len(), m.clone()));
    }
    // A clean stop folds.
    disk.fold().expect("fold");
    acks.push((rec.lock().expect("rec").events.len(), m.clone()));
    acks
}

/// The files as they were after `k` fsyncs; with `tear`, the write the
/// next fsync made durable is half there (random 512-byte sectors).
fn image_at(rec: &Rec, k: usize, tear: Option<&mut Rng>) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut files: BTreeMap<PathBuf, Vec<u8>> = BTreeMap::new();
    for (p, img) in &rec.events[..k] {
        files.insert(p.clone(), img.clone());
    }
    if let (Some(rng), Some((p, new))) = (tear, rec.events.get(k)) {
        let old = files.get(p).cloned().unwrap_or_default();
        let mut mixed = old.clone();
        if new.len() > mixed.len() {
            mixed.resize(new.len(), 0);
        }
        for s in (0..new.len()).step_by(512) {
            let e = (s + 512).min(new.len());
            if rng.below(2) == 0 {
                mixed[s..e].copy_from_slice(&new[s..e]);
            }
        }
        files.insert(p.clone(), mixed);
    }
    files
}

/// Opens a node from `files` and reads back its log, purged index and committed id.
#[allow(clippy::type_complexity)]
fn recover(
    files: BTreeMap<PathBuf, Vec<u8>>,
) -> Result<(BTreeMap<u64, u64>, u64, Option<(u64, u64)>), String> {
    let rec = Arc::new(Mutex::new(Rec {
        cur: files,
        events: Vec::new(),
    }));
    let factory = Factory(rec);
    let db = Db::open_on(Path::new("/node"), Some(&factory)).map_err(|e| e.to_string())?;
    let tx = db.db.begin_read().map_err(|e| e.to_string())?;
    let t = tx.open_table(LOG).map_err(|e| e.to_string())?;
    let mut log = BTreeMap::new();
    for item in t.iter().map_err(|e| e.to_string())? {
        let (k, v) = item.map_err(|e| e.to_string())?;
        let e = decode_row_entry(v.value()).map_err(|e| e.to_string())?;
        assert_eq!(e.log_id.index(), k.value());
        log.insert(k.value(), e.log_id.committed_leader_id().term);
    }
    let meta = tx.open_table(META).map_err(|e| e.to_string())?;
    let purged = meta
        .get(KEY_PURGED)
        .map_err(|e| e.to_string())?
        .map(|v| decode::<LogId>(v.value()).expect("purged").index())
        .unwrap_or(0);
    let committed = meta
        .get(KEY_COMMITTED)
        .map_err(|e| e.to_string())?
        .and_then(|v| decode::<Option<LogId>>(v.value()).expect("committed"))
        .map(|l| (l.index(), l.committed_leader_id().term));
    Ok((log, purged, committed))
}

/// Reopens `files` and checks the log it recovers (see [`check`]);
/// `(seed, k, torn)` as there, `what` names the crash point in the error.
fn recover_and_check(
    files: BTreeMap<PathBuf, Vec<u8>>,
    what: &str,
    (seed, k, torn): (u64, usize, bool),
    acks: &[(usize, Model)],
) -> Result<(), String> {
    let got = recover(files).map_err(|e| format!("{what}: open failed: {e}"))?;
    check(seed, k, torn, acks, &got)
}

fn check(
    seed: u64,
    k: usize,
    torn: bool,
    acks: &[(usize, Model)],
    got: &(BTreeMap<u64, u64>, u64, Option<(u64, u64)>),
) -> Result<(), String> {
    let (log, purged, committed) = got;
    // A: the last model acknowledged at or before k; B: the one in flight.
    // (Before the first ack: the data dir was being created; empty.)
    let empty = Model::default();
    let (a, b) = match acks.iter().rposition(|(n, _)| *n <= k) {
        Some(ai) => (&acks[ai].1, acks.get(ai + 1).map(|x| &x.1)),
        None => (&empty, acks.first().map(|x| &x.1)),
    };
    let above = |m: &Model| -> BTreeMap<u64, u64> {
        m.log
            .iter()
            .filter(|(i, _)| **i > *purged)
            .map(|(i, t)| (*i, *t))
            .collect()
    };
    let ctx = format!("seed {seed} crash after fsync {k} torn={torn}");
    let ok_log = above(a) == *log || b.is_some_and(|b| above(b) == *log);
    if !ok_log {
        return Err(format!(
            "{ctx}: recovered log {:?}\n acknowledged {:?}\n in flight {:?}",
            log,
            a.log,
            b.map(|b| &b.log)
        ));
    }
    if !(*purged == a.purged || b.is_some_and(|b| *purged == b.purged)) {
        return Err(format!("{ctx}: purged {purged} vs acked {}", a.purged));
    }
    if let Some((ci, ct)) = committed {
        if *ci > *purged && log.get(ci) != Some(ct) {
            return Err(format!(
                "{ctx}: committed ({ci},{ct}) names an entry not on disk; log {log:?}"
            ));
        }
    }
    // The committed id written with an acknowledged group is not lost or
    // replaced by an older one.
    if let Some((aci, _)) = a.committed {
        if committed.is_none_or(|(ci, _)| ci < aci) {
            return Err(format!(
                "{ctx}: committed {committed:?} older than acknowledged ({aci})"
            ));
        }
    }
    Ok(())
}

fn sweep(seeds: std::ops::Range<u64>, ops: usize, tears: usize) {
    let mut failures = Vec::new();
    for seed in seeds {
        let rec = Arc::new(Mutex::new(Rec::default()));
        let acks = run_workload(seed, ops, &rec);
        let rec = rec.lock().expect("rec");
        let mut rng = Rng(seed | 1);
        // Crash points while redb itself creates its file are redb's
        // (a half-created database is not one): start once the write-ahead
        // file exists, i.e. the database was created.
        let first = first_wal_sync(&rec);
        for k in first..=rec.events.len() {
            for t in 0..=tears {
                let torn = t > 0;
                let files = image_at(&rec, k, if torn { Some(&mut rng) } else { None });
                let what = format!("seed {seed} crash after fsync {k} torn={torn}");
                failures.extend(recover_and_check(files, &what, (seed, k, torn), &acks).err());
            }
        }
    }
    assert_no_failures(&failures);
}

// S3 / log matching: a crash after any fsync (the rest of the writes lost)
// recovers the acknowledged log, no truncated entry, a sound committed id.
#[test]
fn every_crash_point_recovers_the_acknowledged_log() {
    sweep(1..5, 60, 0);
}

// S3 / restartability: the same with the in-flight write torn at 512-byte
// sector granularity (power loss; a kill -9 never tears).
#[test]
fn every_torn_crash_point_recovers_the_acknowledged_log() {
    sweep(100..103, 60, 2);
}

// Raft log reads (what apply and replication read): an entry the writer
// has not yet moved into redb must never leave the in-memory tail. The
// interleaving below is what the writer thread does when openraft submits a
// truncate while an append is still queued (TruncateLog has no IO-flushed
// condition in openraft), and later a purge ahead of a large queued append:
// `truncate_after` lowers `flushed`, the queued append's group raises it back
// to its old top, and the purge group (unfolded empty: in_redb = flushed)
// then evicts queued entries at or below that stale top.
#[tokio::test]
async fn queued_entries_below_a_stale_flushed_are_not_evicted() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Db::open(dir.path()).expect("db");
    let wal = db.wal.lock().expect("wal").take().expect("wal");
    let disk = Arc::new(Mutex::new(LogDisk::new(db.db.clone(), wal, WAL_FOLD_BYTES)));
    let tail = Arc::new(Mutex::new(Tail::default()));
    let mut log = LogStore {
        db: db.clone(),
        max_stamp: MaxStamp::default(),
        tail: tail.clone(),
        disk: disk.clone(),
        writer: None,
    };
    let ent = |term: u64, i: u64| Entry {
        log_id: lid(term, i),
        payload: EntryPayload::Normal(crate::types::Request(LogEntry {
            stamp: Stamp::default(),
            command: Command::Tick,
        })),
    };
    // `LogStore::append` up to the send: the entries join the tail.
    let queue_append = |term: u64, r: std::ops::RangeInclusive<u64>| {
        let mut t = tail.lock().expect("tail");
        let mut rows = Vec::new();
        for i in r {
            t.entries.insert(i, std::sync::Arc::new(ent(term, i)));
            rows.push(row(term, i, 0));
        }
        append(rows)
    };
    // 1..=100 appended and durable.
    log.append((1..=100).map(|i| ent(1, i)), IOFlushed::noop())
        .await
        .expect("append");
    // 101..=200 queued; openraft then truncates after 50 (its tail step runs
    // at once), and the writer takes both in one group.
    let queued = queue_append(1, 101..=200);
    {
        let mut t = tail.lock().expect("tail");
        let _ = t.entries.split_off(&51);
        t.flushed = t.flushed.min(50);
    }
    let (done, _rx) = tokio::sync::oneshot::channel();
    write_group(
        &mut disk.lock().expect("disk"),
        &tail,
        vec![queued, LogWrite::Truncate { from: 51, done }],
        None,
    )
    .expect("group");
    // The new leader's entries 51..=60 are appended and durable.
    log.append((51..=60).map(|i| ent(2, i)), IOFlushed::noop())
        .await
        .expect("append");
    // A purge up to 40 (committed) is taken alone by the writer while a large
    // append 61..=5000 is already in the tail, queued behind it.
    {
        let mut t = tail.lock().expect("tail");
        let rest = t.entries.split_off(&41);
        t.entries = rest;
    }
    let big = queue_append(2, 61..=5000);
    let (done, _rx) = tokio::sync::oneshot::channel();
    write_group(
        &mut disk.lock().expect("disk"),
        &tail,
        vec![LogWrite::Purge {
            log_id: lid(1, 40),
            done,
        }],
        None,
    )
    .expect("purge group");
    write_group(&mut disk.lock().expect("disk"), &tail, vec![big], None).expect("append group");
    // Every entry 41..=300 is in the log (acknowledged even); read them as
    // openraft does.
    let got = log.try_get_log_entries(41..=300).await.expect("read");
    let idx: Vec<u64> = got.iter().map(|e| e.log_id.index()).collect();
    assert_eq!(
        idx,
        (41..=300).collect::<Vec<_>>(),
        "entries missing from the log read (evicted from the tail before redb had them)"
    );
}

// "A wiped node refuses to start" (docs/operations.md): a data dir whose
// warden.redb is gone but whose write-ahead file (from a kill -9, so never
// folded) is still there must not come up as a node with a log and no vote
// (the wipe guard in lib.rs checks `raft_state_is_empty`): either the open
// refuses the orphan write-ahead file or it is ignored.
#[test]
fn an_orphan_write_ahead_file_does_not_become_a_log_without_a_vote() {
    let dir = tempfile::tempdir().expect("tempdir");
    drop(Db::open(dir.path()).expect("create"));
    {
        // Entries that reached only the write-ahead file before a kill -9.
        let file = wal::open_file(&dir.path().join(WAL_FILE)).expect("file");
        let (mut wal, _) = Wal::open(file).expect("wal");
        let rows: Vec<(u64, Vec<u8>)> = (1..=3).map(|i| row(1, i, 0)).collect();
        wal.append(rows.iter().map(|(i, r)| (*i, r.as_slice())), None)
            .expect("append");
    }
    // The operator removes the database file only (the data dir was one
    // file before the write-ahead file existed).
    std::fs::remove_file(dir.path().join("warden.redb")).expect("rm");
    let err = Db::open(dir.path()).expect_err("an orphan write-ahead file is refused");
    assert_eq!(err.kind(), std::io::ErrorKind::InvalidData);
    let msg = err.to_string();
    assert!(
        msg.contains(WAL_FILE) && msg.contains("warden.redb"),
        "{msg}"
    );
    // Refused again (nothing was committed by the refused open).
    assert!(Db::open(dir.path()).is_err());
}

/// The fsyncs a recovery from `files` makes (each: the file and its content).
fn recovery_events(files: &BTreeMap<PathBuf, Vec<u8>>) -> Vec<(PathBuf, Vec<u8>)> {
    let rec = Arc::new(Mutex::new(Rec {
        cur: files.clone(),
        events: Vec::new(),
    }));
    drop(Db::open_on(Path::new("/node"), Some(&Factory(rec.clone()))).expect("first recovery"));
    let events = std::mem::take(&mut rec.lock().expect("rec").events);
    events
}

// S3 / restartability with a second crash during the recovery itself (after
// each fsync of the fold into redb and of the reset): the next open still
// recovers the acknowledged log, no truncated entry, a sound committed id.
#[test]
fn a_crash_during_recovery_recovers_again() {
    let mut failures = Vec::new();
    for seed in 200..201u64 {
        let rec = Arc::new(Mutex::new(Rec::default()));
        let acks = run_workload(seed, 60, &rec);
        let rec = rec.lock().expect("rec");
        let first = first_wal_sync(&rec);
        for k in first..=rec.events.len() {
            let files = image_at(&rec, k, None);
            let events = recovery_events(&files);
            for j in 0..events.len() {
                let mut again = files.clone();
                for (p, img) in &events[..=j] {
                    again.insert(p.clone(), img.clone());
                }
                let what = format!("seed {seed} crash {k}, recovery crash {j}");
                failures.extend(recover_and_check(again, &what, (seed, k, false), &acks).err());
            }
        }
    }
    assert_no_failures(&failures);
}

/// Fails with the count and the first five failures, if there are any.
fn assert_no_failures(failures: &[String]) {
    assert!(
        failures.is_empty(),
        "{} failing crash points; first ones:\n{}",
        failures.len(),
        failures[..failures.len().min(5)].join("\n")
    );
}

/// The first fsync of the write-ahead file: the database exists from there on.
fn first_wal_sync(rec: &Rec) -> usize {
    rec.events
        .iter()
        .position(|(p, _)| p.ends_with(WAL_FILE))
        .expect("wal synced")
}
