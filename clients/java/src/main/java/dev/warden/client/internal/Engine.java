package dev.warden.client.internal;

import dev.warden.client.ClientOptions;
import dev.warden.client.InvalidArgumentException;
import dev.warden.client.InvalidEndpointException;
import dev.warden.client.NoQuorumException;
import dev.warden.client.UnavailableException;
import dev.warden.client.WardenException;
import io.grpc.ChannelCredentials;
import io.grpc.ConnectivityState;
import io.grpc.Grpc;
import io.grpc.InsecureChannelCredentials;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Function;
import java.util.logging.Level;
import java.util.logging.Logger;
import warden.v1.Warden.RequestHeader;

/**
 * The client's core, shared by every handle: endpoints, channels, the cached leader, the client
 * id and request ids (S7), the timer thread, and the one retry loop ({@link #call}).
 *
 * <p>The path of a call: to the cached leader (or the first endpoint); a follower answers
 * {@code UNAVAILABLE} with {@code warden-leader: host:port} and the call is re-sent there at
 * once; a node that cannot be reached, or knows no leader, makes the call go to the next
 * endpoint at once; after a whole round failed it pauses (25 ms doubling, capped). Each attempt
 * waits at most the attempt timeout, the whole call until its deadline; then it fails with
 * {@link NoQuorumException} (nodes answered) or {@link UnavailableException} (none reachable),
 * naming what it tried.
 */
public final class Engine implements AutoCloseable {
  private static final Logger LOG = Logger.getLogger(Engine.class.getName());
  /** Ids and tokens stay below 2^53; so does the client id (safe in JSON). */
  private static final long MAX_ID = (1L << 53) - 1;

  private final List<Endpoint> endpoints;
  private final ClientOptions options;
  private final long clientId;
  private final ChannelCredentials credentials;
  private final Map<Endpoint, ManagedChannel> channels = new ConcurrentHashMap<>();
  private final AtomicReference<Endpoint> leader = new AtomicReference<>();
  private final RequestIds requestIds = new RequestIds();
  private final AtomicLong sequences = new AtomicLong();
  private final ScheduledExecutorService timers;
  private final ScheduledExecutorService alarms;
  private volatile boolean closed;

  /**
   * @throws InvalidArgumentException for an empty endpoint list
   * @throws InvalidEndpointException for an endpoint that is not host:port
   * @throws dev.warden.client.TlsConfigException for TLS files that cannot be used
   */
  public Engine(List<String> rawEndpoints, ClientOptions options) {
    if (rawEndpoints == null || rawEndpoints.isEmpty()) {
      throw new InvalidArgumentException("endpoints", "at least one host:port is required");
    }
    List<Endpoint> parsed = new ArrayList<>();
    for (String raw : rawEndpoints) {
      try {
        Endpoint e = Endpoint.parse(raw);
        if (!parsed.contains(e)) {
          parsed.add(e);
        }
      } catch (Endpoint.InvalidEndpoint e) {
        throw new InvalidEndpointException(String.valueOf(raw), e.getMessage());
      }
    }
    this.endpoints = List.copyOf(parsed);
    this.options = options;
    this.credentials = options.tls().map(t -> t.credentials())
        .orElseGet(InsecureChannelCredentials::create);
    SecureRandom random = new SecureRandom();
    long id = 0;
    while (id == 0) {
      id = random.nextLong() & MAX_ID;
    }
    this.clientId = id;
    this.timers = Executors.newSingleThreadScheduledExecutor(r -> {
      Thread t = new Thread(r, "warden-client-timers");
      t.setDaemon(true);
      return t;
    });
    this.alarms = Executors.newSingleThreadScheduledExecutor(r -> {
      Thread t = new Thread(r, "warden-client-session-alarms");
      t.setDaemon(true);
      t.setPriority(Thread.MAX_PRIORITY);
      return t;
    });
  }

  /** This client's id: random, in 1..2^53-1, chosen once per client instance (S7). */
  public long clientId() {
    return clientId;
  }

  /** The endpoints, canonical, without duplicates. */
  public List<Endpoint> endpoints() {
    return endpoints;
  }

