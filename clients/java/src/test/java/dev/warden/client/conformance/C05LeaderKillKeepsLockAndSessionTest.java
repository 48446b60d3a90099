package dev.warden.client.conformance;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.warden.client.Lock;
import dev.warden.client.LockStatus;
import dev.warden.client.Session;
import dev.warden.client.SessionLostException;
import dev.warden.client.WardenClient;
import java.time.Duration;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

@ExtendWith(SharedCluster.class)
class C05LeaderKillKeepsLockAndSessionTest {

  // conformance: C05-leader-kill-keeps-lock-and-session
  // Defends S3 (a committed grant survives the leader's death), L3 (the client follows the new
  // leader) and L4 (the new leader's grace keeps a renewing session alive): after SIGKILL of the
  // leader the lock is held with the same token, check() never fails, and a new lock on the same
  // session gets a larger token. On the shared cluster (one cluster at a time on the machine):
  // the killed node is started again on its data dir, and serves, before the test ends.
  @Test
  void killingTheLeaderKeepsTheLockAndTheSession(TestCluster cluster) throws Exception {
    ScheduledExecutorService sampler = Executors.newSingleThreadScheduledExecutor();
    int oldLeader = cluster.leader();
    try {
      WardenClient client = cluster.client();
      Session session = client.session(Duration.ofSeconds(10));
      Lock lock = session.lock("c05-r");
      AtomicReference<SessionLostException> failed = new AtomicReference<>();
      // check() is sampled every 10 ms for the whole scenario: it must pass throughout.
      sampler.scheduleAtFixedRate(() -> {
        try {
          session.check();
        } catch (SessionLostException e) {
          failed.compareAndSet(null, e);
        }
      }, 0, 10, TimeUnit.MILLISECONDS);

      cluster.kill(oldLeader);
      int newLeader = cluster.waitLeader(Duration.ofSeconds(10));
      assertNotEquals(oldLeader, newLeader);

      LockStatus status = client.status("c05-r");
      assertEquals(session.leaseId(), status.holder().orElseThrow().leaseId());
      assertEquals(lock.fencingToken(), status.holder().orElseThrow().fencingToken());

      Lock other = session.tryLock("c05-other");
      assertTrue(other.fencingToken() > lock.fencingToken(),
          "token " + other.fencingToken() + " after " + lock.fencingToken());
      // A keep-alive through the new leader is acknowledged.
      session.renew();
      session.check();
      assertEquals(null, failed.get(), "check() failed during the leader change");
      session.close();
    } finally {
      sampler.shutdownNow();
      if (cluster.process(oldLeader).map(p -> !p.isAlive()).orElse(false)) {
        cluster.restart(oldLeader);
        cluster.waitServing(oldLeader, Duration.ofSeconds(20));
      }
    }
  }
}
