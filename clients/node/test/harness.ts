/**
 * A real three-node mutual-TLS cluster for the conformance tests, and a
 * loopback TCP proxy (clients/conformance/README.md "The cluster a test run
 * starts").
 *
 * - `warden server` children from WARDEN_BIN (default: the workspace's
 *   target/debug/warden) on 127.0.0.1, ports from :0, data in a temp dir,
 *   `--initial-cluster-state new` and `--admin-listen` (for /readyz).
 * - The run mints a CA, node certificates (SANs 127.0.0.1, localhost) and
 *   client certificates for root, alice and bob with `warden cert`; every
 *   client connects with mTLS.
 * - The binary runs without the caller's WARDEN_* CLI settings.
 * - Everything waits with deadlines; nothing sleeps to synchronise.
 */
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, openSync, closeSync, readFileSync, rmSync } from "node:fs";
import { request as httpsRequest } from "node:https";
import { createServer, connect, type Server, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

import { BOOT_CLOCK, Client, WardenError, tlsFromCertsDir, type ClientOptions } from "../src/index.js";

const here = dirname(fileURLToPath(import.meta.url));
/** clients/node, from build/test/ (compiled) or test/ (source). */
export const PACKAGE_ROOT = resolve(here, existsSync(join(here, "..", "package.json")) ? ".." : join("..", ".."));

/** Each node snapshots after this many entries (C09's compacted watch needs a restarted node past one). */
export const SNAPSHOT_THRESHOLD = 32;
export const PRINCIPALS = ["root", "alice", "bob"] as const;

export function wardenBin(): string {
  return resolve(process.env["WARDEN_BIN"] || join(PACKAGE_ROOT, "..", "..", "target", "debug", "warden"));
}

/** This environment without the CLI's WARDEN_* settings (WARDEN_BIN stays), plus `extra`. */
export function binaryEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith("WARDEN_") || k === "WARDEN_BIN") env[k] = v;
  return { ...env, ...extra };
}

const givenPorts = new Set<number>();

/** A loopback port from a bind to :0 that this process has not handed out before. */
export async function freePort(): Promise<number> {
  for (;;) {
    const port = await new Promise<number>((res, rej) => {
      const s = createServer();
      s.once("error", rej);
      s.listen(0, "127.0.0.1", () => {
        const p = (s.address() as { port: number }).port;
        s.close(() => res(p));
      });
    });
    if (!givenPorts.has(port)) {
      givenPorts.add(port);
      return port;
    }
  }
}

/** The test process's monotonic clock, the session clock (ms). */
export function bootNow(): number {
  return BOOT_CLOCK.now();
}

/**
 * Polls `probe` until it returns something other than undefined/false,
 * failing with `what` once `deadlineMs` passed. The pause between probes is
 * a poll interval, not a synchronisation: the deadline decides.
 */
export async function waitFor<T>(
  what: string,
  probe: () => Promise<T | undefined | false>,
  deadlineMs: number,
  everyMs = 20,
): Promise<T> {
  const deadline = performance.now() + deadlineMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await probe();
      if (value !== undefined && value !== false) return value as T;
    } catch (e) {
      if (!(e instanceof WardenError)) throw e;
      last = e;
    }
    if (performance.now() >= deadline) {
      throw new Error(`timed out after ${deadlineMs} ms waiting until ${what} (last error: ${String(last)})`);
    }
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

/** Resolves once `p` settles, or rejects after `ms` (a deadline for a test step). */
export function within<T>(ms: number, p: Promise<T>, what = "the step"): Promise<T> {
  let timer: NodeJS.Timeout;
  const deadline = new Promise<never>((_r, rej) => {
    timer = setTimeout(() => rej(new Error(`${what} did not finish within ${ms} ms`)), ms);
  });
  return Promise.race([p, deadline]).finally(() => clearTimeout(timer));
}

interface Node {
  id: number;
  addr: string;
  adminAddr: string;
  dataDir: string;
  log: string;
  certsDir: string;
  proc: ChildProcess | undefined;
}

export class Cluster {
  readonly nodes = new Map<number, Node>();
  readonly clientCerts: string;

  private constructor(readonly root: string) {
    this.clientCerts = join(root, "certs");
  }

  static async prepare(size = 3): Promise<Cluster> {
    const bin = wardenBin();
    if (!existsSync(bin)) throw new Error(`the warden binary ${bin} does not exist: cargo build -p warden, or set WARDEN_BIN`);
    const cluster = new Cluster(mkdtempSync(join(tmpdir(), "warden-node-")));
    for (let id = 1; id <= size; id++) {
      cluster.nodes.set(id, {
        id,
        addr: `127.0.0.1:${await freePort()}`,
        adminAddr: `127.0.0.1:${await freePort()}`,
        dataDir: join(cluster.root, `node-${id}`),
        log: join(cluster.root, `node-${id}.log`),
        certsDir: join(cluster.root, `certs-node-${id}`),
        proc: undefined,
      });
    }
    cluster.mint();
    return cluster;
  }

