/**
 * A {@link Session}: one lease kept alive in the background every TTL/3,
 * with an honest `validUntil` (docs/semantics.md S5), and the locks that
 * hang on it.
 *
 * Validity: `validUntil` is, on the session clock, the *send* time of the
 * keep-alive whose acknowledgement was last received (matched by the echoed
 * sequence number; for the lease grant, its first attempt) plus
 * `TTL × (1 − 2ρ) − 50 ms`. The server never expires the lease before
 * `send + TTL × (1 − ρ)` (S4), so while `check()` passes nobody else holds
 * this session's locks.
 *
 * Loss: `lost` (an AbortSignal) aborts no later than `validUntil` if no
 * keep-alive was acknowledged by then (also when no server answers), at once
 * when the server says the lease is not live, when the clock cannot be read,
 * and on `close()`. A lost session stays lost. Timers fire late after a
 * pause, so call `check()` right before each protected write.
 */
import { acquire } from "./acquire.js";
import type { Client } from "./client.js";
import { BOOT_CLOCK, validityMs, type Clock } from "./clock.js";
import {
  ClockError,
  Code,
  LeaseNotFoundError,
  SessionLostError,
  WardenError,
  notGrantedError,
  type LostKind,
} from "./errors.js";
import {
  checkLimit,
  checkLockDelay,
  checkMaxHold,
  checkResource,
  checkResources,
  checkTtl,
  checkWait,
} from "./limits.js";
import { LOST_TIMER_SLACK_MS, Lock, MultiLock, type LockOptions } from "./lock.js";
import { anySignal, sleep } from "./rpc.js";
import type { Granted, LockMode, NotGranted, ReleaseResult, SessionOptions } from "./types.js";
import { Election } from "./election.js";

/** A timer never sleeps longer than this: Node's timers stop while suspended, the session clock does not. */
const MAX_SLEEP_MS = 1000;
/** The longest wait one acquire asks for (the server's bound); a lock without a wait repeats it. */
const MAX_WAIT_MS = 3_600_000;

export class Session implements AsyncDisposable {
  private readonly controller = new AbortController();
  private readonly stopController = new AbortController();
  private keepAlive: Promise<void> | undefined;
  private validUntilValue: number;

  private constructor(
    readonly client: Client,
    readonly leaseId: number,
    /** The TTL the server granted (ms). */
    readonly ttlMs: number,
    /** The clock `validUntil` is measured on. */
    readonly clock: Clock,
    validUntil: number,
    readonly unref: boolean,
  ) {
    this.validUntilValue = validUntil;
  }

  /** @internal Grants the lease (retried under one request id: validity counts from the first send) and starts the keep-alive. */
  static async open(client: Client, options: SessionOptions): Promise<Session> {
    await client.serverParams();
    const ttlMs = checkTtl(options.ttlMs ?? 10_000, client.limits);
    const clock = options.clock ?? BOOT_CLOCK;
    const sentAt = clock.now();
    const granted = await client.leaseGrant(ttlMs);
    const session = new Session(
      client,
      granted.leaseId,
      granted.ttlMs,
      clock,
      sentAt + validityMs(granted.ttlMs),
      options.unref ?? false,
    );
    client.sessions.add(session);
    session.keepAlive = session.keepAliveLoop(sentAt);
    return session;
  }

  /** Until when (session clock, ms) the session and its locks are certainly held, unless lost. Only moves forward. */
  get validUntil(): number {
    return this.validUntilValue;
  }

  /** Aborts, with a SessionLostError as its reason, once the session is lost. */
  get lost(): AbortSignal {
    return this.controller.signal;
  }

  /** Why the session was lost, or undefined while it is not. */
  get lostReason(): SessionLostError | undefined {
    return this.controller.signal.aborted ? (this.controller.signal.reason as SessionLostError) : undefined;
  }

  /** Ms until `validUntil`; 0 once lost. */
  timeLeftMs(): number {
    if (this.assess() !== undefined) return 0;
    try {
      return Math.max(this.validUntilValue - this.clock.now(), 0);
    } catch {
      return 0;
    }
  }