  /** The options in force. */
  public ClientOptions options() {
    return options;
  }

  /** The request-id bookkeeping (S7). */
  public RequestIds requestIds() {
    return requestIds;
  }

  /** The next keep-alive/renew sequence number (echoed by the server, S5). */
  public long nextSequence() {
    return sequences.incrementAndGet();
  }

  /** The timer thread: pauses, keep-alive ticks, lost timers. Never blocked. */
  public ScheduledExecutorService timers() {
    return timers;
  }

  /** Runs {@code task} after {@code delay} on the timer thread. */
  public ScheduledFuture<?> schedule(Runnable task, Duration delay) {
    return timers.schedule(guarded(task), Math.max(0, delay.toNanos()), TimeUnit.NANOSECONDS);
  }

  /**
   * Runs {@code task} after {@code delay} on the alarm thread, which runs nothing but session
   * loss timers (so that no other work makes them late).
   */
  public ScheduledFuture<?> alarm(Runnable task, Duration delay) {
    return alarms.schedule(guarded(task), Math.max(0, delay.toNanos()), TimeUnit.NANOSECONDS);
  }

  private static Runnable guarded(Runnable task) {
    return () -> {
      try {
        task.run();
      } catch (RuntimeException e) {
        LOG.log(Level.WARNING, "warden client timer task failed", e);
      }
    };
  }

  /** The address that last served a call (the leader as far as this client knows). */
  public Optional<Endpoint> cachedLeader() {
    return Optional.ofNullable(leader.get());
  }

  /** The request header of a request in flight: the same bytes on every retry (S7). */
  public RequestHeader header(RequestIds.InFlight id) {
    return RequestHeader.newBuilder()
        .setClientId(clientId)
        .setRequestId(id.requestId())
        .setAckedRequestId(id.ackedRequestId())
        .build();
  }

  /** A deadline {@code after} from now, on {@link System#nanoTime()}, saturating. */
  public static long deadlineAfter(Duration after) {
    long now = System.nanoTime();
    long nanos;
    try {
      nanos = after.toNanos();
    } catch (ArithmeticException e) {
      nanos = Long.MAX_VALUE / 2;
    }
    nanos = Math.min(nanos, Long.MAX_VALUE / 2);
    return now + nanos;
  }

  /** The channel to {@code address}, opened lazily and kept. */
  public ManagedChannel channel(Endpoint address) {
    if (closed) {
      throw new WardenException("the client is closed");
    }
    return channels.computeIfAbsent(address, a -> Grpc
        .newChannelBuilderForAddress(a.socketHost(), a.port(), credentials)
        // Notice a dead leader during a long wait (grpc-java's minimum interval is 10 s).
        .keepAliveTime(10, TimeUnit.SECONDS)
        .keepAliveTimeout(Math.max(1000, options.attemptTimeout().toMillis()),
            TimeUnit.MILLISECONDS)
        .build());
  }

  /** An attempt of a call at one node. */
  @FunctionalInterface
  public interface Attempt<T> {
    /** Starts the attempt; cancelling the returned future must cancel its RPC. */
    CompletableFuture<T> start(Node node);
  }

  /**
   * Runs {@code attempt} against the leader with leader following, rotation and backoff until
   * it succeeds, the server gives a final answer, or {@code deadlineNanos} (on {@link
   * System#nanoTime()}) passes. Every failure that is not a final answer is retried, timeouts and
   * dropped connections included, so the attempt must be safe to repeat: a read, a renew, or a
   * mutation with a request id (S7). Cancelling the returned future cancels the attempt in
   * progress and stops the loop.
   *
   * @param rpc the full method name (for errors)
   * @param unimplementedIsFinal {@code UNIMPLEMENTED} ends the call (an RPC newer than some
   *     servers) instead of being retried elsewhere
   */
  public <T> CompletableFuture<T> call(
      String rpc, long deadlineNanos, boolean unimplementedIsFinal, Attempt<T> attempt) {
    Run<T> run = new Run<>(rpc, deadlineNanos, unimplementedIsFinal, attempt);
    run.begin();
    return run.result;
  }

