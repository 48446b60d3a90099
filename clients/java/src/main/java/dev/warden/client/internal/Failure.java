package dev.warden.client.internal;

import com.google.protobuf.Any;
import com.google.protobuf.InvalidProtocolBufferException;
import com.google.rpc.BadRequest;
import com.google.rpc.ErrorInfo;
import dev.warden.client.CompactedException;
import dev.warden.client.ErrorReason;
import dev.warden.client.FailedPreconditionException;
import dev.warden.client.InvalidArgumentException;
import dev.warden.client.LeaseNotFoundException;
import dev.warden.client.NotFoundException;
import dev.warden.client.PermissionDeniedException;
import dev.warden.client.RequestExpiredException;
import dev.warden.client.ResourceExhaustedException;
import dev.warden.client.TransportException;
import dev.warden.client.UnauthenticatedException;
import dev.warden.client.UnsupportedByServerException;
import dev.warden.client.WardenException;
import io.grpc.Metadata;
import io.grpc.Status;
import io.grpc.StatusException;
import io.grpc.StatusRuntimeException;
import io.grpc.protobuf.StatusProto;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;

/**
 * One failed attempt, as the client judges it: the gRPC status, its trailers, and the structured
 * details the server attached ({@code google.rpc.ErrorInfo}, {@code google.rpc.BadRequest}, read
 * with {@link StatusProto}). This is the one place a status becomes a typed exception and is
 * judged for a retry; nothing here reads the status message.
 */
public final class Failure {
  /** The {@code ErrorInfo} domain of every Warden error. */
  public static final String DOMAIN = "warden.v1";
  /** The metadata entry naming the leader's client address on a redirect. */
  public static final Metadata.Key<String> LEADER =
      Metadata.Key.of("warden-leader", Metadata.ASCII_STRING_MARSHALLER);
  /** The metadata entry naming the oldest retained index on a {@code COMPACTED} error. */
  public static final Metadata.Key<String> OLDEST_INDEX =
      Metadata.Key.of("warden-oldest-index", Metadata.ASCII_STRING_MARSHALLER);

  private final Status status;
  private final Metadata trailers;
  private final ErrorInfo errorInfo;
  private final BadRequest badRequest;
  private final WardenException decided;

  private Failure(Status status, Metadata trailers, WardenException decided) {
    this.status = status;
    this.trailers = trailers == null ? new Metadata() : trailers;
    this.decided = decided;
    ErrorInfo info = null;
    BadRequest bad = null;
    if (status != null) {
      com.google.rpc.Status details = StatusProto.fromStatusAndTrailers(status, this.trailers);
      for (Any any : details.getDetailsList()) {
        try {
          if (any.is(ErrorInfo.class) && info == null) {
            ErrorInfo candidate = any.unpack(ErrorInfo.class);
            if (DOMAIN.equals(candidate.getDomain())) {
              info = candidate;
            }
          } else if (any.is(BadRequest.class) && bad == null) {
            bad = any.unpack(BadRequest.class);
          }
        } catch (InvalidProtocolBufferException e) {
          // A malformed detail is ignored: the status code still types the failure.
        }
      }
    }
    this.errorInfo = info;
    this.badRequest = bad;
  }

  /**
   * The failure carried by {@code error} (unwrapping {@link CompletionException} and {@link
   * ExecutionException}): a gRPC status with its trailers, or an exception the attempt already
   * decided is final ({@link #decided()}).
   */
  public static Failure of(Throwable error) {
    Throwable t = unwrap(error);
    if (t instanceof StatusRuntimeException s) {
      return new Failure(s.getStatus(), s.getTrailers(), null);
    }
    if (t instanceof StatusException s) {
      return new Failure(s.getStatus(), s.getTrailers(), null);
    }
    if (t instanceof WardenException w) {
      return new Failure(null, null, w);
    }
    return new Failure(
        Status.UNKNOWN.withDescription(String.valueOf(t)).withCause(t), new Metadata(), null);
  }

  /** A failure from a status (and trailers, possibly null). */
  public static Failure of(Status status, Metadata trailers) {
    return new Failure(status, trailers, null);
  }

  /** Strips the wrappers futures put around a failure. */
  public static Throwable unwrap(Throwable error) {
    Throwable t = error;
    while ((t instanceof CompletionException || t instanceof ExecutionException)
        && t.getCause() != null) {
      t = t.getCause();
    }
    return t;
  }

  /** A final answer the attempt decided itself (e.g. a malformed reply), or null. */
  public WardenException decided() {
    return decided;
  }

  /** The status (null when {@link #decided()}). */
  public Status status() {
    return status;
  }

  /** The trailers (empty when none). */
  public Metadata trailers() {
    return trailers;
  }

  /** The server's {@code ErrorInfo} reason, "" when it attached none. */
  public String reasonName() {
    return errorInfo == null ? "" : errorInfo.getReason();
  }

  /** {@link #reasonName()} as the enum. */
  public ErrorReason reason() {
    return ErrorReason.of(reasonName());
  }

  /** The leader named in {@code warden-leader}, if the entry is a valid address. */
  public Optional<Endpoint> leaderHint() {
    String value = trailers.get(LEADER);
    return value == null ? Optional.empty() : Endpoint.tryParse(value);
  }

