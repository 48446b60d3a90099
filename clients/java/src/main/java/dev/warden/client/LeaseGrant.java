package dev.warden.client;

/**
 * A new lease.
 *
 * @param leaseId the lease
 * @param ttlMs its TTL as granted
 */
public record LeaseGrant(long leaseId, long ttlMs) {}
