/**
 * Options and plain results. Units are in the names: milliseconds everywhere
 * (`ttlMs`, `waitMs`); ids and fencing tokens are numbers below 2^53 (exact
 * in JavaScript, docs/semantics.md "Words").
 */
import type { Clock } from "./clock.js";
import type { NotGrantedReason } from "./errors.js";
import type { TlsOptions } from "./tls.js";

/** In-flight window when the server publishes none (the outcomes it keeps per client, S7). */
export const DEFAULT_MAX_REQUESTS_IN_FLIGHT = 64;
/** Key prefix of every election when the server publishes none: U+0001 then `election/`. */
export const DEFAULT_ELECTION_PREFIX = "\u0001election/";

export interface ClientOptions {
  /** Mutual TLS; omitted = plaintext (a cluster started with `--insecure`). */
  readonly tls?: TlsOptions;
  /** The longest one call may take, retries included (a waiting acquire: its wait on top). Default 5000. */
  readonly deadlineMs?: number;
  /** The longest one attempt at one node may take. Default 500. */
  readonly attemptTimeoutMs?: number;
  /** The longest pause between two rounds over the endpoints (starts at 25 ms, doubles). Default 200. */
  readonly backoffCapMs?: number;
  /** Narrows the server's published in-flight window (never widens it, S7). */
  readonly maxRequestsInFlight?: number;
}

export interface SessionOptions {
  /** The lease's TTL (1 s ..= 1 h, or what the server publishes). Default 10000. */
  readonly ttlMs?: number;
  /** The clock `validUntil` is read on. Default: {@link BOOT_CLOCK}. */
  readonly clock?: Clock;
  /** Unref the keep-alive timers, so an open session alone does not keep the process running. */
  readonly unref?: boolean;
}

/** A read-write lock's grant mode, or unspecified (a mutex or a permit). */
export type LockMode = "unspecified" | "shared" | "exclusive";

/** A queued acquire's report: its place in line. */
export interface Queued {
  readonly position: number;
  readonly leaseId: number;
  /** "holder", "lock_delay", "waiters" or "" (unknown). */
  readonly behind: string;
}

/** One resource of a multi-lock's grant, with its own token. */
export interface ResourceToken {
  readonly resource: string;
  readonly fencingToken: number;
}

export interface Granted {
  readonly granted: true;
  readonly resource: string;
  readonly leaseId: number;
  readonly fencingToken: number;
  readonly ttlMs: number;
  readonly logIndex: number;
  /** A semaphore permit's slot in 0..limit, else undefined. */
  readonly slot: number | undefined;
  readonly mode: LockMode;
  /** A multi-lock's tokens, in the order asked (empty for a single resource). */
  readonly grants: readonly ResourceToken[];
  readonly maxHoldMs: number;
}

export interface NotGranted {
  readonly granted: false;
  readonly resource: string;
  readonly holderLeaseId: number;
  readonly reason: NotGrantedReason;
}

/** What the wire-level {@link Client.acquire} sends. */
export interface AcquireRequest {
  /** The resource; "" (or the first) for a multi-lock. */
  readonly resource?: string;
  /** A new lease with this TTL ... */
  readonly ttlMs?: number;
  /** ... or an existing lease (a session). */
  readonly leaseId?: number;
  /** How long to wait in the server's FIFO queue; 0 = try-lock. */
  readonly waitMs?: number;
  readonly lockDelayMs?: number;
  readonly mode?: LockMode;
  /** > 0: one permit of a semaphore of this many permits. */
  readonly limit?: number;
  /** A multi-lock of these mutexes, all or none. */
  readonly resources?: readonly string[];
  /** > 0: the grant ends at most this long after it was made. */
  readonly maxHoldMs?: number;
  /** Reports each `queued` message. */
  readonly onQueued?: (q: Queued) => void;
  /** Abandons the acquire: a CancelWait is sent (and answered) before the promise rejects with the signal's reason. */
  readonly signal?: AbortSignal;
}

export interface Holder {
  readonly leaseId: number;
  readonly fencingToken: number;
  readonly ttlRemainingMs: number;
  readonly ttlMs: number;
  readonly value: string;
  readonly mode: LockMode;
  readonly slot: number | undefined;
}

export interface ResourceStatus {
  readonly resource: string;
  /** The exclusive holder, if any. */
  readonly holder: Holder | undefined;
  /** Every holder (readers, permits, or the exclusive one). */
  readonly holders: readonly Holder[];
  readonly waiters: number;
  readonly readIndex: number;
  /** "mutex", "read_write", "semaphore", or "" when free. */
  readonly kind: string;
  readonly limit: number;
  readonly lockDelayRemainingMs: number;
}

export interface Member {
  readonly id: number;
  readonly addr: string;
  readonly role: string;
  readonly appliedIndex: number;
}

export interface ClusterStatus {
  readonly clusterId: string;
  readonly leaderId: number;
  readonly term: number;
  readonly commitIndex: number;
  readonly nodeId: number;
  readonly members: readonly Member[];
  readonly maxRequestsInFlight: number | undefined;
  readonly electionPrefix: string | undefined;
  /** E, the most a leader change may lengthen a lease (ms), if published. */
  readonly boundEMs: number | undefined;
}

export interface LeaseInfo {
  readonly leaseId: number;
  readonly ttlMs: number;
  readonly ttlRemainingMs: number;
  readonly locks: readonly string[];
  readonly waits: readonly string[];
  readonly graced: boolean;
}

export interface ListedLock {
  readonly resource: string;
  readonly holder: { readonly leaseId: number; readonly fencingToken: number } | undefined;
  readonly waiters: readonly { readonly leaseId: number; readonly ageMs: number }[];
}

export interface ReleaseResult {
  readonly resource: string;
  readonly leaseId: number;
  readonly released: boolean;
}

export interface RenewResult {
  readonly leaseId: number;
  readonly ttlMs: number;
  readonly sequence: number;
}

export interface CancelWaitResult {
  readonly resource: string;
  readonly leaseId: number;
  /** "removed", "released", "preempted" or "none". */
  readonly outcome: string;
  readonly fencingToken: number;
}

export interface ValidateResult {
  readonly resource: string;
  readonly fencingToken: number;
  /** "current", "stale" or "unknown". ADVISORY: only the resource's own check closes the window. */
  readonly state: string;
  readonly holderToken: number;
}

/** An election's leader. */
export interface LeaderInfo {
  readonly leaseId: number;
  readonly fencingToken: number;
  readonly value: string;
}

/** One lock-table event of a watch, in commit order. */
export interface WatchEvent {
  readonly index: number;
  readonly resource: string;
  /** granted, released, expired, revoked, queued, cancelled, forced, lock_delay_ended, proclaimed, max_hold. */
  readonly event: string;
  readonly leaseId: number;
  readonly fencingToken: number;
}
