package dev.warden.client;

/**
 * A lock was not granted: the resource is held (a try-lock), in lock-delay, or the wait ran out.
 * This is the server's answer about the resource, not a failure of the call: nothing is held and
 * no waiter is left queued. {@link #holderLeaseId()} names the lease that holds the resource (0
 * when none, e.g. lock-delay or a timeout).
 */
public class LockNotGrantedException extends WardenException {
  private static final long serialVersionUID = 1L;

  private final String resource;
  private final NotGrantedReason notGrantedReason;
  private final String reasonWire;
  private final long holderLeaseId;

  /** {@code reasonWire}: the server's reason string ("held", "lock_delay", "wait_timeout"). */
  public LockNotGrantedException(String resource, String reasonWire, long holderLeaseId) {
    super(
        "not granted: "
            + reasonWire
            + " ("
            + resource
            + (holderLeaseId != 0 ? ", held by lease " + holderLeaseId : "")
            + ")");
    this.resource = resource;
    this.reasonWire = reasonWire;
    this.notGrantedReason = NotGrantedReason.of(reasonWire);
    this.holderLeaseId = holderLeaseId;
  }

  /** The resource asked for. */
  public String resource() {
    return resource;
  }

  /** Why, or null for a reason this client version does not know (see {@link #reasonWire()}). */
  public NotGrantedReason notGrantedReason() {
    return notGrantedReason;
  }

  /** The reason exactly as the server sent it. */
  public String reasonWire() {
    return reasonWire;
  }

  /** The lease holding the resource, 0 if none. */
  public long holderLeaseId() {
    return holderLeaseId;
  }
}
