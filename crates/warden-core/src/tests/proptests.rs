//! Random entries against the model: S1, S2, S7, S8 and the time rules
//! ("Time": cluster time never goes back, a stamp of another leader is
//! ignored, nothing ended is ever granted, the sweep leaves nothing due).

use std::collections::BTreeMap;

use proptest::prelude::*;

use super::*;
use crate::effect::{Effect, WaiterRemovedReason};

const RESOURCES: [&str; 3] = ["a", "b", "c"];

fn leader() -> impl Strategy<Value = LeaderId> {
    prop_oneof![Just(L1), Just(L2)]
}

/// How far the proposer's clock moves before an entry.
fn dt() -> impl Strategy<Value = u64> {
    prop_oneof![4 => Just(0u64), 3 => 0u64..1_500, 1 => 1_500u64..12_000]
}

/// Whose stamp an entry carries: its own leader's, late by some ms (stamps
/// need not be in log order), or another leader's (ignored).
#[derive(Debug, Clone, Copy)]
enum StampKind {
    Own,
    Late(u64),
    Other,
}

fn stamp_kind() -> impl Strategy<Value = StampKind> {
    prop_oneof![
        8 => Just(StampKind::Own),
        2 => (1u64..3_000).prop_map(StampKind::Late),
        1 => Just(StampKind::Other),
    ]
}

fn other(l: LeaderId) -> LeaderId {
    if l == L1 {
        L2
    } else {
        L1
    }
}

/// The stamp of an entry whose log leader is `log_leader`, the proposer's
/// clock at `clock`.
fn stamp_of(kind: StampKind, log_leader: LeaderId, clock: u64) -> Stamp {
    match kind {
        StampKind::Own => stamp(log_leader, clock),
        StampKind::Late(ms) => stamp(log_leader, clock.saturating_sub(ms)),
        StampKind::Other => stamp(other(log_leader), clock + 5_000),
    }
}

/// Every kind and mode an acquire may ask for, two semaphore limits
/// among them (docs/semantics.md "Lock kinds").
fn kind_and_mode() -> impl Strategy<Value = (LockKind, Mode)> {
    prop_oneof![
        Just((LockKind::Mutex, Mode::Exclusive)),
        Just((LockKind::ReadWrite, Mode::Shared)),
        Just((LockKind::ReadWrite, Mode::Exclusive)),
        Just((LockKind::Semaphore { limit: 2 }, Mode::Shared)),
        Just((LockKind::Semaphore { limit: 3 }, Mode::Shared)),
    ]
}

fn lease_spec() -> impl Strategy<Value = LeaseSpec> {
    prop_oneof![
        prop_oneof![Just(999u64), Just(1_000), Just(2_000)]
            .prop_map(|t| LeaseSpec::New { ttl_ms: t }),
        (0u64..8).prop_map(|l| LeaseSpec::Existing { lease_id: l }),
    ]
}

