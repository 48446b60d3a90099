package dev.warden.client.conformance;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.warden.client.LeaseNotFoundException;
import dev.warden.client.Lock;
import dev.warden.client.LockStatus;
import dev.warden.client.ReleaseResult;
import dev.warden.client.RenewResult;
import dev.warden.client.Session;
import dev.warden.client.Validity;
import dev.warden.client.WardenClient;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

@ExtendWith(SharedCluster.class)
class C01AcquireRenewReleaseTest {

  // conformance: C01-acquire-renew-release
  // Defends S3 (a grant names its lease and token), S4 (a renew moves validity forward) and S6
  // (a release ends the exact grant; closing a session revokes its lease).
  @Test
  void acquireRenewRelease(TestCluster cluster) {
    WardenClient client = cluster.client();
    long beforeGrant = System.nanoTime();
    Session session = client.session(Duration.ofSeconds(5));
    assertTrue(session.leaseId() >= 1, "lease id " + session.leaseId());
    assertEquals(5_000, session.ttlMs());

    Lock lock = session.tryLock("c01-orders");
    assertTrue(lock.fencingToken() >= 1, "token " + lock.fencingToken());
    assertEquals(session.leaseId(), lock.leaseId());
    assertEquals("c01-orders", lock.resource());

    LockStatus held = client.status("c01-orders");
    assertTrue(held.holder().isPresent(), "held: " + held);
    assertEquals(lock.leaseId(), held.holder().get().leaseId());
    assertEquals(lock.fencingToken(), held.holder().get().fencingToken());

    // validUntil lies after the grant's send and before send + TTL.
    long validUntil = lock.validUntil();
    long afterGrant = System.nanoTime();
    assertTrue(validUntil - (beforeGrant + Validity.ofTtlMs(5_000).toNanos()) >= 0,
        "validUntil counts from the grant's send, not earlier");
    assertTrue(validUntil - (afterGrant + Duration.ofSeconds(5).toNanos()) < 0,
        "validUntil before send + TTL");
    lock.check();

    RenewResult renewed = session.renew();
    assertEquals(5_000, renewed.ttlMs());
    assertTrue(renewed.live());
    assertTrue(session.validUntil() - validUntil > 0, "renew moved validUntil forward");
    assertEquals(renewed.sentAtNanos() + Validity.ofTtlMs(5_000).toNanos(),
        session.validUntil(), "validUntil = the acknowledged send + TTL(1-2p) - 50 ms");

    ReleaseResult released = lock.release();
    assertTrue(released.released());
    assertEquals(session.leaseId(), released.leaseId());
    LockStatus free = client.status("c01-orders");
    assertTrue(free.holder().isEmpty(), "free after release: " + free);

    long leaseId = session.leaseId();
    session.close();
    assertThrows(LeaseNotFoundException.class, () -> client.leaseTimeToLive(leaseId));
  }
}
