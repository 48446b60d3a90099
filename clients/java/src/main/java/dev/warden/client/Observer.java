package dev.warden.client;

import java.time.Duration;
import java.util.ArrayDeque;
import java.util.Optional;

/**
 * An election's leaders in commit order (etcd {@code Observe}): the current one first (if any),
 * then each new leader or new value. Several very short terms may pass unseen between two
 * reports; the tokens of reported leaders always grow. It watches the election key from now,
 * then reads it (a change between the two is seen as an event and read again; duplicates are
 * dropped). Not thread-safe: one consumer. No session needed.
 */
public final class Observer implements AutoCloseable {
  private final WardenClient client;
  private final String name;
  private final Watcher watcher;
  private final ArrayDeque<LeaderInfo> pending = new ArrayDeque<>();
  private LeaderInfo last;

  Observer(WardenClient client, String name) {
    this.client = client;
    this.name = name;
    this.watcher = client.watch(WatchTarget.resource(client.electionPrefix() + name), 0);
    refresh();
  }

  private void refresh() {
    Optional<LeaderInfo> now = client.electionLeader(name);
    if (now.isPresent() && !now.get().equals(last)
        && (last == null || now.get().fencingToken() >= last.fencingToken())) {
      last = now.get();
      pending.add(now.get());
    }
  }

  /** The next leader (or new value), or null if none within {@code timeout}. */
  public LeaderInfo next(Duration timeout) {
    long deadline = System.nanoTime() + timeout.toNanos();
    while (true) {
      LeaderInfo ready = pending.poll();
      if (ready != null) {
        return ready;
      }
      long left = deadline - System.nanoTime();
      if (left <= 0) {
        return null;
      }
      WatchEvent event = watcher.next(Duration.ofNanos(left));
      if (event == null) {
        return null;
      }
      if (event.event().equals("granted") || event.event().equals("proclaimed")) {
        refresh();
      }
    }
  }

  @Override
  public void close() {
    watcher.close();
  }
}
