package dev.warden.client;

import io.grpc.Status;
import java.util.Map;

/** The server refuses this caller this call (gRPC {@code PERMISSION_DENIED}): the principal lacks the permission, or an admin call on a node without admin calls enabled ({@link ErrorReason#ADMIN_DISABLED}). */
public class PermissionDeniedException extends WardenException {
  private static final long serialVersionUID = 1L;

  /** From a status the server sent (see {@link WardenException}). */
  public PermissionDeniedException(
      String message, Status.Code code, String reasonName, Map<String, String> errorMetadata) {
    super(message, code, reasonName, errorMetadata);
  }
}
