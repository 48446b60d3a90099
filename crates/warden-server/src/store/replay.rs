//! Building a snapshot without the state machine's lock: the lock table at
//! an applied log id is the stored snapshot's table with the committed log
//! entries after it, up to that id, applied again. Apply is deterministic
//! (warden-core reads no clock or randomness and takes only the entry's
//! index, leader and command: [`apply_to_table`], the one call both the live
//! state machine and this replay make), so the replayed table encodes to the
//! bytes the live table had at that id.
//!
//! The log entries it needs are on disk: openraft purges the log only up to
//! the newest snapshot it was told of (`calc_purge_upto`: never past the
//! snapshot's last log id), and the state machine stores each snapshot
//! before telling it, never replacing a stored one with an older
//! (`snapshot_store::store_snapshot`). Reading the stored snapshot and the log in one
//! redb read transaction gives a view in which every entry after that
//! snapshot is present; one that is not is an io error
//! ([`io::ErrorKind::NotFound`]), never a panic.

use std::collections::BTreeMap;
use std::io;
use std::sync::{Arc, Mutex};

use openraft::EntryPayload;
use redb::{Database, ReadableDatabase};
use warden_core::table::{Applied, LockTable};
use warden_core::types::LogEntry;

use super::log_writer::Tail;
use super::rows::decode_row_entry;
use super::snapshot_store;
use super::{io_err, KEY_PURGED, LOG, META};
use crate::types::{leader_of, Entry, LogId, SnapshotMeta};

/// Applies one committed command to the lock table: the live state machine
/// and the replay both change the table only through this.
pub(super) fn apply_to_table(table: &mut LockTable, log_id: &LogId, entry: &LogEntry) -> Applied {
    table.apply(
        log_id.index(),
        leader_of(log_id),
        entry.stamp,
        &entry.command,
    )
}

/// What [`replay`] found.
pub(super) enum Replayed {
    /// The table at the asked-for log id, encoded.
    Table(Vec<u8>),
    /// The stored snapshot is at or past the asked-for log id (an install
    /// or an earlier build got there first): it is the answer.
    Stored(SnapshotMeta, Vec<u8>),
    /// There is no stored snapshot and the log does not start at index 0
    /// (purged, or a data dir seeded without one): the table cannot be
    /// rebuilt from disk.
    NoBase,
}

fn missing(index: u64, base: Option<u64>) -> io::Error {
    io::Error::new(
        io::ErrorKind::NotFound,
        format!(
            "snapshot replay: log entry {index} is missing (stored snapshot at {}); \
             the log was purged past the stored snapshot",
            base.map_or_else(|| "none".to_owned(), |b| b.to_string())
        ),
    )
}

