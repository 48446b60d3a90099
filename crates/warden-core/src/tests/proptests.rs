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

fn command() -> impl Strategy<Value = Command> {
    // The request id is replaced by the entry's position at apply time (see `Op`).
    let h = (1u64..4).prop_map(|c| hdr(c, 1));
    let res = proptest::sample::select(RESOURCES.to_vec()).prop_map(str::to_owned);
    prop_oneof![
        8 => (h.clone(), res.clone(), prop_oneof![prop_oneof![Just(999u64), Just(1_000), Just(2_000)].prop_map(|t| LeaseSpec::New { ttl_ms: t }), (0u64..8).prop_map(|l| LeaseSpec::Existing { lease_id: l })], prop_oneof![3 => Just(0u64), 3 => Just(10_000), 1 => Just(u64::MAX)], prop_oneof![Just(0u64), Just(500)], due())
            .prop_map(|(header, resource, lease, wait_timeout_ms, lock_delay_ms, due)| Command::Acquire(Acquire { header, resource, lease, wait_timeout_ms, lock_delay_ms, due })),
        3 => (h.clone(), proptest::option::of(res.clone()), 0u64..8, proptest::option::of(0u64..12), due())
            .prop_map(|(header, resource, lease_id, fencing_token, due)| Command::Release(Release { header, resource, lease_id, fencing_token, due })),
        1 => proptest::collection::vec(0u64..8, 0..4).prop_map(|lease_ids| Command::RenewBatch(RenewBatch { lease_ids })),
        1 => (h.clone(), 500u64..5_000).prop_map(|(header, ttl_ms)| Command::LeaseGrant(LeaseGrant { header, ttl_ms })),
        1 => (h.clone(), 0u64..8, due()).prop_map(|(header, lease_id, due)| Command::Revoke(Revoke { header, lease_id, due })),
        1 => (leader(), 0u64..2_000).prop_map(|(leader, grace_ms)| Command::Promote(Promote { leader, grace_ms })),
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
        _ => return,
    };
    h.request_id = id;
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    // S1 (at most one holder), S2 (tokens strictly increase per resource and overall), no panic, snapshots round-trip.
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
                    let held: Vec<_> = RESOURCES.iter().filter_map(|r| t.holder(r).map(|h| (*r, h))).collect();
                    match held.get(n % held.len().max(1)) {
                        Some((r, h)) => release(hdr(9, index), Some(r), h.lease_id, Some(h.fencing_token)),
                        None => Command::Noop,
                    }
                }
                Op::Retry(n) => applied.get(n % applied.len().max(1)).cloned().unwrap_or(Command::Noop),
            };
            applied.push(cmd.clone());
            let out = t.apply(index, *log_leader, &cmd);
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
                if let Some(h) = t.holder(r) {
                    prop_assert!(t.lease(h.lease_id).is_some(), "holder lease is live");
                    prop_assert!(h.fencing_token < t.next_token());
                }
            }
            prop_assert!(t.next_token() == last_any + 1);
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
