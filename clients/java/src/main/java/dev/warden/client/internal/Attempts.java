package dev.warden.client.internal;

import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.ClientCall;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.Status;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/** One attempt of a unary call as a future: cancelling the future cancels the call. */
public final class Attempts {
  private Attempts() {}

  /**
   * Sends {@code request} on {@code channel}, waiting at most {@code timeout} for the answer (a
   * slow node is left for the next endpoint rather than waited on). Fails with the status (and
   * its trailers: details, leader hint) as a {@link io.grpc.StatusRuntimeException}.
   */
  public static <Req, Resp> CompletableFuture<Resp> unary(
      Channel channel, MethodDescriptor<Req, Resp> method, Req request, Duration timeout) {
    CallOptions options = CallOptions.DEFAULT.withDeadlineAfter(timeout.toNanos(),
        TimeUnit.NANOSECONDS);
    ClientCall<Req, Resp> call = channel.newCall(method, options);
    CompletableFuture<Resp> answer = new CompletableFuture<>();
    call.start(
        new ClientCall.Listener<Resp>() {
          private Resp value;

          @Override
          public void onMessage(Resp message) {
            value = message;
          }

          @Override
          public void onClose(Status status, Metadata trailers) {
            if (status.isOk() && value != null) {
              answer.complete(value);
            } else if (status.isOk()) {
              answer.completeExceptionally(Status.INTERNAL
                  .withDescription(method.getFullMethodName() + " answered OK without a message")
                  .asRuntimeException(trailers));
            } else {
              answer.completeExceptionally(status.asRuntimeException(trailers));
            }
          }
        },
        new Metadata());
    call.request(2);
    call.sendMessage(request);
    call.halfClose();
    answer.whenComplete((v, e) -> {
      if (answer.isCancelled()) {
        call.cancel("the caller abandoned the call", null);
      }
    });
    return answer;
  }
}
