//! Principals: one principal never changes another's lease
//! (docs/security.md "Leases have owners", etcd PR 8031).

use warden_client::{AcquireOptions, ClientError};

use super::client::{client_ctx, connect_at, sleep_until};
use super::shape::{ms, Def, Scenario, Setup, LAN};
use crate::env::global_now;
use crate::faults::Script;
use crate::world::{lock, sleep, ClientCtx};

/// OWNERS, etcd PR 8031 (anyone who learned a lease id could revoke the
/// lease): `bob` reads the holder of `alice`'s lock from a status call and
/// tries to renew her lease, hang a grant on it, release her grant and
/// revoke her lease. Each must be refused; the clients make the attempt
/// themselves, so no scripted faults.
pub(super) const FOREIGN_LEASE: Def = Def {
    scenario: Scenario::ForeignLease,
    name: "foreign-lease",
    fault_secs: 2,
    faults: Script::None,
    spawn: foreign_lease,
    cluster: LAN,
};

/// The clients of [`FOREIGN_LEASE`]: `alice` holds r0 from 1 s to 5 s,
/// renewing every 500 ms; from 2 s `bob` reads her lease id and token
/// (`status`) and sends, as principal bob, a renew of her lease, an acquire
/// of r1 on it, a release of her grant and a revoke of her lease. If bob
/// never sees her grant the attack did not run: a finding (L3), so that the
/// scenario cannot pass without trying; so is an attempt that the cluster
/// answers with anything but success or `NotFound` (another principal's
/// lease answers as one that does not exist, docs/security.md "Leases have
/// owners"; anything else was not decided). A success is left to the OWNERS checker (an acknowledged
/// renew is recorded for it, as every client's is).
fn foreign_lease(sim: &mut turmoil::Sim<'_>, s: &mut Setup<'_>) {
    let alice = client_ctx(&s.world, "alice", 73, 1_500);
    let bob = client_ctx(&s.world, "bob", 79, -1_500);
    let endpoints = s.endpoints.clone();
    let roles = s.world.roles.clone();
    sim.client("alice", async move {
        let client = connect_at(&roles, ms(1_000), endpoints, crate::env::client_options()).await?;
        let opts = AcquireOptions::with_ttl(ms(3_000));
        if let Some((lease, token, _, _)) = alice.acquire(&client, "r0", opts).await {
            alice
                .renew_every(&client, "r0", (lease, token), ms(500), ms(5_000))
                .await;
            alice.release(&client, "r0", lease, token).await;
        }
        Ok(())
    });
    let endpoints = s.endpoints.clone();
    let roles = s.world.roles.clone();
    sim.client("bob", async move {
        let client = connect_at(&roles, ms(1_000), endpoints, crate::env::client_options()).await?;
        sleep_until(ms(2_000)).await;
        let mut seen = None;
        while seen.is_none() && global_now() < ms(4_000) {
            match client.status("r0").await {
                Ok(st) => seen = st.holder.map(|h| (h.lease_id, h.fencing_token)),
                Err(_) => sleep(ms(100)).await,
            }
        }
        let Some((lease, token)) = seen else {
            bob.violation(
                "L3",
                "foreign-lease: bob never saw alice's grant on r0 (the attack did not run)".into(),
            );
            return Ok(());
        };
        match client.renew(lease).await {
            Ok(_) => {
                lock(&bob.history)
                    .acked_renews
                    .push((bob.principal.clone(), lease, global_now()))
            }
            Err(e) => expect_denied(&bob, "renew of", &e),
        }
        let on_her_lease = AcquireOptions {
            lease_id: Some(lease),
            ..AcquireOptions::with_ttl(ms(3_000))
        };
        if let Err(e) = client.acquire("r1", on_her_lease).await {
            expect_denied(&bob, "acquire on", &e);
        }
        if let Err(e) = client.release(lease, Some("r0".into()), Some(token)).await {
            expect_denied(&bob, "release of", &e);
        }
        if let Err(e) = client.revoke(lease).await {
            expect_denied(&bob, "revoke of", &e);
        }
        Ok(())
    });
}

/// `e`, the answer to `bob`'s `what` alice's lease, must be the refusal: the
/// answer to a lease that does not exist.
fn expect_denied(bob: &ClientCtx, what: &str, e: &ClientError) {
    if !matches!(e, ClientError::NotFound { .. }) {
        bob.violation(
            "L3",
            format!("foreign-lease: bob's {what} alice's lease was not decided: {e}"),
        );
    }
}
