package dev.warden.client.conformance;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.warden.client.Lock;
import dev.warden.client.LockNotGrantedException;
import dev.warden.client.LockStatus;
import dev.warden.client.NotGrantedReason;
import dev.warden.client.Session;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

@ExtendWith(SharedCluster.class)
class C02HeldNotGrantedTest {

  // conformance: C02-held-not-granted
  // Defends S1 (one holder at a time): a try-lock on a held resource is a typed "not granted:
  // held" naming the holder's lease, and the holder keeps it.
  @Test
  void tryLockOnAHeldResourceNamesTheHolder(TestCluster cluster) {
    try (Session a = cluster.client().session(Duration.ofSeconds(5));
        Session b = cluster.clientAs("root").session(Duration.ofSeconds(5))) {
      Lock held = a.lock("c02-r");
      LockNotGrantedException refused =
          assertThrows(LockNotGrantedException.class, () -> b.tryLock("c02-r"));
      assertEquals(NotGrantedReason.HELD, refused.notGrantedReason());
      assertEquals("held", refused.reasonWire());
      assertEquals(a.leaseId(), refused.holderLeaseId());
      assertEquals("c02-r", refused.resource());

      LockStatus status = cluster.client().status("c02-r");
      assertTrue(status.holder().isPresent());
      assertEquals(a.leaseId(), status.holder().get().leaseId());
      assertEquals(held.fencingToken(), status.holder().get().fencingToken());
      held.check();
    }
  }
}
