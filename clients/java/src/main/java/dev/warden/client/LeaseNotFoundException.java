package dev.warden.client;

import io.grpc.Status;
import java.util.Map;

/** The lease is not live (reason {@code LEASE_NOT_LIVE}): expired, revoked, released or never granted. It cannot be renewed back to life (docs/semantics.md S6). */
public class LeaseNotFoundException extends NotFoundException {
  private static final long serialVersionUID = 1L;

  /** From a status the server sent (see {@link WardenException}). */
  public LeaseNotFoundException(
      String message, Status.Code code, String reasonName, Map<String, String> errorMetadata) {
    super(message, code, reasonName, errorMetadata);
  }
}
