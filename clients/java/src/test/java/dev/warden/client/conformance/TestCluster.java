package dev.warden.client.conformance;

import dev.warden.client.ClientOptions;
import dev.warden.client.TlsOptions;
import dev.warden.client.WardenClient;
import java.io.IOException;
import java.io.InputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyStore;
import java.security.cert.Certificate;
import java.security.cert.CertificateFactory;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import javax.net.ssl.SSLContext;
import javax.net.ssl.TrustManagerFactory;

/**
 * A real three-node cluster for the conformance scenarios (clients/conformance/README.md):
 * {@code warden server} processes from {@code WARDEN_BIN} (default: the workspace's {@code
 * target/debug/warden}) on 127.0.0.1, ports from :0, one temp dir. When the binary serves TLS
 * ({@code warden server --help} mentions {@code --certs-dir}) the run mints a CA, node
 * certificates and client certificates for root, alice and bob with {@code warden cert}, starts
 * the nodes with {@code --certs-dir}, and every client connects with mutual TLS; otherwise
 * plaintext. Everything waits with deadlines.
 */
public final class TestCluster implements AutoCloseable {
  private static final Set<Integer> GIVEN_PORTS = new HashSet<>();
  private static final Set<TestCluster> RUNNING = java.util.concurrent.ConcurrentHashMap
      .newKeySet();

  static {
    // A test JVM that exits early still takes its clusters down.
    Runtime.getRuntime().addShutdownHook(new Thread(() -> RUNNING.forEach(TestCluster::close)));
  }

  private final Path bin;
  private final Path dir;
  private final boolean tls;
  private final List<String> extra;
  private final Map<Integer, NodeProc> nodes = new TreeMap<>();
  private final List<WardenClient> clients = new ArrayList<>();
  private boolean closed;

  private static final class NodeProc {
    final int id;
    final int port;
    final int adminPort;
    final Path dataDir;
    final Path log;
    Process process;
    boolean started;

    NodeProc(int id, int port, int adminPort, Path dataDir, Path log) {
      this.id = id;
      this.port = port;
      this.adminPort = adminPort;
      this.dataDir = dataDir;
      this.log = log;
    }

    String addr() {
      return "127.0.0.1:" + port;
    }
  }

  /** The warden binary under test. */
  public static Path wardenBin() {
    String env = System.getenv("WARDEN_BIN");
    Path p = env != null && !env.isBlank() ? Path.of(env)
        : Path.of(System.getProperty("user.dir")).resolve("../../target/debug/warden");
    p = p.toAbsolutePath().normalize();
    if (!Files.isExecutable(p)) {
      throw new IllegalStateException("WARDEN_BIN: no executable warden binary at " + p
          + " (build it with `cargo build -p warden`, or set WARDEN_BIN)");
    }
    return p;
  }

  private static String serverHelp;

  /** {@code warden server --help} of the binary under test (read once). */
  public static synchronized String serverHelp() {
    if (serverHelp == null) {
      serverHelp = run(wardenBin(), List.of("server", "--help"), null).stdout;
    }
    return serverHelp;
  }

  /** True when the binary serves TLS ({@code --certs-dir} in {@code warden server --help}). */
  public static boolean binaryHasTls() {
    return serverHelp().contains("--certs-dir");
  }

  /** Starts {@code n} nodes with {@code extra} server flags and waits for a leader. */
  public static TestCluster start(int n, String... extra) {
    TestCluster c = new TestCluster(n, List.of(extra));
    RUNNING.add(c);
    try {
      c.mintIfTls();
      for (int id : c.nodes.keySet()) {
        c.spawn(id, true);
      }
      c.waitLeader(Duration.ofSeconds(30));
      return c;
    } catch (RuntimeException | Error e) {
      String logs = c.logTails();
      c.close();
      throw new IllegalStateException("cluster did not start: " + e.getMessage() + "\n" + logs,
          e);
    }
  }

  private TestCluster(int n, List<String> extra) {
    this.bin = wardenBin();
    this.tls = binaryHasTls();
    this.extra = extra;
    try {
      this.dir = Files.createTempDirectory("warden-java-conformance-");
    } catch (IOException e) {
      throw new IllegalStateException("temp dir", e);
    }
    for (int id = 1; id <= n; id++) {
      nodes.put(id, new NodeProc(id, freePort(), freePort(), dir.resolve("node-" + id),
          dir.resolve("node-" + id + ".log")));
    }
  }