  /** {@link #call} with the client's default deadline. */
  public <T> CompletableFuture<T> call(String rpc, Attempt<T> attempt) {
    return call(rpc, deadlineAfter(options.deadline()), false, attempt);
  }

  /** A unary call on the retry loop, each attempt bounded by the attempt timeout. */
  public <Req, Resp> CompletableFuture<Resp> unary(
      io.grpc.MethodDescriptor<Req, Resp> method, Req request) {
    return call(method.getFullMethodName(),
        node -> Attempts.unary(node.channel(), method, request, options.attemptTimeout()));
  }

  /**
   * Takes a request id (waiting for room in the window), runs {@code body} with it, and marks it
   * answered when the body's future completes in any way (S7).
   */
  public <T> CompletableFuture<T> withRequestId(
      Function<RequestIds.InFlight, CompletableFuture<T>> body) {
    CompletableFuture<T> result = new CompletableFuture<>();
    CompletableFuture<RequestIds.InFlight> slot = requestIds.begin();
    slot.whenComplete((id, error) -> {
      if (error != null) {
        result.completeExceptionally(error);
        return;
      }
      CompletableFuture<T> inner;
      try {
        inner = body.apply(id);
      } catch (RuntimeException e) {
        id.finish();
        result.completeExceptionally(e);
        return;
      }
      inner.whenComplete((v, e) -> {
        if (e == null) {
          requestIds.serverKnowsClient();
        }
        id.finish();
        if (e != null) {
          result.completeExceptionally(Failure.unwrap(e));
        } else {
          result.complete(v);
        }
      });
      result.whenComplete((v, e) -> {
        if (result.isCancelled()) {
          inner.cancel(true);
        }
      });
    });
    result.whenComplete((v, e) -> {
      if (result.isCancelled()) {
        slot.cancel(true);
      }
    });
    return result;
  }

  private final class Run<T> {
    final String rpc;
    final long deadlineNanos;
    final boolean unimplementedIsFinal;
    final Attempt<T> attempt;
    final CompletableFuture<T> result = new CompletableFuture<>();
    final long started = System.nanoTime();
    final CallPlan plan;
    CompletableFuture<T> current;
    ScheduledFuture<?> deadlineTimer;
    boolean serverAnswered;
    String lastError = "no attempt finished";
    Failure lastFailure;

    Run(String rpc, long deadlineNanos, boolean unimplementedIsFinal, Attempt<T> attempt) {
      this.rpc = rpc;
      this.deadlineNanos = deadlineNanos;
      this.unimplementedIsFinal = unimplementedIsFinal;
      this.attempt = attempt;
      this.plan = new CallPlan(endpoints, cachedLeader(), options.backoffCap());
    }

    void begin() {
      deadlineTimer = schedule(this::deadlinePassed,
          Duration.ofNanos(deadlineNanos - System.nanoTime()));
      result.whenComplete((v, e) -> {
        deadlineTimer.cancel(false);
        CompletableFuture<T> running;
        synchronized (this) {
          running = current;
        }
        if (running != null && !running.isDone()) {
          running.cancel(true);
        }
      });
      tryAt(plan.first());
    }

    void tryAt(Endpoint target) {
      ManagedChannel channel;
      synchronized (this) {
        if (result.isDone()) {
          return;
        }
        try {
          channel = channel(target);
        } catch (RuntimeException e) {
          result.completeExceptionally(e);
          return;
        }
      }
      ConnectivityState state = channel.getState(true);
      if (state == ConnectivityState.IDLE || state == ConnectivityState.CONNECTING) {
        awaitConnection(target, channel, state);
      } else {
        // READY, or TRANSIENT_FAILURE (the attempt fails fast: next endpoint).
        startAttempt(target, channel);
      }
    }

