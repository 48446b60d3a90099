/**
 * Conformance C08-C09 (clients/conformance/scenarios.md): election
 * failover, and a watch that sees every grant in order.
 */
import assert from "node:assert/strict";
import { test } from "node:test";

import { CompactedError, type LeaderInfo, type WatchEvent } from "../../src/index.js";
import { SNAPSHOT_THRESHOLD, sharedCluster, waitFor, within } from "../harness.js";

// conformance: C08-election-failover-larger-token
test("C08-election-failover-larger-token: when the leader's session ends the waiting campaigner is elected with a larger token; the observer sees both terms", async () => {
  const cluster = await sharedCluster();
  await using aClient = cluster.client();
  await using bClient = cluster.client();
  await using oClient = cluster.client();
  const a = await aClient.session({ ttlMs: 3000 });
  const b = await bClient.session({ ttlMs: 3000 });
  const aTerm = await a.election("c08-e").campaign("a");
  assert.ok(aTerm.fencingToken >= 1);
  assert.deepEqual(await a.election("c08-e").leader(), { leaseId: a.leaseId, fencingToken: aTerm.fencingToken, value: "a" });

  const bCampaign = b.election("c08-e").campaign("b");
  const key = await bClient.electionKey("c08-e");
  await waitFor("b waits in the election's queue", async () => (await oClient.status(key)).waiters === 1, 5000);
  const observer = await oClient.observe("c08-e");
  const seen: LeaderInfo[] = [];
  const nextLeader = async () => {
    const r = await within(5000, observer.next(), "the observer's next leader");
    assert.equal(r.done, false);
    return r.value as LeaderInfo;
  };
  seen.push(await nextLeader());
  assert.deepEqual(seen, [{ leaseId: a.leaseId, fencingToken: aTerm.fencingToken, value: "a" }]);

  await a.close(); // A's session ends: its term ends with it
  const bTerm = await within(10_000, bCampaign);
  assert.ok(bTerm.fencingToken > aTerm.fencingToken);
  seen.push(await nextLeader());
  assert.deepEqual(seen[1], { leaseId: b.leaseId, fencingToken: bTerm.fencingToken, value: "b" });
  assert.deepEqual(seen.map((s) => s.value), ["a", "b"]);
  assert.deepEqual(await oClient.leader("c08-e"), { leaseId: b.leaseId, fencingToken: bTerm.fencingToken, value: "b" });

  // The new leader proclaims a new value; the observer follows it.
  await bTerm.proclaim("b2");
  assert.equal((await nextLeader()).value, "b2");
  observer.close();
  await bTerm.resign();
  assert.equal(await oClient.leader("c08-e"), undefined);
  await b.close();
});

// conformance: C09-watch-every-grant-in-order
test("C09-watch-every-grant-in-order: a prefix watch sees four grants in commit order, each followed by its release; a start below the window is CompactedError", async () => {
  const cluster = await sharedCluster();
  await using client = cluster.client();
  const watcher = await client.watch({ prefix: "c09-" });
  const session = await client.session({ ttlMs: 5000 });
  for (const resource of ["c09-a", "c09-a", "c09-a", "c09-b"]) await (await session.tryLock(resource)).release();
  const kept: WatchEvent[] = [];
  for await (const event of watcher) {
    if (event.event === "granted" || event.event === "released") kept.push(event);
    if (kept.length === 8) break; // `break` closes the watch
  }
  assert.deepEqual(
    kept.map((e) => [e.resource, e.event]),
    [
      ["c09-a", "granted"], ["c09-a", "released"],
      ["c09-a", "granted"], ["c09-a", "released"],
      ["c09-a", "granted"], ["c09-a", "released"],
      ["c09-b", "granted"], ["c09-b", "released"],
    ],
  );
  const indexes = kept.map((e) => e.index);
  for (let i = 1; i < indexes.length; i++) assert.ok(indexes[i - 1]! < indexes[i]!, String(indexes));
  const grants = kept.filter((_e, i) => i % 2 === 0);
  const releases = kept.filter((_e, i) => i % 2 === 1);
  for (let i = 1; i < grants.length; i++) assert.ok(grants[i - 1]!.fencingToken < grants[i]!.fencingToken);
  grants.forEach((g, i) => {
    assert.equal(g.leaseId, session.leaseId);
    assert.deepEqual([releases[i]!.leaseId, releases[i]!.fencingToken], [g.leaseId, g.fencingToken]);
  });

  // Compaction: enough entries that every node has taken a snapshot; a restarted
  // follower's window starts after its snapshot, so index 1 is below it.
  for (let i = 0; i < SNAPSHOT_THRESHOLD / 2 + 2; i++) await (await session.tryLock("c09-filler")).release();
  await session.close();
  const leader = await cluster.leaderId(client);
  const follower = [...cluster.nodes.keys()].find((id) => id !== leader)!;
  await cluster.terminate(follower);
  await cluster.restore(follower);
  {
    await using direct = cluster.client([cluster.node(follower).addr], "root", { deadlineMs: 15_000 });
    let oldest = 0;
    await assert.rejects(direct.watch({ prefix: "c09-", startIndex: 1 }), (e: unknown) => {
      assert.ok(e instanceof CompactedError, String(e));
      assert.equal(e.reason, "COMPACTED");
      assert.ok(e.oldestIndex > 1, `oldest index ${e.oldestIndex}`);
      oldest = e.oldestIndex;
      return true;
    });
    // A watch from the oldest retained index is served.
    const resumed = await direct.watch({ prefix: "c09-", startIndex: oldest });
    assert.equal(resumed.resumeIndex, oldest);
    resumed.close();
  }
  await cluster.waitLeader(10_000);
});
