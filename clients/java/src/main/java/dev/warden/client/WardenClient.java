package dev.warden.client;

import dev.warden.client.internal.Acquisition;
import dev.warden.client.internal.Attempts;
import dev.warden.client.internal.Endpoint;
import dev.warden.client.internal.Engine;
import dev.warden.client.internal.Failure;
import dev.warden.client.internal.KeepAliveStream;
import dev.warden.client.internal.RequestIds;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import warden.v1.AdminGrpc;
import warden.v1.AdminOuterClass;
import warden.v1.LeaseGrpc;
import warden.v1.LeaseOuterClass;
import warden.v1.LockGrpc;
import warden.v1.Warden;

/**
 * A client of a Warden cluster. Thread-safe; one per process is enough (it shares connections,
 * the cached leader, the client id and the request-id counter between all calls, sessions and
 * threads). {@link #close()} ends its connections.
 *
 * <pre>{@code
 * try (WardenClient client = WardenClient.connect(List.of("10.0.0.1:7001", "10.0.0.2:7001"));
 *      Session session = client.session(Duration.ofSeconds(10));
 *      Lock lock = session.lock("orders")) {
 *   lock.check();
 *   store.write(key, value, lock.fencingToken());
 * }
 * }</pre>
 *
 * <p><b>Leader following.</b> Every call goes to the last known leader first. A node that is not
 * the leader answers {@code UNAVAILABLE} naming the leader in {@code warden-leader}; the call is
 * re-sent there at once. Otherwise the next endpoint is tried at once, and after a whole round
 * the client pauses (25 ms doubling, capped by {@link ClientOptions#backoffCap()}). Each attempt
 * waits at most {@link ClientOptions#attemptTimeout()}, the whole call at most {@link
 * ClientOptions#deadline()} (a waiting acquire: its wait plus that); then it fails with {@link
 * NoQuorumException} or {@link UnavailableException} naming the addresses tried (L3).
 *
 * <p><b>Exactly once (docs/semantics.md S7).</b> Every mutating call carries this client's id (random,
 * never 0), a request id (one more per new request; its retries reuse it) and the acknowledged
 * watermark (every id at or below it has been answered). At most the server's window of
 * requests (64, or the {@code max_requests_in_flight} the server publishes) are in flight past
 * the watermark; a further request waits for the oldest to be answered. So a retry after a lost
 * reply or a leader change never acts twice.
 *
 * <p>Every method has an async form returning a {@link CompletableFuture} (failing with the
 * typed {@link WardenException}) and a blocking form that throws it.
 */
public final class WardenClient implements AutoCloseable {
  /** The election key prefix when the server does not publish one. */
  public static final String DEFAULT_ELECTION_PREFIX = "\u0001election/";

  private final Engine engine;
  private volatile String electionPrefix;

  private WardenClient(Engine engine) {
    this.engine = engine;
    // The server publishes the window (ClusterStatus.max_requests_in_flight): learn it before
    // more than one request is in flight; 0 (a server that does not publish it) means the
    // default.
    engine.requestIds().setWindow(1);
    clusterStatusRaw().whenComplete((status, error) -> {
      long window = RequestIds.DEFAULT_WINDOW;
      if (error == null && status.getMaxRequestsInFlight() > 0) {
        window = status.getMaxRequestsInFlight();
      }
      engine.requestIds().setWindow(window);
    });
  }

  /**
   * A client for the cluster reachable at {@code endpoints} ({@code host:port}, any members: the
   * leader is found by following hints). No connection is made here.
   *
   * @throws InvalidEndpointException when an endpoint is not host:port
   * @throws InvalidArgumentException when the list is empty
   * @throws TlsConfigException when a TLS file cannot be used (naming it)
   */
  public static WardenClient connect(List<String> endpoints, ClientOptions options) {
    return new WardenClient(new Engine(endpoints, options));
  }

  /** {@link #connect(List, ClientOptions)} with the default options (plaintext). */
  public static WardenClient connect(List<String> endpoints) {
    return connect(endpoints, ClientOptions.defaults());
  }

