/**
 * Request ids and the acknowledged watermark (docs/semantics.md S7).
 *
 * Each new mutating request takes the next id (1, 2, ...); its retries reuse
 * it. The watermark (`ackedRequestId`) is the highest id such that it and
 * every lower id have been answered: the client will never retry them, so
 * the server may forget their outcomes. At most `window` ids are out past
 * the watermark (the server keeps that many outcomes per client); a further
 * request waits for the oldest to return, as a TCP sender waits for its
 * window.
 */
import { ResourceExhaustedError } from "./errors.js";

/** A request id in flight; {@link InFlight.finish} marks it answered (twice is harmless). */
export class InFlight {
  private finished = false;

  constructor(
    private readonly ids: RequestIds,
    readonly requestId: number,
    /** The watermark sent with every attempt of this request (fixed, so retries are identical). */
    readonly ackedRequestId: number,
  ) {}

  finish(): void {
    if (!this.finished) {
      this.finished = true;
      this.ids.finishId(this.requestId);
    }
  }
}

/** The id bookkeeping of one client. */
export class RequestIds {
  private lastIssued = 0;
  private readonly inFlight = new Set<number>();
  private waiting: (() => void)[] = [];

  constructor(private windowSize: number) {
    if (!Number.isSafeInteger(windowSize) || windowSize < 1) {
      throw new RangeError(`maxRequestsInFlight must be an integer of at least 1; got ${windowSize}`);
    }
  }

  get window(): number {
    return this.windowSize;
  }

  /** Adopts the window the server published (for the next request). */
  setWindow(size: number): void {
    if (Number.isSafeInteger(size) && size >= 1) this.windowSize = size;
  }

  /** The highest id such that it and every lower id were answered. */
  get acked(): number {
    let min = Infinity;
    for (const id of this.inFlight) if (id < min) min = id;
    return min === Infinity ? this.lastIssued : min - 1;
  }

  get lastIssuedId(): number {
    return this.lastIssued;
  }

  /** The next id if the window has room, else undefined. */
  tryBegin(): InFlight | undefined {
    const acked = this.acked;
    if (this.lastIssued - acked >= this.windowSize) return undefined;
    this.lastIssued += 1;
    this.inFlight.add(this.lastIssued);
    return new InFlight(this, this.lastIssued, acked);
  }

  /** Takes the next id, first waiting (at most `timeoutMs`) for room in the window. */
  async begin(timeoutMs: number): Promise<InFlight> {
    const deadline = performance.now() + timeoutMs;
    for (;;) {
      const ticket = this.tryBegin();
      if (ticket) return ticket;
      const left = deadline - performance.now();
      if (left <= 0) {
        throw new ResourceExhaustedError(
          `${this.windowSize} requests of this client are in flight above its acknowledged request ` +
            `${this.acked}, and none returned within ${timeoutMs} ms`,
        );
      }
      await new Promise<void>((resolve) => {
        const timer = setTimeout(done, left);
        function done() {
          clearTimeout(timer);
          resolve();
        }
        this.waiting.push(done);
      });
    }
  }

  /** @internal */
  finishId(id: number): void {
    this.inFlight.delete(id);
    const waiting = this.waiting;
    this.waiting = [];
    for (const wake of waiting) wake();
  }
}
