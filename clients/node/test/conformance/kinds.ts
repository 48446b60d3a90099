/**
 * Conformance C14-C17 (clients/conformance/scenarios.md): semaphores,
 * read-write locks, multi-locks and max-hold (docs/semantics.md).
 */
import assert from "node:assert/strict";
import { test } from "node:test";

import {
  DRIFT_RHO_PPM,
  FailedPreconditionError,
  HeldError,
  InvalidArgumentError,
  SessionLostError,
  type Lock,
  type Session,
} from "../../src/index.js";
import { bootNow, sharedCluster, untilLockKindsAreServed, within } from "../harness.js";

const RHO = DRIFT_RHO_PPM / 1_000_000;

function queuedSignal(): { queued: Promise<void>; onQueued: () => void } {
  let onQueued!: () => void;
  const queued = new Promise<void>((r) => (onQueued = r));
  return { queued, onQueued };
}

// conformance: C14-semaphore-permits-in-slots
test("C14-semaphore-permits-in-slots: at most N holders, each in a slot with a fresh token; a freed slot goes to the oldest waiter; another limit or kind is refused naming the field", async () => {
  const cluster = await sharedCluster();
  await using client = cluster.client();
  await untilLockKindsAreServed(client);
  const sessions = await Promise.all([1, 2, 3, 4].map(() => client.session({ ttlMs: 10_000 })));
  const [s1, s2, s3, s4] = sessions as [Session, Session, Session, Session];
  try {
    const permits: Lock[] = [];
    for (const s of [s1, s2, s3]) permits.push(await s.semaphore("c14-r", 3).tryAcquire());
    assert.deepEqual(permits.map((p) => p.slot), [0, 1, 2]);
    const tokens = permits.map((p) => p.fencingToken);
    assert.ok(tokens[0]! < tokens[1]! && tokens[1]! < tokens[2]!, String(tokens));
    assert.deepEqual(permits.map((p) => p.leaseId), [s1.leaseId, s2.leaseId, s3.leaseId]);

    const { queued, onQueued } = queuedSignal();
    const waiting = s4.semaphore("c14-r", 3).acquire({ waitMs: 30_000, onQueued });
    await within(10_000, queued, "S4 queued");
    const status = await client.status("c14-r");
    assert.deepEqual([status.kind, status.limit, status.waiters, status.holder], ["semaphore", 3, 1, undefined]);
    const byLease = (a: { leaseId: number }, b: { leaseId: number }) => a.leaseId - b.leaseId;
    assert.deepEqual(
      status.holders.map((h) => [h.leaseId, h.slot, h.fencingToken]).sort(),
      permits.sort(byLease).map((p) => [p.leaseId, p.slot, p.fencingToken]).sort(),
    );

    await permits.find((p) => p.slot === 1)!.release();
    const fourth = await within(10_000, waiting);
    assert.equal(fourth.slot, 1, "the freed slot goes to the oldest waiter");
    assert.equal(fourth.leaseId, s4.leaseId);
    assert.ok(fourth.fencingToken > tokens[2]!);
    fourth.check();

    await assert.rejects(s2.semaphore("c14-r", 4).tryAcquire(), (e: unknown) => {
      assert.ok(e instanceof FailedPreconditionError, String(e));
      assert.ok(e.field === "kind" || e.field === "limit", `field ${e.field}`);
      assert.match(e.message, /3/, "the refusal names the current limit");
      return true;
    });
    await assert.rejects(s2.tryLock("c14-r"), (e: unknown) => {
      assert.ok(e instanceof FailedPreconditionError, String(e));
      assert.ok(e.field === "kind" || e.field === "limit", `field ${e.field}`);
      assert.match(e.message, /semaphore/, "the refusal names the current kind");
      return true;
    });
    const after = await client.status("c14-r");
    assert.deepEqual(after.holders.map((h) => h.slot).sort(), [0, 1, 2], "the refusals changed nothing");
  } finally {
    for (const s of sessions) await s.close();
  }
});

