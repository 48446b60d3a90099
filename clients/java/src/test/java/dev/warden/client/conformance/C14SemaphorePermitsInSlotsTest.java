package dev.warden.client.conformance;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.warden.client.FailedPreconditionException;
import dev.warden.client.Lock;
import dev.warden.client.LockMode;
import dev.warden.client.LockOptions;
import dev.warden.client.LockStatus;
import dev.warden.client.PendingLock;
import dev.warden.client.Semaphore;
import dev.warden.client.Session;
import java.time.Duration;
import java.util.OptionalInt;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

@ExtendWith(SharedCluster.class)
class C14SemaphorePermitsInSlotsTest {

  // conformance: C14-semaphore-permits-in-slots
  // Defends "Lock kinds" (docs/semantics.md): at most N holders of a semaphore of N, each with a
  // slot and a fresh fencing token; a freed permit goes to the oldest waiter, in the freed slot;
  // another limit or kind is a typed failed precondition naming the field.
  @Test
  void permitsComeInSlotsAndAFreedOneGoesToTheWaiter(TestCluster cluster) throws Exception {
    Duration ttl = Duration.ofSeconds(10);
    try (Session s1 = cluster.client().session(ttl);
        Session s2 = cluster.client().session(ttl);
        Session s3 = cluster.client().session(ttl);
        Session s4 = cluster.client().session(ttl)) {
      Lock p1 = s1.semaphore("c14-r", 3).acquire();
      Lock p2 = s2.semaphore("c14-r", 3).acquire();
      Lock p3 = s3.semaphore("c14-r", 3).acquire();
      assertEquals(OptionalInt.of(0), p1.slot());
      assertEquals(OptionalInt.of(1), p2.slot());
      assertEquals(OptionalInt.of(2), p3.slot());
      assertEquals(LockMode.UNSPECIFIED, p1.mode());
      assertTrue(p1.fencingToken() < p2.fencingToken(), p1 + " then " + p2);
      assertTrue(p2.fencingToken() < p3.fencingToken(), p2 + " then " + p3);

      Semaphore sem4 = s4.semaphore("c14-r", 3);
      PendingLock waiting =
          sem4.acquireAsync(LockOptions.DEFAULT.withWaitTimeout(Duration.ofSeconds(30)));
      waiting.queued().get(10, TimeUnit.SECONDS);
      LockStatus status = cluster.client().status("c14-r");
      assertEquals("semaphore", status.kind(), status.toString());
      assertEquals(3, status.limit());
      assertTrue(status.holder().isEmpty(), "no single holder: " + status);
      assertEquals(1, status.waiters());
      assertEquals(Set.of(s1.leaseId(), s2.leaseId(), s3.leaseId()),
          status.holders().stream().map(LockStatus.Holder::leaseId).collect(Collectors.toSet()));
      assertEquals(Set.of(0, 1, 2), status.holders().stream()
          .map(h -> h.slot().orElseThrow()).collect(Collectors.toSet()));
      assertFalse(waiting.isDone());

      p2.release();
      Lock p4 = waiting.get(10, TimeUnit.SECONDS);
      assertEquals(OptionalInt.of(1), p4.slot(), "the freed slot");
      assertEquals(s4.leaseId(), p4.leaseId());
      assertTrue(p4.fencingToken() > p3.fencingToken(), p3 + " then " + p4);
      p4.check();

      FailedPreconditionException otherLimit = assertThrows(FailedPreconditionException.class,
          () -> s2.semaphore("c14-r", 4).tryAcquire());
      assertNamesField(otherLimit, "limit");
      FailedPreconditionException asMutex =
          assertThrows(FailedPreconditionException.class, () -> s2.tryLock("c14-r"));
      assertNamesField(asMutex, "kind");
      assertEquals(3, cluster.client().status("c14-r").holders().size(), "nothing changed");
    }
  }

  /** The field is the kind's ("kind" or "limit"): in the status's details or its message. */
  static void assertNamesField(FailedPreconditionException e, String field) {
    String said = e.errorMetadata() + " " + e.getMessage();
    assertTrue(e.errorMetadata().containsValue(field) || e.getMessage().contains(field),
        "names " + field + ": " + said);
  }
}
