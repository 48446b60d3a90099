package dev.warden.client.internal;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;

/**
 * Request ids and the acknowledged watermark of one client (docs/semantics.md S7).
 *
 * <p>Each new mutating request takes the next id; its retries reuse it. The watermark ({@code
 * acked_request_id}) is the highest id such that it and every lower id have been answered: the
 * client will never send them again, so the server may forget their outcomes. A request counts
 * as answered when its call completes, with any result, or is abandoned. At most {@link
 * #window()} ids are handed out past the watermark: the server keeps that many outcomes per
 * client, and refuses as expired an id below the floor its evictions leave, so with more in
 * flight one slow request could arrive after its outcome slot was taken and be refused although
 * it never ran. A request beyond the window waits until the oldest one is answered, as a TCP
 * sender waits for its window.
 *
 * <p>The watermark sent stays 0 until a mutating request of this client has succeeded. A server
 * that has no record of a client refuses, as expired, any request whose watermark is above 0
 * (it cannot tell a client whose record it dropped from a new one), and a request refused before
 * it ran (an invalid argument) leaves no record: a watermark past it would make every later
 * request of the client fail. A lower watermark is always safe: it only lets the server keep
 * more outcomes, and the server keeps the newest ones, which are the requests in flight.
 */
public final class RequestIds {
  /**
   * The window when the server does not publish one: the server's per-client outcome cap (the
   * Rust client's {@code MAX_REQUESTS_AHEAD}).
   */
  public static final long DEFAULT_WINDOW = 64;

  private long lastIssued;
  private final TreeSet<Long> inFlight = new TreeSet<>();
  private final ArrayDeque<CompletableFuture<InFlight>> waiting = new ArrayDeque<>();
  private long window = DEFAULT_WINDOW;
  private boolean known;

  /** One request id in flight; {@link #finish()} marks it answered (idempotent). */
  public final class InFlight {
    private final long requestId;
    private final long ackedRequestId;
    private boolean finished;

    private InFlight(long requestId, long ackedRequestId) {
      this.requestId = requestId;
      this.ackedRequestId = ackedRequestId;
    }

    /** This request's id: never 0. */
    public long requestId() {
      return requestId;
    }

    /** The watermark sent with every attempt of this request (fixed at the start). */
    public long ackedRequestId() {
      return ackedRequestId;
    }

    /** Marks the request answered: the client will never send it again. */
    public void finish() {
      RequestIds.this.finish(this);
    }
  }

  /**
   * Notes that a mutating request succeeded: the server has a record of this client, so later
   * requests carry the real watermark.
   */
  public synchronized void serverKnowsClient() {
    known = true;
  }

  /** The number of ids that may be in flight past the watermark. */
  public synchronized long window() {
    return window;
  }

  /** Sets the window (the server's published {@code max_requests_in_flight}); at least 1. */
  public void setWindow(long newWindow) {
    List<Admitted> admitted;
    synchronized (this) {
      window = Math.max(1, newWindow);
      admitted = admit();
    }
    handOut(admitted);
  }

  /**
   * The next id, at once when it stays within the window past the watermark, else once the
   * oldest request in flight is answered. Waiters are served in order; a waiter whose future was
   * completed or cancelled by its caller is skipped and gets no id.
   */
  public CompletableFuture<InFlight> begin() {
    synchronized (this) {
      if (waiting.isEmpty() && hasRoom()) {
        return CompletableFuture.completedFuture(issue());
      }
      CompletableFuture<InFlight> slot = new CompletableFuture<>();
      waiting.add(slot);
      return slot;
    }
  }

  private boolean hasRoom() {
    return lastIssued - acked() < window;
  }

  private InFlight issue() {
    long acked = acked();
    lastIssued++;
    inFlight.add(lastIssued);
    assert lastIssued - acked <= window : "a request id beyond the window";
    return new InFlight(lastIssued, known ? acked : 0);
  }

  private record Admitted(CompletableFuture<InFlight> slot, InFlight id) {}

  /** Issues ids to waiters while there is room (under the lock). */
  private List<Admitted> admit() {
    List<Admitted> admitted = new ArrayList<>();
    while (!waiting.isEmpty() && hasRoom()) {
      CompletableFuture<InFlight> next = waiting.poll();
      if (!next.isDone()) {
        admitted.add(new Admitted(next, issue()));
      }
    }
    return admitted;
  }

  /** Completes the admitted waiters outside the lock; an id nobody took is answered at once. */
  private void handOut(List<Admitted> admitted) {
    for (Admitted a : admitted) {
      if (!a.slot.complete(a.id)) {
        a.id.finish();
      }
    }
  }

  private void finish(InFlight id) {
    List<Admitted> admitted;
    synchronized (this) {
      if (id.finished) {
        return;
      }
      id.finished = true;
      inFlight.remove(id.requestId);
      admitted = admit();
    }
    handOut(admitted);
  }

  /** The highest id such that it and every lower id were answered. */
  public synchronized long acked() {
    return inFlight.isEmpty() ? lastIssued : inFlight.first() - 1;
  }
}