fn command() -> impl Strategy<Value = Command> {
    // The request id is replaced by the entry's position at apply time (see `Op`).
    let h = (1u64..4).prop_map(|c| hdr(c, 1));
    let res = proptest::sample::select(RESOURCES.to_vec()).prop_map(str::to_owned);
    prop_oneof![
        8 => (h.clone(), res.clone(), lease_spec(), prop_oneof![3 => Just(0u64), 3 => Just(10_000), 1 => Just(u64::MAX)], prop_oneof![Just(0u64), Just(500)])
            .prop_map(|(header, resource, lease, wait_timeout_ms, lock_delay_ms)| Command::Acquire(Acquire::mutex(header, resource, lease, wait_timeout_ms, lock_delay_ms))),
        8 => (h.clone(), res.clone(), lease_spec(), prop_oneof![3 => Just(0u64), 3 => Just(10_000)], prop_oneof![Just(0u64), Just(500)], kind_and_mode())
            .prop_map(|(header, resource, lease, wait_timeout_ms, lock_delay_ms, (kind, mode))| Command::Acquire(Acquire::mutex(header, resource, lease, wait_timeout_ms, lock_delay_ms).of_kind(kind, mode))),
        // docs/semantics.md "Max-hold": every kind, some bad caps and waits.
        5 => (h.clone(), res.clone(), lease_spec(), prop_oneof![3 => Just(0u64), 3 => Just(5_000), 1 => Just(20_000)], prop_oneof![Just(0u64), Just(500)], kind_and_mode(), prop_oneof![Just(999u64), Just(10_000), Just(30_000)])
            .prop_map(|(header, resource, lease, wait_timeout_ms, lock_delay_ms, (kind, mode), max_hold_ms)| Command::Acquire(Acquire::mutex(header, resource, lease, wait_timeout_ms, lock_delay_ms).of_kind(kind, mode).with_max_hold(max_hold_ms))),
        5 => (h.clone(), proptest::sample::subsequence(RESOURCES.to_vec(), 1..=3).prop_shuffle(), lease_spec(), prop_oneof![3 => Just(0u64), 3 => Just(10_000)], prop_oneof![Just(0u64), Just(500)])
            .prop_map(|(header, names, lease, wait_timeout_ms, lock_delay_ms)| Command::Acquire(Acquire::multi(header, names.into_iter().map(str::to_owned).collect(), lease, wait_timeout_ms, lock_delay_ms))),
        3 => (h.clone(), proptest::option::of(res.clone()), 0u64..8, proptest::option::of(0u64..12))
            .prop_map(|(header, resource, lease_id, fencing_token)| Command::Release(Release { header, resource, lease_id, fencing_token })),
        3 => proptest::collection::vec(0u64..8, 0..4).prop_map(|lease_ids| Command::RenewBatch(RenewBatch { lease_ids })),
        1 => (h.clone(), 500u64..5_000).prop_map(|(header, ttl_ms)| Command::LeaseGrant(LeaseGrant { header, ttl_ms })),
        1 => (h.clone(), 0u64..8).prop_map(|(header, lease_id)| Command::Revoke(Revoke { header, lease_id, at_unix_ms: 0 })),
        2 => (h.clone(), 1u64..40, res.clone()).prop_map(|(header, acquire_request_id, resource)| Command::CancelWait(CancelWait { header, acquire_request_id, resource })),
        1 => (0u64..60_000).prop_map(|no_expiry_before_ms| Command::Promote(Promote { no_expiry_before_ms })),
        2 => Just(Command::Tick),
        1 => (h, res, proptest::option::of(0u64..12)).prop_map(|(header, resource, fencing_token)| Command::ForceRelease(ForceRelease { header, resource, fencing_token, requested_by: "ops".into(), at_unix_ms: 0 })),
        1 => (leader(), proptest::collection::vec((0u64..4, 0u64..40), 0..3)).prop_map(|(leader, clients)| Command::DropClients(DropClients { leader, clients })),
    ]
}

/// A command a leader packs: no promote (a promote that lowers the grace
/// mid-entry leaves leases ended but not swept until the next entry, so the
/// packed table would differ from the one-by-one table by unswept items).
fn batch_command() -> impl Strategy<Value = Command> {
    command().prop_filter("no promote in a batch", |c| {
        !matches!(c, Command::Promote(_))
    })
}

/// One step: a command, or a command built from the table's current state.
#[derive(Debug, Clone)]
enum Op {
    Cmd(Command),
    /// Move the clock to the n-th instant of the time index (a lease's,
    /// a wait's, a lock-delay's or a max-hold's end) and tick there.
    ToInstant(usize),
    /// Release the n-th held resource by its holder, with the right token.
    ReleaseHeld(usize),
    /// A new leader's promote: `no_expiry_before` the clock plus this.
    Promote(u64),
    /// Renew every lease in the table.
    RenewAll,
    /// Apply the n-th earlier command again, verbatim (a retry, S7).
    Retry(usize),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        8 => command().prop_map(Op::Cmd),
        3 => any::<usize>().prop_map(Op::ToInstant),
        2 => any::<usize>().prop_map(Op::ReleaseHeld),
        1 => (0u64..3_000).prop_map(Op::Promote),
        1 => Just(Op::RenewAll),
        1 => any::<usize>().prop_map(Op::Retry),
    ]
}

fn set_request_id(cmd: &mut Command, id: u64) {
    let h = match cmd {
        Command::Acquire(a) => &mut a.header,
        Command::Release(r) => &mut r.header,
        Command::LeaseGrant(g) => &mut g.header,
        Command::Revoke(r) => &mut r.header,
        Command::ForceRelease(f) => &mut f.header,
        Command::CancelWait(c) => &mut c.header,
        _ => return,
    };
    h.request_id = id;
}

/// The command of a time step: the clock moved to the n-th instant of the
/// time index (or left as is when there is none), and a `Tick`.
fn to_instant(t: &LockTable, n: usize, clock: &mut u64) -> Command {
    let instants: Vec<u64> = t.timeline.iter().map(|(at, _)| *at).collect();
    if let Some(at) = instants.get(n % instants.len().max(1)) {
        *clock = (*clock).max(*at);
    }
    Command::Tick
}

/// Every queued waiter's deadline, by (resource, lease, enqueue index).
fn deadlines(t: &LockTable) -> BTreeMap<(String, LeaseId, LogIndex), u64> {
    t.resources
        .iter()
        .flat_map(|(r, s)| {
            s.waiters
                .iter()
                .map(move |w| ((r.clone(), w.lease_id, w.enqueue_index), w.deadline_ms))
        })
        .collect()
}

