package dev.warden.client.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.protobuf.Any;
import com.google.rpc.BadRequest;
import com.google.rpc.Code;
import com.google.rpc.ErrorInfo;
import dev.warden.client.CompactedException;
import dev.warden.client.ErrorReason;
import dev.warden.client.InvalidArgumentException;
import dev.warden.client.LeaseNotFoundException;
import dev.warden.client.PermissionDeniedException;
import dev.warden.client.TransportException;
import dev.warden.client.UnsupportedByServerException;
import dev.warden.client.WardenException;
import io.grpc.Metadata;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.protobuf.StatusProto;
import java.util.Optional;
import java.util.concurrent.CompletionException;
import org.junit.jupiter.api.Test;

class FailureTest {

  /** A status as the server's one error edge builds it: ErrorInfo, and BadRequest if a field. */
  private static StatusRuntimeException serverError(Code code, String message, String reason,
      String domain, String field, Metadata extra) {
    com.google.rpc.Status.Builder s = com.google.rpc.Status.newBuilder()
        .setCode(code.getNumber()).setMessage(message)
        .addDetails(Any.pack(ErrorInfo.newBuilder().setReason(reason).setDomain(domain)
            .putMetadata("limit", "512").build()));
    if (field != null) {
      s.addDetails(Any.pack(BadRequest.newBuilder().addFieldViolations(
          BadRequest.FieldViolation.newBuilder().setField(field).setDescription(message))
          .build()));
    }
    return StatusProto.toStatusRuntimeException(s.build(), extra);
  }

  // Defends "What bad input gets": the field of an invalid argument comes from the status's
  // google.rpc.BadRequest and the reason from its ErrorInfo, not from the message text (whose
  // first word here names another field on purpose).
  @Test
  void anInvalidArgumentNamesTheFieldFromBadRequest() {
    Failure f = Failure.of(new CompletionException(serverError(Code.INVALID_ARGUMENT,
        "ttl_ms: the message names another field", "INVALID_ARGUMENT", "warden.v1", "resource",
        new Metadata())));
    assertEquals(ErrorReason.INVALID_ARGUMENT, f.reason());
    assertTrue(f.answeredByServer());
    assertFalse(f.retryable(false));
    InvalidArgumentException e = assertInstanceOf(InvalidArgumentException.class,
        f.toException("warden.v1.Lock/Acquire"));
    assertEquals("resource", e.field());
    assertEquals(1, e.violations().size());
    assertEquals("512", e.errorMetadata().get("limit"));
    assertEquals(io.grpc.Status.Code.INVALID_ARGUMENT, e.code());
  }

  // Defends the typed errors: the ErrorInfo reason decides the type (LEASE_NOT_LIVE is a lease
  // not found although its code is NOT_FOUND or FAILED_PRECONDITION; PERMISSION_DENIED is typed).
  @Test
  void theReasonDecidesTheType() {
    assertInstanceOf(LeaseNotFoundException.class, Failure.of(serverError(
        Code.FAILED_PRECONDITION, "lease 7 is not live", "LEASE_NOT_LIVE", "warden.v1", null,
        new Metadata())).toException("rpc"));
    WardenException denied = Failure.of(serverError(Code.PERMISSION_DENIED,
        "principal alice has no lock permission on \"jobs/2\"", "PERMISSION_DENIED", "warden.v1", null,
        new Metadata())).toException("rpc");
    assertInstanceOf(PermissionDeniedException.class, denied);
    assertEquals(ErrorReason.PERMISSION_DENIED, denied.reason());
  }

  // Defends the typed errors against details of another domain: an ErrorInfo that is not
  // warden.v1's is ignored, and the gRPC code types the failure.
  @Test
  void anotherDomainsErrorInfoIsIgnored() {
    Failure f = Failure.of(serverError(Code.NOT_FOUND, "x", "LEASE_NOT_LIVE", "example.com",
        null, new Metadata()));
    assertEquals(ErrorReason.NONE, f.reason());
    WardenException e = f.toException("rpc");
    assertFalse(e instanceof LeaseNotFoundException, e.getClass().getName());
    assertEquals(io.grpc.Status.Code.NOT_FOUND, e.code());
  }

  // Defends L3 (leader following): a redirect's warden-leader entry is the next address to
  // try, and a redirect is retryable; an entry that is not host:port is never followed.
  @Test
  void aRedirectNamesTheLeader() {
    Metadata trailers = new Metadata();
    trailers.put(Failure.LEADER, "127.0.0.1:7002");
    Failure f = Failure.of(serverError(Code.UNAVAILABLE, "not the leader", "NOT_LEADER",
        "warden.v1", null, trailers));
    assertEquals(Optional.of(new Endpoint("127.0.0.1", 7002)), f.leaderHint());
    assertTrue(f.retryable(false));

    Metadata bad = new Metadata();
    bad.put(Failure.LEADER, "not an address");
    assertEquals(Optional.empty(), Failure.of(Status.UNAVAILABLE, bad).leaderHint());
  }

  // Defends the retry loop's classification: transport failures are retried (the request id
  // makes a repeat safe, S7); a final answer is not; UNIMPLEMENTED is final only when asked, and
  // then typed as "unsupported by the server".
  @Test
  void transportFailuresAreRetriedFinalAnswersAreNot() {
    assertTrue(Failure.of(Status.UNAVAILABLE, null).retryable(false));
    assertTrue(Failure.of(Status.DEADLINE_EXCEEDED, null).retryable(false));
    assertTrue(Failure.of(Status.INTERNAL.withDescription("RST_STREAM"), null)
        .retryable(false));
    assertFalse(Failure.of(serverError(Code.INTERNAL, "bug", "NODE_FAILED", "warden.v1", null,
        new Metadata())).retryable(false), "a Warden node's own INTERNAL is an answer");
    assertFalse(Failure.of(Status.INVALID_ARGUMENT, null).retryable(false));
    assertTrue(Failure.of(Status.UNIMPLEMENTED, null).retryable(false));
    Failure unimplemented = Failure.of(Status.UNIMPLEMENTED, null);
    assertFalse(unimplemented.retryable(true));
    assertInstanceOf(UnsupportedByServerException.class,
        unimplemented.toException("warden.v1.Lock/CancelWait"));
    assertInstanceOf(TransportException.class,
        Failure.of(Status.UNAVAILABLE, null).toException("rpc"));
  }

  // Defends the watch's compaction rule: COMPACTED is a typed error carrying the oldest
  // retained index from warden-oldest-index.
  @Test
  void compactedNamesTheOldestRetainedIndex() {
    Metadata trailers = new Metadata();
    trailers.put(Failure.OLDEST_INDEX, "42");
    CompactedException e = assertInstanceOf(CompactedException.class,
        Failure.of(serverError(Code.OUT_OF_RANGE, "below the window", "COMPACTED", "warden.v1",
            null, trailers)).toException("warden.v1.Watch/Watch"));
    assertEquals(42, e.oldestIndex());
    assertEquals(ErrorReason.COMPACTED, e.reason());
  }
}
