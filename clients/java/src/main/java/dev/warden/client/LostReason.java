package dev.warden.client;

/** Why a session (and every lock on it) can no longer be trusted (docs/semantics.md S5). */
public enum LostReason {
  /**
   * No keep-alive was acknowledged in time: the session clock passed {@code validUntil} (no
   * server reachable, no quorum, or this process was paused). The server may already have
   * expired the lease and granted its locks to others.
   */
  EXPIRED,
  /** The cluster no longer has the lease (it expired, or someone revoked it). */
  LEASE_GONE,
  /** {@link Session#close()} was called. */
  CLOSED,
  /**
   * A {@link Lock}'s max-hold passed (docs/semantics.md "Max-hold"): the grant, not the
   * session, ended; only that lock's {@link Lock#check()} reports it.
   */
  MAX_HOLD
}
