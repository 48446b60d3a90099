//! Expiry by time passing on a running node (docs/semantics.md "Time"):
//! the leader's ticks end what is due in cluster time, and only then; an
//! idle table gets no ticks; a due hand-off skips an ended waiter (S8);
//! idle clients' records are dropped (S7). On tokio's paused clock, which
//! is the test node's clock: time passes only as the test sleeps, and
//! jumps ahead while the runtime waits for the log writer's thread.

use std::time::Duration;

use tokio::time::Instant;
use warden_core::types::{
    Acquire, AcquireOutcome, AcquireReply, Command, LeaseGrant, LeaseSpec, LogEntry, Permission,
};

use super::idle_clients::CLIENT_IDLE_TIMEOUT_MS;
use super::submit::LeaseGranted;
use super::test_node::{header, named, Setup, TestNode};
use super::{Principal, SubmitError};

/// A lease grant by `principal`'s `client`, sent again with the same
/// request id (exactly once, S7) while its outcome is unknown: on paused
/// time the clock jumps ahead while the log writer's thread runs, so a
/// commit can pass its timeout without any fault.
async fn lease(
    t: &TestNode,
    principal: &Principal,
    client: u64,
    request_id: u64,
    ttl_ms: u64,
) -> u64 {
    let mut tries = 0;
    loop {
        let sent = t
            .node
            .submit::<LeaseGranted>(
                principal,
                Command::LeaseGrant(LeaseGrant {
                    header: header(client, request_id),
                    ttl_ms,
                }),
            )
            .await;
        match sent {
            Ok(granted) => return granted.lease_id,
            Err(e) if tries < 5 && retried(&e) => {
                tries += 1;
                eprintln!("lease grant not answered ({e:?}); sent again");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Err(e) => panic!("lease grant: {e:?}"),
        }
    }
}

/// Whether a submit that failed with `e` is sent again (same request id):
/// its outcome is unknown, or it was not proposed (a commit or the
/// leadership can time out on paused time while the log writer's thread
/// runs, without any fault).
fn retried(e: &SubmitError) -> bool {
    matches!(
        e,
        SubmitError::Unknown { .. }
            | SubmitError::NotProposed { .. }
            | SubmitError::NotLeader { .. }
    )
}

/// Sleeps (paused time) until `at`, or until `done` holds, checking every
/// 100 ms; whether `done` held.
async fn until(at: Instant, mut done: impl FnMut() -> bool) -> bool {
    while Instant::now() < at {
        if done() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    done()
}

/// How many of `entries` are ticks.
fn ticks(entries: &[LogEntry]) -> usize {
    entries
        .iter()
        .filter(|e| matches!(e.command, Command::Tick))
        .count()
}

// L1 and E ("E, term by term"): a lease whose TTL passes with no client
// activity is ended by the leader's ticks: the first entry stamped at or
// after the lease's end in cluster time is a `Tick`, stamped within E of
// that end, and once it applied the lease is gone from the table. No
// entry stamped before the end ended it (S4).
#[tokio::test(start_paused = true)]
async fn an_unrenewed_lease_is_ended_by_the_leaders_tick_within_e() {
    let t = TestNode::start(Setup::default()).await;
    let e_ms = t.node.config.timing.bound_e_ms();
    // 30 s: far beyond a resent grant's commit (3 s timeouts), so the only
    // entries near the end are the leader's.
    let id = lease(&t, &None, 1, 1, 30_000).await;
    let (granted_at, end) = t.table(|m| {
        let l = m.lease(id).expect("granted");
        (m.now_ms(), m.lease_end_ms(l))
    });
    assert!(
        end >= granted_at + 30_000,
        "ends at {end}, granted at {granted_at}"
    );
    let gone = until(Instant::now() + Duration::from_secs(90), || {
        t.table(|m| m.lease(id).is_none())
    })
    .await;
    assert!(gone, "the lease outlived its TTL by 60 s");
    let entries = t.entries();
    let ender = entries
        .iter()
        .find(|e| e.stamp.at_ms >= end)
        .expect("an entry at or after the lease's end");
    assert_eq!(ender.command, Command::Tick, "{ender:?}");
    assert!(
        ender.stamp.at_ms - end <= e_ms,
        "ended at {} in cluster time, {} ms after its end {end} (E = {e_ms})",
        ender.stamp.at_ms,
        ender.stamp.at_ms - end
    );
    assert!(t.table(|m| m.now_ms()) >= end);
}

// "Sweeps" (an empty table needs no ticks): a node whose table holds
// nothing with an instant proposes no entry at all however long it leads;
// a lease brings ticks until it has ended, and then they stop again.
#[tokio::test(start_paused = true)]
async fn an_idle_table_gets_no_ticks() {
    let t = TestNode::start(Setup::default()).await;
    assert_eq!(t.table(|m| m.next_instant_ms()), None);
    let before = t.entries().len();
    tokio::time::sleep(Duration::from_secs(20)).await;
    let idle = t.entries();
    assert_eq!(
        idle.len(),
        before,
        "entries while idle: {:?}",
        &idle[before..]
    );
    assert_eq!(ticks(&idle), 0);

    let id = lease(&t, &None, 1, 1, 1_000).await;
    let gone = until(Instant::now() + Duration::from_secs(30), || {
        t.table(|m| m.lease(id).is_none())
    })
    .await;
    assert!(gone, "the lease was not ended");
    let after_lease = t.entries();
    assert_eq!(
        t.table(|m| m.next_instant_ms()),
        None,
        "nothing left to tick for"
    );
    tokio::time::sleep(Duration::from_secs(20)).await;
    let later = t.entries();
    assert_eq!(
        later.len(),
        after_lease.len(),
        "entries after the table emptied: {:?}",
        &later[after_lease.len()..]
    );
}

// "Sweeps" (ticks while the table holds something with an instant): a
// lease of 60 s that nobody renews or touches gets ticks while it lives,
// stamped at least IDLE_TICK_MS apart (not one a duty pass), so the applied
// `now` keeps up with the leader's clock. (Paused time jumps to the next
// timer while an entry's fsync runs on a blocking thread, so the test bounds
// the ticks' stamps, not how far the applied time lags at any one moment.)
#[tokio::test(start_paused = true)]
async fn a_table_with_an_instant_gets_an_entry_every_idle_tick() {
    let t = TestNode::start(Setup::default()).await;
    let id = lease(&t, &None, 1, 1, 60_000).await;
    let before = t.entries().len();
    tokio::time::sleep(Duration::from_secs(10)).await;
    let stamps: Vec<u64> = t.entries()[before..]
        .iter()
        .filter(|e| matches!(e.command, Command::Tick))
        .map(|e| e.stamp.at_ms)
        .collect();
    let idle_ms = super::duties::IDLE_TICK_MS;
    assert!(
        (3..=(10_000 / idle_ms + 1) as usize).contains(&stamps.len()),
        "{} ticks in 10 s: {stamps:?}",
        stamps.len()
    );
    for w in stamps.windows(2) {
        assert!(
            w[1] - w[0] >= idle_ms,
            "ticks closer than IDLE_TICK_MS: {stamps:?}"
        );
    }
    let leader = t.node.leader_id_if_leader().expect("leads");
    let clock = t.node.cluster_now_ms(leader).expect("a clock");
    let last = *stamps.last().expect("a tick");
    assert!(
        clock - last < 10_000 / 2,
        "the last tick at {last}, the clock at {clock}"
    );
    assert!(t.table(|m| m.lease(id).is_some()), "the lease is live");
}

/// An anonymous acquire of `resource` on a new lease (`client`, request
/// 1), waiting up to `wait_timeout_ms`; the lease id and whether it queued.
async fn acquire(
    t: &TestNode,
    client: u64,
    resource: &str,
    ttl_ms: u64,
    wait_timeout_ms: u64,
) -> (u64, bool) {
    let cmd = Command::Acquire(Acquire::mutex(
        header(client, 1),
        resource,
        LeaseSpec::New { ttl_ms },
        wait_timeout_ms,
        0,
    ));
    let mut tries = 0;
    // Sent again with the same request id while its outcome is unknown
    // (see `lease`).
    let reply: AcquireReply = loop {
        match t.node.submit(&None, cmd.clone()).await {
            Ok(reply) => break reply,
            Err(e) if tries < 5 && retried(&e) => {
                tries += 1;
                eprintln!("acquire not answered ({e:?}); sent again");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Err(e) => panic!("acquire: {e:?}"),
        }
    };
    match reply.outcome {
        AcquireOutcome::Granted { lease_id, .. } => (lease_id, false),
        AcquireOutcome::Queued { lease_id, .. } => (lease_id, true),
        other => panic!("{other:?}"),
    }
}

// S8: a holder whose lease ends while the waiter at the head of its queue
// has timed out hands the resource to the live waiter behind it, never to
// the timed-out one (whose caller was told it timed out), even when one
// tick finds both ended (a 5 s duty period: the holder's TTL, 3 s, and the
// head's wait, 2 s, both run out before the first tick after the set-up).
#[tokio::test(start_paused = true)]
async fn a_holder_due_with_its_timed_out_head_waiter_hands_off_to_the_live_one() {
    let t = TestNode::start(Setup {
        duty_interval_ms: Some(5_000),
        ..Setup::default()
    })
    .await;
    let (holder, queued) = acquire(&t, 11, "r", 3_000, 0).await;
    assert!(!queued);
    let (head, queued) = acquire(&t, 12, "r", 60_000, 2_000).await;
    assert!(queued);
    let (live, queued) = acquire(&t, 13, "r", 60_000, 3_600_000).await;
    assert!(queued);
    let handed = until(Instant::now() + Duration::from_secs(30), || {
        t.table(|m| m.holder("r").map(|h| h.lease_id)) == Some(live)
    })
    .await;
    assert!(
        handed,
        "the live waiter was not granted: holder {:?}",
        t.table(|m| m.holder("r").map(|h| h.lease_id))
    );
    let grants: Vec<u64> = t
        .grants()
        .into_iter()
        .filter(|(r, _)| r == "r")
        .map(|(_, l)| l)
        .collect();
    assert_eq!(
        grants,
        vec![holder, live],
        "the timed-out head was never granted"
    );
    assert!(
        t.table(|m| m.waiter_position("r", head).is_none()),
        "the head's wait ended"
    );
    assert!(
        t.table(|m| !m.lease_live(holder)),
        "the holder's lease ended"
    );
}

/// Whether alice's record of `client` is kept.
fn kept(t: &TestNode, client: u64) -> bool {
    t.table(|m| m.outcome_table().record_of(Some("alice"), client).is_some())
}

// S7 on a running node: the leader's duty loop drops a principal's
// outcome record that stood still for the idle timeout (through a
// `DropClients` entry), and keeps one that moved.
#[tokio::test(start_paused = true)]
async fn the_leader_drops_a_record_idle_for_the_timeout_and_keeps_one_that_moved() {
    let idle = Duration::from_millis(CLIENT_IDLE_TIMEOUT_MS);
    let t = TestNode::start(Setup::default()).await;
    t.grant("alice", "", Permission::Lock).await;
    let alice = named("alice");
    lease(&t, &alice, 5, 1, 60_000).await;
    lease(&t, &alice, 6, 1, 60_000).await;
    let t0 = Instant::now();
    assert!(kept(&t, 5) && kept(&t, 6));
    // Client 6 sends another request halfway: its record moves.
    tokio::time::sleep(idle / 2).await;
    lease(&t, &alice, 6, 2, 60_000).await;
    let moved = Instant::now();
    // Neither is dropped before the whole timeout.
    let early = until(t0 + idle - Duration::from_secs(1), || {
        !kept(&t, 5) || !kept(&t, 6)
    })
    .await;
    assert!(!early, "a record was dropped before the idle timeout");
    // Client 5's goes within a few seconds of it; client 6's stays.
    let dropped = until(t0 + idle + Duration::from_secs(15), || !kept(&t, 5)).await;
    assert!(dropped, "client 5's idle record was kept past the timeout");
    assert!(kept(&t, 6), "client 6's record moved at half the timeout");
    let dropped = until(moved + idle + Duration::from_secs(15), || !kept(&t, 6)).await;
    assert!(dropped, "client 6's record was kept past its own timeout");
    assert!(
        t.applied().iter().any(
            |c| matches!(c, Command::DropClients(d) if d.clients.iter().any(|(c, _)| *c == 5))
        ),
        "the drop went through a DropClients entry"
    );
}

// S8, seen from outside (the robustness suite's watch check: a grant the
// watchers saw whose waiting acquire was answered "wait timeout"): bob's
// wait is granted at alice's release, and bob's grant ends (his release)
// before his stream looks. The stream's step is still the grant with its
// token, never a timed-out wait, though the grant is gone from the table.
#[tokio::test]
async fn a_granted_wait_whose_grant_ended_before_its_stream_looked_is_still_granted() {
    let t = TestNode::start(Setup::default()).await;
    let (a, queued) = acquire(&t, 1, "r", 30_000, 0).await;
    assert!(!queued);
    let (b, queued) = acquire(&t, 2, "r", 30_000, 60_000).await;
    assert!(queued);
    let enqueue_index = t
        .table(|m| m.waiters("r").first().map(|w| w.enqueue_index))
        .expect("bob waits");
    let release = |client, n, lease_id| {
        Command::Release(warden_core::types::Release {
            header: header(client, n),
            resource: Some("r".into()),
            lease_id,
            fencing_token: None,
        })
    };
    t.node
        .submit::<super::submit::Released>(&None, release(1, 2, a))
        .await
        .expect("alice releases");
    let token = t
        .table(|m| m.holder("r").map(|h| (h.lease_id, h.fencing_token)))
        .filter(|(l, _)| *l == b)
        .map(|(_, tok)| tok)
        .expect("bob holds r");
    t.node
        .submit::<super::submit::Released>(&None, release(2, 2, b))
        .await
        .expect("bob releases");
    assert!(t.table(|m| m.holder("r").is_none()));
    match t.node.waiter_step("r", b, enqueue_index) {
        Some(crate::node::read::WaiterStep::Granted { fencing_token, .. }) => {
            assert_eq!(fencing_token, token)
        }
        other => panic!("bob's wait answered {other:?}, not its grant"),
    }
}
