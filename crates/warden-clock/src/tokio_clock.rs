//! [`TokioClock`]: tokio's clock, from an origin.

use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use crate::{Clock, ClockError};

/// tokio's clock (which `tokio::time::pause` and the simulator drive), from
/// the moment it was made. It never fails and has no epoch. It stops while
/// the machine is suspended, so a client session should not use it outside
/// tests and simulation (S5; [`BootClock`](crate::BootClock) counts
/// suspended time).
#[derive(Debug, Clone, Copy)]
pub struct TokioClock {
    origin: Instant,
}

impl TokioClock {
    /// A clock whose origin is now (must run inside a tokio runtime when
    /// time is paused, like every tokio time call).
    pub fn new() -> TokioClock {
        TokioClock {
            origin: Instant::now(),
        }
    }

    /// [`TokioClock::new`], shared.
    pub fn shared() -> Arc<dyn Clock> {
        Arc::new(TokioClock::new())
    }
}

impl Default for TokioClock {
    fn default() -> Self {
        TokioClock::new()
    }
}

impl Clock for TokioClock {
    fn now(&self) -> Result<Duration, ClockError> {
        Ok(Instant::now().saturating_duration_since(self.origin))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // "Time": the tokio clock counts from its own origin and follows paused
    // time exactly (no real sleep).
    #[tokio::test(start_paused = true)]
    async fn the_tokio_clock_counts_from_its_origin() {
        let clock = TokioClock::new();
        assert_eq!(clock.now(), Ok(Duration::ZERO));
        tokio::time::advance(Duration::from_millis(1_500)).await;
        assert_eq!(clock.now(), Ok(Duration::from_millis(1_500)));
        let later = TokioClock::new();
        assert_eq!(later.now(), Ok(Duration::ZERO));
        assert_eq!(clock.epoch(), None);
    }
}
