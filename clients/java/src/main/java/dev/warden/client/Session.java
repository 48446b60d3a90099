package dev.warden.client;

import dev.warden.client.internal.Engine;
import dev.warden.client.internal.Failure;
import dev.warden.client.internal.KeepAliveStream;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ScheduledFuture;
import java.util.function.Consumer;
import java.util.logging.Level;
import java.util.logging.Logger;
import warden.v1.LeaseGrpc;

/**
 * A lease kept alive in the background (etcd's {@code concurrency.Session}, a ZooKeeper
 * session): one keep-alive for every lock taken with {@link #lock}.
 *
 * <p><b>Validity (docs/semantics.md S5).</b> {@link #validUntil()} is, on the session clock
 * ({@link System#nanoTime()} by default: see {@link SessionClock} for what it gives up), the
 * <i>send</i> time of the keep-alive attempt whose acknowledgement was last received (matched by
 * the sequence number the server echoes; for the lease grant, its first attempt) plus TTL × (1 −
 * 2ρ) − 50 ms ({@link Validity}). The server never expires the lease before send + TTL × (1 − ρ)
 * (S4), so while {@link #check()} passes nobody else can have been granted this session's locks.
 *
 * <p><b>Keep-alive.</b> Every TTL/3 from the last acknowledged send, over a {@code
 * Lease/LeaseKeepAlive} stream to the leader; a failed keep-alive is retried at once (the retry
 * loop follows the leader and backs off), until {@code validUntil}.
 *
 * <p><b>Loss.</b> {@link #lost()} completes no later than {@code validUntil} (its timer is set
 * up to 250 ms before, on a thread of its own) if no keep-alive was acknowledged by then, also
 * when no server can be reached, at once when the server says the lease is gone, and on {@link
 * #close()}. A timer can fire late after a process pause (GC,
 * SIGSTOP), so call {@link #check()} right before each protected write: it compares the clock
 * with {@code validUntil} synchronously. Once lost, a session stays lost, even if a late
 * keep-alive succeeds: open a new one. A session lost by time revokes its lease (best effort)
 * so its locks are freed sooner.
 *
 * <p>Thread-safe. {@link #close()} (try-with-resources) revokes the lease, which releases every
 * lock on it in one committed entry.
 */
public final class Session implements AutoCloseable {
  private static final Logger LOG = Logger.getLogger(Session.class.getName());
  /**
   * The lost timer fires this much before {@code validUntil}, at most: JVM timers fire late,
   * never early, and on a busy machine (or after a GC pause) by up to a few hundred milliseconds
   * (180 ms measured on a 2-core machine at load 12); {@code lost()} must complete no later than
   * {@code validUntil}. {@link #check()} compares exactly. See {@link #lostTimerSlackNanos()}.
   */
  static final long MAX_LOST_TIMER_SLACK_NANOS = Duration.ofMillis(250).toNanos();
  /** No timer sleeps longer than this at once (an injected clock may run apart from the JVM's). */
  private static final long MAX_SLEEP_NANOS = Duration.ofSeconds(1).toNanos();

  private final WardenClient client;
  private final Engine engine;
  private final long leaseId;
  private final long ttlMs;
  private final SessionClock clock;
  private final KeepAliveStream stream;
  private final CompletableFuture<LostReason> lost = new CompletableFuture<>();
  private final Set<PendingLock> waiting = ConcurrentHashMap.newKeySet();
  private final List<Consumer<SessionLostException>> listeners = new ArrayList<>();

  private final long lostTimerSlack;
  private long validUntil;
  private long lastSent;
  private SessionLostException lostError;
  private ScheduledFuture<?> renewTimer;
  private ScheduledFuture<?> lostTimer;
  private CompletableFuture<?> renewing;

  Session(WardenClient client, long leaseId, long ttlMs, SessionClock clock, long sentAt) {
    this.client = client;
    this.engine = client.engine();
    this.leaseId = leaseId;
    this.ttlMs = ttlMs;
    this.clock = clock;
    this.stream = new KeepAliveStream(engine, leaseId);
    this.lastSent = sentAt;
    this.validUntil = sentAt + Validity.ofTtlMs(ttlMs).toNanos();
    this.lostTimerSlack = Math.min(MAX_LOST_TIMER_SLACK_NANOS,
        Validity.ofTtlMs(ttlMs).toNanos() / 4);
  }

