/**
 * The {@link Client}: leader following, retries within a deadline, request
 * ids, and every call of the wire API.
 *
 * The path of a call (docs/semantics.md L3): it goes to the cached leader
 * (or the first endpoint). A follower answers `Unavailable` with
 * `warden-leader: host:port`; the call is re-sent there at once. A node that
 * cannot be reached, or knows no leader, sends it to the next endpoint;
 * after a whole round failed the client pauses (25 ms doubling, capped at
 * 200 ms). Each attempt waits at most 500 ms, the whole call at most 5 s
 * (defaults; a waiting acquire gets its wait on top); then NoQuorumError
 * (nodes answered, none could serve) or UnavailableError (none reachable),
 * naming every address tried.
 *
 * Exactly once (S7): every mutating call carries `RequestHeader{clientId,
 * requestId, ackedRequestId}`; a retry reuses its request id, so the server
 * applies it once.
 */
import { randomInt } from "node:crypto";
import { credentials as grpcCredentials, type ChannelCredentials, type ChannelOptions } from "@grpc/grpc-js";

import { acquire as acquireWire } from "./acquire.js";
import { CallStreams, CallsUnsupported, fitsAnyNode, type CallAnswer } from "./calls.js";
import {
  Code,
  LeaseNotFoundError,
  NoQuorumError,
  TransportError,
  UnavailableError,
  describeStatus,
  errorFromStatus,
  isRetryable,
  isServiceError,
  serverAnswered,
  statusOf,
  type StatusInfo,
} from "./errors.js";
import type { ClusterStatusResponse__Output } from "./generated/warden/v1/ClusterStatusResponse.js";
import type { Holder__Output } from "./generated/warden/v1/Holder.js";
import type { LeaseKeepAliveResponse__Output } from "./generated/warden/v1/LeaseKeepAliveResponse.js";
import type { AcquireRequest as WireAcquireRequest } from "./generated/warden/v1/AcquireRequest.js";
import type { ReleaseRequest as WireReleaseRequest } from "./generated/warden/v1/ReleaseRequest.js";
import type { RequestHeader } from "./generated/warden/v1/RequestHeader.js";
import { DEFAULT_LIMITS, checkId, checkReadName, checkResource, wholeNumber, type Limits } from "./limits.js";
import { nodeStubs, type NodeStubs } from "./proto.js";
import { RequestIds, type InFlight } from "./requests.js";
import { CallPlan, leaderHint, parseEndpoints } from "./routing.js";
import { AttemptFailed, DeadlineReached, StreamReader, anySignal, sleep, unaryAttempt } from "./rpc.js";
import { channelCredentials, tlsChannelOptions } from "./tls.js";
import {
  DEFAULT_ELECTION_PREFIX,
  DEFAULT_MAX_REQUESTS_IN_FLIGHT,
  type AcquireRequest,
  type CancelWaitResult,
  type ClientOptions,
  type ClusterStatus,
  type Granted,
  type Holder,
  type LeaseInfo,
  type ListedLock,
  type LockMode,
  type NotGranted,
  type ReleaseResult,
  type RenewResult,
  type ResourceStatus,
  type SessionOptions,
  type ValidateResult,
} from "./types.js";
import { Session } from "./session.js";
import type { Lock, LockOptions } from "./lock.js";
import { Observer, Watcher, type WatchOptions } from "./watch.js";

/** One attempt of a call at one node; it must stop when `signal` aborts. */
export type Attempt<T> = (address: string, node: NodeStubs, signal: AbortSignal) => Promise<T>;

export interface CallOptions {
  /** The caller abandons the call: its reason is thrown as is. */
  readonly signal?: AbortSignal | undefined;
  /** Unimplemented is a final answer (CancelWait on an older server). */
  readonly unimplementedIsFinal?: boolean;
}

export function modeName(mode: string): LockMode {
  return mode === "LOCK_MODE_SHARED" ? "shared" : mode === "LOCK_MODE_EXCLUSIVE" ? "exclusive" : "unspecified";
}

