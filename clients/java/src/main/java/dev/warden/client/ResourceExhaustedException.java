package dev.warden.client;

import io.grpc.Status;
import java.util.Map;

/** A table, counter or quota is full (gRPC {@code RESOURCE_EXHAUSTED}); the message names it and its bound. */
public class ResourceExhaustedException extends WardenException {
  private static final long serialVersionUID = 1L;

  /** From a status the server sent (see {@link WardenException}). */
  public ResourceExhaustedException(
      String message, Status.Code code, String reasonName, Map<String, String> errorMetadata) {
    super(message, code, reasonName, errorMetadata);
  }
}
