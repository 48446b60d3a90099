/**
 * Warden's Node.js client: sessions with an honest validity, fenced locks of
 * every kind, elections, watches. See README.md.
 */
export { Client, type Attempt, type CallOptions } from "./client.js";
export { Session, Semaphore } from "./session.js";
export { Lock, MultiLock, type LockOptions } from "./lock.js";
export { Election, Leadership } from "./election.js";
export { Watcher, Observer, type WatchOptions } from "./watch.js";
export { BootClock, BOOT_CLOCK, validityMs, DRIFT_RHO_PPM, VALIDITY_MARGIN_MS, type Clock } from "./clock.js";
export { tlsFromCertsDir, DEFAULT_USER, type TlsOptions } from "./tls.js";
export { fencingHeaders, readFencingHeaders, FencingHeaderError, type FencingClaim } from "./fence.js";
export { DEFAULT_LIMITS, type Limits } from "./limits.js";
export * from "./errors.js";
export * from "./types.js";
