//! Multi-locks (docs/semantics.md "Multi-locks"): several mutexes granted
//! together in one entry with a token each, or none; queued on every
//! resource in one total order; ended whole.

use super::*;
use crate::effect::{Effect, FreeReason, WaiterRemovedReason};
use crate::limits::MAX_MULTI_RESOURCES;

pub(crate) fn multi(
    h: RequestHeader,
    resources: &[&str],
    lease: LeaseSpec,
    wait_ms: u64,
    delay_ms: u64,
) -> Command {
    let resources = resources.iter().map(|r| (*r).to_owned()).collect();
    Command::Acquire(Acquire::multi(h, resources, lease, wait_ms, delay_ms))
}

/// The answer to a multi-lock acquire: its reply and tokens.
fn answer(a: &Applied) -> (&AcquireReply, Vec<(String, FencingToken)>) {
    match &a.response {
        Response::AcquireMulti { reply, grants } => (
            reply,
            grants
                .iter()
                .map(|g| (g.resource.clone(), g.fencing_token))
                .collect(),
        ),
        other => panic!("expected an AcquireMulti answer, got {other:?}"),
    }
}

/// (resource, lease, token) of every grant an entry made, in order.
fn grants_of(a: &Applied) -> Vec<(String, LeaseId, FencingToken)> {
    a.effects
        .iter()
        .filter_map(|e| match e {
            Effect::Granted {
                resource,
                lease_id,
                fencing_token,
                ..
            } => Some((resource.clone(), *lease_id, *fencing_token)),
            _ => None,
        })
        .collect()
}

fn holder(log: &Log, r: &str) -> Option<(LeaseId, FencingToken)> {
    log.t.holder(r).map(|h| (h.lease_id, h.fencing_token))
}

fn queue(log: &Log, r: &str) -> Vec<LeaseId> {
    log.t.waiters(r).iter().map(|w| w.lease_id).collect()
}

// "Multi-locks", S2: free resources are granted together in the acquire's
// own entry, each with its own fresh token, all with one grant index.
#[test]
fn free_resources_are_granted_together_with_a_token_each() {
    let mut log = Log::new();
    let out = log.apply(multi(hdr(1, 1), &["a", "b", "c"], new_lease(10_000), 0, 0));
    let (reply, tokens) = answer(&out);
    assert_eq!(
        tokens,
        vec![("a".into(), 1), ("b".into(), 2), ("c".into(), 3)]
    );
    assert!(matches!(
        reply.outcome,
        AcquireOutcome::Granted { ref resource, lease_id: 1, fencing_token: 1, grant_index: 1, .. } if resource == "a"
    ));
    for (r, t) in [("a", 1), ("b", 2), ("c", 3)] {
        let h = log.t.holder(r).expect("held");
        assert_eq!((h.lease_id, h.fencing_token, h.grant_index), (1, t, 1));
    }
    let view = log.t.multi_lock(1, "b").expect("the multi-grant");
    assert_eq!(view.grant_index, Some(1));
    assert_eq!(view.resources, vec!["a", "b", "c"]);
}

// "Multi-locks": all or none. A try-lock multi-lock with one resource held
// is not granted (naming that resource and its holder), and nothing changes:
// the free resources are not taken.
#[test]
fn a_try_lock_multi_lock_takes_nothing_when_one_resource_is_held() {
    let mut log = Log::new();
    log.apply(acquire(hdr(1, 1), "b", new_lease(10_000), 0, 0));
    let before = lock_state(&log.t);
    let out = log.apply(multi(hdr(2, 1), &["a", "b"], new_lease(10_000), 0, 0));
    let (reply, tokens) = answer(&out);
    assert!(tokens.is_empty());
    assert_eq!(
        reply.outcome,
        AcquireOutcome::NotGranted {
            resource: "b".into(),
            holder_lease_id: Some(1),
            reason: NotGrantedReason::Held,
        }
    );
    assert_eq!(lock_state(&log.t), before);
    assert_eq!(holder(&log, "a"), None);
}

