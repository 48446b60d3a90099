package dev.warden.client;

import java.util.List;
import java.util.Optional;

/**
 * Every resource under a prefix with its holder and waiters ({@code Admin/List}, a linearizable
 * read served by the leader).
 *
 * @param locks the resources, in name order
 * @param readIndex the log index the read was served at
 */
public record Listing(List<Listed> locks, long readIndex) {

  /**
   * One resource.
   *
   * @param resource the resource
   * @param holder its holder, empty when nobody holds it (waiters during a lock-delay)
   * @param waiterLeaseIds the waiters' leases in queue order (next to be granted first)
   */
  public record Listed(String resource, Optional<ListedHolder> holder,
      List<Long> waiterLeaseIds) {}

  /**
   * A holder.
   *
   * @param leaseId the holding lease
   * @param fencingToken the grant's token
   * @param ttlRemainingMs the lease's remaining TTL on the serving node
   */
  public record ListedHolder(long leaseId, long fencingToken, long ttlRemainingMs) {}
}
