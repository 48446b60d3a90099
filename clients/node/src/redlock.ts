/**
 * A migration path from the `redlock` package: the same shape
 * (`acquire(resources, duration)`, `release(lock)`, `extend(lock, duration)`,
 * `using(resources, duration, routine)`), on Warden's leases and fair queue,
 * and every lock carries its fencing token.
 *
 * What changes underneath (README "Moving from redlock"):
 * - `duration` is the lease's TTL: 1 s ..= 1 h (RangeError outside it; never
 *   clamped). A lease keeps its TTL, so `extend` renews it for the same
 *   duration (another duration is a RangeError).
 * - Several resources are one multi-lock: all in one committed entry, or none.
 * - `retryCount` × `retryDelay` become one wait in the server's FIFO queue
 *   (no client-side retry storms); `retryCount: -1` waits as long as it takes.
 * - `expiration` is counted from the acquire's *send*, less the clock-drift
 *   allowance (S5), as a wall-clock time in ms (`Date.now()` scale).
 * - Nothing protects a write by itself: pass `lock.fencingToken` with each
 *   write and have the resource refuse an older one.
 */
import type { Client } from "./client.js";
import { BOOT_CLOCK, validityMs } from "./clock.js";
import { notGrantedError } from "./errors.js";
import { checkResources, checkTtl, checkWait } from "./limits.js";
import type { Lock } from "./lock.js";

export interface RedlockSettings {
  /** How long to wait in the queue for a held resource (overrides retryCount × retryDelay). */
  readonly waitMs?: number;
  /** As redlock's: together with retryDelay, the wait (default 10 × 200 ms); -1 = as long as it takes. */
  readonly retryCount?: number;
  readonly retryDelay?: number;
  /** Lock-delay after an involuntary loss (0 ..= 1 min). */
  readonly lockDelayMs?: number;
}

const FOREVER = -1;
const MAX_WAIT_MS = 3_600_000;

/** The signal `using` hands its routine: aborted (reason and `error`) when the lock is lost. */
export type RedlockAbortSignal = AbortSignal & { readonly error?: Error };

/** A lock as redlock shapes it, plus its fencing tokens. */
export class RedlockLock {
  constructor(
    private readonly redlock: WardenRedlock,
    readonly resources: readonly string[],
    /** Wall-clock ms (Date.now() scale) until which the lock is certainly held. */
    public expiration: number,
    /** The first resource's token (a multi-lock's others: {@link fencingTokens}). */
    readonly fencingToken: number,
    readonly fencingTokens: Readonly<Record<string, number>>,
    readonly leaseId: number,
    readonly ttlMs: number,
  ) {}

  /** The first resource (for fencing headers). */
  get resource(): string {
    return this.resources[0]!;
  }

  release(): Promise<void> {
    return this.redlock.release(this);
  }

  extend(duration: number): Promise<RedlockLock> {
    return this.redlock.extend(this, duration);
  }
}

function wallClockOf(sessionClockMs: number): number {
  return Date.now() + (sessionClockMs - BOOT_CLOCK.now());
}

export class WardenRedlock {
  constructor(
    readonly client: Client,
    readonly settings: RedlockSettings = {},
  ) {}

  private waitOf(settings: RedlockSettings): number | undefined {
    const s = { ...this.settings, ...settings };
    if (s.waitMs !== undefined) return checkWait(s.waitMs, this.client.limits);
    const count = s.retryCount ?? 10;
    if (count === FOREVER) return undefined;
    return checkWait(Math.max(0, count) * (s.retryDelay ?? 200), this.client.limits);
  }

