/**
 * The client against fake nodes (grpc-js servers on 127.0.0.1:0 serving
 * Warden's Lock service from the same protos): leader hints are followed,
 * a retry reuses its request id and watermark (S7), a final refusal is not
 * retried, and an abandoned acquire is taken back with CancelWait before
 * its promise settles. Try-acquires and releases go as calls on one `Calls`
 * stream per node, with the same guarantees; a node without `Calls` gets
 * the unary calls.
 */
import assert from "node:assert/strict";
import { after, test } from "node:test";
import * as grpc from "@grpc/grpc-js";

import { Client, InvalidArgumentError } from "../src/index.js";
import { services } from "../src/proto.js";
import { wardenStatus } from "./status_helper.js";

type Handler = (call: any, callback?: any) => void;

async function fakeNode(handlers: Record<string, Handler>): Promise<{ addr: string; server: grpc.Server }> {
  const server = new grpc.Server();
  const unimplemented: Handler = (_c, cb) => cb({ code: grpc.status.UNIMPLEMENTED, details: "fake" });
  const impl: Record<string, Handler> = {};
  // A bidi call (Calls) has no callback: it ends with the status instead.
  const unimplementedStream: Handler = (c) => c.emit("error", { code: grpc.status.UNIMPLEMENTED, details: "fake" });
  for (const name of Object.keys(services().Lock.service)) {
    impl[name] = handlers[name] ?? (name === "Calls" ? unimplementedStream : unimplemented);
  }
  server.addService(services().Lock.service, impl as grpc.UntypedServiceImplementation);
  const port = await new Promise<number>((res, rej) =>
    server.bindAsync("127.0.0.1:0", grpc.ServerCredentials.createInsecure(), (e, p) => (e ? rej(e) : res(p))),
  );
  return { addr: `127.0.0.1:${port}`, server };
}

const servers: grpc.Server[] = [];
after(() => servers.forEach((s) => s.forceShutdown()));

function notLeader(leader: string) {
  return wardenStatus(grpc.status.UNAVAILABLE, "not the leader", "NOT_LEADER", [], { "warden-leader": leader });
}

test("a follower's hint is followed, a timed-out attempt is retried with the same request id and watermark, the next request takes the next id", async () => {
  const seen: { requestId: number; ackedRequestId: number; clientId: number }[] = [];
  let releases = 0;
  const leader = await fakeNode({
    ClusterStatus: (_c, cb) => cb(null, { leaderId: 1, maxRequestsInFlight: 64 }),
    Release: (call, cb) => {
      releases += 1;
      seen.push(call.request.header);
      if (releases === 1) return; // no answer: the attempt times out
      cb(null, { resource: call.request.resource, leaseId: call.request.leaseId, released: true });
    },
  });
  const follower = await fakeNode({
    ClusterStatus: (_c, cb) => cb(notLeader(leader.addr)),
    Release: (_c, cb) => cb(notLeader(leader.addr)),
  });
  servers.push(leader.server, follower.server);
  await using client = new Client([follower.addr, leader.addr], { attemptTimeoutMs: 200, deadlineMs: 3000 });
  const first = await client.release(7, "r", 3);
  assert.deepEqual(first, { resource: "r", leaseId: 7, released: true });
  assert.equal(client.cachedLeader, leader.addr);
  assert.equal(seen.length, 2, "one timed-out attempt, one answered");
  assert.deepEqual(seen[0], seen[1], "the retry is byte-for-byte the same request");
  assert.deepEqual(seen[0], { clientId: client.clientId, requestId: 1, ackedRequestId: 0 });
  await client.release(7, "r", 3);
  assert.deepEqual(seen[2], { clientId: client.clientId, requestId: 2, ackedRequestId: 1 });
});

test("a server's refusal is final: one attempt, a typed error with the field from BadRequest", async () => {
  let attempts = 0;
  const node = await fakeNode({
    ClusterStatus: (_c, cb) => cb(null, { leaderId: 1 }),
    Release: (_c, cb) => {
      attempts += 1;
      cb(wardenStatus(grpc.status.INVALID_ARGUMENT, "resource: must be 1..=512 bytes", "INVALID_ARGUMENT", ["resource"]));
    },
  });
  servers.push(node.server);
  await using client = new Client(node.addr, { attemptTimeoutMs: 200 });
  await assert.rejects(client.release(1, "x"), (e: unknown) => e instanceof InvalidArgumentError && e.field === "resource");
  assert.equal(attempts, 1);
});

