//! Cluster time in the store (docs/semantics.md "Time"): the log's largest
//! stamp ([`MaxStamp`], where a new leader's clock starts) and the table's
//! `now` through snapshots. Each test names the property it defends.

use std::sync::Arc;

use openraft::storage::{IOFlushed, RaftLogStorage, RaftStateMachine};
use openraft::{RaftLogReader, RaftSnapshotBuilder};
use warden_core::types::Command;

use super::test_support::*;
use super::{LogStore, StateMachineStore};
use crate::types::Entry;

/// Appends `entries` and waits until they are on disk.
async fn append_durably(log: &mut LogStore, entries: Vec<Entry>) {
    let (tx, rx) = <crate::types::TypeConfig as openraft::type_config::TypeConfigExt>::oneshot();
    log.append(entries, IOFlushed::signal(tx))
        .await
        .expect("append");
    rx.await.expect("callback").expect("flushed");
}

/// Appends `entries` durably and applies them.
async fn append_and_apply(log: &mut LogStore, sm: &mut StateMachineStore, entries: Vec<Entry>) {
    let (first, last) = (
        entries.first().expect("entries").log_id.index(),
        entries.last().expect("entries").log_id.index(),
    );
    append_durably(log, entries).await;
    let read = log.try_get_log_entries(first..=last).await.expect("read");
    apply_entries(sm, read).await;
}

/// The table's `now` and every lease's `expires_at_ms`.
fn times(sm: &StateMachineStore) -> (u64, Vec<(u64, u64)>) {
    let m = sm.shared.machine.lock().expect("machine");
    let leases = m
        .table
        .leases()
        .map(|l| (l.lease_id, l.expires_at_ms))
        .collect();
    (m.table.now_ms(), leases)
}

// "Time" (a new leader's base is at least every stamp its log has held,
// uncommitted ones included): the log store's `MaxStamp` is the largest
// stamp of every entry appended, whatever their order, and an entry later
// truncated still counts (it was read from a real leader's clock). The
// state machine reads the same value (one `MaxStamp` per node).
#[tokio::test]
async fn max_stamp_rises_with_every_appended_entry_truncated_ones_included() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (mut log, sm) = stores(dir.path(), Arc::new(FixedClock::default()));
    assert_eq!(log.max_stamp.get(), 0, "an empty log has no stamp");
    // Stamps need not be in log order.
    append_durably(
        &mut log,
        vec![
            stamped(1, 1, 100, Command::Tick),
            stamped(1, 2, 300, grant(2, 10_000)),
            stamped(1, 3, 200, Command::Tick),
        ],
    )
    .await;
    assert_eq!(log.max_stamp.get(), 300);
    append_durably(&mut log, vec![stamped(1, 4, 900, Command::Tick)]).await;
    assert_eq!(log.max_stamp.get(), 900);
    // Entry 4 is truncated (a new leader's log wins) and replaced by one
    // with a smaller stamp: the largest stays.
    log.truncate_after(Some(log_id(1, 3)))
        .await
        .expect("truncate");
    append_durably(&mut log, vec![stamped(2, 4, 400, Command::Tick)]).await;
    assert_eq!(log.max_stamp.get(), 900);
    assert_eq!(sm.shared.max_stamp.get(), 900, "one MaxStamp per node");
}

// "Time" (a restarted node's clock continues from its log): a node opened
// again rebuilds `MaxStamp` from every entry on disk, the largest stamp
// whatever its position, and not from a truncated entry (gone from disk).
#[tokio::test]
async fn max_stamp_is_rebuilt_from_the_log_on_reopen() {
    let dir = tempfile::tempdir().expect("tempdir");
    let clock = Arc::new(FixedClock::default());
    {
        let (mut log, _sm) = stores(dir.path(), clock.clone());
        append_durably(
            &mut log,
            vec![
                stamped(1, 1, 100, Command::Tick),
                stamped(1, 2, 700, grant(2, 10_000)),
                stamped(1, 3, 300, Command::Tick),
                stamped(1, 4, 5_000, Command::Tick),
            ],
        )
        .await;
        log.truncate_after(Some(log_id(1, 3)))
            .await
            .expect("truncate");
        assert_eq!(log.max_stamp.get(), 5_000);
    }
    let (log, sm) = stores(dir.path(), clock);
    assert_eq!(log.max_stamp.get(), 700);
    assert_eq!(sm.shared.max_stamp.get(), 700);
}

