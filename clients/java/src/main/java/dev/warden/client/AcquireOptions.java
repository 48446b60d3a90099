package dev.warden.client;

import java.time.Duration;

/**
 * What a low-level {@link WardenClient#acquireAsync} asks for: the lease the grant hangs on (a
 * new lease with {@code ttl}, or an existing one), how long to wait in the server's FIFO queue
 * (zero: a try-lock; at most 1 h) and the lock-delay after an involuntary loss (at most 60 s).
 * Bounds are the server's; a value outside them gets an {@link InvalidArgumentException} naming
 * the field ({@code ttl_ms}, {@code wait_timeout_ms}, {@code lock_delay_ms}).
 *
 * @param ttl the TTL of a new lease (1 s ..= 1 h), or null when {@code leaseId} is set
 * @param leaseId an existing lease, or 0 for a new one
 * @param waitTimeout the longest wait in the queue; zero: try once
 * @param lockDelay lock-delay after an involuntary loss; zero: none
 */
public record AcquireOptions(Duration ttl, long leaseId, Duration waitTimeout,
    Duration lockDelay) {

  /** On a new lease with this TTL, try once, no lock-delay. */
  public static AcquireOptions newLease(Duration ttl) {
    return new AcquireOptions(ttl, 0, Duration.ZERO, Duration.ZERO);
  }

  /** On an existing lease, try once, no lock-delay. */
  public static AcquireOptions onLease(long leaseId) {
    return new AcquireOptions(null, leaseId, Duration.ZERO, Duration.ZERO);
  }

  /** The same with this wait. */
  public AcquireOptions withWaitTimeout(Duration newWait) {
    return new AcquireOptions(ttl, leaseId, newWait, lockDelay);
  }

  /** The same with this lock-delay. */
  public AcquireOptions withLockDelay(Duration newLockDelay) {
    return new AcquireOptions(ttl, leaseId, waitTimeout, newLockDelay);
  }
}