  /** Why the session cannot be trusted now, or undefined while it can (marks nothing). */
  assess(): SessionLostError | undefined {
    const lost = this.lostReason;
    if (lost !== undefined) return lost;
    let now: number;
    try {
      now = this.clock.now();
    } catch (e) {
      return new SessionLostError("clock_failed", this.leaseId, undefined, (e as Error).message);
    }
    return now >= this.validUntilValue ? new SessionLostError("expired", this.leaseId, this.validUntilValue) : undefined;
  }

  /**
   * Returns while the session is valid: not lost and the session clock is
   * before `validUntil`. Synchronous and cheap: call it right before each
   * protected write. Throws SessionLostError otherwise (the session is then
   * lost for good).
   */
  check(): void {
    const verdict = this.assess();
    if (verdict !== undefined) throw this.lose(verdict);
  }

  /** @internal Marks the session lost (the first reason wins) and returns the reason in force. */
  lose(reason: SessionLostError): SessionLostError {
    if (!this.controller.signal.aborted) this.controller.abort(reason);
    return this.controller.signal.reason as SessionLostError;
  }

  private loseAs(kind: LostKind, validUntil?: number, detail?: string): SessionLostError {
    return this.lose(new SessionLostError(kind, this.leaseId, validUntil, detail));
  }

  private now(): number {
    try {
      return this.clock.now();
    } catch (e) {
      if (e instanceof ClockError) throw this.loseAs("clock_failed", undefined, e.message);
      throw e;
    }
  }

  /** Sleeps until `at` on the session clock (less the slack), re-reading it at least every second. */
  private async sleepUntil(at: number, signal: AbortSignal): Promise<void> {
    for (;;) {
      const left = at - this.now() - LOST_TIMER_SLACK_MS;
      if (left <= 0) return;
      await sleep(Math.min(left, MAX_SLEEP_MS), signal, this.unref);
    }
  }

  // --- keep-alive ----------------------------------------------------------------

  /** Sends one keep-alive now and waits for its acknowledgement; returns the new `validUntil`. */
  async renew(): Promise<number> {
    this.check();
    await this.renewOnce(this.validUntilValue - this.now(), this.lost);
    this.check();
    return this.validUntilValue;
  }

  /** One acknowledged keep-alive within `withinMs`; moves `validUntil` to its send + validity; returns the send time. */
  private async renewOnce(withinMs: number, signal: AbortSignal): Promise<number> {
    const { reply, sentAt } = await this.client.call(
      "keep-alive",
      withinMs,
      (_address, node, s) => this.client.keepAliveAttempt(node, this.leaseId, s, () => this.now()),
      { signal },
    );
    if (!reply.live) throw this.loseAs("lease_gone");
    const until = sentAt + validityMs(reply.ttlMs);
    // Never after the loss (a lost session stays lost), never backwards.
    if (!this.lost.aborted && until > this.validUntilValue) this.validUntilValue = until;
    return sentAt;
  }

  private async keepAliveLoop(lastSent: number): Promise<void> {
    const periodMs = this.ttlMs / 3;
    const stop = this.stopController.signal;
    let failed = false;
    try {
      while (!this.lost.aborted) {
        const validUntil = this.validUntilValue;
        const next = failed ? this.now() + this.client.backoffCapMs : lastSent + periodMs;
        if (next < validUntil) await this.sleepUntil(next + LOST_TIMER_SLACK_MS, stop);
        const now = this.now();
        if (now + LOST_TIMER_SLACK_MS >= validUntil) {
          this.loseAs("expired", validUntil);
          break;
        }
        const round = new AbortController();
        const onStop = () => round.abort(stop.reason);
        stop.addEventListener("abort", onStop, { once: true });
        const expiry = this.sleepUntil(validUntil, round.signal).then(() => "expired" as const);
        const renew = this.renewOnce(validUntil - now, round.signal).then((sent) => ({ sent }));
        try {
          const outcome = await Promise.race([renew, expiry]);
          if (outcome === "expired") {
            this.loseAs("expired", validUntil);
            break;
          }
          lastSent = outcome.sent;
          failed = false;
        } catch (e) {
          if (stop.aborted || e instanceof SessionLostError) break;
          if (e instanceof LeaseNotFoundError) {
            this.loseAs("lease_gone");
            break;
          }
          if (!(e instanceof WardenError)) throw e;
          failed = true;
        } finally {
          stop.removeEventListener("abort", onStop);
          round.abort(new Error("round over"));
          renew.catch(() => undefined);
          expiry.catch(() => undefined);
        }
      }
    } catch (e) {
      // Never leave a session nobody renews looking alive: losing it early is safe.
      if (!stop.aborted) this.loseAs("expired", this.validUntilValue, `keep-alive stopped: ${(e as Error).message}`);
    }
    const kind = this.lostReason?.kind;
    if (kind === "expired" || kind === "clock_failed") {
      // The lease may still be live, and nobody here trusts it: revoking frees its locks sooner (best effort).
      await Promise.race([this.client.revoke(this.leaseId), sleep(1000, undefined, true)]).catch(() => undefined);
    }
  }

