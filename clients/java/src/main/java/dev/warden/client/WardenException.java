package dev.warden.client;

import io.grpc.Status;
import java.util.Map;

/**
 * Why a call failed. Unchecked, like gRPC's own {@code StatusRuntimeException}; every failure
 * the server chose is a subclass typed by the reason in the status's {@code google.rpc.ErrorInfo}
 * (never by its message text), and keeps the server's message, which names the field and the
 * limit. Answers the server chose are never retried; {@link NoQuorumException} and {@link
 * UnavailableException} come only after the client kept retrying until its deadline
 * (docs/semantics.md L3: a call never hangs).
 */
public class WardenException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  private final transient Status.Code code;
  private final ErrorReason reason;
  private final String reasonName;
  private final Map<String, String> errorMetadata;

  /**
   * @param message what happened (the server's message, when it sent one)
   * @param code the gRPC code, or null for a failure the client found itself
   * @param reasonName the {@code ErrorInfo} reason, "" when there was none
   * @param errorMetadata the {@code ErrorInfo} metadata (empty when none)
   */
  public WardenException(
      String message, Status.Code code, String reasonName, Map<String, String> errorMetadata) {
    this(message, code, reasonName, errorMetadata, null);
  }

  /** As the other constructor, with a cause. */
  public WardenException(
      String message,
      Status.Code code,
      String reasonName,
      Map<String, String> errorMetadata,
      Throwable cause) {
    super(message, cause);
    this.code = code;
    this.reasonName = reasonName == null ? "" : reasonName;
    this.reason = ErrorReason.of(this.reasonName);
    this.errorMetadata = errorMetadata == null ? Map.of() : Map.copyOf(errorMetadata);
  }

  /** A failure the client found itself (no status). */
  public WardenException(String message) {
    this(message, null, "", Map.of());
  }

  /** The gRPC code of the status, or null when the client failed the call itself. */
  public Status.Code code() {
    return code;
  }

  /** The server's {@code ErrorInfo} reason, or {@link ErrorReason#NONE}. */
  public ErrorReason reason() {
    return reason;
  }

  /** The reason exactly as the server sent it ("" when none): for reasons newer than this enum. */
  public String reasonName() {
    return reasonName;
  }

  /** The {@code ErrorInfo} metadata the server attached (empty when none). */
  public Map<String, String> errorMetadata() {
    return errorMetadata;
  }
}
