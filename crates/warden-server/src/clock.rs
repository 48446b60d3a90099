//! The node's clock: the one [`Clock`] of server and client (`warden-clock`),
//! injected so the simulator can give each node its own origin and rate,
//! and [`NodeClock`], what a failed read means for a node. Lease code reads
//! time only through [`NodeClock`].

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;
pub use warden_clock::{BootClock, Clock, ClockError, TokioClock};

/// The node's clock as the server reads it. A node cannot go on without
/// time, and a made-up reading (zero, or anything below an earlier one) is
/// time running backwards, which would let a lease outlive its TTL (S4,
/// L2). So the first failed read is recorded ([`NodeClock::failure`]: the
/// node stops, and `run` returns `ServerError::Clock` naming the clock), and
/// from then on every read returns the last good one: time stands still, no
/// deadline passes, nothing expires, until the node has stopped. Readings
/// never go below an earlier one.
#[derive(Debug)]
pub struct NodeClock {
    clock: Arc<dyn Clock>,
    /// The greatest reading so far, in nanoseconds.
    last_ns: AtomicU64,
    failure: watch::Sender<Option<ClockError>>,
}

impl NodeClock {
    /// The node clock over `clock`.
    pub fn new(clock: Arc<dyn Clock>) -> Arc<NodeClock> {
        Arc::new(NodeClock {
            clock,
            last_ns: AtomicU64::new(0),
            failure: watch::Sender::new(None),
        })
    }

    /// Time since the clock's origin (see the type's docs for a failed read).
    pub fn now(&self) -> Duration {
        match self.clock.now() {
            Ok(d) => {
                let ns = u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
                let before = self.last_ns.fetch_max(ns, Ordering::AcqRel);
                Duration::from_nanos(before.max(ns))
            }
            Err(e) => {
                self.failure.send_if_modified(|f| {
                    if f.is_some() {
                        return false;
                    }
                    tracing::error!(
                        "{e}: this node stops (it cannot keep lease deadlines without its clock)"
                    );
                    *f = Some(e);
                    true
                });
                Duration::from_nanos(self.last_ns.load(Ordering::Acquire))
            }
        }
    }

    /// The clock's epoch (see [`Clock::epoch`]).
    pub fn epoch(&self) -> Option<u64> {
        self.clock.epoch()
    }

    /// The first failed read, once there is one.
    pub fn failure(&self) -> watch::Receiver<Option<ClockError>> {
        self.failure.subscribe()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;

    /// A clock that reads from a script and fails when the script says so.
    #[derive(Debug)]
    struct Scripted(Mutex<Vec<Result<Duration, ClockError>>>);

    impl Clock for Scripted {
        fn now(&self) -> Result<Duration, ClockError> {
            self.0.lock().expect("script").remove(0)
        }
    }

    // S4 / L2: a failed read never moves time backwards (no zero, no lower
    // reading); it is recorded once, naming the clock, and time stands still
    // after it; a reading below an earlier one is never returned either.
    #[test]
    fn a_failed_read_stops_time_and_is_reported_once() {
        let failed = ClockError {
            clock: "CLOCK_BOOTTIME",
            errno: 22,
        };
        let s = |n| Ok(Duration::from_secs(n));
        let clock = NodeClock::new(Arc::new(Scripted(Mutex::new(vec![
            s(10),
            s(9),
            Err(failed),
            Err(failed),
            s(12),
        ]))));
        let failure = clock.failure();
        assert_eq!(clock.now(), Duration::from_secs(10));
        assert_eq!(
            clock.now(),
            Duration::from_secs(10),
            "never below an earlier reading"
        );
        assert!(failure.borrow().is_none());
        assert_eq!(
            clock.now(),
            Duration::from_secs(10),
            "a failed read keeps the last one"
        );
        assert_eq!(*failure.borrow(), Some(failed));
        assert_eq!(clock.now(), Duration::from_secs(10));
        assert_eq!(clock.now(), Duration::from_secs(12));
        assert!(failed
            .to_string()
            .starts_with("reading CLOCK_BOOTTIME failed"));
    }
}