// "Multi-locks", S8: a blocked multi-lock queues on every resource; a free
// resource whose head it is stays reserved for it (a try-lock there gets
// `Reserved`, a later waiter queues behind it), and the entry that frees its
// last blocked resource grants all of them, before the later waiter.
#[test]
fn a_blocked_multi_lock_reserves_its_free_resources_and_is_granted_in_the_freeing_entry() {
    let mut log = Log::new();
    log.apply(acquire(hdr(1, 1), "b", new_lease(10_000), 0, 0)); // lease 1, token 1
    let out = log.apply(multi(hdr(2, 1), &["a", "b"], new_lease(10_000), 60_000, 0)); // lease 2
    assert!(matches!(
        answer(&out).0.outcome,
        AcquireOutcome::Queued { ref resource, lease_id: 2, position: 1, .. } if resource == "a"
    ));
    assert_eq!(queue(&log, "a"), vec![2]);
    assert_eq!(queue(&log, "b"), vec![2]);
    assert_eq!(holder(&log, "a"), None, "free, reserved for lease 2");
    // A try-lock on the reserved resource.
    let out = log.apply(acquire(hdr(3, 1), "a", new_lease(10_000), 0, 0));
    let Response::Acquire(reply) = &out.response else {
        panic!("{:?}", out.response)
    };
    assert_eq!(
        reply.outcome,
        AcquireOutcome::NotGranted {
            resource: "a".into(),
            holder_lease_id: None,
            reason: NotGrantedReason::Reserved,
        }
    );
    // A waiting single acquire queues behind it (lease 3).
    let out = log.apply(acquire(hdr(4, 1), "a", new_lease(10_000), 60_000, 0));
    assert!(matches!(
        out.response,
        Response::Acquire(AcquireReply {
            outcome: AcquireOutcome::Queued { position: 2, .. },
            ..
        })
    ));
    // Lease 1 releases b: lease 2 gets a and b in that entry.
    let out = log.apply(release(hdr(1, 2), Some("b"), 1, Some(1)));
    assert_eq!(
        grants_of(&out),
        vec![("a".into(), 2, 2), ("b".into(), 2, 3)]
    );
    let index = log.index;
    for r in ["a", "b"] {
        assert_eq!(log.t.holder(r).expect("held").grant_index, index);
    }
    assert_eq!(queue(&log, "a"), vec![3], "the single waiter still waits");
    assert_eq!(queue(&log, "b"), Vec::<LeaseId>::new());
    // Releasing the multi-grant (naming b) frees both and hands a on.
    let out = log.apply(release(hdr(2, 2), Some("b"), 2, Some(3)));
    assert_eq!(
        out.response,
        Response::Released {
            resource: "b".into(),
            lease_id: 2,
            fencing_token: 3
        }
    );
    assert_eq!(grants_of(&out), vec![("a".into(), 3, 4)]);
    assert_eq!(holder(&log, "b"), None);
    assert!(log.t.multi_lock(2, "a").is_none());
}

// "Multi-locks": no deadlock. Two multi-locks naming the same resources in
// opposite orders wait in enqueue order: the first enqueued is granted
// whole, then the second, never each holding half.
#[test]
fn two_multi_locks_in_opposite_orders_never_deadlock() {
    let mut log = Log::new();
    log.apply(acquire(hdr(1, 1), "a", new_lease(10_000), 0, 0)); // lease 1 holds a
    log.apply(acquire(hdr(1, 2), "b", on(1), 0, 0)); // and b
    log.apply(multi(hdr(2, 1), &["a", "b"], new_lease(10_000), 60_000, 0)); // lease 2
    log.apply(multi(hdr(3, 1), &["b", "a"], new_lease(10_000), 60_000, 0)); // lease 3
                                                                            // Lease 1 releases a: lease 2 heads a but b is held: nobody gets a.
    let out = log.apply(release(hdr(1, 3), Some("a"), 1, Some(1)));
    assert!(grants_of(&out).is_empty());
    assert_eq!(holder(&log, "a"), None);
    // Releasing b grants lease 2 both; lease 3 still waits on both.
    let out = log.apply(release(hdr(1, 4), Some("b"), 1, Some(2)));
    assert_eq!(
        grants_of(&out),
        vec![("a".into(), 2, 3), ("b".into(), 2, 4)]
    );
    assert_eq!(queue(&log, "a"), vec![3]);
    assert_eq!(queue(&log, "b"), vec![3]);
    let out = log.apply(release(hdr(2, 2), Some("a"), 2, None));
    assert_eq!(
        grants_of(&out),
        vec![("b".into(), 3, 5), ("a".into(), 3, 6)],
        "lease 3's order"
    );
}