/// The time rules after one entry applied with `s` (log leader `log_leader`)
/// on a table whose `now` was `before_now` and whose waiters had
/// `before_deadlines`: cluster time moved as the stamp says and never back;
/// every grant went to a live lease and every hand-off to a waiter whose
/// wait had not ended (S8); the sweep left nothing that has ended in the
/// table (these tables stay far below MAX_SWEEP_PER_ENTRY items), unless
/// the entry was a promote (one that lowers the grace ends leases after
/// its entry's sweep: the next entry sweeps them).
fn check_time(
    t: &LockTable,
    s: Stamp,
    log_leader: LeaderId,
    before_now: u64,
    before_deadlines: &BTreeMap<(String, LeaseId, LogIndex), u64>,
    effects: &[Effect],
    promote: bool,
) -> Result<(), TestCaseError> {
    let now = t.now_ms();
    let want = if s.leader == log_leader {
        before_now.max(s.at_ms)
    } else {
        before_now
    };
    prop_assert_eq!(now, want, "cluster time after {:?} from {}", s, before_now);
    for e in effects {
        match e {
            // A lease that is still in the table was live at the grant
            // (nothing in one entry moves `now`).
            Effect::Granted {
                lease_id, resource, ..
            } if t.leases.contains_key(lease_id) => {
                prop_assert!(
                    t.lease_live(*lease_id),
                    "grant of {} to ended lease {}",
                    resource,
                    lease_id
                );
            }
            Effect::WaiterRemoved {
                resource,
                lease_id,
                enqueue_index,
                reason: WaiterRemovedReason::Granted,
                ..
            } => {
                if let Some(d) =
                    before_deadlines.get(&(resource.clone(), *lease_id, *enqueue_index))
                {
                    prop_assert!(
                        *d > now,
                        "S8: waiter {} on {} granted at {} after its deadline {}",
                        lease_id,
                        resource,
                        now,
                        d
                    );
                }
            }
            _ => {}
        }
    }
    if !promote {
        // The leader's tick rule agrees: nothing is due.
        prop_assert!(
            t.next_instant_ms().is_none_or(|n| n > now),
            "{:?} due at {}",
            t.next_instant_ms(),
            now
        );
    }
    for (at, item) in &t.timeline {
        if *at > now || promote {
            break;
        }
        let graced = matches!(item, crate::expiry::Timed::Lease(id) if t.lease_live(*id));
        prop_assert!(graced, "{:?} at {} left due at {}", item, at, now);
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    // S1 (at most one holder of a mutex or a writer, at most N permits, never a
    // writer beside readers: docs/semantics.md "Lock kinds"), S2 (tokens strictly
    // increase per resource and overall), S8 and the time rules (check_time),
    // no panic, snapshots round-trip; with max-holds, promotes, late stamps
    // and stamps of another leader among them ("Max-hold", "Time").
    #[test]
    fn random_commands_keep_s1_s2_and_time(ops in proptest::collection::vec((op(), leader(), dt(), stamp_kind()), 1..120)) {
        let mut t = LockTable::new();
        let mut clock = 0u64;
        let mut applied: Vec<Command> = Vec::new();
        let mut last_token: BTreeMap<String, u64> = BTreeMap::new();
        let mut last_any = 0u64;
        for (i, (op, log_leader, dt, kind)) in ops.iter().enumerate() {
            let index = i as u64 + 1;
            clock += dt;
            let mut kind = *kind;
            let cmd = match op {
                Op::Cmd(c) => {
                    let mut c = c.clone();
                    set_request_id(&mut c, index);
                    c
                }
                Op::ToInstant(n) => {
                    kind = StampKind::Own;
                    to_instant(&t, *n, &mut clock)
                }
                Op::ReleaseHeld(n) => {
                    let held: Vec<_> = RESOURCES.iter().flat_map(|r| t.holders(r).into_iter().map(move |h| (*r, h))).collect();
                    match held.get(n % held.len().max(1)) {
                        Some((r, h)) => release(hdr(9, index), Some(r), h.lease_id, Some(h.fencing_token)),
                        None => Command::Tick,
                    }
                }
                Op::Promote(g) => Command::Promote(Promote { no_expiry_before_ms: clock + g }),
                Op::RenewAll => Command::RenewBatch(RenewBatch { lease_ids: t.leases.keys().copied().collect() }),
                Op::Retry(n) => applied.get(n % applied.len().max(1)).cloned().unwrap_or(Command::Tick),
            };
            applied.push(cmd.clone());
            let s = stamp_of(kind, *log_leader, clock);
            let (before_now, before_deadlines, before_promotion) = (t.now_ms(), deadlines(&t), t.promotion());
            let out = t.apply(index, *log_leader, s, &cmd);
            prop_assert_eq!(t.check_invariants(), Ok(()));
            let promote = matches!(cmd, Command::Promote(_));
            check_time(&t, s, *log_leader, before_now, &before_deadlines, &out.effects, promote)?;
            // A promote applies only with its own leader's stamp.
            if let Command::Promote(p) = &cmd {
                let expected = if s.leader == *log_leader {
                    crate::expiry::Promotion { index, no_expiry_before_ms: p.no_expiry_before_ms, prev_index: before_promotion.index }
                } else {
                    before_promotion
                };
                prop_assert_eq!(t.promotion(), expected);
            }
            // Every grant with a max-hold is a current grant with that token.
            for v in t.max_holds() {
                let g = t.resource(&v.resource).and_then(|s| s.grant_of(v.lease_id));
                prop_assert!(g.is_some_and(|g| g.fencing_token == v.max_hold.fencing_token));
            }
            let mut holders_granted = BTreeMap::new();
            for e in &out.effects {
                if let Effect::Granted { resource, fencing_token, .. } = e {
                    prop_assert!(*fencing_token > last_any, "token {} after {}", fencing_token, last_any);
                    prop_assert!(last_token.get(resource).is_none_or(|t| fencing_token > t));
                    last_any = *fencing_token;
                    last_token.insert(resource.clone(), *fencing_token);
                    *holders_granted.entry(resource.clone()).or_insert(0u32) += 1;
                }
            }
            for r in RESOURCES {
                let raw: Vec<_> = t.resource(r).map(|s| s.holders().cloned().collect()).unwrap_or_default();
                let holders = t.holders(r);
                // Nothing ended is left holding (the sweep ended it).
                if !promote {
                    prop_assert_eq!(holders.len(), raw.len());
                }
                for h in &holders {
                    prop_assert!(t.lease(h.lease_id).is_some(), "holder lease is live");
                    prop_assert!(h.fencing_token < t.next_token());
                }
                // At most N permits; never a writer beside a reader; one
                // holder of a mutex.
                match t.kind(r) {
                    Some(LockKind::Semaphore { limit }) => prop_assert!(raw.len() <= limit as usize),
                    Some(LockKind::ReadWrite) => prop_assert!(raw.len() <= 1 || raw.iter().all(|h| h.mode == Mode::Shared)),
                    _ => prop_assert!(raw.len() <= 1),
                }
            }
            prop_assert!(t.next_token() == last_any + 1);
            // "Multi-locks": a multi-grant holds every one of its resources
            // exclusively, all granted by one entry; a waiting one is queued
            // on every one of them.
            for m in t.multi_locks() {
                match m.grant_index {
                    Some(gi) => {
                        prop_assert_eq!(m.tokens.len(), m.resources.len());
                        for r in &m.resources {
                            let s = t.resource(r);
                            let h = s.and_then(|s| s.holder.as_ref());
                            prop_assert!(h.is_some_and(|h| h.lease_id == m.lease_id && h.grant_index == gi && h.mode == Mode::Exclusive), "{:?} of {:?}", h, m);
                            prop_assert_eq!(s.map_or(0, |s| s.holders().count()), 1);
                        }
                    }
                    None => {
                        for r in &m.resources {
                            prop_assert!(t.has_waiter(r, m.lease_id, m.enqueue_index));
                        }
                    }
                }
            }
        }
        let bytes = t.to_snapshot();
        let back = LockTable::from_snapshot(&bytes);
        prop_assert_eq!(back.as_ref().map(|b| b.to_snapshot()), Ok(bytes));
        prop_assert_eq!(back.as_ref().ok(), Some(&t));
    }

    // S1, S2 and S8's FIFO with packed entries (`Command::Batch`): random groups of
    // commands packed into one entry keep every invariant, tokens keep growing, and each
    // entry equals its commands applied one by one at its index and stamp.
    #[test]
    fn random_batches_keep_s1_s2_and_equal_one_by_one(
        groups in proptest::collection::vec((proptest::collection::vec(batch_command(), 1..6), leader(), dt()), 1..40)
    ) {
        let mut packed = LockTable::new();
        let mut single = LockTable::new();
        let mut last_any = 0u64;
        let mut clock = 0u64;
        for (i, (group, log_leader, dt)) in groups.iter().enumerate() {
            let index = i as u64 + 1;
            clock += dt;
            let s = stamp(*log_leader, clock);
            let cmds: Vec<Command> = group
                .iter()
                .enumerate()
                .map(|(k, c)| {
                    let mut c = c.clone();
                    // Clients 1..4 reuse ids across entries now and then (retries, S7).
                    set_request_id(&mut c, index * 2 + (k as u64 % 2));
                    c
                })
                .collect();
            let out = packed.apply(index, *log_leader, s, &Command::Batch(cmds.clone()));
            prop_assert_eq!(packed.check_invariants(), Ok(()));
            let mut responses = Vec::new();
            let mut effects = Vec::new();
            for c in &cmds {
                let one = single.apply(index, *log_leader, s, c);
                responses.push(one.response);
                effects.extend(one.effects);
            }
            prop_assert_eq!(&out.response, &Response::Batch(responses));
            prop_assert_eq!(&out.effects, &effects);
            for e in &out.effects {
                if let Effect::Granted { fencing_token, .. } = e {
                    prop_assert!(*fencing_token > last_any, "token {} after {}", fencing_token, last_any);
                    last_any = *fencing_token;
                }
            }
        }
        prop_assert_eq!(packed.to_snapshot(), single.to_snapshot());
    }

    // Snapshot decoding never panics on garbage.
    #[test]
    fn garbage_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
        let _ = LockTable::from_snapshot(&bytes);
        let mut v = vec![crate::snapshot::SNAPSHOT_VERSION];
        v.extend_from_slice(&bytes);
        let _ = LockTable::from_snapshot(&v);
    }
}

