package dev.warden.client;

import io.grpc.Status;
import java.util.Map;

/** The request does not fit the current state (gRPC {@code FAILED_PRECONDITION}), e.g. a stale fencing token, another holder, a deposed leader proclaiming (docs/semantics.md S6). */
public class FailedPreconditionException extends WardenException {
  private static final long serialVersionUID = 1L;

  /** From a status the server sent (see {@link WardenException}). */
  public FailedPreconditionException(
      String message, Status.Code code, String reasonName, Map<String, String> errorMetadata) {
    super(message, code, reasonName, errorMetadata);
  }
}
