/**
 * Unit tests without a cluster: routing and backoff, request ids and the
 * watermark, validity, argument checks, the error mapping from status
 * details, and the fencing headers.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { Metadata, status as Code } from "@grpc/grpc-js";

import {
  CompactedError,
  FailedPreconditionError,
  FencingHeaderError,
  InvalidArgumentError,
  LeaseNotFoundError,
  TransportError,
  errorFromStatus,
  fencingHeaders,
  isRetryable,
  readFencingHeaders,
  serverAnswered,
  statusOf,
  validityMs,
  BootClock,
} from "../src/index.js";
import { checkMaxHold, checkResource, checkResources, checkTtl, DEFAULT_LIMITS } from "../src/limits.js";
import { wardenStatus } from "./status_helper.js";
import { RequestIds } from "../src/requests.js";
import { CallPlan, backoffMs, leaderHint, parseEndpoint, parseEndpoints } from "../src/routing.js";

test("endpoints: canonical host:port, duplicates dropped, bad ones refused naming the problem", () => {
  assert.equal(parseEndpoint(" http://127.0.0.1:7001/ "), "127.0.0.1:7001");
  assert.deepEqual(parseEndpoints("127.0.0.1:1,127.0.0.1:2,127.0.0.1:1"), ["127.0.0.1:1", "127.0.0.1:2"]);
  assert.throws(() => parseEndpoint("127.0.0.1"), /missing port/);
  assert.throws(() => parseEndpoint("https://x:1"), /only plain host:port/);
  assert.throws(() => parseEndpoint("::1:7"), /IPv6 host must be in brackets/);
  assert.throws(() => parseEndpoint("h:70000"), /not a number in 1..=65535/);
  assert.throws(() => parseEndpoints([]), /at least one/);
  assert.equal(leaderHint({ "warden-leader": "127.0.0.1:9" }), "127.0.0.1:9");
  assert.equal(leaderHint({ "warden-leader": "garbage" }), undefined);
});

test("call plan: a hint is followed at once, a silent node's hint is not, a whole failed round pauses 25 ms doubling to the cap", () => {
  const plan = new CallPlan(["a:1", "b:1", "c:1"], undefined, 200);
  assert.equal(plan.first, "a:1");
  assert.deepEqual(plan.afterFailure("a:1", "c:1", true), { pauseMs: 0, next: "c:1" });
  // c failed without answering: a later hint naming c is not followed.
  assert.deepEqual(plan.afterFailure("c:1", undefined, false), { pauseMs: 0, next: "b:1" });
  // ... it is only tried again in its turn of the round robin, after the round's pause.
  assert.deepEqual(plan.afterFailure("b:1", "c:1", true), { pauseMs: 25, next: "c:1" });
  assert.deepEqual(plan.tried, ["a:1", "c:1", "b:1"]);
  assert.deepEqual([0, 1, 2, 3, 10].map((r) => backoffMs(r, 200)), [25, 50, 100, 200, 200]);
  // Starting at the cached leader.
  assert.equal(new CallPlan(["a:1", "b:1"], "b:1", 200).first, "b:1");
});

test("request ids: one per request, the watermark is below the oldest in flight, a full window waits then fails typed", async () => {
  const ids = new RequestIds(2);
  const a = ids.tryBegin()!;
  const b = ids.tryBegin()!;
  assert.deepEqual([a.requestId, a.ackedRequestId, b.requestId, b.ackedRequestId], [1, 0, 2, 0]);
  assert.equal(ids.tryBegin(), undefined, "the window of 2 is full");
  b.finish();
  assert.equal(ids.acked, 0, "1 is still out");
  const waiting = ids.begin(1000);
  a.finish();
  const c = await waiting;
  assert.deepEqual([c.requestId, c.ackedRequestId, ids.acked], [3, 2, 2]);
  c.finish();
  c.finish(); // twice is harmless
  assert.equal(ids.acked, 3);
  const full = new RequestIds(1);
  full.tryBegin();
  await assert.rejects(full.begin(30), /in flight above its acknowledged request 0/);
});

test("validity: TTL × (1 − 2ρ) − 50 ms in whole microseconds, never negative; the boot clock never runs backwards", () => {
  assert.equal(validityMs(10_000), 9750);
  assert.equal(validityMs(1000), 930);
  assert.equal(validityMs(30_000), 29_350);
  assert.equal(validityMs(0), 0);
  assert.equal(validityMs(40), 0);
  const clock = new BootClock();
  let last = clock.now();
  for (let i = 0; i < 1000; i++) {
    const now = clock.now();
    assert.ok(now >= last);
    last = now;
  }
  const noUptime = new BootClock("/nonexistent/uptime");
  assert.equal(noUptime.countsSuspend, false);
  assert.ok(noUptime.now() > 0);
});

test("boot clock: /proc/uptime is kept open; any other file is read afresh, so a removed one is a ClockError and a replaced one is read anew", async () => {
  const { mkdtempSync, writeFileSync, rmSync, renameSync } = await import("node:fs");
  const { tmpdir } = await import("node:os");
  const { join } = await import("node:path");
  const { ClockError } = await import("../src/errors.js");
  const proc = new BootClock();
  if (proc.countsSuspend) assert.equal(proc.keptOpen, true, "procfs's uptime goes through a descriptor kept open");
  const dir = mkdtempSync(join(tmpdir(), "warden-clock-"));
  try {
    const path = join(dir, "uptime");
    // Uptimes on the monotonic clock's scale (hrtime counts from boot on Linux, less suspend).
    const monoS = () => Number(process.hrtime.bigint()) / 1e9;
    writeFileSync(path, `${monoS().toFixed(2)} 50.00\n`);
    const clock = new BootClock(path);
    assert.equal(clock.countsSuspend, true);
    assert.equal(clock.keptOpen, false);
    const first = clock.now();
    // Replaced by another file whose uptime is an hour later: that suspended time is counted.
    writeFileSync(join(dir, "next"), `${(monoS() + 3600).toFixed(2)} 50.00\n`);
    renameSync(join(dir, "next"), path);
    const after = clock.now();
    assert.ok(after - first >= 3_599_000, `the replaced file was read anew (${after - first} ms later)`);
    rmSync(path);
    assert.throws(() => clock.now(), ClockError, "a removed file is a ClockError, not a stale reading");
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("argument checks: RangeError/TypeError naming the argument and the limit, never clamped", () => {
  assert.throws(() => checkTtl(999, DEFAULT_LIMITS), /^RangeError: ttlMs must be within 1000..=3600000; got 999$/);
  assert.throws(() => checkTtl(1.5, DEFAULT_LIMITS), TypeError);
  assert.throws(() => checkTtl("10s", DEFAULT_LIMITS), TypeError);
  assert.equal(checkTtl(1000, DEFAULT_LIMITS), 1000);
  assert.throws(() => checkResource(""), /1..=512 bytes/);
  assert.throws(() => checkResource("a\nb"), /control character/);
  assert.throws(() => checkResources(["a", "a"]), /distinct/);
  assert.throws(() => checkResources([]), /1..=64/);
  assert.throws(() => checkMaxHold(2000, 2000), /waitMs must be below maxHoldMs \(2000\)/);
});

test("error mapping: the class comes from the ErrorInfo reason, the field from BadRequest, never from the message", () => {
  const bad = statusOf(wardenStatus(Code.INVALID_ARGUMENT, "the message says resource", "INVALID_ARGUMENT", ["ttl_ms"]));
  const e = errorFromStatus(bad);
  assert.ok(e instanceof InvalidArgumentError);
  assert.equal(e.field, "ttl_ms");
  assert.equal(e.reason, "INVALID_ARGUMENT");
  assert.equal(e.message, "the message says resource");
  assert.ok(errorFromStatus(statusOf(wardenStatus(Code.NOT_FOUND, "x", "LEASE_NOT_LIVE"))) instanceof LeaseNotFoundError);
  assert.ok(errorFromStatus(statusOf(wardenStatus(Code.FAILED_PRECONDITION, "x", "REQUEST_EXPIRED"))) instanceof FailedPreconditionError);
  const compacted = errorFromStatus(statusOf(wardenStatus(Code.OUT_OF_RANGE, "compacted", "COMPACTED", [], { "warden-oldest-index": "41" })));
  assert.ok(compacted instanceof CompactedError);
  assert.equal(compacted.oldestIndex, 41);
  // Without details: by code; an unknown code is a TransportError.
  const plain = Object.assign(new Error("x"), { code: Code.DATA_LOSS, details: "x", metadata: new Metadata() });
  assert.ok(errorFromStatus(statusOf(plain)) instanceof TransportError);
});

test("retries: not-leader, no-quorum and cut connections are retried; a server's refusal is final", () => {
  const notLeader = statusOf(wardenStatus(Code.UNAVAILABLE, "not the leader", "NOT_LEADER", [], { "warden-leader": "127.0.0.1:5" }));
  assert.ok(isRetryable(notLeader) && serverAnswered(notLeader));
  assert.equal(leaderHint(notLeader.metadata), "127.0.0.1:5");
  const cut = statusOf({ code: Code.UNAVAILABLE, details: "connection reset", metadata: new Metadata() });
  assert.ok(isRetryable(cut) && !serverAnswered(cut));
  assert.ok(isRetryable(statusOf({ code: Code.INTERNAL, details: "stream reset", metadata: new Metadata() })));
  assert.ok(!isRetryable(statusOf(wardenStatus(Code.INTERNAL, "bug", "INTERNAL"))));
  assert.ok(!isRetryable(statusOf(wardenStatus(Code.INVALID_ARGUMENT, "x", "INVALID_ARGUMENT", ["resource"]))));
});

test("fencing headers: written for each kind of grant, read back with the header named on error", () => {
  assert.deepEqual(fencingHeaders({ resource: "orders", fencingToken: 42 }), { "warden-resource": "orders", "warden-fencing-token": "42" });
  assert.deepEqual(fencingHeaders({ resource: "w", fencingToken: 7, slot: 3 }), { "warden-resource": "w", "warden-fencing-token": "7", "warden-slot": "3" });
  assert.deepEqual(fencingHeaders({ resource: "c", fencingToken: 9, slot: undefined, mode: "shared" })["warden-lock-mode"], "shared");
  assert.deepEqual(readFencingHeaders({ "warden-resource": "w", "warden-fencing-token": "7", "warden-slot": "3" }), { resource: "w", token: 7, slot: 3 });
  const headers = new Headers({ "warden-resource": "c", "warden-fencing-token": "9", "warden-lock-mode": "shared" });
  assert.deepEqual(readFencingHeaders(headers), { resource: "c", token: 9, mode: "shared" });
  const named = (h: string) => (e: unknown) => e instanceof FencingHeaderError && e.header === h;
  assert.throws(() => readFencingHeaders({ "warden-fencing-token": "1" }), named("warden-resource"));
  assert.throws(() => readFencingHeaders({ "warden-resource": "r", "warden-fencing-token": "0" }), named("warden-fencing-token"));
  assert.throws(() => readFencingHeaders({ "warden-resource": "r", "warden-fencing-token": "9007199254740992" }), named("warden-fencing-token"));
  assert.throws(() => readFencingHeaders({ "warden-resource": "r", "warden-fencing-token": "1", "warden-slot": "1", "warden-lock-mode": "shared" }), named("warden-lock-mode"));
});

test("Calls: a call's size bound is never below its encoding, and one over the smallest request limit goes unary", async () => {
  const protobuf = (await import("protobufjs")).default;
  const { PROTO_DIR } = await import("../src/proto.js");
  const { callSizeBound, fitsAnyNode, SMALLEST_MAX_REQUEST_BYTES } = await import("../src/calls.js");
  const root = new protobuf.Root();
  root.resolvePath = (_origin, target) => (target.startsWith(PROTO_DIR) ? target : `${PROTO_DIR}warden/${target}`);
  const CallRequest = root.loadSync(`${PROTO_DIR}warden/warden.proto`, { keepCase: false }).lookupType("warden.v1.CallRequest");
  const big = 2 ** 53 - 1;
  const header = { clientId: big, requestId: big, ackedRequestId: big };
  const cases = [
    { release: { header, resource: "r", leaseId: big, fencingToken: big } },
    { release: { header, resource: "é".repeat(256), leaseId: big, fencingToken: big } },
    { acquire: { header, resource: "x".repeat(512), ttlMs: big, leaseId: big, waitTimeoutMs: big, lockDelayMs: big, mode: 2, limit: big, resources: [], maxHoldMs: big } },
    { acquire: { header, resource: "", ttlMs: 1, leaseId: 0, waitTimeoutMs: 0, lockDelayMs: 0, mode: 0, limit: 0, resources: ["a".repeat(300), "b".repeat(300)], maxHoldMs: 0 } },
  ];
  for (const c of cases) {
    const encoded = CallRequest.encode(CallRequest.fromObject({ callId: big, ...c })).finish().length;
    assert.ok(callSizeBound(c as never) >= encoded, `bound ${callSizeBound(c as never)} < encoded ${encoded}`);
  }
  assert.ok(fitsAnyNode(cases[0] as never));
  assert.ok(fitsAnyNode(cases[2] as never), "the largest single resource fits");
  const tooBig = { acquire: { ...cases[3]!.acquire, resources: ["a".repeat(400), "b".repeat(400), "c".repeat(400)] } };
  assert.ok(!fitsAnyNode(tooBig as never) && callSizeBound(tooBig as never) > SMALLEST_MAX_REQUEST_BYTES);
});
