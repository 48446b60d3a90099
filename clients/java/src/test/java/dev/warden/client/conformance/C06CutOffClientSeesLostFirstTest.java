package dev.warden.client.conformance;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.warden.client.Lock;
import dev.warden.client.LostReason;
import dev.warden.client.PendingLock;
import dev.warden.client.Session;
import dev.warden.client.SessionLostException;
import dev.warden.client.WardenClient;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

@ExtendWith(SharedCluster.class)
class C06CutOffClientSeesLostFirstTest {

  // conformance: C06-cut-off-client-sees-lost-first
  // Defends S5 (a holder learns it lost the lock before anyone else can be granted it) and L1
  // (no two holders): A, cut off at the proxy, sees "lost" no later than its validUntil, and B is
  // granted only after that moment, with a larger token. Both moments are read from
  // System.nanoTime() of this one process, which is also A's session clock.
  @Test
  void aCutOffHolderSeesLostBeforeAnyoneIsGranted(TestCluster cluster) throws Exception {
    int leader = cluster.leader();
    try (TcpProxy proxy = new TcpProxy(cluster.addr(leader))) {
      WardenClient a = cluster.clientAt(List.of(proxy.address()), "root");
      Session sa = a.session(Duration.ofSeconds(3));
      Lock la = sa.lock("c06-r");
      assertEquals(proxy.address(), a.cachedLeader().orElseThrow(),
          "A reaches the leader only through the proxy");
      AtomicLong lostAt = new AtomicLong();
      sa.onLost(e -> lostAt.set(System.nanoTime()));

      proxy.cut();
      try (Session sb = cluster.clientAs("root").session(Duration.ofSeconds(10))) {
        PendingLock wb = sb.lockAsync("c06-r", Duration.ofSeconds(20));
        Lock lb = wb.get(25, TimeUnit.SECONDS);
        long grantedAt = System.nanoTime();

        assertEquals(LostReason.EXPIRED, sa.lost().get(1, TimeUnit.SECONDS));
        assertTrue(lostAt.get() != 0, "A's lost listener ran");
        assertTrue(lostAt.get() - sa.validUntil() <= 0,
            "A saw lost " + Duration.ofNanos(lostAt.get() - sa.validUntil()).toMillis()
                + " ms after its validUntil");
        assertTrue(grantedAt - lostAt.get() > 0,
            "B was granted " + Duration.ofNanos(lostAt.get() - grantedAt).toMillis()
                + " ms before A saw lost");
        assertThrows(SessionLostException.class, la::check);
        assertTrue(lb.fencingToken() > la.fencingToken(),
            "B's token " + lb.fencingToken() + " after A's " + la.fencingToken());
        lb.release();
      }
    }
  }
}