  /** Stops the keep-alive without revoking (the lease expires after its TTL); the session is lost ("closed"). */
  async stop(): Promise<void> {
    this.loseAs("closed");
    this.stopController.abort(new Error("session stopped"));
    await this.keepAlive?.catch(() => undefined);
    this.client.sessions.delete(this);
  }

  /**
   * Ends the session: lost ("closed"), keep-alive stopped, lease revoked
   * (every lock on it released, no lock-delay, in one committed entry). A
   * session already lost sends nothing and throws nothing.
   */
  async close(): Promise<void> {
    const already = this.lostReason;
    await this.stop();
    if (already !== undefined) return;
    try {
      await this.client.revoke(this.leaseId);
    } catch (e) {
      if (!(e instanceof WardenError && e.code === Code.NOT_FOUND)) throw e;
    }
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }

  // --- locks -----------------------------------------------------------------------

  /**
   * Takes the mutex `resource`, waiting in the server's FIFO queue as long as
   * it takes (or at most `waitMs`, then WaitTimeoutError once the waiter's
   * removal committed, S8). Aborting `signal` sends CancelWait and rejects
   * with its reason once answered. SessionLostError if the session is lost first.
   */
  lock(resource: string, options: LockOptions = {}): Promise<Lock> {
    return this.take(resource, options, "unspecified", 0, false);
  }

  /** Takes `resource` if it is free now; else HeldError naming the holder (or LockDelayError, or NotGrantedError "reserved"). */
  tryLock(resource: string, options: Omit<LockOptions, "waitMs" | "onQueued"> = {}): Promise<Lock> {
    return this.take(resource, { ...options, waitMs: 0 }, "unspecified", 0, true);
  }

  /** A reader's (shared) grant of the read-write lock `resource`: beside readers, never beside or ahead of a writer. */
  readLock(resource: string, options: LockOptions = {}): Promise<Lock> {
    return this.take(resource, options, "shared", 0, false);
  }

  /** The writer's (exclusive) grant of the read-write lock `resource`: alone. */
  writeLock(resource: string, options: LockOptions = {}): Promise<Lock> {
    return this.take(resource, options, "exclusive", 0, false);
  }

  /** The counting semaphore `resource` of `limit` permits (1..=10000) on this session. */
  semaphore(resource: string, limit: number): Semaphore {
    return new Semaphore(this, checkResource(resource), checkLimit(limit));
  }

  /** The mutexes `resources` (1..=64, distinct) together in one entry with a token each, or none (no deadlock in any order). */
  async lockAll(resources: readonly string[], options: Omit<LockOptions, "maxHoldMs"> = {}): Promise<MultiLock> {
    const names = checkResources(resources);
    if (options.lockDelayMs !== undefined) checkLockDelay(options.lockDelayMs, this.client.limits);
    for (;;) {
      const waitMs = options.waitMs === undefined ? MAX_WAIT_MS : checkWait(options.waitMs, this.client.limits);
      const result = await this.acquireOnSession({ ...options, resource: names[0]!, resources: names, waitMs });
      if (result.granted) {
        this.check();
        const grants = result.grants.length ? result.grants : [{ resource: result.resource, fencingToken: result.fencingToken }];
        return new MultiLock(this, grants);
      }
      if (options.waitMs === undefined && result.reason === "wait_timeout") continue;
      throw notGrantedError(result.resource, result.holderLeaseId, result.reason);
    }
  }

