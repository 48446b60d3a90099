package dev.warden.client;

/** Why an acquire was not granted: the server's {@code NotGranted.reason}. */
public enum NotGrantedReason {
  /** Another lease holds the resource (a try-lock). */
  HELD,
  /** The resource is in lock-delay after an involuntary loss (docs/semantics.md S8). */
  LOCK_DELAY,
  /** The wait in the queue ran out; the waiter's removal has committed (S8). */
  WAIT_TIMEOUT,
  /**
   * The acquire's own {@code CancelWait} was applied before it (outcome "preempted"): it was
   * refused when it arrived and never queued (docs/semantics.md S8).
   */
  CANCELLED,
  /**
   * A try-lock on a free resource whose queue's head is a multi-lock still waiting for its
   * other resources (docs/semantics.md "Multi-locks").
   */
  RESERVED;

  /** The enum constant for the server's reason string; null for one this client does not know. */
  public static NotGrantedReason of(String wire) {
    return switch (wire) {
      case "held" -> HELD;
      case "lock_delay" -> LOCK_DELAY;
      case "wait_timeout" -> WAIT_TIMEOUT;
      case "cancelled" -> CANCELLED;
      case "reserved" -> RESERVED;
      default -> null;
    };
  }
}
