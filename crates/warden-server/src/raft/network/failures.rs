//! Failed calls to peers, logged once and then summarised.
//!
//! A leader calls each peer about 20 times a second (a heartbeat every
//! 50 ms, plus replication and, while it campaigns, votes). Logging every
//! failed call to a peer that is down wrote ~20 lines a second per dead
//! peer, burying everything else. [`PeerFailures`] keeps one record per
//! peer, shared by all the node's connections to it, and says what to log:
//!
//! - the first failure of a streak, at `warn` ([`Report::First`]);
//! - then at most one summary per [`SUMMARY_PERIOD`] while the peer keeps
//!   failing, at `warn`: how many more calls failed in that window and the
//!   last error ([`Report::Summary`]);
//! - the first answer after a streak, at `info` ([`Report::Recovered`]).
//!
//! A peer that flaps (one connection answers while another times out) logs
//! no `First` within a period of its last `First` or `Summary`: such a
//! streak is counted into the next summary instead. So a peer costs at most
//! one `First`, one `Summary` and a `Recovered` after each per period,
//! however its calls fail.
//!
//! Time comes from tokio's clock (tests run on paused time). Errors are the
//! transport's and the peer's status texts; they never carry key material.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use tokio::time::Instant;

/// At most one summary line per peer per this period: 30 s.
pub const SUMMARY_PERIOD: Duration = Duration::from_secs(30);

/// What to log about a peer's calls.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Report {
    /// A call to `peer` failed after it had answered (or for the first time).
    First {
        /// The peer's node id.
        peer: u64,
        /// Why the call failed.
        error: String,
    },
    /// `count` more calls to `peer` failed in the last `window`.
    Summary {
        /// The peer's node id.
        peer: u64,
        /// Failed calls not logged before.
        count: u64,
        /// Since the last line about this peer's failures.
        window: Duration,
        /// The last of those calls' error.
        last_error: String,
    },
    /// `peer` answered again after `failures` failed calls over `down_for`.
    Recovered {
        /// The peer's node id.
        peer: u64,
        /// Failed calls in the streak.
        failures: u64,
        /// From the streak's first failure to this answer.
        down_for: Duration,
    },
}

impl Report {
    /// Writes the report: `First` and `Summary` at warn, `Recovered` at info.
    pub fn log(&self) {
        match self {
            Report::First { peer, error } => tracing::warn!(
                peer,
                "call to node {peer} failed: {error} (further failures are summarised every {}s)",
                SUMMARY_PERIOD.as_secs()
            ),
            Report::Summary {
                peer,
                count,
                window,
                last_error,
            } => tracing::warn!(
                peer,
                failures = count,
                "{count} more failed calls to node {peer} in the last {}s: {last_error}",
                window.as_secs()
            ),
            Report::Recovered {
                peer,
                failures,
                down_for,
            } => tracing::info!(
                peer,
                failures,
                "node {peer} answers again after {failures} failed calls over {}",
                humanize(*down_for)
            ),
        }
    }
}

/// `1.234s` → "1s", `95s` → "1m 35s" (whole seconds: a log line, not a metric).
fn humanize(d: Duration) -> String {
    let s = d.as_secs();
    if s >= 60 {
        format!("{}m {}s", s / 60, s % 60)
    } else {
        format!("{s}s")
    }
}

/// One peer's record.
#[derive(Debug, Default)]
struct Peer {
    /// The current streak: since when, how many calls failed in it, and
    /// whether its first failure was logged.
    streak: Option<Streak>,
    /// When a `First` or `Summary` line was last logged.
    last_line: Option<Instant>,
    /// Failed calls not yet logged, since `window_start`.
    unreported: u64,
    window_start: Option<Instant>,
    last_error: String,
}

#[derive(Debug)]
struct Streak {
    since: Instant,
    failures: u64,
    announced: bool,
}

/// The failure records of a node's peers (shared by its connections).
#[derive(Debug)]
pub struct PeerFailures {
    period: Duration,
    peers: Mutex<BTreeMap<u64, Peer>>,
    /// Peers with a streak open: every answered call (each append reply,
    /// each heartbeat) reads this, and takes the lock only when some
    /// streak may need its recovery line.
    open_streaks: AtomicUsize,
}

impl Default for PeerFailures {
    fn default() -> Self {
        PeerFailures::new(SUMMARY_PERIOD)
    }
}

