/**
 * Where the next attempt goes: endpoint parsing, the `warden-leader` hint,
 * and the per-call plan of targets and pauses (pure logic: no I/O, no clock).
 *
 * Rules (docs/semantics.md L3): start at the cached leader (or the first
 * endpoint); on a failure that names a leader go there at once (at most as
 * many hops in a row as there are endpoints, so two confused nodes cannot
 * bounce a call forever); otherwise move to the next endpoint at once, and
 * after a whole round of endpoints failed pause 25 ms, doubling, capped
 * (200 ms by default). A hint naming a node that failed this call without
 * answering is not followed (a frozen ex-leader would cost an attempt
 * timeout per hint).
 */
import { LEADER_METADATA } from "./errors.js";

/** First pause after a whole round of endpoints failed, in ms. */
export const BACKOFF_BASE_MS = 25;

/** `host:port` (an `http://` prefix is dropped) in canonical form; TypeError naming what is wrong. */
export function parseEndpoint(raw: string): string {
  const bad = (why: string) => new TypeError(`endpoints: ${JSON.stringify(raw)}: ${why}`);
  let text = String(raw).trim();
  if (text.startsWith("http://")) text = text.slice("http://".length);
  else if (text.includes("://")) throw bad("only plain host:port (or http://host:port) is supported");
  text = text.replace(/\/+$/, "");
  if (!text) throw bad("empty address; expected host:port");
  const colon = text.lastIndexOf(":");
  if (colon < 0) throw bad("missing port; expected host:port");
  const host = text.slice(0, colon);
  const port = text.slice(colon + 1);
  if (!host || host === "[]") throw bad("missing host; expected host:port");
  if (/[/?#@ ]/.test(host)) throw bad("host contains a character that is not allowed in host:port");
  if (host.includes(":") && !(host.startsWith("[") && host.endsWith("]"))) {
    throw bad("an IPv6 host must be in brackets, e.g. [::1]:7001");
  }
  if (!/^\d+$/.test(port) || Number(port) < 1 || Number(port) > 65535) {
    throw bad(`port ${JSON.stringify(port)} is not a number in 1..=65535`);
  }
  return text;
}

/** A comma-separated string or a list of `host:port`, canonical, without duplicates, at least one. */
export function parseEndpoints(endpoints: string | readonly string[]): string[] {
  const items = typeof endpoints === "string" ? endpoints.split(",") : [...endpoints];
  const out: string[] = [];
  for (const item of items) {
    const e = parseEndpoint(item);
    if (!out.includes(e)) out.push(e);
  }
  if (out.length === 0) throw new TypeError("endpoints: at least one host:port is required");
  return out;
}

/** The leader's address from a `warden-leader` entry; undefined when absent or malformed. */
export function leaderHint(metadata: Readonly<Record<string, string>>): string | undefined {
  const value = metadata[LEADER_METADATA];
  if (!value) return undefined;
  try {
    return parseEndpoint(value);
  } catch {
    return undefined;
  }
}

/** The pause after `round` completed rounds: 25 ms doubling, at most `capMs`. */
export function backoffMs(round: number, capMs: number): number {
  return Math.min(BACKOFF_BASE_MS * 2 ** Math.min(round, 16), capMs);
}

/** The targets and pauses of one call, from first attempt to deadline. */
export class CallPlan {
  readonly first: string;
  private cursor: number;
  private failuresInRound = 0;
  private rounds = 0;
  private hopsInARow = 0;
  private readonly triedList: string[] = [];
  private silent: string[] = [];

  constructor(
    private readonly endpoints: readonly string[],
    cachedLeader: string | undefined,
    private readonly backoffCapMs: number,
  ) {
    if (endpoints.length === 0) throw new TypeError("endpoints: at least one host:port is required");
    if (cachedLeader !== undefined) {
      this.first = cachedLeader;
      const at = endpoints.indexOf(cachedLeader);
      this.cursor = at >= 0 ? (at + 1) % endpoints.length : 0;
    } else {
      this.first = endpoints[0]!;
      this.cursor = 1 % endpoints.length;
    }
    this.note(this.first);
  }

  private note(target: string): void {
    if (!this.triedList.includes(target)) this.triedList.push(target);
  }

  /** Distinct addresses tried so far, in order of first attempt. */
  get tried(): readonly string[] {
    return this.triedList;
  }

  /** After `failed` failed (`hint`: the leader it named; `answered`: the node itself replied): the pause and the next target. */
  afterFailure(failed: string, hint: string | undefined, answered: boolean): { pauseMs: number; next: string } {
    this.failuresInRound += 1;
    if (answered) this.silent = this.silent.filter((s) => s !== failed);
    else if (!this.silent.includes(failed)) this.silent.push(failed);
    const followable = hint !== undefined && hint !== failed && !this.silent.includes(hint);
    if (followable && this.hopsInARow < this.endpoints.length) {
      this.hopsInARow += 1;
      this.note(hint);
      return { pauseMs: 0, next: hint };
    }
    this.hopsInARow = 0;
    const n = this.endpoints.length;
    let next = this.endpoints[this.cursor]!;
    this.cursor = (this.cursor + 1) % n;
    if (next === failed && n > 1) {
      next = this.endpoints[this.cursor]!;
      this.cursor = (this.cursor + 1) % n;
    }
    let pauseMs = 0;
    if (this.failuresInRound >= n) {
      this.failuresInRound = 0;
      pauseMs = backoffMs(this.rounds, this.backoffCapMs);
      this.rounds += 1;
    }
    this.note(next);
    return { pauseMs, next };
  }
}
