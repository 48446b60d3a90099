/**
 * The README's example (examples/fenced-write.ts, run as written against
 * `warden fenced-store`), the fencing headers, and the redlock-shaped
 * module, against the shared cluster.
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { test } from "node:test";

import { fencedWrite } from "../examples/fenced-write.js";
import { HeldError, readFencingHeaders, type Lock } from "../src/index.js";
import { Redlock } from "../src/redlock.js";
import { PACKAGE_ROOT, binaryEnv, sharedCluster, wardenBin, within } from "./harness.js";

async function startFencedStore(): Promise<{ url: string; stop(): void }> {
  const child = spawn(wardenBin(), ["fenced-store", "--listen", "127.0.0.1:0", "--data-dir", mkdtempSync(join(tmpdir(), "warden-node-store-"))], {
    stdio: ["ignore", "pipe", "ignore"],
    env: binaryEnv(),
  });
  const lines = createInterface({ input: child.stdout! });
  const first = await within(10_000, new Promise<string>((r) => lines.once("line", r)), "the store's first line");
  const match = /listening on (\S+)/.exec(first);
  assert.ok(match, first);
  return { url: `http://${match[1]}`, stop: () => child.kill("SIGKILL") };
}

test("README: the example in the README is examples/fenced-write.ts, word for word", () => {
  const readme = readFileSync(join(PACKAGE_ROOT, "README.md"), "utf8");
  const example = readFileSync(join(PACKAGE_ROOT, "examples", "fenced-write.ts"), "utf8");
  assert.ok(readme.includes(example.trim()), "README.md quotes examples/fenced-write.ts");
});

test("README example: a write under withLock carries its token; an older token is refused with 409 by warden fenced-store", async () => {
  const cluster = await sharedCluster();
  const store = await startFencedStore();
  try {
    const token = await fencedWrite(cluster.endpoints.join(","), cluster.clientCerts, store.url, "100");
    assert.ok(token >= 1);
    assert.equal(await (await fetch(`${store.url}/kv/balance`)).text(), "100");
    // A stale holder (an older token) is refused by the store, not by the lock service.
    const stale = await fetch(`${store.url}/kv/balance`, {
      method: "PUT",
      headers: { "warden-resource": "ledger", "warden-fencing-token": String(token - 1) },
      body: "90",
    });
    assert.equal(stale.status, 409);
    const body = (await stale.json()) as { error: string; highest: number; presented: number };
    assert.deepEqual([body.error, body.highest, body.presented], ["stale token", token, token - 1]);
    assert.equal(await (await fetch(`${store.url}/kv/balance`)).text(), "100");
    // The headers a Node handler reads back are the ones the client wrote.
    const next = await fencedWrite(cluster.endpoints.join(","), cluster.clientCerts, store.url, "110");
    assert.ok(next > token);
    assert.deepEqual(readFencingHeaders({ "warden-resource": "ledger", "warden-fencing-token": String(next) }), { resource: "ledger", token: next });
  } finally {
    store.stop();
  }
});

test("redlock shape: acquire/extend/release with expiration and fencing tokens; a held resource is a typed HeldError; using() holds a multi-lock", async () => {
  const cluster = await sharedCluster();
  await using client = cluster.client();
  const redlock = new Redlock(client, { retryCount: 0 });
  const before = Date.now();
  const lock = await redlock.acquire(["rl-a"], 5000);
  assert.deepEqual(lock.resources, ["rl-a"]);
  assert.ok(lock.fencingToken >= 1);
  assert.deepEqual(lock.fencingTokens, { "rl-a": lock.fencingToken });
  assert.ok(lock.expiration > before && lock.expiration <= Date.now() + 5000 * (1 - 0.02) - 50 + 20, String(lock.expiration - before));
  const status = await client.status("rl-a");
  assert.deepEqual([status.holder?.leaseId, status.holder?.fencingToken], [lock.leaseId, lock.fencingToken]);
  await assert.rejects(redlock.acquire(["rl-a"], 5000), HeldError);
  const expiration = lock.expiration;
  await lock.extend(5000);
  assert.ok(lock.expiration >= expiration);
  await assert.rejects(lock.extend(6000), RangeError);
  await lock.release();
  assert.equal((await client.status("rl-a")).holder, undefined);
  await assert.rejects(redlock.acquire(["rl-a"], 500), /^RangeError: ttlMs must be within 1000/);

  const seen = await redlock.using(["rl-x", "rl-y"], 3000, async (signal, held: Lock) => {
    assert.equal(signal.aborted, false);
    const x = await client.status("rl-x");
    const y = await client.status("rl-y");
    assert.equal(x.holder?.leaseId, held.leaseId);
    assert.equal(y.holder?.leaseId, held.leaseId);
    return [x.holder!.fencingToken, y.holder!.fencingToken];
  });
  assert.equal(new Set(seen).size, 2);
  assert.equal((await client.status("rl-x")).holder, undefined, "released when the routine settled");
});
