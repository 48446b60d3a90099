//! The node's clock, injected so that the simulator can give each node its own
//! origin and rate. Lease code reads time only through [`Clock`].

use std::fmt::Debug;
use std::sync::Arc;
use std::time::Duration;

/// A monotonic clock: time since this clock's own origin. Two nodes' values
/// are never compared (SEMANTICS "Time").
pub trait Clock: Send + Sync + Debug + 'static {
    /// Time since this clock's origin.
    fn now(&self) -> Duration;
}

/// The production clock: tokio's monotonic clock (which the simulator and
/// `tokio::time::pause` can drive).
#[derive(Debug)]
pub struct TokioClock {
    origin: tokio::time::Instant,
}

impl TokioClock {
    /// A clock whose origin is now.
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
