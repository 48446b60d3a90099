package dev.warden.client.conformance;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.warden.client.AcquireOptions;
import dev.warden.client.Lock;
import dev.warden.client.LockStatus;
import dev.warden.client.WardenException;
import dev.warden.client.RenewResult;
import dev.warden.client.Session;
import dev.warden.client.WardenClient;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

@ExtendWith(SharedCluster.class)
class C12OtherPrincipalLeaseRefusedTest {

  // conformance: C12-other-principal-lease-refused
  // Defends lease ownership and that a lease id is no liveness oracle (docs/security.md; etcd PR
  // 8031): bob, with alice's exact lease id and token, gets for release, renew, keep alive,
  // revoke and an acquire on alice's lease exactly the answer the same call gets on a lease that
  // does not exist (release and acquire: not found), and alice still holds.
  @Test
  void anotherPrincipalCannotTouchALease(TestCluster cluster) {
    assertTrue(cluster.tls(),
        "the server has no TLS or permissions (no --certs-dir in `warden server --help`)");
    for (String user : new String[] {"alice", "bob"}) {
      TestCluster.Result role = cluster.cli("role", "grant", "c12-lockers-" + user, "--prefix",
          "c12-", "--permission", "lock", "--output", "json");
      assertEquals(0, role.code(), role.stderr());
      TestCluster.Result grant = cluster.cli("user", "grant-role", user, "c12-lockers-" + user,
          "--output", "json");
      assertEquals(0, grant.code(), grant.stderr());
    }
    WardenClient alice = cluster.clientAs("alice");
    WardenClient bob = cluster.clientAs("bob");
    try (Session sa = alice.session(Duration.ofSeconds(10))) {
      Lock held = sa.tryLock("c12-r");
      long lease = sa.leaseId();
      long token = held.fencingToken();
      long absent = lease + 1_000_000;

      String release = same("release", lease, absent, id -> bob.release("c12-r", id, token));
      assertTrue(release.startsWith("NotFoundException"), release);
      // (a renew's result without its send time, which differs per call)
      same("renew", lease, absent, id -> {
        RenewResult r = bob.renew(id);
        return r.live() + " " + r.ttlMs();
      });
      same("keep-alive", lease, absent, id -> {
        RenewResult r = bob.keepAlive(id);
        return r.live() + " " + r.ttlMs();
      });
      same("revoke", lease, absent, id -> {
        bob.revoke(id);
        return "revoked";
      });
      String acquire = same("acquire", lease, absent,
          id -> bob.acquire("c12-other", AcquireOptions.onLease(id)));
      assertTrue(acquire.startsWith("NotFoundException")
          || acquire.startsWith("LeaseNotFoundException"), acquire);

      LockStatus status = alice.status("c12-r");
      assertEquals(lease, status.holder().orElseThrow().leaseId());
      assertEquals(token, status.holder().orElseThrow().fencingToken());
      held.check();
    }
  }

  /** A call on a lease id. */
  private interface OnLease {
    Object call(long leaseId) throws Exception;
  }

  /** The answer as text, the id asked about written as ID. */
  private static String answer(OnLease call, long leaseId) {
    String text;
    try {
      text = "ok " + call.call(leaseId);
    } catch (WardenException e) {
      text = e.getClass().getSimpleName() + " " + e.reason() + " " + e.getMessage();
    } catch (Exception e) {
      text = "untyped " + e;
    }
    return text.replace(String.valueOf(leaseId), "ID");
  }

  /** Asserts alice's lease and a lease that does not exist answer alike; returns the answer. */
  private static String same(String what, long lease, long absent, OnLease call) {
    String owned = answer(call, lease);
    assertEquals(answer(call, absent), owned, what);
    return owned;
  }
}