    /**
     * Starts the attempt once the channel's connection is open, so that the attempt timeout
     * counts the request, not a TCP and TLS handshake (which takes longer than an attempt in a
     * JVM that just started, on a loaded machine); fails it as a connect failure when the
     * connection is neither open nor failed within the connect timeout.
     */
    void awaitConnection(Endpoint target, ManagedChannel channel, ConnectivityState seen) {
      long budget = Math.min(options.connectTimeout().toNanos(),
          deadlineNanos - System.nanoTime());
      AtomicBoolean decided = new AtomicBoolean();
      ScheduledFuture<?> timer = schedule(() -> {
        if (decided.compareAndSet(false, true)) {
          finished(target, null, Status.UNAVAILABLE.withDescription("connection to " + target
              + " not open within " + Duration.ofNanos(budget).toMillis() + " ms")
              .asRuntimeException());
        }
      }, Duration.ofNanos(Math.max(0, budget)));
      watchConnection(target, channel, seen, decided, timer);
    }

    private void watchConnection(Endpoint target, ManagedChannel channel, ConnectivityState seen,
        AtomicBoolean decided, ScheduledFuture<?> timer) {
      channel.notifyWhenStateChanged(seen, () -> {
        if (decided.get() || result.isDone()) {
          return;
        }
        ConnectivityState now = channel.getState(false);
        if (now == ConnectivityState.IDLE || now == ConnectivityState.CONNECTING) {
          watchConnection(target, channel, now, decided, timer);
        } else if (decided.compareAndSet(false, true)) {
          timer.cancel(false);
          startAttempt(target, channel);
        }
      });
    }

    void startAttempt(Endpoint target, ManagedChannel channel) {
      CompletableFuture<T> started;
      synchronized (this) {
        if (result.isDone()) {
          return;
        }
        try {
          started = attempt.start(new Node(target, channel));
        } catch (RuntimeException e) {
          result.completeExceptionally(e);
          return;
        }
        current = started;
      }
      started.whenComplete((value, error) -> finished(target, value, error));
    }

    void finished(Endpoint target, T value, Throwable error) {
      if (result.isDone()) {
        return;
      }
      if (error == null) {
        leader.set(target);
        result.complete(value);
        return;
      }
      Failure failure = Failure.of(error);
      if (!failure.retryable(unimplementedIsFinal)) {
        // The node answered for the cluster: as good a first try as any next time.
        if (failure.answeredByServer()) {
          leader.set(target);
        }
        result.completeExceptionally(failure.toException(rpc));
        return;
      }
      boolean answered = failure.answeredByServer();
      Optional<Endpoint> hint = failure.leaderHint();
      CallPlan.Next next;
      synchronized (this) {
        serverAnswered |= answered;
        lastError = target + ": " + failure.describe();
        lastFailure = failure;
        leader.compareAndSet(target, null);
        next = plan.afterFailure(target, hint, answered);
      }
      LOG.log(Level.FINE, () -> rpc + " attempt failed (" + lastError + "); next " + next.target()
          + " after " + next.pause().toMillis() + " ms");
      if (System.nanoTime() + next.pause().toNanos() >= deadlineNanos) {
        deadlinePassed();
      } else if (next.pause().isZero()) {
        tryAt(next.target());
      } else {
        schedule(() -> tryAt(next.target()), next.pause());
      }
    }

    void deadlinePassed() {
      if (result.isDone()) {
        return;
      }
      List<String> tried = plan.tried().stream().map(Endpoint::toString).toList();
      long waitedMs = Duration.ofNanos(System.nanoTime() - started).toMillis();
      WardenException error;
      synchronized (this) {
        if (serverAnswered) {
          Failure f = lastFailure;
          error = new NoQuorumException(tried, waitedMs, lastError,
              f == null ? dev.warden.client.ErrorReason.NONE : f.reason(),
              f == null ? "" : f.reasonName());
        } else {
          error = new UnavailableException(tried, waitedMs, lastError);
        }
      }
      result.completeExceptionally(error);
    }
  }

  @Override
  public void close() {
    closed = true;
    timers.shutdownNow();
    alarms.shutdownNow();
    for (ManagedChannel c : channels.values()) {
      c.shutdownNow();
    }
    for (ManagedChannel c : channels.values()) {
      try {
        c.awaitTermination(1, TimeUnit.SECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return;
      }
    }
  }
}
