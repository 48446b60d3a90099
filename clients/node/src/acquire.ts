/**
 * The acquire behind `Client.acquire` and every lock of a session: one
 * request id for every attempt (S7), `queued` reports, and the abandoned
 * wait taken back with `Lock/CancelWait` (docs/semantics.md S8).
 *
 * Abandoning it (its signal aborts) after an attempt was sent sends a
 * CancelWait naming this acquire's request id (committed, exactly once; if
 * the grant won the race, the cancel releases it). The promise rejects with
 * the signal's reason once that cancel is answered, so no waiter is left
 * behind when it settles; when the reason is a SessionLostError (the lease is
 * gone, and its waits with it) it rejects at once and the cancel goes on in
 * the background. The acquire's request id stays in flight until the cancel
 * is answered, so the watermark the cancel carries is below it.
 */
import type { Client } from "./client.js";
import { modeName } from "./client.js";
import { LeaseNotFoundError, SessionLostError, TransportError, UnimplementedError, WardenError } from "./errors.js";
import type { AcquireResponse__Output } from "./generated/warden/v1/AcquireResponse.js";
import type { AcquireRequest as WireRequest } from "./generated/warden/v1/AcquireRequest.js";
import { wholeNumber } from "./limits.js";
import type { InFlight } from "./requests.js";
import { StreamReader, sleep } from "./rpc.js";
import type { AcquireRequest, Granted, NotGranted } from "./types.js";
import type { NotGrantedReason } from "./errors.js";

const REASONS: readonly string[] = ["held", "lock_delay", "wait_timeout", "cancelled", "reserved"];
const WIRE_MODE = { unspecified: "LOCK_MODE_UNSPECIFIED", shared: "LOCK_MODE_SHARED", exclusive: "LOCK_MODE_EXCLUSIVE" };

let warnedNoCancelWait = false;

function answerOf(message: AcquireResponse__Output): Granted | NotGranted | undefined {
  if (message.event === "granted" && message.granted) {
    const g = message.granted;
    return {
      granted: true,
      resource: g.resource,
      leaseId: g.leaseId,
      fencingToken: g.fencingToken,
      ttlMs: g.ttlMs,
      logIndex: g.logIndex,
      slot: g.slot ?? undefined,
      mode: modeName(g.mode),
      grants: g.grants.map((t) => ({ resource: t.resource, fencingToken: t.fencingToken })),
      maxHoldMs: g.maxHoldMs,
    };
  }
  if (message.event === "notGranted" && message.notGranted) {
    const n = message.notGranted;
    if (!REASONS.includes(n.reason)) throw new TransportError(`not_granted with an unknown reason ${JSON.stringify(n.reason)}`);
    return { granted: false, resource: n.resource, holderLeaseId: n.holderLeaseId, reason: n.reason as NotGrantedReason };
  }
  return undefined;
}

function wireRequest(client: Client, inFlight: InFlight, r: AcquireRequest): WireRequest {
  const resources = r.resources ? [...r.resources] : [];
  for (const name of resources) if (typeof name !== "string") throw new TypeError("resources must be strings");
  if (r.resource !== undefined && typeof r.resource !== "string") throw new TypeError("resource must be a string");
  return {
    header: client.header(inFlight),
    resource: r.resource ?? "",
    ttlMs: wholeNumber("ttlMs", r.ttlMs ?? 0),
    leaseId: wholeNumber("leaseId", r.leaseId ?? 0),
    waitTimeoutMs: wholeNumber("waitMs", r.waitMs ?? 0),
    lockDelayMs: wholeNumber("lockDelayMs", r.lockDelayMs ?? 0),
    mode: WIRE_MODE[r.mode ?? "unspecified"] as WireRequest["mode"],
    limit: wholeNumber("limit", r.limit ?? 0),
    resources,
    maxHoldMs: wholeNumber("maxHoldMs", r.maxHoldMs ?? 0),
  };
}

export interface AcquireControl {
  /** Renew a new lease (ttlMs) every TTL/3 while it waits. */
  readonly renewWhileWaiting: boolean;
}

