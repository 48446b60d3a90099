/**
 * Conformance C10-C11 (clients/conformance/scenarios.md): bad input gets a
 * typed error naming the field, and an abandoned wait leaves no waiter.
 */
import assert from "node:assert/strict";
import { test } from "node:test";

import { InvalidArgumentError, type Client } from "../../src/index.js";
import { sharedCluster, within, type Cluster } from "../harness.js";

// conformance: C10-bad-input-typed-error
test("C10-bad-input-typed-error: the server's refusals carry the field in BadRequest details; the session API refuses before sending", async () => {
  const cluster = await sharedCluster();
  await using client = cluster.client();
  const session = await client.session({ ttlMs: 5000 });
  const cases: [string, () => Promise<unknown>][] = [
    ["ttl_ms", () => client.acquire({ resource: "c10-ttl", ttlMs: 500 })],
    ["resource", () => client.acquire({ resource: "c10-" + "x".repeat(596), leaseId: session.leaseId })],
    ["wait_timeout_ms", () => client.acquire({ resource: "c10-wait", leaseId: session.leaseId, waitMs: 2 * 3_600_000 })],
  ];
  for (const [field, call] of cases) {
    await assert.rejects(call(), (e: unknown) => {
      assert.ok(e instanceof InvalidArgumentError, String(e));
      assert.ok(e.status, "a server refusal, not a client-side check");
      // The field and the reason come from the structured details, not the message.
      assert.deepEqual(e.status.violations.map((v) => v.field), [field]);
      assert.equal(e.field, field);
      assert.equal(e.reason, "INVALID_ARGUMENT"); // set only for domain warden.v1
      return true;
    });
  }
  // The idiomatic API refuses the same values before anything is sent, naming the argument and the limit.
  await assert.rejects(client.session({ ttlMs: 500 }), /^RangeError: ttlMs must be within 1000\.\.=3600000; got 500$/);
  await assert.rejects(session.tryLock("c10-" + "x".repeat(596)), /^RangeError: resource must be 1\.\.=512 bytes of UTF-8; got 600$/);
  await assert.rejects(session.lock("c10-wait", { waitMs: 2 * 3_600_000 }), /^RangeError: waitMs must be within 0\.\.=3600000; got 7200000$/);
  await assert.rejects(session.lock("c10-frac", { waitMs: 0.5 }), TypeError);
  assert.deepEqual(await client.listLocks("c10-"), []);
  const info = await client.leaseTimeToLive(session.leaseId);
  assert.deepEqual([info.locks, info.waits], [[], []]);
  await session.close();
});

async function abandonAndCheck(cluster: Cluster, resource: string, abandon: (queued: AbortController) => void) {
  await using hClient = cluster.client();
  await using wClient = cluster.client();
  const h = await hClient.session({ ttlMs: 10_000 });
  const w = await wClient.session({ ttlMs: 10_000 });
  const held = await h.tryLock(resource);
  const controller = new AbortController();
  const waiting = w.lock(resource, { waitMs: 30_000, signal: controller.signal, onQueued: () => abandon(controller) });
  const reason = await within(10_000, waiting.then(() => undefined, (e: unknown) => e));
  assert.equal(reason, controller.signal.reason, "the lock rejects with the signal's reason");
  // The rejection came after the CancelWait was answered: no waiter is left.
  await expectNoWaiter(hClient, resource);
  await held.release();
  const status = await hClient.status(resource);
  assert.equal(status.holder, undefined, "nobody is granted the resource for the abandoned waiter");
  const info = await wClient.leaseTimeToLive(w.leaseId);
  assert.deepEqual([info.locks, info.waits], [[], []]);
  await h.close();
  await w.close();
}

async function expectNoWaiter(client: Client, resource: string) {
  assert.equal((await client.status(resource)).waiters, 0);
}

// conformance: C11-abandoned-wait-leaves-no-waiter
test("C11-abandoned-wait-leaves-no-waiter: aborting a waiting lock's signal sends CancelWait; no waiter stays and nobody is granted for it", async () => {
  const cluster = await sharedCluster();
  await abandonAndCheck(cluster, "c11-r", (c) => c.abort());
});

// conformance: C11-abandoned-wait-leaves-no-waiter
test("C11-abandoned-wait-leaves-no-waiter: abandoned by the caller's own timeout (AbortSignal.timeout) after it queued", async () => {
  const cluster = await sharedCluster();
  await abandonAndCheck(cluster, "c11-t", (c) => {
    const timeout = AbortSignal.timeout(200);
    timeout.addEventListener("abort", () => c.abort(timeout.reason));
  });
});
