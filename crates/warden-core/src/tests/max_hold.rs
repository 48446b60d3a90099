//! Max-hold (docs/semantics.md "Max-hold"): a grant ends no later than its
//! cap after it was made (`granted-at + max_hold_ms` in cluster time),
//! however often its lease is renewed; the sweep or the next command on the
//! resource ends it.

use super::*;
use crate::effect::{Effect, FreeReason};
use crate::limits::{MAX_MAX_HOLD_MS, MIN_MAX_HOLD_MS};

const D: u64 = 10_000;

/// An acquire of a `kind` lock in `mode` held for at most `max_hold_ms`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn bounded(
    h: RequestHeader,
    resource: &str,
    lease: LeaseSpec,
    wait_ms: u64,
    delay_ms: u64,
    kind: LockKind,
    mode: Mode,
    max_hold_ms: u64,
) -> Command {
    Command::Acquire(
        Acquire::mutex(h, resource, lease, wait_ms, delay_ms)
            .of_kind(kind, mode)
            .with_max_hold(max_hold_ms),
    )
}

fn mutex(
    h: RequestHeader,
    resource: &str,
    lease: LeaseSpec,
    wait_ms: u64,
    delay_ms: u64,
) -> Command {
    bounded(
        h,
        resource,
        lease,
        wait_ms,
        delay_ms,
        LockKind::Mutex,
        Mode::Exclusive,
        D,
    )
}

fn renew(ids: &[LeaseId]) -> Command {
    Command::RenewBatch(RenewBatch {
        lease_ids: ids.to_vec(),
    })
}

fn holder_token(log: &Log, resource: &str) -> Option<FencingToken> {
    log.t.holder(resource).map(|h| h.fencing_token)
}

/// Max-hold: a grant renewed many times still ends at granted-at + cap,
/// reason `max_hold`, and is handed off in that same entry to the next
/// waiter with a larger token (S2, S8).
#[test]
fn renewed_grant_ends_at_its_cap_and_hands_off() {
    let mut log = Log::new();
    log.advance(1_000);
    let a = log.apply(lease_grant(hdr(1, 1), 5_000));
    let Response::LeaseGranted { lease_id: la, .. } = a.response else {
        panic!("{:?}", a.response)
    };
    let g = log.apply(mutex(hdr(1, 2), "r", on(la), 0, 0));
    let (_, t1) = granted(&g);
    assert!(g.effects.contains(&Effect::MaxHoldStarted {
        resource: "r".into(),
        lease_id: la,
        fencing_token: t1,
        max_hold_ms: D,
    }));
    let m = log.t.max_hold("r", la).expect("recorded");
    assert_eq!(
        (m.fencing_token, m.max_hold_ms, m.ends_at_ms),
        (t1, D, 1_000 + D)
    );
    assert_eq!(
        log.t.holder("r").map(|h| h.granted_at_ms),
        Some(1_000),
        "granted at the entry's now"
    );
    // Someone waits behind it.
    let w = log.apply(acquire(hdr(2, 1), "r", new_lease(30_000), 60_000, 0));
    assert!(matches!(
        w.response,
        Response::Acquire(AcquireReply {
            outcome: AcquireOutcome::Queued { .. },
            ..
        })
    ));
    for _ in 0..20 {
        log.advance(450);
        let r = log.apply(renew(&[la]));
        assert_eq!(r.response, Response::Renewed(vec![(la, Some(5_000))]));
    }
    assert_eq!(log.now_ms, 10_000);
    assert_eq!(holder_token(&log, "r"), Some(t1), "renewals never end it");
    assert!(log.tick_at(1_000 + D - 1).effects.is_empty());
    let out = log.tick_at(1_000 + D);
    assert!(out.effects.contains(&Effect::Freed {
        resource: "r".into(),
        lease_id: la,
        fencing_token: t1,
        reason: FreeReason::MaxHold,
        granted_at_ms: 1_000,
    }));
    assert!(out.effects.contains(&Effect::MaxHoldEnded {
        resource: "r".into(),
        lease_id: la,
        fencing_token: t1,
    }));
    let next = log.t.holder("r").expect("handed off in the same entry");
    assert_ne!(next.lease_id, la);
    assert!(next.fencing_token > t1, "S2: {} > {t1}", next.fencing_token);
    assert_eq!(log.t.max_hold("r", la), None);
    // The session lease lives on: only the grant ended.
    assert!(log.t.lease(la).is_some());
}

