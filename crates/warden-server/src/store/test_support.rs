//! Test helpers for the store's tests: a hand-set clock, stamped entries, and a
//! node's log and state machine on a temp dir.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use openraft::impls::leader_id_adv::LeaderId as RaftLeaderId;
use openraft::storage::RaftStateMachine;
use openraft::EntryPayload;
use redb::{Database, ReadableDatabase, ReadableTable};
use warden_core::types::{Command, LeaderId, LeaseGrant, LogEntry, RequestHeader, Stamp};

use super::wal::{self, Wal};
use super::{
    decode, Db, LogStore, MaxStamp, StateMachineStore, KEY_COMMITTED, LOG, META, WAL_FILE,
};
use crate::clock::{Clock, ClockError, NodeClock};
use crate::types::{Entry, LogId, Request};

/// A clock the test sets by hand.
#[derive(Debug, Default)]
pub(super) struct FixedClock(pub(super) Mutex<Duration>);

impl Clock for FixedClock {
    fn now(&self) -> Result<Duration, ClockError> {
        Ok(*self.0.lock().expect("clock"))
    }
}

/// Applies `entries` as openraft hands them over after a commit (no
/// responders), or as a restarted node replays them.
pub(super) async fn apply_entries(sm: &mut StateMachineStore, entries: Vec<Entry>) {
    sm.apply(futures::stream::iter(
        entries.into_iter().map(|e| Ok((e, None))),
    ))
    .await
    .expect("apply");
}

/// A node's log and state machine on `dir`, as a (re)started process opens
/// them: one [`MaxStamp`] shared by both, as `start.rs` wires it.
pub(super) fn stores(dir: &Path, clock: Arc<FixedClock>) -> (LogStore, StateMachineStore) {
    let db = Db::open(dir).expect("open db");
    let max_stamp = MaxStamp::default();
    let clock = NodeClock::new(clock);
    let log = LogStore::new(db.clone(), max_stamp.clone()).expect("log store");
    let sm = StateMachineStore::open(db, clock, max_stamp).expect("open sm");
    (log, sm)
}

pub(super) fn log_id(term: u64, index: u64) -> LogId {
    LogId::new(RaftLeaderId { term, node_id: 1 }, index)
}

/// The stamp node 1 puts on an entry as leader of `term` at cluster time
/// `at_ms`.
pub(super) fn stamp(term: u64, at_ms: u64) -> Stamp {
    Stamp {
        leader: LeaderId { term, node_id: 1 },
        at_ms,
    }
}

/// Entry `index` of `term`, stamped by node 1 as that term's leader at
/// cluster time 0.
pub(super) fn entry(term: u64, index: u64, cmd: Command) -> Entry {
    stamped(term, index, 0, cmd)
}

/// Entry `index` of `term`, stamped by node 1 as that term's leader at
/// cluster time `at_ms`.
pub(super) fn stamped(term: u64, index: u64, at_ms: u64, cmd: Command) -> Entry {
    Entry {
        log_id: log_id(term, index),
        payload: EntryPayload::Normal(Request(LogEntry {
            stamp: stamp(term, at_ms),
            command: cmd,
        })),
    }
}

pub(super) fn grant(request_id: u64, ttl_ms: u64) -> Command {
    Command::LeaseGrant(LeaseGrant {
        header: RequestHeader {
            client_id: 9,
            request_id,
            acked_request_id: 0,
        },
        ttl_ms,
    })
}

/// What a node restarted now would find on disk: the log indexes and the
/// committed index, from the write-ahead file (read first: a fold moves
/// rows from it into redb, never the other way) and then redb.
pub(super) fn on_disk(dir: &Path, db: &Database) -> (BTreeMap<u64, ()>, Option<u64>) {
    let file = wal::open_file(&dir.join(WAL_FILE)).expect("wal file");
    let (_, rec) = Wal::open(file).expect("read wal");
    let mut rows: BTreeMap<u64, ()> = rec.rows.keys().map(|i| (*i, ())).collect();
    let mut committed = rec
        .committed
        .map(|c| decode::<Option<LogId>>(&c).expect("decode"))
        .map(|c| c.map(|l| l.index()));
    let tx = db.begin_read().expect("read");
    let meta = tx.open_table(META).expect("meta");
    if committed.is_none() {
        committed = meta
            .get(KEY_COMMITTED)
            .expect("get")
            .map(|v| decode::<Option<LogId>>(v.value()).expect("dec"))
            .map(|c| c.map(|l| l.index()));
    }
    let log = tx.open_table(LOG).expect("log");
    for item in log.iter().expect("iter") {
        rows.insert(item.expect("row").0.value(), ());
    }
    (rows, committed.flatten())
}
