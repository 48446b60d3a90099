package dev.warden.client;

import java.time.Duration;

/**
 * How a session is made.
 *
 * @param ttl the lease's TTL (server bounds 1 s ..= 1 h, whole milliseconds); the keep-alive
 *     runs every TTL/3
 * @param clock the clock validity is measured on (see {@link SessionClock} for what the default
 *     gives up)
 */
public record SessionOptions(Duration ttl, SessionClock clock) {
  /** A session with this TTL on {@link SessionClock#SYSTEM}. */
  public static SessionOptions ofTtl(Duration ttl) {
    return new SessionOptions(ttl, SessionClock.SYSTEM);
  }
}