/// The lock table at `upto` (an applied, so committed, log id): the stored
/// snapshot's table and the log after it replayed. `tail` is the log's
/// in-memory tail (every entry not yet in redb).
pub(super) fn replay(
    db: &Database,
    tail: &Mutex<Tail>,
    upto: &LogId,
) -> Result<Replayed, io::Error> {
    let target = upto.index();
    // The tail before the read transaction: an entry missing from this copy
    // was in redb when it was taken, and stays in the transaction's view
    // unless purged, which only happens below a newer stored snapshot, which
    // the view then holds.
    // Pointers only under the lock: the Raft core's `append` waits for it
    // (see `Tail::entries`).
    let from_tail: BTreeMap<u64, Arc<Entry>> = {
        let t = tail.lock().map_err(io_err)?;
        t.entries
            .range(..=target)
            .map(|(i, e)| (*i, Arc::clone(e)))
            .collect()
    };
    let tx = db.begin_read().map_err(io_err)?;
    let stored = snapshot_store::read(&tx)?;
    let base = stored
        .as_ref()
        .and_then(|s| s.meta.last_log_id.as_ref().map(|l| l.index()));
    let mut table = match stored {
        Some(s) if s.meta.last_log_id.as_ref() >= Some(upto) => {
            return Ok(Replayed::Stored(s.meta, s.data));
        }
        Some(s) => LockTable::from_snapshot(&s.data).map_err(|e| {
            io::Error::new(io::ErrorKind::InvalidData, format!("stored snapshot: {e}"))
        })?,
        None => {
            let meta = tx.open_table(META).map_err(io_err)?;
            if meta.get(KEY_PURGED).map_err(io_err)?.is_some() {
                return Ok(Replayed::NoBase);
            }
            LockTable::new()
        }
    };
    let start = base.map_or(0, |b| b + 1);
    let log = tx.open_table(LOG).map_err(io_err)?;
    let mut rows = log.range(start..=target).map_err(io_err)?.peekable();
    let mut last: Option<LogId> = None;
    for index in start..=target {
        // Rows the tail also holds were taken from it.
        while let Some(Ok((k, _))) = rows.peek() {
            if k.value() >= index {
                break;
            }
            rows.next();
        }
        let decoded;
        let e = match from_tail.get(&index) {
            Some(e) => e.as_ref(),
            None => match rows.next() {
                Some(row) => {
                    let (k, v) = row.map_err(io_err)?;
                    if k.value() != index {
                        if base.is_none() && index == 0 {
                            // No snapshot and no entry 0: the log was cut.
                            return Ok(Replayed::NoBase);
                        }
                        return Err(missing(index, base));
                    }
                    decoded = decode_row_entry(v.value())?;
                    &decoded
                }
                // No snapshot and not even entry 0: nothing to start from.
                None if base.is_none() && index == 0 => return Ok(Replayed::NoBase),
                None => return Err(missing(index, base)),
            },
        };
        if e.log_id.index() != index {
            return Err(missing(index, base));
        }
        if let EntryPayload::Normal(req) = &e.payload {
            apply_to_table(&mut table, &e.log_id, &req.0);
        }
        last = Some(e.log_id);
    }
    // The entry at `upto` is the one that was applied (same term too): the
    // log read did not diverge from what the machine applied.
    if last.as_ref() != Some(upto) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!(
                "snapshot replay: log entry {target} is {last:?}, the state machine applied {upto:?}"
            ),
        ));
    }
    Ok(Replayed::Table(table.to_snapshot()))
}

#[cfg(test)]
mod tests {
    //! Each test names the property it defends.

    use std::sync::Arc;

    use openraft::storage::{IOFlushed, RaftLogStorage, RaftStateMachine};
    use openraft::RaftLogReader;
    use warden_core::types::{
        Acquire, AuthChange, AuthOp, Authorized, Command, LeaseSpec, LockKind, Mode, Permission,
        Principal, Release, RequestHeader,
    };

    use super::*;
    use crate::store::test_support::*;
    use crate::store::{LogStore, StateMachineStore};

    fn header(request_id: u64) -> RequestHeader {
        RequestHeader {
            client_id: 7,
            request_id,
            acked_request_id: 0,
        }
    }

    fn acquire(request_id: u64, resource: &str, wait_timeout_ms: u64) -> Acquire {
        let lease = LeaseSpec::New { ttl_ms: 30_000 };
        Acquire::mutex(header(request_id), resource, lease, wait_timeout_ms, 500)
    }

    /// A mix of commands touching every part of the snapshot: leases,
    /// holders and waiters, a semaphore, a multi-lock, a max-hold, an auth
    /// change and a lease owned by a principal, releases, a batch, and
    /// entries that do not touch the table but move time (a tick).
    fn commands(from_request: u64) -> Vec<Command> {
        let r = from_request;
        let user = Principal::new("alice").expect("principal");
        vec![
            grant(r, 10_000),
            Command::Acquire(acquire(r + 1, "a", 0)),
            // Queued behind "a"'s holder: a waiter.
            Command::Acquire(acquire(r + 2, "a", 60_000)),
            Command::Acquire(Acquire {
                resources: vec!["m1".into(), "m2".into(), "m3".into()],
                ..acquire(r + 3, "m1", 0)
            }),
            Command::Acquire(acquire(r + 4, "capped", 0).with_max_hold(5_000)),
            Command::Acquire(
                acquire(r + 5, "sem", 0).of_kind(LockKind::Semaphore { limit: 3 }, Mode::Shared),
            ),
            Command::Authorized(Authorized {
                principal: None,
                command: Box::new(Command::AuthChange(AuthChange {
                    header: header(r + 6),
                    op: AuthOp::GrantPermission {
                        role: "writers".into(),
                        prefix: "w/".into(),
                        permission: Permission::Lock,
                    },
                    at_unix_ms: 1,
                })),
            }),
            Command::Authorized(Authorized {
                principal: Some(user),
                command: Box::new(Command::Acquire(acquire(r + 7, "owned", 0))),
            }),
            Command::Tick,
            Command::Batch(vec![
                Command::Acquire(acquire(r + 8, "b1", 0)),
                Command::Acquire(acquire(r + 9, "b2", 0)),
            ]),
            Command::Release(Release {
                header: header(r + 10),
                resource: Some("b1".into()),
                lease_id: 99_999,
                fencing_token: None,
            }),
        ]
    }