// ---------------------------------------------------------------- identities

/// The callers of the identity proptest: three principals and an anonymous one.
const CALLERS: [Option<&str>; 4] = [Some("alice"), Some("bob"), Some("carol"), None];
const GRANT_PREFIXES: [&str; 7] = ["", "a", "b", "election:", "election:e", "c", "zz"];

fn keys() -> Vec<String> {
    vec![
        "a".into(),
        "b".into(),
        "c".into(),
        format!("{}e", crate::limits::ELECTION_PREFIX),
    ]
}

/// A client command.
fn client_command() -> impl Strategy<Value = Command> {
    let h = (1u64..6).prop_map(|c| hdr(c, 1));
    let key = proptest::sample::select(keys());
    let lease = prop_oneof![
        Just(1_000u64).prop_map(|t| LeaseSpec::New { ttl_ms: t }),
        (1u64..10).prop_map(|l| LeaseSpec::Existing { lease_id: l }),
    ];
    prop_oneof![
        6 => (h.clone(), key.clone(), lease, prop_oneof![Just(0u64), Just(10_000)], prop_oneof![Just(0u64), Just(500)])
            .prop_map(|(header, resource, lease, wait_timeout_ms, lock_delay_ms)| Command::Acquire(Acquire::mutex(header, resource, lease, wait_timeout_ms, lock_delay_ms))),
        3 => (h.clone(), proptest::option::of(key.clone()), 1u64..10, proptest::option::of(1u64..12))
            .prop_map(|(header, resource, lease_id, fencing_token)| Command::Release(Release { header, resource, lease_id, fencing_token })),
        2 => h.clone().prop_map(|header| Command::LeaseGrant(LeaseGrant { header, ttl_ms: 2_000 })),
        2 => (h.clone(), 1u64..10).prop_map(|(header, lease_id)| Command::Revoke(Revoke { header, lease_id, at_unix_ms: 0 })),
        1 => (key.clone(), 1u64..10, proptest::option::of(1u64..12)).prop_map(|(resource, lease_id, fencing_token)| Command::Proclaim(Proclaim { resource, lease_id, fencing_token, value: "v".into() })),
        1 => (h, key).prop_map(|(header, resource)| Command::ForceRelease(ForceRelease { header, resource, fencing_token: None, requested_by: "ops".into(), at_unix_ms: 0 })),
    ]
}

