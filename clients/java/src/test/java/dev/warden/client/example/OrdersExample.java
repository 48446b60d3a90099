package dev.warden.client.example;

import dev.warden.client.ClientOptions;
import dev.warden.client.Lock;
import dev.warden.client.Session;
import dev.warden.client.TlsOptions;
import dev.warden.client.WardenClient;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;

/**
 * The README's example: takes the lock {@code orders} and writes with its fencing token. Run it
 * against {@code warden dev} with the two lines it prints exported ({@code WARDEN_ENDPOINTS},
 * {@code WARDEN_CERTS_DIR}); {@code WARDEN_USER} defaults to {@code root}.
 */
public final class OrdersExample {
  private OrdersExample() {}

  /** Locks "orders", appends one line carrying the fencing token to {@code store}. */
  public static long writeOrder(String endpoints, Path certsDir, String user, Path store)
      throws IOException {
    ClientOptions.Builder options = ClientOptions.builder();
    if (certsDir != null) { // mutual TLS as the CLI takes it: ca.crt, client.USER.crt/.key
      options.tls(TlsOptions.fromCertsDir(certsDir, user));
    }
    try (WardenClient client = WardenClient.connect(endpoints, options.build());
        Session session = client.session(Duration.ofSeconds(10)); // kept alive every TTL/3
        Lock lock = session.lock("orders", Duration.ofSeconds(30))) { // FIFO wait, 30 s at most
      lock.check(); // right before the write: throws SessionLostException once validUntil passed
      // The store keeps the highest token it saw and refuses lower ones (S2).
      Files.writeString(store, "order 42 token=" + lock.fencingToken() + "\n",
          StandardOpenOption.CREATE, StandardOpenOption.APPEND);
      return lock.fencingToken();
    } // close(): releases this exact grant, then revokes the session's lease
  }

  /** Entry point: {@code WARDEN_ENDPOINTS}, {@code WARDEN_CERTS_DIR}, {@code WARDEN_USER}. */
  public static void main(String[] args) throws IOException {
    String endpoints = System.getenv("WARDEN_ENDPOINTS");
    if (endpoints == null || endpoints.isBlank()) {
      System.err.println("set WARDEN_ENDPOINTS (and WARDEN_CERTS_DIR) as `warden dev` prints");
      System.exit(2);
    }
    String certs = System.getenv("WARDEN_CERTS_DIR");
    String user = System.getenv().getOrDefault("WARDEN_USER", "root");
    Path store = Path.of(args.length > 0 ? args[0] : "orders.log");
    long token = writeOrder(endpoints, certs == null ? null : Path.of(certs), user, store);
    System.out.println("wrote order 42 to " + store + " with fencing token " + token);
  }
}
