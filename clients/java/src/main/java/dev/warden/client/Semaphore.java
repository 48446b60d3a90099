package dev.warden.client;

import java.time.Duration;

/**
 * A semaphore of {@link #limit()} permits on a {@link Session} (docs/semantics.md "Lock kinds"):
 * at most that many holders at once, each with a {@link Lock#slot()} in 0..limit and a fresh
 * fencing token; a freed permit goes to the oldest waiter (FIFO). A handle only: nothing is sent
 * until {@link #acquire()}.
 *
 * <pre>{@code
 * Semaphore pool = session.semaphore("db-connections", 3);
 * try (Lock permit = pool.acquire()) {
 *   permit.check();
 *   db.write(row, permit.slot().getAsInt(), permit.fencingToken());
 * }
 * }</pre>
 *
 * <p>The resource keeps one kind and limit while anything is on it: another limit, or a mutex
 * or read-write acquire of it, is refused with {@link FailedPreconditionException} naming the
 * field ({@code limit} or {@code kind}). A limit outside 1..=10000 gets an {@link
 * InvalidArgumentException} (field {@code limit}).
 */
public final class Semaphore {
  private final Session session;
  private final String name;
  private final int limit;

  Semaphore(Session session, String name, int limit) {
    this.session = session;
    this.name = name;
    this.limit = limit;
  }

  /** The semaphore's resource. */
  public String name() {
    return name;
  }

  /** Its number of permits. */
  public int limit() {
    return limit;
  }

  /** Takes one permit, waiting as long as it takes (see {@link Session#lock(String)}). */
  public Lock acquire() {
    return acquire(LockOptions.DEFAULT);
  }

  /** Takes one permit with these options. */
  public Lock acquire(LockOptions options) {
    return Blocking.await(acquireAsync(options), "acquire a permit of " + name);
  }

  /**
   * Takes one permit if one is free now.
   *
   * @throws LockNotGrantedException ({@link NotGrantedReason#HELD}) when every permit is held
   */
  public Lock tryAcquire() {
    return acquire(LockOptions.DEFAULT.withWaitTimeout(Duration.ZERO));
  }

  /**
   * {@link #acquire(LockOptions)} as a future; abandoning it (cancel, {@code orTimeout}) sends
   * {@code CancelWait} as {@link Session#lockAsync(String)} does.
   */
  public PendingLock acquireAsync(LockOptions options) {
    return PendingLock.start(session,
        new PendingLock.Ask(java.util.List.of(name), LockMode.UNSPECIFIED, limit, options));
  }

  @Override
  public String toString() {
    return "Semaphore{name=" + name + ", limit=" + limit + ", leaseId=" + session.leaseId() + "}";
  }
}