export function holderOf(h: Holder__Output): Holder {
  return {
    leaseId: h.leaseId,
    fencingToken: h.fencingToken,
    ttlRemainingMs: h.ttlRemainingMs,
    ttlMs: h.ttlMs,
    value: h.value,
    mode: modeName(h.mode),
    slot: h.slot ?? undefined,
  };
}

export class Client implements AsyncDisposable {
  readonly endpoints: readonly string[];
  /** This client's id, sent with every mutating request (S7): random, never 0, below 2^53. */
  readonly clientId: number;
  readonly deadlineMs: number;
  readonly attemptTimeoutMs: number;
  readonly backoffCapMs: number;
  /** The bounds arguments are checked against (the server's, once it published them). */
  readonly limits: Limits = { ...DEFAULT_LIMITS };
  readonly requestIds: RequestIds;
  private readonly credentials: ChannelCredentials;
  private readonly channelOptions: ChannelOptions;
  private readonly nodes = new Map<string, NodeStubs>();
  /** Each node's `Calls` stream (acquires and releases). */
  private readonly callStreams = new CallStreams();
  private leaderAddress: string | undefined;
  private renewSequence = 0;
  private paramsKnown: Promise<void> | undefined;
  private electionPrefixValue = DEFAULT_ELECTION_PREFIX;
  private readonly background = new Set<Promise<unknown>>();
  /** Sessions still open (stopped by close()). */
  readonly sessions = new Set<Session>();
  private closed = false;

  constructor(
    endpoints: string | readonly string[],
    private readonly options: ClientOptions = {},
  ) {
    this.endpoints = parseEndpoints(endpoints);
    this.deadlineMs = positive("deadlineMs", options.deadlineMs ?? 5000);
    this.attemptTimeoutMs = positive("attemptTimeoutMs", options.attemptTimeoutMs ?? 500);
    this.backoffCapMs = wholeNumber("backoffCapMs", options.backoffCapMs ?? 200);
    this.credentials = options.tls ? channelCredentials(options.tls) : grpcCredentials.createInsecure();
    this.channelOptions = {
      // Detects a dead or partitioned node during a long wait.
      "grpc.keepalive_time_ms": 1000,
      "grpc.keepalive_timeout_ms": Math.max(this.attemptTimeoutMs, 1000),
      // A node that comes back is reached again within a second.
      "grpc.initial_reconnect_backoff_ms": 100,
      "grpc.max_reconnect_backoff_ms": 1000,
      // Retries are this client's (with request ids), never the channel's.
      "grpc.enable_retries": 0,
      // Connections are this client's own, not shared with other clients in the process.
      "grpc.use_local_subchannel_pool": 1,
      ...(options.tls ? tlsChannelOptions(options.tls) : {}),
    };
    this.clientId = randomInt(1, 2 ** 48);
    this.requestIds = new RequestIds(options.maxRequestsInFlight ?? DEFAULT_MAX_REQUESTS_IN_FLIGHT);
  }

  /** The address that last served a call, if any. */
  get cachedLeader(): string | undefined {
    return this.leaderAddress;
  }

  /** Stops every session still open (lost, "closed"; close sessions first to revoke them), waits for cancels being sent, closes the channels. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await Promise.all([...this.sessions].map((s) => s.stop()));
    if (this.background.size > 0) {
      await Promise.race([Promise.allSettled([...this.background]), sleep(this.deadlineMs)]);
    }
    this.callStreams.closeAll();
    for (const node of this.nodes.values()) node.close();
    this.nodes.clear();
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }

  /** @internal One node's stubs (channels open on first use). */
  node(address: string): NodeStubs {
    let node = this.nodes.get(address);
    if (node === undefined) {
      node = nodeStubs(address, this.credentials, this.channelOptions);
      this.nodes.set(address, node);
    }
    return node;
  }

