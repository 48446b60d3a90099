package dev.warden.client.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;

class RequestIdsTest {

  // Defends S7 (exactly once): ids grow by one per new request, and the acknowledged watermark
  // only covers ids that were all answered (an answered id above an unanswered one does not
  // move it).
  @Test
  void idsGrowByOneAndTheWatermarkCoversOnlyAnsweredIds() {
    RequestIds ids = new RequestIds();
    ids.serverKnowsClient();
    RequestIds.InFlight first = ids.begin().join();
    RequestIds.InFlight second = ids.begin().join();
    RequestIds.InFlight third = ids.begin().join();
    assertEquals(1, first.requestId());
    assertEquals(2, second.requestId());
    assertEquals(3, third.requestId());
    assertEquals(0, ids.acked());

    second.finish();
    assertEquals(0, ids.acked(), "2 answered, 1 not: the watermark stays");
    first.finish();
    assertEquals(2, ids.acked());
    RequestIds.InFlight fourth = ids.begin().join();
    assertEquals(4, fourth.requestId());
    assertEquals(2, fourth.ackedRequestId(), "a new request carries the watermark");
    third.finish();
    third.finish(); // idempotent
    fourth.finish();
    assertEquals(4, ids.acked());
  }

  // Defends S7 against a server that has no record of this client: until a mutating request
  // succeeded, every request carries watermark 0 (a watermark past a refused request would make
  // the server refuse every later one as expired).
  @Test
  void theWatermarkIsZeroUntilTheServerKnowsTheClient() {
    RequestIds ids = new RequestIds();
    ids.begin().join().finish();
    RequestIds.InFlight second = ids.begin().join();
    assertEquals(2, second.requestId());
    assertEquals(0, second.ackedRequestId());
    second.finish();
    ids.serverKnowsClient();
    assertEquals(2, ids.begin().join().ackedRequestId());
  }

  // Defends S7's in-flight window (the server keeps max_requests_in_flight outcomes per
  // client): a request beyond the window waits until the oldest one is answered, and waiters
  // are served in order.
  @Test
  void aRequestBeyondTheWindowWaitsForTheOldest() {
    RequestIds ids = new RequestIds();
    ids.setWindow(3);
    List<RequestIds.InFlight> running = new ArrayList<>();
    for (int i = 0; i < 3; i++) {
      running.add(ids.begin().join());
    }
    CompletableFuture<RequestIds.InFlight> fourth = ids.begin();
    CompletableFuture<RequestIds.InFlight> fifth = ids.begin();
    assertFalse(fourth.isDone(), "the window is full");
    running.get(1).finish();
    assertFalse(fourth.isDone(), "id 1 is still unanswered: the watermark did not move");
    running.get(0).finish();
    assertEquals(2, ids.acked());
    assertEquals(4, fourth.join().requestId());
    // Watermark 2 and window 3: ids up to 5 may be in flight.
    assertEquals(5, fifth.join().requestId());
    CompletableFuture<RequestIds.InFlight> sixth = ids.begin();
    assertFalse(sixth.isDone(), "6 is beyond watermark 2 + window 3");
    running.get(2).finish();
    assertEquals(3, ids.acked());
    assertEquals(6, sixth.join().requestId());
  }

  // Defends S7's window when the caller gives up while waiting for an id: the cancelled waiter
  // gets no id, and the next waiter gets the next id (no gap that would stall the watermark).
  @Test
  void aCancelledWaiterGetsNoId() {
    RequestIds ids = new RequestIds();
    ids.setWindow(1);
    RequestIds.InFlight first = ids.begin().join();
    CompletableFuture<RequestIds.InFlight> gaveUp = ids.begin();
    CompletableFuture<RequestIds.InFlight> next = ids.begin();
    gaveUp.cancel(false);
    first.finish();
    assertEquals(2, next.join().requestId());
    next.join().finish();
    assertEquals(2, ids.acked());
  }

  // Defends the published window: a larger window set later admits the waiters at once; a
  // window below 1 is taken as 1 (one request at a time, never none).
  @Test
  void settingTheWindowAdmitsWaiters() {
    RequestIds ids = new RequestIds();
    ids.setWindow(0);
    assertEquals(1, ids.window());
    RequestIds.InFlight first = ids.begin().join();
    CompletableFuture<RequestIds.InFlight> second = ids.begin();
    assertFalse(second.isDone());
    ids.setWindow(64);
    assertEquals(2, second.join().requestId());
    assertEquals(1, first.requestId());
  }
}
