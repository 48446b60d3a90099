#!/usr/bin/env node
// The Node driver of bench/: Warden measured through its Node client
// (@warden-locks/client: Session.lock + Lock.release), on the uncontended
// and parallel workloads of bench/go (internal/workload), with the same
// definitions, sizes and resource names:
//
//   - uncontended: one client, acquire + release of a fresh resource
//     (w<tag>-<i> for the warm-up, u<tag>-<i> timed), --iterations timed
//     cycles after --warmup untimed ones, one after another.
//   - parallel: --clients clients, each cycling on its own resource
//     (p<tag>-<client>), for 1 s of warm-up and then --seconds counted; each
//     cycle has 10 s (an AbortSignal.timeout on the acquire: gobench's
//     per-cycle context); a failed cycle is counted, not fatal.
//
// A client is what a gobench client is: its own Client (its own connection:
// the client keeps its channels to itself) and one session with a 10 s TTL,
// made before the timed part; mutual TLS as root from --certs-dir (ca.crt,
// client.root.crt/.key), plaintext without it. All clients share this
// process's one event loop, as a Node service's do.
//
// It does not start a cluster: gobench runs it (--node-driver) on the
// cluster it has just measured the Go client on, before stopping it, and
// adds its rows beside the Go rows (bench/go/cmd/gobench). By hand, on any
// running cluster:
//
//   node nodebench.mjs --endpoints 127.0.0.1:7001,127.0.0.1:7002,127.0.0.1:7003 --certs-dir DIR --quick
//
// Each row is one line of JSON on stdout, in the shape of gobench's rows,
// plus client_cpu_ms_per_op (this process's user+system CPU from before the
// first connect to after the last close, per cycle, warm-up included, as
// gobench records its own) and client_event_loop_utilization (of the timed
// part: near 1, the one thread the clients share is the limit); a line for
// people goes to stderr. A workload that fails gives a row with "failed"
// and the exit status 1.
import { performance } from "node:perf_hooks";
import { readFileSync } from "node:fs";

import { Client, tlsFromCertsDir } from "@warden-locks/client";

import { CYCLE_TIMEOUT_MS, TTL_MS, newRow, parseArgs, tag } from "./lib.mjs";

// The client's version, read through the link npm made (its exports do not list package.json).
const clientVersion = JSON.parse(
  readFileSync(new URL("./node_modules/@warden-locks/client/package.json", import.meta.url), "utf8"),
).version;

async function connect(o) {
  const client = new Client(o.endpoints, o.certsDir ? { tls: tlsFromCertsDir(o.certsDir, "root") } : {});
  try {
    const session = await client.session({ ttlMs: TTL_MS });
    return { client, session };
  } catch (e) {
    await client.close();
    throw new Error(`${o.backend}: connect: ${e.message}`, { cause: e });
  }
}

async function connectN(o, n) {
  const clients = [];
  try {
    for (let i = 0; i < n; i++) clients.push(await connect(o));
  } catch (e) {
    await closeAll(clients);
    throw e;
  }
  return clients;
}

async function closeAll(clients) {
  await Promise.all(
    clients.map(async ({ client, session }) => {
      await session.close().catch(() => undefined);
      await client.close().catch(() => undefined);
    }),
  );
}

/** One operation: acquire a free resource, release it. */
async function cycle(c, resource, signal) {
  let lock;
  try {
    lock = await c.session.lock(resource, signal ? { signal } : {});
  } catch (e) {
    throw new Error(`lock ${resource}: ${e.message}`, { cause: e });
  }
  try {
    await lock.release();
  } catch (e) {
    throw new Error(`release ${resource}: ${e.message}`, { cause: e });
  }
}

function cpuMs(since) {
  const u = process.cpuUsage(since);
  return (u.user + u.system) / 1000;
}

