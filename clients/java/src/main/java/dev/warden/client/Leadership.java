package dev.warden.client;

import java.util.concurrent.CompletableFuture;

/**
 * A term of office: the election's lock, held by the session. Valid while the session is
 * ({@link #check()} before each act of the leader); pass {@link #fencingToken()} with every
 * write so that a deposed leader's writes are rejected (S2). {@link #close()} resigns.
 */
public final class Leadership implements AutoCloseable {
  private final Lock lock;
  private final String name;

  Leadership(Lock lock, String name) {
    this.lock = lock;
    this.name = name;
  }

  /** The election's name. */
  public String name() {
    return name;
  }

  /** The token of this term: larger than every earlier term's. */
  public long fencingToken() {
    return lock.fencingToken();
  }

  /** The leader's session lease. */
  public long leaseId() {
    return lock.leaseId();
  }

  /** See {@link Session#validUntil()}. */
  public long validUntil() {
    return lock.validUntil();
  }

  /**
   * See {@link Session#check()}.
   *
   * @throws SessionLostException once the term can no longer be trusted
   */
  public void check() {
    lock.check();
  }

  /** See {@link Session#lost()}. */
  public CompletableFuture<LostReason> lost() {
    return lock.lost();
  }

  /**
   * Publishes a new value for this term (etcd {@code Proclaim}).
   *
   * @throws FailedPreconditionException if this term has ended (a deposed leader cannot
   *     proclaim)
   */
  public void proclaim(String value) {
    check();
    Blocking.await(lock.session().client().proclaimAsync(lock.resource(), leaseId(),
        fencingToken(), value), "proclaim");
  }

  /** Steps down: releases this term's grant (the next campaigner is elected in that entry). */
  public ReleaseResult resign() {
    return lock.release();
  }

  /** Resigns unless already resigned or the session is lost. */
  @Override
  public void close() {
    lock.close();
  }
}
