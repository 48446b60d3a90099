package dev.warden.client.internal;

import io.grpc.CallOptions;
import io.grpc.ClientCall;
import io.grpc.Metadata;
import io.grpc.Status;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ScheduledFuture;
import java.util.function.Consumer;
import warden.v1.LockGrpc;
import warden.v1.Warden.AcquireRequest;
import warden.v1.Warden.AcquireResponse;
import warden.v1.Warden.Queued;

/**
 * One attempt of {@code Lock/Acquire} (server streaming): zero or more {@code queued} messages,
 * then exactly one {@code granted} or {@code not_granted}. Completes with that final message.
 *
 * <p>Bounds: the response headers (sent once the server has committed the enqueue or the grant)
 * within one attempt timeout; then each message within the rest of the wait plus one attempt
 * timeout (the server reports a timeout once the waiter's removal has committed). A stream that ends without
 * a final message, or breaks, fails the attempt with a retryable status: the retry re-sends the
 * same request (same request id), which re-attaches it to its waiter on the server (S7, S8).
 * Cancelling the future cancels the stream; that alone cancels nothing on the server.
 */
public final class AcquireStream {
  private AcquireStream() {}

  /**
   * @param waitDeadlineNanos when the requested wait ends, on {@link System#nanoTime()}
   * @param onQueued called with each {@code queued} report (on a gRPC thread)
   */
  public static CompletableFuture<AcquireResponse> attempt(
      Engine engine,
      Node node,
      AcquireRequest request,
      long waitDeadlineNanos,
      Consumer<Queued> onQueued) {
    Duration attemptTimeout = engine.options().attemptTimeout();
    ClientCall<AcquireRequest, AcquireResponse> call =
        node.channel().newCall(LockGrpc.getAcquireMethod(), CallOptions.DEFAULT);
    CompletableFuture<AcquireResponse> answer = new CompletableFuture<>();
    Object lock = new Object();
    ScheduledFuture<?>[] timer = new ScheduledFuture<?>[1];
    java.util.function.LongConsumer arm = budgetNanos -> {
      synchronized (lock) {
        if (timer[0] != null) {
          timer[0].cancel(false);
        }
        if (answer.isDone()) {
          return;
        }
        timer[0] = engine.schedule(() -> {
          if (answer.completeExceptionally(Status.DEADLINE_EXCEEDED
              .withDescription("no answer to the acquire within "
                  + Duration.ofNanos(budgetNanos).toMillis() + " ms")
              .asRuntimeException())) {
            call.cancel("attempt timed out", null);
          }
        }, Duration.ofNanos(budgetNanos));
      }
    };
    Runnable rearm = () -> arm.accept(Math.max(0, waitDeadlineNanos - System.nanoTime())
        + attemptTimeout.toNanos());
    call.start(new ClientCall.Listener<AcquireResponse>() {
      @Override
      public void onHeaders(Metadata headers) {
        rearm.run();
      }

      @Override
      public void onMessage(AcquireResponse message) {
        switch (message.getEventCase()) {
          case QUEUED -> {
            rearm.run();
            onQueued.accept(message.getQueued());
            call.request(1);
          }
          case GRANTED, NOT_GRANTED -> answer.complete(message);
          default -> {
            rearm.run();
            call.request(1);
          }
        }
      }

      @Override
      public void onClose(Status status, Metadata trailers) {
        if (status.isOk()) {
          answer.completeExceptionally(Status.ABORTED
              .withDescription("the acquire stream ended without a final message")
              .asRuntimeException(trailers));
        } else {
          answer.completeExceptionally(status.asRuntimeException(trailers));
        }
      }
    }, new Metadata());
    arm.accept(attemptTimeout.toNanos());
    call.request(1);
    call.sendMessage(request);
    call.halfClose();
    answer.whenComplete((v, e) -> {
      synchronized (lock) {
        if (timer[0] != null) {
          timer[0].cancel(false);
        }
      }
      if (answer.isCancelled()) {
        call.cancel("the caller abandoned the acquire", null);
      }
    });
    return answer;
  }
}