// "Multi-locks": a lease that holds or waits on one of the resources is
// refused (FailedPrecondition, field `resources`), nothing changed.
#[test]
fn a_lease_that_holds_or_waits_on_one_of_the_resources_is_refused() {
    let mut log = Log::new();
    log.apply(lease_grant(hdr(1, 1), 10_000)); // lease 1
    log.apply(acquire(hdr(1, 2), "a", on(1), 0, 0));
    log.apply(acquire(hdr(2, 1), "b", new_lease(10_000), 0, 0)); // lease 2 holds b
    log.apply(acquire(hdr(1, 3), "b", on(1), 60_000, 0)); // lease 1 waits on b
    for (i, (names, named)) in [(["c", "a"], "a"), (["b", "c"], "b")].iter().enumerate() {
        let before = lock_state(&log.t);
        let out = log.apply(multi(hdr(1, 4 + i as u64), names, on(1), 60_000, 0));
        let e = refused(&out.response);
        assert_eq!(
            (e.code, e.field.as_deref()),
            (ErrorCode::FailedPrecondition, Some("resources")),
            "{e:?}"
        );
        assert!(e.message.contains(&format!("{named:?}")), "{e:?}");
        assert_eq!(lock_state(&log.t), before);
    }
}

// "What bad input gets": a duplicate, more than 64 resources or a first
// resource other than the acquire's are refused (InvalidArgument, field
// `resources`, naming the limit), nothing changed. (An empty list is not a
// multi-lock: it is one acquire of `resource`.)
#[test]
fn bad_resource_lists_are_refused_naming_the_field_and_the_limit() {
    let mut log = Log::new();
    let many: Vec<String> = (0..=MAX_MULTI_RESOURCES).map(|i| format!("r{i}")).collect();
    let many: Vec<&str> = many.iter().map(String::as_str).collect();
    let mut wrong_first = multi(hdr(1, 4), &["a", "b"], new_lease(10_000), 0, 0);
    if let Command::Acquire(m) = &mut wrong_first {
        m.resource = "b".into();
    }
    let cases = [
        (
            multi(hdr(1, 2), &["a", "b", "a"], new_lease(10_000), 0, 0),
            "twice",
        ),
        (multi(hdr(1, 3), &many, new_lease(10_000), 0, 0), "1..=64"),
        (wrong_first, "first"),
        (multi(hdr(1, 5), &["a", ""], new_lease(10_000), 0, 0), "512"),
    ];
    for (cmd, says) in cases {
        let before = lock_state(&log.t);
        let out = log.apply(cmd);
        let e = refused(&out.response);
        assert_eq!(
            (e.code, e.field.as_deref()),
            (ErrorCode::InvalidArgument, Some("resources"))
        );
        assert!(e.message.contains(says), "{e:?} should say {says}");
        assert_eq!(lock_state(&log.t), before);
    }
    // 64 is allowed.
    let ok: Vec<String> = (0..MAX_MULTI_RESOURCES).map(|i| format!("r{i}")).collect();
    let ok: Vec<&str> = ok.iter().map(String::as_str).collect();
    let out = log.apply(multi(hdr(1, 6), &ok, new_lease(10_000), 0, 0));
    assert_eq!(answer(&out).1.len(), 64);
}

// "Multi-locks", "Lock kinds": a multi-lock takes mutexes only; a resource
// of another kind is refused (FailedPrecondition, field `kind`, naming it).
#[test]
fn a_resource_of_another_kind_is_refused_naming_the_kind() {
    let mut log = Log::new();
    log.apply(acquire_kind(
        hdr(1, 1),
        "rw",
        new_lease(10_000),
        0,
        0,
        LockKind::ReadWrite,
        Mode::Shared,
    ));
    let before = lock_state(&log.t);
    let out = log.apply(multi(hdr(2, 1), &["a", "rw"], new_lease(10_000), 0, 0));
    let e = refused(&out.response);
    assert_eq!(
        (e.code, e.field.as_deref()),
        (ErrorCode::FailedPrecondition, Some("kind"))
    );
    assert!(e.message.contains("read-write lock"), "{e:?}");
    assert_eq!(lock_state(&log.t), before);
}

