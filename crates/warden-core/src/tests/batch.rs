//! `Command::Batch`: several client commands packed into one entry.

use super::*;
use crate::effect::Effect;
use crate::limits::MAX_BATCH_COMMANDS;

fn batch(cmds: Vec<Command>) -> Command {
    Command::Batch(cmds)
}

fn responses(a: &Applied) -> &[Response] {
    match &a.response {
        Response::Batch(rs) => rs,
        other => panic!("expected a batch response, got {other:?}"),
    }
}

fn one(r: &Response) -> Applied {
    Applied {
        response: r.clone(),
        effects: vec![],
    }
}

// S1/S2/S8 in one entry: a batch applies each command in order at its own log index,
// each with its own response; later commands see what earlier ones did.
#[test]
fn batch_applies_each_command_in_order_with_its_own_response() {
    let mut log = Log::new();
    let a = log.apply(batch(vec![
        acquire(hdr(1, 1), "a", new_lease(5_000), 0, 0),
        acquire(hdr(2, 1), "b", new_lease(5_000), 0, 0),
        // Sees the grant of "a" made just before it in this entry: queued.
        acquire(hdr(3, 1), "a", new_lease(5_000), 10_000, 0),
        // Try-lock of "b": held by lease 2, granted by this same entry.
        acquire(hdr(4, 1), "b", new_lease(5_000), 0, 0),
    ]));
    let rs = responses(&a);
    assert_eq!(rs.len(), 4);
    assert_eq!(granted(&one(&rs[0])), (1, 1));
    assert_eq!(granted(&one(&rs[1])), (2, 2));
    match &rs[2] {
        Response::Acquire(AcquireReply {
            outcome:
                AcquireOutcome::Queued {
                    lease_id: 3,
                    position: 1,
                    enqueue_index: 1,
                    ..
                },
            ..
        }) => {}
        other => panic!("{other:?}"),
    }
    match &rs[3] {
        Response::Acquire(AcquireReply {
            outcome:
                AcquireOutcome::NotGranted {
                    holder_lease_id: Some(2),
                    reason: NotGrantedReason::Held,
                    ..
                },
            ..
        }) => {}
        other => panic!("{other:?}"),
    }
    // Every grant of the entry carries the entry's index.
    let grants: Vec<_> = a
        .effects
        .iter()
        .filter_map(|e| match e {
            Effect::Granted {
                resource,
                fencing_token,
                grant_index,
                ..
            } => Some((resource.as_str(), *fencing_token, *grant_index)),
            _ => None,
        })
        .collect();
    assert_eq!(grants, vec![("a", 1, 1), ("b", 2, 1)]);
    // The next entry: lease 1 releases "a", the waiter (enqueued at index 1)
    // is granted at index 2 with a fresh token (S2), and in the same batch
    // lease 3's own release of it frees it again.
    let b = log.apply(batch(vec![
        release(hdr(1, 2), Some("a"), 1, Some(1)),
        release(hdr(3, 2), Some("a"), 3, None),
    ]));
    let rs = responses(&b);
    assert!(matches!(
        rs[0],
        Response::Released {
            lease_id: 1,
            fencing_token: 1,
            ..
        }
    ));
    assert!(matches!(
        rs[1],
        Response::Released {
            lease_id: 3,
            fencing_token: 3,
            ..
        }
    ));
    assert!(log.t.holder("a").is_none());
    assert_eq!(log.t.next_token(), 4);
}

// Definition of Batch (S1, S3: every replica computes the same): a batch at index i
// gives the same table, responses and effects as its commands applied one by one at i.
#[test]
fn batch_equals_its_commands_applied_one_by_one_at_the_same_index() {
    let cmds = vec![
        acquire(hdr(1, 1), "x", new_lease(5_000), 0, 0),
        acquire(hdr(2, 1), "x", new_lease(5_000), 60_000, 0),
        release(hdr(1, 2), Some("x"), 1, None),
        release(hdr(9, 1), Some("nope"), 42, None),
        acquire(hdr(3, 1), "y", new_lease(5_000), 0, 0),
    ];
    let mut packed = LockTable::new();
    let a = packed.apply(1, L1, stamp(L1, 0), &batch(cmds.clone()));
    let mut single = LockTable::new();
    let mut rs = Vec::new();
    let mut fx = Vec::new();
    for c in &cmds {
        let one = single.apply(1, L1, stamp(L1, 0), c);
        rs.push(one.response);
        fx.extend(one.effects);
    }
    assert_eq!(a.response, Response::Batch(rs));
    assert_eq!(a.effects, fx);
    assert_eq!(packed.to_snapshot(), single.to_snapshot());
    assert_eq!(packed.check_invariants(), Ok(()));
}

