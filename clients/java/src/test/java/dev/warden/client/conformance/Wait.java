package dev.warden.client.conformance;

import java.time.Duration;
import java.util.function.Supplier;

/** Waits with deadlines: a condition polled until it holds or the deadline passes. */
final class Wait {
  private Wait() {}

  /** Polls {@code condition} every 20 ms until it is true; fails naming {@code what}. */
  static void until(Duration timeout, String what, Supplier<Boolean> condition) {
    long deadline = System.nanoTime() + timeout.toNanos();
    while (true) {
      if (Boolean.TRUE.equals(condition.get())) {
        return;
      }
      if (System.nanoTime() - deadline >= 0) {
        throw new AssertionError("not within " + timeout.toMillis() + " ms: " + what);
      }
      TestCluster.pause(Duration.ofMillis(20));
    }
  }
}