  private warden(...args: string[]): string {
    const out = spawnSync(wardenBin(), args, { encoding: "utf8", timeout: 60_000, env: binaryEnv() });
    if (out.status !== 0) throw new Error(`warden ${args.join(" ")} failed (${out.status}): ${out.stderr.trim()}`);
    return out.stdout;
  }

  /** CA (its key outside every certs dir), node certificates, client certificates for PRINCIPALS. */
  private mint(): void {
    const caKey = join(this.root, "ca.key");
    this.warden("cert", "create-ca", "--certs-dir", this.clientCerts, "--ca-key", caKey);
    for (const p of PRINCIPALS) this.warden("cert", "create-client", p, "--certs-dir", this.clientCerts, "--ca-key", caKey);
    for (const node of this.nodes.values()) {
      mkdirSync(node.certsDir, { recursive: true });
      copyFileSync(join(this.clientCerts, "ca.crt"), join(node.certsDir, "ca.crt"));
      this.warden("cert", "create-node", "--certs-dir", node.certsDir, "--ca-key", caKey, "--id", String(node.id), "127.0.0.1", "localhost");
    }
  }

  get endpoints(): string[] {
    return [...this.nodes.values()].map((n) => n.addr);
  }

  node(id: number): Node {
    const n = this.nodes.get(id);
    if (!n) throw new Error(`no node ${id}`);
    return n;
  }

  spawn(id: number): void {
    const node = this.node(id);
    const peers = [...this.nodes.values()].map((n) => `${n.id}=${n.addr}`).join(",");
    const log = openSync(node.log, "a");
    node.proc = spawn(
      wardenBin(),
      ["server", "--id", String(id), "--listen", node.addr, "--peers", peers, "--data-dir", node.dataDir,
        "--initial-cluster-state", "new", "--admin-listen", node.adminAddr,
        "--snapshot-threshold", String(SNAPSHOT_THRESHOLD), "--certs-dir", node.certsDir],
      { stdio: ["ignore", log, log], env: binaryEnv({ RUST_LOG: "info,openraft=warn" }) },
    );
    closeSync(log);
    children.add(node.proc);
  }

  async start(): Promise<this> {
    for (const id of this.nodes.keys()) this.spawn(id);
    await this.waitLeader(20_000);
    return this;
  }

  private async signal(id: number, sig: NodeJS.Signals, graceMs: number): Promise<void> {
    const proc = this.node(id).proc;
    this.node(id).proc = undefined;
    if (!proc || proc.exitCode !== null || proc.signalCode !== null) return;
    const exited = new Promise<void>((r) => proc.once("exit", () => r()));
    proc.kill(sig);
    const timer = setTimeout(() => proc.kill("SIGKILL"), graceMs);
    await exited;
    clearTimeout(timer);
  }

  /** SIGKILL node `id` and reap it. */
  kill(id: number): Promise<void> {
    return this.signal(id, "SIGKILL", 0);
  }

  /** SIGTERM node `id` (SIGKILL after 10 s). */
  terminate(id: number): Promise<void> {
    return this.signal(id, "SIGTERM", 10_000);
  }

  /** Starts node `id` again on its data dir; waits until /readyz says ready and a node leads. */
  async restore(id: number, deadlineMs = 30_000): Promise<void> {
    this.spawn(id);
    await waitFor(`restarted node ${id} is ready`, async () => (await this.readyz(id)) === 200, deadlineMs, 50);
    await this.waitLeader(deadlineMs);
  }

  async stop(): Promise<void> {
    for (const id of this.nodes.keys()) await this.kill(id);
    rmSync(this.root, { recursive: true, force: true });
  }

  logTail(id: number, lines = 30): string {
    try {
      return readFileSync(this.node(id).log, "utf8").split("\n").slice(-lines).join("\n");
    } catch {
      return "";
    }
  }

  options(user = "root", overrides: Partial<ClientOptions> = {}): ClientOptions {
    return { tls: tlsFromCertsDir(this.clientCerts, user), ...overrides };
  }

  client(endpoints?: string[], user = "root", overrides: Partial<ClientOptions> = {}): Client {
    return new Client(endpoints ?? this.endpoints, this.options(user, overrides));
  }

  async leaderId(client?: Client): Promise<number> {
    const c = client ?? this.client();
    try {
      return (await c.clusterStatus()).leaderId;
    } finally {
      if (!client) await c.close();
    }
  }