export async function acquire(client: Client, r: AcquireRequest, control: AcquireControl): Promise<Granted | NotGranted> {
  const inFlight = await client.beginRequest();
  let request: WireRequest;
  try {
    request = wireRequest(client, inFlight, r);
  } catch (e) {
    inFlight.finish();
    throw e;
  }
  const waitMs = request.waitTimeoutMs as number;
  const waitDeadline = performance.now() + waitMs;
  let sent = false;
  let waitingLease: ((leaseId: number) => void) | undefined;
  const leaseKnown = new Promise<number>((resolve) => (waitingLease = resolve));
  // Only an acquire that renews its new lease while it waits needs a stop
  // (aborting a controller builds a DOMException with a stack, every time).
  let stopRenewing: AbortController | undefined;

  const onQueued = (message: AcquireResponse__Output): number => {
    const q = message.queued!;
    waitingLease?.(q.leaseId);
    r.onQueued?.({ position: q.position, leaseId: q.leaseId, behind: q.behind });
    // The answer may take the rest of the wait, then one attempt timeout
    // (a timeout is reported once the waiter's removal committed).
    return Math.max(waitDeadline - performance.now(), 0) + client.attemptTimeoutMs;
  };
  // Its own Acquire stream: queued reports, then the final answer.
  const streamAttempt = async (node: import("./proto.js").NodeStubs, signal: AbortSignal) => {
    const reader = new StreamReader<AcquireResponse__Output>(node.lock.Acquire(request));
    sent = true;
    let answered = false;
    try {
      let budget = client.attemptTimeoutMs;
      for (;;) {
        const message = await reader.next(budget, signal);
        if (message.event === "queued" && message.queued) {
          budget = onQueued(message);
          continue;
        }
        answered = true;
        const answer = answerOf(message);
        if (answer === undefined) throw new TransportError("acquire answer without an event");
        return answer;
      }
    } finally {
      // After its final answer the server ends the stream itself: cancelling
      // it then would only cost a CANCELLED status (an Error with a stack).
      if (!answered) reader.cancel();
    }
  };
  // One call on the node's Calls stream (or, if it cannot go there, its own
  // stream as above): the same queued reports and final answer.
  const attempt = (address: string, node: import("./proto.js").NodeStubs, signal: AbortSignal) =>
    client.streamedAttempt(
      address,
      node,
      { acquire: request },
      signal,
      (reply) => {
        if (reply.answer !== "acquire" || !reply.acquire) {
          throw new TransportError(`acquire answered with a ${reply.answer ?? "empty"} answer`);
        }
        const answer = answerOf(reply.acquire);
        if (answer === undefined) throw new TransportError("acquire answer without an event");
        return answer;
      },
      () => streamAttempt(node, signal),
      () => (sent = true),
      (report) => onQueued(report.acquire!),
    );

  const ttlMs = request.ttlMs as number;
  if (control.renewWhileWaiting && ttlMs > 0 && waitMs > 0) {
    stopRenewing = new AbortController();
    client.spawn(renewWaitingLease(client, leaseKnown, ttlMs, stopRenewing.signal));
  }
  let handedOver = false;
  try {
    return await client.call("acquire", waitMs + client.deadlineMs, attempt, { signal: r.signal });
  } catch (e) {
    if (r.signal?.aborted && e === r.signal.reason && sent) {
      handedOver = true;
      // A multi-lock's cancel names its first resource (it takes back all).
      const cancel = abandon(client, inFlight, request.resource || request.resources?.[0] || "");
      client.spawn(cancel);
      if (!(e instanceof SessionLostError)) await cancel;
    }
    throw e;
  } finally {
    stopRenewing?.abort();
    if (!handedOver) inFlight.finish();
  }
}

/** Renews a new lease every TTL/3 while its acquire waits (a waiter whose lease dies is removed, S8). */
async function renewWaitingLease(client: Client, lease: Promise<number>, ttlMs: number, stop: AbortSignal): Promise<void> {
  const leaseId = await Promise.race([lease, new Promise<never>((_r, reject) => stop.addEventListener("abort", () => reject(stop.reason)))]);
  let periodMs = ttlMs / 3;
  for (;;) {
    await sleep(periodMs, stop);
    try {
      const renewed = await client.renew(leaseId);
      periodMs = Math.max(renewed.ttlMs / 3, 100);
    } catch (e) {
      if (e instanceof LeaseNotFoundError || (e instanceof WardenError && e.code === 5)) return;
      periodMs = client.backoffCapMs;
    }
  }
}

/** Takes back an abandoned acquire with CancelWait; then its request id counts as answered. */
async function abandon(client: Client, acquire: InFlight, resource: string): Promise<void> {
  try {
    await client.cancelWait(resource, acquire.requestId);
  } catch (e) {
    if (e instanceof UnimplementedError) {
      if (!warnedNoCancelWait) {
        warnedNoCancelWait = true;
        process.emitWarning(
          "the server does not implement Lock/CancelWait: an abandoned waiter stays queued until its lease ends",
          "WardenWarning",
        );
      }
    } else {
      process.emitWarning(`CancelWait for an abandoned acquire failed: ${(e as Error).message}`, "WardenWarning");
    }
  } finally {
    acquire.finish();
  }
}
