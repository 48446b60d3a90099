/**
 * The clock a session's validity is measured on, and the validity rule.
 *
 * `validUntil` (docs/semantics.md S5) is a reading of this clock in ms: the
 * send time of the last acknowledged renew (or of the lease grant's first
 * attempt) plus {@link validityMs} of the TTL. The clock must count time the
 * machine spends suspended (a laptop that sleeps with a lock must not wake
 * up believing it still holds it). Node exposes no CLOCK_BOOTTIME, so
 * {@link BootClock} reads the monotonic clock (`process.hrtime`, which stops
 * while suspended) and adds the suspended time it learns from `/proc/uptime`
 * (CLOCK_BOOTTIME in hundredths of a second): the largest difference seen
 * between the two, each uptime reading rounded *up* by its 10 ms resolution,
 * so the clock may run up to 10 ms ahead of boot time (validity then ends a
 * little early: the safe side) and never behind it. Where `/proc/uptime`
 * cannot be read (not Linux) it is the monotonic clock alone, and
 * `countsSuspend` says so.
 *
 * A file on procfs (the default `/proc/uptime`) is kept open and read with
 * one `pread` at offset 0 per reading (procfs writes it afresh for each
 * read; about 2.5 µs against 15 µs for opening it each time). Any other path
 * is opened afresh for each reading, so a file that was replaced is read
 * anew and one that was removed is a ClockError, never a stale reading
 * through a descriptor kept open.
 */
import { closeSync, openSync, readFileSync, readSync, statfsSync } from "node:fs";

import { ClockError } from "./errors.js";

/** rho, the bound on clock-rate drift between two machines: 1 %, in parts per million. */
export const DRIFT_RHO_PPM = 10_000;
/** Margin subtracted from every validity the client computes (S5), in ms. */
export const VALIDITY_MARGIN_MS = 50;

/**
 * How long, in ms, a grant or renew can be trusted after the *send* of the
 * request it acknowledges (S5): `TTL × (1 − 2ρ) − 50 ms`; never negative.
 * Computed in whole microseconds, as the other clients do.
 */
export function validityMs(ttlMs: number): number {
  if (ttlMs <= 0) return 0;
  const ttlUs = ttlMs * 1000;
  const scaledUs = Math.floor((ttlUs * (1_000_000 - 2 * DRIFT_RHO_PPM)) / 1_000_000);
  return Math.max(0, scaledUs - VALIDITY_MARGIN_MS * 1000) / 1000;
}

/** A monotonic clock in ms; `now()` throws ClockError when it cannot be read. */
export interface Clock {
  readonly name: string;
  now(): number;
}

function monotonicMs(): number {
  return Number(process.hrtime.bigint()) / 1e6;
}

/** Boot time (counts suspend) where Linux tells it, else the monotonic clock. */
export class BootClock implements Clock {
  readonly countsSuspend: boolean;
  readonly name: string;
  private suspendedMs = 0;
  /** The descriptor of a procfs uptime file, kept open (never for other files). */
  private procFd: number | undefined;
  private readonly buffer = Buffer.alloc(128);

  constructor(private readonly uptimePath = "/proc/uptime") {
    this.procFd = openIfProcfs(uptimePath);
    this.countsSuspend = this.readUptimeMs() !== undefined;
    this.name = this.countsSuspend ? "boot time (monotonic + /proc/uptime)" : "monotonic (hrtime)";
  }

  /** True when readings go through a descriptor kept open (the file is on procfs). */
  get keptOpen(): boolean {
    return this.procFd !== undefined;
  }

  private readUptimeMs(): number | undefined {
    try {
      let text: string;
      if (this.procFd !== undefined) {
        const n = readSync(this.procFd, this.buffer, 0, this.buffer.length, 0);
        text = this.buffer.toString("latin1", 0, n);
      } else {
        text = readFileSync(this.uptimePath, "latin1");
      }
      const seconds = Number.parseFloat(text);
      return Number.isFinite(seconds) ? seconds * 1000 : undefined;
    } catch {
      return undefined;
    }
  }

  now(): number {
    let mono: number;
    try {
      mono = monotonicMs();
    } catch (e) {
      throw new ClockError(`clock ${this.name} cannot be read: ${String(e)}`);
    }
    if (this.countsSuspend) {
      const uptime = this.readUptimeMs();
      if (uptime === undefined) throw new ClockError(`clock ${this.name} cannot be read: ${this.uptimePath}`);
      // The reading is truncated to 10 ms: round it up, so the sum never lags boot time.
      const gap = uptime + 10 - mono;
      if (gap > this.suspendedMs) this.suspendedMs = gap;
    }
    return mono + this.suspendedMs;
  }
}

/** PROC_SUPER_MAGIC: the `f_type` of a procfs file system. */
const PROC_SUPER_MAGIC = 0x9fa0;

/** An open descriptor of `path` if it is a file on procfs, else undefined. */
function openIfProcfs(path: string): number | undefined {
  let fd: number | undefined;
  try {
    // Asked before and after the open (Node has no fstatfs): only a path that
    // names a procfs file on both sides of the open is kept open.
    if (statfsSync(path).type !== PROC_SUPER_MAGIC) return undefined;
    fd = openSync(path, "r");
    if (statfsSync(path).type === PROC_SUPER_MAGIC) return fd;
  } catch {
    // Not there, or no statfs: read afresh each time.
  }
  if (fd !== undefined) closeSync(fd);
  return undefined;
}

/** The default session clock. */
export const BOOT_CLOCK: Clock = new BootClock();