// S6 / "What bad input gets": an inner command that is refused changes nothing and
// does not fail or undo the others.
#[test]
fn a_refused_inner_command_changes_nothing_and_the_others_apply() {
    let mut with = Log::new();
    let a = with.apply(batch(vec![
        acquire(hdr(1, 1), "p", new_lease(5_000), 0, 0),
        // Unknown lease: NotFound.
        release(hdr(2, 1), Some("p"), 77, None),
        // Wrong token for lease 1's grant of "p": FailedPrecondition (S6).
        release(hdr(3, 1), Some("p"), 1, Some(999)),
        // Invalid TTL: InvalidArgument, no lease id consumed.
        acquire(hdr(4, 1), "q", new_lease(5), 0, 0),
        acquire(hdr(5, 1), "r", new_lease(5_000), 0, 0),
    ]));
    let rs = responses(&a);
    assert_eq!(granted(&one(&rs[0])), (1, 1));
    let code = |r: &Response| match r {
        Response::Error(e) => (e.code, e.field.clone()),
        other => panic!("expected an error, got {other:?}"),
    };
    assert_eq!(code(&rs[1]), (ErrorCode::NotFound, Some("lease_id".into())));
    assert_eq!(
        code(&rs[2]),
        (ErrorCode::FailedPrecondition, Some("fencing_token".into()))
    );
    assert_eq!(
        code(&rs[3]),
        (ErrorCode::InvalidArgument, Some("ttl_ms".into()))
    );
    assert_eq!(granted(&one(&rs[4])), (2, 2));
    // The lock state is exactly that of the two good commands alone.
    let mut without = Log::new();
    without.apply(batch(vec![
        acquire(hdr(1, 1), "p", new_lease(5_000), 0, 0),
        acquire(hdr(5, 1), "r", new_lease(5_000), 0, 0),
    ]));
    assert_eq!(lock_state(&with.t), lock_state(&without.t));
    assert_eq!(with.t.holder("p").map(|h| h.fencing_token), Some(1));
}

