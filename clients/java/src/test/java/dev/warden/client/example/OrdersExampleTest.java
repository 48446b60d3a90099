package dev.warden.client.example;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.warden.client.conformance.SharedCluster;
import dev.warden.client.conformance.TestCluster;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

@ExtendWith(SharedCluster.class)
class OrdersExampleTest {

  // Defends the README's promise that its example runs as written against a real cluster (TLS
  // as root, as `warden dev` sets up): two runs write two lines whose tokens grow (S2), and the
  // lock is released afterwards (S6).
  @Test
  void theReadmeExampleWritesWithGrowingTokens(TestCluster cluster, @TempDir Path dir)
      throws Exception {
    String endpoints = String.join(",", cluster.endpoints());
    Path certs = cluster.tls() ? cluster.certsDir() : null;
    Path store = dir.resolve("orders.log");
    long first = OrdersExample.writeOrder(endpoints, certs, "root", store);
    long second = OrdersExample.writeOrder(endpoints, certs, "root", store);
    assertTrue(second > first, "tokens grow: " + first + " then " + second);
    assertEquals(List.of("order 42 token=" + first, "order 42 token=" + second),
        Files.readAllLines(store));
    assertTrue(cluster.client().status("orders").holder().isEmpty(), "released on close");
  }
}