  /**
   * A free loopback port this process has not handed out before (a port picked and released can
   * be handed out again by the next bind to :0).
   */
  public static int freePort() {
    while (true) {
      try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
        int port = s.getLocalPort();
        synchronized (GIVEN_PORTS) {
          if (GIVEN_PORTS.add(port)) {
            return port;
          }
        }
      } catch (IOException e) {
        throw new IllegalStateException("bind 127.0.0.1:0", e);
      }
    }
  }

  /** True when the nodes run with --certs-dir and clients use mutual TLS. */
  public boolean tls() {
    return tls;
  }

  /** The clients' certs dir (ca.crt, client.NAME.crt/.key), when {@link #tls()}. */
  public Path certsDir() {
    return dir.resolve("certs");
  }

  private Path caKey() {
    return dir.resolve("ca.key");
  }

  private void mintIfTls() {
    if (!tls) {
      return;
    }
    Path certs = certsDir();
    cert("create-ca", "--certs-dir", certs.toString(), "--ca-key", caKey().toString());
    for (int id : nodes.keySet()) {
      Path nodeDir = certs.resolve("node" + id);
      try {
        Files.createDirectories(nodeDir);
        Files.copy(certs.resolve("ca.crt"), nodeDir.resolve("ca.crt"));
      } catch (IOException e) {
        throw new IllegalStateException("node certs dir " + nodeDir, e);
      }
      cert("create-node", "--certs-dir", nodeDir.toString(), "--ca-key", caKey().toString(),
          "--id", String.valueOf(id), "127.0.0.1", "localhost");
    }
    for (String user : List.of("root", "alice", "bob")) {
      cert("create-client", user, "--certs-dir", certs.toString(), "--ca-key",
          caKey().toString());
    }
  }

  private void cert(String... args) {
    List<String> a = new ArrayList<>(List.of("cert"));
    a.addAll(List.of(args));
    Result r = run(bin, a, null);
    if (r.code != 0) {
      throw new IllegalStateException("warden " + String.join(" ", a) + " exited " + r.code
          + ": " + r.stderr);
    }
  }

  private String peers() {
    return nodes.values().stream().map(n -> n.id + "=" + n.addr())
        .collect(Collectors.joining(","));
  }

  private void spawn(int id, boolean first) {
    NodeProc n = nodes.get(id);
    List<String> cmd = new ArrayList<>(List.of(bin.toString(), "server",
        "--id", String.valueOf(id),
        "--listen", n.addr(),
        "--peers", peers(),
        "--data-dir", n.dataDir.toString(),
        "--admin-listen", "127.0.0.1:" + n.adminPort));
    if (first) {
      cmd.addAll(List.of("--initial-cluster-state", "new"));
    }
    if (tls) {
      cmd.addAll(List.of("--certs-dir", certsDir().resolve("node" + id).toString()));
    }
    cmd.addAll(extra);
    ProcessBuilder pb = new ProcessBuilder(cmd)
        .redirectErrorStream(true)
        .redirectOutput(ProcessBuilder.Redirect.appendTo(n.log.toFile()))
        .redirectInput(ProcessBuilder.Redirect.from(new java.io.File("/dev/null")));
    pb.environment().put("RUST_LOG", "info,openraft=warn");
    try {
      n.process = pb.start();
      n.started = true;
    } catch (IOException e) {
      throw new IllegalStateException("start node " + id, e);
    }
  }

  /** Node ids. */
  public Set<Integer> ids() {
    return nodes.keySet();
  }

  /** Node {@code id}'s client address. */
  public String addr(int id) {
    return nodes.get(id).addr();
  }

  /** Every node's client address. */
  public List<String> endpoints() {
    return nodes.values().stream().map(NodeProc::addr).toList();
  }

  /** The running nodes' addresses. */
  public List<String> runningEndpoints() {
    return nodes.values().stream().filter(n -> n.process != null && n.process.isAlive())
        .map(NodeProc::addr).toList();
  }

  /** The client options every test client uses (TLS as {@code user} when the cluster has it). */
  public ClientOptions options(String user) {
    ClientOptions.Builder b = ClientOptions.builder();
    if (tls) {
      b.tls(TlsOptions.fromCertsDir(certsDir(), user));
    }
    return b.build();
  }

  /** A client of the whole cluster as root; closed with the cluster. */
  public WardenClient client() {
    return clientAt(endpoints(), "root");
  }

  /** A client of the whole cluster as {@code user}; closed with the cluster. */
  public WardenClient clientAs(String user) {
    return clientAt(endpoints(), user);
  }

  /** A client of these endpoints as {@code user}; closed with the cluster. */
  public synchronized WardenClient clientAt(List<String> endpoints, String user) {
    WardenClient c = WardenClient.connect(endpoints, options(user));
    clients.add(c);
    return c;
  }

  /** A client with its own options (TLS as root added when the cluster has it). */
  public synchronized WardenClient clientAt(List<String> endpoints, ClientOptions.Builder b) {
    if (tls) {
      b.tls(TlsOptions.fromCertsDir(certsDir(), "root"));
    }
    WardenClient c = WardenClient.connect(endpoints, b.build());
    clients.add(c);
    return c;
  }

  /** A channel to one node, with the cluster's credentials (as root). */
  private io.grpc.ManagedChannel probeChannel(NodeProc n) {
    io.grpc.ChannelCredentials creds = tls
        ? TlsOptions.fromCertsDir(certsDir(), "root").credentials()
        : io.grpc.InsecureChannelCredentials.create();
    return io.grpc.Grpc.newChannelBuilderForAddress("127.0.0.1", n.port, creds).build();
  }

  /**
   * Waits until a running node says it leads and serves a linearizable read itself (a node
   * restarted a moment ago may still believe in its old term); returns its id. The probes go to
   * each node alone (no leader following).
   */
  public int waitLeader(Duration timeout) {
    long deadline = System.nanoTime() + timeout.toNanos();
    String last = "no node answered";
    while (System.nanoTime() < deadline) {
      for (NodeProc n : nodes.values()) {
        if (n.process == null || !n.process.isAlive()) {
          continue;
        }
        io.grpc.ManagedChannel ch = probeChannel(n);
        try {
          var stub = warden.v1.LockGrpc.newBlockingStub(ch)
              .withDeadlineAfter(500, TimeUnit.MILLISECONDS);
          var s = stub.clusterStatus(warden.v1.Warden.ClusterStatusRequest.getDefaultInstance());
          NodeProc leader = nodes.get((int) s.getLeaderId());
          if (s.getLeaderId() == n.id && leader != null && leader.process.isAlive()) {
            warden.v1.LockGrpc.newBlockingStub(ch).withDeadlineAfter(500, TimeUnit.MILLISECONDS)
                .status(warden.v1.Warden.StatusRequest.newBuilder()
                    .setResource("harness-leader-probe").build());
            return n.id;
          }
          last = "node " + n.id + " names leader " + s.getLeaderId();
        } catch (io.grpc.StatusRuntimeException e) {
          last = "node " + n.id + ": " + e.getStatus();
        } finally {
          ch.shutdownNow();
        }
      }
      pause(Duration.ofMillis(50));
    }
    throw new IllegalStateException("no leader within " + timeout + ": " + last);
  }

  /**
   * Waits (with a deadline) until node {@code id} answers calls itself: with its own view of a
   * cluster that has a leader, or, for a follower's read, with a redirect naming the leader.
   */
  public void waitServing(int id, Duration timeout) {
    long deadline = System.nanoTime() + timeout.toNanos();
    String last = "";
    NodeProc n = nodes.get(id);
    while (System.nanoTime() < deadline) {
      io.grpc.ManagedChannel ch = probeChannel(n);
      try {
        var s = warden.v1.LockGrpc.newBlockingStub(ch)
            .withDeadlineAfter(500, TimeUnit.MILLISECONDS)
            .clusterStatus(warden.v1.Warden.ClusterStatusRequest.getDefaultInstance());
        if (s.getLeaderId() != 0 && s.getNodeId() == id) {
          return;
        }
        last = "leader " + s.getLeaderId() + " node " + s.getNodeId();
      } catch (io.grpc.StatusRuntimeException e) {
        io.grpc.Metadata trailers = e.getTrailers();
        if (trailers != null && trailers.containsKey(io.grpc.Metadata.Key.of("warden-leader",
            io.grpc.Metadata.ASCII_STRING_MARSHALLER))) {
          return; // a follower that names the leader
        }
        last = e.getStatus().toString();
      } finally {
        ch.shutdownNow();
      }
      pause(Duration.ofMillis(50));
    }
    throw new IllegalStateException("node " + id + " not serving within " + timeout + ": " + last);
  }

  /**
   * A poll interval of a wait-with-deadline (never used to synchronise: every wait checks its
   * condition and gives up at its deadline).
   */
  public static void pause(Duration d) {
    try {
      Thread.sleep(d.toMillis());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted", e);
    }
  }

  /** SIGKILLs node {@code id} and reaps it. */
  public void kill(int id) {
    NodeProc n = nodes.get(id);
    if (n.process != null) {
      n.process.destroyForcibly();
      try {
        n.process.waitFor(10, TimeUnit.SECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
  }

  /** Starts node {@code id} again on its data dir. */
  public void restart(int id) {
    spawn(id, false);
  }

  /** HTTP status of node {@code id}'s {@code /readyz} (over TLS when the cluster has it). */
  public int readyz(int id) {
    NodeProc n = nodes.get(id);
    try {
      HttpClient.Builder b = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(1));
      String scheme = "http";
      if (tls) {
        b.sslContext(trustingCa());
        scheme = "https";
      }
      HttpResponse<String> r = b.build().send(HttpRequest.newBuilder(
              URI.create(scheme + "://127.0.0.1:" + n.adminPort + "/readyz"))
              .timeout(Duration.ofSeconds(1)).GET().build(),
          HttpResponse.BodyHandlers.ofString());
      return r.statusCode();
    } catch (IOException e) {
      return -1;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return -1;
    }
  }

  private SSLContext trustingCa() {
    try (InputStream in = Files.newInputStream(certsDir().resolve("ca.crt"))) {
      KeyStore ks = KeyStore.getInstance(KeyStore.getDefaultType());
      ks.load(null, null);
      int i = 0;
      for (Certificate c : CertificateFactory.getInstance("X.509").generateCertificates(in)) {
        ks.setCertificateEntry("ca" + i++, c);
      }
      TrustManagerFactory tmf = TrustManagerFactory.getInstance(
          TrustManagerFactory.getDefaultAlgorithm());
      tmf.init(ks);
      SSLContext ctx = SSLContext.getInstance("TLS");
      ctx.init(null, tmf.getTrustManagers(), null);
      return ctx;
    } catch (Exception e) {
      throw new IllegalStateException("CA trust store from " + certsDir(), e);
    }
  }

  /** What a CLI run printed and its exit code. */
  public record Result(int code, String stdout, String stderr) {}

  /**
   * Runs {@code warden ARGS --endpoints E} (as root with the certs dir when TLS); stdout is the
   * JSON of {@code --output json} when asked for.
   */
  public Result cli(String... args) {
    List<String> a = new ArrayList<>(List.of(args));
    a.addAll(List.of("--endpoints", String.join(",", endpoints())));
    if (tls) {
      a.addAll(List.of("--certs-dir", certsDir().toString(), "--user", "root"));
    }
    return run(bin, a, null);
  }

  private static Result run(Path bin, List<String> args, Path cwd) {
    List<String> cmd = new ArrayList<>();
    cmd.add(bin.toString());
    cmd.addAll(args);
    try {
      ProcessBuilder pb = new ProcessBuilder(cmd)
          .redirectInput(ProcessBuilder.Redirect.from(new java.io.File("/dev/null")));
      if (cwd != null) {
        pb.directory(cwd.toFile());
      }
      Path out = Files.createTempFile("warden-cli-", ".out");
      Path err = Files.createTempFile("warden-cli-", ".err");
      pb.redirectOutput(out.toFile()).redirectError(err.toFile());
      Process p = pb.start();
      if (!p.waitFor(60, TimeUnit.SECONDS)) {
        p.destroyForcibly();
        throw new IllegalStateException(String.join(" ", cmd) + ": no exit within 60 s");
      }
      Result r = new Result(p.exitValue(), Files.readString(out, StandardCharsets.UTF_8),
          Files.readString(err, StandardCharsets.UTF_8));
      Files.deleteIfExists(out);
      Files.deleteIfExists(err);
      return r;
    } catch (IOException e) {
      throw new IllegalStateException("run " + cmd, e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted", e);
    }
  }

  /** The leader's id, as {@link #waitLeader} finds it (deadline 30 s). */
  public int leader() {
    return waitLeader(Duration.ofSeconds(30));
  }

  /** The last lines of every node's log, for a failure message. */
  public String logTails() {
    StringBuilder sb = new StringBuilder();
    for (NodeProc n : nodes.values()) {
      try {
        if (Files.exists(n.log)) {
          List<String> lines = Files.readAllLines(n.log, StandardCharsets.UTF_8);
          sb.append("--- node ").append(n.id).append(" log (last 15 lines) ---\n");
          lines.subList(Math.max(0, lines.size() - 15), lines.size())
              .forEach(l -> sb.append(l).append('\n'));
        }
      } catch (IOException e) {
        sb.append("(no log for node ").append(n.id).append(")\n");
      }
    }
    return sb.toString();
  }

  /** Optional process handle of node {@code id} (for tests that check it is running). */
  public Optional<Process> process(int id) {
    return Optional.ofNullable(nodes.get(id).process);
  }

  @Override
  public synchronized void close() {
    if (closed) {
      return;
    }
    closed = true;
    RUNNING.remove(this);
    for (WardenClient c : clients) {
      try {
        c.close();
      } catch (RuntimeException e) {
        // closing: nothing to do
      }
    }
    for (NodeProc n : nodes.values()) {
      if (n.process != null) {
        n.process.destroyForcibly();
      }
    }
    for (NodeProc n : nodes.values()) {
      if (n.process != null) {
        try {
          n.process.waitFor(10, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
      }
    }
    try (var paths = Files.walk(dir)) {
      paths.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
    } catch (IOException e) {
      // best effort
    }
  }
}