async function uncontended(o) {
  const p = o.params;
  const cpu0 = process.cpuUsage();
  const c = await connect(o);
  let lat, wall, elu;
  try {
    const tg = tag();
    for (let i = 0; i < p.warmup; i++) await cycle(c, `w${tg}-${i}`);
    lat = new Array(p.iterations);
    const elu0 = performance.eventLoopUtilization();
    const started = performance.now();
    for (let i = 0; i < p.iterations; i++) {
      const t0 = performance.now();
      await cycle(c, `u${tg}-${i}`);
      lat[i] = performance.now() - t0;
    }
    wall = (performance.now() - started) / 1000;
    elu = performance.eventLoopUtilization(elu0).utilization;
  } finally {
    await closeAll([c]);
  }
  const row = newRow("uncontended", o.backend, o.config, lat);
  row.ops_per_s = lat.length / wall;
  row.ops_total = p.warmup + p.iterations;
  return finish(row, cpu0, elu);
}

async function parallel(o) {
  const p = o.params;
  const cpu0 = process.cpuUsage();
  const clients = await connectN(o, p.clients);
  const warmMs = 1000;
  const runMs = p.seconds * 1000;
  let results, elu;
  try {
    const tg = tag();
    const start = performance.now();
    const measureFrom = start + warmMs;
    const stopAt = start + warmMs + runMs;
    let elu0;
    const eluTimer = setTimeout(() => (elu0 = performance.eventLoopUtilization()), warmMs);
    results = await Promise.all(
      clients.map(async (c, i) => {
        const resource = `p${tg}-${i}`;
        const r = { lat: [], errors: 0, all: 0 };
        for (;;) {
          const t0 = performance.now();
          if (t0 >= stopAt) break;
          try {
            await cycle(c, resource, AbortSignal.timeout(CYCLE_TIMEOUT_MS));
          } catch {
            r.errors++;
            continue;
          }
          if (t0 >= measureFrom) r.lat.push(performance.now() - t0);
          r.all++;
        }
        return r;
      }),
    );
    clearTimeout(eluTimer);
    elu = elu0 === undefined ? null : performance.eventLoopUtilization(elu0).utilization;
  } finally {
    await closeAll(clients);
  }
  const lat = results.flatMap((r) => r.lat);
  const row = newRow("parallel", o.backend, o.config, lat);
  row.ops_per_s = lat.length / (runMs / 1000);
  row.errors = results.reduce((n, r) => n + r.errors, 0);
  row.ops_total = results.reduce((n, r) => n + r.all, 0);
  row.clients = p.clients;
  return finish(row, cpu0, elu);
}

function finish(row, cpu0, elu) {
  row.client_cpu_ms_per_op = row.ops_total > 0 ? Math.round((cpuMs(cpu0) / row.ops_total) * 1000) / 1000 : null;
  row.client_event_loop_utilization = elu === null ? null : Math.round(elu * 1000) / 1000;
  row.client = `@warden-locks/client ${clientVersion}, Node ${process.version}`;
  return row;
}

function fmt(v, digits) {
  return v === null || v === undefined ? "-" : v.toFixed(digits);
}

async function main() {
  let o;
  try {
    o = parseArgs(process.argv.slice(2));
  } catch (e) {
    process.stderr.write(`nodebench: ${e.message}\n`);
    return 2;
  }
  let status = 0;
  for (const w of o.workloads) {
    const t0 = performance.now();
    let row;
    try {
      row = await (w === "uncontended" ? uncontended(o) : parallel(o));
    } catch (e) {
      status = 1;
      row = { workload: w, backend: o.backend, config: o.config, safe: true, p50_ms: null, p99_ms: null, p999_ms: null, ops_per_s: null, count: 0, errors: 1, failed: e.message };
    }
    process.stdout.write(JSON.stringify(row) + "\n");
    const state = row.failed ? `FAILED: ${row.failed}` : `count ${row.count}, errors ${row.errors}, client CPU ${fmt(row.client_cpu_ms_per_op, 3)} ms/cycle, event loop ${fmt(row.client_event_loop_utilization, 2)}`;
    process.stderr.write(
      `   ${w.padEnd(12)} p50 ${fmt(row.p50_ms, 2).padStart(8)} ms  p99 ${fmt(row.p99_ms, 2).padStart(8)} ms  ops/s ${fmt(row.ops_per_s, 1).padStart(9)}  ${state} (${o.backend}, ${((performance.now() - t0) / 1000).toFixed(1)} s)\n`,
    );
  }
  return status;
}

process.exitCode = await main();