fn auth_op() -> impl Strategy<Value = crate::types::AuthOp> {
    use crate::types::AuthOp;
    let role = proptest::sample::select(vec!["r1", "r2", "r3"]).prop_map(str::to_owned);
    let prefix = proptest::sample::select(GRANT_PREFIXES.to_vec()).prop_map(str::to_owned);
    let user = proptest::sample::select(vec!["alice", "bob", "carol"]).prop_map(who);
    let permission = prop_oneof![
        3 => Just(Permission::Read),
        6 => Just(Permission::Lock),
        1 => Just(Permission::Admin)
    ];
    let quota =
        (0u64..4, 0u64..6, 0u64..3, 0u64..8).prop_map(|(leases, locks, waiters, clients)| Quota {
            leases,
            locks,
            waiters,
            clients,
            ..Quota::default()
        });
    prop_oneof![
        4 => (role.clone(), prefix.clone(), permission).prop_map(|(role, prefix, permission)| AuthOp::GrantPermission { role, prefix, permission }),
        2 => (role.clone(), prefix).prop_map(|(role, prefix)| AuthOp::RevokePermission { role, prefix }),
        4 => (user.clone(), role.clone()).prop_map(|(user, role)| AuthOp::GrantRole { user, role }),
        3 => (user, role.clone()).prop_map(|(user, role)| AuthOp::RevokeRole { user, role }),
        1 => role.clone().prop_map(|role| AuthOp::DeleteRole { role }),
        1 => (role, proptest::option::of(quota.clone())).prop_map(|(role, quota)| AuthOp::SetRoleQuota { role, quota }),
        1 => (4u64..40, 8u64..200, quota).prop_map(|(max_leases, max_clients, mut default_quota)| {
            default_quota.leases += 2;
            default_quota.locks += 4;
            default_quota.waiters += 2;
            default_quota.clients += 20;
            AuthOp::SetLimits(ClusterLimits { max_leases, max_clients, default_quota })
        }),
    ]
}