    /// Appends `cmds` from `index` on and applies them, stamped 100 ms
    /// apart in cluster time (entry `i` at `1_000 + 100 i`), so replays
    /// also carry the table's `now` and every instant counted from it.
    async fn append_and_apply(
        log: &mut LogStore,
        sm: &mut StateMachineStore,
        index: u64,
        cmds: Vec<Command>,
    ) -> u64 {
        let n = cmds.len() as u64;
        let entries: Vec<_> = cmds
            .into_iter()
            .enumerate()
            .map(|(i, c)| {
                let at = index + i as u64;
                stamped(1, at, 1_000 + 100 * at, c)
            })
            .collect();
        log.append(entries, IOFlushed::noop())
            .await
            .expect("append");
        let e = log
            .try_get_log_entries(index..index + n)
            .await
            .expect("read");
        apply_entries(sm, e).await;
        index + n
    }

    fn live(sm: &StateMachineStore) -> (Vec<u8>, LogId) {
        let m = sm.shared.machine.lock().expect("machine");
        (m.table.to_snapshot(), m.last_applied.expect("applied"))
    }

    // Snapshot determinism (docs/semantics.md "Time", last point): the table
    // rebuilt from the log (no stored snapshot yet) and then from a stored
    // snapshot plus the log after it encodes to exactly the live table's
    // bytes, after leases, waiters, multi-locks, max-holds, an auth change
    // and an owned lease; and `build_snapshot` stores those bytes.
    #[tokio::test]
    async fn replayed_snapshot_equals_the_live_table() {
        use openraft::RaftSnapshotBuilder;
        let dir = tempfile::tempdir().expect("tempdir");
        let clock = Arc::new(FixedClock::default());
        let (mut log, mut sm) = stores(dir.path(), clock.clone());
        let next = append_and_apply(&mut log, &mut sm, 0, commands(1)).await;
        let (bytes, upto) = live(&sm);
        // From the start of the log.
        match replay(&sm.db.db, &sm.db.tail, &upto).expect("replay") {
            Replayed::Table(b) => assert_eq!(b, bytes),
            _ => panic!("expected a replayed table"),
        }
        let built = sm.build_snapshot().await.expect("build");
        assert_eq!(built.meta.last_log_id, Some(upto));
        assert_eq!(built.snapshot, bytes);
        // From the stored snapshot, with more entries after it (the same
        // commands again: the outcome table answers repeats, new resources).
        let mut more = commands(100);
        more.extend(commands(1));
        let _ = append_and_apply(&mut log, &mut sm, next, more).await;
        let (bytes, upto) = live(&sm);
        assert_ne!(Some(upto), built.meta.last_log_id);
        match replay(&sm.db.db, &sm.db.tail, &upto).expect("replay") {
            Replayed::Table(b) => assert_eq!(b, bytes),
            _ => panic!("expected a replayed table"),
        }
        let built = sm.build_snapshot().await.expect("build");
        assert_eq!(built.snapshot, bytes);
        let current = sm
            .get_current_snapshot()
            .await
            .expect("read")
            .expect("stored");
        assert_eq!(current.snapshot, bytes);
        assert_eq!(current.meta.last_log_id, Some(upto));
        // Nothing new since: the stored snapshot is the answer.
        match replay(&sm.db.db, &sm.db.tail, &upto).expect("replay") {
            Replayed::Stored(meta, b) => {
                assert_eq!(meta.last_log_id, Some(upto));
                assert_eq!(b, bytes);
            }
            _ => panic!("expected the stored snapshot"),
        }
    }

