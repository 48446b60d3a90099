//! Leader duties: the first `Promote`, expiry of due leases and waiters,
//! lock-delay ends, max-hold ends and checkpoints (docs/semantics.md "Time",
//! "Max-hold").
//!
//! Max-hold duties (`EndMaxHold`, `CheckpointMaxHold`, log format 7) need
//! no gate of their own: they are proposed only for grants with a max-hold
//! in the table, and such a grant exists only once an `AcquireBounded`
//! applied, which the write path proposes only once every member reads
//! format 7.
//!
//! Every duty entry is proposed to the *local* Raft handle, never through a
//! forwarding path (etcd issue 15247), and carries this leader's id and each
//! lease's `last_index`, so apply ignores it if leadership or the lease moved
//! on meanwhile. No duty runs before this leader's own `Promote` has applied.
//!
//! Leader duties never carry a principal and never pass the permission layer
//! (`warden_core::auth`): expiry, checkpoints, promotion, lock-delay ends,
//! waiter cancels (in due lists) and idle-client drops go on whatever the
//! auth table says (etcd issues 13975 and 14616: leases stopped expiring
//! when authentication broke). Idle clients are tracked per outcome record,
//! `(principal, client id)`, a slice of the records each tick
//! ([`crate::node::idle_clients`]), so every principal's idle records
//! leave, not only those of unwrapped commands.

use std::sync::{Arc, Weak};
use std::time::Duration;

use futures::StreamExt;
use warden_core::deadline::CheckpointWalk;
use warden_core::limits::{
    MAX_CHECKPOINT_ITEMS_PER_ENTRY, MAX_DUE_PER_ENTRY, MAX_DUE_PER_SLOW_ENTRY,
};
use warden_core::types::{
    AdvanceClock, Command, DropClients, EndLockDelay, EndMaxHold, LeaderId, LeaseId, LogIndex,
    Promote, PromoteSlice,
};

use crate::node::idle_clients::{IdleClients, CLIENT_IDLE_TIMEOUT_MS};
use crate::node::{Node, SubmitError};
use crate::sim_hooks::Observer;

/// Most `Expire` entries one duty tick proposes back to back while due lists
/// come back full ([`MAX_DUE_PER_ENTRY`] each, or [`MAX_DUE_PER_SLOW_ENTRY`]):
/// 800 entries end at least 200,000 leases in a tick, twice the default cap
/// on live leases.
pub const MAX_EXPIRE_ENTRIES_PER_TICK: usize = 800;

/// How many leases, and waiters, an `Expire` entry names on a cluster whose
/// heartbeat is `heartbeat_ms`. Entries go one at a time, each after the last
/// has applied, so a storm ends at most one entry per commit round trip:
/// [`MAX_DUE_PER_ENTRY`] (250) with the `lan` heartbeat of 50 ms, so that a
/// client entry waits behind little apply, and proportionally more, up to
/// [`MAX_DUE_PER_SLOW_ENTRY`], with a longer one. The heartbeat must exceed
/// the peers' round trip (docs/operations.md, "Latency between nodes"), so
/// this keeps a storm at 5,000 leases a second or more on any link that
/// the heartbeat covers, as 1,000 an entry did before (docs/performance.md,
/// "Expire entries of 250"). The time the last `Expire` entries took is no
/// measure of the link: under a storm's load they take 40 ms on one machine.
pub fn expire_items(heartbeat_ms: u64) -> usize {
    let scaled =
        (MAX_DUE_PER_ENTRY as u64).saturating_mul(heartbeat_ms) / crate::config::LAN_HEARTBEAT_MS;
    usize::try_from(scaled)
        .unwrap_or(usize::MAX)
        .clamp(MAX_DUE_PER_ENTRY, MAX_DUE_PER_SLOW_ENTRY)
}

/// Most `Checkpoint` entries of one duty tick uncommitted at once. With
/// 100,000 expiring leases and a wait on each, a tick's slice is about 14
/// entries of [`MAX_CHECKPOINT_ITEMS_PER_ENTRY`] items (200,000 items a 750 ms pass, 15
/// ticks of 50 ms a pass); proposed together, a client entry
/// proposed meanwhile waits for all of them to commit and apply, a few at a
/// time for at most these (docs/performance.md, "Checkpoint entries a few
/// at a time").
pub const MAX_CHECKPOINT_ENTRIES_IN_FLIGHT: usize = 4;

/// A whole pass of the checkpoint walk takes this share of the checkpoint
/// interval (750 ms of the default 1 s), one slice per duty tick: every
/// lease, wait and lock-delay is looked at least once per interval even
/// when ticks run late (a late slice takes more, `Deadlines::checkpoint_slice`).
pub const CHECKPOINT_PASS_SHARE: f64 = 0.75;

/// Duty-clock advances per checkpoint interval (docs/semantics.md
/// "Checkpoints"): what a loading node derives is at most about three
/// advance periods longer than the truth (the age of the last advance, and
/// up to two periods from an entry to the second advance after it); an
/// advance goes out up to a duty tick (50 ms) and a commit after its time,
/// so four an interval keep three periods within one interval, the
/// checkpoint term of E.
pub const CLOCK_ADVANCES_PER_INTERVAL: u32 = 4;

