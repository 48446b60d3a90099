/**
 * A {@link Watcher} (a resumable stream of lock-table events, as an async
 * iterator) and an {@link Observer} (an election's leaders).
 *
 * Any node serves a watch. The watcher remembers where it is (the last index
 * it returned and how many events of that index it returned); when its node
 * goes away it reconnects elsewhere and resumes without gaps or duplicates:
 * it asks for the last index again and skips the events of that index it
 * already returned (every node derives the same events, in the same order,
 * from the same entry). A start below a node's retained window is a
 * CompactedError with the oldest retained index.
 */
import type { Client } from "./client.js";
import { errorFromStatus, isRetryable, isServiceError, statusOf } from "./errors.js";
import type { WatchEvent__Output } from "./generated/warden/v1/WatchEvent.js";
import { checkReadName, wholeNumber } from "./limits.js";
import { AttemptFailed, StreamReader } from "./rpc.js";
import type { LeaderInfo, WatchEvent } from "./types.js";

/** Response metadata entry with the first index a stream covers. */
export const START_INDEX_METADATA = "warden-start-index";

export interface WatchOptions {
  /** One resource by its exact name ... */
  readonly resource?: string;
  /** ... or every resource whose name starts with this ("" = all). */
  readonly prefix?: string;
  /** First log index to stream; 0 (default) = from now on. */
  readonly startIndex?: number;
}

export class Watcher implements AsyncIterableIterator<WatchEvent>, AsyncDisposable {
  private reader: StreamReader<WatchEvent__Output> | undefined;
  private seenAtResume = 0;
  private receivedAtResume = 0;
  private closed = false;

  private constructor(
    private readonly client: Client,
    private readonly target: { resource: string } | { prefix: string },
    private resume: number,
  ) {}

  /** @internal */
  static async open(client: Client, options: WatchOptions): Promise<Watcher> {
    if ((options.resource === undefined) === (options.prefix === undefined)) {
      throw new TypeError("watch: set exactly one of resource and prefix");
    }
    const target = options.resource !== undefined ? { resource: checkReadName(options.resource) } : { prefix: String(options.prefix) };
    const watcher = new Watcher(client, target, wholeNumber("startIndex", options.startIndex ?? 0));
    await watcher.connect();
    return watcher;
  }

  /** The index the watch would resume from now. */
  get resumeIndex(): number {
    return this.resume;
  }

  private async connect(): Promise<void> {
    const request = { ...this.target, startIndex: this.resume };
    const timeout = this.client.attemptTimeoutMs;
    const { reader, start } = await this.client.call("watch", this.client.deadlineMs, async (_a, node, signal) => {
      const reader = new StreamReader<WatchEvent__Output>(node.watch.Watch(request));
      try {
        const headers = await reader.awaitHeaders(timeout, signal);
        const start = headers.get(START_INDEX_METADATA)[0];
        if (typeof start === "string" && /^\d+$/.test(start)) return { reader, start: Number(start) };
        // Every stream the server accepts names its start: this one is being refused.
        await reader.next(timeout, signal);
        throw new AttemptFailed("watch opened without naming its start index");
      } catch (e) {
        reader.cancel();
        throw e;
      }
    });
    // "From now": pin now, so that a reconnect leaves no gap.
    if (this.resume === 0) this.resume = start;
    this.receivedAtResume = 0;
    this.reader = reader;
  }

  /** The next event (waits as long as it takes); throws the error that ended the watch. */
  async next(): Promise<IteratorResult<WatchEvent>> {
    for (;;) {
      if (this.closed) return { done: true, value: undefined };
      if (this.reader === undefined) {
        await this.connect();
        continue;
      }
      let message: WatchEvent__Output;
      try {
        message = await this.reader.next(Number.POSITIVE_INFINITY);
      } catch (e) {
        this.reader = undefined;
        if (this.closed) return { done: true, value: undefined };
        if (isServiceError(e)) {
          const status = statusOf(e);
          if (!isRetryable(status)) throw errorFromStatus(status);
          continue; // the node went away: resume elsewhere
        }
        if (e instanceof AttemptFailed) continue; // the node closed the stream
        throw e;
      }
      if (message.index === this.resume) {
        this.receivedAtResume += 1;
        if (this.receivedAtResume <= this.seenAtResume) continue; // returned before the reconnect
        this.seenAtResume = this.receivedAtResume;
      } else {
        this.resume = message.index;
        this.receivedAtResume = 1;
        this.seenAtResume = 1;
      }
      return {
        done: false,
        value: {
          index: message.index,
          resource: message.resource,
          event: message.event,
          leaseId: message.leaseId,
          fencingToken: message.fencingToken,
        },
      };
    }
  }

  [Symbol.asyncIterator](): this {
    return this;
  }

  /** Ends the iteration (a `break` out of `for await` calls it). */
  async return(): Promise<IteratorResult<WatchEvent>> {
    this.close();
    return { done: true, value: undefined };
  }

  close(): void {
    this.closed = true;
    this.reader?.cancel();
    this.reader = undefined;
  }

  async [Symbol.asyncDispose](): Promise<void> {
    this.close();
  }
}

/**
 * An election's leaders: the current one first (if any), then each new
 * leader or new value, in commit order. Several very short terms may pass
 * unseen between two reports; the tokens reported always grow.
 */
export class Observer implements AsyncIterableIterator<LeaderInfo>, AsyncDisposable {
  private last: LeaderInfo | undefined;
  private readonly pending: LeaderInfo[] = [];

  private constructor(
    private readonly client: Client,
    private readonly key: string,
    private readonly watcher: Watcher,
  ) {}

  /** @internal */
  static async open(client: Client, key: string): Promise<Observer> {
    // Watch first, then read: a change in between shows up as an event (duplicates are filtered).
    const watcher = await client.watch({ resource: key });
    const observer = new Observer(client, key, watcher);
    observer.offer(await observer.current());
    return observer;
  }

  private async current(): Promise<LeaderInfo | undefined> {
    const h = (await this.client.status(this.key)).holder;
    return h ? { leaseId: h.leaseId, fencingToken: h.fencingToken, value: h.value } : undefined;
  }

  private offer(now: LeaderInfo | undefined): void {
    if (now === undefined) return;
    const last = this.last;
    if (last && last.leaseId === now.leaseId && last.fencingToken === now.fencingToken && last.value === now.value) return;
    if (last && now.fencingToken < last.fencingToken) return;
    this.last = now;
    this.pending.push(now);
  }

  async next(): Promise<IteratorResult<LeaderInfo>> {
    for (;;) {
      const ready = this.pending.shift();
      if (ready) return { done: false, value: ready };
      const event = await this.watcher.next();
      if (event.done) return { done: true, value: undefined };
      if (event.value.event === "granted" || event.value.event === "proclaimed") this.offer(await this.current());
    }
  }

  [Symbol.asyncIterator](): this {
    return this;
  }

  async return(): Promise<IteratorResult<LeaderInfo>> {
    this.close();
    return { done: true, value: undefined };
  }

  close(): void {
    this.watcher.close();
  }

  async [Symbol.asyncDispose](): Promise<void> {
    this.close();
  }
}