// conformance: C15-readers-share-writer-waits
test("C15-readers-share-writer-waits: readers hold together, a writer alone, and a reader queued behind a waiting writer does not overtake it", async () => {
  const cluster = await sharedCluster();
  await using client = cluster.client();
  await untilLockKindsAreServed(client);
  const sessions = await Promise.all([1, 2, 3, 4].map(() => client.session({ ttlMs: 10_000 })));
  const [r1, r2, r3, w] = sessions as [Session, Session, Session, Session];
  try {
    const read1 = await r1.readLock("c15-r", { waitMs: 5000 });
    const read2 = await r2.readLock("c15-r", { waitMs: 5000 });
    assert.deepEqual([read1.mode, read2.mode], ["shared", "shared"]);
    assert.ok(read2.fencingToken > read1.fencingToken);
    let status = await client.status("c15-r");
    assert.equal(status.kind, "read_write");
    assert.equal(status.holder, undefined);
    assert.deepEqual(status.holders.map((h) => h.leaseId).sort(), [r1.leaseId, r2.leaseId].sort());
    assert.ok(status.holders.every((h) => h.mode === "shared"));

    const wq = queuedSignal();
    let writerDone = false;
    const writer = w.writeLock("c15-r", { waitMs: 30_000, onQueued: wq.onQueued });
    void writer.finally(() => (writerDone = true)).catch(() => undefined);
    await within(10_000, wq.queued, "W queued");
    const rq = queuedSignal();
    let readerDone = false;
    const reader3 = r3.readLock("c15-r", { waitMs: 30_000, onQueued: rq.onQueued });
    void reader3.finally(() => (readerDone = true)).catch(() => undefined);
    await within(10_000, rq.queued, "R3 queued");
    status = await client.status("c15-r");
    assert.deepEqual([status.waiters, status.holders.length], [2, 2]);
    assert.equal(readerDone, false, "a reader never overtakes a queued writer");

    await read1.release();
    await read2.release();
    const write = await within(10_000, writer);
    assert.ok(writerDone);
    assert.deepEqual([write.mode, write.leaseId], ["exclusive", w.leaseId]);
    assert.ok(write.fencingToken > read2.fencingToken);
    status = await client.status("c15-r");
    assert.equal(status.holder?.leaseId, w.leaseId);
    assert.deepEqual(status.holders.map((h) => h.leaseId), [w.leaseId], "the writer holds alone");
    assert.equal(status.waiters, 1);
    assert.equal(readerDone, false, "no reader beside a writer");

    await write.release();
    const read3 = await within(10_000, reader3);
    assert.equal(read3.leaseId, r3.leaseId);
    assert.ok(read3.fencingToken > write.fencingToken);
    await read3.release();
  } finally {
    for (const s of sessions) await s.close();
  }
});

// conformance: C16-multi-lock-all-or-none
test("C16-multi-lock-all-or-none: all resources in one entry with a token each, a release naming one frees all, opposite orders never deadlock", async () => {
  const cluster = await sharedCluster();
  await using aClient = cluster.client();
  await using bClient = cluster.client();
  await untilLockKindsAreServed(aClient);
  await using a = await aClient.session({ ttlMs: 10_000 });
  await using b = await bClient.session({ ttlMs: 10_000 });
  const names = ["c16-a", "c16-b", "c16-c"];
  const multi = await a.lockAll(names, { waitMs: 0 });
  assert.deepEqual(multi.grants.map((g) => g.resource), names, "one token per resource, in the order asked");
  const tokens = multi.grants.map((g) => g.fencingToken);
  assert.equal(new Set(tokens).size, 3);
  assert.ok(tokens.every((t) => t >= 1));
  assert.deepEqual([multi.resource, multi.fencingToken], ["c16-a", tokens[0]]);
  assert.equal(multi.token("c16-b"), tokens[1]);
  assert.equal(multi.token("c16-z"), undefined);
  for (const [i, name] of names.entries()) {
    const status = await aClient.status(name);
    assert.deepEqual([status.holder?.leaseId, status.holder?.fencingToken], [a.leaseId, tokens[i]]);
  }
  await assert.rejects(b.tryLock("c16-b"), (e: unknown) => {
    assert.ok(e instanceof HeldError, String(e));
    assert.equal(e.holderLeaseId, a.leaseId);
    return true;
  });
  const released = await multi.release(); // names c16-a with its token
  assert.deepEqual([released.released, released.resource], [true, "c16-a"]);
  for (const name of names) {
    const status = await aClient.status(name);
    assert.deepEqual([status.holder, status.holders, status.kind], [undefined, [], ""]);
  }

  const heldBoth: number[][] = [];
  const loop = async (session: Session, order: string[]) => {
    for (let i = 0; i < 5; i++) {
      const lock = await session.lockAll(order, { waitMs: 10_000 });
      assert.deepEqual(lock.grants.map((g) => g.resource), order);
      const [x, y] = await Promise.all([aClient.status("c16-x"), aClient.status("c16-y")]);
      assert.equal(x.holder?.leaseId, session.leaseId);
      assert.equal(y.holder?.leaseId, session.leaseId);
      heldBoth.push(lock.grants.map((g) => g.fencingToken));
      await lock.release();
    }
  };
  await within(30_000, Promise.all([loop(a, ["c16-x", "c16-y"]), loop(b, ["c16-y", "c16-x"])]), "both loops");
  assert.equal(heldBoth.length, 10, "both loops finished (no deadlock)");
});

