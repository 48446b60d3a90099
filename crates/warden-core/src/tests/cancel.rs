//! `CancelWait`: a caller that abandons a waiting acquire takes it back (S8:
//! a waiter whose client cancelled is removed and never granted), exactly
//! once (S7), and nobody can take back another's wait.

use super::*;
use crate::effect::{Effect, WaiterRemovedReason};

fn cancel(h: RequestHeader, acquire_request_id: RequestId, resource: &str) -> Command {
    Command::CancelWait(CancelWait {
        header: h,
        acquire_request_id,
        resource: resource.into(),
    })
}

fn cancelled(a: &Applied) -> (LeaseId, CancelOutcome, Option<FencingToken>) {
    match &a.response {
        Response::WaitCancelled {
            lease_id,
            outcome,
            fencing_token,
            ..
        } => (*lease_id, *outcome, *fencing_token),
        other => panic!("expected a cancel answer, got {other:?}"),
    }
}

fn as_principal(name: &str, cmd: Command) -> Command {
    Command::Authorized(Authorized {
        principal: Some(Principal::new(name).expect("valid principal")),
        command: Box::new(cmd),
    })
}

/// A holder on `r` (client 1) and a session lease (client 2) queued behind it
/// with request 1; returns (holder lease, holder token, waiter lease).
fn holder_and_waiter(log: &mut Log, r: &str) -> (LeaseId, FencingToken, LeaseId) {
    let (holder, token) = granted(&log.apply(acquire(hdr(1, 1), r, new_lease(10_000), 0, 0)));
    let session = match log.apply(lease_grant(hdr(2, 1), 10_000)).response {
        Response::LeaseGranted { lease_id, .. } => lease_id,
        other => panic!("{other:?}"),
    };
    let queued = log.apply(acquire(hdr(2, 2), r, on(session), 30_000, 0));
    assert!(
        matches!(
            queued.response,
            Response::Acquire(AcquireReply {
                outcome: AcquireOutcome::Queued { .. },
                ..
            })
        ),
        "{:?}",
        queued.response
    );
    (holder, token, session)
}

// S8: a cancelled waiter leaves the queue at once and is never granted; the
// next release hands the resource to nobody (or to the next live waiter).
#[test]
fn a_cancelled_waiter_leaves_the_queue_and_is_never_granted() {
    let mut log = Log::new();
    let (holder, token, session) = holder_and_waiter(&mut log, "r");
    let out = log.apply(cancel(hdr(2, 3), 2, "r"));
    assert_eq!(cancelled(&out), (session, CancelOutcome::Removed, None));
    assert!(out.effects.iter().any(|e| matches!(
        e,
        Effect::WaiterRemoved {
            reason: WaiterRemovedReason::Cancelled,
            ..
        }
    )));
    assert!(log.t.waiters("r").is_empty());
    log.apply(release(hdr(1, 2), Some("r"), holder, Some(token)));
    assert!(
        log.t.holder("r").is_none(),
        "nobody is granted after the cancel"
    );
    assert!(log.t.lease(session).is_some_and(|l| l.waits.is_empty()));
}

// S8 and S6: when the grant won the race (the waiter was granted before the
// cancel applied), the cancel releases exactly that grant, and the next
// waiter is granted in the same entry with a larger token (S2).
#[test]
fn a_cancel_after_the_grant_releases_that_grant_and_hands_off() {
    let mut log = Log::new();
    let (holder, token, session) = holder_and_waiter(&mut log, "r");
    // A third waiter behind the session.
    let third = log.apply(acquire(hdr(3, 1), "r", new_lease(10_000), 30_000, 0));
    let third_lease = match third.response {
        Response::Acquire(AcquireReply {
            outcome: AcquireOutcome::Queued { lease_id, .. },
            ..
        }) => lease_id,
        other => panic!("{other:?}"),
    };
    log.apply(release(hdr(1, 2), Some("r"), holder, Some(token)));
    let granted_token = log.t.holder("r").expect("the session holds").fencing_token;
    assert_eq!(log.t.holder("r").map(|h| h.lease_id), Some(session));
    let out = log.apply(cancel(hdr(2, 3), 2, "r"));
    assert_eq!(
        cancelled(&out),
        (session, CancelOutcome::Released, Some(granted_token))
    );
    let next = log.t.holder("r").expect("handed off in the same entry");
    assert_eq!(next.lease_id, third_lease);
    assert!(next.fencing_token > granted_token);
}