// "Multi-locks", S8, lock-delay: the expiry of a multi-grant's lease frees
// every resource in that entry; each with a lock-delay starts its own, and a
// resource without one is handed to its waiter at once.
#[test]
fn expiry_frees_every_resource_with_a_lock_delay_each() {
    let mut log = Log::new();
    log.apply(multi(hdr(1, 1), &["a", "b"], new_lease(10_000), 0, 2_000)); // lease 1
    log.apply(acquire(hdr(2, 1), "b", new_lease(30_000), 60_000, 0)); // lease 2 waits
    let out = log.expire(1);
    let freed: Vec<(String, FreeReason)> = out
        .effects
        .iter()
        .filter_map(|e| match e {
            Effect::Freed {
                resource, reason, ..
            } => Some((resource.clone(), *reason)),
            _ => None,
        })
        .collect();
    assert_eq!(
        freed,
        vec![
            ("a".into(), FreeReason::Expired),
            ("b".into(), FreeReason::Expired)
        ]
    );
    assert_eq!(
        log.t.lock_delay("a").expect("a delayed").lock_delay_ms,
        2_000
    );
    assert_eq!(
        log.t.lock_delay("b").expect("b delayed").lock_delay_ms,
        2_000
    );
    assert!(grants_of(&out).is_empty(), "b is in lock-delay");
    assert_eq!(queue(&log, "b"), vec![2]);
    // Both delays count from the lease's end (10 s) and end at 12 s.
    assert_eq!(log.t.lock_delay("b").map(|d| d.ends_at_ms), Some(12_000));
    assert!(grants_of(&log.tick_at(11_999)).is_empty());
    let out = log.tick_at(12_000);
    assert_eq!(grants_of(&out), vec![("b".into(), 2, 3)]);
}

// "Multi-locks", S6, audit: a forced release of one resource ends the whole
// multi-grant, with one audit record per resource freed.
#[test]
fn a_forced_release_of_one_resource_ends_the_whole_multi_grant() {
    let mut log = Log::new();
    log.apply(multi(hdr(1, 1), &["a", "b", "c"], new_lease(10_000), 0, 0));
    log.apply(acquire(hdr(2, 1), "c", new_lease(10_000), 60_000, 0)); // lease 2 waits on c
    let out = log.apply(Command::ForceRelease(ForceRelease {
        header: hdr(9, 1),
        resource: "b".into(),
        fencing_token: Some(2),
        requested_by: "ops".into(),
        at_unix_ms: 0,
    }));
    assert_eq!(
        out.response,
        Response::Released {
            resource: "b".into(),
            lease_id: 1,
            fencing_token: 2
        }
    );
    let trail: Vec<(String, FencingToken)> = log
        .t
        .audit_trail()
        .map(|r| (r.resource.clone(), r.fencing_token))
        .collect();
    assert_eq!(
        trail,
        vec![("a".into(), 1), ("b".into(), 2), ("c".into(), 3)]
    );
    assert_eq!(holder(&log, "a"), None);
    assert_eq!(holder(&log, "c"), Some((2, 4)), "handed off in that entry");
    assert!(log.t.lease(1).is_none(), "its acquire-made lease is gone");
}

// "Multi-locks", S8: a wait timeout (or a cancel) on one of its resources
// takes the multi-lock out of every queue, and the waiter behind it on
// another resource is granted in that entry.
#[test]
fn a_timed_out_multi_lock_leaves_every_queue() {
    let mut log = Log::new();
    log.apply(acquire(hdr(1, 1), "b", new_lease(10_000), 0, 0)); // lease 1 holds b
    log.apply(multi(hdr(2, 1), &["a", "b"], new_lease(10_000), 5_000, 0)); // lease 2
    log.apply(acquire(hdr(3, 1), "a", new_lease(10_000), 60_000, 0)); // lease 3 behind on a
                                                                      // Its wait ends at 5 s on both resources.
    let out = log.tick_at(5_000);
    let removed: Vec<(String, WaiterRemovedReason)> = out
        .effects
        .iter()
        .filter_map(|e| match e {
            Effect::WaiterRemoved {
                resource,
                lease_id: 2,
                reason,
                ..
            } => Some((resource.clone(), *reason)),
            _ => None,
        })
        .collect();
    assert_eq!(
        removed,
        vec![
            ("a".into(), WaiterRemovedReason::TimedOut),
            ("b".into(), WaiterRemovedReason::TimedOut)
        ]
    );
    assert_eq!(grants_of(&out), vec![("a".into(), 3, 2)]);
    assert!(log.t.lease(2).is_none());
    assert!(log.t.multi_lock(2, "a").is_none());
    // Nothing of it is left to sweep.
    let out = log.tick();
    assert!(out.effects.is_empty(), "{:?}", out.effects);
}

