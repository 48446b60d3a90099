package warden

import (
	"fmt"
	"time"

	"golang.org/x/sys/unix"
)

// Clock is the clock a session's validity is measured on: a reading is the
// time since an arbitrary fixed origin, and never goes backwards. A failed
// read is an error (the session is then lost: no validity is ever computed
// from a made-up time).
type Clock interface {
	Now() (time.Duration, error)
}

// BootClock reads CLOCK_BOOTTIME: a monotonic clock that keeps counting
// while the machine is suspended. CLOCK_MONOTONIC (Go's own monotonic
// clock, behind time.Now and timers) stops during suspend on Linux, so a
// laptop that slept through a lease's TTL would otherwise still believe
// itself the holder.
type BootClock struct{}

// Now reads CLOCK_BOOTTIME.
func (BootClock) Now() (time.Duration, error) {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts); err != nil {
		return 0, fmt.Errorf("CLOCK_BOOTTIME: %w", err)
	}
	return time.Duration(ts.Nano()), nil
}

// DriftRhoPPM is ρ, the bound on clock rate drift between any two machines
// (docs/semantics.md "Words"): 1 %, in parts per million.
const DriftRhoPPM = 10_000

// ValidityMargin is subtracted from every validity the client computes.
const ValidityMargin = 50 * time.Millisecond

// Validity is how long a grant or renew can be trusted after the send of
// the request it acknowledges (docs/semantics.md S5): ttl × (1 − 2ρ) −
// ValidityMargin (the server's clock may run fast by ρ and this one slow by
// ρ); never negative. The server never expires a lease earlier than
// ttl × (1 − ρ) after that send (S4).
func Validity(ttl time.Duration) time.Duration {
	if ttl <= 0 {
		return 0
	}
	us := uint64(ttl / time.Microsecond)
	const keep = 1_000_000 - 2*DriftRhoPPM
	scaled := us/1_000_000*keep + us%1_000_000*keep/1_000_000
	v := time.Duration(scaled)*time.Microsecond - ValidityMargin
	return max(v, 0)
}
