/**
 * Small promise adapters over grpc-js calls: a unary attempt with its own
 * timeout, a reader that turns a server stream into `next(timeoutMs)`, and
 * timers and signals that the rest of the client builds on. Every timer here
 * runs on Node's monotonic clock, never on wall-clock deadlines.
 */
import type { ClientUnaryCall, Metadata, ServiceError } from "@grpc/grpc-js";

/** An attempt failed without a status of its own (timeout, cut stream): retried like a lost connection. */
export class AttemptFailed extends Error {
  override name = "AttemptFailed";
}

/** The overall deadline of a call passed. */
export class DeadlineReached extends Error {
  override name = "DeadlineReached";
}

/** The longest delay a Node timer takes (longer ones fire at once). */
export const MAX_TIMER_MS = 2 ** 31 - 1;

/** Resolves after `ms` (at most {@link MAX_TIMER_MS}), or rejects with the signal's reason once it aborts. */
export function sleep(ms: number, signal?: AbortSignal, unref = false): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, Math.min(Math.max(0, ms), MAX_TIMER_MS));
    if (unref) timer.unref();
    function onAbort() {
      clearTimeout(timer);
      reject(signal!.reason);
    }
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

/**
 * A signal that aborts when any of `signals` does (with its reason), or when
 * `abort` is called; `dispose` detaches it.
 */
export function anySignal(signals: readonly (AbortSignal | undefined)[]): {
  signal: AbortSignal;
  abort(reason: unknown): void;
  dispose(): void;
} {
  const controller = new AbortController();
  const present = signals.filter((s): s is AbortSignal => s !== undefined);
  const handlers: [AbortSignal, () => void][] = [];
  const dispose = () => {
    for (const [s, h] of handlers) s.removeEventListener("abort", h);
    handlers.length = 0;
  };
  for (const s of present) {
    if (s.aborted) {
      controller.abort(s.reason);
      return { signal: controller.signal, abort: (r) => controller.abort(r), dispose };
    }
  }
  for (const s of present) {
    const h = () => {
      controller.abort(s.reason);
      dispose();
    };
    handlers.push([s, h]);
    s.addEventListener("abort", h, { once: true });
  }
  return { signal: controller.signal, abort: (r) => controller.abort(r), dispose };
}

type UnaryInvoker<Res> = (callback: (err: ServiceError | null, res?: Res) => void) => ClientUnaryCall;

/**
 * One unary attempt: resolves with the reply, rejects with the ServiceError,
 * with AttemptFailed after `timeoutMs`, or with the reason of `signal`.
 */
export function unaryAttempt<Res>(invoke: UnaryInvoker<Res>, timeoutMs: number, signal: AbortSignal): Promise<Res> {
  return new Promise<Res>((resolve, reject) => {
    let settled = false;
    const finish = (f: () => void) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      signal.removeEventListener("abort", onAbort);
      f();
    };
    const call = invoke((err, res) => finish(() => (err ? reject(err) : resolve(res as Res))));
    const timer = setTimeout(() => {
      finish(() => reject(new AttemptFailed(`no answer within ${Math.round(timeoutMs)} ms`)));
      call.cancel();
    }, Math.max(0, timeoutMs));
    const onAbort = () => {
      finish(() => reject(signal.reason));
      call.cancel();
    };
    if (signal.aborted) onAbort();
    else signal.addEventListener("abort", onAbort, { once: true });
  });
}

/** The events of a grpc-js readable (or duplex) stream. */
export interface StreamCall<T> {
  on(event: "data", listener: (message: T) => void): unknown;
  on(event: "error", listener: (error: ServiceError) => void): unknown;
  on(event: "end", listener: () => void): unknown;
  on(event: "metadata", listener: (md: Metadata) => void): unknown;
  cancel(): void;
}

/** Reads a stream message by message, each read bounded by a timeout and a signal. */
export class StreamReader<T> {
  private readonly queue: T[] = [];
  private error: ServiceError | undefined;
  private ended = false;
  private wake: (() => void) | undefined;
  /** The response headers, once they arrived. */
  headers: Metadata | undefined;

  constructor(readonly call: StreamCall<T>) {
    call.on("data", (m) => {
      this.queue.push(m);
      this.poke();
    });
    call.on("error", (e) => {
      this.error = e;
      this.poke();
    });
    call.on("end", () => {
      this.ended = true;
      this.poke();
    });
    call.on("metadata", (md) => {
      this.headers = md;
      this.poke();
    });
  }

  private poke(): void {
    const wake = this.wake;
    this.wake = undefined;
    wake?.();
  }

  /** Waits until `ready()` holds, the stream ends or fails, `timeoutMs` passes or `signal` aborts. */
  private async waitFor(ready: () => boolean, timeoutMs: number, signal: AbortSignal | undefined): Promise<void> {
    const deadline = performance.now() + timeoutMs;
    while (!ready() && this.error === undefined && !this.ended) {
      if (signal?.aborted) throw signal.reason;
      const left = deadline - performance.now();
      if (left <= 0) throw new AttemptFailed(`no answer within ${Math.round(timeoutMs)} ms`);
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(done, Math.min(left, MAX_TIMER_MS));
        const onAbort = () => {
          clearTimeout(timer);
          this.wake = undefined;
          reject(signal!.reason);
        };
        signal?.addEventListener("abort", onAbort, { once: true });
        function done() {
          clearTimeout(timer);
          signal?.removeEventListener("abort", onAbort);
          resolve();
        }
        this.wake = done;
      });
    }
  }

  /** The next message; throws the stream's ServiceError, or AttemptFailed on a timeout or a clean end. */
  async next(timeoutMs: number, signal?: AbortSignal): Promise<T> {
    await this.waitFor(() => this.queue.length > 0, timeoutMs, signal);
    const message = this.queue.shift();
    if (message !== undefined) return message;
    if (this.error !== undefined) throw this.error;
    throw new AttemptFailed("stream ended without a final message");
  }

  /** Waits for the response headers; undefined if the stream failed or ended first (the error is thrown). */
  async awaitHeaders(timeoutMs: number, signal?: AbortSignal): Promise<Metadata> {
    await this.waitFor(() => this.headers !== undefined, timeoutMs, signal);
    if (this.headers !== undefined) return this.headers;
    if (this.error !== undefined) throw this.error;
    throw new AttemptFailed("stream ended before its headers");
  }

  cancel(): void {
    this.call.cancel();
  }
}
