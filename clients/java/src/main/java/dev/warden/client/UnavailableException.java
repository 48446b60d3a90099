package dev.warden.client;

import java.util.List;

/** No node could be reached before the deadline (refused connections, timeouts). */
public class UnavailableException extends ClusterUnavailableException {
  private static final long serialVersionUID = 1L;

  /** See {@link ClusterUnavailableException}. */
  public UnavailableException(List<String> tried, long waitedMs, String lastError) {
    super("unavailable: no server reachable", tried, waitedMs, lastError, ErrorReason.NONE, "");
  }
}
