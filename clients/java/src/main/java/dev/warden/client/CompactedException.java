package dev.warden.client;

import io.grpc.Status;
import java.util.Map;

/**
 * A watch asked for events older than the node retains (gRPC {@code OUT_OF_RANGE}, reason
 * {@code COMPACTED}). {@link #oldestIndex()} is the oldest log index the node still has (from
 * the {@code warden-oldest-index} metadata entry): watch from there and read the current state
 * with {@code status}/{@code list} for what came before.
 */
public class CompactedException extends WardenException {
  private static final long serialVersionUID = 1L;

  private final long oldestIndex;

  /** From the server's status, with the oldest retained index (0 when it named none). */
  public CompactedException(
      String message,
      Status.Code code,
      String reasonName,
      Map<String, String> errorMetadata,
      long oldestIndex) {
    super(message, code, reasonName, errorMetadata);
    this.oldestIndex = oldestIndex;
  }

  /** The oldest log index the node retains; 0 if the server did not say. */
  public long oldestIndex() {
    return oldestIndex;
  }
}
