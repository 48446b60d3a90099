/**
 * Typed errors, and the one place a gRPC status becomes one of them.
 *
 * The server attaches structured details to every status it chooses
 * (`grpc-status-details-bin`: a `google.rpc.Status` whose details hold an
 * `ErrorInfo` with domain `warden.v1` and a reason, and for a bad argument a
 * `BadRequest` naming the field). They are decoded here; the class of an
 * error comes from the ErrorInfo reason, else from the gRPC code. Nothing is
 * ever parsed out of a message text.
 *
 * Whether an attempt is retried is decided here too ({@link isRetryable}).
 */
import { Metadata, status as Code, type ServiceError } from "@grpc/grpc-js";

import { rpcDetailTypes } from "./proto.js";

/** The ErrorInfo domain of every Warden error. */
export const ERROR_DOMAIN = "warden.v1";
/** Metadata entry of an `Unavailable` naming the leader's client address. */
export const LEADER_METADATA = "warden-leader";
/** Metadata entry naming the oldest retained index on a `COMPACTED` error. */
export const OLDEST_INDEX_METADATA = "warden-oldest-index";
const DETAILS_METADATA = "grpc-status-details-bin";

export { Code };

/** One `google.rpc.BadRequest` field violation. */
export interface FieldViolation {
  readonly field: string;
  readonly description: string;
}

/** What a failed call said: code, message and structured details. */
export interface StatusInfo {
  readonly code: Code;
  readonly message: string;
  /** The ErrorInfo reason when its domain is `warden.v1`. */
  readonly reason: string | undefined;
  readonly infoMetadata: Readonly<Record<string, string>>;
  readonly violations: readonly FieldViolation[];
  /** Text metadata of the response (trailers). */
  readonly metadata: Readonly<Record<string, string>>;
}

export function codeName(code: number): string {
  return Code[code] ?? `CODE_${code}`;
}

/** True when the status carried Warden's ErrorInfo: the server chose it. */
export function hasDetails(s: StatusInfo): boolean {
  return s.reason !== undefined;
}

export function describeStatus(s: StatusInfo): string {
  const name = codeName(s.code);
  const tag = s.reason && s.reason !== name ? `${name}/${s.reason}` : name;
  return s.message ? `${tag}: ${s.message}` : tag;
}

function textMetadata(md: Metadata | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  if (!md) return out;
  for (const [key, values] of Object.entries(md.getMap())) {
    if (!key.endsWith("-bin") && typeof values === "string") out[key] = values;
  }
  return out;
}

/** Decodes a `grpc-status-details-bin` value (exported for unit tests). */
export function decodeDetails(raw: Buffer): Pick<StatusInfo, "reason" | "infoMetadata" | "violations"> {
  const types = rpcDetailTypes();
  const status = types.status.toObject(types.status.decode(raw), { defaults: true }) as {
    details: { typeUrl: string; value: Uint8Array }[];
  };
  let reason: string | undefined;
  let infoMetadata: Record<string, string> = {};
  const violations: FieldViolation[] = [];
  for (const detail of status.details) {
    const name = detail.typeUrl.slice(detail.typeUrl.lastIndexOf("/") + 1);
    if (name === "google.rpc.ErrorInfo") {
      const info = types.errorInfo.toObject(types.errorInfo.decode(detail.value), { defaults: true }) as {
        reason: string;
        domain: string;
        metadata: Record<string, string>;
      };
      if (info.domain === ERROR_DOMAIN) {
        reason = info.reason;
        infoMetadata = { ...info.metadata };
      }
    } else if (name === "google.rpc.BadRequest") {
      const bad = types.badRequest.toObject(types.badRequest.decode(detail.value), { defaults: true }) as {
        fieldViolations: FieldViolation[];
      };
      for (const v of bad.fieldViolations) violations.push({ field: v.field, description: v.description });
    }
  }
  return { reason, infoMetadata, violations };
}

/** Reads a failed call (a grpc-js `ServiceError`) into a {@link StatusInfo}. */
export function statusOf(error: Partial<ServiceError> & { code: number }): StatusInfo {
  const md = error.metadata instanceof Metadata ? error.metadata : undefined;
  const base = {
    code: error.code as Code,
    message: error.details ?? "",
    metadata: textMetadata(md),
  };
  const raw = md?.get(DETAILS_METADATA)[0];
  if (raw instanceof Buffer) {
    try {
      return { ...base, ...decodeDetails(raw) };
    } catch {
      // Not a google.rpc.Status: not Warden's details.
    }
  }
  return { ...base, reason: undefined, infoMetadata: {}, violations: [] };
}