/// How many milliseconds the next duty-clock advance may claim at `now`
/// (this node's clock): since this leader's own measurement for the last
/// advance, when the table's last advance (`table_last`, its log index) is
/// that one (`own`); else since this node's stamp of the table's last
/// advance (`applied_here`: when it reached this node's log, which is after
/// its proposer measured it); 0 for the first advance ever or when neither
/// is known. Never more than passed since the last advance was measured,
/// so the clock never runs ahead of real time (S4).
pub fn advance_elapsed_ms(
    table_last: Option<u64>,
    own: Option<(u64, Duration)>,
    applied_here: Option<(u64, Duration)>,
    now: Duration,
) -> u64 {
    let Some(last) = table_last else { return 0 };
    let since = match (own, applied_here) {
        (Some((i, measured)), _) if i == last => measured,
        (_, Some((i, stamp))) if i == last => stamp,
        _ => return 0,
    };
    u64::try_from(now.saturating_sub(since).as_millis()).unwrap_or(u64::MAX)
}

/// Proposes `cmds` in order with at most `in_flight` (at least 1) of them
/// proposed and not yet answered at once; their results, in order.
async fn few_at_a_time<T, F, Fut>(
    cmds: impl IntoIterator<Item = Command>,
    in_flight: usize,
    propose: F,
) -> Vec<T>
where
    F: FnMut(Command) -> Fut,
    Fut: std::future::Future<Output = T>,
{
    futures::stream::iter(cmds)
        .map(propose)
        .buffered(in_flight.max(1))
        .collect()
        .await
}

/// Promotes this leader (docs/semantics.md "A new leader") and returns how
/// many entries that took. While some member reads no log format 9, one
/// `Promote` over every lease, as before. Else `PromoteSlice` entries of at
/// most `promote_slice_leases` leases each (the config's;
/// [`warden_core::limits::MAX_LEASES_PER_PROMOTE_ENTRY`] outside tests):
/// the first alone, cut at this leader's table as it is (the others name its
/// index); then, with every earlier entry applied, the rest cut at the whole
/// table and proposed all at once, in order, the last (no end) ending the
/// promotion. All at once, so that the promotion takes about three commit
/// round trips and the slices' apply, well within the grace, which is what
/// keeps E (docs/semantics.md "E, term by term"); each entry still holds
/// apply for only a slice's worth.
///
/// # Errors
/// The first failure; the promotion starts again at the next tick (a lease
/// graced already is not graced again before a renew, L2).
async fn promote(node: &Node, leader: LeaderId, grace_ms: u64) -> Result<usize, SubmitError> {
    if !node.formats.may_promote_in_slices() {
        node.propose_duty(Command::Promote(Promote { leader, grace_ms }))
            .await?;
        return Ok(1);
    }
    let every = node.config().promote_slice_leases;
    let machine = || {
        node.shared
            .machine
            .lock()
            .map_err(|_| SubmitError::NotProposed {
                reason: "state poisoned".into(),
            })
    };
    let slice = |started_at: LogIndex, from_lease: LeaseId, to_lease: Option<LeaseId>| {
        Command::PromoteSlice(PromoteSlice {
            leader,
            grace_ms,
            started_at,
            from_lease,
            to_lease,
        })
    };
    let first_to = machine()?.table.lease_id_bounds(0, every).next();
    let (_, first) = node.propose_duty(slice(0, 0, first_to)).await?;
    let Some(second_from) = first_to else {
        return Ok(1);
    };
    // Every entry before the first slice has applied here now: the rest
    // are cut from the whole table.
    let started_at = first.index;
    let cuts: Vec<LeaseId> = machine()?
        .table
        .lease_id_bounds(second_from, every)
        .collect();
    let froms = std::iter::once(second_from).chain(cuts.iter().copied());
    let tos = cuts.iter().copied().map(Some).chain(std::iter::once(None));
    let rest: Vec<Command> = froms
        .zip(tos)
        .map(|(from, to)| slice(started_at, from, to))
        .collect();
    let entries = rest.len();
    let proposed = few_at_a_time(rest, entries, |cmd| node.propose_duty(cmd)).await;
    for p in proposed {
        p?;
    }
    Ok(1 + entries)
}

