//! [`BootClock`]: CLOCK_BOOTTIME, and the epoch of its time base (the boot).

use std::sync::Arc;
use std::time::Duration;

use nix::sys::time::TimeSpec;
use nix::time::ClockId;

use crate::{Clock, ClockError};

/// Where Linux publishes this boot's random id (a UUID, one per boot).
pub const BOOT_ID_PATH: &str = "/proc/sys/kernel/random/boot_id";

/// The name a [`ClockError`] of [`BootClock`] carries.
const CLOCK_NAME: &str = "CLOCK_BOOTTIME";

/// CLOCK_BOOTTIME (Linux): keeps counting while the machine is suspended,
/// which `std::time::Instant` and tokio's clock do not, and is shared by
/// every process of one boot.
///
/// The client measures a session's validity on it (S5: a laptop that sleeps
/// past its lease's TTL wakes up with its session already lost). The server
/// stamps log entries with it; stamps taken with it survive a process
/// restart on the same boot, so a crash-looping leader cannot stretch a
/// lease by its downtime (L2; etcd issue 9395).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BootClock {
    epoch: Option<u64>,
}

impl BootClock {
    /// The boot clock, with this boot's epoch ([`boot_epoch`]; `None` where
    /// the kernel does not publish a boot id: then nothing persisted is ever
    /// reused).
    pub fn new() -> BootClock {
        BootClock {
            epoch: boot_epoch(),
        }
    }

    /// [`BootClock::new`], shared.
    pub fn shared() -> Arc<dyn Clock> {
        Arc::new(BootClock::new())
    }
}

impl Default for BootClock {
    fn default() -> Self {
        BootClock::new()
    }
}

impl Clock for BootClock {
    fn now(&self) -> Result<Duration, ClockError> {
        reading(nix::time::clock_gettime(ClockId::CLOCK_BOOTTIME))
    }

    fn epoch(&self) -> Option<u64> {
        self.epoch
    }
}

/// A CLOCK_BOOTTIME read as a duration, or the error naming the clock and
/// the OS error (never a substitute value).
fn reading(read: nix::Result<TimeSpec>) -> Result<Duration, ClockError> {
    read.map(Duration::from).map_err(|errno| ClockError {
        clock: CLOCK_NAME,
        errno: errno as i32,
    })
}

/// This boot's epoch: [`epoch_of_boot_id`] of [`BOOT_ID_PATH`]; `None` when
/// it cannot be read (not Linux, no procfs).
pub fn boot_epoch() -> Option<u64> {
    std::fs::read_to_string(BOOT_ID_PATH)
        .ok()
        .map(|id| epoch_of_boot_id(&id))
}

/// The epoch of a boot id as the kernel prints it: [`fnv1a`] of the text
/// without surrounding whitespace. Persisted in the server's stamps: it must
/// never change, or every stamp of the running boot stops being reused.
pub fn epoch_of_boot_id(boot_id: &str) -> u64 {
    fnv1a(boot_id.trim().as_bytes())
}

/// 64-bit FNV-1a (Fowler–Noll–Vo; offset basis 0xcbf29ce484222325, prime
/// 0x100000001b3).
pub fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use nix::errno::Errno;

    // S5/L2: the published FNV-1a test vectors; the epoch of a boot id is
    // pinned (the server persists it in stamps: a changed hash would orphan
    // every stamp of the running boot) and ignores the kernel's newline.
    #[test]
    fn fnv1a_matches_the_reference_and_the_epoch_is_pinned() {
        assert_eq!(fnv1a(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv1a(b"foobar"), 0x8594_4171_f739_67e8);
        let id = "6f1c2a0e-3b4d-4e5f-8a9b-0c1d2e3f4a5b";
        assert_eq!(epoch_of_boot_id(id), 0x42f6_9c43_a959_cb74);
        assert_eq!(epoch_of_boot_id(&format!("{id}\n")), epoch_of_boot_id(id));
    }

    // S5: a failed read is an error naming CLOCK_BOOTTIME and the OS error,
    // never Duration::ZERO (time running backwards).
    #[test]
    fn a_failed_read_names_the_clock_and_the_os_error() {
        let e = reading(Err(Errno::EINVAL)).unwrap_err();
        assert_eq!(
            e,
            ClockError {
                clock: "CLOCK_BOOTTIME",
                errno: Errno::EINVAL as i32
            }
        );
        let text = e.to_string();
        assert!(
            text.starts_with("reading CLOCK_BOOTTIME failed: "),
            "{text}"
        );
        assert!(text.contains("os error 22"), "{text}");
    }

    // S5: the boot clock reads, and never goes backwards between two reads.
    #[test]
    fn the_boot_clock_reads_and_is_monotonic() {
        let clock = BootClock::new();
        let a = clock.now().expect("CLOCK_BOOTTIME");
        let b = clock.now().expect("CLOCK_BOOTTIME");
        assert!(a > Duration::ZERO && b >= a, "{a:?} then {b:?}");
    }

    // L2: two boot clocks of one boot share an epoch, the kernel's boot id
    // hashed (where the kernel publishes one).
    #[test]
    fn two_boot_clocks_share_the_boot_epoch() {
        let expected = std::fs::read_to_string(BOOT_ID_PATH)
            .ok()
            .map(|id| epoch_of_boot_id(&id));
        assert_eq!(BootClock::new().epoch(), expected);
        assert_eq!(BootClock::new().epoch(), BootClock::new().epoch());
    }
}
