package dev.warden.client.internal;

import io.grpc.CallOptions;
import io.grpc.ClientCall;
import io.grpc.Metadata;
import io.grpc.Status;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.LongSupplier;
import warden.v1.LeaseGrpc;
import warden.v1.LeaseOuterClass.LeaseKeepAliveRequest;
import warden.v1.LeaseOuterClass.LeaseKeepAliveResponse;

/**
 * A lease's {@code Lease/LeaseKeepAlive} stream (bidirectional) to one node at a time. Each
 * keep-alive is one attempt: a request with a new sequence number, sent on the stream to the
 * attempt's node (opened on first use, or again after it broke), answered by the reply that
 * echoes that sequence; the send time of that very attempt is read from the session clock just
 * before the send and returned with the reply (docs/semantics.md S5). A reply that echoes no
 * pending sequence (a late one, after its attempt timed out) is dropped.
 *
 * <p>On a follower the stream ends with {@code UNAVAILABLE} and {@code warden-leader}; every
 * pending attempt fails with that status, so the retry loop follows the hint. An attempt with
 * no reply within the attempt timeout breaks the stream (the next attempt opens a new one).
 */
public final class KeepAliveStream implements AutoCloseable {
  /** An acknowledged keep-alive and the send time of its attempt on the session clock. */
  public record Ack(LeaseKeepAliveResponse reply, long sentAtNanos) {}

  private final Engine engine;
  private final long leaseId;
  private Open open;
  private boolean closed;

  /** A keep-alive stream for {@code leaseId}; no stream is opened until the first attempt. */
  public KeepAliveStream(Engine engine, long leaseId) {
    this.engine = engine;
    this.leaseId = leaseId;
  }

  private final class Open {
    final Endpoint address;
    final ClientCall<LeaseKeepAliveRequest, LeaseKeepAliveResponse> call;
    final Map<Long, CompletableFuture<LeaseKeepAliveResponse>> pending =
        new ConcurrentHashMap<>();
    volatile boolean broken;

    Open(Node node) {
      this.address = node.address();
      this.call = node.channel().newCall(LeaseGrpc.getLeaseKeepAliveMethod(),
          CallOptions.DEFAULT);
      call.start(new ClientCall.Listener<LeaseKeepAliveResponse>() {
        @Override
        public void onMessage(LeaseKeepAliveResponse reply) {
          CompletableFuture<LeaseKeepAliveResponse> waiting = pending.remove(reply.getSequence());
          if (waiting != null) {
            waiting.complete(reply);
          }
          call.request(1);
        }

        @Override
        public void onClose(Status status, Metadata trailers) {
          broken = true;
          Status ended = status.isOk()
              ? Status.UNAVAILABLE.withDescription("the keep-alive stream ended") : status;
          for (CompletableFuture<LeaseKeepAliveResponse> f : pending.values()) {
            f.completeExceptionally(ended.asRuntimeException(trailers));
          }
          pending.clear();
        }
      }, new Metadata());
      call.request(1);
    }

    void breakIt(String why) {
      broken = true;
      call.cancel(why, null);
    }
  }

  private synchronized Open streamTo(Node node) {
    if (closed) {
      throw new IllegalStateException("the keep-alive stream is closed");
    }
    if (open != null && open.address.equals(node.address()) && !open.broken) {
      return open;
    }
    if (open != null && !open.broken) {
      open.breakIt("the keep-alive moves to another node");
    }
    open = new Open(node);
    return open;
  }

  /**
   * One keep-alive attempt at {@code node}.
   *
   * @param clock the session clock, read just before the send
   */
  public CompletableFuture<Ack> attempt(Node node, LongSupplier clock) {
    Open stream;
    try {
      stream = streamTo(node);
    } catch (IllegalStateException e) {
      return CompletableFuture.failedFuture(
          Status.CANCELLED.withDescription(e.getMessage()).asRuntimeException());
    }
    long sequence = engine.nextSequence();
    CompletableFuture<LeaseKeepAliveResponse> reply = new CompletableFuture<>();
    stream.pending.put(sequence, reply);
    long sentAt = clock.getAsLong();
    synchronized (this) {
      if (stream.broken) {
        stream.pending.remove(sequence);
        return CompletableFuture.failedFuture(
            Status.UNAVAILABLE.withDescription("the keep-alive stream broke").asRuntimeException());
      }
      stream.call.sendMessage(LeaseKeepAliveRequest.newBuilder()
          .setLeaseId(leaseId).setSequence(sequence).build());
    }
    Duration timeout = engine.options().attemptTimeout();
    engine.schedule(() -> {
      if (reply.completeExceptionally(Status.DEADLINE_EXCEEDED
          .withDescription("no keep-alive reply within " + timeout.toMillis() + " ms")
          .asRuntimeException())) {
        stream.pending.remove(sequence);
        stream.breakIt("keep-alive attempt timed out");
      }
    }, timeout);
    CompletableFuture<Ack> ack = reply.thenApply(r -> new Ack(r, sentAt));
    ack.whenComplete((v, e) -> {
      if (ack.isCancelled()) {
        stream.pending.remove(sequence);
        reply.cancel(false);
      }
    });
    return ack;
  }

  /** Ends the stream (the lease is no longer kept alive through it). */
  @Override
  public synchronized void close() {
    closed = true;
    if (open != null && !open.broken) {
      open.call.halfClose();
      open.breakIt("session closed");
    }
  }
}
