/**
 * The gRPC stubs, from the server's protos loaded at run time with
 * `@grpc/proto-loader` (the protos ship in this package's `proto/` folder,
 * byte-for-byte copies of crates/warden-proto/proto; `src/generated/` holds
 * their TypeScript types, both checked by `npm run gen:check`).
 *
 * Loading options (also the generator's): 64-bit integers as JS numbers
 * (every id and token Warden issues stays below 2^53, docs/semantics.md
 * "Words", so they are exact), enums as their names, defaults for absent
 * fields, and a virtual field naming each set oneof.
 */
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";
import protobuf from "protobufjs";

import type { ProtoGrpcType as AdminProto } from "./generated/admin.js";
import type { ProtoGrpcType as LeaseProto } from "./generated/lease.js";
import type { ProtoGrpcType as WardenProto } from "./generated/warden.js";
import type { ProtoGrpcType as WatchProto } from "./generated/watch.js";
import type { LockClient } from "./generated/warden/v1/Lock.js";
import type { LeaseClient } from "./generated/warden/v1/Lease.js";
import type { WatchClient } from "./generated/warden/v1/Watch.js";
import type { AdminClient } from "./generated/warden/v1/Admin.js";

export type { LockClient, LeaseClient, WatchClient, AdminClient };

/** The folder holding `warden/*.proto` and `rpc/details.proto`: beside `dist/` (or, for the tests, `build/src/`). */
export const PROTO_DIR = ["../proto/", "../../proto/"]
  .map((p) => fileURLToPath(new URL(p, import.meta.url)))
  .find((dir) => existsSync(`${dir}rpc/details.proto`)) ?? fileURLToPath(new URL("../proto/", import.meta.url));

export const LOADER_OPTIONS: protoLoader.Options = {
  keepCase: false,
  longs: Number,
  enums: String,
  defaults: true,
  oneofs: true,
  includeDirs: [`${PROTO_DIR}warden`],
};

type Loaded = WardenProto & LeaseProto & WatchProto & AdminProto;

let loaded: Loaded["warden"]["v1"] | undefined;

/** The service constructors of `warden.v1` (loaded once). */
export function services(): Loaded["warden"]["v1"] {
  if (loaded === undefined) {
    const definition = protoLoader.loadSync(
      ["warden.proto", "lease.proto", "watch.proto", "admin.proto"],
      LOADER_OPTIONS,
    );
    loaded = (grpc.loadPackageDefinition(definition) as unknown as Loaded).warden.v1;
  }
  return loaded;
}

/** One node's stubs, sharing one channel. */
export interface NodeStubs {
  readonly address: string;
  readonly lock: LockClient;
  readonly lease: LeaseClient;
  readonly watch: WatchClient;
  readonly admin: AdminClient;
  close(): void;
}

export function nodeStubs(
  address: string,
  credentials: grpc.ChannelCredentials,
  options: grpc.ChannelOptions,
): NodeStubs {
  const s = services();
  const lock = new s.Lock(address, credentials, options);
  const shared = { ...options, channelOverride: lock.getChannel() };
  return {
    address,
    lock,
    lease: new s.Lease(address, credentials, shared),
    watch: new s.Watch(address, credentials, shared),
    admin: new s.Admin(address, credentials, shared),
    close: () => lock.close(),
  };
}

let rpcTypes: { status: protobuf.Type; errorInfo: protobuf.Type; badRequest: protobuf.Type } | undefined;

/** google.rpc.Status, ErrorInfo and BadRequest decoders (proto/rpc/details.proto). */
export function rpcDetailTypes(): NonNullable<typeof rpcTypes> {
  if (rpcTypes === undefined) {
    const root = protobuf.loadSync(`${PROTO_DIR}rpc/details.proto`);
    rpcTypes = {
      status: root.lookupType("google.rpc.Status"),
      errorInfo: root.lookupType("google.rpc.ErrorInfo"),
      badRequest: root.lookupType("google.rpc.BadRequest"),
    };
  }
  return rpcTypes;
}