  /**
   * How long before {@link #validUntil()} the lost timer fires when no keep-alive was
   * acknowledged: 250 ms, or a quarter of the validity for a short TTL.
   */
  public long lostTimerSlackNanos() {
    return lostTimerSlack;
  }

  /** Opens a session: a lease grant, then the keep-alive. */
  static CompletableFuture<Session> open(WardenClient client, SessionOptions options) {
    SessionClock clock = options.clock();
    // The grant is retried with one request id: it took effect at or after the first attempt's
    // send, so validity counts from there (S5).
    long sentAt = clock.nanoTime();
    return client.leaseGrantAsync(options.ttl()).thenApply(granted -> {
      Session s = new Session(client, granted.leaseId(), granted.ttlMs(), clock, sentAt);
      s.start();
      return s;
    });
  }

  private synchronized void start() {
    scheduleRenew();
    armLostTimer();
  }

  /** The session's lease. */
  public long leaseId() {
    return leaseId;
  }

  /** The TTL the server granted, in milliseconds. */
  public long ttlMs() {
    return ttlMs;
  }

  /** The client the session uses. */
  public WardenClient client() {
    return client;
  }

  /** The clock {@link #validUntil()} is measured on. */
  public SessionClock clock() {
    return clock;
  }

  /**
   * The reading of {@link #clock()} until which the session, and every lock on it, is certainly
   * still held, unless it is already lost (S5). Only moves forward.
   */
  public synchronized long validUntil() {
    return validUntil;
  }

  /** Time left until {@link #validUntil()}; zero once lost. */
  public Duration timeLeft() {
    try {
      check();
    } catch (SessionLostException e) {
      return Duration.ZERO;
    }
    return Duration.ofNanos(Math.max(0, validUntil() - clock.nanoTime()));
  }

  /**
   * Passes while the session is valid: not lost, and the clock is before {@link #validUntil()}.
   * Synchronous and cheap: call it right before each write a lock protects (a timer may fire
   * late after a pause; this comparison does not). A failure marks the session lost for good.
   *
   * @throws SessionLostException with the reason
   */
  public void check() {
    SessionLostException error;
    synchronized (this) {
      if (lostError != null) {
        throw lostError;
      }
      long now = clock.nanoTime();
      if (now - validUntil < 0) {
        return;
      }
      error = expired();
    }
    lose(error);
    throw lostError();
  }

  /** True once the session is lost. */
  public synchronized boolean isLost() {
    return lostError != null;
  }

  private synchronized SessionLostException lostError() {
    return lostError;
  }

  private SessionLostException expired() {
    return new SessionLostException(leaseId, LostReason.EXPIRED,
        "no keep-alive acknowledged in time: validUntil passed on the session clock");
  }

  /**
   * Completes with the reason when the session is lost: no later than {@link #validUntil()}
   * without an acknowledged keep-alive, at once when the server reports the lease gone, or on
   * {@link #close()}. A copy: completing or cancelling it changes nothing.
   */
  public CompletableFuture<LostReason> lost() {
    return lost.copy();
  }

  /**
   * Calls {@code listener} once when the session is lost (at once, on this thread, if it already
   * is). Listeners run on the thread that noticed the loss: keep them short.
   */
  public void onLost(Consumer<SessionLostException> listener) {
    SessionLostException already;
    synchronized (this) {
      already = lostError;
      if (already == null) {
        listeners.add(listener);
        return;
      }
    }
    listener.accept(already);
  }

  /**
   * Sends a keep-alive now and completes when it is acknowledged ({@link #validUntil()} has then
   * moved to its send time + validity).
   */
  public CompletableFuture<RenewResult> renewAsync() {
    return keepAlive();
  }

  /** {@link #renewAsync()}, waiting for it. */
  public RenewResult renew() {
    return Blocking.await(renewAsync(), "renew");
  }

