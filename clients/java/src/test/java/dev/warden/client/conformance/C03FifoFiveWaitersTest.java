package dev.warden.client.conformance;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.warden.client.Lock;
import dev.warden.client.PendingLock;
import dev.warden.client.Session;
import dev.warden.client.WardenClient;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

@ExtendWith(SharedCluster.class)
class C03FifoFiveWaitersTest {

  // conformance: C03-fifo-five-waiters
  // Defends S8 (a fair FIFO queue) and S2 (tokens grow with every grant): five waiters queued in
  // turn are granted in that order with strictly growing tokens, all above the first holder's.
  @Test
  void fiveWaitersAreGrantedInQueueOrder(TestCluster cluster) throws Exception {
    List<Session> sessions = new ArrayList<>();
    try {
      Session holder = cluster.client().session(Duration.ofSeconds(10));
      sessions.add(holder);
      Lock h = holder.lock("c03-r");
      List<Integer> order = new CopyOnWriteArrayList<>();
      List<Long> tokens = new CopyOnWriteArrayList<>();
      List<PendingLock> waits = new ArrayList<>();
      for (int i = 1; i <= 5; i++) {
        WardenClient wi = cluster.clientAs("root");
        Session s = wi.session(Duration.ofSeconds(10));
        sessions.add(s);
        PendingLock w = s.lockAsync("c03-r", Duration.ofSeconds(30));
        int n = i;
        w.thenAccept(lock -> {
          order.add(n);
          tokens.add(lock.fencingToken());
          lock.releaseAsync(); // each, once granted, releases at once
        });
        // The next waiter starts only once this one is in the queue.
        assertEquals(i, w.queued().get(10, TimeUnit.SECONDS).position(), "queue position");
        waits.add(w);
      }
      h.release();
      for (PendingLock w : waits) {
        w.get(30, TimeUnit.SECONDS);
      }
      Wait.until(Duration.ofSeconds(10), "five grants recorded", () -> order.size() == 5);
      assertEquals(List.of(1, 2, 3, 4, 5), order);
      long previous = h.fencingToken();
      for (long t : tokens) {
        assertTrue(t > previous, "tokens grow: " + tokens + " after " + h.fencingToken());
        previous = t;
      }
    } finally {
      sessions.forEach(Session::close);
    }
  }
}