  /** Waits until a node (other than `notId`) leads; returns its id. */
  async waitLeader(deadlineMs: number, notId?: number): Promise<number> {
    const client = this.client(undefined, "root", { deadlineMs: 2000 });
    try {
      return await waitFor(
        "a node leads",
        async () => {
          const leader = (await client.clusterStatus()).leaderId;
          return leader && leader !== notId && this.nodes.get(leader)?.proc ? leader : undefined;
        },
        deadlineMs,
        50,
      );
    } catch (e) {
      const logs = [...this.nodes.keys()].map((i) => `--- node ${i}\n${this.logTail(i)}`).join("\n");
      throw new Error(`${(e as Error).message}\n${logs}`);
    } finally {
      await client.close();
    }
  }

  /** The HTTP status of node `id`'s /readyz over HTTPS without a client certificate (0 if unreachable). */
  readyz(id: number): Promise<number> {
    const [host, port] = this.node(id).adminAddr.split(":");
    const ca = readFileSync(join(this.clientCerts, "ca.crt"));
    return new Promise((res) => {
      const req = httpsRequest({ host, port: Number(port), path: "/readyz", ca, timeout: 2000 }, (r) => {
        r.resume();
        res(r.statusCode ?? 0);
      });
      req.on("error", () => res(0));
      req.on("timeout", () => req.destroy());
      req.end();
    });
  }

  /** Runs `warden ARGS --endpoints ... --output json` as `user`; returns the JSON it printed. */
  cli(args: string[], user = "root"): unknown {
    const out = this.warden(...args, "--endpoints", this.endpoints.join(","), "--certs-dir", this.clientCerts, "--user", user, "--output", "json");
    return out.trim() ? JSON.parse(out) : undefined;
  }
}

/**
 * A loopback TCP proxy in front of one node (accepts on 127.0.0.1:0).
 * `cut()` stops forwarding both ways, closes every connection and refuses
 * new ones; `swallow()` forwards client→node but drops node→client;
 * `heal()` closes every connection and forwards again.
 */
export class Proxy {
  private server: Server | undefined;
  private readonly conns = new Set<[Socket, Socket]>();
  mode: "forward" | "cut" | "swallow" = "forward";
  swallowedBytes = 0;
  addr = "";

  constructor(private readonly upstream: string) {}

  async start(): Promise<this> {
    const [host, port] = this.upstream.split(":");
    this.server = createServer((client) => {
      if (this.mode === "cut") {
        client.destroy();
        return;
      }
      const node = connect(Number(port), host);
      const pair: [Socket, Socket] = [client, node];
      this.conns.add(pair);
      const end = () => {
        client.destroy();
        node.destroy();
        this.conns.delete(pair);
      };
      client.on("data", (d) => {
        if (this.mode !== "cut") node.write(d);
      });
      node.on("data", (d) => {
        if (this.mode === "swallow") this.swallowedBytes += d.length;
        else if (this.mode === "forward") client.write(d);
      });
      for (const s of pair) {
        s.on("error", end);
        s.on("close", end);
      }
    });
    await new Promise<void>((r) => this.server!.listen(0, "127.0.0.1", () => r()));
    this.addr = `127.0.0.1:${(this.server.address() as { port: number }).port}`;
    return this;
  }

  private closeAll(): void {
    for (const [a, b] of this.conns) {
      a.destroy();
      b.destroy();
    }
    this.conns.clear();
  }

  cut(): void {
    this.mode = "cut";
    this.closeAll();
  }

  swallow(): void {
    this.mode = "swallow";
  }

  heal(): void {
    this.closeAll();
    this.mode = "forward";
  }

  async close(): Promise<void> {
    this.cut();
    await new Promise<void>((r) => (this.server ? this.server.close(() => r()) : r()));
  }
}

/**
 * Lock kinds, multi-locks and max-hold are refused until every member of a
 * fresh cluster reported the log format carrying them: wait for that with a
 * deadline, with one throw-away grant of each.
 */
export async function untilLockKindsAreServed(client: Client): Promise<void> {
  const session = await client.session({ ttlMs: 5000 });
  try {
    await waitFor(
      "every member reads the log formats of lock kinds, multi-locks and max-hold",
      async () => {
        await (await session.semaphore("c14-format-probe", 1).tryAcquire()).release();
        await (await session.lockAll(["c16-format-probe-1", "c16-format-probe-2"], { waitMs: 0 })).release();
        await (await session.tryLock("c17-format-probe", { maxHoldMs: 60_000 })).release();
        return true;
      },
      30_000,
    );
  } finally {
    await session.close();
  }
}

const children = new Set<ChildProcess>();
process.on("exit", () => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill("SIGKILL");
});

/** The one cluster of a test process, started by the first caller, stopped at exit by `stopShared`. */
let shared: Promise<Cluster> | undefined;
export function sharedCluster(): Promise<Cluster> {
  shared ??= Cluster.prepare().then((c) => c.start());
  return shared;
}
export async function stopShared(): Promise<void> {
  if (shared) await (await shared).stop();
}
