package dev.warden.client;

/**
 * How a grant holds its resource (docs/semantics.md "Lock kinds"): the wire's {@code LockMode}.
 */
public enum LockMode {
  /** A mutex's holder or a semaphore's permit (wire {@code LOCK_MODE_UNSPECIFIED}). */
  UNSPECIFIED,
  /** A read-write lock's reader: beside other readers, never beside a writer. */
  SHARED,
  /** A read-write lock's writer: alone. */
  EXCLUSIVE;

  static LockMode of(warden.v1.Warden.LockMode wire) {
    return switch (wire) {
      case LOCK_MODE_SHARED -> SHARED;
      case LOCK_MODE_EXCLUSIVE -> EXCLUSIVE;
      default -> UNSPECIFIED;
    };
  }

  warden.v1.Warden.LockMode toWire() {
    return switch (this) {
      case SHARED -> warden.v1.Warden.LockMode.LOCK_MODE_SHARED;
      case EXCLUSIVE -> warden.v1.Warden.LockMode.LOCK_MODE_EXCLUSIVE;
      case UNSPECIFIED -> warden.v1.Warden.LockMode.LOCK_MODE_UNSPECIFIED;
    };
  }
}