export function isServiceError(e: unknown): e is ServiceError {
  return e instanceof Error && typeof (e as Partial<ServiceError>).code === "number" && "metadata" in e;
}

// --- the errors -------------------------------------------------------------

/**
 * Every error this client raises for a server's answer or a failed call.
 * `status` is the server's status when one ended the call; `field` is the
 * field its BadRequest details name, if any.
 */
export class WardenError extends Error {
  readonly status: StatusInfo | undefined;
  readonly field: string | undefined;

  constructor(message: string, status?: StatusInfo, field?: string) {
    super(message);
    this.name = new.target.name;
    this.status = status;
    this.field = field ?? status?.violations[0]?.field;
  }

  /** The gRPC code, when a status ended the call. */
  get code(): Code | undefined {
    return this.status?.code;
  }

  /** The ErrorInfo reason (`INVALID_ARGUMENT`, `LEASE_NOT_LIVE`, ...). */
  get reason(): string | undefined {
    return this.status?.reason;
  }
}

/** The server refused an argument as malformed or out of bounds; `field` names it. Nothing changed. */
export class InvalidArgumentError extends WardenError {}
/** The lease or resource named does not exist (or is another principal's). */
export class NotFoundError extends WardenError {}
/** The lease is not live (expired, revoked, never granted, or not the caller's). */
export class LeaseNotFoundError extends NotFoundError {}
/** The request does not fit the current state (stale token, another kind; S6). */
export class FailedPreconditionError extends WardenError {}
/** The server no longer keeps this retried request's outcome; it was not executed twice (S7). */
export class RequestExpiredError extends FailedPreconditionError {}
/** The caller's principal may not do this. */
export class PermissionDeniedError extends WardenError {}
/** An admin call on a node that does not allow it. */
export class AdminDisabledError extends PermissionDeniedError {}
/** The server requires a client certificate it accepts. */
export class UnauthenticatedError extends WardenError {}
/** A table, counter or quota is full (or the in-flight window stayed full). */
export class ResourceExhaustedError extends WardenError {}
/** The server does not serve this method. */
export class UnimplementedError extends WardenError {}
/** A failure that is not retried and has no class of its own. */
export class TransportError extends WardenError {}

/** A watch's start is older than the node's retained window. */
export class CompactedError extends WardenError {
  constructor(
    message: string,
    status: StatusInfo | undefined,
    /** The oldest index the node still retains. */
    readonly oldestIndex: number,
  ) {
    super(message, status);
  }
}

/** The call kept failing over until its deadline; `tried` lists each address. */
export class ClusterUnavailableError extends WardenError {
  constructor(
    message: string,
    readonly tried: readonly string[],
    readonly waitedMs: number,
    readonly lastError: string,
    lastStatus: StatusInfo | undefined,
  ) {
    super(message, lastStatus);
  }
}
/** Nodes answered, but none could serve the call in time (no leader, no quorum; L3). */
export class NoQuorumError extends ClusterUnavailableError {}
/** No node could be reached before the deadline. */
export class UnavailableError extends ClusterUnavailableError {}

/** Why a session (or one grant on it) can no longer be trusted. */
export type LostKind = "expired" | "lease_gone" | "closed" | "clock_failed" | "max_hold" | "released";

/** The session (or the grant) the call depends on is lost (S5): `kind` says why. */
export class SessionLostError extends WardenError {
  constructor(
    readonly kind: LostKind,
    readonly leaseId: number,
    /** The validity that ran out, on the session clock (ms), for `expired`/`max_hold`. */
    readonly validUntil?: number,
    detail?: string,
  ) {
    super(
      `lease ${leaseId} lost: ${kind}` +
        (validUntil !== undefined ? ` (valid until ${validUntil.toFixed(1)} ms on the session clock)` : "") +
        (detail ? `: ${detail}` : ""),
    );
  }
}

/** Why an acquire was not granted (the server's `NotGranted.reason`). */
export type NotGrantedReason = "held" | "lock_delay" | "wait_timeout" | "cancelled" | "reserved";

