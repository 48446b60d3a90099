//! Test helpers for the store's tests: hand-set clocks, entries, and a
//! node's log and state machine on a temp dir.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use openraft::impls::leader_id_adv::LeaderId as RaftLeaderId;
use openraft::storage::RaftStateMachine;
use openraft::EntryPayload;
use redb::{Database, ReadableDatabase, ReadableTable};
use warden_core::types::{Command, LeaseGrant, LogEntry, RequestHeader};

use super::wal::{self, Wal};
use super::{decode, Db, LogStore, Stamps, StateMachineStore, KEY_COMMITTED, LOG, META, WAL_FILE};
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

/// A hand-set clock with an epoch: two instances share one time base,
/// like two processes of one boot.
#[derive(Debug, Default)]
pub(super) struct EpochClock(pub(super) Mutex<Duration>);

/// Applies `entries` as openraft hands them over after a commit (no
/// responders), or as a restarted node replays them.
pub(super) async fn apply_entries(sm: &mut StateMachineStore, entries: Vec<Entry>) {
    sm.apply(futures::stream::iter(
        entries.into_iter().map(|e| Ok((e, None))),
    ))
    .await
    .expect("apply");
}

/// A node's log and state machine on `dir`, as a (re)started process opens them.
pub(super) fn open_stores(dir: &Path, clock: Arc<EpochClock>) -> (LogStore, StateMachineStore) {
    let db = Db::open(dir).expect("db");
    let stamps: Stamps = Arc::new(Mutex::new(BTreeMap::new()));
    let clock = NodeClock::new(clock);
    let log = LogStore::new(db.clone(), stamps.clone(), clock.clone()).expect("log store");
    let sm = StateMachineStore::open(db, clock, stamps).expect("sm");
    (log, sm)
}

impl Clock for EpochClock {
    fn now(&self) -> Result<Duration, ClockError> {
        Ok(*self.0.lock().expect("clock"))
    }
    fn epoch(&self) -> Option<u64> {
        Some(42)
    }
}

pub(super) fn log_id(term: u64, index: u64) -> LogId {
    LogId::new(RaftLeaderId { term, node_id: 1 }, index)
}

pub(super) fn entry(term: u64, index: u64, cmd: Command) -> Entry {
    Entry {
        log_id: log_id(term, index),
        payload: EntryPayload::Normal(Request(LogEntry::V1(cmd))),
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

/// A `Promote` by node 1 as leader of `term`, with the grace `grace_ms`.
pub(super) fn promote(term: u64, grace_ms: u64) -> Command {
    Command::Promote(warden_core::types::Promote {
        leader: warden_core::types::LeaderId { term, node_id: 1 },
        grace_ms,
    })
}

/// A duty-clock advance by node 1 as leader of term 1, counting
/// `elapsed_ms` after the advance at `after_index`.
pub(super) fn advance(after_index: Option<u64>, elapsed_ms: u64) -> Command {
    Command::AdvanceClock(warden_core::types::AdvanceClock {
        leader: warden_core::types::LeaderId {
            term: 1,
            node_id: 1,
        },
        after_index,
        elapsed_ms,
    })
}

pub(super) fn stores(dir: &Path, clock: Arc<FixedClock>) -> (LogStore, StateMachineStore) {
    let db = Db::open(dir).expect("open db");
    let stamps: Stamps = Arc::new(Mutex::new(BTreeMap::new()));
    let clock = NodeClock::new(clock);
    let log = LogStore::new(db.clone(), stamps.clone(), clock.clone()).expect("log store");
    let sm = StateMachineStore::open(db, clock, stamps).expect("open sm");
    (log, sm)
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
