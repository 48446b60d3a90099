package dev.warden.client;

import java.util.List;

/**
 * Nodes answered, but none served the call before the deadline: no leader was elected, no
 * quorum was reachable, or the last node named a leader that could not be reached ({@link
 * #lastReason()} says which: {@code NOT_LEADER}, {@code NO_LEADER}, {@code NO_QUORUM}, ...).
 */
public class NoQuorumException extends ClusterUnavailableException {
  private static final long serialVersionUID = 1L;

  /** See {@link ClusterUnavailableException}. */
  public NoQuorumException(
      List<String> tried,
      long waitedMs,
      String lastError,
      ErrorReason lastReason,
      String lastReasonName) {
    super("no quorum: no leader served the call", tried, waitedMs, lastError, lastReason,
        lastReasonName);
  }
}
