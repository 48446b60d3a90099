package dev.warden.client;

import java.time.Duration;

/**
 * How a {@link Session} lock is taken: the longest wait in the server's FIFO queue, the
 * lock-delay after an involuntary loss, and the max-hold (docs/semantics.md "Max-hold"). The
 * bounds are the server's; a value outside them gets an {@link InvalidArgumentException} naming
 * the field ({@code wait_timeout_ms}, {@code lock_delay_ms}, {@code max_hold_ms}).
 *
 * <pre>{@code
 * Lock lock = session.lock("orders",
 *     LockOptions.DEFAULT.withWaitTimeout(Duration.ofSeconds(10)).withMaxHold(Duration.ofMinutes(1)));
 * }</pre>
 *
 * @param waitTimeout the longest wait in the queue (zero: try once; at most 1 h), or null: as long as
 *     it takes (in rounds of at most 1 h, or of just under the max-hold when one is set, since
 *     the server wants the max-hold above the wait)
 * @param lockDelay lock-delay after an involuntary loss (expiry, forced release, max-hold);
 *     zero: none; at most 60 s
 * @param maxHold zero: none; otherwise the grant ends no later than this after it was made,
 *     however often the session renews (1 s ..= 24 h, above {@code waitTimeout}); the {@link Lock}'s
 *     {@link Lock#validUntil()} then counts from the acquire's send
 */
public record LockOptions(Duration waitTimeout, Duration lockDelay, Duration maxHold) {
  /** Wait as long as it takes, no lock-delay, no max-hold. */
  public static final LockOptions DEFAULT = new LockOptions(null, Duration.ZERO, Duration.ZERO);

  /** Canonical constructor: a null lock-delay or max-hold is zero. */
  public LockOptions {
    lockDelay = lockDelay == null ? Duration.ZERO : lockDelay;
    maxHold = maxHold == null ? Duration.ZERO : maxHold;
  }

  /** The same with this wait (null: as long as it takes; zero: try once). */
  public LockOptions withWaitTimeout(Duration newWait) {
    return new LockOptions(newWait, lockDelay, maxHold);
  }

  /** The same with this lock-delay. */
  public LockOptions withLockDelay(Duration newLockDelay) {
    return new LockOptions(waitTimeout, newLockDelay, maxHold);
  }

  /** The same with this max-hold (zero: none). */
  public LockOptions withMaxHold(Duration newMaxHold) {
    return new LockOptions(waitTimeout, lockDelay, newMaxHold);
  }
}
