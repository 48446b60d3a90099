package dev.warden.client.conformance;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.warden.client.Lock;
import dev.warden.client.LockNotGrantedException;
import dev.warden.client.LockStatus;
import dev.warden.client.NotGrantedReason;
import dev.warden.client.ResourceToken;
import dev.warden.client.Session;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

@ExtendWith(SharedCluster.class)
class C16MultiLockAllOrNoneTest {

  // conformance: C16-multi-lock-all-or-none
  // Defends "Multi-locks" (docs/semantics.md): all granted in one entry with a token each (in
  // the order asked) or none; a release naming one frees all; opposite orders never deadlock.
  @Test
  void allOrNoneReleasedTogetherAndNoDeadlock(TestCluster cluster) throws Exception {
    Duration ttl = Duration.ofSeconds(10);
    try (Session a = cluster.client().session(ttl);
        Session b = cluster.client().session(ttl)) {
      List<String> three = List.of("c16-a", "c16-b", "c16-c");
      Lock all = a.lockAll(three);
      assertEquals(three, all.grants().stream().map(ResourceToken::resource).toList());
      assertEquals(3, all.grants().stream().map(ResourceToken::fencingToken).distinct().count(),
          "distinct tokens: " + all.grants());
      assertEquals("c16-a", all.resource());
      assertEquals(all.grants().get(0).fencingToken(), all.fencingToken());
      for (ResourceToken g : all.grants()) {
        LockStatus s = cluster.client().status(g.resource());
        assertEquals(a.leaseId(), s.holder().orElseThrow().leaseId(), s.toString());
        assertEquals(g.fencingToken(), s.holder().orElseThrow().fencingToken());
      }

      LockNotGrantedException held =
          assertThrows(LockNotGrantedException.class, () -> b.tryLock("c16-b"));
      assertEquals(NotGrantedReason.HELD, held.notGrantedReason());
      assertEquals(a.leaseId(), held.holderLeaseId());

      all.release(); // names c16-a with its token
      for (String r : three) {
        LockStatus s = cluster.client().status(r);
        assertTrue(s.holder().isEmpty() && s.holders().isEmpty(), "free: " + s);
        assertEquals("", s.kind(), s.toString());
      }

      CompletableFuture<Integer> loopA = CompletableFuture.supplyAsync(
          () -> loop(a, List.of("c16-x", "c16-y")));
      CompletableFuture<Integer> loopB = CompletableFuture.supplyAsync(
          () -> loop(b, List.of("c16-y", "c16-x")));
      assertEquals(5, loopA.get(30, TimeUnit.SECONDS), "A's loop finished (no deadlock)");
      assertEquals(5, loopB.get(30, TimeUnit.SECONDS), "B's loop finished (no deadlock)");
    }
  }

  private static int loop(Session s, List<String> resources) {
    int done = 0;
    for (int i = 0; i < 5; i++) {
      Lock both = s.lockAll(resources);
      assertEquals(resources, both.grants().stream().map(ResourceToken::resource).toList());
      both.check();
      both.release();
      done++;
    }
    return done;
  }
}