/// Max-hold: the end is an involuntary loss at the cap's instant, so the
/// grant's lock-delay counts from there before the next waiter is granted
/// ("Lock-delay"); a command that touches the resource after the instant,
/// before any sweep, ends it first (an acquire never jumps the queue).
#[test]
fn end_starts_the_lock_delay_from_the_caps_instant() {
    let mut log = Log::new();
    let g = log.apply(mutex(hdr(1, 1), "r", new_lease(30_000), 0, 2_000));
    let (la, _) = granted(&g);
    log.apply(acquire(hdr(2, 1), "r", new_lease(30_000), 60_000, 0));
    // At 11 s an acquire arrives: the cap ended at 10 s; the delay runs to
    // 12 s, and the acquire queues behind the waiter.
    log.advance(11_000);
    let out = log.apply(acquire(hdr(3, 1), "r", new_lease(30_000), 60_000, 0));
    let start = log.index;
    assert!(out.effects.contains(&Effect::LockDelayStarted {
        resource: "r".into(),
        start_index: start,
        lock_delay_ms: 2_000,
        ends_at_ms: 12_000,
    }));
    assert!(matches!(
        out.response,
        Response::Acquire(AcquireReply {
            outcome: AcquireOutcome::Queued { position: 2, .. },
            ..
        })
    ));
    assert!(
        log.t.holder("r").is_none(),
        "withheld during the lock-delay"
    );
    // The acquire-made lease had nothing left: it died with the grant.
    assert!(log.t.lease(la).is_none());
    log.tick_at(12_000);
    assert_eq!(log.t.holder("r").map(|h| h.lease_id), Some(la + 1));
}

/// Max-hold: a release and a re-grant to the same lease start a new cap
/// from the re-grant; the old grant's instant ends nothing.
#[test]
fn a_regrant_gets_its_own_cap() {
    let mut log = Log::new();
    let a = log.apply(lease_grant(hdr(1, 1), 30_000));
    let Response::LeaseGranted { lease_id: la, .. } = a.response else {
        panic!()
    };
    let (_, t1) = granted(&log.apply(mutex(hdr(1, 2), "r", on(la), 0, 0)));
    log.advance(1_000);
    log.apply(release(hdr(1, 3), Some("r"), la, Some(t1)));
    assert_eq!(log.t.max_hold("r", la), None, "a release drops the cap");
    log.advance(1_000);
    let (_, t2) = granted(&log.apply(mutex(hdr(1, 4), "r", on(la), 0, 0)));
    assert!(t2 > t1);
    assert_eq!(
        log.t.max_hold("r", la).map(|m| m.ends_at_ms),
        Some(2_000 + D)
    );
    let out = log.tick_at(D);
    assert!(out.effects.is_empty(), "{:?}", out.effects);
    assert_eq!(
        holder_token(&log, "r"),
        Some(t2),
        "the re-grant is untouched"
    );
    assert!(!log.tick_at(2_000 + D).effects.is_empty());
    assert!(log.t.holder("r").is_none());
}

/// "What bad input gets": a max-hold under 1 s (but not 0, which is none)
/// or over 24 h, or a wait of the max-hold or more, is refused naming the
/// field and the limit, and nothing changes.
#[test]
fn bad_input_is_refused_naming_the_field() {
    let mut log = Log::new();
    let before = lock_state(&log.t);
    let cases = [
        (MIN_MAX_HOLD_MS - 1, 0, "max_hold_ms", "1000"),
        (MAX_MAX_HOLD_MS + 1, 0, "max_hold_ms", "86400000"),
        (5_000, 5_000, "wait_timeout_ms", "5000"),
        (5_000, 6_000, "wait_timeout_ms", "5000"),
    ];
    for (i, (max_hold, wait, field, limit)) in cases.into_iter().enumerate() {
        let cmd = bounded(
            hdr(1, i as u64 + 1),
            "r",
            new_lease(5_000),
            wait,
            0,
            LockKind::Mutex,
            Mode::Exclusive,
            max_hold,
        );
        let out = log.apply(cmd);
        let e = refused(&out.response);
        assert_eq!(e.code, ErrorCode::InvalidArgument);
        assert_eq!(e.field.as_deref(), Some(field), "{e:?}");
        assert!(e.message.contains(limit), "{e:?}");
        assert!(out.effects.is_empty());
        assert_eq!(lock_state(&log.t), before);
    }
    // The bounds themselves are accepted.
    for (i, ms) in [MIN_MAX_HOLD_MS, MAX_MAX_HOLD_MS].into_iter().enumerate() {
        let r = format!("ok{i}");
        let cmd = bounded(
            hdr(2, i as u64 + 1),
            &r,
            new_lease(5_000),
            0,
            0,
            LockKind::Mutex,
            Mode::Exclusive,
            ms,
        );
        granted(&log.apply(cmd));
    }
}

