//! What the server publishes in `ClusterStatus` so that no client hard-codes
//! it: the election key prefix (`election_prefix`) and the in-flight window
//! (`max_requests_in_flight`, the server's per-client outcome cap, S7).
//!
//! Read once, lazily, before the first mutating call or election key a
//! client needs, with one attempt's timeout (best effort: a failure keeps
//! the defaults, [`crate::ELECTION_PREFIX`] and
//! [`crate::MAX_REQUESTS_AHEAD`], and is tried again after
//! [`RETRY_AFTER`]). A server that predates them answers "" and 0, which
//! also keep the defaults.

use std::time::Duration;

use tokio::time::Instant;

/// How long after a failed read the client tries again.
pub(crate) const RETRY_AFTER: Duration = Duration::from_secs(10);

/// The settings as far as they are known. Behind an async mutex held while
/// they are read, so concurrent first calls wait for one `ClusterStatus`.
#[derive(Debug, Default)]
pub(crate) struct Published {
    /// When the last read failed.
    pub(crate) failed_at: Option<Instant>,
    /// The published election prefix; `None`: use the default.
    pub(crate) election_prefix: Option<String>,
}

impl Published {
    /// Whether a read is due now, when none has been applied yet (the
    /// client's `published_loaded` says whether one has: the lock-free
    /// check every mutating call makes).
    pub(crate) fn due(&self, now: Instant) -> bool {
        self.failed_at
            .is_none_or(|at| now.saturating_duration_since(at) >= RETRY_AFTER)
    }

    /// The election prefix in force.
    pub(crate) fn election_prefix(&self) -> &str {
        self.election_prefix
            .as_deref()
            .unwrap_or(crate::ELECTION_PREFIX)
    }
}
