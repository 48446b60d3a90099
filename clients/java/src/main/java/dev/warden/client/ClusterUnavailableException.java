package dev.warden.client;

import java.util.List;
import java.util.Map;

/**
 * The client kept trying (following the leader, then the other endpoints, with backoff) until
 * the call's deadline and no node served the call (docs/semantics.md L3). {@link
 * NoQuorumException}: nodes answered, but none could serve (no leader, no quorum); {@link
 * UnavailableException}: no node was reachable. Trying again later may succeed; for a mutating
 * call the outcome is unknown, and a retry with a new call is a new request.
 */
public abstract class ClusterUnavailableException extends WardenException {
  private static final long serialVersionUID = 1L;

  private final List<String> tried;
  private final long waitedMs;
  private final String lastError;
  private final ErrorReason lastReason;

  ClusterUnavailableException(
      String summary,
      List<String> tried,
      long waitedMs,
      String lastError,
      ErrorReason lastReason,
      String lastReasonName) {
    super(
        summary
            + " within "
            + waitedMs
            + " ms (tried "
            + String.join(", ", tried)
            + "); last error: "
            + lastError,
        io.grpc.Status.Code.UNAVAILABLE,
        lastReasonName,
        Map.of());
    this.tried = List.copyOf(tried);
    this.waitedMs = waitedMs;
    this.lastError = lastError;
    this.lastReason = lastReason;
  }

  /** Every address tried, in order of first attempt. */
  public List<String> tried() {
    return tried;
  }

  /** How long the client kept trying, in milliseconds. */
  public long waitedMs() {
    return waitedMs;
  }

  /** The last failure, prefixed with the address it came from. */
  public String lastError() {
    return lastError;
  }

  /** The reason of the last failure ({@code NOT_LEADER}, {@code NO_LEADER}, ...), or NONE. */
  public ErrorReason lastReason() {
    return lastReason;
  }
}
