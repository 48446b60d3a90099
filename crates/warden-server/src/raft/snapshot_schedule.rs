//! When this node takes a snapshot: openraft's own policy is off
//! (`SnapshotPolicy::Never`) and this task asks for one (`trigger().snapshot()`)
//! once both hold since the last snapshot:
//!
//! - at least `--snapshot-threshold` entries were applied, or at least
//!   [`BYTES_INSTEAD_OF_ENTRIES`] of log were appended (packed entries carry
//!   up to 256 commands each, so a fill of a million locks is only a few
//!   thousand entries, and an idle table writes no entries at all), and
//! - at least as many log bytes were appended as the last snapshot has.
//!
//! The second rule makes the interval grow with the state, as etcd and TiKV
//! do: a snapshot costs about its size to build and store, so a large table
//! is not re-encoded every few thousand small entries, and the log kept
//! between snapshots stays within about one snapshot's size. With a small
//! table the entry count decides, as before. The byte count comes from the
//! log store ([`crate::store::LogGrowth`]); the entry count from openraft's
//! metrics, read every [`CHECK_INTERVAL`] (its full metrics change per entry;
//! a task woken by each costs a wake-up per commit, docs/performance.md).

use std::sync::Arc;
use std::time::Duration;

use openraft::async_runtime::WatchReceiver as _;

use crate::raft::Raft;
use crate::store::LogGrowth;

/// How often the rule is checked.
pub const CHECK_INTERVAL: Duration = Duration::from_millis(100);

/// Log bytes since the last snapshot that count as the entry threshold
/// reached: 16 MiB.
pub const BYTES_INSTEAD_OF_ENTRIES: u64 = 16 << 20;

/// The snapshot rule: true when a snapshot is due.
///
/// `entries_since`: log entries applied since the last snapshot;
/// `bytes_since`: log bytes appended since it; `snapshot_bytes`: its size
/// (0: none yet); `threshold_entries`: `--snapshot-threshold`.
pub fn due(
    entries_since: u64,
    bytes_since: u64,
    snapshot_bytes: u64,
    threshold_entries: u64,
) -> bool {
    (entries_since >= threshold_entries || bytes_since >= BYTES_INSTEAD_OF_ENTRIES)
        && bytes_since >= snapshot_bytes
}

/// Entries applied since the snapshot at `snapshot` (None: since the start
/// of the log, index 0), with `applied` the last applied index.
pub fn entries_since(applied: Option<u64>, snapshot: Option<u64>) -> u64 {
    match (applied, snapshot) {
        (None, _) => 0,
        (Some(a), None) => a + 1,
        (Some(a), Some(s)) => a.saturating_sub(s),
    }
}

/// Asks `raft` for a snapshot whenever [`due`] holds, until the Raft handle
/// shuts down. A request while one is being built is ignored by openraft.
pub async fn run(raft: Raft, growth: Arc<LogGrowth>, threshold_entries: u64) {
    let mut tick = tokio::time::interval(CHECK_INTERVAL);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        let (applied, snapshot) = {
            let rx = raft.metrics();
            let m = rx.borrow_watched();
            (
                m.last_applied.as_ref().map(|l| l.index()),
                m.snapshot.as_ref().map(|l| l.index()),
            )
        };
        if due(
            entries_since(applied, snapshot),
            growth.bytes_since_snapshot(),
            growth.snapshot_bytes(),
            threshold_entries,
        ) && raft.trigger().snapshot().await.is_err()
        {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    //! Each test names the property it defends.

    use super::*;

    // The rule grows with the state (etcd and TiKV size their snapshot
    // interval the same way): with a 100 MB snapshot, 10,000 small entries
    // (~1 MB of log) do not take another; once the log has grown by the
    // snapshot's size they do.
    #[test]
    fn a_big_snapshot_waits_for_as_many_log_bytes() {
        let snapshot = 100 << 20;
        assert!(!due(10_000, 1 << 20, snapshot, 10_000));
        assert!(!due(50_000, snapshot - 1, snapshot, 10_000));
        assert!(due(10_000, snapshot, snapshot, 10_000));
    }

    // With a small table the entry threshold decides, as before the byte
    // rule: under 16 MiB of log, bytes alone never take a snapshot.
    #[test]
    fn a_small_snapshot_keeps_the_entry_threshold() {
        assert!(!due(9_999, 10 << 20, 100, 10_000));
        assert!(due(10_000, 10_000, 100, 10_000));
        // No snapshot yet: only the entry count.
        assert!(due(10_000, 0, 0, 10_000));
    }

    // Large packed entries: a log grown by 16 MiB in fewer entries than the
    // threshold takes a snapshot too (a follower that falls behind then
    // replays at most about a snapshot's size of log, not a whole fill),
    // still only once the log has grown by the snapshot's size.
    #[test]
    fn many_log_bytes_in_few_entries_take_a_snapshot() {
        assert!(due(4_000, BYTES_INSTEAD_OF_ENTRIES, 1 << 20, 10_000));
        assert!(!due(4_000, BYTES_INSTEAD_OF_ENTRIES - 1, 1 << 20, 10_000));
        assert!(!due(4_000, BYTES_INSTEAD_OF_ENTRIES, 40 << 20, 10_000));
        assert!(due(4_000, 40 << 20, 40 << 20, 10_000));
    }

    // Entries since the snapshot count from its index; with none, from index 0.
    #[test]
    fn entries_since_counts_from_the_snapshot() {
        assert_eq!(entries_since(None, None), 0);
        assert_eq!(entries_since(Some(0), None), 1);
        assert_eq!(entries_since(Some(10_000), Some(4)), 9_996);
        assert_eq!(entries_since(Some(3), Some(4)), 0);
    }
}