// S7: a retried inner command (same client and request id) gets its recorded outcome,
// in a later batch or in the same one, and executes once.
#[test]
fn a_retried_inner_command_gets_its_recorded_outcome() {
    let mut log = Log::new();
    let a = log.apply(batch(vec![
        acquire(hdr(1, 1), "k", new_lease(5_000), 0, 0),
        // The same request again in the same entry (a client retry that
        // queued with its first attempt).
        acquire(hdr(1, 1), "k", new_lease(5_000), 0, 0),
    ]));
    let rs = responses(&a);
    let first = match &rs[0] {
        Response::Acquire(r) => r.clone(),
        other => panic!("{other:?}"),
    };
    assert!(!first.retried);
    match &rs[1] {
        Response::Acquire(r) => {
            assert!(r.retried);
            assert_eq!(r.outcome, first.outcome);
            assert_eq!(r.current_token, Some(1));
        }
        other => panic!("{other:?}"),
    }
    let grants = |a: &Applied| {
        a.effects
            .iter()
            .filter(|e| matches!(e, Effect::Granted { .. }))
            .count()
    };
    assert_eq!(grants(&a), 1, "executed once");
    let b = log.apply(batch(vec![
        acquire(hdr(2, 1), "k2", new_lease(5_000), 0, 0),
        acquire(hdr(1, 1), "k", new_lease(5_000), 0, 0),
        // Same id, other arguments: InvalidArgument, nothing changes.
        acquire(hdr(1, 1), "other", new_lease(5_000), 0, 0),
    ]));
    let rs = responses(&b);
    match &rs[1] {
        Response::Acquire(r) => {
            assert!(r.retried);
            assert_eq!(r.outcome, first.outcome);
        }
        other => panic!("{other:?}"),
    }
    match &rs[2] {
        Response::Error(e) => {
            assert_eq!(e.code, ErrorCode::InvalidArgument);
            assert_eq!(e.field.as_deref(), Some("request_id"));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(grants(&b), 1, "only k2 is new");
    assert!(log.t.holder("other").is_none());
    assert_eq!(log.t.next_lease_id(), 3);
}

// "What bad input gets": a nested, empty or too-long batch is refused whole with an
// InvalidArgument naming the field and the limit; nothing changes.
#[test]
fn nested_empty_or_too_long_batches_are_refused() {
    let mut log = Log::new();
    log.apply(acquire(hdr(1, 1), "held", new_lease(5_000), 0, 0));
    let before = log.t.to_snapshot();
    let refused = |log: &mut Log, cmd: Command, needle: &str| {
        let a = log.apply(cmd);
        match &a.response {
            Response::Error(e) => {
                assert_eq!(e.code, ErrorCode::InvalidArgument);
                assert_eq!(e.field.as_deref(), Some("commands"));
                assert!(e.message.contains(needle), "{}", e.message);
            }
            other => panic!("{other:?}"),
        }
        assert!(a.effects.is_empty());
    };
    refused(
        &mut log,
        batch(vec![
            acquire(hdr(2, 1), "a", new_lease(5_000), 0, 0),
            batch(vec![acquire(hdr(3, 1), "b", new_lease(5_000), 0, 0)]),
        ]),
        "must not hold a batch",
    );
    refused(&mut log, batch(vec![]), "1..=256");
    let long: Vec<Command> = (1..=MAX_BATCH_COMMANDS as u64 + 1)
        .map(|i| acquire(hdr(100 + i, 1), &format!("r{i}"), new_lease(5_000), 0, 0))
        .collect();
    refused(&mut log, batch(long), "MAX_BATCH_COMMANDS");
    // Not even the first command of a refused batch applied, nor was any
    // outcome recorded.
    assert_eq!(log.t.to_snapshot(), before);
    // The limit itself is accepted.
    let full: Vec<Command> = (1..=MAX_BATCH_COMMANDS as u64)
        .map(|i| acquire(hdr(100 + i, 1), &format!("r{i}"), new_lease(5_000), 0, 0))
        .collect();
    let a = log.apply(batch(full));
    assert_eq!(responses(&a).len(), MAX_BATCH_COMMANDS);
    assert_eq!(log.t.resources_held(), MAX_BATCH_COMMANDS + 1);
}

// S2/S7 across snapshots: after batches, a snapshot restores the same table (tokens,
// waiters enqueued by a batch, outcome records of every inner command).
#[test]
fn snapshot_after_batches_restores_the_same_table() {
    let mut log = Log::new();
    log.apply(batch(vec![
        acquire(hdr(1, 1), "s", new_lease(5_000), 0, 0),
        acquire(hdr(2, 1), "s", new_lease(5_000), 30_000, 0),
        acquire(hdr(3, 1), "s", new_lease(5_000), 30_000, 0),
    ]));
    log.apply(batch(vec![
        release(hdr(1, 2), Some("s"), 1, None),
        acquire(hdr(4, 1), "t", new_lease(5_000), 0, 0),
    ]));
    let bytes = log.t.to_snapshot();
    let restored = LockTable::from_snapshot(&bytes).expect("snapshot loads");
    assert_eq!(restored, log.t);
    assert_eq!(restored.to_snapshot(), bytes);
    // Lease 2 was handed "s" at index 2; lease 3 still waits from index 1.
    let h = restored.holder("s").expect("held");
    assert_eq!((h.lease_id, h.grant_index), (2, 2));
    assert!(restored.has_waiter("s", 3, 1));
    // Each inner command's outcome survived: a retry of client 3's acquire
    // is answered from the table, not executed again.
    let mut t = restored;
    let a = t.apply(
        3,
        L1,
        stamp(L1, 0),
        &acquire(hdr(3, 1), "s", new_lease(5_000), 30_000, 0),
    );
    match a.response {
        Response::Acquire(r) => assert!(r.retried),
        other => panic!("{other:?}"),
    }
    assert!(a.effects.is_empty());
}

// S7 with the per-client outcome cap (a review of packing): one entry packing more
// commands of one client than MAX_OUTCOMES_PER_CLIENT executes each exactly once, each
// with its own response; afterwards a retry of the oldest (its outcome dropped by the
// cap) is refused RequestExpired, never executed again, and a retry of the newest is
// answered from the table: exactly what the same commands in entries of their own do.
#[test]
fn more_commands_of_one_client_than_its_outcome_cap_in_one_entry_execute_once() {
    use crate::limits::MAX_OUTCOMES_PER_CLIENT;
    let n = MAX_OUTCOMES_PER_CLIENT as u64 + 6;
    let cmds: Vec<Command> = (1..=n)
        .map(|i| acquire(hdr(1, i), &format!("cap-{i}"), new_lease(5_000), 0, 0))
        .collect();
    let mut packed = Log::new();
    let a = packed.apply(batch(cmds.clone()));
    let rs = responses(&a);
    assert_eq!(rs.len() as u64, n);
    let mut tokens = std::collections::BTreeSet::new();
    for r in rs {
        match r {
            Response::Acquire(r) => {
                assert!(!r.retried, "{r:?}");
                match &r.outcome {
                    AcquireOutcome::Granted { fencing_token, .. } => {
                        assert!(tokens.insert(*fencing_token));
                    }
                    other => panic!("{other:?}"),
                }
            }
            other => panic!("{other:?}"),
        }
    }
    // The same commands one entry each.
    let mut alone = Log::new();
    for c in &cmds {
        alone.apply(c.clone());
    }
    let rec = |l: &Log| l.t.outcomes.client(1).cloned();
    assert_eq!(
        rec(&packed).map(|r| (r.floor, r.outcomes.len())),
        rec(&alone).map(|r| (r.floor, r.outcomes.len()))
    );
    // Retry of request 1: its outcome was dropped by the cap.
    let before = packed.t.next_lease_id();
    match &packed.apply(cmds[0].clone()).response {
        Response::Error(e) => assert_eq!(e.code, ErrorCode::RequestExpired, "{e:?}"),
        other => panic!("request 1 ran again: {other:?}"),
    }
    // Retry of request n: replayed.
    match &packed.apply(cmds[cmds.len() - 1].clone()).response {
        Response::Acquire(r) => assert!(r.retried, "{r:?}"),
        other => panic!("{other:?}"),
    }
    assert_eq!(packed.t.next_lease_id(), before, "nothing executed again");
}
