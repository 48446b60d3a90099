package dev.warden.client;

/**
 * The session a call or a lock depends on is lost (docs/semantics.md S5): its locks can no
 * longer be trusted. A lost session stays lost; open a new one.
 */
public class SessionLostException extends WardenException {
  private static final long serialVersionUID = 1L;

  private final LostReason lostReason;
  private final long leaseId;

  /** The session's lease and why it was lost. */
  public SessionLostException(long leaseId, LostReason lostReason, String detail) {
    super("session lost (lease " + leaseId + "): " + detail);
    this.lostReason = lostReason;
    this.leaseId = leaseId;
  }

  /** Why. */
  public LostReason lostReason() {
    return lostReason;
  }

  /** The session's lease. */
  public long leaseId() {
    return leaseId;
  }
}
