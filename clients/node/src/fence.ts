/**
 * The fencing wire convention of `warden-fence` (docs/fencing.md "On the
 * wire"): a fenced request carries the lock's name and the grant's token as
 * HTTP headers (or gRPC metadata of the same names), and a permit's slot or a
 * read-write grant's mode:
 *
 *     warden-resource: orders
 *     warden-fencing-token: 42
 *     warden-slot: 3              (a semaphore permit)
 *     warden-lock-mode: shared    (a read-write grant)
 *
 * {@link fencingHeaders} writes them for a lock (for `fetch` to a fenced
 * service such as `warden fenced-store` or one built on warden-fence);
 * {@link readFencingHeaders} reads and checks them in a Node handler
 * (Express, Fastify, node:http), which must then keep the highest token it
 * accepted per resource and refuse a lower one in the same atomic step as
 * its write.
 */
import { MAX_ID, MAX_RESOURCE_BYTES } from "./limits.js";

export const RESOURCE_HEADER = "warden-resource";
export const TOKEN_HEADER = "warden-fencing-token";
export const SLOT_HEADER = "warden-slot";
export const MODE_HEADER = "warden-lock-mode";

/** What a fenced request names: the lock, its token, and a permit's slot or a reader's/writer's mode. */
export interface FencingClaim {
  readonly resource: string;
  readonly token: number;
  readonly slot?: number;
  readonly mode?: "shared" | "exclusive";
}

/** A grant, as far as its headers go (a Lock, a MultiLock's first resource, a redlock-shaped lock). */
export interface FencedGrant {
  readonly resource: string;
  readonly fencingToken: number;
  readonly slot?: number | undefined;
  readonly mode?: string;
}

/** The headers a write under `grant` carries. */
export function fencingHeaders(grant: FencedGrant): Record<string, string> {
  const headers: Record<string, string> = {
    [RESOURCE_HEADER]: grant.resource,
    [TOKEN_HEADER]: String(grant.fencingToken),
  };
  if (grant.slot !== undefined) headers[SLOT_HEADER] = String(grant.slot);
  else if (grant.mode === "shared" || grant.mode === "exclusive") headers[MODE_HEADER] = grant.mode;
  return headers;
}

/** A missing or malformed fencing header: answer 400 naming `header`. */
export class FencingHeaderError extends Error {
  override name = "FencingHeaderError";
  constructor(
    readonly header: string,
    message: string,
  ) {
    super(message);
  }
}

type HeaderBag = Record<string, string | string[] | undefined> | { get(name: string): string | null };

function one(headers: HeaderBag, name: string): string | undefined {
  if (typeof (headers as { get?: unknown }).get === "function") {
    return (headers as { get(name: string): string | null }).get(name) ?? undefined;
  }
  const value = (headers as Record<string, string | string[] | undefined>)[name];
  if (Array.isArray(value)) {
    if (value.length > 1) throw new FencingHeaderError(name, `malformed header ${name}: given more than once`);
    return value[0];
  }
  return value;
}

function decimal(name: string, raw: string, max: number): number {
  if (!/^\d{1,16}$/.test(raw) || Number(raw) > max) {
    throw new FencingHeaderError(name, `malformed header ${name}: not a whole number within ${name === TOKEN_HEADER ? 1 : 0}..=${max}`);
  }
  return Number(raw);
}

/**
 * Reads the fencing headers of a request (`req.headers` of node:http /
 * Express / Fastify, or a fetch `Headers`); FencingHeaderError naming the
 * header when one is missing or malformed (both a slot and a mode included).
 */
export function readFencingHeaders(headers: HeaderBag): FencingClaim {
  const resource = one(headers, RESOURCE_HEADER);
  if (!resource) throw new FencingHeaderError(RESOURCE_HEADER, `missing header ${RESOURCE_HEADER}`);
  if (Buffer.byteLength(resource) > MAX_RESOURCE_BYTES) {
    throw new FencingHeaderError(RESOURCE_HEADER, `malformed header ${RESOURCE_HEADER}: longer than ${MAX_RESOURCE_BYTES} bytes`);
  }
  const rawToken = one(headers, TOKEN_HEADER);
  if (rawToken === undefined) throw new FencingHeaderError(TOKEN_HEADER, `missing header ${TOKEN_HEADER}`);
  const token = decimal(TOKEN_HEADER, rawToken, MAX_ID);
  if (token < 1) throw new FencingHeaderError(TOKEN_HEADER, `malformed header ${TOKEN_HEADER}: must be at least 1`);
  const rawSlot = one(headers, SLOT_HEADER);
  const rawMode = one(headers, MODE_HEADER);
  if (rawSlot !== undefined && rawMode !== undefined) {
    throw new FencingHeaderError(MODE_HEADER, `malformed header ${MODE_HEADER}: a permit (${SLOT_HEADER}) has no mode`);
  }
  if (rawSlot !== undefined) return { resource, token, slot: decimal(SLOT_HEADER, rawSlot, 2 ** 32 - 1) };
  if (rawMode !== undefined) {
    if (rawMode !== "shared" && rawMode !== "exclusive") {
      throw new FencingHeaderError(MODE_HEADER, `malformed header ${MODE_HEADER}: expected shared or exclusive`);
    }
    return { resource, token, mode: rawMode };
  }
  return { resource, token };
}
