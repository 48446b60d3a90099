package dev.warden.client;

/**
 * The calling thread was interrupted while it waited for a blocking call. The call was
 * abandoned (a waiting lock sends {@code CancelWait}) and the thread's interrupt flag is set
 * again.
 */
public class CallInterruptedException extends WardenException {
  private static final long serialVersionUID = 1L;

  /** With the interrupt as the cause. */
  public CallInterruptedException(String what, InterruptedException cause) {
    super(what + " was interrupted", null, "", java.util.Map.of(), cause);
  }
}
