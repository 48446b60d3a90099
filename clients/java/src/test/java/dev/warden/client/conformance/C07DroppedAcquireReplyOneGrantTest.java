package dev.warden.client.conformance;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.warden.client.AcquireOptions;
import dev.warden.client.AcquireResult;
import dev.warden.client.Listing;
import dev.warden.client.LockStatus;
import dev.warden.client.WardenClient;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

@ExtendWith(SharedCluster.class)
class C07DroppedAcquireReplyOneGrantTest {

  // conformance: C07-dropped-acquire-reply-one-grant
  // Defends S7 (exactly once): the first acquire attempt reaches the leader and is granted but
  // its reply is swallowed by the proxy; the client's retry (same request id) gets that same
  // grant back, and the cluster holds one lease for it, no second one.
  @Test
  void aRetriedAcquireWhoseReplyWasLostIsGrantedOnce(TestCluster cluster) throws Exception {
    int leader = cluster.leader();
    WardenClient direct = cluster.client();
    try (TcpProxy proxy = new TcpProxy(cluster.addr(leader))) {
      WardenClient client = cluster.clientAt(List.of(proxy.address()), "root");
      // The connection through the proxy (TLS handshake included) is up before replies are
      // dropped; the client has learnt the server's in-flight window.
      client.status("c07-r");
      proxy.swallowReplies();
      CompletableFuture<AcquireResult> call =
          client.acquireAsync("c07-r", AcquireOptions.newLease(Duration.ofSeconds(10)));

      // The first attempt took effect on the cluster while its reply was swallowed.
      Wait.until(Duration.ofSeconds(4), "the first attempt's grant is visible",
          () -> direct.status("c07-r").holder().isPresent());
      LockStatus granted = direct.status("c07-r");
      assertFalse(call.isDone(), "the call cannot have seen a reply yet");
      assertTrue(proxy.swallowedReads() > 0, "the proxy dropped the reply");
      proxy.heal();

      AcquireResult result = call.get(10, TimeUnit.SECONDS);
      assertTrue(proxy.accepted() >= 2, "the retry went out on a new connection: "
          + proxy.accepted() + " accepted");
      AcquireResult.Granted grant = assertInstanceOf(AcquireResult.Granted.class, result);
      assertEquals(granted.holder().orElseThrow().leaseId(), grant.leaseId());
      assertEquals(granted.holder().orElseThrow().fencingToken(), grant.fencingToken());

      Listing listing = direct.list("c07-");
      assertEquals(1, listing.locks().size(), "one lock: " + listing);
      Listing.Listed only = listing.locks().get(0);
      assertEquals("c07-r", only.resource());
      assertEquals(grant.leaseId(), only.holder().orElseThrow().leaseId());
      assertEquals(List.of(), only.waiterLeaseIds(), "no second lease queued behind it");
      client.revoke(grant.leaseId());
    }
  }
}