test("an abandoned acquire sends CancelWait naming its request id, and rejects only once the cancel is answered", async () => {
  let acquireHeader: { requestId: number } | undefined;
  let cancel: { header: { requestId: number; ackedRequestId: number }; acquireRequestId: number; resource: string } | undefined;
  let cancelAnsweredAt = 0;
  const node = await fakeNode({
    ClusterStatus: (_c, cb) => cb(null, { leaderId: 1 }),
    Acquire: (call) => {
      acquireHeader = call.request.header;
      call.write({ queued: { position: 1, leaseId: 9, behind: "holder" } }); // then waits
    },
    CancelWait: (call, cb) => {
      cancel = call.request;
      setTimeout(() => {
        cancelAnsweredAt = performance.now();
        cb(null, { resource: call.request.resource, leaseId: 9, outcome: "removed" });
      }, 100);
    },
  });
  servers.push(node.server);
  await using client = new Client(node.addr, { attemptTimeoutMs: 200 });
  const controller = new AbortController();
  const acquiring = client.acquire({ resource: "r", leaseId: 9, waitMs: 30_000, signal: controller.signal, onQueued: () => controller.abort() });
  await assert.rejects(acquiring, (e: unknown) => e === controller.signal.reason);
  const rejectedAt = performance.now();
  assert.ok(cancel && acquireHeader);
  assert.equal(cancel.acquireRequestId, acquireHeader.requestId);
  assert.equal(cancel.resource, "r");
  assert.ok(cancel.header.requestId > acquireHeader.requestId);
  assert.ok(cancel.header.ackedRequestId < acquireHeader.requestId, "the server still knows the acquire");
  assert.ok(cancelAnsweredAt > 0 && rejectedAt >= cancelAnsweredAt, "rejected after the cancel was answered");
});

/** A CallError as a Warden node puts it on a Calls stream: the status's code, message, details and leader. */
function callError(status: ReturnType<typeof wardenStatus>, leader = "") {
  const details = status.metadata.get("grpc-status-details-bin")[0] as Buffer;
  return { code: status.code, message: status.details, leader, details };
}

test("try-acquires and releases go over one Calls stream: a follower's hint is followed, a timed-out call is retried with the same request id, a refusal is a typed error, many calls are in flight at once", async () => {
  let streams = 0;
  let unary = 0;
  const releases: { requestId: number; ackedRequestId: number }[] = [];
  let held: { callId: number }[] = [];
  const leader = await fakeNode({
    ClusterStatus: (_c, cb) => cb(null, { leaderId: 1, maxRequestsInFlight: 64 }),
    Release: (_c, cb) => {
      unary += 1;
      cb({ code: grpc.status.INTERNAL, details: "the unary call was used" });
    },
    Calls: (call) => {
      streams += 1;
      let firstRelease = true;
      call.on("data", (m: any) => {
        if (m.call === "release") {
          releases.push(m.release.header);
          if (firstRelease && m.release.resource === "retry") {
            firstRelease = false;
            return; // no answer: the attempt times out
          }
          if (m.release.resource === "many") {
            held.push(m); // answered once all are in flight, in reverse order
            if (held.length === 20) {
              for (const h of held.reverse()) call.write({ callId: h.callId, release: { resource: "many", leaseId: 7, released: true } });
              held = [];
            }
            return;
          }
          call.write({ callId: m.callId, release: { resource: m.release.resource, leaseId: m.release.leaseId, released: true } });
        } else if (m.acquire.resource === "bad") {
          const refused = wardenStatus(grpc.status.INVALID_ARGUMENT, "resource: no", "INVALID_ARGUMENT", ["resource"]);
          call.write({ callId: m.callId, error: callError(refused) });
        } else {
          const g = { resource: m.acquire.resource, leaseId: 7, fencingToken: 40 + m.callId, ttlMs: 1000, logIndex: 3, mode: "LOCK_MODE_EXCLUSIVE", grants: [], maxHoldMs: 0 };
          call.write({ callId: m.callId, acquire: { granted: g } });
        }
      });
      call.on("end", () => call.end());
    },
  });
  const follower = await fakeNode({
    ClusterStatus: (_c, cb) => cb(notLeader(leader.addr)),
    Calls: (call) => {
      call.on("data", (m: any) => call.write({ callId: m.callId, error: callError(notLeader(leader.addr), leader.addr) }));
      call.on("end", () => call.end());
    },
  });
  servers.push(leader.server, follower.server);
  await using client = new Client([follower.addr, leader.addr], { attemptTimeoutMs: 200, deadlineMs: 3000 });
  const granted = await client.acquire({ resource: "r", leaseId: 7 });
  assert.equal(granted.granted, true);
  assert.equal(client.cachedLeader, leader.addr, "the hint of the follower's call error was followed");
  assert.deepEqual(await client.release(7, "retry", 41), { resource: "retry", leaseId: 7, released: true });
  assert.equal(releases.length, 2, "one timed-out call, one answered");
  assert.deepEqual(releases[0], releases[1], "the retry is the same request");
  await assert.rejects(client.acquire({ resource: "bad", leaseId: 7 }), (e: unknown) => e instanceof InvalidArgumentError && e.field === "resource");
  const many = await Promise.all(Array.from({ length: 20 }, () => client.release(7, "many")));
  assert.ok(many.every((r) => r.released));
  assert.equal(streams, 1, "one stream carried every call to the leader");
  assert.equal(unary, 0);
});

