package dev.warden.client;

import java.time.Duration;

/**
 * How long a grant or renew can be trusted after the send of the request it acknowledges
 * (docs/semantics.md S5): TTL × (1 − 2ρ) − 50 ms, ρ = 1 %, saturating at zero. The server
 * never expires a lease earlier than TTL × (1 − ρ) after that send (S4); the server's clock may
 * run fast by ρ and this one slow by ρ; the margin covers the rest.
 */
public final class Validity {
  /** ρ, the bound on clock rate drift between two machines, in parts per million (1 %). */
  public static final long DRIFT_RHO_PPM = 10_000;
  /** The margin taken off every validity. */
  public static final Duration MARGIN = Duration.ofMillis(50);

  private Validity() {}

  /** The validity of a TTL given in milliseconds. */
  public static Duration ofTtlMs(long ttlMs) {
    long ttlNanos = Math.max(0, ttlMs) * 1_000_000L;
    long scaled = ttlNanos / 1_000_000 * (1_000_000 - 2 * DRIFT_RHO_PPM)
        + ttlNanos % 1_000_000 * (1_000_000 - 2 * DRIFT_RHO_PPM) / 1_000_000;
    long nanos = scaled - MARGIN.toNanos();
    return Duration.ofNanos(Math.max(0, nanos));
  }
}
