package dev.warden.client;

import java.time.Duration;
import java.util.List;
import java.util.OptionalInt;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * A lock held by a {@link Session}'s lease (etcd's {@code Mutex} once locked, with the grant's
 * fencing token): a mutex's, a semaphore permit ({@link #slot()}), a reader's or writer's
 * ({@link #mode()}) or a multi-lock's ({@link #grants()}). Valid while its session is, and with a
 * max-hold no longer than its bound ({@link #validUntil()}): {@link #check()} before each
 * protected write, and
 * pass {@link #fencingToken()} with the write so that the resource rejects it if the lock was
 * lost anyway (S2).
 *
 * <pre>{@code
 * try (Lock lock = session.lock("orders")) {
 *   lock.check();
 *   store.write(key, value, lock.fencingToken());
 * }
 * }</pre>
 *
 * <p>{@link #close()} releases this exact grant (S6) and waits for the commit; nothing is
 * released when the session is already lost or closed (its lease is gone or being revoked). An
 * operator's forced release is not noticed here; the fence rejects the holder's next write.
 */
public final class Lock implements AutoCloseable {
  private final Session session;
  private final String resource;
  private final long fencingToken;
  private final OptionalInt slot;
  private final LockMode mode;
  private final List<ResourceToken> grants;
  private final long maxHoldMs;
  private final long maxHoldUntil;
  private final AtomicBoolean released = new AtomicBoolean();

  Lock(Session session, String resource, long fencingToken) {
    this(session, resource, fencingToken, OptionalInt.empty(), LockMode.UNSPECIFIED,
        List.of(new ResourceToken(resource, fencingToken)), 0, 0);
  }

  /**
   * {@code sentAt}: the session clock read before the acquire's first attempt; with a max-hold
   * the grant is valid until at most {@code sentAt} + validity(max-hold).
   */
  Lock(Session session, String resource, long fencingToken, OptionalInt slot, LockMode mode,
      List<ResourceToken> grants, long maxHoldMs, long sentAt) {
    this.session = session;
    this.resource = resource;
    this.fencingToken = fencingToken;
    this.slot = slot;
    this.mode = mode;
    this.grants = List.copyOf(grants);
    this.maxHoldMs = maxHoldMs;
    this.maxHoldUntil = sentAt + Validity.ofTtlMs(maxHoldMs).toNanos();
    assert !this.grants.isEmpty() && this.grants.get(0).resource().equals(resource)
        : "the first grant is the lock's resource";
  }

  /** The resource held. */
  public String resource() {
    return resource;
  }

  /** This grant's fencing token: larger than every token issued before it for this resource. */
  public long fencingToken() {
    return fencingToken;
  }

  /** The lease holding the lock (the session's). */
  public long leaseId() {
    return session.leaseId();
  }

  /** The session the lock hangs on. */
  public Session session() {
    return session;
  }

  /**
   * A semaphore permit's slot in 0..limit (the resource-side fence checks a permit's token per
   * resource and slot); empty for every other grant.
   */
  public OptionalInt slot() {
    return slot;
  }

  /** SHARED for a reader, EXCLUSIVE for a writer, UNSPECIFIED for a mutex or a permit. */
  public LockMode mode() {
    return mode;
  }

  /**
   * Every resource held with its own token, in the order asked: one entry for a single
   * resource, every resource of a multi-lock (the first is {@link #resource()}).
   */
  public List<ResourceToken> grants() {
    return grants;
  }

  /** The grant's max-hold in milliseconds; 0 when it has none. */
  public long maxHoldMs() {
    return maxHoldMs;
  }

  /**
   * On the session clock, nanoseconds: {@link Session#validUntil()}, or with a max-hold the
   * earlier of it and the acquire's send + max-hold × (1 − 2ρ) − 50 ms ({@link Validity}; the
   * server ends the grant no earlier than max-hold × (1 − ρ) after that send).
   */
  public long validUntil() {
    long sessionUntil = session.validUntil();
    if (maxHoldMs == 0 || sessionUntil - maxHoldUntil < 0) {
      return sessionUntil;
    }
    return maxHoldUntil;
  }

  /** Time left until {@link #validUntil()}; zero once it cannot be trusted. */
  public Duration timeLeft() {
    try {
      check();
    } catch (SessionLostException e) {
      return Duration.ZERO;
    }
    return Duration.ofNanos(Math.max(0, validUntil() - session.clock().nanoTime()));
  }

  /**
   * Passes while the lock can be trusted: the session's {@link Session#check()} passes and the
   * clock is before the max-hold's bound (see {@link #validUntil()}). Synchronous: call it right
   * before each protected write.
   *
   * @throws SessionLostException once the lock can no longer be trusted; reason {@link
   *     LostReason#MAX_HOLD} when the max-hold passed (the session itself stays valid)
   */
  public void check() {
    session.check();
    if (maxHoldMs > 0 && session.clock().nanoTime() - maxHoldUntil >= 0) {
      throw new SessionLostException(session.leaseId(), LostReason.MAX_HOLD,
          "the max-hold of " + maxHoldMs + " ms of " + resource + " passed");
    }
  }

  /** See {@link Session#lost()}. */
  public CompletableFuture<LostReason> lost() {
    return session.lost();
  }

  /**
   * Releases this exact grant (S6) and completes when the release has committed.
   *
   * @return fails with {@link FailedPreconditionException} / {@link NotFoundException} when the
   *     grant had already ended (expired, forced, lease gone)
   */
  public CompletableFuture<ReleaseResult> releaseAsync() {
    released.set(true);
    return session.client().releaseAsync(session.leaseId(), resource, fencingToken);
  }

  /** {@link #releaseAsync()}, waiting for the commit. */
  public ReleaseResult release() {
    return Blocking.await(releaseAsync(), "release " + resource);
  }

  /**
   * Releases the lock unless it was released already or its session is lost; a grant that had
   * already ended is not an error here.
   *
   * @throws ClusterUnavailableException if the release did not commit within the client's
   *     deadline (the lock then ends with the session)
   */
  @Override
  public void close() {
    if (released.get() || session.isLost()) {
      released.set(true);
      return;
    }
    try {
      release();
    } catch (NotFoundException | FailedPreconditionException e) {
      // The grant had ended already (expired, forced, or the lease was revoked).
    }
  }

  @Override
  public String toString() {
    return "Lock{resource=" + resource + ", leaseId=" + leaseId() + ", fencingToken="
        + fencingToken + (slot.isPresent() ? ", slot=" + slot.getAsInt() : "")
        + (mode == LockMode.UNSPECIFIED ? "" : ", mode=" + mode)
        + (grants.size() > 1 ? ", grants=" + grants : "")
        + (maxHoldMs > 0 ? ", maxHoldMs=" + maxHoldMs : "") + "}";
  }
}
