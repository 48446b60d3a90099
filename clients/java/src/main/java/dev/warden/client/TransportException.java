package dev.warden.client;

import io.grpc.Status;
import java.util.Map;

/** The server or the transport failed in a way the client does not retry: an unexpected gRPC code, or a malformed reply. */
public class TransportException extends WardenException {
  private static final long serialVersionUID = 1L;

  /** From a status the server sent (see {@link WardenException}). */
  public TransportException(
      String message, Status.Code code, String reasonName, Map<String, String> errorMetadata) {
    super(message, code, reasonName, errorMetadata);
  }
}
