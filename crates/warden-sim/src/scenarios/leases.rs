//! Scenarios about renews and expiry: a lease must not end early (S4), a
//! client must not trust it too long (S5), and leader changes must not
//! lengthen it without bound (L2).

use warden_client::{AcquireOptions, ClientOptions};

use super::client::{
    client_ctx, connect_at, cut_off, leader_host, node_hosts, reconnect, sleep_until, spawn_waiter,
    Waiter,
};
use super::shape::{ms, Def, Scenario, Setup, LAN};
use crate::faults::{Aim, Gap, Script};
use crate::world::{lock, sleep};

/// L2, etcd issue 9395 (leases restarted with the full TTL at every
/// election never expire): the leader is isolated for 1.2 s, 0.9 s apart,
/// for the whole fault phase, while a holder renews twice and walks away.
pub(super) const REPEATED_ELECTIONS: Def = Def {
    scenario: Scenario::RepeatedElections,
    name: "repeated-elections",
    fault_secs: 10,
    faults: Script::Scripted {
        aim: Aim::IsolateLeader,
        after: ms(0),
        len: ms(1_200),
        gap: Gap::Fixed(ms(900)),
    },
    spawn: repeated_elections,
    cluster: LAN,
};

/// The holder of [`REPEATED_ELECTIONS`]: its lease must be gone by
/// r + TTL + E (+ leaderless time), not restarted at every election.
fn repeated_elections(sim: &mut turmoil::Sim<'_>, s: &mut Setup<'_>) {
    let a = client_ctx(&s.world, "a", 5, 3_000);
    let (endpoints, end) = (s.endpoints.clone(), s.fault_end);
    let roles = s.world.roles.clone();
    sim.client("a", async move {
        let client = connect_at(&roles, ms(1_000), endpoints, crate::env::client_options()).await?;
        let opts = AcquireOptions::with_ttl(ms(3_000));
        if let Some((lease, token, _, _)) = a.acquire(&client, "r0", opts).await {
            sleep(ms(500)).await;
            a.renew(&client, "r0", lease, token).await;
            sleep(ms(1_000)).await;
            a.renew(&client, "r0", lease, token).await;
        }
        sleep_until(end + ms(4_000)).await;
        Ok(())
    });
}

/// S4 and L4, etcd issue 15247 (a stalled ex-leader's lease revocations
/// went through the forwarding path; here a stalled leader's stamps are
/// ignored by apply, docs/semantics.md "Time"): the leader stalls for 6 s,
/// every message to and from it held, once.
pub(super) const STALLED_LEADER_EXPIRY: Def = Def {
    scenario: Scenario::StalledLeaderExpiry,
    name: "stalled-leader-expiry",
    fault_secs: 4,
    faults: Script::Scripted {
        aim: Aim::PauseLeader,
        after: ms(0),
        len: ms(6_000),
        gap: Gap::Never,
    },
    spawn: stalled_leader_expiry,
    cluster: LAN,
};

/// The holder of [`STALLED_LEADER_EXPIRY`] keeps renewing, retrying
/// through the election onto the new leader: its lease must not end early
/// (S4), nor end at all for want of a leader while it retries (L4: the new
/// leader's promote keeps it live for G).
fn stalled_leader_expiry(sim: &mut turmoil::Sim<'_>, s: &mut Setup<'_>) {
    let a = client_ctx(&s.world, "a", 13, -4_000);
    let history = s.world.history.clone();
    let (endpoints, end) = (s.endpoints.clone(), s.fault_end);
    let roles = s.world.roles.clone();
    sim.client("a", async move {
        let client = connect_at(&roles, ms(1_000), endpoints, crate::env::client_options()).await?;
        let opts = AcquireOptions::with_ttl(ms(2_000));
        if let Some((lease, token, _, _)) = a.acquire(&client, "r0", opts).await {
            a.renew_every(&client, "r0", (lease, token), ms(300), ms(9_000))
                .await;
            let ended = lock(&history).lease_end.get(&lease).copied();
            if let Some((reason, at)) = ended {
                a.violation(
                    "L4",
                    format!("stalled-leader-expiry: lease {lease}, renewed every 300 ms through the stall, ended ({reason:?}) at {at:?}"),
                );
            }
            a.release(&client, "r0", lease, token).await;
        }
        sleep_until(end).await;
        Ok(())
    });
}

