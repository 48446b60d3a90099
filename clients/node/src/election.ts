/**
 * Leader election on a session (campaign, proclaim, leader, observe,
 * resign), with a fencing token for each term of office.
 *
 * Election `N` is the lock-table key `prefix + N`, the prefix being what the
 * server publishes (by default U+0001 then `election/`, which no lock name
 * can contain), so elections live apart from locks. A campaigner publishes
 * its value as a candidate (Proclaim with token 0), then waits in the key's
 * FIFO queue (S8: first come, first elected); its grant is its term and the
 * grant's token the term's token.
 */
import { checkResource } from "./limits.js";
import type { Lock } from "./lock.js";
import type { Session } from "./session.js";
import type { LeaderInfo, ReleaseResult } from "./types.js";
import { Observer } from "./watch.js";

export class Election {
  constructor(
    readonly session: Session,
    readonly name: string,
  ) {}

  /**
   * Stands with `value` (at most 4,096 bytes) and waits until elected. The
   * wait survives the cluster's leader changes (S8); aborting `signal`
   * withdraws the candidacy (CancelWait). SessionLostError if the session is
   * lost first.
   */
  async campaign(value: string, options: { signal?: AbortSignal } = {}): Promise<Leadership> {
    checkResource(this.name, "election name");
    this.session.check();
    const client = this.session.client;
    const key = await client.electionKey(this.name);
    await client.proclaim(key, this.session.leaseId, 0, value);
    const lock = await this.session.take(key, options.signal ? { signal: options.signal } : {}, "unspecified", 0, false, true);
    return new Leadership(this.name, key, lock);
  }

  /** The current leader, if any (linearizable read). */
  leader(): Promise<LeaderInfo | undefined> {
    return this.session.client.leader(this.name);
  }

  /** Follows this election's leaders: an async iterator. */
  async observe(): Promise<Observer> {
    const client = this.session.client;
    return Observer.open(client, await client.electionKey(this.name));
  }
}

/**
 * A term of office: the election's lock, held by the session. Valid while
 * the session is (`check()` before each act of the leader); pass
 * `fencingToken` with every write so a deposed leader's writes are refused
 * (S2). `signal` aborts when the term is lost; `await using` resigns.
 */
export class Leadership implements AsyncDisposable {
  constructor(
    readonly name: string,
    private readonly key: string,
    private readonly lock: Lock,
  ) {}

  /** The term's token: larger than every earlier term's. */
  get fencingToken(): number {
    return this.lock.fencingToken;
  }

  get leaseId(): number {
    return this.lock.leaseId;
  }

  get validUntil(): number {
    return this.lock.validUntil;
  }

  get signal(): AbortSignal {
    return this.lock.signal;
  }

  check(): void {
    this.lock.check();
  }

  /** Publishes a new value for this term (FailedPreconditionError once the term has ended). */
  async proclaim(value: string): Promise<void> {
    this.check();
    await this.lock.session.client.proclaim(this.key, this.leaseId, this.fencingToken, value);
  }

  /** Steps down: the next campaigner is elected in the same committed entry. */
  resign(): Promise<ReleaseResult> {
    return this.lock.release();
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.lock[Symbol.asyncDispose]();
  }
}
