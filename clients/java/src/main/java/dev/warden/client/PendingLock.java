package dev.warden.client;

import dev.warden.client.internal.Acquisition;
import dev.warden.client.internal.Failure;
import java.time.Duration;
import java.util.List;
import java.util.OptionalInt;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicInteger;
import warden.v1.Warden.AcquireRequest;
import warden.v1.Warden.AcquireResponse;

/**
 * A lock being taken on a session: a {@link CompletableFuture} of the {@link Lock}, plus what
 * the wait reports ({@link #queued()}) and what abandoning it did ({@link #abandoned()}).
 *
 * <p><b>Abandoning.</b> The caller abandons the wait by completing this future in any way of
 * its own: {@link #cancel(boolean)}, {@link #orTimeout} firing, {@link #complete} or {@link
 * #completeExceptionally}. The client then stops the acquire and sends {@code Lock/CancelWait}
 * (committed, exactly-once): the waiter is removed and never granted, and if the grant won the
 * race the cancel releases it (S8). Cancelling a future derived from this one ({@code
 * thenApply(...)}) does not reach it: cancel this one.
 *
 * <p>It also completes exceptionally with {@link SessionLostException} when the session is
 * lost during the wait (the lease's end removes the waiter), and with {@link
 * LockNotGrantedException} for a try-lock that found the resource held or a wait that ran out.
 */
public final class PendingLock extends CompletableFuture<Lock> {
  /** The longest wait one acquire asks for (the server's bound); a lock() without a bound repeats it. */
  static final Duration MAX_WAIT = Duration.ofHours(1);

  private static final int PENDING = 0;
  private static final int SETTLING = 1;
  private static final int ABANDONED = 2;

  /**
   * What is asked for: one resource (or a multi-lock's resources, in order), the kind (a mode
   * for a read-write lock, a limit for a semaphore) and the options.
   */
  record Ask(List<String> resources, LockMode mode, int limit, LockOptions options) {
    Ask {
      resources = List.copyOf(resources);
    }

    static Ask mutex(String resource, LockOptions options) {
      return new Ask(List.of(resource), LockMode.UNSPECIFIED, 0, options);
    }
  }

  private final Session session;
  private final Ask ask;
  private final String resource;
  private final Duration wait;
  private final AtomicInteger state = new AtomicInteger(PENDING);
  private final CompletableFuture<Queued> queued = new CompletableFuture<>();
  private final CompletableFuture<CancelWaitResult> abandoned = new CompletableFuture<>();
  private Acquisition current;

  private PendingLock(Session session, Ask ask) {
    this.session = session;
    this.ask = ask;
    this.resource = ask.resources().isEmpty() ? "" : ask.resources().get(0);
    this.wait = ask.options().waitTimeout();
  }

  /** {@code wait} null: wait as long as it takes. */
  static PendingLock start(Session session, String resource, Duration wait) {
    return start(session, Ask.mutex(resource, LockOptions.DEFAULT.withWaitTimeout(wait)));
  }

  static PendingLock start(Session session, Ask ask) {
    PendingLock p = new PendingLock(session, ask);
    p.whenComplete((lock, error) -> p.callerSettled());
    session.register(p);
    if (!p.isDone()) {
      try {
        session.check();
        p.round();
      } catch (SessionLostException e) {
        p.settleExceptionally(e);
      }
    }
    return p;
  }

  /** The resource asked for (a multi-lock's first). */
  public String resource() {
    return resource;
  }

  /** Every resource asked for, in order: one, or a multi-lock's. */
  public List<String> resources() {
    return ask.resources();
  }

  /**
   * Completes with the first queue position report: the waiter is in the server's queue (S8).
   * Fails with {@link IllegalStateException} if the acquire ended without queuing.
   */
  public CompletableFuture<Queued> queued() {
    return queued.copy();
  }

  /**
   * Completes once an abandonment (see the class comment) has been carried out, with what the
   * cancel did; fails with {@link UnsupportedByServerException} when the server has no {@code
   * CancelWait} (the waiter then stays queued until the session ends). Never completes if the
   * wait was not abandoned.
   */
  public CompletableFuture<CancelWaitResult> abandoned() {
    return abandoned.copy();
  }

