"""The clock a session's validity is measured on, and the validity rule.

``valid_until`` (docs/semantics.md S5) is a reading of this clock: the send time
of the last acknowledged renew (or of the lease grant's first attempt) plus
:func:`validity_s` of the TTL. The clock must count time the machine spends
suspended: a laptop that sleeps with a lock must not wake up believing it still
holds it. On Linux that is ``CLOCK_BOOTTIME``; where Python has no
``time.CLOCK_BOOTTIME`` (macOS, Windows) :class:`BootClock` falls back to
``time.monotonic()`` and says so in :attr:`BootClock.counts_suspend`.

A clock that cannot be read raises :class:`~warden_client.errors.ClockError`;
a session whose clock fails is lost (no validity is ever computed from a
made-up time).
"""

from __future__ import annotations

import time
from typing import Protocol

from .errors import ClockError

#: rho: the documented bound on clock *rate* drift between any two machines
#: (docs/semantics.md "Words"): 1 %, in parts per million.
DRIFT_RHO_PPM = 10_000

#: Margin subtracted from every validity the client computes (S5), in ms.
VALIDITY_MARGIN_MS = 50


def validity_s(ttl_ms: int) -> float:
    """How long, in seconds, a grant or renew can be trusted after the *send*
    of the request it acknowledges (S5): ``TTL x (1 - 2 rho) - 50 ms`` (the
    server's clock may run fast by rho and this one slow by rho). Never
    negative. Computed in whole microseconds, as the Rust client does."""
    if ttl_ms <= 0:
        return 0.0
    ttl_us = ttl_ms * 1_000
    scaled_us = ttl_us * (1_000_000 - 2 * DRIFT_RHO_PPM) // 1_000_000
    return max(0, scaled_us - VALIDITY_MARGIN_MS * 1_000) / 1_000_000


class Clock(Protocol):
    """A monotonic clock in seconds. ``now`` raises ClockError when it cannot
    be read."""

    @property
    def name(self) -> str: ...

    def now(self) -> float: ...


class BootClock:
    """``CLOCK_BOOTTIME`` (counts suspended time) where Python has it, else
    ``time.monotonic()``."""

    def __init__(self) -> None:
        boottime = getattr(time, "CLOCK_BOOTTIME", None)
        self._clock_id: int | None = boottime
        self.counts_suspend: bool = boottime is not None
        self._name = "CLOCK_BOOTTIME" if boottime is not None else "time.monotonic"

    @property
    def name(self) -> str:
        return self._name

    def now(self) -> float:
        try:
            if self._clock_id is not None:
                return time.clock_gettime(self._clock_id)
            return time.monotonic()
        except OSError as e:
            raise ClockError(self._name, str(e)) from e


#: The default session clock.
BOOT_CLOCK = BootClock()
