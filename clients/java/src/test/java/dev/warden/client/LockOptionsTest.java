package dev.warden.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import java.time.Duration;
import org.junit.jupiter.api.Test;

class LockOptionsTest {

  /**
   * Defends "Max-hold" (docs/semantics.md): an option left out is "none" (zero lock-delay, zero
   * max-hold: what every older client sends), and each {@code with} changes only its own field.
   */
  @Test
  void defaultsAreNoneAndWithChangesOneField() {
    assertNull(LockOptions.DEFAULT.waitTimeout(), "wait as long as it takes");
    assertEquals(Duration.ZERO, LockOptions.DEFAULT.lockDelay());
    assertEquals(Duration.ZERO, LockOptions.DEFAULT.maxHold());
    assertEquals(new LockOptions(null, Duration.ZERO, Duration.ZERO),
        new LockOptions(null, null, null));

    LockOptions o = LockOptions.DEFAULT.withWaitTimeout(Duration.ofSeconds(3))
        .withLockDelay(Duration.ofSeconds(1)).withMaxHold(Duration.ofSeconds(10));
    assertEquals(new LockOptions(Duration.ofSeconds(3), Duration.ofSeconds(1),
        Duration.ofSeconds(10)), o);
    assertEquals(Duration.ofSeconds(20), o.withMaxHold(Duration.ofSeconds(20)).maxHold());
    assertEquals(Duration.ofSeconds(3), o.withMaxHold(Duration.ofSeconds(20)).waitTimeout());
  }

  /** Defends "Max-hold": the client's bound is max-hold × (1 − 2ρ) − 50 ms (2 s → 1910 ms). */
  @Test
  void maxHoldValidityIsTheTtlRule() {
    assertEquals(Duration.ofMillis(1910), Validity.ofTtlMs(2_000));
    assertEquals(Duration.ofMillis(930), Validity.ofTtlMs(1_000));
  }
}