impl PeerFailures {
    /// Records with at most one summary per `period`.
    pub fn new(period: Duration) -> PeerFailures {
        PeerFailures {
            period,
            peers: Mutex::new(BTreeMap::new()),
            open_streaks: AtomicUsize::new(0),
        }
    }

    /// `calls` calls to `peer` failed, the last with `error`, now; logs
    /// what is due.
    pub fn failed(&self, peer: u64, calls: u64, error: &str) {
        if let Some(r) = self.failed_at(Instant::now(), peer, calls, error) {
            r.log();
        }
    }

    /// A call to `peer` was answered now; logs a recovery if one is due.
    pub fn answered(&self, peer: u64) {
        if self.open_streaks.load(Ordering::Acquire) == 0 {
            return;
        }
        if let Some(r) = self.answered_at(Instant::now(), peer) {
            r.log();
        }
    }

    /// What `calls` failures (at least one), the last at `now`, call for
    /// (see the module docs).
    pub fn failed_at(&self, now: Instant, peer: u64, calls: u64, error: &str) -> Option<Report> {
        let calls = calls.max(1);
        let mut peers = self.peers.lock().unwrap_or_else(|p| p.into_inner());
        let p = peers.entry(peer).or_default();
        p.last_error.clear();
        p.last_error.push_str(error);
        if p.streak.is_none() {
            self.open_streaks.fetch_add(1, Ordering::AcqRel);
        }
        let streak = p.streak.get_or_insert(Streak {
            since: now,
            failures: 0,
            announced: false,
        });
        let new_streak = streak.failures == 0;
        streak.failures += calls;
        let quiet = p
            .last_line
            .is_some_and(|t| now.duration_since(t) < self.period);
        if new_streak && !quiet && p.unreported == 0 {
            streak.announced = true;
            p.last_line = Some(now);
            p.window_start = Some(now);
            // The others of these calls go into the next summary.
            p.unreported = calls - 1;
            return Some(Report::First {
                peer,
                error: error.to_string(),
            });
        }
        p.unreported += calls;
        let start = *p.window_start.get_or_insert(now);
        let window = now.duration_since(start);
        if window < self.period {
            return None;
        }
        let count = std::mem::take(&mut p.unreported);
        p.window_start = Some(now);
        p.last_line = Some(now);
        // Its recovery is worth a line now that its failures were logged.
        streak.announced = true;
        Some(Report::Summary {
            peer,
            count,
            window,
            last_error: p.last_error.clone(),
        })
    }