  /** @internal Runs `p` in the background; close() waits for it. */
  spawn(p: Promise<unknown>): void {
    const kept = p.catch(() => undefined).finally(() => this.background.delete(kept));
    this.background.add(kept);
  }

  /** @internal The request header of `inFlight`: the same on every retry (S7). */
  header(inFlight: InFlight): RequestHeader {
    return { clientId: this.clientId, requestId: inFlight.requestId, ackedRequestId: inFlight.ackedRequestId };
  }

  /** @internal A new renew sequence number, one per attempt (S5). */
  nextRenewSequence(): number {
    this.renewSequence += 1;
    return this.renewSequence;
  }

  /** @internal A new request id within the in-flight window. */
  async beginRequest(): Promise<InFlight> {
    await this.serverParams();
    return this.requestIds.begin(this.deadlineMs);
  }

  // --- the retry loop ---------------------------------------------------------

  /**
   * Runs `attempt` on the leader, following hints and rotating over the
   * endpoints, until it succeeds, fails for good, or `budgetMs` passes.
   * Every failure that is not a final answer is retried, so `attempt` must be
   * safe to repeat: a read, a renew, or a mutation with a request id.
   */
  async call<T>(op: string, budgetMs: number, attempt: Attempt<T>, options: CallOptions = {}): Promise<T> {
    const started = performance.now();
    const deadline = started + budgetMs;
    const plan = new CallPlan(this.endpoints, this.leaderAddress, this.backoffCapMs);
    // One signal for the attempts: the deadline's or the caller's.
    const combined = anySignal([options.signal]);
    const timer = setTimeout(() => combined.abort(new DeadlineReached()), Math.min(budgetMs, 2 ** 31 - 1));
    let target = plan.first;
    let answeredAny = false;
    let lastError = "the deadline passed before the first attempt";
    let lastStatus: StatusInfo | undefined;
    try {
      while (performance.now() < deadline) {
        let hint: string | undefined;
        let answered = false;
        try {
          const value = await attempt(target, this.node(target), combined.signal);
          this.leaderAddress = target;
          return value;
        } catch (e) {
          if (options.signal?.aborted && e === options.signal.reason) throw e;
          if (e instanceof DeadlineReached) {
            lastError = `${target}: no answer before the deadline`;
            break;
          }
          if (isServiceError(e)) {
            const status = statusOf(e);
            const final =
              !isRetryable(status) || (options.unimplementedIsFinal === true && status.code === Code.UNIMPLEMENTED);
            if (final) {
              this.leaderAddress = target;
              throw errorFromStatus(status);
            }
            answered = serverAnswered(status);
            hint = leaderHint(status.metadata);
            lastStatus = status;
            lastError = `${target}: ${describeStatus(status)}`;
          } else if (e instanceof AttemptFailed) {
            lastStatus = undefined;
            lastError = `${target}: ${e.message}`;
          } else {
            throw e;
          }
        }
        answeredAny ||= answered;
        if (this.leaderAddress === target) this.leaderAddress = undefined;
        const { pauseMs, next } = plan.afterFailure(target, hint, answered);
        if (performance.now() + pauseMs >= deadline) break;
        if (pauseMs > 0) {
          try {
            await sleep(pauseMs, combined.signal);
          } catch (e) {
            if (e instanceof DeadlineReached) break;
            throw e;
          }
        }
        target = next;
      }
    } finally {
      clearTimeout(timer);
      combined.dispose();
    }
    const waitedMs = Math.round(performance.now() - started);
    const tried = plan.tried;
    if (answeredAny) {
      throw new NoQuorumError(
        `no quorum: no leader served ${op} within ${waitedMs} ms (tried ${tried.join(", ")}); last error: ${lastError}`,
        tried,
        waitedMs,
        lastError,
        lastStatus,
      );
    }
    throw new UnavailableError(
      `unavailable: no server reachable for ${op} after trying for ${waitedMs} ms (tried ${tried.join(", ")}); ` +
        `last error: ${lastError}`,
      tried,
      waitedMs,
      lastError,
      lastStatus,
    );
  }

