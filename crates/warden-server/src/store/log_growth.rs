//! How much the log has grown since the last snapshot, in bytes, and how
//! large that snapshot is: the inputs of the node's snapshot rule
//! (`crate::raft::snapshot_schedule`). Counters only: the log store adds
//! each append's row bytes, the state machine marks each snapshot built or
//! installed.

use std::sync::atomic::{AtomicU64, Ordering};

/// Log bytes appended since the last snapshot, and that snapshot's size.
#[derive(Debug, Default)]
pub struct LogGrowth {
    /// Row bytes appended to this node's log since it started, plus those
    /// on disk after the stored snapshot when it started.
    appended: AtomicU64,
    /// `appended` when the last snapshot was built (its applied index
    /// recorded) or installed.
    at_snapshot: AtomicU64,
    /// Bytes of the last snapshot's data (0: none).
    snapshot_bytes: AtomicU64,
}

impl LogGrowth {
    /// Counts `bytes` more appended to the log.
    pub fn appended(&self, bytes: u64) {
        self.appended.fetch_add(bytes, Ordering::Relaxed);
    }

    /// Marks the start of a snapshot: bytes appended from now on count
    /// towards the next one. Returns the mark for [`Self::snapshot_taken`].
    pub fn mark(&self) -> u64 {
        self.appended.load(Ordering::Relaxed)
    }

    /// A snapshot of `snapshot_bytes` bytes was stored, its build begun at
    /// `mark` (or installed now: pass [`Self::mark`]).
    pub fn snapshot_taken(&self, mark: u64, snapshot_bytes: u64) {
        self.at_snapshot.fetch_max(mark, Ordering::Relaxed);
        self.snapshot_bytes.store(snapshot_bytes, Ordering::Relaxed);
    }

    /// Log bytes appended since the last snapshot.
    pub fn bytes_since_snapshot(&self) -> u64 {
        self.appended
            .load(Ordering::Relaxed)
            .saturating_sub(self.at_snapshot.load(Ordering::Relaxed))
    }

    /// Bytes of the last snapshot's data (0: none yet).
    pub fn snapshot_bytes(&self) -> u64 {
        self.snapshot_bytes.load(Ordering::Relaxed)
    }
}
