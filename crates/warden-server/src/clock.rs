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

    /// An id of this clock's time base: two clocks with the same epoch (e.g.
    /// two processes of one boot) give comparable values, so stamps persisted
    /// by one are valid for the other. None: values mean nothing outside this
    /// process.
    fn epoch(&self) -> Option<u64> {
        None
    }
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

/// The production clock: CLOCK_BOOTTIME, which keeps counting while the
/// machine is suspended and is shared by every process of one boot. Stamps
/// taken with it survive a process restart: a node that restarts on the same
/// boot replays its log with the stamps it persisted, so a crash-looping
/// leader cannot stretch a lease by its downtime (L2; etcd issue 9395 again).
#[derive(Debug)]
pub struct BootClock {
    epoch: Option<u64>,
}

impl BootClock {
    /// The boot clock, with this boot's id as its epoch (None where the
    /// kernel does not say: then nothing persisted is ever reused).
    pub fn shared() -> Arc<dyn Clock> {
        let epoch = std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
            .ok()
            .map(|id| fnv1a(id.trim().as_bytes()));
        Arc::new(BootClock { epoch })
    }
}

fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

impl Clock for BootClock {
    fn now(&self) -> Duration {
        nix::time::clock_gettime(nix::time::ClockId::CLOCK_BOOTTIME)
            .map(Duration::from)
            .unwrap_or(Duration::ZERO)
    }

    fn epoch(&self) -> Option<u64> {
        self.epoch
    }
}
