package dev.warden.client;

import io.grpc.Status;
import java.util.Map;

/** The lease or resource named does not exist (gRPC {@code NOT_FOUND}), e.g. a lease that expired or was released; see {@link LeaseNotFoundException}. */
public class NotFoundException extends WardenException {
  private static final long serialVersionUID = 1L;

  /** From a status the server sent (see {@link WardenException}). */
  public NotFoundException(
      String message, Status.Code code, String reasonName, Map<String, String> errorMetadata) {
    super(message, code, reasonName, errorMetadata);
  }
}
