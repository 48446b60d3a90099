package dev.warden.client;

/**
 * The clock a session measures its validity on: a monotonic reading in nanoseconds (only
 * differences mean anything).
 *
 * <p><b>What the default gives up.</b> {@link #SYSTEM} is {@link System#nanoTime()}. On Linux
 * the JVM reads it from {@code CLOCK_MONOTONIC}, which stops while the machine is suspended (the
 * JDK offers no {@code CLOCK_BOOTTIME}). A session on a machine that was suspended for S seconds
 * therefore believes S seconds less have passed than the servers do: its {@code validUntil}
 * lies up to S later in real time than the lease's true safe end, and {@code check()} can pass
 * after the cluster expired the lease and granted its locks to someone else. The Go and Python
 * clients read {@code CLOCK_BOOTTIME} and do not have this gap. Mitigations: do not use sessions
 * on machines that suspend (laptops), keep the fencing token on every write (the resource then
 * rejects the stale holder, S2), or pass a clock that counts suspended time.
 */
@FunctionalInterface
public interface SessionClock {
  /** {@link System#nanoTime()}: monotonic, but not counting time the machine was suspended. */
  SessionClock SYSTEM = System::nanoTime;

  /** The current reading in nanoseconds. */
  long nanoTime();
}
