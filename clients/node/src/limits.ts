/**
 * Arguments checked before anything is sent: a bad one is a TypeError (not a
 * whole number of ms, not a string) or a RangeError naming the argument and
 * the limit, never silently clamped. The limits are the server's (docs/
 * semantics.md "What bad input gets"; the TTL, wait and lock-delay bounds as
 * the cluster publishes them in ClusterStatus, once known).
 *
 * The wire-level `Client.acquire` checks types only, so the server's own
 * refusal (InvalidArgumentError with the field from its details) stays
 * reachable.
 */

export interface Limits {
  minTtlMs: number;
  maxTtlMs: number;
  maxWaitMs: number;
  maxLockDelayMs: number;
}

export const DEFAULT_LIMITS: Readonly<Limits> = {
  minTtlMs: 1000,
  maxTtlMs: 3_600_000,
  maxWaitMs: 3_600_000,
  maxLockDelayMs: 60_000,
};

export const MIN_MAX_HOLD_MS = 1000;
export const MAX_MAX_HOLD_MS = 86_400_000;
export const MAX_SEMAPHORE_LIMIT = 10_000;
export const MAX_MULTI_LOCK = 64;
export const MAX_RESOURCE_BYTES = 512;
export const MAX_ID = 2 ** 53 - 1;

/** A whole number of ms (or count) ≥ 0 that is a safe integer; TypeError otherwise. */
export function wholeNumber(name: string, value: unknown): number {
  if (typeof value !== "number" || !Number.isSafeInteger(value) || value < 0) {
    throw new TypeError(`${name} must be a whole number >= 0 (milliseconds or a count); got ${String(value)}`);
  }
  return value;
}

export function inRange(name: string, value: unknown, min: number, max: number): number {
  const v = wholeNumber(name, value);
  if (v < min || v > max) throw new RangeError(`${name} must be within ${min}..=${max}; got ${v}`);
  return v;
}

export function checkTtl(ttlMs: unknown, limits: Limits): number {
  return inRange("ttlMs", ttlMs, limits.minTtlMs, limits.maxTtlMs);
}

export function checkWait(waitMs: unknown, limits: Limits): number {
  return inRange("waitMs", waitMs, 0, limits.maxWaitMs);
}

export function checkLockDelay(lockDelayMs: unknown, limits: Limits): number {
  return inRange("lockDelayMs", lockDelayMs, 0, limits.maxLockDelayMs);
}

/** A max-hold (1 s ..= 24 h) that is longer than the wait (no grant may arrive already past its cap). */
export function checkMaxHold(maxHoldMs: unknown, waitMs: number): number {
  const v = inRange("maxHoldMs", maxHoldMs, MIN_MAX_HOLD_MS, MAX_MAX_HOLD_MS);
  if (waitMs >= v) throw new RangeError(`waitMs must be below maxHoldMs (${v}); got ${waitMs}`);
  return v;
}

export function checkLimit(limit: unknown): number {
  return inRange("limit", limit, 1, MAX_SEMAPHORE_LIMIT);
}

export function checkId(name: string, id: unknown): number {
  return inRange(name, id, 1, MAX_ID);
}

/** 1..=512 bytes of UTF-8, no control character (docs/semantics.md "Words"). */
export function checkResource(resource: unknown, name = "resource"): string {
  if (typeof resource !== "string") throw new TypeError(`${name} must be a string; got ${typeof resource}`);
  const bytes = Buffer.byteLength(resource, "utf8");
  if (bytes < 1 || bytes > MAX_RESOURCE_BYTES) {
    throw new RangeError(`${name} must be 1..=${MAX_RESOURCE_BYTES} bytes of UTF-8; got ${bytes}`);
  }
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f]/.test(resource)) {
    throw new RangeError(`${name} must not contain a control character`);
  }
  return resource;
}

/** A name to read (status, watch): 1..=512 bytes; election keys start with a control character on purpose. */
export function checkReadName(resource: unknown, name = "resource"): string {
  if (typeof resource !== "string") throw new TypeError(`${name} must be a string; got ${typeof resource}`);
  const bytes = Buffer.byteLength(resource, "utf8");
  if (bytes < 1 || bytes > MAX_RESOURCE_BYTES + 64) {
    throw new RangeError(`${name} must be 1..=${MAX_RESOURCE_BYTES} bytes of UTF-8; got ${bytes}`);
  }
  return resource;
}

export function checkResources(resources: unknown): string[] {
  if (!Array.isArray(resources)) throw new TypeError("resources must be an array of names");
  if (resources.length < 1 || resources.length > MAX_MULTI_LOCK) {
    throw new RangeError(`resources must name 1..=${MAX_MULTI_LOCK} resources; got ${resources.length}`);
  }
  const seen = new Set<string>();
  for (const r of resources) {
    checkResource(r, "resources[]");
    if (seen.has(r)) throw new RangeError(`resources must be distinct; ${JSON.stringify(r)} appears twice`);
    seen.add(r);
  }
  return [...seen];
}
