package dev.warden.client;

/**
 * The final answer of a low-level acquire: {@link Granted} or {@link NotGranted}. A refusal
 * because of the resource's state is an answer, not an error.
 */
public sealed interface AcquireResult permits AcquireResult.Granted, AcquireResult.NotGranted {

  /**
   * The grant.
   *
   * @param resource the resource
   * @param leaseId the lease holding it
   * @param fencingToken larger than every token issued before it for this resource (S2)
   * @param ttlMs the lease's TTL as granted
   * @param logIndex the log index of the entry that made the grant
   * @param sentAtNanos {@link System#nanoTime()} read before the acquire's first attempt: a
   *     grant on a new lease is valid until this + {@link Validity#ofTtlMs} (S5)
   */
  record Granted(
      String resource, long leaseId, long fencingToken, long ttlMs, long logIndex,
      long sentAtNanos)
      implements AcquireResult {}

  /**
   * Not granted.
   *
   * @param resource the resource
   * @param reason held, lock-delay or wait timeout (null for a reason this version does not
   *     know: see {@code reasonWire})
   * @param reasonWire the server's reason string
   * @param holderLeaseId the lease holding the resource, 0 if none
   */
  record NotGranted(String resource, NotGrantedReason reason, String reasonWire,
      long holderLeaseId) implements AcquireResult {

    /** This answer as the exception the session calls throw. */
    public LockNotGrantedException toException() {
      return new LockNotGrantedException(resource, reasonWire, holderLeaseId);
    }
  }
}
