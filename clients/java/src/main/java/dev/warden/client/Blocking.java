package dev.warden.client;

import dev.warden.client.internal.Failure;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;

/** The blocking API over the async one: waits, unwraps, and abandons on interrupt. */
final class Blocking {
  private Blocking() {}

  /**
   * Waits for {@code future}; its failure is rethrown as the typed exception it carries. An
   * interrupt cancels the future (abandoning a waiting lock), sets the interrupt flag again and
   * throws {@link CallInterruptedException}.
   */
  static <T> T await(CompletableFuture<T> future, String what) {
    try {
      return future.get();
    } catch (InterruptedException e) {
      future.cancel(true);
      Thread.currentThread().interrupt();
      throw new CallInterruptedException(what, e);
    } catch (ExecutionException e) {
      throw rethrow(Failure.unwrap(e), what);
    } catch (CancellationException e) {
      throw new WardenException(what + " was cancelled", null, "", java.util.Map.of(), e);
    }
  }

  private static RuntimeException rethrow(Throwable cause, String what) {
    if (cause instanceof RuntimeException r) {
      return r;
    }
    if (cause instanceof Error err) {
      throw err;
    }
    return new WardenException(what + " failed: " + cause, null, "", java.util.Map.of(), cause);
  }
}