  /** @internal The lock behind lock/tryLock/readLock/writeLock/semaphore. */
  async take(
    resource: string,
    options: LockOptions,
    mode: LockMode,
    limit: number,
    tryOnce: boolean,
    electionKey = false,
  ): Promise<Lock> {
    // An election's key starts with a control character on purpose; its name was checked.
    if (!electionKey) checkResource(resource);
    const limits = this.client.limits;
    if (options.lockDelayMs !== undefined) checkLockDelay(options.lockDelayMs, limits);
    for (;;) {
      let waitMs = options.waitMs === undefined ? MAX_WAIT_MS : checkWait(options.waitMs, limits);
      if (options.waitMs === undefined && options.maxHoldMs !== undefined) {
        // A wait as long as the max-hold is refused: wait a little less, again and again.
        waitMs = Math.min(MAX_WAIT_MS, Math.max(options.maxHoldMs - 1, 0));
      }
      if (options.maxHoldMs !== undefined) checkMaxHold(options.maxHoldMs, waitMs);
      // A max-hold counts from the send, on the session clock (docs/semantics.md "Max-hold").
      const sentAt = this.now();
      const result = await this.acquireOnSession({ ...options, resource, waitMs, mode, limit });
      if (result.granted) {
        // Granted while the session may have been lost meanwhile: never hand out an untrustworthy lock.
        this.check();
        const until = options.maxHoldMs !== undefined ? sentAt + validityMs(options.maxHoldMs) : undefined;
        return new Lock(this, result.resource, result.fencingToken, result.slot, mode, until);
      }
      if (options.waitMs === undefined && !tryOnce && result.reason === "wait_timeout") continue;
      throw notGrantedError(result.resource, result.holderLeaseId, result.reason);
    }
  }

  private async acquireOnSession(
    r: LockOptions & { resource: string; waitMs: number; mode?: LockMode; limit?: number; resources?: string[] },
  ): Promise<Granted | NotGranted> {
    this.check();
    // The session's loss abandons the wait at once (the lease's end removes it anyway).
    const combined = r.signal ? anySignal([r.signal, this.lost]) : { signal: this.lost, dispose: () => undefined };
    try {
      const request = {
        resource: r.resource,
        leaseId: this.leaseId,
        waitMs: r.waitMs,
        lockDelayMs: r.lockDelayMs ?? 0,
        mode: r.mode ?? "unspecified",
        limit: r.limit ?? 0,
        resources: r.resources ?? [],
        maxHoldMs: r.maxHoldMs ?? 0,
        signal: combined.signal,
        ...(r.onQueued ? { onQueued: r.onQueued } : {}),
      } as const;
      return await acquire(this.client, request, { renewWhileWaiting: false });
    } finally {
      combined.dispose();
    }
  }

  /**
   * Takes `resource`, runs `fn(lock)` (the lock carries `fencingToken` and a
   * `signal` aborted if it is lost), then releases it, also when `fn` throws.
   */
  async withLock<T>(resource: string, options: LockOptions, fn: (lock: Lock) => Promise<T> | T): Promise<T> {
    const lock = await this.lock(resource, options);
    let failing = true;
    try {
      const value = await fn(lock);
      failing = false;
      return value;
    } finally {
      await lock.exitBlock(failing);
    }
  }

  /** Election `name`, campaigned in with this session. */
  election(name: string): Election {
    return new Election(this, name);
  }

  toString(): string {
    return `Session(lease ${this.leaseId}, ttl ${this.ttlMs} ms)`;
  }
}

/**
 * A counting semaphore on a session: at most `limit` holders, each with a
 * `slot` in 0..limit and a fresh fencing token (fenced per resource and
 * slot); a freed permit goes to the oldest waiter. Another limit than the
 * resource's current one is FailedPreconditionError (field `limit`).
 */
export class Semaphore {
  constructor(
    readonly session: Session,
    readonly resource: string,
    readonly limit: number,
  ) {}

  /** Takes one permit, waiting as `Session.lock` does. */
  acquire(options: LockOptions = {}): Promise<Lock> {
    return this.session.take(this.resource, options, "unspecified", this.limit, false);
  }

  /** Takes one permit if one is free now; else HeldError. */
  tryAcquire(options: Omit<LockOptions, "waitMs" | "onQueued"> = {}): Promise<Lock> {
    return this.session.take(this.resource, { ...options, waitMs: 0 }, "unspecified", this.limit, true);
  }
}

export type { ReleaseResult };
