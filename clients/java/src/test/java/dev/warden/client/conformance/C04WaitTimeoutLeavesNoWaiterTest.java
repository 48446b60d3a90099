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
class C04WaitTimeoutLeavesNoWaiterTest {

  // conformance: C04-wait-timeout-leaves-no-waiter
  // Defends S8: a wait that runs out is a typed "not granted: wait timeout" after at least the
  // wait, its removal has committed (0 waiters), and the holder still holds.
  @Test
  void aWaitThatRunsOutLeavesNoWaiter(TestCluster cluster) {
    try (Session h = cluster.client().session(Duration.ofSeconds(10));
        Session w = cluster.clientAs("root").session(Duration.ofSeconds(10))) {
      Lock held = h.lock("c04-r");
      long start = System.nanoTime();
      LockNotGrantedException timedOut = assertThrows(LockNotGrantedException.class,
          () -> w.lock("c04-r", Duration.ofSeconds(1)));
      long waitedMs = Duration.ofNanos(System.nanoTime() - start).toMillis();
      assertEquals(NotGrantedReason.WAIT_TIMEOUT, timedOut.notGrantedReason());
      assertTrue(waitedMs >= 1_000, "answered after " + waitedMs + " ms, before the wait ran out");

      LockStatus status = cluster.client().status("c04-r");
      assertEquals(0, status.waiters(), "no waiter left: " + status);
      assertEquals(held.leaseId(), status.holder().orElseThrow().leaseId());
      assertEquals(held.fencingToken(), status.holder().orElseThrow().fencingToken());
    }
  }
}