  private CompletableFuture<RenewResult> keepAlive() {
    long now = clock.nanoTime();
    long until;
    synchronized (this) {
      if (lostError != null) {
        return CompletableFuture.failedFuture(lostError);
      }
      until = validUntil;
    }
    // Past validUntil nothing a keep-alive says counts: the call may take until then.
    long deadline = System.nanoTime() + Math.max(0, until - now);
    CompletableFuture<KeepAliveStream.Ack> call = engine.call(
        LeaseGrpc.getLeaseKeepAliveMethod().getFullMethodName(), deadline, false,
        node -> stream.attempt(node, clock::nanoTime));
    return call.thenApply(ack -> {
      if (!ack.reply().getLive()) {
        lose(new SessionLostException(leaseId, LostReason.LEASE_GONE,
            "the cluster no longer has the lease"));
        throw lostError();
      }
      long ttl = ack.reply().getTtlMs();
      long candidate = ack.sentAtNanos() + Validity.ofTtlMs(ttl).toNanos();
      synchronized (this) {
        // Never after the loss (a lost session stays lost), never backwards (replies may
        // overtake each other).
        if (lostError == null && candidate - validUntil > 0) {
          validUntil = candidate;
          assert validUntil - lastSent >= 0 : "validUntil before the last send";
        }
        if (ack.sentAtNanos() - lastSent > 0) {
          lastSent = ack.sentAtNanos();
        }
      }
      return new RenewResult(leaseId, ttl, true, ack.sentAtNanos());
    });
  }

  private synchronized void scheduleRenew() {
    if (lostError != null) {
      return;
    }
    long period = Duration.ofMillis(ttlMs / 3).toNanos();
    long delay = lastSent + period - clock.nanoTime();
    renewTimer = engine.schedule(this::renewCycle,
        Duration.ofNanos(Math.min(Math.max(0, delay), MAX_SLEEP_NANOS)));
  }

  private void renewCycle() {
    synchronized (this) {
      if (lostError != null || renewing != null) {
        return;
      }
      long period = Duration.ofMillis(ttlMs / 3).toNanos();
      if (clock.nanoTime() - (lastSent + period) < 0) {
        scheduleRenew(); // a long sleep in chunks
        return;
      }
    }
    CompletableFuture<RenewResult> call = keepAlive();
    synchronized (this) {
      renewing = call;
    }
    call.whenComplete((r, error) -> {
      synchronized (this) {
        renewing = null;
      }
      if (error == null) {
        armLostTimer();
        scheduleRenew();
        return;
      }
      Throwable cause = Failure.unwrap(error);
      if (cause instanceof LeaseNotFoundException) {
        lose(new SessionLostException(leaseId, LostReason.LEASE_GONE,
            "the cluster no longer has the lease"));
        return;
      }
      if (isLost()) {
        return;
      }
      LOG.log(Level.FINE, "keep-alive of lease " + leaseId + " failed; retrying", cause);
      // Retried after a short pause (the call itself followed the leader and backed off).
      synchronized (this) {
        if (lostError == null) {
          renewTimer = engine.schedule(this::renewCycle, engine.options().backoffCap());
        }
      }
    });
  }

  private synchronized void armLostTimer() {
    if (lostError != null) {
      return;
    }
    if (lostTimer != null) {
      lostTimer.cancel(false);
    }
    long left = validUntil - lostTimerSlack - clock.nanoTime();
    lostTimer = engine.alarm(this::lostTimerFired,
        Duration.ofNanos(Math.min(Math.max(0, left), MAX_SLEEP_NANOS)));
  }

  private void lostTimerFired() {
    boolean expired;
    synchronized (this) {
      if (lostError != null) {
        return;
      }
      expired = clock.nanoTime() - (validUntil - lostTimerSlack) >= 0;
    }
    if (expired) {
      lose(expired());
    } else {
      armLostTimer();
    }
  }

  /** Marks the session lost (the first reason wins) and tells every waiter and listener. */
  void lose(SessionLostException reason) {
    List<Consumer<SessionLostException>> toCall;
    CompletableFuture<?> running;
    synchronized (this) {
      if (lostError != null) {
        return;
      }
      lostError = reason;
      if (renewTimer != null) {
        renewTimer.cancel(false);
      }
      if (lostTimer != null) {
        lostTimer.cancel(false);
      }
      running = renewing;
      toCall = new ArrayList<>(listeners);
      listeners.clear();
    }
    // Tell first, clean up after: the signal is what must come no later than validUntil.
    lost.complete(reason.lostReason());
    for (Consumer<SessionLostException> l : toCall) {
      try {
        l.accept(reason);
      } catch (RuntimeException e) {
        LOG.log(Level.WARNING, "a session-lost listener failed", e);
      }
    }
    if (running != null) {
      running.cancel(true);
    }
    stream.close();
    for (PendingLock p : waiting) {
      p.sessionLost(reason);
    }
    if (reason.lostReason() == LostReason.EXPIRED) {
      // The lease may still be live on the server and nobody here trusts it: revoking frees its
      // locks sooner (best effort).
      try {
        client.revokeAsync(leaseId).exceptionally(e -> null);
      } catch (RuntimeException e) {
        LOG.log(Level.FINE, "could not revoke lost lease " + leaseId, e);
      }
    }
  }

