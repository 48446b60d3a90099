/**
 * Conformance C01-C04 (clients/conformance/scenarios.md): locks on
 * sessions, refusals as typed answers, the FIFO queue, wait timeouts.
 */
import assert from "node:assert/strict";
import { test } from "node:test";

import { HeldError, LeaseNotFoundError, WaitTimeoutError, type Lock } from "../../src/index.js";
import { bootNow, sharedCluster, within } from "../harness.js";

// conformance: C01-acquire-renew-release
test("C01-acquire-renew-release: Status names the grant, validUntil lies inside (send, send + TTL) and moves on a renew, release frees, close revokes", async () => {
  const cluster = await sharedCluster();
  await using client = cluster.client();
  const session = await client.session({ ttlMs: 5000 });
  const sentAt = bootNow();
  const lock = await session.tryLock("c01-orders");
  assert.ok(lock.fencingToken >= 1);
  assert.ok(lock.leaseId >= 1);
  assert.equal(lock.leaseId, session.leaseId);
  assert.equal(lock.resource, "c01-orders");

  const status = await client.status("c01-orders");
  assert.deepEqual([status.holder?.leaseId, status.holder?.fencingToken], [lock.leaseId, lock.fencingToken]);

  // Validity counts from the session's last acknowledged send, no later than the acquire's send.
  const before = lock.validUntil;
  assert.ok(sentAt < before && before < sentAt + 5000, `validUntil ${before} vs send ${sentAt}`);
  assert.ok(before < bootNow() + 5000);
  lock.check();

  const renewed = await session.renew();
  assert.ok(renewed > before, "an acknowledged renew moves validUntil forward");
  assert.equal(lock.validUntil, renewed);
  assert.ok(renewed < bootNow() + 5000);

  const released = await lock.release();
  assert.deepEqual(released, { resource: "c01-orders", leaseId: session.leaseId, released: true });
  assert.equal((await client.status("c01-orders")).holder, undefined);
  assert.throws(() => lock.check(), /released/);

  await session.close();
  await assert.rejects(client.leaseTimeToLive(session.leaseId), (e: unknown) => {
    assert.ok(e instanceof LeaseNotFoundError);
    assert.equal(e.reason, "LEASE_NOT_LIVE");
    return true;
  });
  assert.equal(session.lostReason?.kind, "closed");
  assert.ok(session.lost.aborted);
});

// conformance: C02-held-not-granted
test("C02-held-not-granted: a try-lock on a held resource is a typed HeldError carrying the holder's lease", async () => {
  const cluster = await sharedCluster();
  await using aClient = cluster.client();
  await using bClient = cluster.client();
  await using a = await aClient.session({ ttlMs: 5000 });
  await using b = await bClient.session({ ttlMs: 5000 });
  const held = await a.tryLock("c02-r");
  await assert.rejects(b.tryLock("c02-r"), (e: unknown) => {
    assert.ok(e instanceof HeldError, String(e));
    assert.equal(e.notGrantedReason, "held");
    assert.equal(e.holderLeaseId, a.leaseId);
    return true;
  });
  // The wire-level call answers the same as a value, not an error.
  const answer = await bClient.acquire({ resource: "c02-r", leaseId: b.leaseId });
  assert.deepEqual(answer, { granted: false, resource: "c02-r", holderLeaseId: a.leaseId, reason: "held" });
  const status = await aClient.status("c02-r");
  assert.deepEqual([status.holder?.leaseId, status.holder?.fencingToken], [a.leaseId, held.fencingToken]);
  held.check();
});

// conformance: C03-fifo-five-waiters
test("C03-fifo-five-waiters: five waiters queued one after another are granted in that order with growing tokens", async () => {
  const cluster = await sharedCluster();
  await using hClient = cluster.client();
  const holder = await hClient.session({ ttlMs: 10_000 });
  const held = await holder.tryLock("c03-r");
  const clients = Array.from({ length: 5 }, () => cluster.client());
  const sessions = await Promise.all(clients.map((c) => c.session({ ttlMs: 10_000 })));
  const granted: [number, number][] = [];
  const waiters: Promise<void>[] = [];
  for (let i = 0; i < 5; i++) {
    let queued!: () => void;
    const isQueued = new Promise<void>((r) => (queued = r));
    waiters.push(
      (async () => {
        const lock: Lock = await sessions[i]!.lock("c03-r", {
          waitMs: 30_000,
          onQueued: (q) => {
            assert.equal(q.leaseId, sessions[i]!.leaseId);
            queued();
          },
        });
        granted.push([i, lock.fencingToken]);
        await lock.release();
      })(),
    );
    await within(10_000, isQueued, `waiter ${i} queued`); // position known before the next starts
  }
  assert.equal((await hClient.status("c03-r")).waiters, 5);
  await held.release();
  await within(30_000, Promise.all(waiters));
  assert.deepEqual(granted.map(([i]) => i), [0, 1, 2, 3, 4], "grants in the order the waiters queued");
  const tokens = granted.map(([, t]) => t);
  for (let i = 1; i < tokens.length; i++) assert.ok(tokens[i - 1]! < tokens[i]!, String(tokens));
  assert.ok(tokens[0]! > held.fencingToken);
  for (const s of sessions) await s.close();
  for (const c of clients) await c.close();
  await holder.close();
});

// conformance: C04-wait-timeout-leaves-no-waiter
test("C04-wait-timeout-leaves-no-waiter: a wait that runs out is a typed WaitTimeoutError after the wait and leaves no waiter", async () => {
  const cluster = await sharedCluster();
  await using hClient = cluster.client();
  await using wClient = cluster.client();
  await using h = await hClient.session({ ttlMs: 5000 });
  await using w = await wClient.session({ ttlMs: 5000 });
  const held = await h.tryLock("c04-r");
  const started = performance.now();
  await assert.rejects(w.lock("c04-r", { waitMs: 1000 }), (e: unknown) => {
    assert.ok(e instanceof WaitTimeoutError, String(e));
    assert.equal(e.notGrantedReason, "wait_timeout");
    return true;
  });
  assert.ok(performance.now() - started >= 1000);
  const status = await hClient.status("c04-r");
  assert.equal(status.waiters, 0);
  assert.deepEqual([status.holder?.leaseId, status.holder?.fencingToken], [h.leaseId, held.fencingToken]);
  const info = await wClient.leaseTimeToLive(w.leaseId);
  assert.deepEqual([info.waits, info.locks], [[], []]);
});
