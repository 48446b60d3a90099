package dev.warden.client.internal;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * Where the next attempt of one call goes, and how long to pause first (pure: no IO, no
 * clock).
 *
 * <p>Rules (the same as the Rust client's): start at the cached leader, else the first endpoint;
 * after a failure that names a leader ({@code warden-leader}), go there at once, at most as many
 * hops in a row as there are endpoints (two confused nodes cannot bounce a call forever), and
 * never to a node that failed this call without answering (a frozen ex-leader would cost an
 * attempt timeout per hint); otherwise go to the next endpoint at once, and after a whole round
 * of endpoints failed, pause: 25 ms doubling, capped at {@code backoffCap}.
 */
public final class CallPlan {
  /** The first pause, after the first full round of failures. */
  public static final Duration BACKOFF_BASE = Duration.ofMillis(25);

  private final List<Endpoint> endpoints;
  private final Duration backoffCap;
  private int cursor;
  private int failuresInRound;
  private int rounds;
  private int hopsInARow;
  private final List<Endpoint> tried = new ArrayList<>();
  private final List<Endpoint> silent = new ArrayList<>();
  private Endpoint first;

  /** The next target and the pause before it. */
  public record Next(Duration pause, Endpoint target) {}

  /** A plan over {@code endpoints} (non-empty), starting at {@code cachedLeader} when known. */
  public CallPlan(List<Endpoint> endpoints, Optional<Endpoint> cachedLeader, Duration backoffCap) {
    if (endpoints.isEmpty()) {
      throw new IllegalArgumentException("endpoints: at least one host:port is required");
    }
    this.endpoints = List.copyOf(endpoints);
    this.backoffCap = backoffCap;
    if (cachedLeader.isPresent()) {
      Endpoint leader = cachedLeader.get();
      int i = this.endpoints.indexOf(leader);
      if (i >= 0) {
        cursor = (i + 1) % this.endpoints.size();
      }
      first = leader;
    } else {
      cursor = 1 % this.endpoints.size();
      first = this.endpoints.get(0);
    }
    noteTried(first);
  }

  /** The first target. */
  public Endpoint first() {
    return first;
  }

  private void noteTried(Endpoint target) {
    if (!tried.contains(target)) {
      tried.add(target);
    }
  }

  /**
   * After {@code failed} failed, with {@code hint} naming the leader if it did; {@code answered}:
   * the node itself replied (e.g. "not the leader"), as opposed to a timeout or a refused
   * connection.
   */
  public Next afterFailure(Endpoint failed, Optional<Endpoint> hint, boolean answered) {
    failuresInRound++;
    if (answered) {
      silent.remove(failed);
    } else if (!silent.contains(failed)) {
      silent.add(failed);
    }
    if (hint.isPresent()
        && !hint.get().equals(failed)
        && !silent.contains(hint.get())
        && hopsInARow < endpoints.size()) {
      hopsInARow++;
      noteTried(hint.get());
      return new Next(Duration.ZERO, hint.get());
    }
    hopsInARow = 0;
    Endpoint next = endpoints.get(cursor);
    cursor = (cursor + 1) % endpoints.size();
    if (next.equals(failed) && endpoints.size() > 1) {
      next = endpoints.get(cursor);
      cursor = (cursor + 1) % endpoints.size();
    }
    Duration pause = Duration.ZERO;
    if (failuresInRound >= endpoints.size()) {
      failuresInRound = 0;
      pause = backoff(rounds, backoffCap);
      rounds = rounds == Integer.MAX_VALUE ? rounds : rounds + 1;
    }
    noteTried(next);
    return new Next(pause, next);
  }

  /** Distinct addresses tried so far, in order of first attempt. */
  public List<Endpoint> tried() {
    return List.copyOf(tried);
  }

  /** The pause after {@code round} completed rounds: 25 ms doubling, at most {@code cap}. */
  public static Duration backoff(int round, Duration cap) {
    int shift = Math.min(Math.max(round, 0), 16);
    Duration pause = BACKOFF_BASE.multipliedBy(1L << shift);
    return pause.compareTo(cap) > 0 ? cap : pause;
  }
}
