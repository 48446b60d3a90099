//! The clock a [`Session`](crate::Session) measures validity on (SEMANTICS S5).

use std::fmt::Debug;
use std::sync::Arc;
use std::time::Duration;

/// A monotonic clock: time since this clock's own origin. Values of two
/// clocks are never compared.
pub trait Clock: Send + Sync + Debug + 'static {
    /// Time since this clock's origin.
    fn now(&self) -> Duration;
}

/// CLOCK_BOOTTIME (Linux): keeps counting while the machine is suspended,
/// which `std::time::Instant` and tokio's clock do not. The default for
/// sessions (S5): a laptop that sleeps past its lease's TTL wakes up with
/// its session already lost.
#[derive(Debug, Default, Clone, Copy)]
pub struct BootClock;

impl BootClock {
    /// The boot clock, shared.
    pub fn shared() -> Arc<dyn Clock> {
        Arc::new(BootClock)
    }
}

impl Clock for BootClock {
    fn now(&self) -> Duration {
        nix::time::clock_gettime(nix::time::ClockId::CLOCK_BOOTTIME)
            .map(Duration::from)
            .unwrap_or(Duration::ZERO)
    }
}

/// tokio's clock (which `tokio::time::pause` and the simulator drive), from
/// the moment it was made. For tests and simulation; it does not count
/// suspended time.
#[derive(Debug, Clone, Copy)]
pub struct TokioClock {
    origin: tokio::time::Instant,
}

impl TokioClock {
    /// A clock whose origin is now, shared.
    pub fn shared() -> Arc<dyn Clock> {
        Arc::new(TokioClock {
            origin: tokio::time::Instant::now(),
        })
    }
}

impl Clock for TokioClock {
    fn now(&self) -> Duration {
        tokio::time::Instant::now().saturating_duration_since(self.origin)
    }
}