  /** @internal A unary call through {@link call}, one attempt timeout each. */
  unary<Res>(
    op: string,
    invoke: (node: NodeStubs, cb: (err: import("@grpc/grpc-js").ServiceError | null, res?: Res) => void) => import("@grpc/grpc-js").ClientUnaryCall,
    options: CallOptions & { budgetMs?: number } = {},
  ): Promise<Res> {
    return this.call(
      op,
      options.budgetMs ?? this.deadlineMs,
      (_address, node, signal) => unaryAttempt<Res>((cb) => invoke(node, cb), this.attemptTimeoutMs, signal),
      options,
    );
  }

  /**
   * @internal One attempt of an acquire or a release at `address`: a call
   * on the node's `Calls` stream, or `unary` (the same request as its own
   * call) when the node does not serve `Calls` or the request could be over
   * a node's size limit. Either fails as the unary call would, so the retry
   * loop treats both alike.
   */
  async streamedAttempt<T>(
    address: string,
    node: NodeStubs,
    body: { acquire: WireAcquireRequest } | { release: WireReleaseRequest },
    signal: AbortSignal,
    fromAnswer: (answer: CallAnswer) => T,
    unary: () => Promise<T>,
    onSent?: () => void,
    onReport?: (report: CallAnswer) => number,
  ): Promise<T> {
    const stream = fitsAnyNode(body) ? this.callStreams.get(address, node) : undefined;
    if (stream === undefined) return unary();
    let answer: CallAnswer;
    try {
      const answering = stream.request(body, this.attemptTimeoutMs, signal, onReport);
      onSent?.();
      answer = await answering;
    } catch (e) {
      if (e instanceof CallsUnsupported) return unary();
      throw e;
    }
    return fromAnswer(answer);
  }

  // --- what the server publishes ------------------------------------------------

  /** @internal Reads once what the server publishes (window, election prefix, limits); defaults until then. */
  serverParams(): Promise<void> {
    if (this.paramsKnown === undefined) {
      this.paramsKnown = this.clusterStatus({ budgetMs: 2 * this.attemptTimeoutMs }).then(
        () => undefined,
        () => {
          this.paramsKnown = undefined; // the next call asks again
        },
      );
    }
    return this.paramsKnown;
  }

  private adopt(reply: ClusterStatusResponse__Output): void {
    this.paramsKnown ??= Promise.resolve();
    if (reply.maxRequestsInFlight) {
      const own = this.options.maxRequestsInFlight;
      this.requestIds.setWindow(own ? Math.min(own, reply.maxRequestsInFlight) : reply.maxRequestsInFlight);
    }
    if (reply.electionPrefix) this.electionPrefixValue = reply.electionPrefix;
    const t = reply.timing;
    if (t) {
      if (t.minTtlMs) this.limits.minTtlMs = t.minTtlMs;
      if (t.maxTtlMs) this.limits.maxTtlMs = t.maxTtlMs;
      if (t.maxWaitTimeoutMs) this.limits.maxWaitMs = t.maxWaitTimeoutMs;
      if (t.maxLockDelayMs) this.limits.maxLockDelayMs = t.maxLockDelayMs;
    }
  }

  /** The election key prefix the server publishes (or the default). */
  async electionPrefix(): Promise<string> {
    await this.serverParams();
    return this.electionPrefixValue;
  }

  /** The lock-table key of election `name`. */
  async electionKey(name: string): Promise<string> {
    return (await this.electionPrefix()) + name;
  }

  // --- reads --------------------------------------------------------------------

