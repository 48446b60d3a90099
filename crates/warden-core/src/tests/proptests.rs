use std::collections::BTreeMap;

use proptest::prelude::*;

use super::*;
use crate::effect::Effect;

const RESOURCES: [&str; 3] = ["a", "b", "c"];

fn leader() -> impl Strategy<Value = LeaderId> {
    prop_oneof![Just(L1), Just(L2)]
}

fn due() -> impl Strategy<Value = Option<DueList>> {
    proptest::option::of(
        (
            leader(),
            proptest::collection::vec((0u64..8, 0u64..40), 0..3),
        )
            .prop_map(|(leader, ls)| DueList {
                leader,
                leases: ls
                    .into_iter()
                    .map(|(lease_id, last_index)| DueLease {
                        lease_id,
                        last_index,
                    })
                    .collect(),
                waiters: vec![],
            }),
    )
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

fn command() -> impl Strategy<Value = Command> {
    // The request id is replaced by the entry's position at apply time (see `Op`).
    let h = (1u64..4).prop_map(|c| hdr(c, 1));
    let res = proptest::sample::select(RESOURCES.to_vec()).prop_map(str::to_owned);
    prop_oneof![
        8 => (h.clone(), res.clone(), prop_oneof![prop_oneof![Just(999u64), Just(1_000), Just(2_000)].prop_map(|t| LeaseSpec::New { ttl_ms: t }), (0u64..8).prop_map(|l| LeaseSpec::Existing { lease_id: l })], prop_oneof![3 => Just(0u64), 3 => Just(10_000), 1 => Just(u64::MAX)], prop_oneof![Just(0u64), Just(500)], due())
            .prop_map(|(header, resource, lease, wait_timeout_ms, lock_delay_ms, due)| Command::Acquire(Acquire { header, resource, lease, wait_timeout_ms, lock_delay_ms, due })),
        8 => (h.clone(), res.clone(), prop_oneof![prop_oneof![Just(999u64), Just(1_000), Just(2_000)].prop_map(|t| LeaseSpec::New { ttl_ms: t }), (0u64..8).prop_map(|l| LeaseSpec::Existing { lease_id: l })], prop_oneof![3 => Just(0u64), 3 => Just(10_000)], prop_oneof![Just(0u64), Just(500)], due(), kind_and_mode())
            .prop_map(|(header, resource, lease, wait_timeout_ms, lock_delay_ms, due, (kind, mode))| Command::AcquireKind(AcquireKind { acquire: Acquire { header, resource, lease, wait_timeout_ms, lock_delay_ms, due }, kind, mode })),
        // docs/semantics.md "Max-hold": every kind, some bad caps and waits.
        5 => (h.clone(), res.clone(), prop_oneof![prop_oneof![Just(999u64), Just(1_000), Just(2_000)].prop_map(|t| LeaseSpec::New { ttl_ms: t }), (0u64..8).prop_map(|l| LeaseSpec::Existing { lease_id: l })], prop_oneof![3 => Just(0u64), 3 => Just(5_000), 1 => Just(20_000)], prop_oneof![Just(0u64), Just(500)], due(), kind_and_mode(), prop_oneof![Just(999u64), Just(10_000), Just(30_000)])
            .prop_map(|(header, resource, lease, wait_timeout_ms, lock_delay_ms, due, (kind, mode), max_hold_ms)| Command::AcquireBounded(AcquireBounded { acquire: AcquireKind { acquire: Acquire { header, resource, lease, wait_timeout_ms, lock_delay_ms, due }, kind, mode }, max_hold_ms })),
        1 => (leader(), proptest::collection::vec((res.clone(), 0u64..8, 0u64..12), 0..3), due()).prop_map(|(leader, gs, due)| Command::EndMaxHold(EndMaxHold { leader, grants: gs.into_iter().map(|(resource, lease_id, fencing_token)| MaxHoldRef { resource, lease_id, fencing_token }).collect(), due })),
        1 => (leader(), proptest::collection::vec((res.clone(), 0u64..8, 0u64..12, 0u64..40_000), 0..3)).prop_map(|(leader, gs)| Command::CheckpointMaxHold(CheckpointMaxHold { leader, grants: gs.into_iter().map(|(resource, lease_id, fencing_token, ms)| (MaxHoldRef { resource, lease_id, fencing_token }, ms)).collect() })),
        5 => (h.clone(), proptest::sample::subsequence(RESOURCES.to_vec(), 1..=3).prop_shuffle(), prop_oneof![prop_oneof![Just(999u64), Just(1_000), Just(2_000)].prop_map(|t| LeaseSpec::New { ttl_ms: t }), (0u64..8).prop_map(|l| LeaseSpec::Existing { lease_id: l })], prop_oneof![3 => Just(0u64), 3 => Just(10_000)], prop_oneof![Just(0u64), Just(500)], due())
            .prop_map(|(header, names, lease, wait_timeout_ms, lock_delay_ms, due)| Command::AcquireMulti(AcquireMulti { acquire: Acquire { header, resource: names[0].to_owned(), lease, wait_timeout_ms, lock_delay_ms, due }, resources: names.into_iter().map(str::to_owned).collect() })),
        3 => (h.clone(), proptest::option::of(res.clone()), 0u64..8, proptest::option::of(0u64..12), due())
            .prop_map(|(header, resource, lease_id, fencing_token, due)| Command::Release(Release { header, resource, lease_id, fencing_token, due })),
        1 => proptest::collection::vec(0u64..8, 0..4).prop_map(|lease_ids| Command::RenewBatch(RenewBatch { lease_ids })),
        1 => (h.clone(), 500u64..5_000).prop_map(|(header, ttl_ms)| Command::LeaseGrant(LeaseGrant { header, ttl_ms })),
        1 => (h.clone(), 0u64..8, due()).prop_map(|(header, lease_id, due)| Command::Revoke(Revoke { header, lease_id, due })),
        2 => (h.clone(), 1u64..40, res.clone(), due()).prop_map(|(header, acquire_request_id, resource, due)| Command::CancelWait(CancelWait { header, acquire_request_id, resource, due })),
        1 => (leader(), 0u64..2_000).prop_map(|(leader, grace_ms)| Command::Promote(Promote { leader, grace_ms })),
        1 => (leader(), 0u64..2_000, 0u64..40, 0u64..8, proptest::option::of(0u64..10)).prop_map(|(leader, grace_ms, started_at, from_lease, to_lease)| Command::PromoteSlice(PromoteSlice { leader, grace_ms, started_at, from_lease, to_lease })),
        2 => due().prop_map(|d| Command::Expire(d.unwrap_or_default())),
        1 => (leader(), res.clone(), 0u64..40, due()).prop_map(|(leader, resource, start_index, due)| Command::EndLockDelay(EndLockDelay { leader, resource, start_index, due })),
        1 => (h, res, proptest::option::of(0u64..12), due()).prop_map(|(header, resource, fencing_token, due)| Command::ForceRelease(ForceRelease { header, resource, fencing_token, due, requested_by: "ops".into(), at_unix_ms: 0 })),
        1 => (leader(), proptest::collection::vec((0u64..4, 0u64..40), 0..3)).prop_map(|(leader, clients)| Command::DropClients(DropClients { leader, clients })),
        1 => (leader(), proptest::collection::vec((0u64..8, 0u64..40, 0u64..5_000), 0..3)).prop_map(|(leader, ls)| Command::Checkpoint(Checkpoint {
            leader,
            leases: ls.into_iter().map(|(lease_id, last_index, remaining_ms)| CheckpointLease { lease_id, last_index, remaining_ms }).collect(),
            lock_delays: vec![],
            waiters: vec![],
        })),
        1 => (leader(), proptest::option::of(0u64..40), 0u64..3_000).prop_map(|(leader, after_index, elapsed_ms)| Command::AdvanceClock(AdvanceClock { leader, after_index, elapsed_ms })),
    ]
}

/// One step: a command, or a command built from the table's current state.
#[derive(Debug, Clone)]
enum Op {
    Cmd(Command),
    /// Expire the n-th live lease (mod count) with its real `last_index`.
    ExpireLive(usize),
    /// End the n-th running lock-delay with its real start index.
    EndDelay(usize),
    /// Time out the n-th waiter.
    TimeOutWaiter(usize),
    /// Release the n-th held resource by its holder, with the right token.
    ReleaseHeld(usize),
    /// End the n-th grant with a max-hold, naming its real token.
    EndMaxHold(usize),
    /// Apply the n-th earlier command again, verbatim (a retry, S7).
    Retry(usize),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        8 => command().prop_map(Op::Cmd),
        2 => any::<usize>().prop_map(Op::ExpireLive),
        1 => any::<usize>().prop_map(Op::EndDelay),
        1 => any::<usize>().prop_map(Op::TimeOutWaiter),
        2 => any::<usize>().prop_map(Op::ReleaseHeld),
        2 => any::<usize>().prop_map(Op::EndMaxHold),
        1 => any::<usize>().prop_map(Op::Retry),
    ]
}