  /**
   * True when a Warden node itself answered (it attached its {@code ErrorInfo}, or named a
   * leader), as opposed to the transport failing to reach one.
   */
  public boolean answeredByServer() {
    return decided != null || errorInfo != null || trailers.containsKey(LEADER);
  }

  /**
   * Whether the attempt may be repeated: the server could not serve it here (not the leader, no
   * quorum, shutting down), the attempt timed out, or the connection or stream broke. Repeating a
   * mutating request is safe because it carries the same request id (S7). {@code UNIMPLEMENTED}
   * is retried too: another HTTP/2 service answered (not a Warden node), unless the caller asks
   * for it as a final answer ({@code unimplementedIsFinal}, for an RPC newer than some servers).
   */
  public boolean retryable(boolean unimplementedIsFinal) {
    if (decided != null) {
      return false;
    }
    return switch (status.getCode()) {
      case UNAVAILABLE, CANCELLED, DEADLINE_EXCEEDED, ABORTED -> true;
      // A broken connection or stream surfaces as UNKNOWN or INTERNAL without Warden's details;
      // the server's own errors always carry them.
      case UNKNOWN, INTERNAL -> errorInfo == null;
      case UNIMPLEMENTED -> !unimplementedIsFinal;
      default -> false;
    };
  }

  /** A short description for the "last error" of a call that ran out of time. */
  public String describe() {
    if (decided != null) {
      return decided.getMessage();
    }
    String description = status.getDescription();
    String text = status.getCode() + (description == null ? "" : ": " + description);
    return errorInfo == null ? text : text + " [" + errorInfo.getReason() + "]";
  }

  /**
   * The typed exception for a final answer. The type comes from the {@code ErrorInfo} reason,
   * else from the gRPC code; the field of an invalid argument from the {@code BadRequest}.
   *
   * @param rpc the full method name, for {@link UnsupportedByServerException}
   */
  public WardenException toException(String rpc) {
    if (decided != null) {
      return decided;
    }
    String message = status.getDescription() == null ? status.getCode().toString()
        : status.getDescription();
    Status.Code code = status.getCode();
    String reason = reasonName();
    Map<String, String> meta = errorInfo == null ? Map.of() : errorInfo.getMetadataMap();
    WardenException typed = switch (reason) {
      case "INVALID_ARGUMENT" -> invalidArgument(message, code, reason, meta);
      case "LEASE_NOT_LIVE" -> new LeaseNotFoundException(message, code, reason, meta);
      case "NOT_FOUND" -> new NotFoundException(message, code, reason, meta);
      case "FAILED_PRECONDITION" -> new FailedPreconditionException(message, code, reason, meta);
      case "REQUEST_EXPIRED" -> new RequestExpiredException(message, code, reason, meta);
      case "PERMISSION_DENIED", "ADMIN_DISABLED" ->
          new PermissionDeniedException(message, code, reason, meta);
      case "UNAUTHENTICATED" -> new UnauthenticatedException(message, code, reason, meta);
      case "RESOURCE_EXHAUSTED" -> new ResourceExhaustedException(message, code, reason, meta);
      case "COMPACTED" -> compacted(message, code, reason, meta);
      default -> null;
    };
    if (typed != null) {
      return typed;
    }
    // No (known) details: fall back to the gRPC code.
    return switch (code) {
      case INVALID_ARGUMENT -> invalidArgument(message, code, reason, meta);
      case OUT_OF_RANGE -> trailers.containsKey(OLDEST_INDEX)
          ? compacted(message, code, reason, meta)
          : invalidArgument(message, code, reason, meta);
      case NOT_FOUND -> new NotFoundException(message, code, reason, meta);
      case FAILED_PRECONDITION -> new FailedPreconditionException(message, code, reason, meta);
      case PERMISSION_DENIED -> new PermissionDeniedException(message, code, reason, meta);
      case UNAUTHENTICATED -> new UnauthenticatedException(message, code, reason, meta);
      case RESOURCE_EXHAUSTED -> new ResourceExhaustedException(message, code, reason, meta);
      case UNIMPLEMENTED -> new UnsupportedByServerException(rpc, message);
      default -> new TransportException(code + ": " + message, code, reason, meta);
    };
  }

  private InvalidArgumentException invalidArgument(
      String message, Status.Code code, String reason, Map<String, String> meta) {
    List<InvalidArgumentException.FieldViolation> violations = new ArrayList<>();
    if (badRequest != null) {
      for (BadRequest.FieldViolation v : badRequest.getFieldViolationsList()) {
        violations.add(new InvalidArgumentException.FieldViolation(v.getField(),
            v.getDescription()));
      }
    }
    return new InvalidArgumentException(message, code, reason, meta, violations);
  }

  private CompactedException compacted(
      String message, Status.Code code, String reason, Map<String, String> meta) {
    long oldest = 0;
    String value = trailers.get(OLDEST_INDEX);
    if (value != null) {
      try {
        oldest = Long.parseLong(value.trim());
      } catch (NumberFormatException e) {
        oldest = 0;
      }
    }
    return new CompactedException(message, code, reason, meta, oldest);
  }
}