  /** {@link #connect(List, ClientOptions)} with a comma-separated list, as the CLI takes it. */
  public static WardenClient connect(String endpoints, ClientOptions options) {
    return connect(Arrays.stream(endpoints.split(",")).map(String::trim)
        .filter(s -> !s.isEmpty()).toList(), options);
  }

  Engine engine() {
    return engine;
  }

  /** This client's id, sent with every mutating request (S7). */
  public long clientId() {
    return engine.clientId();
  }

  /** The endpoints, canonical host:port, without duplicates. */
  public List<String> endpoints() {
    return engine.endpoints().stream().map(Endpoint::toString).toList();
  }

  /** The address that last served a call (the leader, as far as this client knows). */
  public Optional<String> cachedLeader() {
    return engine.cachedLeader().map(Endpoint::toString);
  }

  /** The options in force. */
  public ClientOptions options() {
    return engine.options();
  }

  // ---- Sessions ----

  /**
   * Opens a session with this TTL (1 s ..= 1 h) on {@link SessionClock#SYSTEM}; see {@link
   * Session}.
   *
   * @throws InvalidArgumentException naming {@code ttl_ms} for a TTL out of bounds
   */
  public Session session(Duration ttl) {
    return Blocking.await(sessionAsync(SessionOptions.ofTtl(ttl)), "open session");
  }

  /** {@link #session(Duration)} with explicit options. */
  public Session session(SessionOptions options) {
    return Blocking.await(sessionAsync(options), "open session");
  }

  /** {@link #session(SessionOptions)} as a future. */
  public CompletableFuture<Session> sessionAsync(SessionOptions options) {
    return Session.open(this, options);
  }

  // ---- Lock calls ----

  /**
   * Acquires {@code resource} on a new lease or an existing one, waiting up to {@code
   * options.waitTimeout()} in the server's queue. While queued on a new lease, that lease is renewed
   * every TTL/3 (a waiter whose lease dies is removed, S8); keep-alive stops with the answer:
   * renew a granted new lease yourself, or use a {@link Session}. If the stream drops mid-wait
   * (a leader change drops every stream), the same request (same request id) is re-sent to the
   * new leader, which re-attaches it to its waiter.
   *
   * @return the final answer: {@link AcquireResult.Granted} or {@link AcquireResult.NotGranted}
   *     (held, lock-delay, wait timeout); fails with {@link InvalidArgumentException} naming the
   *     field, {@link LeaseNotFoundException} for an unknown lease, {@link
   *     ClusterUnavailableException} when the deadline ran out
   */
  public CompletableFuture<AcquireResult> acquireAsync(String resource, AcquireOptions options) {
    Warden.AcquireRequest.Builder request = Warden.AcquireRequest.newBuilder()
        .setResource(resource)
        .setWaitTimeoutMs(millis(options.waitTimeout()))
        .setLockDelayMs(millis(options.lockDelay()));
    if (options.leaseId() != 0) {
      request.setLeaseId(options.leaseId());
    } else {
      request.setTtlMs(millis(options.ttl()));
    }
    Duration wait = options.waitTimeout() == null ? Duration.ZERO : options.waitTimeout();
    Acquisition a = new Acquisition(engine, request.build(), wait, q -> { }, true);
    CompletableFuture<AcquireResult> out = a.start().thenApply(m -> toResult(m, a.sentAtNanos()));
    out.whenComplete((r, e) -> {
      if (out.isCancelled()) {
        a.abandon();
      }
    });
    return out;
  }

  /** {@link #acquireAsync}, waiting for the answer. */
  public AcquireResult acquire(String resource, AcquireOptions options) {
    return Blocking.await(acquireAsync(resource, options), "acquire " + resource);
  }

  private static AcquireResult toResult(Warden.AcquireResponse m, long sentAt) {
    if (m.hasGranted()) {
      Warden.Granted g = m.getGranted();
      return new AcquireResult.Granted(g.getResource(), g.getLeaseId(), g.getFencingToken(),
          g.getTtlMs(), g.getLogIndex(), sentAt);
    }
    Warden.NotGranted n = m.getNotGranted();
    return new AcquireResult.NotGranted(n.getResource(), NotGrantedReason.of(n.getReason()),
        n.getReason(), n.getHolderLeaseId());
  }