// S8 with S7: a cancel that overtakes its acquire (the acquire applies after
// it) makes the acquire refused when it applies: no waiter, no lease kept,
// and the acquire's retry gets the same refusal.
#[test]
fn a_cancel_before_its_acquire_preempts_it() {
    let mut log = Log::new();
    let (holder, _token) = granted(&log.apply(acquire(hdr(1, 1), "r", new_lease(10_000), 0, 0)));
    let out = log.apply(cancel(hdr(5, 2), 1, "r"));
    assert_eq!(cancelled(&out), (0, CancelOutcome::Preempted, None));
    let late = log.apply(acquire(hdr(5, 1), "r", new_lease(10_000), 30_000, 0));
    let reason = |a: &Applied| match &a.response {
        Response::Acquire(AcquireReply {
            outcome: AcquireOutcome::NotGranted { reason, .. },
            ..
        }) => *reason,
        other => panic!("{other:?}"),
    };
    assert_eq!(reason(&late), NotGrantedReason::Cancelled);
    assert!(log.t.waiters("r").is_empty());
    assert_eq!(log.t.lease_count(), 1, "only the holder's lease");
    let again = log.apply(acquire(hdr(5, 1), "r", new_lease(10_000), 30_000, 0));
    assert_eq!(reason(&again), NotGrantedReason::Cancelled);
    assert_eq!(log.t.holder("r").map(|h| h.lease_id), Some(holder));
}

// S7: a retried cancel answers its first outcome and does nothing more (the
// hand-off after a "released" is not undone or repeated); a cancel of an
// acquire that already ended changes nothing.
#[test]
fn a_retried_cancel_answers_once_and_a_finished_wait_is_left_alone() {
    let mut log = Log::new();
    let (holder, token, session) = holder_and_waiter(&mut log, "r");
    let first = log.apply(cancel(hdr(2, 3), 2, "r"));
    let before = lock_state(&log.t);
    let retry = log.apply(cancel(hdr(2, 3), 2, "r"));
    assert_eq!(cancelled(&retry), cancelled(&first));
    assert_eq!(lock_state(&log.t), before, "the retry changed nothing");
    // A new cancel of the same acquire: nothing left to take back.
    let again = log.apply(cancel(hdr(2, 4), 2, "r"));
    assert_eq!(
        cancelled(&again),
        (session, CancelOutcome::NothingToCancel, None)
    );
    assert_eq!(
        log.t.holder("r").map(|h| (h.lease_id, h.fencing_token)),
        Some((holder, token))
    );
}

// "What bad input gets": the cancel must follow its acquire and name the
// acquire's resource; a refusal changes nothing.
#[test]
fn a_cancel_names_an_earlier_acquire_of_the_same_resource() {
    let mut log = Log::new();
    let (_holder, _token, _session) = holder_and_waiter(&mut log, "r");
    let field = |a: &Applied| match &a.response {
        Response::Error(e) => (e.code, e.field.clone()),
        other => panic!("{other:?}"),
    };
    let before = lock_state(&log.t);
    let later = log.apply(cancel(hdr(2, 3), 3, "r"));
    assert_eq!(
        field(&later),
        (
            ErrorCode::InvalidArgument,
            Some("acquire_request_id".into())
        )
    );
    let other = log.apply(cancel(hdr(2, 4), 2, "elsewhere"));
    assert_eq!(
        field(&other),
        (ErrorCode::InvalidArgument, Some("resource".into()))
    );
    assert_eq!(lock_state(&log.t), before);
    assert_eq!(log.t.waiters("r").len(), 1);
}

// Leases have owners (etcd PR 8031 in spirit): a cancel names the caller's
// own acquire by (principal, client id, request id), so bob's cancel with
// alice's client id and request id finds nothing of hers.
#[test]
fn nobody_cancels_another_principals_wait() {
    let mut log = Log::new();
    let grant = |role: &str| {
        Command::AuthChange(AuthChange {
            header: hdr(99, 1),
            op: AuthOp::GrantPermission {
                role: role.into(),
                prefix: "".into(),
                permission: Permission::Lock,
            },
            at_unix_ms: 0,
        })
    };
    log.apply(as_principal("root", grant("lockers")));
    for (n, user) in [(2, "alice"), (3, "bob")] {
        log.apply(as_principal(
            "root",
            Command::AuthChange(AuthChange {
                header: hdr(99, n),
                op: AuthOp::GrantRole {
                    user: Principal::new(user).expect("principal"),
                    role: "lockers".into(),
                },
                at_unix_ms: 0,
            }),
        ));
    }
    log.apply(as_principal(
        "bob",
        acquire(hdr(1, 1), "r", new_lease(10_000), 0, 0),
    ));
    let queued = log.apply(as_principal(
        "alice",
        acquire(hdr(7, 1), "r", new_lease(10_000), 30_000, 0),
    ));
    assert!(matches!(
        queued.response,
        Response::Acquire(AcquireReply {
            outcome: AcquireOutcome::Queued { .. },
            ..
        })
    ));
    let out = log.apply(as_principal("bob", cancel(hdr(7, 2), 1, "r")));
    assert_eq!(
        cancelled(&out).1,
        CancelOutcome::Preempted,
        "bob's own (7, 1) is preempted"
    );
    assert_eq!(log.t.waiters("r").len(), 1, "alice still waits");
}
