package dev.warden.client;

/**
 * A queue position report of a waiting acquire.
 *
 * @param position 1 = next in line
 * @param leaseId the waiter's lease
 */
public record Queued(long position, long leaseId) {}
