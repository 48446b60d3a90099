package dev.warden.client.conformance;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.warden.client.ErrorReason;
import dev.warden.client.InvalidArgumentException;
import dev.warden.client.Session;
import dev.warden.client.WardenClient;
import io.grpc.Status;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

@ExtendWith(SharedCluster.class)
class C10BadInputTypedErrorTest {

  // conformance: C10-bad-input-typed-error
  // Defends "What bad input gets" (docs/semantics.md): each bad value gets a typed invalid
  // argument whose field comes from the status's google.rpc.BadRequest and whose reason from
  // its google.rpc.ErrorInfo (domain warden.v1), never from the message text; nothing is
  // created.
  @Test
  void badInputGetsTheFieldFromTheStatusDetails(TestCluster cluster) {
    WardenClient client = cluster.client();

    InvalidArgumentException ttl = assertThrows(InvalidArgumentException.class,
        () -> client.session(Duration.ofMillis(500)));
    assertDetails(ttl, "ttl_ms");

    try (Session s = client.session(Duration.ofSeconds(5))) {
      String longName = "c10-" + "x".repeat(596);
      assertEquals(600, longName.length());
      InvalidArgumentException resource = assertThrows(InvalidArgumentException.class,
          () -> s.tryLock(longName));
      assertDetails(resource, "resource");

      InvalidArgumentException wait = assertThrows(InvalidArgumentException.class,
          () -> s.lock("c10-r", Duration.ofHours(2)));
      assertDetails(wait, "wait_timeout_ms");
    }
    assertEquals(List.of(), client.list("c10-").locks(), "nothing was created");
  }

  private static void assertDetails(InvalidArgumentException e, String field) {
    assertEquals(field, e.field(), "the BadRequest field violation");
    assertEquals(ErrorReason.INVALID_ARGUMENT, e.reason(), "the ErrorInfo reason");
    assertEquals("INVALID_ARGUMENT", e.reasonName());
    assertEquals(Status.Code.INVALID_ARGUMENT, e.code());
  }
}
