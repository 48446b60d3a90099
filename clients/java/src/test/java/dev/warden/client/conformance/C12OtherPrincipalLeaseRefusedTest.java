package dev.warden.client.conformance;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.warden.client.AcquireOptions;
import dev.warden.client.ErrorReason;
import dev.warden.client.Lock;
import dev.warden.client.LockStatus;
import dev.warden.client.PermissionDeniedException;
import dev.warden.client.Session;
import dev.warden.client.WardenClient;
import io.grpc.Status;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.function.Executable;

@ExtendWith(SharedCluster.class)
class C12OtherPrincipalLeaseRefusedTest {

  // conformance: C12-other-principal-lease-refused
  // Defends lease ownership (docs/security.md; etcd PR 8031): bob, with alice's exact lease id
  // and token, cannot release, renew, keep alive, revoke or acquire on alice's lease; each call
  // is a typed permission-denied error naming the lease, and alice still holds.
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

      refused(lease, () -> bob.release("c12-r", lease, token));
      refused(lease, () -> bob.renew(lease));
      refused(lease, () -> bob.keepAlive(lease));
      refused(lease, () -> bob.revoke(lease));
      refused(lease, () -> bob.acquire("c12-other", AcquireOptions.onLease(lease)));

      LockStatus status = alice.status("c12-r");
      assertEquals(lease, status.holder().orElseThrow().leaseId());
      assertEquals(token, status.holder().orElseThrow().fencingToken());
      held.check();
    }
  }

  private static void refused(long lease, Executable call) {
    PermissionDeniedException e = assertThrows(PermissionDeniedException.class, call);
    // The type comes from the status's ErrorInfo reason, not from the text.
    assertEquals(ErrorReason.PERMISSION_DENIED, e.reason(), "ErrorInfo reason: " + e);
    assertEquals(Status.Code.PERMISSION_DENIED, e.code());
    // The server names the lease in its message only (its ErrorInfo carries no metadata): this
    // checks what an operator reads, nothing is decided from it.
    assertTrue(e.getMessage().contains(String.valueOf(lease)),
        "the refusal names lease " + lease + ": " + e.getMessage());
  }

}