/// S5, Kleppmann "How to do distributed locking" (validity counted from
/// the reply instead of the request): every link between client `a` and
/// the nodes has 700 ms each way for the whole fault phase.
pub(super) const SLOW_RENEW_ACK: Def = Def {
    scenario: Scenario::SlowRenewAck,
    name: "slow-renew-ack",
    fault_secs: 3,
    faults: Script::Scripted {
        aim: Aim::ClientLatency("a", 700),
        after: ms(0),
        len: ms(30_000),
        gap: Gap::Drawn,
    },
    spawn: slow_renew_ack,
    cluster: LAN,
};

/// The clients of [`SLOW_RENEW_ACK`]: `a`'s renew takes 1.4 s to be
/// answered; `a` then walks away and the waiter `b` gets the lock at
/// expiry. `valid_until` counted from the send ends before that grant;
/// counted from the receipt it does not.
fn slow_renew_ack(sim: &mut turmoil::Sim<'_>, s: &mut Setup<'_>) {
    let a = client_ctx(&s.world, "a", 17, 0);
    let b = client_ctx(&s.world, "b", 19, 0);
    let (endpoints, end) = (s.endpoints.clone(), s.fault_end);
    let roles = s.world.roles.clone();
    sim.client("a", async move {
        let options = ClientOptions {
            attempt_timeout: ms(2_000),
            ..crate::env::client_options()
        };
        let client = connect_at(&roles, ms(1_000), endpoints, options).await?;
        let opts = AcquireOptions::with_ttl(ms(4_000));
        if let Some((lease, token, _, _)) = a.acquire(&client, "r0", opts).await {
            sleep_until(ms(3_500)).await;
            a.renew(&client, "r0", lease, token).await;
        }
        sleep_until(end).await;
        Ok(())
    });
    let waiter = Waiter {
        at: ms(4_000),
        ttl: ms(4_000),
        wait: ms(10_000),
        fenced_write: false,
    };
    spawn_waiter(sim, b, s.endpoints.clone(), waiter);
}

/// S4/S5, etcd issue 15247 ("the old leader still handles lease keep alive
/// requests") and etcd PR 7029: the holder's client cuts the leader off from
/// the other nodes itself (not from the clients), so no scripted faults.
pub(super) const DEPOSED_LEADER_RENEW: Def = Def {
    scenario: Scenario::DeposedLeaderRenew,
    name: "deposed-leader-renew",
    fault_secs: 3,
    faults: Script::None,
    spawn: deposed_leader_renew,
    cluster: LAN,
};

/// The clients of [`DEPOSED_LEADER_RENEW`]: the leader is cut off from the
/// other nodes while holder `a` keeps renewing; renews sent to it must fail
/// over to the new leader, not be acknowledged by the deposed one. The
/// waiter `b` gets the lock only when `a` releases.
fn deposed_leader_renew(sim: &mut turmoil::Sim<'_>, s: &mut Setup<'_>) {
    let a = client_ctx(&s.world, "a", 43, 3_000);
    let b = client_ctx(&s.world, "b", 47, -3_000);
    let (endpoints, end) = (s.endpoints.clone(), s.fault_end);
    let hosts = node_hosts(&s.endpoints);
    let roles = s.world.roles.clone();
    sim.client("a", async move {
        let client = connect_at(&roles, ms(1_000), endpoints, crate::env::client_options()).await?;
        let opts = AcquireOptions::with_ttl(ms(3_000));
        let Some((lease, token, _, _)) = a.acquire(&client, "r0", opts).await else {
            return Ok(());
        };
        let leader = leader_host(&client).await;
        sleep_until(ms(2_000)).await;
        cut_off(&leader, &hosts);
        a.renew_every(&client, "r0", (lease, token), ms(500), ms(6_000))
            .await;
        reconnect(&leader, &hosts);
        a.release(&client, "r0", lease, token).await;
        sleep_until(end).await;
        Ok(())
    });
    let waiter = Waiter {
        at: ms(2_500),
        ttl: ms(3_000),
        wait: ms(10_000),
        fenced_write: true,
    };
    spawn_waiter(sim, b, s.endpoints.clone(), waiter);
}
