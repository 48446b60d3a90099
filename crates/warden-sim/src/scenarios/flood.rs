//! One principal floods every consumable while others work (docs/security.md
//! "Quotas and limits", "Refused before the log").

use std::time::Duration;

use warden_client::{election_key, AcquireOptions, AcquireResult, Client, ClientError, Quota};

use super::client::{client_ctx, connect_at, waiting};
use super::shape::{ms, Def, Scenario, Setup, LAN};
use crate::env::global_now;
use crate::faults::Script;
use crate::world::{sleep, ClientCtx};

/// QUOTAS (the public floods: one principal once filled the table's
/// election values, a resource's queue, the lease table and the outcome
/// records, and refused writes filled the log): `mallory` floods each
/// consumable in turn until the cluster refuses her with
/// ResourceExhausted, while `alice` acquires, renews and proclaims and
/// `carol` queues on the resource mallory floods. Each of alice's and
/// carol's calls must succeed (carol's wait is queued: it times out, never
/// refused), and each of mallory's floods must reach its refusal (else the
/// attack did not run). No scripted faults: the clients make the attack.
pub(super) const FLOOD: Def = Def {
    scenario: Scenario::Flood,
    name: "flood",
    fault_secs: 6,
    faults: Script::None,
    spawn: flood,
    cluster: LAN,
};

/// Mallory's role's quota: small, so the floods reach it within seconds.
const FLOOD_QUOTA: Quota = Quota {
    leases: 40,
    locks: 80,
    waiters: 40,
    clients: 16,
    values: 10,
    value_bytes: 4_096,
    waits_per_resource: 5,
    watches: 10,
};

/// The role `ops` (acting as root) gives mallory, with [`FLOOD_QUOTA`].
const FLOOD_ROLE: &str = "flooder";

fn flood(sim: &mut turmoil::Sim<'_>, s: &mut Setup<'_>) {
    let alice = client_ctx(&s.world, "alice", 91, 800);
    let carol = client_ctx(&s.world, "carol", 97, -800);
    let mallory = client_ctx(&s.world, "mallory", 101, 0);
    s.world.act_as("ops", warden_core::auth::ROOT);
    let (endpoints, roles) = (s.endpoints.clone(), s.world.roles.clone());
    let ops_history = mallory.history.clone();
    sim.client("ops", async move {
        let client = connect_at(&roles, ms(500), endpoints, crate::env::client_options()).await?;
        let admin = client.admin();
        let done = admin
            .grant_permission(FLOOD_ROLE, "", warden_client::Permission::Lock)
            .await
            .and(admin.set_role_quota(FLOOD_ROLE, Some(FLOOD_QUOTA)).await)
            .and(admin.grant_role("mallory", FLOOD_ROLE).await);
        if let Err(e) = done {
            crate::world::lock(&ops_history).violation(
                "L3",
                format!("flood: ops could not set mallory's quota: {e}"),
            );
        }
        Ok(())
    });
    let (endpoints, roles) = (s.endpoints.clone(), s.world.roles.clone());
    sim.client("mallory", async move {
        let client = connect_at(
            &roles,
            ms(1_000),
            endpoints.clone(),
            crate::env::client_options(),
        )
        .await?;
        flood_all(&mallory, &client, &endpoints).await;
        Ok(())
    });
    let (endpoints, roles) = (s.endpoints.clone(), s.world.roles.clone());
    sim.client("alice", async move {
        let client = connect_at(&roles, ms(1_500), endpoints, crate::env::client_options()).await?;
        alice_works(&alice, &client).await;
        Ok(())
    });
    let (endpoints, roles) = (s.endpoints.clone(), s.world.roles.clone());
    sim.client("carol", async move {
        let client = connect_at(&roles, ms(1_500), endpoints, crate::env::client_options()).await?;
        carol_queues(&carol, &client).await;
        Ok(())
    });
}

/// Whether `r` is the cluster's refusal of one more of `quota`.
fn exhausted<T>(r: &Result<T, ClientError>, quota: &str) -> bool {
    matches!(r, Err(ClientError::ResourceExhausted { message }) if message.contains(quota))
}

