import { Client, fencingHeaders, tlsFromCertsDir } from "@warden-locks/client";

/** Writes `value` to a fenced store under the lock "ledger", carrying the grant's token. */
export async function fencedWrite(endpoints: string, certsDir: string, storeUrl: string, value: string): Promise<number> {
  await using client = new Client(endpoints, { tls: tlsFromCertsDir(certsDir, "root") });
  return client.withLock("ledger", { ttlMs: 10_000 }, async (lock) => {
    lock.check(); // right before the write: throws unless the lock is certainly ours
    const response = await fetch(`${storeUrl}/kv/balance`, {
      method: "PUT",
      headers: fencingHeaders(lock), // warden-resource: ledger, warden-fencing-token: N
      body: value,
      signal: lock.signal, // aborted if the lock is lost meanwhile
    });
    if (!response.ok) throw new Error(`refused: ${response.status} ${await response.text()}`);
    return lock.fencingToken;
  });
}