// "Time" (a snapshot's `now` is a stamp the log no longer holds): a node
// whose log was purged up to its snapshot rebuilds `MaxStamp` from the
// loaded snapshot's `now`, and a follower that installs a snapshot raises
// its `MaxStamp` to that snapshot's `now`.
#[tokio::test]
async fn max_stamp_is_rebuilt_from_a_snapshots_now() {
    let dir = tempfile::tempdir().expect("tempdir");
    let clock = Arc::new(FixedClock::default());
    let snapshot = {
        let (mut log, mut sm) = stores(dir.path(), clock.clone());
        append_and_apply(
            &mut log,
            &mut sm,
            vec![
                stamped(1, 0, 1_000, grant(1, 60_000)),
                stamped(1, 1, 4_000, Command::Tick),
                stamped(1, 2, 2_500, Command::Tick),
            ],
        )
        .await;
        assert_eq!(times(&sm).0, 4_000, "now is the largest stamp applied");
        let built = sm.build_snapshot().await.expect("build");
        log.purge(log_id(1, 2)).await.expect("purge");
        let left = log.try_get_log_entries(0..10).await.expect("read");
        assert!(left.is_empty(), "the log is purged: {left:?}");
        built
    };
    let (log, sm) = stores(dir.path(), clock.clone());
    assert_eq!(log.max_stamp.get(), 4_000, "from the loaded snapshot's now");
    assert_eq!(times(&sm).0, 4_000);
    drop((log, sm));

    let other = tempfile::tempdir().expect("tempdir");
    let (follower_log, mut follower) = stores(other.path(), clock);
    assert_eq!(follower_log.max_stamp.get(), 0);
    follower
        .install_snapshot(&snapshot.meta, snapshot.snapshot.clone())
        .await
        .expect("install");
    assert_eq!(
        follower_log.max_stamp.get(),
        4_000,
        "from the installed snapshot"
    );
}

// Snapshot determinism in cluster time: the table's `now` and every
// lease's instant (`expires_at_ms`, counted from `now` at its grant) go
// through a snapshot unchanged, whether the snapshot is built by replay,
// installed on another node, or loaded by a restarted one.
#[tokio::test]
async fn a_snapshot_round_trip_keeps_now_and_instants() {
    let dir = tempfile::tempdir().expect("tempdir");
    let clock = Arc::new(FixedClock::default());
    let (mut log, mut sm) = stores(dir.path(), clock.clone());
    // The grant's stamp (1,500) is below `now` (2,000): its instant counts
    // from `now`, not from the stamp.
    append_and_apply(
        &mut log,
        &mut sm,
        vec![
            stamped(1, 0, 2_000, Command::Tick),
            stamped(1, 1, 1_500, grant(1, 10_000)),
            stamped(1, 2, 3_250, Command::Tick),
        ],
    )
    .await;
    let live = times(&sm);
    assert_eq!(live.0, 3_250);
    assert_eq!(live.1.len(), 1);
    assert_eq!(live.1[0].1, 12_000, "expires at now (2,000) + TTL");
    let built = sm.build_snapshot().await.expect("build");

    // Installed on another node.
    let other = tempfile::tempdir().expect("tempdir");
    let (_l, mut follower) = stores(other.path(), clock.clone());
    follower
        .install_snapshot(&built.meta, built.snapshot.clone())
        .await
        .expect("install");
    assert_eq!(times(&follower), live);

    // Loaded by this node after a restart.
    drop((log, sm));
    let (_log, sm) = stores(dir.path(), clock);
    assert_eq!(times(&sm), live);
}