// S7: a retried multi-lock replays its first answer (with every token);
// a single acquire reusing its request id is refused.
#[test]
fn a_retried_multi_lock_replays_its_answer() {
    let mut log = Log::new();
    let cmd = multi(hdr(1, 1), &["a", "b"], new_lease(10_000), 0, 0);
    let first = log.apply(cmd.clone());
    let again = log.apply(cmd);
    let (reply, tokens) = answer(&again);
    assert!(reply.retried);
    assert_eq!(tokens, answer(&first).1);
    assert!(again.effects.is_empty());
    let other = log.apply(acquire(hdr(1, 1), "a", new_lease(10_000), 0, 0));
    assert_eq!(refused(&other.response).code, ErrorCode::InvalidArgument);
}

// "Multi-locks", snapshots: a snapshot carries waiting and granted
// multi-locks; the loaded table hands off as the original.
#[test]
fn snapshots_carry_multi_locks() {
    let mut log = Log::new();
    log.apply(multi(hdr(1, 1), &["a", "b"], new_lease(10_000), 0, 0)); // lease 1 holds a, b
    log.apply(multi(hdr(2, 1), &["c", "b"], new_lease(10_000), 60_000, 0)); // lease 2 waits
    let bytes = log.t.to_snapshot();
    assert_eq!(bytes[0], crate::SNAPSHOT_VERSION);
    let back = LockTable::from_snapshot(&bytes).expect("load");
    assert_eq!(back, log.t);
    assert_eq!(back.multi_locks().count(), 2);
    let mut again = Log::of(back, log.index);
    let out = again.apply(release(hdr(1, 2), Some("a"), 1, None));
    assert_eq!(
        grants_of(&out),
        vec![("c".into(), 2, 3), ("b".into(), 2, 4)]
    );
}

// Security ("Multi-locks"): a multi-lock needs `lock` on every resource;
// PermissionDenied names the first refused one, and nothing is taken.
#[test]
fn a_multi_lock_needs_lock_on_every_resource() {
    let mut log = Log::new();
    log.root(grant_perm("jobs", "jobs/", Permission::Lock));
    log.root(grant_role("alice", "jobs"));
    let before = lock_state(&log.t);
    let out = log.apply(as_(
        "alice",
        multi(
            hdr(1, 1),
            &["jobs/a", "other/x", "other/y"],
            new_lease(10_000),
            0,
            0,
        ),
    ));
    let e = refused(&out.response);
    assert_eq!(
        (e.code, e.field.as_deref()),
        (ErrorCode::PermissionDenied, Some("resources"))
    );
    assert!(e.message.contains("other/x"), "{e:?}");
    assert_eq!(lock_state(&log.t), before);
    let out = log.apply(as_(
        "alice",
        multi(hdr(1, 2), &["jobs/a", "jobs/b"], new_lease(10_000), 0, 0),
    ));
    assert_eq!(answer(&out).1.len(), 2);
}

// S8, "Multi-locks": a cancel of a waiting multi-lock (naming its first
// resource) takes it out of every queue; one of a granted multi-lock
// releases every resource.
#[test]
fn a_cancel_takes_a_multi_lock_back_whole() {
    let mut log = Log::new();
    log.apply(acquire(hdr(1, 1), "b", new_lease(10_000), 0, 0)); // lease 1 holds b
    log.apply(multi(hdr(2, 1), &["a", "b"], new_lease(10_000), 60_000, 0)); // lease 2
    let out = log.apply(Command::CancelWait(CancelWait {
        header: hdr(2, 2),
        acquire_request_id: 1,
        resource: "a".into(),
    }));
    assert!(
        matches!(
            out.response,
            Response::WaitCancelled {
                outcome: CancelOutcome::Removed,
                lease_id: 2,
                ..
            }
        ),
        "{:?}",
        out.response
    );
    assert!(queue(&log, "a").is_empty() && queue(&log, "b").is_empty());
    assert!(log.t.lease(2).is_none());
    // Granted at once, then cancelled: both resources are released.
    log.apply(multi(hdr(3, 1), &["c", "d"], new_lease(10_000), 60_000, 0));
    let out = log.apply(Command::CancelWait(CancelWait {
        header: hdr(3, 2),
        acquire_request_id: 1,
        resource: "c".into(),
    }));
    assert!(
        matches!(
            out.response,
            Response::WaitCancelled {
                outcome: CancelOutcome::Released,
                ..
            }
        ),
        "{:?}",
        out.response
    );
    assert_eq!(holder(&log, "c"), None);
    assert_eq!(holder(&log, "d"), None);
}