    // Compaction safety: an entry missing after the stored snapshot (the
    // log purged past it) is a typed io error naming the index, not a panic
    // and not a wrong table.
    #[tokio::test]
    async fn a_missing_entry_is_an_io_error() {
        let dir = tempfile::tempdir().expect("tempdir");
        let clock = Arc::new(FixedClock::default());
        let (mut log, mut sm) = stores(dir.path(), clock);
        let _ = append_and_apply(&mut log, &mut sm, 0, commands(1)).await;
        let (_, upto) = live(&sm);
        // Entry 4 gone from the disk and from the tail.
        sm.db.tail.lock().expect("tail").entries.clear();
        drop(log);
        {
            let tx = sm.db.db.begin_write().expect("tx");
            {
                let mut t = tx.open_table(LOG).expect("log");
                t.remove(4).expect("remove");
            }
            tx.commit().expect("commit");
        }
        let err = match replay(&sm.db.db, &sm.db.tail, &upto) {
            Err(e) => e,
            Ok(_) => panic!("replayed over a missing entry"),
        };
        assert_eq!(err.kind(), io::ErrorKind::NotFound);
        assert!(err.to_string().contains("log entry 4 is missing"), "{err}");
    }

    // No stored snapshot and a log that does not start at index 0 (purged):
    // nothing to replay from, so the builder copies the live table instead
    // (and that snapshot is the live table's bytes).
    #[tokio::test]
    async fn a_log_without_its_start_falls_back_to_a_copy() {
        use openraft::RaftSnapshotBuilder;
        let dir = tempfile::tempdir().expect("tempdir");
        let clock = Arc::new(FixedClock::default());
        let (mut log, mut sm) = stores(dir.path(), clock);
        let _ = append_and_apply(&mut log, &mut sm, 1, commands(1)).await;
        let (bytes, upto) = live(&sm);
        assert!(matches!(
            replay(&sm.db.db, &sm.db.tail, &upto).expect("replay"),
            Replayed::NoBase
        ));
        let built = sm.build_snapshot().await.expect("build");
        assert_eq!(built.snapshot, bytes);
        assert_eq!(built.meta.last_log_id, Some(upto));
    }

    // The snapshot rule's inputs (raft::snapshot_schedule): appends count
    // their row bytes, a snapshot built resets the count to what was
    // appended after its mark and records its size, and a restart starts
    // from the log on disk after the stored snapshot.
    #[tokio::test]
    async fn log_growth_counts_bytes_since_the_last_snapshot() {
        use openraft::RaftSnapshotBuilder;
        let dir = tempfile::tempdir().expect("tempdir");
        let clock = Arc::new(FixedClock::default());
        let built_len = {
            let (mut log, mut sm) = stores(dir.path(), clock.clone());
            let growth = sm.db.log_growth();
            assert_eq!(growth.bytes_since_snapshot(), 0);
            let next = append_and_apply(&mut log, &mut sm, 0, commands(1)).await;
            let appended = growth.bytes_since_snapshot();
            assert!(appended > 0);
            let built = sm.build_snapshot().await.expect("build");
            assert_eq!(growth.bytes_since_snapshot(), 0);
            assert_eq!(growth.snapshot_bytes(), built.snapshot.len() as u64);
            let _ = append_and_apply(&mut log, &mut sm, next, commands(100)).await;
            assert!(growth.bytes_since_snapshot() > 0);
            built.snapshot.len() as u64
        };
        // Restarted: the rows after the snapshot count again, and its size.
        let (log, sm) = stores(dir.path(), clock);
        drop(log);
        let growth = sm.db.log_growth();
        // The snapshot is at index 10 (the first 11 commands).
        let after = sm.db.log_bytes_after(Some(10)).expect("log bytes");
        assert!(after > 0);
        assert_eq!(growth.bytes_since_snapshot(), after);
        assert_eq!(growth.snapshot_bytes(), built_len);
    }
}