/// Runs the duty loop until the node is gone.
pub async fn run(node: Weak<Node>) {
    let (tick, checkpoint_every, grace_ms) = match node.upgrade() {
        Some(n) => (
            Duration::from_millis(n.config.timing.duty_interval_ms.max(1)),
            Duration::from_millis(n.config.timing.checkpoint_interval_ms.max(1)),
            n.config.timing.promotion_grace_ms,
        ),
        None => return,
    };
    let mut interval = tokio::time::interval(tick);
    interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut last_checkpoint = None;
    // The lease/wait/lock-delay checkpoint walks in slices, one per tick,
    // a whole pass every CHECKPOINT_PASS_SHARE of the interval
    // (`Deadlines::checkpoint_slice`).
    let checkpoint_pass = checkpoint_every.mul_f64(CHECKPOINT_PASS_SHARE);
    let mut walk = CheckpointWalk::default();
    let mut last_slice: Option<Duration> = None;
    // Once every member reads log format 8 the checkpoint walk gives way to
    // the duty clock: an advance every quarter of the interval, each measured
    // after the last one applied; `own_advance` is this leader's last one
    // (its log index, when it was measured).
    let advance_every = checkpoint_every / CLOCK_ADVANCES_PER_INTERVAL;
    let mut own_advance: Option<(u64, Duration)> = None;
    let mut next_advance: Option<Duration> = None;
    // An advance whose commit timed out may still commit later: the next
    // one names the advance it counts from (`after_index`), and apply
    // ignores it if that is no longer the clock's last.
    // Node-local, never replicated: a new leader starts afresh, so a client
    // is dropped no earlier than the idle timeout after its last request.
    let mut idle_clients = IdleClients::default();
    let idle_timeout = Duration::from_millis(CLIENT_IDLE_TIMEOUT_MS);
    loop {
        interval.tick().await;
        let Some(node) = node.upgrade() else { return };
        let Some(leader) = node.leader_id_if_leader() else {
            node.set_promoted(None);
            last_checkpoint = None;
            walk = CheckpointWalk::default();
            last_slice = None;
            own_advance = None;
            next_advance = None;
            idle_clients.clear();
            continue;
        };
        // 1. Promote, once per term of office and per process: a node
        // restarted while its vote still names it leader resumes that term
        // without an election, and must grace leases again (L4) rather than
        // trust a Promote applied before it went down.
        let promoted = node
            .promoted
            .lock()
            .map(|p| *p == Some(leader))
            .unwrap_or(false);
        if !promoted {
            match promote(&node, leader, grace_ms).await {
                // `propose` returns after the entry has applied here. The
                // duties run at once, not a tick later: a leader that
                // crash-loops gets little time between restarts, and what is
                // already due must go in that time (L2).
                Ok(entries) => {
                    tracing::info!(
                        term = leader.term,
                        entries,
                        "leader duties start (promote applied)"
                    );
                    node.set_promoted(Some(leader));
                }
                Err(e) => {
                    tracing::debug!("promote: {}", e);
                    continue;
                }
            }
        }
        let now = node.shared.clock.now();
        let clock_runs = node.formats.may_use_duty_clock();
        // 2. Expire due leases and timed-out waiters, in entries of at most
        // MAX_DUE_PER_ENTRY of each: while a list comes back full, more may
        // be due, and the next entry goes at once rather than a tick later
        // (a mass expiry still ends within its bound, L1), up to
        // MAX_EXPIRE_ENTRIES_PER_TICK entries: an entry that ended nothing
        // (the table refused it) cannot keep the loop from its other duties.
        let (delays, max_holds, slice, per_interval) = {
            let Ok(m) = node.shared.machine.lock() else {
                return;
            };
            let delays = m.deadlines.due_lock_delays(&m.table, now);
            let max_holds = m.deadlines.due_max_holds(&m.table, now);
            // The first slice after promotion is a whole pass, as the one
            // checkpoint of an interval was before the walk was spread.
            let slice = if clock_runs {
                walk = CheckpointWalk::default();
                last_slice = None;
                None
            } else {
                let elapsed = last_slice.map_or(checkpoint_pass, |t| now.saturating_sub(t));
                last_slice = Some(now);
                Some(m.deadlines.checkpoint_slice(
                    &m.table,
                    leader,
                    now,
                    checkpoint_every,
                    &mut walk,
                    elapsed,
                    checkpoint_pass,
                ))
            };
            let per_interval = match last_checkpoint {
                Some(t) if now.saturating_sub(t) < checkpoint_every => None,
                _ => Some(
                    m.deadlines
                        .max_hold_checkpoint(&m.table, leader, now, checkpoint_every),
                ),
            };
            (delays, max_holds, slice, per_interval)
        };
        let items = expire_items(node.config().timing.heartbeat_ms);
        for _ in 0..MAX_EXPIRE_ENTRIES_PER_TICK {
            let (lists, full) = {
                let Ok(m) = node.shared.machine.lock() else {
                    return;
                };
                let now = node.shared.clock.now();
                m.deadlines.expire_lists(&m.table, leader, now, items)
            };
            if lists
                .iter()
                .all(|due| due.leases.is_empty() && due.waiters.is_empty())
            {
                break;
            }
            tracing::debug!(
                leases = lists.iter().map(|d| d.leases.len()).sum::<usize>(),
                waiters = lists.iter().map(|d| d.waiters.len()).sum::<usize>(),
                entries = lists.len(),
                "expire"
            );
            // Two lists go out together, in order: the waiters that would
            // otherwise be handed a resource, then the leases (S8).
            let entries = lists.len();
            let proposed = few_at_a_time(lists.into_iter().map(Command::Expire), entries, |cmd| {
                node.propose_duty(cmd)
            })
            .await;
            if let Some(e) = proposed.into_iter().find_map(Result::err) {
                tracing::debug!("expire: {}", e);
                break;
            }
            if !full {
                break;
            }
        }
        // 3. End due lock-delays.
        for (resource, start_index) in delays {
            let mut cmd = Command::EndLockDelay(EndLockDelay {
                leader,
                resource,
                start_index,
                due: None,
            });
            // It hands the resource off: the due list rides in it (S8).
            node.refresh_due(std::slice::from_mut(&mut cmd));
            if let Err(e) = node.propose_duty(cmd).await {
                tracing::debug!("end lock-delay: {}", e);
            }
        }
        // 3b. End grants whose max-hold ran out (guarded by each grant's
        // token: a grant released or re-granted meanwhile is untouched).
        if !max_holds.is_empty() {
            tracing::debug!(grants = max_holds.len(), "end max-hold");
            let mut cmd = Command::EndMaxHold(EndMaxHold {
                leader,
                grants: max_holds,
                due: None,
            });
            node.refresh_due(std::slice::from_mut(&mut cmd));
            if let Err(e) = node.propose_duty(cmd).await {
                tracing::debug!("end max-hold: {}", e);
            }
        }
        // 4. Checkpoint remaining TTLs, waits and lock-delays (this tick's
        // slice), in entries of at most MAX_CHECKPOINT_ITEMS_PER_ENTRY items, a few
        // uncommitted at a time: one entry naming a whole slice would hold
        // apply, and the machine lock, for its whole list, and a whole slice
        // proposed at once would put a client entry proposed meanwhile
        // behind all of it.
        if let Some(slice) = slice.filter(|s| !s.is_empty()) {
            let entries = slice
                .into_entries(MAX_CHECKPOINT_ITEMS_PER_ENTRY)
                .into_iter()
                .map(Command::Checkpoint);
            let proposed = few_at_a_time(entries, MAX_CHECKPOINT_ENTRIES_IN_FLIGHT, |cmd| {
                node.propose_duty(cmd)
            })
            .await;
            for e in proposed.into_iter().filter_map(Result::err) {
                tracing::debug!("checkpoint: {}", e);
            }
        }
        // 4b. Or, once every member reads it, advance the duty clock: one
        // entry however many leases, waits and lock-delays there are.
        if clock_runs && next_advance.is_none_or(|t| now >= t) {
            let (measured, after_index, elapsed_ms) = {
                let Ok(m) = node.shared.machine.lock() else {
                    return;
                };
                let measured = node.shared.clock.now();
                let after_index = m.table.duty_clock().last_advance_index();
                let elapsed =
                    advance_elapsed_ms(after_index, own_advance, m.last_clock_advance, measured);
                (measured, after_index, elapsed)
            };
            next_advance = Some(measured.saturating_add(advance_every));
            let cmd = Command::AdvanceClock(AdvanceClock {
                leader,
                after_index,
                elapsed_ms,
            });
            match node.propose_duty(cmd).await {
                Ok((_, log_id)) => own_advance = Some((log_id.index, measured)),
                Err(e) => {
                    own_advance = None;
                    tracing::debug!("advance clock: {}", e);
                }
            }
        }
        // 5. Drop idle clients' outcome records: a slice of the records a
        // tick (`IdleClients`), never a walk of every client.
        let idle = {
            let Ok(m) = node.shared.machine.lock() else {
                return;
            };
            let records = m.table.client_records_after(idle_clients.after());
            idle_clients.slice(records, now, idle_timeout)
        };
        if !idle.is_empty() {
            let cmd = Command::DropClients(DropClients {
                leader,
                clients: idle,
            });
            if let Err(e) = node.propose_duty(cmd).await {
                tracing::debug!("drop clients: {}", e);
            }
        }
        // 6. Once an interval: checkpoint max-holds.
        if let Some(max_hold_cp) = per_interval {
            last_checkpoint = Some(now);
            if let Some(cp) = max_hold_cp {
                if let Err(e) = node.propose_duty(Command::CheckpointMaxHold(cp)).await {
                    tracing::debug!("max-hold checkpoint: {}", e);
                }
            }
        }
    }
}

