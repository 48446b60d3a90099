package dev.warden.client;

import dev.warden.client.internal.Engine;
import dev.warden.client.internal.Failure;
import io.grpc.CallOptions;
import io.grpc.ClientCall;
import io.grpc.Metadata;
import io.grpc.Status;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import warden.v1.WatchGrpc;
import warden.v1.WatchOuterClass;

/**
 * A running watch ({@link WardenClient#watch}): lock-table events in commit order, resumed
 * without gaps or duplicates when its node goes away. It remembers the last index it returned
 * and how many events of that index; on reconnect (to any endpoint: every node applies the same
 * entries) it asks for that index again and skips the events it already returned.
 *
 * <p>Not thread-safe: one consumer calls {@link #next}. {@link #close()} ends the stream.
 */
public final class Watcher implements AutoCloseable {
  private static final Metadata.Key<String> START_INDEX =
      Metadata.Key.of("warden-start-index", Metadata.ASCII_STRING_MARSHALLER);
  /** Events buffered ahead of the consumer (gRPC flow control holds back the rest). */
  private static final int BUFFER = 64;

  private final Engine engine;
  private final WatchTarget target;
  private long resumeIndex;
  private int seenAtResume;
  private int receivedAtResume;
  private Stream stream;
  private volatile boolean closed;

  private sealed interface Item permits EventItem, EndItem {}

  private record EventItem(WatchOuterClass.WatchEvent event) implements Item {}

  private record EndItem(Status status, Metadata trailers) implements Item {}

  private static final class Stream {
    final ClientCall<WatchOuterClass.WatchRequest, WatchOuterClass.WatchEvent> call;
    final LinkedBlockingQueue<Item> items = new LinkedBlockingQueue<>();
    final CompletableFuture<Metadata> headers = new CompletableFuture<>();

    Stream(ClientCall<WatchOuterClass.WatchRequest, WatchOuterClass.WatchEvent> call) {
      this.call = call;
    }
  }

  Watcher(Engine engine, WatchTarget target, long startIndex) {
    this.engine = engine;
    this.target = target;
    this.resumeIndex = startIndex;
  }

  /** The index the watch would resume from now. */
  public long resumeIndex() {
    return resumeIndex;
  }

  void connect() {
    WatchOuterClass.WatchRequest.Builder request = WatchOuterClass.WatchRequest.newBuilder()
        .setStartIndex(resumeIndex);
    if (target instanceof WatchTarget.Resource r) {
      request.setResource(r.name());
    } else if (target instanceof WatchTarget.Prefix p) {
      request.setPrefix(p.prefix());
    }
    WatchOuterClass.WatchRequest built = request.build();
    Duration attemptTimeout = engine.options().attemptTimeout();
    CompletableFuture<Stream> opened = engine.call(
        WatchGrpc.getWatchMethod().getFullMethodName(),
        Engine.deadlineAfter(engine.options().deadline()), false, node -> {
          Stream s = new Stream(node.channel().newCall(WatchGrpc.getWatchMethod(),
              CallOptions.DEFAULT));
          s.call.start(new ClientCall.Listener<WatchOuterClass.WatchEvent>() {
            @Override
            public void onHeaders(Metadata h) {
              s.headers.complete(h);
            }

            @Override
            public void onMessage(WatchOuterClass.WatchEvent message) {
              s.items.add(new EventItem(message));
            }

            @Override
            public void onClose(Status status, Metadata trailers) {
              Status ended = status.isOk()
                  ? Status.UNAVAILABLE.withDescription("the watch stream ended") : status;
              s.headers.completeExceptionally(ended.asRuntimeException(trailers));
              s.items.add(new EndItem(ended, trailers));
            }
          }, new Metadata());
          s.call.request(BUFFER);
          s.call.sendMessage(built);
          s.call.halfClose();
          CompletableFuture<Stream> answer = s.headers
              .orTimeout(attemptTimeout.toNanos(), TimeUnit.NANOSECONDS)
              .handle((h, e) -> {
                if (e != null) {
                  Throwable cause = Failure.unwrap(e);
                  s.call.cancel("watch attempt failed", null);
                  if (cause instanceof java.util.concurrent.TimeoutException) {
                    throw Status.DEADLINE_EXCEEDED
                        .withDescription("no answer within " + attemptTimeout.toMillis() + " ms")
                        .asRuntimeException();
                  }
                  throw cause instanceof RuntimeException re ? re
                      : new java.util.concurrent.CompletionException(cause);
                }
                return s;
              });
          answer.whenComplete((v, e) -> {
            if (answer.isCancelled()) {
              s.call.cancel("watch abandoned", null);
            }
          });
          return answer;
        });
    Stream s = Blocking.await(opened, "watch");
    if (resumeIndex == 0) {
      // "From now": pin "now" so that a reconnect leaves no gap.
      String start = s.headers.join().get(START_INDEX);
      if (start != null) {
        try {
          resumeIndex = Long.parseLong(start.trim());
        } catch (NumberFormatException e) {
          resumeIndex = 0;
        }
      }
    }
    receivedAtResume = 0;
    stream = s;
  }

  /**
   * The next event, waiting as long as it takes.
   *
   * @throws CompactedException when the index to resume from is older than the node retains
   * @throws ClusterUnavailableException when no node served the watch again within the
   *     client's deadline
   */
  public WatchEvent next() {
    WatchEvent e;
    do {
      e = next(Duration.ofHours(1));
    } while (e == null);
    return e;
  }

  /**
   * The next event, or null if none came within {@code timeout}; reconnects (to any endpoint,
   * within the client's deadline) when the node goes away.
   *
   * @throws CompactedException when the index to resume from is older than the node retains
   */
  public WatchEvent next(Duration timeout) {
    long deadline = Engine.deadlineAfter(timeout);
    while (true) {
      if (closed) {
        throw new WardenException("the watch is closed");
      }
      if (stream == null) {
        connect();
        continue;
      }
      Item item;
      try {
        item = stream.items.poll(Math.max(0, deadline - System.nanoTime()),
            TimeUnit.NANOSECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new CallInterruptedException("watch", e);
      }
      if (item == null) {
        return null;
      }
      if (item instanceof EventItem ev) {
        stream.call.request(1);
        WatchOuterClass.WatchEvent e = ev.event();
        if (e.getIndex() == resumeIndex) {
          receivedAtResume++;
          if (receivedAtResume <= seenAtResume) {
            continue; // already returned before the reconnect
          }
          seenAtResume = receivedAtResume;
        } else {
          resumeIndex = e.getIndex();
          receivedAtResume = 1;
          seenAtResume = 1;
        }
        return new WatchEvent(e.getIndex(), e.getResource(), e.getEvent(), e.getLeaseId(),
            e.getFencingToken());
      }
      EndItem end = (EndItem) item;
      Failure failure = Failure.of(end.status(), end.trailers());
      if (!failure.retryable(false)) {
        stream = null;
        throw failure.toException(WatchGrpc.getWatchMethod().getFullMethodName());
      }
      stream = null; // the node went away: resume elsewhere
    }
  }

  @Override
  public void close() {
    closed = true;
    Stream s = stream;
    if (s != null) {
      s.call.cancel("watch closed", null);
    }
  }
}