  /**
   * Releases the exact grant ({@code resource}, {@code leaseId}, {@code fencingToken}): a late
   * release carrying an old token never frees a newer grant (S6). Token 0: the lease's current
   * grant of the resource.
   *
   * @return fails with {@link NotFoundException} / {@link FailedPreconditionException} when the
   *     grant has ended (another principal's lease answers as one that does not exist)
   */
  public CompletableFuture<ReleaseResult> releaseAsync(String resource, long leaseId,
      long fencingToken) {
    return engine.withRequestId(id -> engine.unary(LockGrpc.getReleaseMethod(),
        Warden.ReleaseRequest.newBuilder()
            .setHeader(engine.header(id))
            .setResource(resource)
            .setLeaseId(leaseId)
            .setFencingToken(fencingToken)
            .build()))
        .thenApply(r -> new ReleaseResult(r.getResource(), r.getLeaseId(), r.getReleased()));
  }

  /** Overload kept in (lease, resource, token) order for {@link Lock}. */
  CompletableFuture<ReleaseResult> releaseAsync(long leaseId, String resource,
      long fencingToken) {
    return releaseAsync(resource, leaseId, fencingToken);
  }

  /** {@link #releaseAsync(String, long, long)}, waiting for the commit. */
  public ReleaseResult release(String resource, long leaseId, long fencingToken) {
    return Blocking.await(releaseAsync(resource, leaseId, fencingToken), "release " + resource);
  }

  /**
   * Revokes a lease: every lock it holds is released (cleanly: no lock-delay) and its waits are
   * removed, in one committed entry.
   *
   * @return fails with {@link LeaseNotFoundException} if the lease is not live
   */
  public CompletableFuture<Void> revokeAsync(long leaseId) {
    return engine.withRequestId(id -> engine.unary(LockGrpc.getLeaseRevokeMethod(),
        Warden.LeaseRevokeRequest.newBuilder()
            .setHeader(engine.header(id))
            .setLeaseId(leaseId)
            .build()))
        .thenApply(r -> null);
  }

  /** {@link #revokeAsync}, waiting for the commit. */
  public void revoke(long leaseId) {
    Blocking.await(revokeAsync(leaseId), "revoke lease " + leaseId);
  }

  /**
   * Creates a lease with no lock (TTL 1 s ..= 1 h); prefer {@link #session}, which keeps it
   * alive.
   */
  public CompletableFuture<LeaseGrant> leaseGrantAsync(Duration ttl) {
    return engine.withRequestId(id -> engine.unary(LeaseGrpc.getLeaseGrantMethod(),
        LeaseOuterClass.LeaseGrantRequest.newBuilder()
            .setHeader(engine.header(id))
            .setTtlMs(millis(ttl))
            .build()))
        .thenApply(r -> new LeaseGrant(r.getLeaseId(), r.getTtlMs()));
  }

  /**
   * Renews a lease once with {@code Lock/Renew}: its countdown restarts with its full TTL once
   * the renew committed (S4). Each attempt is a new renew with a new sequence number, which the
   * server echoes; the result names the acknowledged attempt's send time.
   *
   * @return fails with {@link LeaseNotFoundException} when the lease is gone (it cannot be
   *     renewed back to life, S6; another principal's lease answers the same, as one that does
   *     not exist)
   */
  public CompletableFuture<RenewResult> renewAsync(long leaseId) {
    return engine.call(LockGrpc.getRenewMethod().getFullMethodName(), node -> {
      long sequence = engine.nextSequence();
      long sentAt = System.nanoTime();
      return Attempts.unary(node.channel(), LockGrpc.getRenewMethod(),
          Warden.RenewRequest.newBuilder().setLeaseId(leaseId).setClientId(clientId())
              .setSequence(sequence).build(),
          engine.options().attemptTimeout())
          .thenApply(r -> {
            if (r.getSequence() != sequence) {
              throw new TransportException("renew reply carries sequence " + r.getSequence()
                  + " but the attempt sent " + sequence, null, "", java.util.Map.of());
            }
            return new RenewResult(r.getLeaseId(), r.getTtlMs(), true, sentAt);
          });
    });
  }

