/**
 * Conformance C05-C07 (clients/conformance/scenarios.md): a killed leader,
 * a client cut off, a dropped reply.
 */
import assert from "node:assert/strict";
import { test } from "node:test";

import { SessionLostError, type Client, type Lock, type Session } from "../../src/index.js";
import { Proxy, bootNow, sharedCluster, waitFor, within, type Cluster } from "../harness.js";

// conformance: C05-leader-kill-keeps-lock-and-session
test("C05-leader-kill-keeps-lock-and-session: after SIGKILL of the leader the lock keeps its token and the session is never lost", async () => {
  const cluster = await sharedCluster();
  await using client = cluster.client();
  const session = await client.session({ ttlMs: 10_000 });
  const lock = await session.tryLock("c05-r");
  const failures: string[] = [];
  const checker = setInterval(() => {
    try {
      session.check();
    } catch (e) {
      failures.push(String(e));
    }
  }, 20);
  const oldLeader = await cluster.leaderId(client);
  await cluster.kill(oldLeader);
  try {
    await failoverKeepsLockAndSession(cluster, client, session, lock, oldLeader);
  } finally {
    clearInterval(checker);
    await cluster.restore(oldLeader);
  }
  assert.deepEqual(failures, [], "the session was lost during the failover");
  assert.equal(session.lostReason, undefined);
  session.check();
  await session.close();
});

async function failoverKeepsLockAndSession(cluster: Cluster, client: Client, session: Session, lock: Lock, oldLeader: number) {
  const newLeader = await cluster.waitLeader(10_000, oldLeader);
  assert.notEqual(newLeader, oldLeader);
  const status = await client.status("c05-r");
  assert.deepEqual([status.holder?.leaseId, status.holder?.fencingToken], [session.leaseId, lock.fencingToken]);
  const other = await session.tryLock("c05-other");
  assert.ok(other.fencingToken > lock.fencingToken);
  // A keep-alive on the new leader is acknowledged: the session lives on.
  await session.renew();
}

// conformance: C06-cut-off-client-sees-lost-first
test("C06-cut-off-client-sees-lost-first: a cut-off client's lost signal fires no later than validUntil, before anyone else is granted its lock", async () => {
  const cluster = await sharedCluster();
  await using bClient = cluster.client();
  const leader = await cluster.leaderId(bClient);
  const proxy = await new Proxy(cluster.node(leader).addr).start();
  try {
    // A reaches the cluster only through the proxy, in front of the leader (no redirect around it).
    await using aClient = cluster.client([proxy.addr]);
    const a = await aClient.session({ ttlMs: 3000 });
    const aLock = await a.tryLock("c06-r");
    const lostAt: { when: number; validUntil: number; reason: unknown }[] = [];
    aLock.signal.addEventListener("abort", () => lostAt.push({ when: bootNow(), validUntil: a.validUntil, reason: aLock.signal.reason }));
    proxy.cut();
    await using b = await bClient.session({ ttlMs: 10_000 });
    const bLock = await b.lock("c06-r", { waitMs: 20_000 });
    const bGrantedSeen = bootNow();
    await waitFor("A's lost signal fired", async () => a.lost.aborted, 1000);
    assert.equal(lostAt.length, 1, "the lock's signal aborted once");
    const { when, validUntil, reason } = lostAt[0]!;
    assert.ok(reason instanceof SessionLostError);
    assert.equal(reason.kind, "expired");
    assert.equal(a.lostReason?.kind, "expired");
    assert.ok(when <= validUntil, `lost at ${when}, after validUntil ${validUntil}`);
    assert.ok(when < bGrantedSeen, "B was granted only after A saw its loss");
    assert.ok(bLock.fencingToken > aLock.fencingToken);
    assert.throws(() => a.check(), SessionLostError);
    assert.throws(() => aLock.check(), SessionLostError);
    await a.close();
  } finally {
    await proxy.close();
  }
});

// conformance: C07-dropped-acquire-reply-one-grant
test("C07-dropped-acquire-reply-one-grant: an acquire whose first reply is swallowed is retried under its request id into exactly one grant", async () => {
  const cluster = await sharedCluster();
  await using observer = cluster.client();
  const leader = await cluster.leaderId(observer);
  const proxy = await new Proxy(cluster.node(leader).addr).start();
  try {
    await using client = cluster.client([proxy.addr]);
    await client.clusterStatus(); // the connection is up
    const idsBefore = client.requestIds.lastIssuedId;
    proxy.swallow();
    const acquire = client.acquire({ resource: "c07-r", ttlMs: 5000 });
    let settled = false;
    void acquire.finally(() => (settled = true)).catch(() => undefined);
    // The first attempt reached the leader and took effect while its reply was dropped.
    await waitFor("the first attempt's grant is visible", async () => (await observer.status("c07-r")).holder !== undefined, 4000);
    // ... and its answer reached the proxy, which dropped it (the proxy runs on this event loop:
    // wait for it to have read the bytes, or heal() would drop them uncounted).
    await waitFor("the first attempt's answer was swallowed", async () => proxy.swallowedBytes > 0, 4000);
    assert.equal(settled, false);
    proxy.heal();
    const result = await within(10_000, acquire);
    assert.equal(client.requestIds.lastIssuedId, idsBefore + 1, "every attempt carried one request id");
    assert.ok(result.granted);
    const status = await observer.status("c07-r");
    assert.deepEqual([status.holder?.leaseId, status.holder?.fencingToken], [result.leaseId, result.fencingToken]);
    const listed = await observer.listLocks("c07-");
    assert.deepEqual(
      listed.map((l) => [l.resource, l.holder?.leaseId, l.waiters.length]),
      [["c07-r", result.leaseId, 0]],
    );
    assert.deepEqual((await observer.leaseTimeToLive(result.leaseId)).locks, ["c07-r"]);
    await observer.revoke(result.leaseId);
  } finally {
    await proxy.close();
  }
});