/// One step of the identity proptest.
#[derive(Debug, Clone)]
enum IdOp {
    /// A client command made by `CALLERS[i]` (checked for ownership).
    Wrapped(usize, Command),
    /// An acquire by `CALLERS[i]` of `keys()[k]` on the n-th lease it owns
    /// (checked for ownership), waiting when `wait`.
    AcquireOwn(usize, usize, usize, bool),
    /// Any command wrapped by `CALLERS[i]`, leader duties included
    /// (checked for invariants and panics only).
    WrappedRaw(usize, Command),
    /// An unwrapped (legacy) client command.
    Legacy(Command),
    /// An auth change by root, or by `CALLERS[i]`.
    Change(Option<usize>, crate::types::AuthOp),
    /// Time: the clock moved to the n-th instant of the time index, a tick.
    ToInstant(usize),
    /// A renew of every lease in the table (the leader's renew batch).
    RenewAll,
    /// A release of the n-th held resource, with the right lease and token,
    /// by `CALLERS[i]` (its owner or not).
    ReleaseHeld(usize, usize),
    /// Apply the n-th earlier command again, verbatim (a retry, S7).
    Retry(usize),
}

fn id_op() -> impl Strategy<Value = IdOp> {
    prop_oneof![
        8 => (0usize..4, client_command()).prop_map(|(i, c)| IdOp::Wrapped(i, c)),
        6 => (0usize..4, 0usize..4, any::<usize>(), any::<bool>()).prop_map(|(i, k, n, w)| IdOp::AcquireOwn(i, k, n, w)),
        1 => (0usize..4, command()).prop_map(|(i, c)| IdOp::WrappedRaw(i, c)),
        2 => client_command().prop_map(IdOp::Legacy),
        4 => (proptest::option::weighted(0.2, 0usize..4), auth_op()).prop_map(|(i, op)| IdOp::Change(i, op)),
        3 => any::<usize>().prop_map(IdOp::ToInstant),
        1 => Just(IdOp::RenewAll),
        3 => (any::<usize>(), 0usize..4).prop_map(|(n, i)| IdOp::ReleaseHeld(n, i)),
        1 => any::<usize>().prop_map(IdOp::Retry),
    ]
}

fn set_request_id_deep(cmd: &mut Command, id: u64) {
    match cmd {
        Command::Authorized(w) => set_request_id_deep(&mut w.command, id),
        Command::AuthChange(c) => c.header.request_id = id,
        other => set_request_id(other, id),
    }
}

fn wrap(i: usize, cmd: Command) -> Command {
    by(CALLERS[i], cmd)
}

/// The lease an effect is about, if any.
fn lease_of(e: &Effect) -> Option<LeaseId> {
    match e {
        Effect::LeaseSet { lease_id, .. }
        | Effect::LeaseEnded { lease_id, .. }
        | Effect::Granted { lease_id, .. }
        | Effect::Freed { lease_id, .. }
        | Effect::Queued { lease_id, .. }
        | Effect::WaiterRemoved { lease_id, .. }
        | Effect::Proclaimed { lease_id, .. } => Some(*lease_id),
        // A max-hold's start and end ride with a `Granted` or `Freed` of
        // the same lease, which is checked.
        Effect::LockDelayStarted { .. }
        | Effect::MaxHoldStarted { .. }
        | Effect::MaxHoldEnded { .. }
        | Effect::LockDelayEnded { .. }
        | Effect::AuthChanged { .. } => None,
    }
}

