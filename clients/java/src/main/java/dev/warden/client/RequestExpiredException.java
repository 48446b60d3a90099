package dev.warden.client;

import io.grpc.Status;
import java.util.Map;

/** The server no longer remembers the outcome of this retried request (reason {@code REQUEST_EXPIRED}). It may or may not have taken effect; it was not executed twice (docs/semantics.md S7). */
public class RequestExpiredException extends WardenException {
  private static final long serialVersionUID = 1L;

  /** From a status the server sent (see {@link WardenException}). */
  public RequestExpiredException(
      String message, Status.Code code, String reasonName, Map<String, String> errorMetadata) {
    super(message, code, reasonName, errorMetadata);
  }
}
