/**
 * One `Calls` stream per node: this client's acquires and releases to
 * that node share one long-lived HTTP/2 stream instead of each opening a
 * call of its own (a grpc-js call, its headers and its status cost the
 * client far more CPU than the message; docs/performance.md). Each call has
 * an id on the stream, and its answer comes back under that id, in any
 * order relative to the other calls; many are in flight at once.
 *
 * A call on the stream means exactly what the unary call means (the same
 * request header, so a retry is the same request, S7). Its `error` answer
 * becomes the status the unary call would have failed with (code, message,
 * `warden-leader` hint, `grpc-status-details-bin` details), so the retry
 * loop and the typed errors treat both alike. An attempt that times out or
 * is abandoned only forgets its call id (the server still runs the call:
 * the retry carries the same request id).
 *
 * When the stream ends or breaks, every call still on it fails with the
 * stream's status (retried like a lost connection) and the next call opens
 * a new stream. A node that does not serve `Calls` (an older version, or
 * something else) answers `Unimplemented`: that address then gets the
 * unary calls until {@link RECHECK_CALLS_MS} has passed. A stream with no
 * call in flight for {@link IDLE_END_MS} is half-closed, so an idle client
 * holds no open call (and does not keep the process alive by it).
 */
import { Metadata, status as Code, type ClientDuplexStream, type ServiceError } from "@grpc/grpc-js";

import { LEADER_METADATA, TransportError } from "./errors.js";
import type { AcquireRequest } from "./generated/warden/v1/AcquireRequest.js";
import type { CallRequest } from "./generated/warden/v1/CallRequest.js";
import type { CallError__Output } from "./generated/warden/v1/CallError.js";
import type { CallResponse__Output } from "./generated/warden/v1/CallResponse.js";
import type { ReleaseRequest } from "./generated/warden/v1/ReleaseRequest.js";
import type { NodeStubs } from "./proto.js";
import { AttemptFailed, MAX_TIMER_MS } from "./rpc.js";

/** How long an address that answered `Unimplemented` to `Calls` gets unary calls. */
export const RECHECK_CALLS_MS = 30_000;
/** A stream with no call in flight this long is half-closed. */
export const IDLE_END_MS = 1_000;
/** The smallest request-size limit a node can have (`--max-request-bytes`). */
export const SMALLEST_MAX_REQUEST_BYTES = 1024;

/** The answer of one call: the Acquire or Release message, with the call's kind. */
export type CallAnswer = CallResponse__Output;

/** The node does not serve `Calls`: send the call as its unary call. */
export class CallsUnsupported extends Error {
  override name = "CallsUnsupported";
}

/** A failed call, as the ServiceError the unary call would have thrown. */
export function callErrorStatus(e: CallError__Output): ServiceError {
  const metadata = new Metadata();
  if (e.leader) metadata.set(LEADER_METADATA, e.leader);
  if (e.details && e.details.length > 0) metadata.set("grpc-status-details-bin", Buffer.from(e.details));
  // A plain object, not an Error with a stack: the retry loop only reads its fields.
  const error = Object.create(Error.prototype) as ServiceError;
  Object.assign(error, { name: "CallError", code: e.code, details: e.message, message: `${e.code} ${Code[e.code] ?? ""}: ${e.message}`, metadata });
  return error;
}

/** Bytes of a varint. */
function varintBytes(n: number): number {
  let bytes = 1;
  while (n >= 128) {
    n = Math.floor(n / 128);
    bytes += 1;
  }
  return bytes;
}

function stringField(s: string | undefined): number {
  if (!s) return 0;
  const len = Buffer.byteLength(s, "utf8");
  return 1 + varintBytes(len) + len;
}

/**
 * An upper bound of the encoded size of `call` on the stream (every number
 * field counted at its largest). A call over the smallest request limit
 * goes as its unary call: its refusal (OutOfRange) then ends that call
 * alone, where on the stream it would end the stream and every call on it.
 */
export function callSizeBound(call: { acquire?: AcquireRequest; release?: ReleaseRequest }): number {
  const number = 11; // a one-byte tag and a ten-byte varint
  const header = 2 + 3 * number;
  let body = header;
  if (call.acquire) {
    const a = call.acquire;
    body += stringField(a.resource) + 7 * number;
    for (const r of a.resources ?? []) body += 1 + varintBytes(Buffer.byteLength(r, "utf8")) + Buffer.byteLength(r, "utf8");
  } else if (call.release) {
    body += stringField(call.release.resource) + 2 * number;
  }
  return number + 1 + varintBytes(body) + body;
}

export function fitsAnyNode(call: { acquire?: AcquireRequest; release?: ReleaseRequest }): boolean {
  return callSizeBound(call) <= SMALLEST_MAX_REQUEST_BYTES;
}

interface Pending {
  /** A `queued` report (an acquire that waits). */
  report(a: CallAnswer): void;
  answer(a: CallAnswer): void;
  fail(e: Error): void;
}

/** One node's `Calls` stream; opened by {@link CallStreams.get}. */
export class CallStream {
  private readonly pending = new Map<number, Pending>();
  private lastId = 0;
  private endedWith: Error | undefined;
  private idleTimer: NodeJS.Timeout | undefined;
  /** When the last call in flight was answered (performance.now()). */
  private idleSince = 0;
  private readonly call: ClientDuplexStream<CallRequest, CallResponse__Output>;

  constructor(
    node: NodeStubs,
    private readonly onEnd: (stream: CallStream, error: Error) => void,
  ) {
    this.call = node.lock.Calls();
    this.call.on("data", (m: CallResponse__Output) => this.route(m));
    this.call.on("error", (e: ServiceError) => this.end(e.code === Code.UNIMPLEMENTED ? new CallsUnsupported(e.details) : e));
    this.call.on("end", () => this.end(new AttemptFailed("the Calls stream to this node ended")));
  }

