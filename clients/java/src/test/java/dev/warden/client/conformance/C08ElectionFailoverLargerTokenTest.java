package dev.warden.client.conformance;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.warden.client.Election;
import dev.warden.client.LeaderInfo;
import dev.warden.client.Leadership;
import dev.warden.client.Observer;
import dev.warden.client.Session;
import dev.warden.client.WardenClient;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

@ExtendWith(SharedCluster.class)
class C08ElectionFailoverLargerTokenTest {

  // conformance: C08-election-failover-larger-token
  // Defends S2 (a later term has a larger token) and L1 (one leader at a time): when A's session
  // closes, B (queued behind it) is elected with a larger token; an observer sees a then b, each
  // with its term's token; leader() names b.
  @Test
  void theNextCampaignerIsElectedWithALargerToken(TestCluster cluster) throws Exception {
    WardenClient client = cluster.client();
    Session sa = cluster.clientAs("root").session(Duration.ofSeconds(3));
    Session sb = cluster.clientAs("root").session(Duration.ofSeconds(3));
    try {
      Election ea = sa.election("c08-e");
      Leadership a = ea.campaign("a");
      assertEquals("a", ea.leader().orElseThrow().value());

      Election eb = sb.election("c08-e");
      CompletableFuture<Leadership> b = eb.campaignAsync("b");
      try (Observer observer = client.observe("c08-e")) {
        LeaderInfo first = observer.next(Duration.ofSeconds(10));
        assertNotNull(first, "the observer reports the current leader");
        assertEquals("a", first.value());
        assertEquals(a.fencingToken(), first.fencingToken());
        assertEquals(sa.leaseId(), first.leaseId());
        Wait.until(Duration.ofSeconds(10), "b is queued behind a",
            () -> client.status(ea.key()).waiters() == 1);

        sa.close();
        Leadership lb = b.get(15, TimeUnit.SECONDS);
        assertTrue(lb.fencingToken() > a.fencingToken(),
            "b's token " + lb.fencingToken() + " after a's " + a.fencingToken());

        LeaderInfo second = observer.next(Duration.ofSeconds(10));
        assertNotNull(second, "the observer reports the new leader");
        assertEquals("b", second.value());
        assertEquals(lb.fencingToken(), second.fencingToken());
        assertEquals(sb.leaseId(), second.leaseId());

        LeaderInfo now = eb.leader().orElseThrow();
        assertEquals("b", now.value());
        assertEquals(lb.fencingToken(), now.fencingToken());
        lb.resign();
      }
    } finally {
      sa.close();
      sb.close();
    }
  }
}
