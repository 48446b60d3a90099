package dev.warden.client;

/**
 * One change of the lock table, as the server streamed it.
 *
 * @param index the log index of the committed entry that made the change (one entry can make
 *     several events, in the order it made them)
 * @param resource the resource
 * @param event granted, released, expired, revoked, queued, cancelled, forced,
 *     lock_delay_ended or proclaimed
 * @param leaseId the lease concerned; 0 when none
 * @param fencingToken the grant's token (granted) or the ended grant's (released, expired,
 *     revoked, forced); 0 otherwise
 */
public record WatchEvent(long index, String resource, String event, long leaseId,
    long fencingToken) {}
