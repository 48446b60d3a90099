package dev.warden.client;

/**
 * What abandoning a waiting acquire did on the server ({@code Lock/CancelWait}, committed and
 * exactly-once).
 *
 * @param resource the resource
 * @param leaseId the waiter's lease
 * @param outcome what the cancel did
 * @param fencingToken the released grant's token, when {@code outcome} is RELEASED
 */
public record CancelWaitResult(String resource, long leaseId, Outcome outcome,
    long fencingToken) {

  /** What the cancel did. */
  public enum Outcome {
    /** The waiter was removed from the queue. */
    REMOVED,
    /** The grant won the race; the cancel released it. */
    RELEASED,
    /**
     * The acquire had not been applied yet; the server will refuse it ("cancelled") when it is.
     */
    PREEMPTED,
    /** Nothing to cancel: no such waiter (it was never queued, or already gone). */
    NONE;

    /** From the server's string; NONE for anything else. */
    public static Outcome of(String wire) {
      return switch (wire) {
        case "removed" -> REMOVED;
        case "released" -> RELEASED;
        case "preempted" -> PREEMPTED;
        default -> NONE;
      };
    }
  }
}
