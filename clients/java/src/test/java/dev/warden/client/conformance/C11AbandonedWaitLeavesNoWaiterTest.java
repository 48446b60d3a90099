package dev.warden.client.conformance;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.warden.client.CancelWaitResult;
import dev.warden.client.LeaseInfo;
import dev.warden.client.Lock;
import dev.warden.client.LockStatus;
import dev.warden.client.PendingLock;
import dev.warden.client.Session;
import dev.warden.client.WardenClient;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CancellationException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Consumer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

@ExtendWith(SharedCluster.class)
class C11AbandonedWaitLeavesNoWaiterTest {

  // conformance: C11-abandoned-wait-leaves-no-waiter
  // Defends S8 (a waiter whose client gave up is removed and never granted): cancelling the
  // waiting lock's future sends CancelWait; after the holder releases, nobody holds the
  // resource, no waiter is queued, and W's session holds and waits on nothing.
  @Test
  void aCancelledFutureLeavesNoWaiter(TestCluster cluster) throws Exception {
    abandonAndCheck(cluster, "c11-r", pending -> pending.cancel(true));
  }

  // conformance: C11-abandoned-wait-leaves-no-waiter
  // Defends S8 the same way for the caller's own timeout (orTimeout on the future).
  @Test
  void theCallersOwnTimeoutLeavesNoWaiter(TestCluster cluster) throws Exception {
    abandonAndCheck(cluster, "c11-timeout", pending -> {
      pending.orTimeout(200, TimeUnit.MILLISECONDS);
      ExecutionException e = assertThrows(ExecutionException.class,
          () -> pending.get(5, TimeUnit.SECONDS));
      assertTrue(e.getCause() instanceof TimeoutException, "the caller's timeout: " + e);
    });
  }

  // conformance: C11-abandoned-wait-leaves-no-waiter
  // Defends S8 when the grant wins the race: W's grant commits while the proxy swallows its
  // reply, so W's caller gives up on a wait the server already granted; the cancel releases
  // that exact grant (outcome "released" with its token) and the resource is free.
  @Test
  void aCancelThatLosesTheRaceReleasesTheGrant(TestCluster cluster) throws Exception {
    String resource = "c11-race";
    WardenClient direct = cluster.client();
    int leader = cluster.leader();
    try (TcpProxy proxy = new TcpProxy(cluster.addr(leader));
        Session h = direct.session(Duration.ofSeconds(10))) {
      WardenClient viaProxy = cluster.clientAt(List.of(proxy.address()), "root");
      try (Session w = viaProxy.session(Duration.ofSeconds(10))) {
        Lock held = h.lock(resource);
        PendingLock pending = w.lockAsync(resource, Duration.ofSeconds(30));
        pending.queued().get(10, TimeUnit.SECONDS);

        proxy.swallowReplies();
        held.release();
        Wait.until(Duration.ofSeconds(5), "W's grant commits", () -> direct.status(resource)
            .holder().map(x -> x.leaseId() == w.leaseId()).orElse(false));
        long token = direct.status(resource).holder().orElseThrow().fencingToken();
        assertTrue(!pending.isDone(), "W's caller has not seen the grant");

        pending.cancel(true);
        proxy.heal();
        CancelWaitResult outcome = pending.abandoned().get(10, TimeUnit.SECONDS);
        assertEquals(CancelWaitResult.Outcome.RELEASED, outcome.outcome(), "outcome " + outcome);
        assertEquals(w.leaseId(), outcome.leaseId());
        assertEquals(token, outcome.fencingToken(), "the cancel released that exact grant");

        LockStatus s = direct.status(resource);
        assertTrue(s.holder().isEmpty(), "nobody holds " + resource + ": " + s);
        assertEquals(0, s.waiters());
        LeaseInfo wLease = direct.leaseTimeToLive(w.leaseId());
        assertEquals(List.of(), wLease.locks(), "W holds nothing");
        assertEquals(List.of(), wLease.waits(), "W waits on nothing");
      }
    }
  }

  private static void abandonAndCheck(TestCluster cluster, String resource,
      Consumer<PendingLock> abandon) throws Exception {
    WardenClient client = cluster.client();
    try (Session h = client.session(Duration.ofSeconds(10));
        Session w = cluster.clientAs("root").session(Duration.ofSeconds(10))) {
      Lock held = h.lock(resource);
      PendingLock pending = w.lockAsync(resource, Duration.ofSeconds(30));
      pending.queued().get(10, TimeUnit.SECONDS);
      assertEquals(1, client.status(resource).waiters());

      abandon.accept(pending);
      if (pending.isCancelled()) {
        assertThrows(CancellationException.class, pending::join);
      }
      // A server without warden.v1.Lock/CancelWait fails this with UnsupportedByServerException.
      CancelWaitResult outcome = pending.abandoned().get(10, TimeUnit.SECONDS);
      assertEquals(CancelWaitResult.Outcome.REMOVED, outcome.outcome(), "outcome " + outcome);
      assertEquals(w.leaseId(), outcome.leaseId());
      assertEquals(0, client.status(resource).waiters(), "the waiter is gone at once");

      held.release();
      Wait.until(Duration.ofSeconds(5), "no holder and no waiter after the release", () -> {
        LockStatus s = client.status(resource);
        return s.holder().isEmpty() && s.waiters() == 0;
      });
      LeaseInfo wLease = client.leaseTimeToLive(w.leaseId());
      assertEquals(List.of(), wLease.locks(), "W holds nothing");
      assertEquals(List.of(), wLease.waits(), "W waits on nothing");
    }
  }
}