  /** {@link #renewAsync}, waiting for the acknowledgement. */
  public RenewResult renew(long leaseId) {
    return Blocking.await(renewAsync(leaseId), "renew lease " + leaseId);
  }

  /**
   * One keep-alive of a lease over a {@code Lease/LeaseKeepAlive} stream (what a {@link
   * Session} sends every TTL/3). A lease that is not live answers {@code live = false}.
   *
   * @return {@code live = false} also for another principal's lease (no lease id tells whether
   *     it is live)
   */
  public CompletableFuture<RenewResult> keepAliveAsync(long leaseId) {
    KeepAliveStream stream = new KeepAliveStream(engine, leaseId);
    CompletableFuture<KeepAliveStream.Ack> ack = engine.call(
        LeaseGrpc.getLeaseKeepAliveMethod().getFullMethodName(),
        node -> stream.attempt(node, System::nanoTime));
    return ack.whenComplete((v, e) -> stream.close())
        .thenApply(a -> new RenewResult(a.reply().getLeaseId(), a.reply().getTtlMs(),
            a.reply().getLive(), a.sentAtNanos()));
  }

  /** {@link #keepAliveAsync}, waiting for the acknowledgement. */
  public RenewResult keepAlive(long leaseId) {
    return Blocking.await(keepAliveAsync(leaseId), "keep-alive of lease " + leaseId);
  }

  /**
   * A lease's TTL, time left, locks and waits (linearizable).
   *
   * @return fails with {@link LeaseNotFoundException} if it is not live
   */
  public CompletableFuture<LeaseInfo> leaseTimeToLiveAsync(long leaseId) {
    return engine.unary(LeaseGrpc.getLeaseTimeToLiveMethod(),
        LeaseOuterClass.LeaseTimeToLiveRequest.newBuilder().setLeaseId(leaseId).build())
        .thenApply(r -> new LeaseInfo(r.getLeaseId(), r.getTtlMs(), r.getTtlRemainingMs(),
            List.copyOf(r.getLocksList()), List.copyOf(r.getWaitsList()), r.getGraced()));
  }

  /** {@link #leaseTimeToLiveAsync}, waiting for the answer. */
  public LeaseInfo leaseTimeToLive(long leaseId) {
    return Blocking.await(leaseTimeToLiveAsync(leaseId), "lease ttl " + leaseId);
  }

  /** A resource's holders, kind and queue length (linearizable). */
  public CompletableFuture<LockStatus> statusAsync(String resource) {
    return engine.unary(LockGrpc.getStatusMethod(),
        Warden.StatusRequest.newBuilder().setResource(resource).build())
        .thenApply(r -> new LockStatus(r.getResource(),
            r.hasHolder() ? Optional.of(LockStatus.Holder.of(r.getHolder())) : Optional.empty(),
            r.getWaiters(), r.getReadIndex(), r.getKind(), r.getLimit(),
            r.getHoldersList().stream().map(LockStatus.Holder::of).toList()));
  }

  /** {@link #statusAsync}, waiting for the answer. */
  public LockStatus status(String resource) {
    return Blocking.await(statusAsync(resource), "status " + resource);
  }

  /** Every resource under {@code prefix} with its holder and waiters in queue order. */
  public CompletableFuture<Listing> listAsync(String prefix) {
    return engine.unary(AdminGrpc.getListMethod(),
        AdminOuterClass.ListRequest.newBuilder().setPrefix(prefix).build())
        .thenApply(r -> new Listing(r.getLocksList().stream().map(l -> new Listing.Listed(
            l.getResource(),
            l.hasHolder()
                ? Optional.of(new Listing.ListedHolder(l.getHolder().getLeaseId(),
                    l.getHolder().getFencingToken(), l.getHolder().getTtlRemainingMs()))
                : Optional.empty(),
            l.getWaitersList().stream().map(AdminOuterClass.ListWaiter::getLeaseId).toList()))
            .toList(), r.getReadIndex()));
  }

