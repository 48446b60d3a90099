package dev.warden.client.internal;

import dev.warden.client.CancelWaitResult;
import dev.warden.client.LeaseNotFoundException;
import dev.warden.client.UnsupportedByServerException;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ScheduledFuture;
import java.util.function.Consumer;
import java.util.logging.Level;
import java.util.logging.Logger;
import warden.v1.LockGrpc;
import warden.v1.Warden.AcquireRequest;
import warden.v1.Warden.AcquireResponse;
import warden.v1.Warden.CancelWaitRequest;
import warden.v1.Warden.CancelWaitResponse;
import warden.v1.Warden.Queued;
import warden.v1.Warden.ReleaseRequest;
import warden.v1.Warden.RenewRequest;

/**
 * One acquire with one request id: sent on the retry loop (re-sent with the same id after a
 * dropped stream or a leader change, which re-attaches it to its waiter, S7/S8), and, when its
 * caller abandons it, taken back with {@code Lock/CancelWait} (committed, exactly-once; if the
 * grant won the race the cancel releases it).
 *
 * <p>The acquire's request id stays in flight until the cancel has been answered, so the
 * cancel's acknowledged watermark stays below it and the server still knows the acquire it
 * names.
 */
public final class Acquisition {
  private static final Logger LOG = Logger.getLogger(Acquisition.class.getName());

  private final Engine engine;
  private final AcquireRequest template;
  private final Duration wait;
  private final Consumer<Queued> onQueued;
  private final boolean renewWhileWaiting;
  private final CompletableFuture<AcquireResponse> result = new CompletableFuture<>();

  private CompletableFuture<RequestIds.InFlight> slot;
  private RequestIds.InFlight id;
  private CompletableFuture<AcquireResponse> running;
  private AcquireResponse finalMessage;
  private CompletableFuture<CancelWaitResult> abandonment;
  private boolean stopped;
  private long sentAtNanos;
  private ScheduledFuture<?> renewTimer;

  /**
   * @param template the request without its header
   * @param wait the wait asked of the server (zero: try once)
   * @param onQueued sees each queue position report
   * @param renewWhileWaiting renew the waiter's lease every TTL/3 while queued (a new lease that
   *     no session keeps alive: a waiter whose lease dies is removed, S8)
   */
  public Acquisition(Engine engine, AcquireRequest template, Duration wait,
      Consumer<Queued> onQueued, boolean renewWhileWaiting) {
    this.engine = engine;
    this.template = template;
    this.wait = wait;
    this.onQueued = onQueued;
    this.renewWhileWaiting = renewWhileWaiting;
  }

  /** Starts the acquire; completes with its final message (granted or not granted). */
  public CompletableFuture<AcquireResponse> start() {
    CompletableFuture<RequestIds.InFlight> s = engine.requestIds().begin();
    synchronized (this) {
      slot = s;
    }
    s.whenComplete((inFlight, error) -> {
      if (error != null) {
        result.completeExceptionally(error);
        return;
      }
      send(inFlight);
    });
    return result;
  }

  /** {@link System#nanoTime()} read before the first attempt was sent (0 before). */
  public synchronized long sentAtNanos() {
    return sentAtNanos;
  }

  /** The request id, or 0 while it waits for room in the window. */
  public synchronized long requestId() {
    return id == null ? 0 : id.requestId();
  }

  private void send(RequestIds.InFlight inFlight) {
    CompletableFuture<AcquireResponse> call;
    synchronized (this) {
      if (stopped || abandonment != null) {
        inFlight.finish();
        return;
      }
      id = inFlight;
      AcquireRequest request = template.toBuilder().setHeader(engine.header(inFlight)).build();
      long now = System.nanoTime();
      sentAtNanos = now;
      long waitNanos = wait.toNanos();
      long waitDeadline = now + waitNanos;
      long deadline = Engine.deadlineAfter(wait.plus(engine.options().deadline()));
      Consumer<Queued> report = q -> {
        keepWaiterAlive(q.getLeaseId());
        onQueued.accept(q);
      };
      call = engine.call(LockGrpc.getAcquireMethod().getFullMethodName(), deadline, false,
          node -> AcquireStream.attempt(engine, node, request, waitDeadline, report));
      running = call;
    }
    call.whenComplete((message, error) -> {
      boolean keep;
      synchronized (this) {
        finalMessage = message;
        keep = abandonment != null;
        if (renewTimer != null) {
          renewTimer.cancel(false);
        }
      }
      if (error == null) {
        engine.requestIds().serverKnowsClient();
      }
      if (!keep) {
        inFlight.finish();
      }
      if (error != null) {
        result.completeExceptionally(Failure.unwrap(error));
      } else {
        result.complete(message);
      }
    });
  }

  private synchronized void keepWaiterAlive(long leaseId) {
    if (!renewWhileWaiting || renewTimer != null || template.getTtlMs() == 0) {
      return;
    }
    Duration period = Duration.ofMillis(Math.max(100, template.getTtlMs() / 3));
    renewTimer = engine.timers().scheduleAtFixedRate(() -> {
      RenewRequest renew = RenewRequest.newBuilder().setLeaseId(leaseId)
          .setClientId(engine.clientId()).setSequence(engine.nextSequence()).build();
      engine.unary(LockGrpc.getRenewMethod(), renew).whenComplete((r, e) -> {
        if (e != null && !(Failure.unwrap(e) instanceof LeaseNotFoundException)) {
          LOG.log(Level.FINE, "keep-alive of a waiting acquire failed; retrying", e);
        }
      });
    }, period.toNanos(), period.toNanos(), java.util.concurrent.TimeUnit.NANOSECONDS);
  }