  /** Takes every resource (one multi-lock when several) on a lease of TTL `duration`; typed NotGrantedError if not granted. */
  async acquire(resources: readonly string[], duration: number, settings: RedlockSettings = {}): Promise<RedlockLock> {
    const names = checkResources(resources);
    await this.client.serverParams();
    const ttlMs = checkTtl(duration, this.client.limits);
    const wait = this.waitOf(settings);
    const lockDelayMs = settings.lockDelayMs ?? this.settings.lockDelayMs ?? 0;
    for (;;) {
      const sentAt = BOOT_CLOCK.now();
      const answer = await this.client.acquire({
        resource: names[0]!,
        ...(names.length > 1 ? { resources: names } : {}),
        ttlMs,
        waitMs: wait ?? MAX_WAIT_MS,
        lockDelayMs,
      });
      if (answer.granted) {
        const grants = answer.grants.length ? answer.grants : [{ resource: answer.resource, fencingToken: answer.fencingToken }];
        const tokens = Object.fromEntries(grants.map((g) => [g.resource, g.fencingToken]));
        return new RedlockLock(this, names, wallClockOf(sentAt + validityMs(answer.ttlMs)), answer.fencingToken, tokens, answer.leaseId, answer.ttlMs);
      }
      if (wait === undefined && answer.reason === "wait_timeout") continue;
      throw notGrantedError(answer.resource, answer.holderLeaseId, answer.reason);
    }
  }

  /** Releases the exact grant (a multi-lock: all of it); its lease ends with its last lock. */
  async release(lock: RedlockLock): Promise<void> {
    await this.client.release(lock.leaseId, lock.resource, lock.fencingToken);
  }

  /** Renews the lease for its TTL again (`duration` must be that TTL) and moves `expiration`; LeaseNotFoundError once lost. */
  async extend(lock: RedlockLock, duration: number): Promise<RedlockLock> {
    if (duration !== lock.ttlMs) {
      throw new RangeError(`duration must be the lock's TTL (${lock.ttlMs} ms): a Warden lease renews for its own TTL; got ${duration}`);
    }
    const sentAt = BOOT_CLOCK.now();
    const renewed = await this.client.keepAliveOnce(lock.leaseId);
    lock.expiration = Math.max(lock.expiration, wallClockOf(sentAt + validityMs(renewed.ttlMs)));
    return lock;
  }

  /**
   * Holds `resources` while `routine` runs, on a session kept alive in the
   * background (every duration/3); `routine` gets a signal aborted if the
   * lock is lost (pass it to fetch or your driver), and the lock (with its
   * fencing token). Released when `routine` settles.
   */
  using<T>(resources: readonly string[], duration: number, routine: (signal: RedlockAbortSignal, lock: Lock) => Promise<T>): Promise<T>;
  using<T>(resources: readonly string[], duration: number, settings: RedlockSettings, routine: (signal: RedlockAbortSignal, lock: Lock) => Promise<T>): Promise<T>;
  async using<T>(
    resources: readonly string[],
    duration: number,
    settingsOrRoutine: RedlockSettings | ((signal: RedlockAbortSignal, lock: Lock) => Promise<T>),
    maybeRoutine?: (signal: RedlockAbortSignal, lock: Lock) => Promise<T>,
  ): Promise<T> {
    const settings = typeof settingsOrRoutine === "function" ? {} : settingsOrRoutine;
    const routine = typeof settingsOrRoutine === "function" ? settingsOrRoutine : maybeRoutine;
    if (typeof routine !== "function") throw new TypeError("using: routine must be a function");
    const names = checkResources(resources);
    const wait = this.waitOf(settings);
    const session = await this.client.session({ ttlMs: duration });
    try {
      const lockDelayMs = settings.lockDelayMs ?? this.settings.lockDelayMs ?? 0;
      const options = { ...(wait !== undefined ? { waitMs: wait } : {}), lockDelayMs };
      const lock = names.length > 1 ? await session.lockAll(names, options) : await session.lock(names[0]!, options);
      const signal = lock.signal as RedlockAbortSignal;
      Object.defineProperty(signal, "error", { get: () => (signal.aborted ? (signal.reason as Error) : undefined) });
      let failing = true;
      try {
        const value = await routine(signal, lock);
        failing = false;
        return value;
      } finally {
        await lock.exitBlock(failing);
      }
    } finally {
      await session.close().catch(() => undefined);
    }
  }
}

export { WardenRedlock as Redlock };