  /**
   * Ends the session: marks it lost ({@link LostReason#CLOSED}), stops the keep-alive and
   * revokes the lease, which releases every lock on it (cleanly: no lock-delay) and removes its
   * waits in one committed entry. A lease the server no longer has is not an error.
   */
  public CompletableFuture<Void> closeAsync() {
    lose(new SessionLostException(leaseId, LostReason.CLOSED, "the session was closed"));
    return client.revokeAsync(leaseId).handle((r, e) -> {
      if (e == null || Failure.unwrap(e) instanceof NotFoundException) {
        return null;
      }
      throw e instanceof RuntimeException re ? re : new java.util.concurrent.CompletionException(e);
    });
  }

  /**
   * {@link #closeAsync()}, waiting for the revoke.
   *
   * @throws ClusterUnavailableException if the revoke did not commit within the client's
   *     deadline (the lease then expires after its TTL)
   */
  @Override
  public void close() {
    Blocking.await(closeAsync(), "close session " + leaseId);
  }

  // ---- Locks ----

  /**
   * Takes {@code resource} on this session's lease, waiting in the server's FIFO queue for as
   * long as it takes (etcd {@code Mutex.Lock}). The waiter is kept across leader changes (S8).
   * Interrupting the thread abandons the wait ({@code CancelWait}).
   *
   * @throws SessionLostException when the session is lost before the grant
   * @throws InvalidArgumentException for a bad resource name (field {@code resource})
   */
  public Lock lock(String resource) {
    return Blocking.await(lockAsync(resource), "lock " + resource);
  }

  /**
   * Takes {@code resource} if it is free now (no wait).
   *
   * @throws LockNotGrantedException when it is held ({@link NotGrantedReason#HELD}, with the
   *     holder's lease) or in lock-delay
   */
  public Lock tryLock(String resource) {
    return Blocking.await(tryLockAsync(resource), "try-lock " + resource);
  }

  /**
   * Takes {@code resource}, waiting in the queue at most {@code wait} (server bound 1 h).
   *
   * @throws LockNotGrantedException with {@link NotGrantedReason#WAIT_TIMEOUT} when the wait ran
   *     out (the waiter's removal has then committed, S8)
   */
  public Lock lock(String resource, Duration wait) {
    return Blocking.await(lockAsync(resource, wait), "lock " + resource);
  }

  /**
   * {@link #lock(String)} as a future. Cancelling it, or completing it any other way (e.g.
   * {@code orTimeout}), abandons the wait: the client sends {@code CancelWait}, and if the grant
   * won the race the cancel releases it ({@link PendingLock#abandoned()} says what happened).
   */
  public PendingLock lockAsync(String resource) {
    return PendingLock.start(this, resource, null);
  }

  /** {@link #tryLock(String)} as a future. */
  public PendingLock tryLockAsync(String resource) {
    return PendingLock.start(this, resource, Duration.ZERO);
  }

  /** {@link #lock(String, Duration)} as a future; abandoning it as {@link #lockAsync(String)}. */
  public PendingLock lockAsync(String resource, Duration wait) {
    return PendingLock.start(this, resource, wait);
  }

  /**
   * Takes {@code resource} as a mutex with these options (wait, lock-delay, max-hold).
   *
   * @throws InvalidArgumentException for a value outside the server's bounds, naming the field
   *     ({@code wait_timeout_ms}, {@code lock_delay_ms}, {@code max_hold_ms})
   */
  public Lock lock(String resource, LockOptions options) {
    return Blocking.await(lockAsync(resource, options), "lock " + resource);
  }