// S8, "Time": a waiting multi-lock's wait ends on every one of its
// resources at the one deadline (its enqueue's `now` plus the wait); the
// sweep ends it whole in one entry, and its acquire-made lease goes with it.
#[test]
fn a_multi_locks_wait_ends_it_whole() {
    let mut log = Log::new();
    log.apply(acquire(hdr(1, 1), "b", new_lease(60_000), 0, 0));
    log.advance(1_000);
    log.apply(multi(hdr(2, 1), &["a", "b"], new_lease(60_000), 5_000, 0));
    let deadlines = |log: &Log| {
        ["a", "b"]
            .iter()
            .flat_map(|r| log.t.waiters(r))
            .map(|w| (w.lease_id, w.deadline_ms))
            .collect::<Vec<_>>()
    };
    assert_eq!(deadlines(&log), vec![(2, 6_000), (2, 6_000)]);
    assert!(log.tick_at(5_999).effects.is_empty());
    let out = log.tick_at(6_000);
    let removed = out
        .effects
        .iter()
        .filter(|e| {
            matches!(
                e,
                Effect::WaiterRemoved {
                    lease_id: 2,
                    reason: WaiterRemovedReason::TimedOut,
                    ..
                }
            )
        })
        .count();
    assert_eq!(removed, 2);
    assert!(queue(&log, "a").is_empty() && queue(&log, "b").is_empty());
    assert!(log.t.lease(2).is_none());
    assert_eq!(holder(&log, "b"), Some((1, 1)));
}

// S7, S8 ("Multi-locks"): a cancel that overtakes its multi-lock preempts
// it: when the multi-lock applies it is answered not granted (cancelled) as
// a multi-lock `Acquire`, and queues on nothing.
#[test]
fn a_cancel_that_overtakes_its_multi_lock_preempts_it() {
    let mut log = Log::new();
    log.apply(acquire(hdr(1, 1), "b", new_lease(10_000), 0, 0)); // lease 1 holds b
    log.apply(Command::CancelWait(CancelWait {
        header: hdr(2, 2),
        acquire_request_id: 1,
        resource: "a".into(),
    }));
    let out = log.apply(multi(hdr(2, 1), &["a", "b"], new_lease(10_000), 60_000, 0));
    let (reply, tokens) = answer(&out);
    assert!(tokens.is_empty());
    assert!(
        matches!(
            reply.outcome,
            AcquireOutcome::NotGranted {
                reason: NotGrantedReason::Cancelled,
                ..
            }
        ),
        "{reply:?}"
    );
    assert!(queue(&log, "a").is_empty() && queue(&log, "b").is_empty());
    assert!(log.t.multi_locks().next().is_none());
}

// docs/semantics.md "Multi-locks": mutexes only, no max-hold. A multi-lock
// acquire of another kind is refused naming `mode`, one with a max-hold
// naming `max_hold_ms`; nothing changes.
#[test]
fn a_multi_lock_of_another_kind_or_with_a_max_hold_is_refused() {
    let mut log = Log::new();
    let base = |n| {
        let Command::Acquire(a) = multi(hdr(1, n), &["a", "b"], new_lease(10_000), 0, 0) else {
            unreachable!("multi builds an Acquire")
        };
        a
    };
    let cases = [
        (base(1).of_kind(LockKind::ReadWrite, Mode::Shared), "mode"),
        (
            base(2).of_kind(LockKind::Semaphore { limit: 3 }, Mode::Shared),
            "mode",
        ),
        (base(3).with_max_hold(60_000), "max_hold_ms"),
    ];
    for (a, field) in cases {
        let before = lock_state(&log.t);
        let out = log.apply(Command::Acquire(a));
        let e = refused(&out.response);
        assert_eq!(
            (e.code, e.field.as_deref()),
            (ErrorCode::InvalidArgument, Some(field))
        );
        assert!(out.effects.is_empty());
        assert_eq!(lock_state(&log.t), before);
    }
}
