package dev.warden.client;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * A lock held by a {@link Session}'s lease (etcd's {@code Mutex} once locked, with the grant's
 * fencing token). Valid while its session is: {@link #check()} before each protected write, and
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
  private final AtomicBoolean released = new AtomicBoolean();

  Lock(Session session, String resource, long fencingToken) {
    this.session = session;
    this.resource = resource;
    this.fencingToken = fencingToken;
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

  /** See {@link Session#validUntil()}: on the session clock, nanoseconds. */
  public long validUntil() {
    return session.validUntil();
  }

  /** See {@link Session#timeLeft()}. */
  public Duration timeLeft() {
    return session.timeLeft();
  }

  /**
   * See {@link Session#check()}.
   *
   * @throws SessionLostException once the lock can no longer be trusted
   */
  public void check() {
    session.check();
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
        + fencingToken + "}";
  }
}