  /** {@link #lock(String, LockOptions)} as a future; abandoning it as {@link #lockAsync(String)}. */
  public PendingLock lockAsync(String resource, LockOptions options) {
    return PendingLock.start(this, PendingLock.Ask.mutex(resource, options));
  }

  /**
   * A semaphore of {@code limit} permits named {@code name} on this session (a handle; see
   * {@link Semaphore}).
   */
  public Semaphore semaphore(String name, int limit) {
    return new Semaphore(this, name, limit);
  }

  /**
   * Takes a shared (reader's) grant of the read-write lock {@code resource}: beside other
   * readers, never beside a writer, and never ahead of an earlier waiting writer (FIFO,
   * docs/semantics.md "Lock kinds"). {@link Lock#mode()} is {@link LockMode#SHARED}.
   *
   * @throws FailedPreconditionException when {@code resource} is now another kind (field
   *     {@code kind})
   */
  public Lock readLock(String resource) {
    return readLock(resource, LockOptions.DEFAULT);
  }

  /** {@link #readLock(String)} with these options. */
  public Lock readLock(String resource, LockOptions options) {
    return Blocking.await(readLockAsync(resource, options), "read-lock " + resource);
  }

  /** {@link #readLock(String, LockOptions)} as a future; abandoning it as {@link #lockAsync(String)}. */
  public PendingLock readLockAsync(String resource, LockOptions options) {
    return PendingLock.start(this,
        new PendingLock.Ask(List.of(resource), LockMode.SHARED, 0, options));
  }

  /**
   * Takes the exclusive (writer's) grant of the read-write lock {@code resource}: alone. {@link
   * Lock#mode()} is {@link LockMode#EXCLUSIVE}.
   *
   * @throws FailedPreconditionException when {@code resource} is now another kind (field
   *     {@code kind})
   */
  public Lock writeLock(String resource) {
    return writeLock(resource, LockOptions.DEFAULT);
  }

  /** {@link #writeLock(String)} with these options. */
  public Lock writeLock(String resource, LockOptions options) {
    return Blocking.await(writeLockAsync(resource, options), "write-lock " + resource);
  }

  /** {@link #writeLock(String, LockOptions)} as a future; abandoning it as {@link #lockAsync(String)}. */
  public PendingLock writeLockAsync(String resource, LockOptions options) {
    return PendingLock.start(this,
        new PendingLock.Ask(List.of(resource), LockMode.EXCLUSIVE, 0, options));
  }

  /**
   * Takes every one of {@code resources} (1..=64 distinct mutexes) as one multi-lock
   * (docs/semantics.md "Multi-locks"): all granted in one entry, each with its own token
   * ({@link Lock#grants()}, in the order asked), or none; no deadlock whatever the order.
   * Releasing the returned lock frees all of them. A max-hold is refused here (field {@code
   * max_hold_ms}).
   *
   * @throws InvalidArgumentException for an empty name, a duplicate or more than 64 (field
   *     {@code resources})
   * @throws FailedPreconditionException when this session already holds or waits on one of them
   *     (field {@code resources}) or one is another kind (field {@code kind})
   */
  public Lock lockAll(List<String> resources) {
    return lockAll(resources, LockOptions.DEFAULT);
  }

  /** {@link #lockAll(List)} with these options. */
  public Lock lockAll(List<String> resources, LockOptions options) {
    return Blocking.await(lockAllAsync(resources, options), "lock " + resources);
  }

  /** {@link #lockAll(List, LockOptions)} as a future; abandoning it as {@link #lockAsync(String)}. */
  public PendingLock lockAllAsync(List<String> resources, LockOptions options) {
    return PendingLock.start(this,
        new PendingLock.Ask(resources, LockMode.UNSPECIFIED, 0, options));
  }

  /** An election on this session; see {@link Election}. */
  public Election election(String name) {
    return new Election(this, name);
  }

  void register(PendingLock p) {
    waiting.add(p);
    SessionLostException already = lostError();
    if (already != null) {
      p.sessionLost(already);
    }
  }

  void unregister(PendingLock p) {
    waiting.remove(p);
  }

  @Override
  public String toString() {
    return "Session{leaseId=" + leaseId + ", ttlMs=" + ttlMs + ", lost=" + isLost() + "}";
  }
}