  private void round() {
    Duration maxHold = ask.options().maxHold();
    Duration asked = wait;
    if (asked == null) {
      // The server wants the max-hold above the wait: unbounded rounds stay just under it.
      asked = maxHold.isZero() || maxHold.compareTo(MAX_WAIT) > 0
          ? MAX_WAIT : maxHold.minusMillis(1);
    }
    AcquireRequest.Builder b = AcquireRequest.newBuilder()
        .setResource(resource)
        .setLeaseId(session.leaseId())
        .setWaitTimeoutMs(asked.toMillis())
        .setLockDelayMs(ask.options().lockDelay().toMillis())
        .setMaxHoldMs(maxHold.toMillis())
        .setMode(ask.mode().toWire())
        .setLimit(ask.limit());
    if (ask.resources().size() > 1) {
      b.addAllResources(ask.resources());
    }
    AcquireRequest request = b.build();
    // Validity with a max-hold counts from before the first attempt (the grant is made later).
    long sentAt = session.clock().nanoTime();
    Acquisition a = new Acquisition(session.client().engine(), request, asked,
        q -> queued.complete(new Queued(q.getPosition(), q.getLeaseId())), false);
    synchronized (this) {
      if (state.get() != PENDING) {
        return;
      }
      current = a;
    }
    a.start().whenComplete((message, error) -> roundDone(a, message, error, sentAt));
  }

  private void roundDone(Acquisition a, AcquireResponse message, Throwable error, long sentAt) {
    if (state.get() == ABANDONED) {
      return;
    }
    if (error != null) {
      settleExceptionally(Failure.unwrap(error));
      return;
    }
    if (message.hasGranted()) {
      var g = message.getGranted();
      List<ResourceToken> grants = g.getGrantsCount() == 0
          ? List.of(new ResourceToken(g.getResource(), g.getFencingToken()))
          : g.getGrantsList().stream()
              .map(t -> new ResourceToken(t.getResource(), t.getFencingToken())).toList();
      Lock lock = new Lock(session, g.getResource(), g.getFencingToken(),
          g.hasSlot() ? OptionalInt.of(g.getSlot()) : OptionalInt.empty(),
          LockMode.of(g.getMode()), grants, g.getMaxHoldMs(), sentAt);
      try {
        // Granted while the session may have been lost in between: the caller must not be
        // handed a lock it cannot trust.
        session.check();
      } catch (SessionLostException e) {
        settleExceptionally(e);
        return;
      }
      if (!state.compareAndSet(PENDING, SETTLING) || !super.complete(lock)) {
        // The caller gave up just as the grant came: take it back.
        finishAbandon(a);
        return;
      }
      queued.completeExceptionally(new IllegalStateException("granted without waiting"));
      session.unregister(this);
      return;
    }
    var notGranted = message.getNotGranted();
    if (wait == null && "wait_timeout".equals(notGranted.getReason())) {
      round(); // lock() without a bound: queue again
      return;
    }
    settleExceptionally(new LockNotGrantedException(notGranted.getResource(),
        notGranted.getReason(), notGranted.getHolderLeaseId()));
  }

  private void settleExceptionally(Throwable error) {
    if (state.compareAndSet(PENDING, SETTLING)) {
      super.completeExceptionally(error);
      queued.completeExceptionally(error);
      session.unregister(this);
    }
  }

  /** The session was lost: the lease's end removes the waiter; stop without a cancel. */
  void sessionLost(SessionLostException e) {
    Acquisition a;
    synchronized (this) {
      a = current;
    }
    if (state.compareAndSet(PENDING, SETTLING)) {
      if (a != null) {
        a.stop();
      }
      super.completeExceptionally(e);
      queued.completeExceptionally(e);
      session.unregister(this);
    }
  }

  /** Runs when the future completes: abandons the wait when the caller completed it. */
  private void callerSettled() {
    if (state.compareAndSet(PENDING, ABANDONED)) {
      Acquisition a;
      synchronized (this) {
        a = current;
      }
      session.unregister(this);
      queued.cancel(false);
      if (a == null) {
        abandoned.complete(new CancelWaitResult(resource, session.leaseId(),
            CancelWaitResult.Outcome.NONE, 0));
      } else {
        finishAbandon(a);
      }
    }
  }

  private void finishAbandon(Acquisition a) {
    state.set(ABANDONED);
    session.unregister(this);
    a.abandon().whenComplete((outcome, error) -> {
      if (error != null) {
        abandoned.completeExceptionally(Failure.unwrap(error));
      } else {
        abandoned.complete(outcome);
      }
    });
  }

  @Override
  public String toString() {
    return "PendingLock{resources=" + ask.resources() + ", leaseId=" + session.leaseId() + ", state="
        + (isDone() ? (isCompletedExceptionally() ? "failed" : "granted") : "waiting") + "}";
  }
}
