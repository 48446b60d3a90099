import { test } from "node:test";
import assert from "node:assert/strict";

import { FULL, QUICK, newRow, parseArgs, quantile, tag } from "../lib.mjs";

test("quantiles are nearest-rank, whole microseconds", () => {
  assert.equal(quantile([], 0.5), null);
  const l = [5, 1, 4, 2, 3].map((v) => v + 0.0004567);
  assert.equal(quantile(l, 0.5), 3);
  assert.equal(quantile(l, 0.99), 5);
  assert.equal(quantile(l, 0), 1);
  assert.equal(quantile([1.2345678], 0.5), 1.234);
  // Sorted as numbers, not as strings.
  assert.equal(quantile([10, 9, 100], 0.5), 10);
});

test("sizes are gobench's, overridable one by one", () => {
  assert.deepEqual(parseArgs(["--endpoints", "127.0.0.1:1"]).params, FULL);
  assert.deepEqual(parseArgs(["--endpoints", "127.0.0.1:1", "--quick"]).params, QUICK);
  const o = parseArgs(["--endpoints", "127.0.0.1:1,127.0.0.1:2", "--quick", "--iterations", "7", "--workloads", "parallel"]);
  assert.deepEqual(o.endpoints, ["127.0.0.1:1", "127.0.0.1:2"]);
  assert.deepEqual(o.params, { ...QUICK, iterations: 7 });
  assert.deepEqual(o.workloads, ["parallel"]);
});

test("bad arguments are refused, naming them", () => {
  assert.throws(() => parseArgs([]), /--endpoints is required/);
  assert.throws(() => parseArgs(["--endpoints", "a:1", "--clients", "0"]), /--clients/);
  assert.throws(() => parseArgs(["--endpoints", "a:1", "--workloads", "contended"]), /unknown workload "contended"/);
  assert.throws(() => parseArgs(["--endpoints", "a:1", "--bogus"]), /unexpected argument "--bogus"/);
});

test("tags are hex, rows have gobench's fields", () => {
  assert.match(tag(), /^[0-9a-f]{1,8}$/);
  const r = newRow("uncontended", "warden-node", "c", [1, 2]);
  assert.deepEqual(Object.keys(r), ["workload", "backend", "config", "safe", "p50_ms", "p99_ms", "p999_ms", "ops_per_s", "count", "errors"]);
  assert.equal(r.count, 2);
});
