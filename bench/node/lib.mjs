// The pure parts of the Node driver (nodebench.mjs), shared with its tests:
// the arguments, the sizes, the resource-name tag and the quantiles, each
// as bench/go's workload package has them, so a Node row and a Go row
// measured on one cluster are the same measurement.
import { randomBytes } from "node:crypto";

/** loadgen's and gobench's full-run sizes (bench/go/internal/workload Full). */
export const FULL = Object.freeze({ warmup: 200, iterations: 2000, clients: 64, seconds: 10 });
/** Their --quick sizes (workload.Quick). */
export const QUICK = Object.freeze({ warmup: 30, iterations: 200, clients: 64, seconds: 3 });
/** The workloads this driver runs (gobench's third, contended, has no Node counterpart). */
export const WORKLOADS = Object.freeze(["uncontended", "parallel"]);
/** Every session's TTL, as bench/go/internal/lockers.TTL. */
export const TTL_MS = 10_000;
/** Each parallel cycle's bound, as workload.Parallel's per-cycle context. */
export const CYCLE_TIMEOUT_MS = 10_000;

const USAGE = `usage: node nodebench.mjs --endpoints HOST:PORT,... [--certs-dir DIR] [--workloads uncontended,parallel]
       [--quick] [--warmup N] [--iterations N] [--clients N] [--seconds N] [--backend NAME] [--config TEXT]`;

/** Parses argv (without node and the script) into options; throws an Error naming the bad argument. */
export function parseArgs(argv) {
  const o = { certsDir: "", workloads: [...WORKLOADS], backend: "warden-node", config: "", quick: false };
  const sizes = {};
  const numeric = { "--warmup": "warmup", "--iterations": "iterations", "--clients": "clients", "--seconds": "seconds" };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const value = () => {
      if (i + 1 >= argv.length) throw new Error(`${a} needs a value\n${USAGE}`);
      return argv[++i];
    };
    if (a === "--quick") o.quick = true;
    else if (a === "--endpoints") o.endpoints = list(value());
    else if (a === "--certs-dir") o.certsDir = value();
    else if (a === "--workloads") o.workloads = list(value());
    else if (a === "--backend") o.backend = value();
    else if (a === "--config") o.config = value();
    else if (a in numeric) {
      const v = value();
      const n = Number(v);
      if (!Number.isSafeInteger(n) || n < 1) throw new Error(`${a}: ${JSON.stringify(v)} is not a whole number of at least 1`);
      sizes[numeric[a]] = n;
    } else throw new Error(`unexpected argument ${JSON.stringify(a)}\n${USAGE}`);
  }
  if (!o.endpoints?.length) throw new Error(`--endpoints is required\n${USAGE}`);
  for (const w of o.workloads) {
    if (!WORKLOADS.includes(w)) throw new Error(`--workloads: unknown workload ${JSON.stringify(w)} (known: ${WORKLOADS.join(", ")})`);
  }
  o.params = { ...(o.quick ? QUICK : FULL), ...sizes };
  return o;
}

function list(s) {
  return s.split(",").map((v) => v.trim()).filter((v) => v !== "");
}

/** A random tag for this run's resource names: 32 bits in hex, as workload.tag. */
export function tag() {
  return randomBytes(4).readUInt32BE(0).toString(16);
}

/**
 * The nearest-rank quantile q of latencies in ms, truncated to the whole
 * microsecond as Go's Duration.Microseconds() does, then in ms (null when
 * empty): workload.Latencies.Quantile.
 */
export function quantile(latenciesMs, q) {
  if (latenciesMs.length === 0) return null;
  const s = Float64Array.from(latenciesMs).sort();
  const i = Math.min(Math.max(Math.ceil(q * s.length) - 1, 0), s.length - 1);
  return Math.trunc(s[i] * 1000) / 1000;
}

/** A row in the shape of gobench's (and loadgen's latest.json `runs`). */
export function newRow(workload, backend, config, latenciesMs) {
  return {
    workload,
    backend,
    config,
    safe: true,
    p50_ms: quantile(latenciesMs, 0.5),
    p99_ms: quantile(latenciesMs, 0.99),
    p999_ms: quantile(latenciesMs, 0.999),
    ops_per_s: null,
    count: latenciesMs.length,
    errors: 0,
  };
}
