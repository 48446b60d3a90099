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
 */
import { readFileSync } from "node:fs";

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

  constructor(private readonly uptimePath = "/proc/uptime") {
    this.countsSuspend = this.readUptimeMs() !== undefined;
    this.name = this.countsSuspend ? "boot time (monotonic + /proc/uptime)" : "monotonic (hrtime)";
  }

  private readUptimeMs(): number | undefined {
    try {
      const text = readFileSync(this.uptimePath, "latin1");
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

/** The default session clock. */
export const BOOT_CLOCK: Clock = new BootClock();