  /** {@link #listAsync}, waiting for the answer. */
  public Listing list(String prefix) {
    return Blocking.await(listAsync(prefix), "list " + prefix);
  }

  /**
   * Publishes {@code value} for {@code leaseId} on {@code resource} (elections). Token 0: a
   * candidate's value; otherwise the lease must hold the resource with exactly that grant.
   * Idempotent.
   */
  public CompletableFuture<Void> proclaimAsync(String resource, long leaseId, long fencingToken,
      String value) {
    return engine.unary(LockGrpc.getProclaimMethod(), Warden.ProclaimRequest.newBuilder()
        .setResource(resource).setLeaseId(leaseId).setFencingToken(fencingToken)
        .setValue(value).build()).thenApply(r -> null);
  }

  private CompletableFuture<Warden.ClusterStatusResponse> clusterStatusRaw() {
    return engine.unary(LockGrpc.getClusterStatusMethod(),
        Warden.ClusterStatusRequest.getDefaultInstance());
  }

  /** Membership, roles and indexes, as seen by the leader. */
  public CompletableFuture<ClusterStatus> clusterStatusAsync() {
    return clusterStatusRaw().thenApply(r -> new ClusterStatus(r.getClusterId(),
        r.getLeaderId(), r.getTerm(), r.getCommitIndex(), r.getNodeId(),
        r.getMembersList().stream().map(m -> new ClusterStatus.Member(m.getId(), m.getAddr(),
            m.getRole(), m.getAppliedIndex())).toList()));
  }

  /** {@link #clusterStatusAsync}, waiting for the answer. */
  public ClusterStatus clusterStatus() {
    return Blocking.await(clusterStatusAsync(), "cluster status");
  }

  // ---- Watch and elections ----

  /**
   * Watches {@code target} from {@code startIndex} (0 = from now): retained events at or above
   * it first, then live ones, in commit order.
   *
   * @throws CompactedException when {@code startIndex} is older than the node retains
   * @throws InvalidArgumentException for a bad resource or prefix
   */
  public Watcher watch(WatchTarget target, long startIndex) {
    Watcher w = new Watcher(engine, target, startIndex);
    w.connect();
    return w;
  }

  /**
   * The key prefix of every election: the one the server publishes in {@code
   * ClusterStatus.election_prefix}, or {@link #DEFAULT_ELECTION_PREFIX} when it publishes ""
   * (read once per client).
   */
  public String electionPrefix() {
    String known = electionPrefix;
    if (known != null) {
      return known;
    }
    Warden.ClusterStatusResponse status = Blocking.await(clusterStatusRaw(), "cluster status");
    String prefix = status.getElectionPrefix().isEmpty() ? DEFAULT_ELECTION_PREFIX
        : status.getElectionPrefix();
    electionPrefix = prefix;
    return prefix;
  }

  Optional<LeaderInfo> electionLeader(String name) {
    LockStatus s = status(electionPrefix() + name);
    return s.holder().map(h -> new LeaderInfo(h.leaseId(), h.fencingToken(), h.value()));
  }

  /** Follows election {@code name} (no session needed); see {@link Observer}. */
  public Observer observe(String name) {
    return new Observer(this, name);
  }

  /** Ends every connection and the timer thread. Sessions should be closed first. */
  @Override
  public void close() {
    engine.close();
  }

  private static long millis(Duration d) {
    if (d == null) {
      return 0;
    }
    if (d.isNegative()) {
      throw new InvalidArgumentException("duration", "must not be negative; got " + d);
    }
    try {
      return d.toMillis();
    } catch (ArithmeticException e) {
      return Long.MAX_VALUE;
    }
  }

  @SuppressWarnings("unused")
  private static Throwable unwrap(Throwable t) {
    return Failure.unwrap(t);
  }
}
