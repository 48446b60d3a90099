package dev.warden.client;

import java.util.Optional;
import java.util.concurrent.CompletableFuture;

/**
 * Leader election on a {@link Session} (etcd's {@code concurrency.Election}: campaign, proclaim,
 * leader, observe, resign), with a fencing token for each term of office.
 *
 * <p>An election named N is the lock-table key {@code prefix + N}, where the prefix is the one
 * the server publishes ({@link WardenClient#electionPrefix()}; U+0001 {@code election/} today,
 * which no lock name may contain): elections live apart from lock resources. A campaigner
 * publishes its value as a candidate ({@code Proclaim} with token 0), then waits in the key's
 * FIFO queue (S8: first come, first elected); its grant is its term of office, and the grant's
 * fencing token the term's token.
 */
public final class Election {
  private final Session session;
  private final String name;

  Election(Session session, String name) {
    this.session = session;
    this.name = name;
  }

  /** The election's name. */
  public String name() {
    return name;
  }

  /** The lock-table key of this election. */
  public String key() {
    return session.client().electionPrefix() + name;
  }

  /**
   * Stands with {@code value} (at most 4,096 bytes) and waits until elected. Cancelling the
   * future withdraws the candidacy's wait ({@code CancelWait}, as {@link Session#lockAsync}).
   */
  public CompletableFuture<Leadership> campaignAsync(String value) {
    CompletableFuture<Leadership> out = new CompletableFuture<>();
    try {
      session.check();
    } catch (SessionLostException e) {
      return CompletableFuture.failedFuture(e);
    }
    String key = key();
    session.client().proclaimAsync(key, session.leaseId(), 0, value).whenComplete((v, e) -> {
      if (e != null) {
        out.completeExceptionally(dev.warden.client.internal.Failure.unwrap(e));
        return;
      }
      if (out.isDone()) {
        return;
      }
      PendingLock pending = session.lockAsync(key);
      out.whenComplete((l, err) -> {
        if (out.isCancelled() || err != null && !pending.isDone()) {
          pending.cancel(true);
        }
      });
      pending.whenComplete((lock, err) -> {
        if (err != null) {
          out.completeExceptionally(dev.warden.client.internal.Failure.unwrap(err));
        } else if (!out.complete(new Leadership(lock, name))) {
          lock.close();
        }
      });
    });
    return out;
  }

  /**
   * {@link #campaignAsync}, waiting until elected.
   *
   * @throws SessionLostException when the session is lost first (the candidacy goes with it)
   * @throws InvalidArgumentException for a bad name or a value over 4,096 bytes
   */
  public Leadership campaign(String value) {
    return Blocking.await(campaignAsync(value), "campaign " + name);
  }

  /** The current leader, if any (a linearizable read). */
  public Optional<LeaderInfo> leader() {
    return session.client().electionLeader(name);
  }

  /** Follows the election's leaders; see {@link Observer}. */
  public Observer observe() {
    return session.client().observe(name);
  }
}