  /** Membership, leader, term and indexes as the leader sees them. */
  async clusterStatus(options: { budgetMs?: number } = {}): Promise<ClusterStatus> {
    const r = await this.unary<ClusterStatusResponse__Output>(
      "cluster status",
      (n, cb) => n.lock.ClusterStatus({}, cb),
      options,
    );
    this.adopt(r);
    return {
      clusterId: r.clusterId,
      leaderId: r.leaderId,
      term: r.term,
      commitIndex: r.commitIndex,
      nodeId: r.nodeId,
      members: r.members.map((m) => ({ id: m.id, addr: m.addr, role: m.role, appliedIndex: m.appliedIndex })),
      maxRequestsInFlight: r.maxRequestsInFlight || undefined,
      electionPrefix: r.electionPrefix || undefined,
      boundEMs: r.timing?.boundEMs || undefined,
    };
  }

  /** Who holds `resource` and how many wait (linearizable read). */
  async status(resource: string): Promise<ResourceStatus> {
    checkReadName(resource);
    const r = await this.unary<import("./generated/warden/v1/StatusResponse.js").StatusResponse__Output>(
      "status",
      (n, cb) => n.lock.Status({ resource }, cb),
    );
    return {
      resource: r.resource,
      holder: r.holder ? holderOf(r.holder) : undefined,
      holders: r.holders.map(holderOf),
      waiters: r.waiters,
      readIndex: r.readIndex,
      kind: r.kind,
      limit: r.limit,
      lockDelayRemainingMs: r.lockDelayRemainingMs,
    };
  }

  /** Whether `fencingToken` is the current grant of `resource`. ADVISORY: only the resource's own check closes the window. */
  async validate(resource: string, fencingToken: number): Promise<ValidateResult> {
    checkResource(resource);
    checkId("fencingToken", fencingToken);
    const r = await this.unary<import("./generated/warden/v1/ValidateResponse.js").ValidateResponse__Output>(
      "validate",
      (n, cb) => n.lock.Validate({ resource, fencingToken }, cb),
    );
    const state = r.state.replace(/^TOKEN_STATE_/, "").toLowerCase();
    return { resource: r.resource, fencingToken: r.fencingToken, state, holderToken: r.holderToken };
  }

  /** A lease's TTL, time left, locks and waits; LeaseNotFoundError if it is not live. */
  async leaseTimeToLive(leaseId: number): Promise<LeaseInfo> {
    checkId("leaseId", leaseId);
    const r = await this.unary<import("./generated/warden/v1/LeaseTimeToLiveResponse.js").LeaseTimeToLiveResponse__Output>(
      "lease ttl",
      (n, cb) => n.lease.LeaseTimeToLive({ leaseId }, cb),
    );
    return {
      leaseId: r.leaseId,
      ttlMs: r.ttlMs,
      ttlRemainingMs: r.ttlRemainingMs,
      locks: r.locks,
      waits: r.waits,
      graced: r.graced,
    };
  }

  /** Every resource whose name starts with `prefix`: holder and waiters (Admin List). */
  async listLocks(prefix = ""): Promise<ListedLock[]> {
    const r = await this.unary<import("./generated/warden/v1/ListResponse.js").ListResponse__Output>("list", (n, cb) =>
      n.admin.List({ prefix }, cb),
    );
    return r.locks.map((l) => ({
      resource: l.resource,
      holder: l.holder ? { leaseId: l.holder.leaseId, fencingToken: l.holder.fencingToken } : undefined,
      waiters: l.waiters.map((w) => ({ leaseId: w.leaseId, ageMs: w.ageMs })),
    }));
  }

  // --- leases -------------------------------------------------------------------

  /** Creates a lease with no lock; retried with one request id (S7). */
  async leaseGrant(ttlMs: number): Promise<{ leaseId: number; ttlMs: number }> {
    wholeNumber("ttlMs", ttlMs);
    const inFlight = await this.beginRequest();
    try {
      const request = { header: this.header(inFlight), ttlMs };
      const r = await this.unary<import("./generated/warden/v1/LeaseGrantResponse.js").LeaseGrantResponse__Output>(
        "lease grant",
        (n, cb) => n.lease.LeaseGrant(request, cb),
      );
      return { leaseId: r.leaseId, ttlMs: r.ttlMs };
    } finally {
      inFlight.finish();
    }
  }