/** An acquire answered "not granted"; `holderLeaseId` is 0 when none holds it. */
export class NotGrantedError extends WardenError {
  constructor(
    readonly resource: string,
    readonly holderLeaseId: number,
    readonly notGrantedReason: NotGrantedReason,
  ) {
    super(
      `${JSON.stringify(resource)} not granted: ${notGrantedReason}` +
        (holderLeaseId ? ` (held by lease ${holderLeaseId})` : ""),
    );
  }
}
/** Not granted: another lease holds the resource. */
export class HeldError extends NotGrantedError {}
/** Not granted: the resource is in its lock-delay after an involuntary loss. */
export class LockDelayError extends NotGrantedError {}
/** Not granted: the wait ran out; the waiter's removal has committed (S8). */
export class WaitTimeoutError extends NotGrantedError {}

export function notGrantedError(resource: string, holder: number, reason: NotGrantedReason): NotGrantedError {
  switch (reason) {
    case "held":
      return new HeldError(resource, holder, reason);
    case "lock_delay":
      return new LockDelayError(resource, holder, reason);
    case "wait_timeout":
      return new WaitTimeoutError(resource, holder, reason);
    default:
      return new NotGrantedError(resource, holder, reason);
  }
}

/** The session clock could not be read. */
export class ClockError extends WardenError {}

/** A TLS file is missing or unusable; `path` names it (contents never shown). */
export class TlsConfigError extends WardenError {
  constructor(
    readonly path: string,
    problem: string,
  ) {
    super(`${path}: ${problem}`);
  }
}

// --- the mapping ------------------------------------------------------------

type ErrorClass = new (message: string, status?: StatusInfo) => WardenError;

const BY_REASON: Record<string, ErrorClass> = {
  INVALID_ARGUMENT: InvalidArgumentError,
  NOT_FOUND: NotFoundError,
  LEASE_NOT_LIVE: LeaseNotFoundError,
  FAILED_PRECONDITION: FailedPreconditionError,
  REQUEST_EXPIRED: RequestExpiredError,
  PERMISSION_DENIED: PermissionDeniedError,
  ADMIN_DISABLED: AdminDisabledError,
  UNAUTHENTICATED: UnauthenticatedError,
  RESOURCE_EXHAUSTED: ResourceExhaustedError,
};

const BY_CODE: Partial<Record<Code, ErrorClass>> = {
  [Code.INVALID_ARGUMENT]: InvalidArgumentError,
  [Code.OUT_OF_RANGE]: InvalidArgumentError,
  [Code.NOT_FOUND]: NotFoundError,
  [Code.FAILED_PRECONDITION]: FailedPreconditionError,
  [Code.PERMISSION_DENIED]: PermissionDeniedError,
  [Code.UNAUTHENTICATED]: UnauthenticatedError,
  [Code.RESOURCE_EXHAUSTED]: ResourceExhaustedError,
  [Code.UNIMPLEMENTED]: UnimplementedError,
};

function oldestIndex(s: StatusInfo): number | undefined {
  const raw = s.metadata[OLDEST_INDEX_METADATA] ?? s.infoMetadata["oldest_index"];
  if (raw === undefined || !/^\d+$/.test(raw)) return undefined;
  return Number(raw);
}

/** The typed error of a final status: by ErrorInfo reason, else by code. */
export function errorFromStatus(s: StatusInfo): WardenError {
  const oldest = oldestIndex(s);
  if (s.reason === "COMPACTED" || (s.reason === undefined && s.code === Code.OUT_OF_RANGE && oldest !== undefined)) {
    return new CompactedError(s.message, s, oldest ?? 0);
  }
  const cls = (s.reason !== undefined ? BY_REASON[s.reason] : undefined) ?? BY_CODE[s.code];
  if (cls === undefined) return new TransportError(describeStatus(s), s);
  return new cls(s.message, s);
}

/**
 * Whether a failed attempt is tried again (hint, next endpoint or backoff;
 * the same request id, so never twice in effect, S7): not the leader, no
 * quorum, timeouts and dropped connections are; a server's refusal is final.
 */
export function isRetryable(s: StatusInfo): boolean {
  switch (s.code) {
    case Code.UNAVAILABLE:
    case Code.CANCELLED:
    case Code.DEADLINE_EXCEEDED:
    case Code.ABORTED:
      return true;
    case Code.UNKNOWN:
    case Code.INTERNAL:
      // A server-chosen status carries details; a broken connection does not.
      return !hasDetails(s);
    case Code.UNIMPLEMENTED:
      // Not a Warden node (another HTTP/2 service): try the next one.
      return true;
    default:
      return false;
  }
}

/** True when a Warden node itself answered Unavailable (not leader, no quorum). */
export function serverAnswered(s: StatusInfo): boolean {
  return s.code === Code.UNAVAILABLE && hasDetails(s);
}