fn set_request_id(cmd: &mut Command, id: u64) {
    let h = match cmd {
        Command::Acquire(a) => &mut a.header,
        Command::AcquireKind(k) => &mut k.acquire.header,
        Command::AcquireMulti(m) => &mut m.acquire.header,
        Command::AcquireBounded(b) => &mut b.acquire.acquire.header,
        Command::Release(r) => &mut r.header,
        Command::LeaseGrant(g) => &mut g.header,
        Command::Revoke(r) => &mut r.header,
        Command::ForceRelease(f) => &mut f.header,
        Command::CancelWait(c) => &mut c.header,
        _ => return,
    };
    h.request_id = id;
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    // S1 (at most one holder of a mutex or a writer, at most N permits, never a
    // writer beside readers: docs/semantics.md "Lock kinds"), S2 (tokens strictly
    // increase per resource and overall), no panic, snapshots round-trip; with
    // max-hold grants and end entries among them ("Max-hold").
    #[test]
    fn random_commands_keep_s1_and_s2(ops in proptest::collection::vec((op(), leader()), 1..120)) {
        let mut t = LockTable::new();
        let mut applied: Vec<Command> = Vec::new();
        let mut last_token: BTreeMap<String, u64> = BTreeMap::new();
        let mut last_any = 0u64;
        for (i, (op, log_leader)) in ops.iter().enumerate() {
            let index = i as u64 + 1;
            let cmd = match op {
                Op::Cmd(c) => {
                    let mut c = c.clone();
                    set_request_id(&mut c, index);
                    c
                }
                Op::ExpireLive(n) => {
                    let live: Vec<_> = t.leases().map(|l| DueLease { lease_id: l.lease_id, last_index: l.last_index }).collect();
                    let leases = if live.is_empty() { vec![] } else { vec![live[n % live.len()]] };
                    Command::Expire(DueList { leader: *log_leader, leases, waiters: vec![] })
                }
                Op::EndDelay(n) => {
                    let d = t.lock_delays();
                    match d.get(n % d.len().max(1)) {
                        Some(v) => Command::EndLockDelay(EndLockDelay { leader: *log_leader, resource: v.resource.clone(), start_index: v.start_index, due: None }),
                        None => Command::Noop,
                    }
                }
                Op::TimeOutWaiter(n) => {
                    let w = t.all_waiters();
                    let waiters = match w.get(n % w.len().max(1)) {
                        Some((resource, v, _)) => vec![DueWaiter { resource: resource.clone(), lease_id: v.lease_id, enqueue_index: v.enqueue_index }],
                        None => vec![],
                    };
                    Command::Expire(DueList { leader: *log_leader, leases: vec![], waiters })
                }
                Op::ReleaseHeld(n) => {
                    let held: Vec<_> = RESOURCES.iter().flat_map(|r| t.holders(r).into_iter().map(move |h| (*r, h))).collect();
                    match held.get(n % held.len().max(1)) {
                        Some((r, h)) => release(hdr(9, index), Some(r), h.lease_id, Some(h.fencing_token)),
                        None => Command::Noop,
                    }
                }
                Op::EndMaxHold(n) => {
                    let m: Vec<_> = t.max_holds().collect();
                    match m.get(n % m.len().max(1)) {
                        Some(v) => Command::EndMaxHold(EndMaxHold { leader: *log_leader, grants: vec![v.grant()], due: None }),
                        None => Command::Noop,
                    }
                }
                Op::Retry(n) => applied.get(n % applied.len().max(1)).cloned().unwrap_or(Command::Noop),
            };
            applied.push(cmd.clone());
            let out = t.apply(index, *log_leader, &cmd);
            // "Max-hold": an end entry frees only a grant it names with its
            // current token, and only with reason max_hold.
            if let Command::EndMaxHold(e) = &cmd {
                for fx in &out.effects {
                    if let Effect::Freed { resource, lease_id, fencing_token, reason: crate::effect::FreeReason::MaxHold } = fx {
                        prop_assert!(e.leader == *log_leader);
                        prop_assert!(e.grants.iter().any(|g| &g.resource == resource && g.lease_id == *lease_id && g.fencing_token == *fencing_token));
                    }
                }
            }
            // Every grant with a max-hold is a current grant with that token.
            for v in t.max_holds() {
                prop_assert!(t.holders(&v.resource).iter().any(|h| h.lease_id == v.lease_id && h.fencing_token == v.max_hold.fencing_token));
            }
            prop_assert_eq!(t.check_invariants(), Ok(()));
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
                let holders = t.holders(r);
                for h in &holders {
                    prop_assert!(t.lease(h.lease_id).is_some(), "holder lease is live");
                    prop_assert!(h.fencing_token < t.next_token());
                }
                // At most N permits; never a writer beside a reader; one
                // holder of a mutex.
                match t.kind(r) {
                    Some(LockKind::Semaphore { limit }) => prop_assert!(holders.len() <= limit as usize),
                    Some(LockKind::ReadWrite) => prop_assert!(holders.len() <= 1 || holders.iter().all(|h| h.mode == Mode::Shared)),
                    _ => prop_assert!(holders.len() <= 1),
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
                            let h = t.holder(r);
                            prop_assert!(h.as_ref().is_some_and(|h| h.lease_id == m.lease_id && h.grant_index == gi && h.mode == Mode::Exclusive), "{:?} of {:?}", h, m);
                            prop_assert_eq!(t.holders(r).len(), 1);
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
    }

    // S1, S2 and S8's FIFO with packed entries (`Command::Batch`): random groups of
    // commands packed into one entry keep every invariant, tokens keep growing, and each
    // entry equals its commands applied one by one at its index.
    #[test]
    fn random_batches_keep_s1_s2_and_equal_one_by_one(
        groups in proptest::collection::vec((proptest::collection::vec(command(), 1..6), leader()), 1..40)
    ) {
        let mut packed = LockTable::new();
        let mut single = LockTable::new();
        let mut last_any = 0u64;
        for (i, (group, log_leader)) in groups.iter().enumerate() {
            let index = i as u64 + 1;
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
            let out = packed.apply(index, *log_leader, &Command::Batch(cmds.clone()));
            prop_assert_eq!(packed.check_invariants(), Ok(()));
            let mut responses = Vec::new();
            let mut effects = Vec::new();
            for c in &cmds {
                let one = single.apply(index, *log_leader, c);
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

/// A client command without a due list (so every effect is the command's own).
fn client_command() -> impl Strategy<Value = Command> {
    let h = (1u64..6).prop_map(|c| hdr(c, 1));
    let key = proptest::sample::select(keys());
    let lease = prop_oneof![
        Just(1_000u64).prop_map(|t| LeaseSpec::New { ttl_ms: t }),
        (1u64..10).prop_map(|l| LeaseSpec::Existing { lease_id: l }),
    ];
    prop_oneof![
        6 => (h.clone(), key.clone(), lease, prop_oneof![Just(0u64), Just(10_000)], prop_oneof![Just(0u64), Just(500)])
            .prop_map(|(header, resource, lease, wait_timeout_ms, lock_delay_ms)| Command::Acquire(Acquire { header, resource, lease, wait_timeout_ms, lock_delay_ms, due: None })),
        3 => (h.clone(), proptest::option::of(key.clone()), 1u64..10, proptest::option::of(1u64..12))
            .prop_map(|(header, resource, lease_id, fencing_token)| Command::Release(Release { header, resource, lease_id, fencing_token, due: None })),
        2 => h.clone().prop_map(|header| Command::LeaseGrant(LeaseGrant { header, ttl_ms: 2_000 })),
        2 => (h.clone(), 1u64..10).prop_map(|(header, lease_id)| Command::Revoke(Revoke { header, lease_id, due: None })),
        1 => (key.clone(), 1u64..10, proptest::option::of(1u64..12)).prop_map(|(resource, lease_id, fencing_token)| Command::Proclaim(Proclaim { resource, lease_id, fencing_token, value: "v".into() })),
        1 => (h, key).prop_map(|(header, resource)| Command::ForceRelease(ForceRelease { header, resource, fencing_token: None, due: None, requested_by: "ops".into(), at_unix_ms: 0 })),
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
    /// Any command wrapped by `CALLERS[i]`, due lists and leader duties
    /// included (checked for invariants and panics only).
    WrappedRaw(usize, Command),
    /// An unwrapped (legacy) client command.
    Legacy(Command),
    /// An auth change by root, or by `CALLERS[i]`.
    Change(Option<usize>, crate::types::AuthOp),
    /// Leader duties with the table's real values.
    ExpireLive(usize),
    EndDelay(usize),
    TimeOutWaiter(usize),
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
        2 => any::<usize>().prop_map(IdOp::ExpireLive),
        1 => any::<usize>().prop_map(IdOp::EndDelay),
        1 => any::<usize>().prop_map(IdOp::TimeOutWaiter),
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
        | Effect::LeaseCapped { lease_id, .. }
        | Effect::LeaseGraced { lease_id, .. }
        | Effect::LeaseEnded { lease_id, .. }
        | Effect::Granted { lease_id, .. }
        | Effect::Freed { lease_id, .. }
        | Effect::Queued { lease_id, .. }
        | Effect::WaiterRemoved { lease_id, .. }
        | Effect::WaitCapped { lease_id, .. }
        | Effect::Proclaimed { lease_id, .. } => Some(*lease_id),
        // A max-hold's start and end ride with a `Granted` or `Freed` of
        // the same lease, which is checked.
        Effect::LockDelayStarted { .. }
        | Effect::MaxHoldStarted { .. }
        | Effect::MaxHoldCapped { .. }
        | Effect::MaxHoldEnded { .. }
        | Effect::LockDelayCapped { .. }
        | Effect::LockDelayEnded { .. }
        | Effect::AuthChanged { .. }
        | Effect::ClockAdvanced { .. } => None,
    }
}

/// Checks that the effects of a command by `caller` touch no lease owned by
/// another principal, except a hand-off to that lease's waiter (it asked) and
/// the removal of its waiter whose permission was revoked (an admin's act),
/// with the end of an acquire-made lease left with nothing by that removal.
fn touches_only_own_leases(
    caller: Option<&str>,
    before: &BTreeMap<LeaseId, crate::table::LeaseRecord>,
    t: &LockTable,
    effects: &[Effect],
) -> Result<(), String> {
    use crate::effect::{LeaseEndReason, WaiterRemovedReason};
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
        if t.lease(*id) != Some(l) {
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
    // principal P ever changes a lease owned by Q (except ForceRelease by an
    // admin, leader duties and hand-offs), a refused wrapped command changes
    // nothing, and snapshots round-trip.
    #[test]
    fn principals_never_change_each_others_leases(ops in proptest::collection::vec(id_op(), 1..150)) {
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
            let out = t.apply(n, L1, &as_("root", change(hdr(9, n), op)));
            prop_assert_eq!(out.response, Response::AuthChanged);
        }
        let mut applied: Vec<Command> = Vec::new();
        for (i, op) in ops.iter().enumerate() {
            let index = base + i as u64 + 1;
            // (the command, its caller when it is checked for ownership)
            let (cmd, checked): (Command, Option<Option<&str>>) = match op {
                IdOp::Wrapped(p, c) => {
                    let mut c = c.clone();
                    set_request_id(&mut c, index);
                    (wrap(*p, c), Some(CALLERS[*p]))
                }
                IdOp::AcquireOwn(p, k, n, wait) => {
                    let own: Vec<LeaseId> = t.leases().filter(|l| l.owner.as_ref().map(Principal::as_str) == CALLERS[*p]).map(|l| l.lease_id).collect();
                    let lease = match own.get(n % own.len().max(1)) {
                        Some(id) => LeaseSpec::Existing { lease_id: *id },
                        None => LeaseSpec::New { ttl_ms: 1_000 },
                    };
                    let wait_timeout_ms = if *wait { 10_000 } else { 0 };
                    let c = Command::Acquire(Acquire { header: hdr(8, index), resource: keys()[*k].clone(), lease, wait_timeout_ms, lock_delay_ms: 0, due: None });
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
                IdOp::ExpireLive(n) => {
                    let live: Vec<_> = t.leases().map(|l| DueLease { lease_id: l.lease_id, last_index: l.last_index }).collect();
                    let leases = if live.is_empty() { vec![] } else { vec![live[n % live.len()]] };
                    (Command::Expire(DueList { leader: L1, leases, waiters: vec![] }), None)
                }
                IdOp::EndDelay(n) => {
                    let d = t.lock_delays();
                    match d.get(n % d.len().max(1)) {
                        Some(v) => (Command::EndLockDelay(EndLockDelay { leader: L1, resource: v.resource.clone(), start_index: v.start_index, due: None }), None),
                        None => (Command::Noop, None),
                    }
                }
                IdOp::TimeOutWaiter(n) => {
                    let w = t.all_waiters();
                    let waiters = match w.get(n % w.len().max(1)) {
                        Some((resource, v, _)) => vec![DueWaiter { resource: resource.clone(), lease_id: v.lease_id, enqueue_index: v.enqueue_index }],
                        None => vec![],
                    };
                    (Command::Expire(DueList { leader: L1, leases: vec![], waiters }), None)
                }
                IdOp::ReleaseHeld(n, p) => {
                    let held: Vec<_> = keys().into_iter().filter_map(|r| t.holder(&r).map(|h| (r, h))).collect();
                    match held.get(n % held.len().max(1)) {
                        Some((r, h)) => (wrap(*p, release(hdr(7, index), Some(r), h.lease_id, Some(h.fencing_token))), Some(CALLERS[*p])),
                        None => (Command::Noop, None),
                    }
                }
                IdOp::Retry(n) => {
                    let c = applied.get(n % applied.len().max(1)).cloned().unwrap_or(Command::Noop);
                    (c, None)
                }
            };
            let mut cmd = cmd;
            if let IdOp::Change(..) = op {
                set_request_id_deep(&mut cmd, index);
            }
            applied.push(cmd.clone());
            let before: BTreeMap<LeaseId, crate::table::LeaseRecord> =
                t.leases().map(|l| (l.lease_id, l.clone())).collect();
            let admin = |t: &LockTable, caller: Option<&str>| {
                t.allows(caller, Permission::Admin, crate::auth::Target::Prefix(""))
            };
            let was_admin = checked.map(|c| admin(&t, c));
            let out = t.apply(index, L1, &cmd);
            prop_assert_eq!(t.check_invariants(), Ok(()), "after {:?}", cmd);
            // Every grant a wrapped command or a hand-off makes goes to a
            // lease whose owner has lock on the resource at this index.
            let wrapped = matches!(cmd, Command::Authorized(_));
            let mut handed: Vec<(LeaseId, &str)> = Vec::new();
            for e in &out.effects {
                match e {
                    Effect::WaiterRemoved { resource, lease_id, reason: crate::effect::WaiterRemovedReason::Granted, .. } => handed.push((*lease_id, resource)),
                    Effect::Granted { resource, lease_id, .. } if wrapped || handed.contains(&(*lease_id, resource.as_str())) => {
                        if let Some(l) = t.lease(*lease_id).or_else(|| before.get(lease_id)) {
                            let owner = l.owner.as_ref().map(Principal::as_str);
                            prop_assert!(
                                t.allows(owner, Permission::Lock, crate::auth::Target::Resource(resource)),
                                "{:?} granted {} without lock", owner, resource
                            );
                        }
                    }
                    _ => {}
                }
            }
            if let Some(caller) = checked {
                let forced = matches!(&cmd, Command::Authorized(w) if matches!(*w.command, Command::ForceRelease(_)));
                if !(forced && was_admin == Some(true)) {
                    let r = touches_only_own_leases(caller, &before, &t, &out.effects);
                    prop_assert!(r.is_ok(), "{:?} by {:?}: {:?}", cmd, caller, r);
                }
                if matches!(&out.response, Response::Error(_)) {
                    prop_assert!(out.effects.is_empty(), "a refusal changed something: {:?}", out.effects);
                }
            }
        }
        let bytes = t.to_snapshot();
        let back = LockTable::from_snapshot(&bytes);
        prop_assert_eq!(back.as_ref().map(|b| b.to_snapshot()), Ok(bytes));
        prop_assert_eq!(back.as_ref().ok(), Some(&t));
    }
}