/// Max-hold for every kind ("Lock kinds"): a reader, a writer and a
/// semaphore permit each get the cap; a waiter's cap is kept until its
/// grant and timed from that grant.
#[test]
fn every_kind_and_waiters_get_the_cap() {
    let mut log = Log::new();
    let rw = |h, lease, wait, mode| bounded(h, "rw", lease, wait, 0, LockKind::ReadWrite, mode, D);
    let (r1, t1) = granted(&log.apply(rw(hdr(1, 1), new_lease(30_000), 0, Mode::Shared)));
    let (r2, t2) = granted(&log.apply(rw(hdr(2, 1), new_lease(30_000), 0, Mode::Shared)));
    assert_eq!(log.t.max_hold("rw", r1).map(|m| m.fencing_token), Some(t1));
    assert_eq!(log.t.max_hold("rw", r2).map(|m| m.fencing_token), Some(t2));
    // A writer waits (from 2 s, for 9 s) with a cap of its own.
    log.advance(2_000);
    let w = log.apply(rw(hdr(3, 1), new_lease(30_000), 9_000, Mode::Exclusive));
    let enq = log.index;
    let lw = match &w.response {
        Response::AcquireKind {
            reply:
                AcquireReply {
                    outcome: AcquireOutcome::Queued { lease_id, .. },
                    ..
                },
            ..
        } => *lease_id,
        other => panic!("{other:?}"),
    };
    assert_eq!(log.t.wait_max_hold("rw", lw, enq), Some(D));
    // The readers' caps end at 10 s: the writer is granted then.
    log.tick_at(D);
    let h = log.t.holder("rw").expect("the writer got it");
    assert_eq!(h.lease_id, lw);
    let m = log.t.max_hold("rw", lw).expect("its cap");
    assert_eq!((m.grant_index, m.ends_at_ms), (log.index, 2 * D));
    assert_eq!(log.t.wait_max_hold("rw", lw, enq), None);
    // A semaphore permit.
    let sem = LockKind::Semaphore { limit: 2 };
    let p = bounded(
        hdr(4, 1),
        "sem",
        new_lease(30_000),
        0,
        0,
        sem,
        Mode::Shared,
        D,
    );
    let (lp, tp) = granted(&log.apply(p));
    assert_eq!(log.t.max_hold("sem", lp).map(|m| m.fencing_token), Some(tp));
    log.tick_at(2 * D);
    assert!(log.t.holders("sem").is_empty());
    assert!(log.t.holder("rw").is_none());
}

/// Max-hold across snapshots and restores ("Time"): a snapshot carries the
/// cap's instant; a restore keeps it (the new cluster's time goes on from
/// the table's `now`), so it never lengthens a cap.
#[test]
fn snapshot_and_restore_keep_the_caps_instant() {
    let mut log = Log::new();
    let g = log.apply(mutex(hdr(1, 1), "r", new_lease(30_000), 0, 0));
    let (la, _) = granted(&g);
    log.advance_and_tick(4_000);
    let bytes = log.t.to_snapshot();
    let back = LockTable::from_snapshot(&bytes).expect("loads");
    assert_eq!(back.max_hold("r", la), log.t.max_hold("r", la));
    assert_eq!(back.max_hold("r", la).map(|m| m.ends_at_ms), Some(D));
    assert_eq!(back.next_instant_ms(), Some(D));
    // A restore into a new cluster keeps the remaining 6 s.
    let mut restored = back.clone();
    crate::restore::for_new_cluster(&mut restored, crate::restore::RestoreOptions::default())
        .expect("restores");
    assert_eq!(restored.max_hold("r", la).map(|m| m.ends_at_ms), Some(D));
    assert_eq!(restored.check_invariants(), Ok(()));
    let mut next = Log::of(restored, log.index);
    next.tick_at(D);
    assert!(next.t.holder("r").is_none(), "ended at its instant");
}