test("a waiting acquire on the Calls stream: queued reports reach onQueued, the grant after them is the answer, and an abandoned one is taken back with CancelWait naming its request id", async () => {
  let acquires: { header: { requestId: number }; resource: string }[] = [];
  let cancel: { acquireRequestId: number; resource: string } | undefined;
  const node = await fakeNode({
    ClusterStatus: (_c, cb) => cb(null, { leaderId: 1 }),
    Acquire: () => assert.fail("the Acquire stream was used"),
    Calls: (call) => {
      call.on("data", (m: any) => {
        acquires.push(m.acquire);
        call.write({ callId: m.callId, acquire: { queued: { position: 1, leaseId: 9, behind: "holder" } } });
        if (m.acquire.resource === "granted") {
          const g = { resource: "granted", leaseId: 9, fencingToken: 5, ttlMs: 1000, logIndex: 3, mode: "LOCK_MODE_EXCLUSIVE", grants: [], maxHoldMs: 0 };
          setTimeout(() => call.write({ callId: m.callId, acquire: { granted: g } }), 300); // past one attempt timeout
        }
      });
      call.on("end", () => call.end());
    },
    CancelWait: (call, cb) => {
      cancel = call.request;
      cb(null, { resource: call.request.resource, leaseId: 9, outcome: "removed" });
    },
  });
  servers.push(node.server);
  await using client = new Client(node.addr, { attemptTimeoutMs: 200 });
  const positions: number[] = [];
  const granted = await client.acquire({ resource: "granted", leaseId: 9, waitMs: 5_000, onQueued: (q) => positions.push(q.position) });
  assert.equal(granted.granted, true);
  assert.deepEqual(positions, [1]);
  assert.equal(acquires.length, 1, "one attempt: the queued report extended its budget to the wait");
  acquires = [];
  const controller = new AbortController();
  const waiting = client.acquire({ resource: "r", leaseId: 9, waitMs: 30_000, signal: controller.signal, onQueued: () => controller.abort() });
  await assert.rejects(waiting, (e: unknown) => e === controller.signal.reason);
  assert.ok(cancel);
  assert.equal(cancel.acquireRequestId, acquires[0]!.header.requestId);
  assert.equal(cancel.resource, "r");
});

test("an idle Calls stream is half-closed after a second, and the next call opens a new one", async () => {
  let streams = 0;
  let ended = 0;
  const node = await fakeNode({
    ClusterStatus: (_c, cb) => cb(null, { leaderId: 1 }),
    Calls: (call) => {
      streams += 1;
      call.on("data", (m: any) => call.write({ callId: m.callId, release: { resource: m.release.resource, leaseId: 1, released: true } }));
      call.on("end", () => {
        ended += 1;
        call.end();
      });
    },
  });
  servers.push(node.server);
  await using client = new Client(node.addr, { attemptTimeoutMs: 200 });
  await client.release(1, "a");
  await client.release(1, "b");
  assert.equal(streams, 1);
  await new Promise((r) => setTimeout(r, 1_400));
  assert.equal(ended, 1, "closed once idle");
  await client.release(1, "c");
  assert.equal(streams, 2);
});
