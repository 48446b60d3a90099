package dev.warden.client;

/**
 * The reason a Warden server names in the {@code google.rpc.ErrorInfo} detail of every status
 * (domain {@code warden.v1}). The client types its exceptions by this, never by message text;
 * a status without details falls back to its gRPC code ({@link #NONE}).
 */
public enum ErrorReason {
  INVALID_ARGUMENT,
  NOT_FOUND,
  FAILED_PRECONDITION,
  RESOURCE_EXHAUSTED,
  REQUEST_EXPIRED,
  PERMISSION_DENIED,
  UNAUTHENTICATED,
  NOT_LEADER,
  NO_LEADER,
  NOT_PROPOSED,
  OUTCOME_UNKNOWN,
  NO_QUORUM,
  NOT_SERVING,
  BOOTSTRAPPING,
  LEASE_NOT_LIVE,
  SHUTTING_DOWN,
  ADMIN_DISABLED,
  COMPACTED,
  NODE_FAILED,
  /** A reason this client version does not know (see {@link WardenException#reasonName()}). */
  OTHER,
  /** The status carried no {@code ErrorInfo} of domain {@code warden.v1}. */
  NONE;

  /** The enum constant for a reason string; {@link #OTHER} for one not listed, NONE for "". */
  public static ErrorReason of(String name) {
    if (name == null || name.isEmpty()) {
      return NONE;
    }
    for (ErrorReason r : values()) {
      if (r != OTHER && r != NONE && r.name().equals(name)) {
        return r;
      }
    }
    return OTHER;
  }
}