  get ended(): boolean {
    return this.endedWith !== undefined;
  }

  /** Half-closes the stream (its calls in flight are still answered). */
  close(): void {
    if (this.idleTimer) clearTimeout(this.idleTimer);
    if (this.endedWith === undefined) {
      this.endedWith = new AttemptFailed("the Calls stream to this node was closed");
      this.onEnd(this, this.endedWith);
      this.call.end();
    }
  }

  private end(error: Error): void {
    if (this.idleTimer) clearTimeout(this.idleTimer);
    const first = this.endedWith === undefined;
    this.endedWith ??= error;
    if (first) this.onEnd(this, error);
    const pending = [...this.pending.values()];
    this.pending.clear();
    for (const p of pending) p.fail(error);
  }

  private route(m: CallResponse__Output): void {
    const p = this.pending.get(m.callId);
    if (p === undefined) return; // a call its attempt gave up on
    // A `queued` report is not a final answer.
    if (m.answer === "acquire" && m.acquire?.event === "queued") return p.report(m);
    this.pending.delete(m.callId);
    if (m.answer === "error" && m.error) p.fail(callErrorStatus(m.error));
    // Not retried: the same server would send the same answer again.
    else if (m.answer === undefined) p.fail(new TransportError(`call ${m.callId}: the server sent an answer this client version cannot read`));
    else p.answer(m);
    this.idleCheck();
  }

  /** After a call left: with none in flight, the stream closes once idle for IDLE_END_MS (one timer, not one per call). */
  private idleCheck(): void {
    if (this.pending.size > 0 || this.endedWith !== undefined) return;
    this.idleSince = performance.now();
    if (this.idleTimer === undefined) this.armIdle(IDLE_END_MS);
  }

  private armIdle(ms: number): void {
    this.idleTimer = setTimeout(() => {
      this.idleTimer = undefined;
      if (this.pending.size > 0 || this.endedWith !== undefined) return; // re-armed when it is idle again
      const idle = performance.now() - this.idleSince;
      if (idle >= IDLE_END_MS) this.close();
      else this.armIdle(IDLE_END_MS - idle);
    }, ms);
    this.idleTimer.unref();
  }

  /**
   * Sends one call and resolves with its final answer; rejects with its
   * `error` answer as a ServiceError, with the stream's error if the stream
   * ends first, with AttemptFailed after `timeoutMs` without an answer, or
   * with the reason of `signal`. A waiting acquire's `queued` reports go to
   * `onReport`, which returns how long (ms from then) the next answer may
   * take. Giving up forgets the call (the server still runs it; a queued
   * waiter stays queued until CancelWait, S8).
   */
  request(
    body: { acquire?: AcquireRequest; release?: ReleaseRequest },
    timeoutMs: number,
    signal: AbortSignal,
    onReport?: (report: CallAnswer) => number,
  ): Promise<CallAnswer> {
    if (this.endedWith !== undefined) return Promise.reject(this.endedWith);
    if (signal.aborted) return Promise.reject(signal.reason);
    this.lastId += 1;
    const id = this.lastId;
    return new Promise<CallAnswer>((resolve, reject) => {
      const settle = () => {
        clearTimeout(timer);
        signal.removeEventListener("abort", onAbort);
      };
      const forget = () => {
        if (this.pending.delete(id)) this.idleCheck();
      };
      const expire = (ms: number) =>
        setTimeout(() => {
          settle();
          forget();
          reject(new AttemptFailed(`no answer within ${Math.round(ms)} ms`));
        }, Math.min(Math.max(0, ms), MAX_TIMER_MS));
      let timer = expire(timeoutMs);
      const onAbort = () => {
        settle();
        forget();
        reject(signal.reason);
      };
      signal.addEventListener("abort", onAbort, { once: true });
      this.pending.set(id, {
        report: (a) => {
          if (onReport === undefined) return;
          let next: number;
          try {
            next = onReport(a);
          } catch (e) {
            settle();
            forget();
            return reject(e);
          }
          clearTimeout(timer);
          timer = expire(next);
        },
        answer: (a) => {
          settle();
          resolve(a);
        },
        fail: (e) => {
          settle();
          reject(e);
        },
      });
      const request: CallRequest = body.acquire ? { callId: id, acquire: body.acquire } : { callId: id, release: body.release! };
      this.call.write(request);
    });
  }
}

/** The `Calls` streams of one client, one per node address. */
export class CallStreams {
  private readonly streams = new Map<string, CallStream>();
  /** Addresses that answered `Unimplemented`, with when (performance.now()). */
  private readonly unary = new Map<string, number>();

  /** The node's open stream (opened now if needed), or undefined while it gets unary calls. */
  get(address: string, node: NodeStubs): CallStream | undefined {
    const since = this.unary.get(address);
    if (since !== undefined) {
      if (performance.now() - since < RECHECK_CALLS_MS) return undefined;
      this.unary.delete(address);
    }
    let stream = this.streams.get(address);
    if (stream === undefined || stream.ended) {
      stream = new CallStream(node, (s, error) => {
        if (this.streams.get(address) === s) this.streams.delete(address);
        if (error instanceof CallsUnsupported) this.unary.set(address, performance.now());
      });
      this.streams.set(address, stream);
    }
    return stream;
  }

  /** Half-closes every stream (before the channels close). */
  closeAll(): void {
    for (const s of [...this.streams.values()]) s.close();
    this.streams.clear();
  }
}