// conformance: C17-max-hold-ends-a-renewed-grant
test("C17-max-hold-ends-a-renewed-grant: the grant ends within its max-hold (+E) however often the session renews; the lock's validity counts from the send", async () => {
  const eMs = 2500; // E with the default timing (scenarios.md)
  const maxHoldMs = 2000;
  const cluster = await sharedCluster();
  await using hClient = cluster.client();
  await using wClient = cluster.client();
  await untilLockKindsAreServed(hClient);
  await using h = await hClient.session({ ttlMs: 5000 });
  await using w = await wClient.session({ ttlMs: 5000 });
  const sentAt = bootNow();
  const held = await h.tryLock("c17-r", { maxHoldMs });
  const after = bootNow();
  const validity = maxHoldMs * (1 - 2 * RHO) - 50;
  assert.ok(held.maxHoldUntil !== undefined);
  assert.ok(sentAt + validity <= held.maxHoldUntil && held.maxHoldUntil <= after + validity);
  assert.ok(held.validUntil <= h.validUntil);
  held.check();

  const { queued, onQueued } = queuedSignal();
  const waiter = w.lock("c17-r", { waitMs: 30_000, onQueued });
  await within(5000, queued, "W queued");
  const handed = await within(maxHoldMs + eMs + 5000, waiter);
  const grantedAfter = bootNow() - sentAt;
  assert.ok(maxHoldMs * (1 - 2 * RHO) <= grantedAfter && grantedAfter <= maxHoldMs + eMs, String(grantedAfter));
  assert.ok(handed.fencingToken > held.fencingToken);
  assert.equal(handed.leaseId, w.leaseId);

  // H's session renewed all along and is still valid; its grant is not.
  h.check();
  assert.ok(h.validUntil > sentAt + maxHoldMs);
  assert.throws(() => held.check(), (e: unknown) => {
    assert.ok(e instanceof SessionLostError);
    assert.equal(e.kind, "max_hold");
    assert.equal(e.validUntil, held.maxHoldUntil);
    return true;
  });
  assert.ok(held.signal.aborted, "the grant's signal aborted at its max-hold");
  assert.equal(h.lostReason, undefined);
  assert.ok(!(await hClient.leaseTimeToLive(h.leaseId)).locks.includes("c17-r"));
  await handed.release();

  // The wire: the server refuses a too-short max-hold and a wait as long as it, naming the field.
  await assert.rejects(hClient.acquire({ resource: "c17-short", leaseId: h.leaseId, maxHoldMs: 500 }), (e: unknown) => {
    assert.ok(e instanceof InvalidArgumentError);
    assert.equal(e.field, "max_hold_ms");
    return true;
  });
  await assert.rejects(
    hClient.acquire({ resource: "c17-short", leaseId: h.leaseId, waitMs: maxHoldMs, maxHoldMs }),
    (e: unknown) => e instanceof InvalidArgumentError && (e.field === "max_hold_ms" || e.field === "wait_timeout_ms"),
  );
  // The session API refuses both before sending.
  await assert.rejects(h.tryLock("c17-short", { maxHoldMs: 500 }), /^RangeError: maxHoldMs must be within 1000\.\.=86400000; got 500$/);
  await assert.rejects(h.lock("c17-short", { waitMs: maxHoldMs, maxHoldMs }), /^RangeError: waitMs must be below maxHoldMs/);
  const status = await hClient.status("c17-short");
  assert.deepEqual([status.holder, status.waiters], [undefined, 0], "a refusal changes nothing");
});
