package dev.warden.client;

import java.util.Optional;

/**
 * A resource's holder and queue, read linearizably (served by the leader after a read-index
 * round).
 *
 * @param resource the resource
 * @param holder the holder, empty when the resource is free
 * @param waiters waiters queued on it
 * @param readIndex the log index the read was served at
 */
public record LockStatus(String resource, Optional<Holder> holder, long waiters,
    long readIndex) {

  /**
   * The holder of a resource.
   *
   * @param leaseId the holding lease
   * @param fencingToken the grant's token
   * @param ttlRemainingMs as the serving leader's deadline table sees it
   * @param ttlMs the lease's TTL
   * @param value the value the holding lease published here (Proclaim), "" if none
   */
  public record Holder(long leaseId, long fencingToken, long ttlRemainingMs, long ttlMs,
      String value) {}
}