/// Checks that the effects of a command by `caller` (the entry's sweep
/// taken out: in these small tables it ends everything that has ended)
/// touch no lease owned by another principal, except a hand-off to that
/// lease's waiter (it asked) and the removal of its waiter whose permission
/// was revoked (an admin's act), with the end of an acquire-made lease left
/// with nothing by that removal.
fn touches_only_own_leases(
    caller: Option<&str>,
    before: &BTreeMap<LeaseId, crate::table::LeaseRecord>,
    t: &LockTable,
    effects: &[Effect],
) -> Result<(), String> {
    use crate::effect::LeaseEndReason;
    let foreign = |id: LeaseId| {
        before
            .get(&id)
            .is_some_and(|l| l.owner.as_ref().map(Principal::as_str) != caller)
    };
    let mut handed: Vec<(LeaseId, String)> = Vec::new();
    let mut revoked: Vec<LeaseId> = Vec::new();
    let mut mentioned = std::collections::BTreeSet::new();
    for e in effects {
        let Some(id) = lease_of(e).filter(|id| foreign(*id)) else {
            continue;
        };
        mentioned.insert(id);
        match e {
            Effect::WaiterRemoved {
                resource,
                reason: WaiterRemovedReason::Granted,
                ..
            } => handed.push((id, resource.clone())),
            Effect::WaiterRemoved {
                reason: WaiterRemovedReason::PermissionRevoked,
                ..
            } => revoked.push(id),
            Effect::Granted { resource, .. } if handed.contains(&(id, resource.clone())) => {}
            Effect::LeaseEnded {
                reason: LeaseEndReason::Released,
                ..
            } if revoked.contains(&id) => {}

            other => {
                return Err(format!(
                    "{caller:?} changed lease {id} of another: {other:?}"
                ))
            }
        }
    }
    for (id, l) in before {
        if !foreign(*id) || mentioned.contains(id) {
            continue;
        }
        if t.leases.get(id) != Some(l) {
            return Err(format!("{caller:?} changed lease {id} of another silently"));
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    // Identities (crate::auth), etcd PR 8031: random wrapped and unwrapped
    // commands from three principals and an anonymous caller, with random
    // grants, revokes, quotas and limits: check_invariants holds after every
    // entry (usage counters included), apply never panics, no command of
    // principal P ever changes a lease owned by Q (except ForceRelease and
    // Revoke by an admin, leader duties and hand-offs), a refused wrapped
    // command changes nothing, and snapshots round-trip.
    #[test]
    fn principals_never_change_each_others_leases(ops in proptest::collection::vec((id_op(), dt()), 1..150)) {
        let mut t = LockTable::new();
        // A start: alice may lock everything, bob `a` and `b`, carol `c` and
        // the elections; random changes go on from there.
        let start = [
            grant_perm("r1", "", Permission::Lock),
            grant_perm("r2", "a", Permission::Lock),
            grant_perm("r2", "b", Permission::Lock),
            grant_perm("r3", "c", Permission::Lock),
            grant_perm("r3", "election:", Permission::Lock),
            grant_role("alice", "r1"),
            grant_role("bob", "r2"),
            grant_role("carol", "r3"),
        ];
        let base = start.len() as u64;
        for (n, op) in start.into_iter().enumerate() {
            let n = n as u64 + 1;
            let out = t.apply(n, L1, stamp(L1, 0), &as_("root", change(hdr(9, n), op)));
            prop_assert_eq!(out.response, Response::AuthChanged);
        }
        let mut applied: Vec<Command> = Vec::new();
        let mut clock = 0u64;
        for (i, (op, dt)) in ops.iter().enumerate() {
            let index = base + i as u64 + 1;
            clock += dt;
            // (the command, its caller when it is checked for ownership)
            let (cmd, checked): (Command, Option<Option<&str>>) = match op {
                IdOp::Wrapped(p, c) => {
                    let mut c = c.clone();
                    set_request_id(&mut c, index);
                    (wrap(*p, c), Some(CALLERS[*p]))
                }
                IdOp::AcquireOwn(p, k, n, wait) => {
                    let own: Vec<LeaseId> = t.leases.values().filter(|l| l.owner.as_ref().map(Principal::as_str) == CALLERS[*p]).map(|l| l.lease_id).collect();
                    let lease = match own.get(n % own.len().max(1)) {
                        Some(id) => LeaseSpec::Existing { lease_id: *id },
                        None => LeaseSpec::New { ttl_ms: 1_000 },
                    };
                    let wait_timeout_ms = if *wait { 10_000 } else { 0 };
                    let c = Command::Acquire(Acquire::mutex(hdr(8, index), keys()[*k].clone(), lease, wait_timeout_ms, 0));
                    (wrap(*p, c), Some(CALLERS[*p]))
                }
                IdOp::WrappedRaw(p, c) => {
                    let mut c = c.clone();
                    set_request_id(&mut c, index);
                    (wrap(*p, c), None)
                }
                IdOp::Legacy(c) => {
                    let mut c = c.clone();
                    set_request_id(&mut c, index);
                    (c, None)
                }
                IdOp::Change(p, op) => {
                    let c = change(hdr(9, index), op.clone());
                    match p {
                        Some(p) => (wrap(*p, c), Some(CALLERS[*p])),
                        None => (as_("root", c), Some(Some("root"))),
                    }
                }
                IdOp::ToInstant(n) => (to_instant(&t, *n, &mut clock), None),
                IdOp::RenewAll => (Command::RenewBatch(RenewBatch { lease_ids: t.leases.keys().copied().collect() }), None),
                IdOp::ReleaseHeld(n, p) => {
                    let held: Vec<_> = keys().into_iter().filter_map(|r| t.holder(&r).map(|h| (r, h))).collect();
                    match held.get(n % held.len().max(1)) {
                        Some((r, h)) => (wrap(*p, release(hdr(7, index), Some(r), h.lease_id, Some(h.fencing_token))), Some(CALLERS[*p])),
                        None => (Command::Tick, None),
                    }
                }
                IdOp::Retry(n) => {
                    let c = applied.get(n % applied.len().max(1)).cloned().unwrap_or(Command::Tick);
                    (c, None)
                }
            };
            let mut cmd = cmd;
            if let IdOp::Change(..) = op {
                set_request_id_deep(&mut cmd, index);
            }
            applied.push(cmd.clone());
            let admin = |t: &LockTable, caller: Option<&str>| {
                t.allows(caller, Permission::Admin, crate::auth::Target::Prefix(""))
            };
            let was_admin = checked.map(|c| admin(&t, c));
            let s = stamp(L1, clock);
            // The entry's sweep, as a tick at the same index and stamp does
            // it, and the leases it leaves.
            let mut probe = t.clone();
            let swept = probe.apply(index, L1, s, &Command::Tick).effects;
            let before: BTreeMap<LeaseId, crate::table::LeaseRecord> = probe.leases.clone();
            let (before_now, before_deadlines) = (t.now_ms(), deadlines(&t));
            let out = t.apply(index, L1, s, &cmd);
            prop_assert_eq!(t.check_invariants(), Ok(()), "after {:?}", cmd);
            check_time(&t, s, L1, before_now, &before_deadlines, &out.effects, false)?;
            prop_assert!(out.effects.starts_with(&swept), "the sweep comes first");
            let own_effects = &out.effects[swept.len()..];
            // Every grant a wrapped command or a hand-off makes goes to a
            // lease whose owner has lock on the resource at this index: the
            // sweep's hand-offs run first, so they are checked against the
            // permissions before the command (a revoke in the same entry
            // comes after them), the command's own against those after it.
            let wrapped = matches!(cmd, Command::Authorized(_));
            let mut handed: Vec<(LeaseId, &str)> = Vec::new();
            for (n, e) in out.effects.iter().enumerate() {
                let perms = if n < swept.len() { &probe } else { &t };
                match e {
                    Effect::WaiterRemoved { resource, lease_id, reason: crate::effect::WaiterRemovedReason::Granted, .. } => handed.push((*lease_id, resource)),
                    Effect::Granted { resource, lease_id, .. } if wrapped || handed.contains(&(*lease_id, resource.as_str())) => {
                        if let Some(l) = t.lease(*lease_id).or_else(|| before.get(lease_id)) {
                            let owner = l.owner.as_ref().map(Principal::as_str);
                            prop_assert!(
                                perms.allows(owner, Permission::Lock, crate::auth::Target::Resource(resource)),
                                "{:?} granted {} without lock", owner, resource
                            );
                        }
                    }
                    _ => {}
                }
            }
            if let Some(caller) = checked {
                let forced = matches!(&cmd, Command::Authorized(w) if matches!(*w.command, Command::ForceRelease(_) | Command::Revoke(_)));
                if !(forced && was_admin == Some(true)) {
                    let r = touches_only_own_leases(caller, &before, &t, own_effects);
                    prop_assert!(r.is_ok(), "{:?} by {:?}: {:?}", cmd, caller, r);
                }
                if matches!(&out.response, Response::Error(_)) {
                    prop_assert!(own_effects.is_empty(), "a refusal changed something: {:?}", own_effects);
                }
            }
        }
        let bytes = t.to_snapshot();
        let back = LockTable::from_snapshot(&bytes);
        prop_assert_eq!(back.as_ref().map(|b| b.to_snapshot()), Ok(bytes));
        prop_assert_eq!(back.as_ref().ok(), Some(&t));
    }
}
