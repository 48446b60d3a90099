package dev.warden.client;

import io.grpc.Status;
import java.util.Map;

/** The server does not know who is calling (gRPC {@code UNAUTHENTICATED}): e.g. no client certificate on a TLS cluster. */
public class UnauthenticatedException extends WardenException {
  private static final long serialVersionUID = 1L;

  /** From a status the server sent (see {@link WardenException}). */
  public UnauthenticatedException(
      String message, Status.Code code, String reasonName, Map<String, String> errorMetadata) {
    super(message, code, reasonName, errorMetadata);
  }
}
