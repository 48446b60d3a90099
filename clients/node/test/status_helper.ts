/** Builds the failed-call errors a Warden node sends, for the unit and behaviour tests. */
import { Metadata, type status as Code } from "@grpc/grpc-js";

import { rpcDetailTypes } from "../src/proto.js";

/** A grpc-js ServiceError as a Warden node sends it (details in grpc-status-details-bin). */
export function wardenStatus(
  code: Code,
  message: string,
  reason?: string,
  fields: string[] = [],
  extra: Record<string, string> = {},
): Error & { code: number; details: string; metadata: Metadata } {
  const t = rpcDetailTypes();
  const details = [];
  if (reason) {
    details.push({ typeUrl: "type.googleapis.com/google.rpc.ErrorInfo", value: t.errorInfo.encode({ reason, domain: "warden.v1", metadata: {} }).finish() });
  }
  if (fields.length) {
    const bad = { fieldViolations: fields.map((field) => ({ field, description: `${field} is bad` })) };
    details.push({ typeUrl: "type.googleapis.com/google.rpc.BadRequest", value: t.badRequest.encode(bad).finish() });
  }
  const md = new Metadata();
  md.set("grpc-status-details-bin", Buffer.from(t.status.encode({ code, message, details }).finish()));
  for (const [k, v] of Object.entries(extra)) md.set(k, v);
  return Object.assign(new Error(message), { code, details: message, metadata: md });
}

