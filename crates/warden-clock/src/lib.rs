//! The one [`Clock`] of Warden's server and client: a monotonic reading
//! since the clock's own origin, never compared with another clock's
//! (docs/semantics.md "Time"), and the id of its time base ([`Clock::epoch`]).
//!
//! # Layout
//!
//! - [`Clock`] and [`ClockError`] (this file): the trait, and the typed error
//!   of a failed read (which clock, which OS error).
//! - [`BootClock`], [`boot_epoch`], [`fnv1a`] (`boot.rs`): CLOCK_BOOTTIME,
//!   which counts suspended time (S5) and is shared by every process of one
//!   boot; its epoch is the FNV-1a hash of the kernel's boot id, so stamps
//!   persisted by one process stay valid for the next one of the same boot.
//! - [`TokioClock`] (`tokio_clock.rs`): tokio's clock from an origin, which
//!   `tokio::time::pause` and the simulator drive; it never fails.
//!
//! A failed read is an error, never a made-up value: a reading of zero (or
//! any value below an earlier one) is time running backwards, which would
//! let a lease outlive its TTL on a server (S4, L2) or a session believe in a
//! lock it no longer holds (S5).

#![warn(missing_docs)]

mod boot;
mod tokio_clock;

use std::fmt::Debug;
use std::time::Duration;

pub use boot::{boot_epoch, epoch_of_boot_id, fnv1a, BootClock, BOOT_ID_PATH};
pub use tokio_clock::TokioClock;

/// A monotonic clock: time since this clock's own origin. Values of two
/// clocks (two machines, or two clocks of one process) are never compared.
pub trait Clock: Send + Sync + Debug + 'static {
    /// Time since this clock's origin; never less than an earlier reading of
    /// the same clock.
    ///
    /// # Errors
    ///
    /// [`ClockError`] when the clock cannot be read. The caller must not
    /// substitute a value: it treats what depends on time as unknown (a
    /// session as lost, S5).
    fn now(&self) -> Result<Duration, ClockError>;

    /// An id of this clock's time base: two clocks with the same epoch (two
    /// processes of one boot, for CLOCK_BOOTTIME) give comparable values, so
    /// stamps persisted by one are valid for the other. `None` (the default):
    /// values mean nothing outside this process.
    fn epoch(&self) -> Option<u64> {
        None
    }
}

/// A clock read failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("reading {clock} failed: {}", std::io::Error::from_raw_os_error(*.errno))]
pub struct ClockError {
    /// The clock that failed, e.g. `CLOCK_BOOTTIME`.
    pub clock: &'static str,
    /// The OS error number (errno) the read returned.
    pub errno: i32,
}
