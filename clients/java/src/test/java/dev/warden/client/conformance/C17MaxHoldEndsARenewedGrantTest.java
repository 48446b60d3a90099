package dev.warden.client.conformance;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.warden.client.InvalidArgumentException;
import dev.warden.client.Lock;
import dev.warden.client.LockOptions;
import dev.warden.client.LostReason;
import dev.warden.client.PendingLock;
import dev.warden.client.Session;
import dev.warden.client.SessionLostException;
import dev.warden.client.Validity;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

@ExtendWith(SharedCluster.class)
class C17MaxHoldEndsARenewedGrantTest {

  // conformance: C17-max-hold-ends-a-renewed-grant
  // Defends "Max-hold" (docs/semantics.md): a grant ends no later than its max-hold after it was
  // made however often its session renews, and the client's per-grant validity counts from the
  // acquire's send (send + max-hold × (1 − 2ρ) − 50 ms); bad max-holds are typed errors.
  @Test
  void aRenewedGrantEndsAtItsMaxHold(TestCluster cluster) throws Exception {
    Duration ttl = Duration.ofSeconds(5); // renews every ~1.7 s: across the 2 s max-hold
    try (Session h = cluster.client().session(ttl);
        Session w = cluster.client().session(ttl)) {
      long sent = h.clock().nanoTime();
      Lock held = h.lock("c17-r", LockOptions.DEFAULT.withMaxHold(Duration.ofSeconds(2)));
      long returned = h.clock().nanoTime();
      assertEquals(2000, held.maxHoldMs());
      long bound = sent + Validity.ofTtlMs(2000).toNanos();
      assertEquals(Duration.ofMillis(1910), Validity.ofTtlMs(2000));
      assertTrue(held.validUntil() - bound >= 0 && held.validUntil() - bound <= returned - sent,
          "validUntil counts from the acquire's send");
      held.check();

      PendingLock waiting =
          w.lockAsync("c17-r", LockOptions.DEFAULT.withWaitTimeout(Duration.ofSeconds(30)));
      Lock wl = waiting.get(10, TimeUnit.SECONDS);
      long grantedAfterMs = Duration.ofNanos(h.clock().nanoTime() - sent).toMillis();
      assertTrue(grantedAfterMs <= 2000 + 2500, "W granted after " + grantedAfterMs + " ms");
      assertTrue(grantedAfterMs >= 1980, "W granted after " + grantedAfterMs
          + " ms, before 2 s × (1 − ρ)");
      assertTrue(wl.fencingToken() > held.fencingToken(), held + " then " + wl);

      h.check(); // the session is still valid: only the grant ended
      assertTrue(held.validUntil() - h.clock().nanoTime() < 0, "the grant is past validUntil");
      SessionLostException ended = assertThrows(SessionLostException.class, held::check);
      assertEquals(LostReason.MAX_HOLD, ended.lostReason());
      assertEquals(Duration.ZERO, held.timeLeft());

      InvalidArgumentException tooShort = assertThrows(InvalidArgumentException.class,
          () -> h.lock("c17-bad", LockOptions.DEFAULT.withMaxHold(Duration.ofMillis(500))));
      assertEquals("max_hold_ms", tooShort.field());
      InvalidArgumentException waitAsLong = assertThrows(InvalidArgumentException.class,
          () -> h.lock("c17-bad", LockOptions.DEFAULT.withWaitTimeout(Duration.ofSeconds(2))
              .withMaxHold(Duration.ofSeconds(2))));
      assertTrue(Set.of("max_hold_ms", "wait_timeout_ms").contains(waitAsLong.field()),
          waitAsLong.field());
      assertEquals(List.of(), cluster.client().list("c17-bad").locks(), "nothing was created");
      wl.release();
    }
  }
}