/// `expiry_via_forwarding` (simulator only): while this node believes it
/// leads, every duty interval it hands the leases its own deadline table sees
/// as due to the observer, which proposes them at whoever leads now.
pub(crate) async fn forward_stale_expiries(node: Weak<Node>, observer: Arc<dyn Observer>) {
    let tick = match node.upgrade() {
        Some(n) => std::time::Duration::from_millis(n.config.timing.duty_interval_ms.max(1)),
        None => return,
    };
    loop {
        tokio::time::sleep(tick).await;
        let Some(node) = node.upgrade() else { return };
        let Some(leader) = node.leader_id_if_leader() else {
            continue;
        };
        let now = node.shared.clock.now();
        let due = match node.shared.machine.lock() {
            Ok(m) => m.deadlines.due(&m.table, leader, now),
            Err(_) => return,
        };
        if !due.leases.is_empty() {
            observer.forward_expiry(node.id, Command::Expire(due));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs [`few_at_a_time`] over `n` commands whose answers take 1 ms
    /// per place from the end (later ones come back sooner): (the answers
    /// in the order returned, the most proposals unanswered at once).
    async fn run_few(n: usize, in_flight: usize) -> (Vec<usize>, usize) {
        use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
        let open = Arc::new(AtomicUsize::new(0));
        let most = Arc::new(AtomicUsize::new(0));
        let started = Arc::new(AtomicUsize::new(0));
        let answers = few_at_a_time((0..n).map(|_| Command::Noop), in_flight, |cmd| {
            let (open, most, started) = (open.clone(), most.clone(), started.clone());
            async move {
                assert_eq!(cmd, Command::Noop);
                let k = started.fetch_add(1, SeqCst);
                most.fetch_max(open.fetch_add(1, SeqCst) + 1, SeqCst);
                tokio::time::sleep(Duration::from_millis((n - k) as u64)).await;
                open.fetch_sub(1, SeqCst);
                k
            }
        })
        .await;
        (answers, most.load(SeqCst))
    }

    // A client entry never waits behind a whole checkpoint slice
    // (docs/performance.md, "Checkpoint entries a few at a time"): a
    // slice's 30 entries are all proposed, in order, with never more than
    // MAX_CHECKPOINT_ENTRIES_IN_FLIGHT unanswered at once (and at least one
    // when asked for none), each result in its entry's place though later
    // entries answer first.
    #[tokio::test(start_paused = true)]
    async fn checkpoint_entries_go_out_a_few_at_a_time() {
        let (answers, most) = run_few(30, MAX_CHECKPOINT_ENTRIES_IN_FLIGHT).await;
        assert_eq!(answers, (0..30).collect::<Vec<_>>());
        assert_eq!(most, MAX_CHECKPOINT_ENTRIES_IN_FLIGHT);
        let (answers, most) = run_few(5, 0).await;
        assert_eq!((answers, most), ((0..5).collect::<Vec<_>>(), 1));
    }

    // docs/semantics.md "Checkpoints" (S4): an advance never claims more
    // time than passed since the last one was measured: from this leader's
    // own measurement when the last advance is its own, else from this
    // node's stamp of it (later than its proposer's measurement), else 0.
    #[test]
    fn an_advance_claims_only_time_that_certainly_passed() {
        let t = Duration::from_millis;
        assert_eq!(
            advance_elapsed_ms(None, None, None, t(5_000)),
            0,
            "first ever"
        );
        // Its own last advance at index 40, measured at 1 s.
        let own = Some((40, t(1_000)));
        assert_eq!(
            advance_elapsed_ms(Some(40), own, Some((40, t(1_003))), t(1_333)),
            333
        );
        // Another leader advanced since (index 52): from this node's stamp.
        assert_eq!(
            advance_elapsed_ms(Some(52), own, Some((52, t(2_010))), t(2_500)),
            490
        );
        // The table's last advance is neither its own nor one it stamped
        // (a snapshot installed meanwhile): nothing is claimed.
        assert_eq!(
            advance_elapsed_ms(Some(60), own, Some((52, t(2_010))), t(3_000)),
            0
        );
        // A stamp later than now (never expected) claims 0, not a wrap.
        assert_eq!(
            advance_elapsed_ms(Some(52), None, Some((52, t(9_000))), t(3_000)),
            0
        );
    }
}

#[cfg(test)]
mod mass_expiry_tests {
    use std::time::Duration;

    use warden_core::limits::{MAX_DUE_PER_ENTRY, MAX_DUE_PER_SLOW_ENTRY};
    use warden_core::types::{Command, LeaseGrant, LeaseId, LogIndex, Permission, PromoteSlice};

    use super::super::submit::LeaseGranted;
    use super::expire_items;

    use super::super::test_node::{header, named, Setup, TestNode};

    // The size of an `Expire` scales with the heartbeat (docs/performance.md,
    // "Expire entries of 250"): 250 with the `lan` heartbeat, so a client
    // entry waits behind little apply; up to 1,000 with the `wan` one, so a
    // storm across regions still ends 5,000 leases a second or more.
    #[test]
    fn an_expire_names_more_as_the_heartbeat_grows() {
        assert_eq!(expire_items(50), MAX_DUE_PER_ENTRY);
        assert_eq!(expire_items(10), MAX_DUE_PER_ENTRY);
        assert_eq!(expire_items(100), 500);
        assert_eq!(expire_items(250), MAX_DUE_PER_SLOW_ENTRY);
        assert_eq!(expire_items(u64::MAX), MAX_DUE_PER_SLOW_ENTRY);
        assert_eq!(
            expire_items(crate::config::Timing::wan().heartbeat_ms),
            MAX_DUE_PER_SLOW_ENTRY
        );
        assert_eq!(
            expire_items(crate::config::Timing::default().heartbeat_ms),
            MAX_DUE_PER_ENTRY
        );
        assert_eq!((MAX_DUE_PER_ENTRY, MAX_DUE_PER_SLOW_ENTRY), (250, 1_000));
    }

    /// The leases each `Expire` entry applied names, in log order.
    fn expire_sizes(cmds: &[Command]) -> Vec<usize> {
        let mut sizes = Vec::new();
        for cmd in cmds {
            match cmd {
                Command::Expire(due) => sizes.push(due.leases.len()),
                Command::Batch(inner) => sizes.extend(expire_sizes(inner)),
                _ => {}
            }
        }
        sizes
    }

    // L1 under a mass expiry, ended in bounded entries (MAX_DUE_PER_ENTRY
    // with the default heartbeat): 2,500 leases granted together with a 1 s
    // TTL all end within TTL + E (E here: the one-node cluster's duty tick
    // and apply lag, well under 3 s), and no `Expire` entry names more than
    // 250 of them.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_mass_expiry_ends_in_bounded_entries_within_ttl_plus_e() {
        const LEASES: u64 = 2_500;
        let t = TestNode::start(Setup::default()).await;
        t.grant("alice", "", Permission::Lock).await;
        let alice = named("alice");
        let grants = (1..=LEASES).map(|client| {
            let node = t.node.clone();
            let alice = alice.clone();
            async move {
                let granted: LeaseGranted = node
                    .submit(
                        &alice,
                        Command::LeaseGrant(LeaseGrant {
                            header: header(client, 1),
                            ttl_ms: 1_000,
                        }),
                    )
                    .await
                    .expect("lease grant");
                granted.lease_id
            }
        });
        let ids = futures::future::join_all(grants).await;
        let granted_at = tokio::time::Instant::now();
        assert_eq!(ids.len() as u64, LEASES);
        assert_eq!(t.table(|m| m.leases().count()) as u64, LEASES);

        let limit = Duration::from_millis(1_000 + 3_000);
        while t.table(|m| m.leases().count()) > 0 {
            assert!(
                granted_at.elapsed() < limit,
                "{} of {LEASES} leases outlived TTL + E",
                t.table(|m| m.leases().count())
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let sizes = expire_sizes(&t.applied());
        assert!(
            sizes.iter().all(|n| *n <= MAX_DUE_PER_ENTRY),
            "an Expire entry over the bound: {sizes:?}"
        );
        assert_eq!(sizes.iter().sum::<usize>() as u64, LEASES, "{sizes:?}");
    }

    /// (clock advances, leases named in checkpoints) among `cmds`.
    fn duty_counts(cmds: &[Command]) -> (usize, usize) {
        cmds.iter().fold((0, 0), |(a, c), cmd| match cmd {
            Command::AdvanceClock(_) => (a + 1, c),
            Command::Checkpoint(cp) => (a, c + cp.leases.len()),
            Command::Batch(inner) => {
                let (ia, ic) = duty_counts(inner);
                (a + ia, c + ic)
            }
            _ => (a, c),
        })
    }

    /// Grants `n` leases of `ttl_ms` as `principal`, clients 1..=n.
    async fn leases(t: &TestNode, principal: &crate::node::Principal, n: u64, ttl_ms: u64) {
        for client in 1..=n {
            let _: LeaseGranted = t
                .node
                .submit(
                    principal,
                    Command::LeaseGrant(LeaseGrant {
                        header: header(client, 1),
                        ttl_ms,
                    }),
                )
                .await
                .expect("lease grant");
        }
    }

    // docs/semantics.md "Checkpoints": once every member reads log format 8
    // the duty loop advances the clock and names no lease in a checkpoint,
    // however many leases stop renewing; the clock never counts more than
    // passed (S4), so what a loading node derives for a lease is never less
    // than the TTL less the time since its grant was sent.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_duty_loop_advances_the_clock_instead_of_naming_leases() {
        let started = tokio::time::Instant::now();
        let t = TestNode::start(Setup::default()).await;
        t.grant("alice", "", Permission::Lock).await;
        let sent = tokio::time::Instant::now();
        leases(&t, &named("alice"), 50, 10_000).await;
        let deadline = sent + Duration::from_secs(8);
        while t.table(|m| m.duty_clock().now_ms()) < 1_500 {
            assert!(
                tokio::time::Instant::now() < deadline,
                "the clock did not reach 1.5 s"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let (clock_ms, lefts) = t.table(|m| {
            let lefts: Vec<u64> = m.leases().map(|l| m.lease_remaining_ms(l)).collect();
            (m.duty_clock().now_ms(), lefts)
        });
        let since_sent = u64::try_from(sent.elapsed().as_millis()).expect("ms");
        let since_start = u64::try_from(started.elapsed().as_millis()).expect("ms");
        assert!(
            clock_ms <= since_start,
            "clock {clock_ms} ms ran ahead of {since_start} ms"
        );
        assert_eq!(lefts.len(), 50);
        for left in &lefts {
            assert!(
                *left + since_sent >= 10_000,
                "{left} ms left after {since_sent} ms"
            );
            assert!(*left < 10_000, "the clock counted nothing: {lefts:?}");
        }
        let (advances, named_leases) = duty_counts(&t.applied());
        assert_eq!(named_leases, 0, "a lease was named in a checkpoint");
        assert!(advances >= 2, "{advances} advances");
    }

    // L4 in bounded entries (docs/semantics.md "A new leader", etcd issue
    // 9496): a leader that promotes itself again (as after a restart that
    // resumes its term) over 7 leases, 2 a slice, commits four
    // `PromoteSlice` entries whose ranges cover every lease once: the first
    // starts the promotion, the others name its index, and the last, which
    // ends it, is the last in the log; its duties wait for it. Every lease
    // is graced.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_promotion_goes_out_in_slices_that_grace_every_lease_once() {
        let t = TestNode::start(Setup {
            promote_slice_leases: Some(2),
            ..Setup::default()
        })
        .await;
        leases(&t, &None, 7, 60_000).await;
        let before = t.applied().len();
        let leader = t.node.promoted_leader().expect("promoted");
        t.node.set_promoted(None);
        let deadline = tokio::time::Instant::now() + Duration::from_secs(8);
        while t.node.promoted_leader().is_none() {
            assert!(
                tokio::time::Instant::now() < deadline,
                "the promotion did not end"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let slices: Vec<PromoteSlice> = t.applied()[before..]
            .iter()
            .filter_map(|c| match c {
                Command::PromoteSlice(p) => Some(*p),
                _ => None,
            })
            .collect();
        let ranges: Vec<(LogIndex, LeaseId, Option<LeaseId>)> = slices
            .iter()
            .map(|s| {
                assert_eq!(s.leader, leader);
                (s.started_at, s.from_lease, s.to_lease)
            })
            .collect();
        let started_at = ranges.get(1).map_or(0, |r| r.0);
        assert!(started_at > 0, "{ranges:?}");
        assert_eq!(
            ranges,
            vec![
                (0, 0, Some(3)),
                (started_at, 3, Some(5)),
                (started_at, 5, Some(7)),
                (started_at, 7, None)
            ]
        );
        let graced = t.table(|m| m.leases().filter(|l| l.graced).count());
        assert_eq!(graced, 7);
        assert_eq!(t.table(|m| m.last_promote().map(|(l, _)| l)), Some(leader));
    }

    // Rolling upgrade: with a member that has not reported log format 8 the
    // leader names leases in checkpoints as before and never proposes an
    // advance that member could not decode.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_member_below_format_8_keeps_named_checkpoints() {
        let t = TestNode::start(Setup {
            gate_closed: true,
            ..Setup::default()
        })
        .await;
        leases(&t, &None, 5, 3_000).await;
        let deadline = tokio::time::Instant::now() + Duration::from_secs(8);
        while duty_counts(&t.applied()).1 == 0 {
            assert!(
                tokio::time::Instant::now() < deadline,
                "no lease was checkpointed"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert_eq!(duty_counts(&t.applied()).0, 0, "an advance was proposed");
        assert!(!t.table(|m| m.duty_clock().is_running()));
    }
}

#[cfg(test)]
mod s8_tests {
    //! S8 through the duty loop of a running node (paused time): what the
    //! leader's `Expire` entries hand off never reaches a waiter they name.

    use std::time::Duration;

    use warden_core::types::{Acquire, AcquireOutcome, AcquireReply, Command, LeaseSpec};

    use super::super::test_node::{header, Setup, TestNode};

    /// An anonymous acquire of `resource` on a new lease (`client`, request
    /// 1), waiting up to `wait_timeout_ms`; the lease id and whether it queued.
    async fn acquire(
        t: &TestNode,
        client: u64,
        resource: &str,
        ttl_ms: u64,
        wait_timeout_ms: u64,
    ) -> (u64, bool) {
        let reply: AcquireReply = t
            .node
            .submit(
                &None,
                Command::Acquire(Acquire {
                    header: header(client, 1),
                    resource: resource.into(),
                    lease: LeaseSpec::New { ttl_ms },
                    wait_timeout_ms,
                    lock_delay_ms: 0,
                    due: None,
                }),
            )
            .await
            .expect("acquire");
        match reply.outcome {
            AcquireOutcome::Granted { lease_id, .. } => (lease_id, false),
            AcquireOutcome::Queued { lease_id, .. } => (lease_id, true),
            other => panic!("{other:?}"),
        }
    }

    // S8: a holder whose lease is due in the same duty tick as the timed-out
    // waiter at the head of its queue. The leader proposes two `Expire`
    // entries, the waiter first, so the holder's end hands the resource to
    // the live waiter behind it; one entry (leases ended first, each
    // handing off at once) granted it to the timed-out waiter, whose caller
    // had been told it timed out.
    #[tokio::test(start_paused = true)]
    async fn a_holder_due_with_its_timed_out_head_waiter_hands_off_to_the_live_one() {
        // A duty tick of 5 s: the holder's TTL (3 s) and the head's wait
        // (2 s) both run out before the first tick after the set-up.
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
        let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
        while t.table(|m| m.holder("r").map(|h| h.lease_id)) != Some(live) {
            assert!(
                tokio::time::Instant::now() < deadline,
                "the live waiter was not granted: holder {:?}",
                t.table(|m| m.holder("r").map(|h| h.lease_id))
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
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
        // The two entries, in order: the head's wait, then the holder.
        let expires: Vec<(Vec<u64>, Vec<u64>)> = t
            .applied()
            .iter()
            .filter_map(|c| match c {
                Command::Expire(d) if !d.leases.is_empty() || !d.waiters.is_empty() => Some((
                    d.waiters.iter().map(|w| w.lease_id).collect(),
                    d.leases.iter().map(|l| l.lease_id).collect(),
                )),
                _ => None,
            })
            .collect();
        assert_eq!(expires, vec![(vec![head], vec![]), (vec![], vec![holder])]);
        assert!(
            t.table(|m| m.lease(head).is_none()),
            "the head's lease ended with its wait"
        );
    }
}

#[cfg(test)]
mod idle_client_tests {
    //! S7 on a running node: the leader's duty loop drops a principal's
    //! outcome record that stood still for the idle timeout, and keeps one
    //! that moved, on tokio's paused clock.

    use std::time::Duration;

    use tokio::time::Instant;
    use warden_core::types::{Command, LeaseGrant, Permission};

    use super::super::submit::LeaseGranted;
    use super::super::test_node::{header, named, Setup, TestNode};
    use super::super::SubmitError;
    use super::CLIENT_IDLE_TIMEOUT_MS;

    /// Whether alice's record of `client` is kept.
    fn kept(t: &TestNode, client: u64) -> bool {
        t.table(|m| m.outcome_table().record_of(Some("alice"), client).is_some())
    }

    /// A lease grant by alice's `client`, sent again with the same request
    /// id (exactly once, S7) while its outcome is unknown: on paused time
    /// the clock jumps ahead while the log writer's thread runs, so a
    /// commit can pass its timeout without any fault.
    async fn grant(t: &TestNode, client: u64, request_id: u64) {
        let mut tries = 0;
        loop {
            let sent = t
                .node
                .submit::<LeaseGranted>(
                    &named("alice"),
                    Command::LeaseGrant(LeaseGrant {
                        header: header(client, request_id),
                        ttl_ms: 60_000,
                    }),
                )
                .await;
            match sent {
                Ok(_) => return,
                Err(SubmitError::Unknown { reason }) if tries < 5 => {
                    tries += 1;
                    eprintln!("lease grant outcome unknown ({reason}); sent again");
                }
                Err(e) => panic!("lease grant: {e:?}"),
            }
        }
    }

    /// Sleeps (paused time) until `at`, or until `done` holds, checking
    /// every 100 ms; whether `done` held.
    async fn until(at: Instant, mut done: impl FnMut() -> bool) -> bool {
        while Instant::now() < at {
            if done() {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        done()
    }

    #[tokio::test(start_paused = true)]
    async fn the_leader_drops_a_record_idle_for_the_timeout_and_keeps_one_that_moved() {
        let idle = Duration::from_millis(CLIENT_IDLE_TIMEOUT_MS);
        let t = TestNode::start(Setup::default()).await;
        t.grant("alice", "", Permission::Lock).await;
        grant(&t, 5, 1).await;
        grant(&t, 6, 1).await;
        let t0 = Instant::now();
        assert!(kept(&t, 5) && kept(&t, 6));
        // Client 6 sends another request halfway: its record moves.
        tokio::time::sleep(idle / 2).await;
        grant(&t, 6, 2).await;
        let moved = Instant::now();
        // Neither is dropped before the whole timeout.
        let early = until(t0 + idle - Duration::from_secs(1), || {
            !kept(&t, 5) || !kept(&t, 6)
        })
        .await;
        assert!(!early, "a record was dropped before the idle timeout");
        // Client 5's goes within a few seconds of it (a pass and a commit,
        // or a few: on paused time a commit can pass its 3 s timeout while
        // the log writer's thread runs, and the next pass proposes again);
        // client 6's stays.
        let dropped = until(t0 + idle + Duration::from_secs(15), || !kept(&t, 5)).await;
        assert!(dropped, "client 5's idle record was kept past the timeout");
        assert!(kept(&t, 6), "client 6's record moved at half the timeout");
        let dropped = until(moved + idle + Duration::from_secs(15), || !kept(&t, 6)).await;
        assert!(dropped, "client 6's record was kept past its own timeout");
        let applied = t.applied();
        assert!(
            applied.iter().any(
                |c| matches!(c, Command::DropClients(d) if d.clients.iter().any(|(c, _)| *c == 5))
            ),
            "the drop went through a DropClients entry"
        );
    }
}