    /// What an answer at `now` calls for: a recovery line when a streak
    /// whose failures were logged ends (an unlogged one's failures stay
    /// counted for the next summary).
    pub fn answered_at(&self, now: Instant, peer: u64) -> Option<Report> {
        let mut peers = self.peers.lock().unwrap_or_else(|p| p.into_inner());
        let p = peers.get_mut(&peer)?;
        let streak = p.streak.take()?;
        self.open_streaks.fetch_sub(1, Ordering::AcqRel);
        if !streak.announced {
            return None;
        }
        // The streak's failures are all in this line.
        p.unreported = 0;
        Some(Report::Recovered {
            peer,
            failures: streak.failures,
            down_for: now.duration_since(streak.since),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fail(log: &PeerFailures, peer: u64, error: &str) -> Option<Report> {
        log.failed_at(Instant::now(), peer, 1, error)
    }

    fn answer(log: &PeerFailures, peer: u64) -> Option<Report> {
        log.answered_at(Instant::now(), peer)
    }

    // docs/operations.md "Logs": a dead peer is logged once, then summarised
    // at most once per period (not once per 50 ms heartbeat), and its
    // recovery is logged with the streak's count and length.
    #[tokio::test(start_paused = true)]
    async fn a_dead_peer_is_logged_once_then_summarised_then_recovered() {
        let log = PeerFailures::new(Duration::from_secs(30));
        let mut lines = Vec::new();
        // 70 s of heartbeats every 50 ms, all failing.
        for _ in 0..1_400 {
            lines.extend(fail(&log, 2, "transport error"));
            tokio::time::advance(Duration::from_millis(50)).await;
        }
        let summary = |count| Report::Summary {
            peer: 2,
            count,
            window: Duration::from_secs(30),
            last_error: "transport error".into(),
        };
        assert_eq!(
            lines,
            vec![
                Report::First {
                    peer: 2,
                    error: "transport error".into()
                },
                // The failures after the first up to the one at 30 s.
                summary(600),
                summary(600),
            ]
        );
        assert_eq!(
            answer(&log, 2),
            Some(Report::Recovered {
                peer: 2,
                failures: 1_400,
                down_for: Duration::from_secs(70)
            })
        );
        // Answers after that log nothing.
        assert_eq!(answer(&log, 2), None);
    }

    // Same property, for a peer that flaps: one connection's call fails,
    // another's is answered, every 100 ms. No `First` within a period of
    // the last line: the short streaks go into one summary per period.
    #[tokio::test(start_paused = true)]
    async fn a_flapping_peer_costs_a_few_lines_per_period() {
        let log = PeerFailures::new(Duration::from_secs(30));
        let mut lines = Vec::new();
        for _ in 0..600 {
            lines.extend(fail(&log, 3, "timed out"));
            lines.extend(answer(&log, 3));
            tokio::time::advance(Duration::from_millis(100)).await;
        }
        let recovered = Report::Recovered {
            peer: 3,
            failures: 1,
            down_for: Duration::ZERO,
        };
        assert_eq!(
            lines,
            vec![
                Report::First {
                    peer: 3,
                    error: "timed out".into()
                },
                recovered.clone(),
                // The 299 unlogged streaks and the one at 30 s.
                Report::Summary {
                    peer: 3,
                    count: 300,
                    window: Duration::from_secs(30),
                    last_error: "timed out".into()
                },
                recovered,
            ]
        );
    }

    // Peers are summarised apart: a dead node 2 does not hide node 3's
    // first failure; an answer from a peer that never failed logs nothing.
    #[tokio::test(start_paused = true)]
    async fn each_peer_has_its_own_record() {
        let log = PeerFailures::new(Duration::from_secs(30));
        assert!(matches!(
            fail(&log, 2, "refused"),
            Some(Report::First { peer: 2, .. })
        ));
        tokio::time::advance(Duration::from_secs(1)).await;
        assert_eq!(fail(&log, 2, "refused"), None);
        assert!(matches!(
            fail(&log, 3, "reset"),
            Some(Report::First { peer: 3, .. })
        ));
        assert_eq!(answer(&log, 4), None);
    }

    // Timeouts are reported in runs (`PeerConnection` reports the calls
    // that timed out once they have for a while): the first of a run is
    // the `First` line, the others are counted into the summary.
    #[tokio::test(start_paused = true)]
    async fn several_calls_at_once_are_counted() {
        let log = PeerFailures::new(Duration::from_secs(30));
        assert!(matches!(
            log.failed_at(Instant::now(), 2, 20, "no answer"),
            Some(Report::First { peer: 2, .. })
        ));
        tokio::time::advance(Duration::from_secs(30)).await;
        assert_eq!(
            log.failed_at(Instant::now(), 2, 20, "no answer"),
            Some(Report::Summary {
                peer: 2,
                count: 39,
                window: Duration::from_secs(30),
                last_error: "no answer".into()
            })
        );
        assert!(matches!(
            answer(&log, 2),
            Some(Report::Recovered { failures: 40, .. })
        ));
    }

    // The answered-call fast path: the count of open streaks follows the
    // streaks, so an answer with none open takes no lock, and one that
    // ends a streak still logs its recovery.
    #[tokio::test(start_paused = true)]
    async fn open_streaks_follow_the_streaks() {
        let log = PeerFailures::new(Duration::from_secs(30));
        let count = || log.open_streaks.load(Ordering::Acquire);
        assert_eq!(count(), 0);
        log.failed_at(Instant::now(), 2, 1, "refused");
        log.failed_at(Instant::now(), 2, 1, "refused");
        log.failed_at(Instant::now(), 3, 1, "refused");
        assert_eq!(count(), 2);
        assert!(matches!(
            log.answered_at(Instant::now(), 2),
            Some(Report::Recovered {
                peer: 2,
                failures: 2,
                ..
            })
        ));
        assert_eq!(count(), 1);
        assert_eq!(log.answered_at(Instant::now(), 2), None);
        assert_eq!(count(), 1);
        log.answered(3);
        assert_eq!(count(), 0);
    }
}
