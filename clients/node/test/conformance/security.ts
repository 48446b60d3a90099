/**
 * Conformance C12-C13 (clients/conformance/scenarios.md): lease owners
 * (principals from client certificates, roles granted by root through the
 * CLI), and gRPC's health and reflection services over TLS without a client
 * certificate, called from Node.
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";

import { NotFoundError, WardenError } from "../../src/index.js";
import { PACKAGE_ROOT, sharedCluster, waitFor, within, type Cluster } from "../harness.js";

// conformance: C12-other-principal-lease-refused
test("C12-other-principal-lease-refused: bob's calls on alice's lease answer exactly as on a lease that does not exist", async () => {
  const cluster = await sharedCluster();
  cluster.cli(["role", "grant", "c12-locker", "--prefix", "c12-", "--permission", "lock"]);
  for (const p of ["alice", "bob"]) cluster.cli(["user", "grant-role", p, "c12-locker"]);
  await using alice = cluster.client(undefined, "alice");
  await using bob = cluster.client(undefined, "bob");
  const session = await alice.session({ ttlMs: 10_000 });
  const lock = await session.tryLock("c12-r");
  const [lease, token] = [session.leaseId, lock.fencingToken];
  const absent = lease + 1_000_000;
  const attempts: [string, (id: number) => Promise<unknown>][] = [
    ["release", (id) => bob.release(id, "c12-r", token)],
    ["renew", (id) => bob.renew(id)],
    ["keep-alive", (id) => bob.keepAliveOnce(id)],
    ["revoke", (id) => bob.revoke(id)],
    ["acquire", (id) => bob.acquire({ resource: "c12-r2", leaseId: id })],
  ];
  const answer = async (call: (id: number) => Promise<unknown>, id: number): Promise<string> => {
    try {
      return `ok ${JSON.stringify(await call(id))}`.replaceAll(String(id), "ID");
    } catch (e) {
      if (!(e instanceof WardenError)) throw e;
      return `${e.name} ${e.reason} ${e.message}`.replaceAll(String(id), "ID");
    }
  };
  for (const [what, call] of attempts) {
    const owned = await answer(call, lease);
    const none = await answer(call, absent);
    assert.equal(owned, none, `${what}: alice's lease answers ${owned}, none ${none}`);
    if (what === "release" || what === "acquire") assert.match(owned, /^(Lease)?NotFoundError /);
  }
  await assert.rejects(bob.release(lease, "c12-r", token), NotFoundError);
  const status = await alice.status("c12-r");
  assert.deepEqual([status.holder?.leaseId, status.holder?.fencingToken], [lease, token]);
  lock.check();
  await session.close();
});

interface ProbeStubs {
  health: grpc.Client & { Check(req: object, opts: grpc.CallOptions, cb: grpc.requestCallback<{ status: string }>): void };
  reflection: grpc.Client & { ServerReflectionInfo(): grpc.ClientDuplexStream<object, { listServicesResponse?: { service: { name: string }[] } }> };
}

function probeStubs(cluster: Cluster, address: string): ProbeStubs {
  const definition = protoLoader.loadSync(["health.proto", "reflection.proto"], {
    includeDirs: [join(PACKAGE_ROOT, "test", "protos")],
    enums: String,
    defaults: true,
    oneofs: true,
  });
  const loaded = grpc.loadPackageDefinition(definition) as unknown as {
    grpc: {
      health: { v1: { Health: new (a: string, c: grpc.ChannelCredentials) => ProbeStubs["health"] } };
      reflection: { v1: { ServerReflection: new (a: string, c: grpc.ChannelCredentials, o: object) => ProbeStubs["reflection"] } };
    };
  };
  // TLS trusting the cluster's CA, presenting no client certificate (what a health probe does).
  const creds = grpc.credentials.createSsl(readFileSync(join(cluster.clientCerts, "ca.crt")));
  const health = new loaded.grpc.health.v1.Health(address, creds);
  const reflection = new loaded.grpc.reflection.v1.ServerReflection(address, creds, { channelOverride: health.getChannel() });
  return { health, reflection };
}

function check(stubs: ProbeStubs): Promise<string> {
  return new Promise((res, rej) =>
    stubs.health.Check({ service: "" }, { deadline: Date.now() + 2000 }, (err, reply) => (err ? rej(err) : res(reply!.status))),
  );
}

function listServices(stubs: ProbeStubs): Promise<string[]> {
  return new Promise((res, rej) => {
    const call = stubs.reflection.ServerReflectionInfo();
    call.on("data", (reply) => {
      res((reply.listServicesResponse?.service ?? []).map((s: { name: string }) => s.name));
      call.cancel();
    });
    call.on("error", (e: grpc.ServiceError) => (e.code === grpc.status.CANCELLED ? undefined : rej(e)));
    call.write({ listServices: "" });
    call.end();
  });
}

// conformance: C13-grpc-health-and-reflection
test("C13-grpc-health-and-reflection: every node answers Health/Check SERVING once /readyz is ready, and reflection lists Warden's services, over TLS without a client certificate", async () => {
  const cluster = await sharedCluster();
  for (const [id, node] of cluster.nodes) {
    await waitFor(`node ${id}'s /readyz says ready`, async () => (await cluster.readyz(id)) === 200, 10_000);
    const stubs = probeStubs(cluster, node.addr);
    try {
      let last = "";
      await waitFor(
        `node ${id} answers SERVING`,
        async () => {
          last = await check(stubs).catch((e: grpc.ServiceError) => `error ${e.code}`);
          return last === "SERVING";
        },
        10_000,
      ).catch((e: Error) => {
        throw new Error(`${e.message}; last answer ${last}`);
      });
      const services = await within(5000, listServices(stubs), "the reflection answer");
      for (const s of ["warden.v1.Lock", "warden.v1.Lease", "warden.v1.Watch", "warden.v1.Admin"]) {
        assert.ok(services.includes(s), `node ${id} lists ${s}: ${services.join(", ")}`);
      }
    } finally {
      stubs.health.close();
    }
  }
});