  /** Renews `leaseId` with the unary Renew (each attempt a new sequence the reply must echo). */
  async renew(leaseId: number): Promise<RenewResult> {
    checkId("leaseId", leaseId);
    return this.call("renew", this.deadlineMs, async (_a, node, signal) => {
      const sequence = this.nextRenewSequence();
      const r = await unaryAttempt<import("./generated/warden/v1/RenewResponse.js").RenewResponse__Output>(
        (cb) => node.lock.Renew({ leaseId, clientId: this.clientId, sequence }, cb),
        this.attemptTimeoutMs,
        signal,
      );
      if (r.sequence !== sequence) {
        throw new TransportError(`renew reply carries sequence ${r.sequence} but the attempt sent ${sequence}`);
      }
      return { leaseId: r.leaseId, ttlMs: r.ttlMs, sequence };
    });
  }

  /**
   * One keep-alive on a `LeaseKeepAlive` stream of its own; resolves with the
   * reply and the send time read by `now` just before the write (S5).
   * @internal
   */
  async keepAliveAttempt(
    node: NodeStubs,
    leaseId: number,
    signal: AbortSignal,
    now: () => number,
  ): Promise<{ reply: LeaseKeepAliveResponse__Output; sentAt: number }> {
    const call = node.lease.LeaseKeepAlive();
    const reader = new StreamReader<LeaseKeepAliveResponse__Output>(call);
    try {
      const sequence = this.nextRenewSequence();
      const sentAt = now();
      call.write({ leaseId, sequence });
      call.end();
      const started = performance.now();
      for (;;) {
        const reply = await reader.next(this.attemptTimeoutMs - (performance.now() - started), signal);
        // A reply to another attempt is skipped: validity counts from this send only.
        if (reply.sequence === sequence) return { reply, sentAt };
      }
    } finally {
      reader.cancel();
    }
  }

  /** One keep-alive of `leaseId`; LeaseNotFoundError when the reply says it is not live. */
  async keepAliveOnce(leaseId: number): Promise<RenewResult> {
    checkId("leaseId", leaseId);
    const { reply } = await this.call("keep-alive", this.deadlineMs, (_a, node, signal) =>
      this.keepAliveAttempt(node, leaseId, signal, () => performance.now()),
    );
    if (!reply.live) throw new LeaseNotFoundError(`leaseId: lease ${leaseId} is not live`);
    return { leaseId: reply.leaseId, ttlMs: reply.ttlMs, sequence: reply.sequence };
  }

  /** Revokes a lease: every lock it holds is released (no lock-delay) and its waits removed. */
  async revoke(leaseId: number): Promise<number> {
    checkId("leaseId", leaseId);
    const inFlight = await this.beginRequest();
    try {
      const request = { header: this.header(inFlight), leaseId };
      const r = await this.unary<import("./generated/warden/v1/LeaseRevokeResponse.js").LeaseRevokeResponse__Output>(
        "revoke",
        (n, cb) => n.lock.LeaseRevoke(request, cb),
      );
      return r.leaseId;
    } finally {
      inFlight.finish();
    }
  }

  /** Releases the grant of `resource` held by `leaseId`; with `fencingToken`, only that exact grant (S6). */
  async release(leaseId: number, resource?: string, fencingToken?: number): Promise<ReleaseResult> {
    checkId("leaseId", leaseId);
    if (fencingToken !== undefined) checkId("fencingToken", fencingToken);
    const inFlight = await this.beginRequest();
    try {
      const request = {
        header: this.header(inFlight),
        resource: resource ?? "",
        leaseId,
        fencingToken: fencingToken ?? 0,
      };
      type Reply = import("./generated/warden/v1/ReleaseResponse.js").ReleaseResponse__Output;
      const r = await this.call("release", this.deadlineMs, (address, node, signal) =>
        this.streamedAttempt<Reply>(
          address,
          node,
          { release: request },
          signal,
          (answer) => {
            if (answer.answer !== "release" || !answer.release) {
              throw new TransportError(`release answered with a ${answer.answer ?? "empty"} answer`);
            }
            return answer.release;
          },
          () => unaryAttempt<Reply>((cb) => node.lock.Release(request, cb), this.attemptTimeoutMs, signal),
        ),
      );
      return { resource: r.resource, leaseId: r.leaseId, released: r.released };
    } finally {
      inFlight.finish();
    }
  }