  /** Stops the acquire without a cancel (the lease is gone or being revoked anyway). */
  public void stop() {
    CompletableFuture<AcquireResponse> call;
    CompletableFuture<RequestIds.InFlight> s;
    synchronized (this) {
      stopped = true;
      call = running;
      s = slot;
      if (renewTimer != null) {
        renewTimer.cancel(false);
      }
    }
    if (s != null) {
      s.cancel(false);
    }
    if (call != null) {
      call.cancel(true);
    }
  }

  /**
   * Abandons the acquire: stops its attempts and, once a request was sent, sends {@code
   * CancelWait}. Completes with what the cancel did; fails with {@link
   * UnsupportedByServerException} when the server has no {@code CancelWait} (a grant already
   * received is then released, but a waiter still queued stays until its lease ends). Idempotent.
   */
  public CompletableFuture<CancelWaitResult> abandon() {
    CompletableFuture<AcquireResponse> call;
    CompletableFuture<RequestIds.InFlight> s;
    RequestIds.InFlight inFlight;
    AcquireResponse seen;
    CompletableFuture<CancelWaitResult> outcome;
    synchronized (this) {
      if (abandonment != null) {
        return abandonment;
      }
      outcome = new CompletableFuture<>();
      abandonment = outcome;
      call = running;
      s = slot;
      inFlight = id;
      seen = finalMessage;
      if (renewTimer != null) {
        renewTimer.cancel(false);
      }
    }
    if (s != null) {
      s.cancel(false);
    }
    if (call != null && !call.isDone()) {
      call.cancel(true);
    }
    String resource = template.getResource();
    if (inFlight == null) {
      // Nothing was sent.
      outcome.complete(new CancelWaitResult(resource, template.getLeaseId(),
          CancelWaitResult.Outcome.NONE, 0));
      return outcome;
    }
    if (seen != null && seen.hasGranted()) {
      // The final answer was in before the caller gave up (its id is answered): release that
      // exact grant (S6).
      long token = seen.getGranted().getFencingToken();
      long lease = seen.getGranted().getLeaseId();
      releaseUnwanted(seen).whenComplete((r, e) -> {
        if (e != null) {
          outcome.completeExceptionally(Failure.unwrap(e));
        } else {
          outcome.complete(new CancelWaitResult(resource, lease,
              CancelWaitResult.Outcome.RELEASED, token));
        }
      });
      return outcome;
    }
    if (seen != null && seen.hasNotGranted()) {
      // Nothing is queued or held: there is nothing to take back.
      inFlight.finish();
      outcome.complete(new CancelWaitResult(resource, template.getLeaseId(),
          CancelWaitResult.Outcome.NONE, 0));
      return outcome;
    }
    long acquireRequestId = inFlight.requestId();
    CompletableFuture<CancelWaitResponse> cancel = engine.withRequestId(cancelId -> {
      CancelWaitRequest request = CancelWaitRequest.newBuilder()
          .setHeader(engine.header(cancelId))
          .setAcquireRequestId(acquireRequestId)
          .setResource(resource)
          .build();
      return engine.call(LockGrpc.getCancelWaitMethod().getFullMethodName(),
          Engine.deadlineAfter(engine.options().deadline()), true,
          node -> Attempts.unary(node.channel(), LockGrpc.getCancelWaitMethod(), request,
              engine.options().attemptTimeout()));
    });
    cancel.whenComplete((reply, error) -> {
      if (error == null) {
        inFlight.finish();
        outcome.complete(new CancelWaitResult(reply.getResource(), reply.getLeaseId(),
            CancelWaitResult.Outcome.of(reply.getOutcome()), reply.getFencingToken()));
        return;
      }
      Throwable cause = Failure.unwrap(error);
      AcquireResponse grant;
      synchronized (this) {
        grant = finalMessage;
      }
      if (cause instanceof UnsupportedByServerException && grant != null && grant.hasGranted()) {
        // An older server: release the grant the caller no longer wants (its exact grant, S6).
        releaseUnwanted(grant).whenComplete((r, e) -> {
          inFlight.finish();
          outcome.completeExceptionally(cause);
        });
        return;
      }
      inFlight.finish();
      LOG.log(Level.FINE, "CancelWait failed", cause);
      outcome.completeExceptionally(cause);
    });
    return outcome;
  }

  private CompletableFuture<?> releaseUnwanted(AcquireResponse grant) {
    return engine.withRequestId(releaseId -> engine.unary(LockGrpc.getReleaseMethod(),
        ReleaseRequest.newBuilder()
            .setHeader(engine.header(releaseId))
            .setResource(grant.getGranted().getResource())
            .setLeaseId(grant.getGranted().getLeaseId())
            .setFencingToken(grant.getGranted().getFencingToken())
            .build()));
  }
}
