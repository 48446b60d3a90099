package dev.warden.client;

import io.grpc.Status;
import java.util.List;
import java.util.Map;

/**
 * The request was refused as malformed or out of bounds (gRPC {@code INVALID_ARGUMENT}, reason
 * {@code INVALID_ARGUMENT}), or an argument failed a check of the client's own. Nothing changed
 * on the cluster. {@link #field()} names the field, read from the status's {@code
 * google.rpc.BadRequest} detail (e.g. {@code ttl_ms}, {@code resource}, {@code
 * wait_timeout_ms}); the message names the limit.
 */
public class InvalidArgumentException extends WardenException {
  private static final long serialVersionUID = 1L;

  /** One {@code google.rpc.BadRequest.FieldViolation}. */
  public record FieldViolation(String field, String description) {}

  private final List<FieldViolation> violations;

  /** From a status the server sent, with its {@code BadRequest} field violations. */
  public InvalidArgumentException(
      String message,
      Status.Code code,
      String reasonName,
      Map<String, String> errorMetadata,
      List<FieldViolation> violations) {
    super(message, code, reasonName, errorMetadata);
    this.violations = List.copyOf(violations);
  }

  /** A bad argument the client refused itself, naming {@code field}. */
  public InvalidArgumentException(String field, String message) {
    super(field + ": " + message, null, "", Map.of());
    this.violations = List.of(new FieldViolation(field, message));
  }

  /** The first field named, or "" when the status named none. */
  public String field() {
    return violations.isEmpty() ? "" : violations.get(0).field();
  }

  /** Every field violation of the {@code BadRequest} detail, in order. */
  public List<FieldViolation> violations() {
    return violations;
  }
}
