/**
 * A grant held by a session's lease ({@link Lock}, {@link MultiLock}), with
 * its fencing token, its validity and a signal aborted when it is lost.
 */
import { SessionLostError, WardenError } from "./errors.js";
import { MAX_TIMER_MS } from "./rpc.js";
import type { LockMode, Queued, ReleaseResult, ResourceToken } from "./types.js";
import type { Session } from "./session.js";

export interface LockOptions {
  /** How long to wait in the server's FIFO queue: undefined = as long as it takes, 0 = try once. */
  readonly waitMs?: number;
  /** Lock-delay after an involuntary loss of this grant (0 ..= 1 min). */
  readonly lockDelayMs?: number;
  /** The grant ends at most this long after it was made, however often the session renews (1 s ..= 24 h). */
  readonly maxHoldMs?: number;
  /** Reports each `queued` message (position in line). */
  readonly onQueued?: (q: Queued) => void;
  /** Abandons a waiting lock: CancelWait is sent and answered, then the promise rejects with the reason. */
  readonly signal?: AbortSignal;
}

/** Lost timers fire this much before the instant they guard (timers fire late, never early). */
export const LOST_TIMER_SLACK_MS = 50;

/**
 * A lock held by a session's lease, with the grant's fencing token. Call
 * {@link check} right before each protected write and pass
 * {@link fencingToken} with the write, so the resource refuses it if the lock
 * was lost anyway (S2). {@link signal} aborts (with a SessionLostError) when
 * the session is lost, the max-hold ends, or the lock is released: pass it to
 * `fetch` or a database driver. An operator's forced release of this one lock
 * is not seen here (the fence refuses the next write).
 */
export class Lock implements AsyncDisposable {
  /** Made when {@link signal} is first read (most locks are never asked for it). */
  private controller: AbortController | undefined;
  /** Why the lock can no longer be trusted, once it cannot (made on first use). */
  private abortReason: (() => unknown) | undefined;
  private detach: (() => void) | undefined;
  private maxHoldTimer: NodeJS.Timeout | undefined;
  released = false;

  constructor(
    readonly session: Session,
    readonly resource: string,
    readonly fencingToken: number,
    /** A semaphore permit's slot in 0..limit, else undefined. */
    readonly slot: number | undefined,
    readonly mode: LockMode,
    /** With a max-hold: the acquire's send + validity of the max-hold (session clock, ms). */
    readonly maxHoldUntil: number | undefined,
  ) {
    if (maxHoldUntil !== undefined) this.armMaxHold();
  }

  /** Whether the lock's trust has ended (first cause wins: its signal's reason). */
  private get aborted(): boolean {
    return this.abortReason !== undefined || this.session.lost.aborted || (this.controller?.signal.aborted ?? false);
  }

  /** Ends the lock's trust with `reason()` (called at most once, when first needed), unless already ended. */
  private abortWith(reason: () => unknown): void {
    if (this.aborted) return;
    let made: { value: unknown } | undefined;
    this.abortReason = () => (made ??= { value: reason() }).value;
    this.controller?.abort(this.abortReason());
  }

  /** The lease holding the lock (the session's). */
  get leaseId(): number {
    return this.session.leaseId;
  }

  /** Aborts (reason: SessionLostError) once the lock can no longer be trusted. */
  get signal(): AbortSignal {
    if (this.controller === undefined) {
      const controller = new AbortController();
      this.controller = controller;
      const lost = this.session.lost;
      if (this.abortReason !== undefined) controller.abort(this.abortReason());
      else if (lost.aborted) controller.abort(lost.reason);
      else {
        const onLost = () => controller.abort(lost.reason);
        lost.addEventListener("abort", onLost, { once: true });
        this.detach = () => lost.removeEventListener("abort", onLost);
      }
    }
    return this.controller.signal;
  }

  /** The earlier of the session's `validUntil` and `maxHoldUntil` (session clock, ms). */
  get validUntil(): number {
    const s = this.session.validUntil;
    return this.maxHoldUntil === undefined ? s : Math.min(s, this.maxHoldUntil);
  }

  private armMaxHold(): void {
    const at = this.maxHoldUntil as number;
    const tick = () => {
      if (this.aborted) return;
      let left: number;
      try {
        left = at - this.session.clock.now() - LOST_TIMER_SLACK_MS;
      } catch {
        left = 0;
      }
      if (left <= 0) {
        this.abortWith(() => new SessionLostError("max_hold", this.leaseId, at));
        return;
      }
      // Re-read the session clock at least every second (Node's timers stop while suspended).
      this.maxHoldTimer = setTimeout(tick, Math.min(left, 1000, MAX_TIMER_MS));
      if (this.session.unref) this.maxHoldTimer.unref();
    };
    tick();
  }

  /**
   * Returns while the lock is certainly held: the session is valid, the
   * max-hold (if any) has not run out, and it was not released. Synchronous
   * and cheap; throws SessionLostError otherwise.
   */
  check(): void {
    if (this.released) throw new SessionLostError("released", this.leaseId, undefined, "lock released");
    this.session.check();
    if (this.maxHoldUntil !== undefined && this.session.clock.now() >= this.maxHoldUntil) {
      const error = new SessionLostError("max_hold", this.leaseId, this.maxHoldUntil);
      this.abortWith(() => error);
      throw error;
    }
  }

  private settle(): void {
    this.released = true;
    clearTimeout(this.maxHoldTimer);
    this.detach?.();
    // Not after the session was lost: the signal's reason is then the loss.
    if (!this.session.lost.aborted) {
      this.abortWith(() => new SessionLostError("released", this.leaseId, undefined, "lock released"));
    }
  }

  /** Releases this exact grant (S6) once the release commits; FailedPrecondition/NotFound when it had ended. */
  async release(): Promise<ReleaseResult> {
    this.settle();
    return this.session.client.release(this.leaseId, this.resource, this.fencingToken);
  }

  /** Releases unless already released or the session is lost (nothing left to release). */
  async [Symbol.asyncDispose](): Promise<void> {
    if (this.released || this.session.lost.aborted) {
      this.settle();
      return;
    }
    await this.release();
  }

  /** @internal Leaving a block: releases; a release error is thrown only when the block itself did not fail. */
  async exitBlock(failing: boolean): Promise<void> {
    try {
      await this[Symbol.asyncDispose]();
    } catch (e) {
      if (!failing || !(e instanceof WardenError)) throw e;
    }
  }

  toString(): string {
    return `Lock(${JSON.stringify(this.resource)}, lease ${this.leaseId}, token ${this.fencingToken})`;
  }
}

/**
 * A multi-lock (`session.lockAll`): every resource with its own fencing
 * token, in the order asked; `resource` and `fencingToken` are the first's.
 * Releasing it frees all of them in one committed entry.
 */
export class MultiLock extends Lock {
  constructor(
    session: Session,
    readonly grants: readonly ResourceToken[],
  ) {
    super(session, grants[0]!.resource, grants[0]!.fencingToken, undefined, "unspecified", undefined);
  }

  /** The token of `resource` in this grant, undefined if it is not one of its resources. */
  token(resource: string): number | undefined {
    return this.grants.find((g) => g.resource === resource)?.fencingToken;
  }
}