/// Mallory's floods, one consumable at a time, each until refused at its
/// quota (at most `LIMIT` calls: reaching it is a finding). Values first
/// (one lease), then waits (a lease each), client ids (a lease each),
/// then leases, so that each meets its own quota before the lease quota.
async fn flood_all(mallory: &ClientCtx, client: &Client, endpoints: &[String]) {
    const LIMIT: usize = 200;
    sleep(ms(500)).await; // ops has set her quota by now
    let mut refused = Vec::new();
    // Values, candidates on one election after another, on one lease.
    let lease = client.lease_grant(ms(30_000)).await.map(|l| l.lease_id);
    let mut n = 0;
    if let Ok(lease) = lease {
        while n < LIMIT {
            let key = election_key(&format!("m-{n}"));
            let r = client.proclaim(key, lease, 0, "v".repeat(256)).await;
            if exhausted(&r, "quota value") {
                break;
            }
            n += 1;
        }
    }
    refused.push(("values", n < LIMIT));
    // Waits on `q`, which she holds; each on a new lease, left queued.
    let held = client
        .acquire("q", AcquireOptions::with_ttl(ms(30_000)))
        .await;
    let mut n = 0;
    while matches!(held, Ok(AcquireResult::Granted { .. })) && n < LIMIT {
        let waits = client.clone();
        let wait =
            tokio::spawn(async move { waits.acquire("q", waiting(ms(30_000), ms(20_000))).await });
        sleep(ms(50)).await;
        if wait.is_finished() {
            if let Ok(r) = wait.await {
                if exhausted(&r, "quota waits_per_resource") {
                    break;
                }
            }
        }
        n += 1;
    }
    refused.push(("waits on q", n < LIMIT));
    // New client ids: one acquire each, until her `clients` quota.
    let mut n = 0;
    while n < LIMIT {
        let Ok(fresh) = Client::connect(endpoints.to_vec(), crate::env::client_options()).await
        else {
            break;
        };
        let r = fresh
            .acquire(&format!("c/{n}"), AcquireOptions::with_ttl(ms(30_000)))
            .await;
        if exhausted(&r, "quota clients") {
            break;
        }
        n += 1;
    }
    refused.push(("client ids", n < LIMIT));
    // Leases.
    let mut n = 0;
    while n < LIMIT && !exhausted(&client.lease_grant(ms(30_000)).await, "quota leases") {
        n += 1;
    }
    refused.push(("leases", n < LIMIT));
    for (what, reached) in refused {
        if !reached {
            mallory.violation(
                "L3",
                format!(
                    "flood: mallory's flood of {what} was never refused at its quota (the attack did not run)"
                ),
            );
        }
    }
}

/// Alice, from 1.5 s to 7 s: every 250 ms a try-acquire and release of her
/// own resource, a renew of her session and a proclaim of her value. Each
/// must succeed.
async fn alice_works(alice: &ClientCtx, client: &Client) {
    let session = match client.lease_grant(ms(10_000)).await {
        Ok(l) => l.lease_id,
        Err(e) => return alice.violation("QUOTAS", format!("flood: alice's lease: {e}")),
    };
    let mut i = 0u64;
    while global_now() < Duration::from_secs(7) {
        let resource = format!("a/{i}");
        match client
            .acquire(&resource, AcquireOptions::with_ttl(ms(5_000)))
            .await
        {
            Ok(AcquireResult::Granted {
                lease_id,
                fencing_token,
                ..
            }) => {
                if let Err(e) = client
                    .release(lease_id, Some(resource.clone()), Some(fencing_token))
                    .await
                {
                    alice.violation(
                        "QUOTAS",
                        format!("flood: alice's release of {resource}: {e}"),
                    );
                }
            }
            other => alice.violation(
                "QUOTAS",
                format!("flood: alice's acquire of {resource}: {other:?}"),
            ),
        }
        if let Err(e) = client.renew(session).await {
            alice.violation("QUOTAS", format!("flood: alice's renew: {e}"));
        }
        let key = election_key("a-leader");
        if let Err(e) = client.proclaim(key, session, 0, format!("alice {i}")).await {
            alice.violation("QUOTAS", format!("flood: alice's proclaim: {e}"));
        }
        i += 1;
        sleep(ms(250)).await;
    }
}

/// Carol, from 4 s (after mallory's queue flood): waits 500 ms on `q`,
/// which mallory holds. She must be queued and time out, never refused.
async fn carol_queues(carol: &ClientCtx, client: &Client) {
    sleep(Duration::from_secs(4).saturating_sub(global_now())).await;
    for _ in 0..3 {
        match client.acquire("q", waiting(ms(5_000), ms(500))).await {
            Ok(AcquireResult::NotGranted { .. }) | Ok(AcquireResult::Granted { .. }) => {}
            other => carol.violation("QUOTAS", format!("flood: carol's wait on q: {other:?}")),
        }
    }
}