  /** Publishes `value` for `leaseId` on `resource` (elections); token 0 is a candidate's value. Idempotent. */
  async proclaim(resource: string, leaseId: number, fencingToken: number, value: string): Promise<void> {
    const request = { resource, leaseId, fencingToken, value };
    await this.unary("proclaim", (n, cb) => n.lock.Proclaim(request, cb));
  }

  /** Takes back this client's waiting acquire `acquireRequestId` on `resource` (committed, exactly once). */
  async cancelWait(resource: string, acquireRequestId: number): Promise<CancelWaitResult> {
    const inFlight = await this.beginRequest();
    try {
      const request = { header: this.header(inFlight), acquireRequestId, resource };
      const r = await this.unary<import("./generated/warden/v1/CancelWaitResponse.js").CancelWaitResponse__Output>(
        "cancel wait",
        (n, cb) => n.lock.CancelWait(request, cb),
        { unimplementedIsFinal: true },
      );
      return { resource: r.resource, leaseId: r.leaseId, outcome: r.outcome, fencingToken: r.fencingToken };
    } finally {
      inFlight.finish();
    }
  }

  /**
   * The wire-level acquire: sends what it is given (types are checked, the
   * server judges the bounds and refuses with InvalidArgumentError naming the
   * field). A refusal because of the resource's state is an answer
   * (`granted: false`), not an error. A new lease (`ttlMs`) is renewed every
   * TTL/3 while it waits; after the grant that is the caller's job (or use a
   * Session). Aborting `signal` after the attempt was sent sends CancelWait,
   * and the promise rejects with the signal's reason once it is answered.
   */
  acquire(request: AcquireRequest): Promise<Granted | NotGranted> {
    return acquireWire(this, request, { renewWhileWaiting: true });
  }

  // --- sessions, locks, watches, elections -----------------------------------------

  /** Opens a session: a lease kept alive every TTL/3 with an honest `validUntil` (S5). */
  async session(options: SessionOptions = {}): Promise<Session> {
    return Session.open(this, options);
  }

  /**
   * Opens a session, takes `resource`, runs `fn(lock)` (with the fencing
   * token and a signal aborted if the lock is lost), then releases and closes.
   */
  async withLock<T>(
    resource: string,
    options: LockOptions & SessionOptions,
    fn: (lock: Lock) => Promise<T> | T,
  ): Promise<T> {
    const session = await this.session(options);
    try {
      return await session.withLock(resource, options, fn);
    } finally {
      await session.close().catch(() => undefined);
    }
  }

  /** Watches a resource or a prefix from `startIndex` (0 = from now): an async iterator of events. */
  async watch(options: WatchOptions): Promise<Watcher> {
    return Watcher.open(this, options);
  }

  /** Follows election `name`'s leaders (no session needed): an async iterator. */
  async observe(name: string): Promise<Observer> {
    return Observer.open(this, await this.electionKey(name));
  }

  /** The current leader of election `name`, or undefined. */
  async leader(name: string): Promise<import("./types.js").LeaderInfo | undefined> {
    const status = await this.status(await this.electionKey(name));
    const h = status.holder;
    return h ? { leaseId: h.leaseId, fencingToken: h.fencingToken, value: h.value } : undefined;
  }
}

function positive(name: string, value: number): number {
  const v = wholeNumber(name, value);
  if (v <= 0) throw new RangeError(`${name} must be greater than 0; got ${v}`);
  return v;
}
