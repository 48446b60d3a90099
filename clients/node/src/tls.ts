/**
 * Mutual TLS, as the `warden` CLI takes it: the cluster's CA bundle, this
 * principal's certificate and key, or a certs dir and a user (`ca.crt`,
 * `client.USER.crt`, `client.USER.key`, what `warden cert create-client USER
 * --certs-dir DIR` writes). The server authenticates the principal from the
 * certificate (docs/security.md). A CA alone (no certificate) is enough for
 * gRPC's health service.
 *
 * The files are read when a client is built; a missing or malformed one is a
 * TlsConfigError naming the file. A key's contents never appear in an error.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { credentials, type ChannelCredentials } from "@grpc/grpc-js";

import { TlsConfigError } from "./errors.js";

/** The CLI's default principal. */
export const DEFAULT_USER = "root";

export interface TlsOptions {
  /** PEM CA bundle the servers' certificates must chain to. */
  readonly caFile: string;
  /** This principal's PEM certificate (with `keyFile`, or neither). */
  readonly certFile?: string;
  readonly keyFile?: string;
  /** Verify servers against this name instead of each endpoint's host (rarely needed). */
  readonly serverName?: string;
}

/** The CLI's layout: `DIR/ca.crt`, `DIR/client.USER.crt`, `DIR/client.USER.key`. */
export function tlsFromCertsDir(certsDir: string, user: string = DEFAULT_USER): TlsOptions {
  return {
    caFile: join(certsDir, "ca.crt"),
    certFile: join(certsDir, `client.${user}.crt`),
    keyFile: join(certsDir, `client.${user}.key`),
  };
}

function readPem(path: string, kind: string): Buffer {
  let data: Buffer;
  try {
    data = readFileSync(path);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    throw new TlsConfigError(path, code === "ENOENT" ? "missing (no such file)" : `cannot be read (${code})`);
  }
  // "PRIVATE KEY" also matches "EC PRIVATE KEY" and "RSA PRIVATE KEY" headers.
  if (!data.includes("-----BEGIN ") || !data.includes(kind)) {
    throw new TlsConfigError(path, `not a PEM file with a ${kind} block`);
  }
  return data;
}

/** Reads the files and builds the channel credentials. */
export function channelCredentials(tls: TlsOptions): ChannelCredentials {
  if ((tls.certFile === undefined) !== (tls.keyFile === undefined)) {
    throw new TlsConfigError(
      tls.certFile ?? tls.keyFile ?? "",
      "a client certificate needs its key and a key its certificate (give both or neither)",
    );
  }
  const ca = readPem(tls.caFile, "CERTIFICATE");
  const cert = tls.certFile !== undefined ? readPem(tls.certFile, "CERTIFICATE") : null;
  const key = tls.keyFile !== undefined ? readPem(tls.keyFile, "PRIVATE KEY") : null;
  return credentials.createSsl(ca, key, cert);
}

/** Channel options that TLS adds (a server name override). */
export function tlsChannelOptions(tls: TlsOptions): Record<string, string> {
  return tls.serverName
    ? { "grpc.ssl_target_name_override": tls.serverName, "grpc.default_authority": tls.serverName }
    : {};
}
