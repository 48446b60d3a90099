package dev.warden.client.conformance;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.warden.client.Lock;
import dev.warden.client.LockMode;
import dev.warden.client.LockOptions;
import dev.warden.client.LockStatus;
import dev.warden.client.PendingLock;
import dev.warden.client.Session;
import java.time.Duration;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

@ExtendWith(SharedCluster.class)
class C15ReadersShareWriterWaitsTest {

  // conformance: C15-readers-share-writer-waits
  // Defends "Lock kinds" (docs/semantics.md): readers hold together, a writer alone, and the
  // queue is FIFO with no overtaking (a reader arriving behind a waiting writer waits for it).
  @Test
  void readersShareAndAWaitingWriterIsNotOvertaken(TestCluster cluster) throws Exception {
    Duration ttl = Duration.ofSeconds(10);
    LockOptions wait30 = LockOptions.DEFAULT.withWaitTimeout(Duration.ofSeconds(30));
    try (Session sr1 = cluster.client().session(ttl);
        Session sr2 = cluster.client().session(ttl);
        Session sr3 = cluster.client().session(ttl);
        Session sw = cluster.client().session(ttl)) {
      Lock r1 = sr1.readLock("c15-r");
      Lock r2 = sr2.readLock("c15-r");
      assertEquals(LockMode.SHARED, r1.mode());
      assertEquals(LockMode.SHARED, r2.mode());
      LockStatus both = cluster.client().status("c15-r");
      assertEquals("read_write", both.kind(), both.toString());
      assertTrue(both.holder().isEmpty(), "no single holder: " + both);
      assertEquals(Set.of(sr1.leaseId(), sr2.leaseId()),
          both.holders().stream().map(LockStatus.Holder::leaseId).collect(Collectors.toSet()));
      assertTrue(both.holders().stream().allMatch(h -> h.mode() == LockMode.SHARED));

      PendingLock w = sw.writeLockAsync("c15-r", wait30);
      w.queued().get(10, TimeUnit.SECONDS);
      PendingLock r3 = sr3.readLockAsync("c15-r", wait30);
      r3.queued().get(10, TimeUnit.SECONDS);
      assertEquals(2, cluster.client().status("c15-r").waiters(), "R3 queued behind W");

      r1.release();
      LockStatus one = cluster.client().status("c15-r");
      assertEquals(1, one.holders().size(), one.toString());
      assertEquals(2, one.waiters(), "R3 did not overtake W: " + one);
      r2.release();

      Lock wl = w.get(10, TimeUnit.SECONDS);
      assertEquals(LockMode.EXCLUSIVE, wl.mode());
      assertTrue(wl.fencingToken() > r2.fencingToken(), r2 + " then " + wl);
      LockStatus writer = cluster.client().status("c15-r");
      assertEquals(sw.leaseId(), writer.holder().orElseThrow().leaseId(), writer.toString());
      assertEquals(1, writer.holders().size(), "the writer alone: " + writer);
      assertEquals(1, writer.waiters(), "R3 still waits: " + writer);
      assertFalse(r3.isDone(), "R3 not granted while W holds");

      wl.release();
      Lock r3l = r3.get(10, TimeUnit.SECONDS);
      assertEquals(LockMode.SHARED, r3l.mode());
      assertTrue(r3l.fencingToken() > wl.fencingToken(), wl + " then " + r3l);
      r3l.release();
    }
  }
}
