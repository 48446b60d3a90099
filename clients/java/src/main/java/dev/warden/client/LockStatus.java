package dev.warden.client;

import java.util.List;
import java.util.Optional;
import java.util.OptionalInt;

/**
 * A resource's holders and queue, read linearizably (served by the leader after a read-index
 * round).
 *
 * @param resource the resource
 * @param holder the exclusive holder (a mutex's or a writer), empty when the resource is free or
 *     held by readers or permits (see {@code kind} and {@code holders})
 * @param waiters waiters queued on it
 * @param readIndex the log index the read was served at
 * @param kind "mutex", "read_write" or "semaphore" while anything is on the resource; "" when it
 *     is free (docs/semantics.md "Lock kinds")
 * @param limit a semaphore's number of permits; 0 for the other kinds
 * @param holders every holder: the exclusive one, or every reader or permit, by lease id
 */
public record LockStatus(String resource, Optional<Holder> holder, long waiters,
    long readIndex, String kind, int limit, List<Holder> holders) {

  /**
   * A holder of a resource.
   *
   * @param leaseId the holding lease
   * @param fencingToken the grant's token
   * @param ttlRemainingMs as the serving leader's deadline table sees it
   * @param ttlMs the lease's TTL
   * @param value the value the holding lease published here (Proclaim), "" if none
   * @param mode SHARED for a reader, EXCLUSIVE for a writer, UNSPECIFIED for a mutex's holder or
   *     a permit
   * @param slot a permit's slot in 0..limit; empty for every other holder
   */
  public record Holder(long leaseId, long fencingToken, long ttlRemainingMs, long ttlMs,
      String value, LockMode mode, OptionalInt slot) {

    static Holder of(warden.v1.Warden.Holder h) {
      return new Holder(h.getLeaseId(), h.getFencingToken(), h.getTtlRemainingMs(),
          h.getTtlMs(), h.getValue(), LockMode.of(h.getMode()),
          h.hasSlot() ? OptionalInt.of(h.getSlot()) : OptionalInt.empty());
    }
  }
}
