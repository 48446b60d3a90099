package dev.warden.client.conformance;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.warden.client.CompactedException;
import dev.warden.client.ErrorReason;
import dev.warden.client.Lock;
import dev.warden.client.Session;
import dev.warden.client.WardenClient;
import dev.warden.client.WatchEvent;
import dev.warden.client.WatchTarget;
import dev.warden.client.Watcher;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

@ExtendWith(SharedCluster.class)
class C09WatchEveryGrantInOrderTest {

  // conformance: C09-watch-every-grant-in-order
  // Defends the watch contract (docs/operations.md "Watch"): every grant under the prefix is
  // seen, in commit order, with growing tokens, each followed by its release.
  @Test
  void theWatcherSeesEveryGrantInOrder(TestCluster cluster) {
    WardenClient client = cluster.client();
    List<Lock> taken = new ArrayList<>();
    try (Watcher watcher = client.watch(WatchTarget.prefix("c09-"), 0);
        Session s = client.session(Duration.ofSeconds(10))) {
      for (String r : List.of("c09-a", "c09-a", "c09-a", "c09-b")) {
        Lock l = s.lock(r);
        taken.add(l);
        l.release();
      }
      List<WatchEvent> seen = new ArrayList<>();
      long grants = 0;
      long releases = 0;
      while (grants < 4 || releases < 4) {
        WatchEvent e = watcher.next(Duration.ofSeconds(10));
        assertNotNull(e, "events so far: " + seen);
        // The watch starts at index 0: the other test of this class may have run first on
        // the same cluster, and its c09-filler events come before this test's.
        if (!e.resource().equals("c09-a") && !e.resource().equals("c09-b")) {
          continue;
        }
        seen.add(e);
        if (e.event().equals("granted")) {
          grants++;
        } else if (e.event().equals("released")) {
          releases++;
        }
      }
      List<WatchEvent> locks = seen.stream()
          .filter(e -> e.event().equals("granted") || e.event().equals("released")).toList();
      assertEquals(8, locks.size(), "granted/released events: " + locks);
      long lastIndex = 0;
      long lastToken = 0;
      for (int i = 0; i < 4; i++) {
        WatchEvent g = locks.get(2 * i);
        WatchEvent r = locks.get(2 * i + 1);
        Lock expected = taken.get(i);
        assertEquals("granted", g.event(), "event " + (2 * i) + " of " + locks);
        assertEquals(expected.resource(), g.resource());
        assertEquals(expected.fencingToken(), g.fencingToken());
        assertEquals(s.leaseId(), g.leaseId());
        assertTrue(g.index() > lastIndex, "commit order: " + locks);
        assertTrue(g.fencingToken() > lastToken, "growing tokens: " + locks);
        assertEquals("released", r.event(), "each grant is followed by its release: " + locks);
        assertEquals(g.fencingToken(), r.fencingToken());
        assertEquals(g.resource(), r.resource());
        assertTrue(r.index() > g.index());
        lastIndex = r.index();
        lastToken = g.fencingToken();
      }
    }
  }

  // conformance: C09-watch-every-grant-in-order
  // Defends the watch contract's compaction rule: a start index below a node's retained window
  // (index 1 on a node restarted from its snapshot) is a typed CompactedException naming the
  // oldest retained index, and a watch from that index is served.
  @Test
  void aStartBelowTheWindowIsCompacted(TestCluster cluster) {
    WardenClient client = cluster.client();
    // Enough entries that every node has taken a snapshot (the shared cluster snapshots every
    // 20 entries).
    try (Session s = client.session(Duration.ofSeconds(10))) {
      for (int i = 0; i < 30; i++) {
        s.tryLock("c09-filler").release();
      }
    }
    int leader = cluster.leader();
    int follower = cluster.ids().stream().filter(id -> id != leader).findFirst().orElseThrow();
    cluster.kill(follower);
    cluster.restart(follower);
    cluster.waitServing(follower, Duration.ofSeconds(20));

    WardenClient one = cluster.clientAt(List.of(cluster.addr(follower)), "root");
    CompactedException compacted = assertThrows(CompactedException.class,
        () -> one.watch(WatchTarget.prefix("c09-"), 1));
    assertEquals(ErrorReason.COMPACTED, compacted.reason());
    assertTrue(compacted.oldestIndex() > 1, "oldest retained index " + compacted.oldestIndex());
    try (Watcher from = one.watch(WatchTarget.prefix("c09-"), compacted.oldestIndex())) {
      assertTrue(from.resumeIndex() >= compacted.oldestIndex());
    }
  }
}
