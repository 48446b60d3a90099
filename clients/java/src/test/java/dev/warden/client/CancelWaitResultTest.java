package dev.warden.client;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;

class CancelWaitResultTest {

  // Defends S8 (CancelWait's answer is read as the server wrote it): each outcome string of
  // warden.proto's CancelWaitResponse maps to its own value; anything else is NONE.
  @Test
  void everyOutcomeOfTheProtoIsTyped() {
    assertEquals(CancelWaitResult.Outcome.REMOVED, CancelWaitResult.Outcome.of("removed"));
    assertEquals(CancelWaitResult.Outcome.RELEASED, CancelWaitResult.Outcome.of("released"));
    assertEquals(CancelWaitResult.Outcome.PREEMPTED, CancelWaitResult.Outcome.of("preempted"));
    assertEquals(CancelWaitResult.Outcome.NONE, CancelWaitResult.Outcome.of("none"));
    assertEquals(CancelWaitResult.Outcome.NONE, CancelWaitResult.Outcome.of("Removed"));
    assertEquals(CancelWaitResult.Outcome.NONE, CancelWaitResult.Outcome.of(""));
  }

  // Defends S8's preempted cancel: the acquire the cancel overtook is refused with reason
  // "cancelled", typed like every other reason; an unknown reason is null, not a guess.
  @Test
  void theCancelledReasonIsTyped() {
    assertEquals(NotGrantedReason.CANCELLED, NotGrantedReason.of("cancelled"));
    assertEquals(NotGrantedReason.HELD, NotGrantedReason.of("held"));
    assertEquals(NotGrantedReason.LOCK_DELAY, NotGrantedReason.of("lock_delay"));
    assertEquals(NotGrantedReason.WAIT_TIMEOUT, NotGrantedReason.of("wait_timeout"));
    assertEquals(null, NotGrantedReason.of("something_new"));
  }
}
