package dev.warden.client;

import java.util.List;

/**
 * A lease as the leader sees it (a linearizable read).
 *
 * @param leaseId the lease
 * @param ttlMs its TTL
 * @param ttlRemainingMs as the leader's deadline table sees it
 * @param locks resources it holds, in name order
 * @param waits resources it waits on, in name order
 * @param graced true when a leader change's grace (G) was given since its last renew
 */
public record LeaseInfo(long leaseId, long ttlMs, long ttlRemainingMs, List<String> locks,
    List<String> waits, boolean graced) {}