/// check_invariants knows max-hold: a cap without its grant, or one whose
/// instant is out of step with the time index, is reported (snapshot load
/// refuses the first).
#[test]
fn check_invariants_learns_max_hold() {
    let mut log = Log::new();
    let (la, _) = granted(&log.apply(mutex(hdr(1, 1), "r", new_lease(5_000), 0, 0)));
    let mut broken = log.t.clone();
    if let Some(m) = broken.max_holds.get_mut(&("r".to_owned(), la)) {
        m.fencing_token += 1;
    }
    assert!(broken.check_invariants().is_err());
    let mut broken = log.t.clone();
    if let Some(m) = broken.max_holds.get_mut(&("r".to_owned(), la)) {
        m.ends_at_ms += 1;
    }
    assert!(broken.check_invariants().is_err());
    let mut broken = log.t.clone();
    broken.wait_max_holds.insert(("r".to_owned(), 99, 1), D);
    assert!(broken.check_invariants().is_err());
    assert!(LockTable::from_snapshot(&broken.to_snapshot()).is_err());
}

/// Max-hold: whatever else ends the grant (the lease's expiry) drops its
/// cap and its instant.
#[test]
fn expiry_drops_the_cap() {
    let mut log = Log::new();
    let g = log.apply(mutex(hdr(1, 1), "r", new_lease(5_000), 0, 0));
    let (la, _) = granted(&g);
    assert_eq!(log.t.next_instant_ms(), Some(5_000));
    log.expire(la);
    assert_eq!(log.t.max_hold("r", la), None);
    assert_eq!(log.t.next_instant_ms(), None, "nothing left to time");
}

/// S7 with max-hold: a retried bounded acquire replays its first answer
/// (the same grant, no second cap); a cancel of a bounded waiter removes
/// the waiter and the cap its grant would have had (S8).
#[test]
fn a_retry_replays_and_a_cancel_drops_the_waiters_cap() {
    let mut log = Log::new();
    let first = log.apply(mutex(hdr(1, 1), "r", new_lease(5_000), 0, 0));
    let (la, t1) = granted(&first);
    let again = log.apply(mutex(hdr(1, 1), "r", new_lease(5_000), 0, 0));
    assert_eq!(granted(&again), (la, t1));
    assert!(again.effects.is_empty(), "{:?}", again.effects);
    assert_eq!(log.t.max_holds().count(), 1);
    // A bounded waiter, then its cancel.
    let w = log.apply(mutex(hdr(2, 1), "r", new_lease(5_000), 3_000, 0));
    let enq = log.index;
    assert!(matches!(
        w.response,
        Response::AcquireKind {
            reply: AcquireReply {
                outcome: AcquireOutcome::Queued { .. },
                ..
            },
            ..
        }
    ));
    let lw = la + 1;
    assert_eq!(log.t.wait_max_hold("r", lw, enq), Some(D));
    let c = log.apply(Command::CancelWait(CancelWait {
        header: hdr(2, 2),
        acquire_request_id: 1,
        resource: "r".into(),
    }));
    assert!(
        matches!(
            c.response,
            Response::WaitCancelled {
                outcome: CancelOutcome::Removed,
                ..
            }
        ),
        "{:?}",
        c.response
    );
    assert_eq!(log.t.wait_max_hold("r", lw, enq), None);
    // The end then frees the holder and hands nothing off.
    log.tick_at(D);
    assert_eq!(log.t.max_hold("r", la).map(|m| m.fencing_token), None);
    assert_ne!(holder_token(&log, "r"), Some(t1));
    assert!(log.t.holder("r").is_none());
    assert_eq!(log.t.max_holds().count(), 0);
}
