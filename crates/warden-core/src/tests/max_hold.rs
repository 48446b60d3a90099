//! Max-hold (docs/semantics.md "Max-hold"): a grant ends no later than its
//! cap after it was made, however often its lease is renewed; the end is a
//! leader-proposed entry guarded by the grant's token.

use std::time::Duration;

use super::*;
use crate::deadline::Deadlines;
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
    let Command::AcquireKind(acquire) =
        acquire_kind(h, resource, lease, wait_ms, delay_ms, kind, mode)
    else {
        unreachable!("acquire_kind builds an AcquireKind")
    };
    Command::AcquireBounded(AcquireBounded {
        acquire,
        max_hold_ms,
    })
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

fn end(leader: LeaderId, grants: &[(&str, LeaseId, FencingToken)]) -> Command {
    Command::EndMaxHold(EndMaxHold {
        leader,
        grants: grants
            .iter()
            .map(|&(r, lease_id, fencing_token)| MaxHoldRef {
                resource: r.into(),
                lease_id,
                fencing_token,
            })
            .collect(),
        due: None,
    })
}

fn renew(ids: &[LeaseId]) -> Command {
    Command::RenewBatch(RenewBatch {
        lease_ids: ids.to_vec(),
    })
}

fn holder_token(log: &Log, resource: &str) -> Option<FencingToken> {
    log.t.holder(resource).map(|h| h.fencing_token)
}

/// Max-hold: a grant renewed many times is still ended by the guarded end
/// entry, reason `max_hold`, and handed off in that same entry to the next
/// waiter with a larger token (S2, S8).
#[test]
fn renewed_grant_ends_at_its_cap_and_hands_off() {
    let mut log = Log::new();
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
    assert_eq!((m.fencing_token, m.max_hold_ms, m.remaining_ms), (t1, D, D));
    // Someone waits behind it.
    let w = log.apply(acquire(hdr(2, 1), "r", new_lease(5_000), 3_000, 0));
    assert!(matches!(
        w.response,
        Response::Acquire(AcquireReply {
            outcome: AcquireOutcome::Queued { .. },
            ..
        })
    ));
    for _ in 0..20 {
        let r = log.apply(renew(&[la]));
        assert_eq!(r.response, Response::Renewed(vec![(la, Some(5_000))]));
    }
    assert_eq!(holder_token(&log, "r"), Some(t1), "renewals never end it");
    let out = log.apply(end(L1, &[("r", la, t1)]));
    assert!(out.effects.contains(&Effect::Freed {
        resource: "r".into(),
        lease_id: la,
        fencing_token: t1,
        reason: FreeReason::MaxHold,
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

/// Max-hold: the end is an involuntary loss, so the grant's lock-delay
/// applies before the next waiter is granted ("Lock-delay").
#[test]
fn end_starts_the_lock_delay() {
    let mut log = Log::new();
    let g = log.apply(mutex(hdr(1, 1), "r", new_lease(5_000), 0, 2_000));
    let (la, t1) = granted(&g);
    log.apply(acquire(hdr(2, 1), "r", new_lease(5_000), 3_000, 0));
    let out = log.apply(end(L1, &[("r", la, t1)]));
    let start = log.index;
    assert!(out.effects.contains(&Effect::LockDelayStarted {
        resource: "r".into(),
        start_index: start,
        lock_delay_ms: 2_000,
    }));
    assert!(
        log.t.holder("r").is_none(),
        "withheld during the lock-delay"
    );
    // The acquire-made lease had nothing left: it died with the grant.
    assert!(log.t.lease(la).is_none());
}

/// Max-hold guard (S6 for leader duties): a late or duplicate end entry,
/// after a release and a re-grant to the same lease, ends nothing; an end
/// from another leader's proposal ends nothing either.
#[test]
fn stale_end_ends_nothing() {
    let mut log = Log::new();
    let a = log.apply(lease_grant(hdr(1, 1), 5_000));
    let Response::LeaseGranted { lease_id: la, .. } = a.response else {
        panic!()
    };
    let (_, t1) = granted(&log.apply(mutex(hdr(1, 2), "r", on(la), 0, 0)));
    log.apply(release(hdr(1, 3), Some("r"), la, Some(t1)));
    assert_eq!(log.t.max_hold("r", la), None, "a release drops the cap");
    let (_, t2) = granted(&log.apply(mutex(hdr(1, 4), "r", on(la), 0, 0)));
    assert!(t2 > t1);
    let before = lock_state(&log.t);
    let out = log.apply(end(L1, &[("r", la, t1)]));
    assert_eq!(out.response, Response::Done);
    assert!(out.effects.is_empty(), "{:?}", out.effects);
    assert_eq!(lock_state(&log.t), before, "the re-grant is untouched");
    // Proposed by another leader than the entry's: ignored.
    let out = log.apply(end(L2, &[("r", la, t2)]));
    assert!(out.effects.is_empty());
    assert_eq!(holder_token(&log, "r"), Some(t2));
    // The right one ends it; a duplicate then ends nothing.
    assert!(!log.apply(end(L1, &[("r", la, t2)])).effects.is_empty());
    assert!(log.t.holder("r").is_none());
    assert!(log.apply(end(L1, &[("r", la, t2)])).effects.is_empty());
}

/// "What bad input gets": a max-hold under 1 s or over 24 h, or a wait of
/// the max-hold or more, is refused naming the field and the limit, and
/// nothing changes.
#[test]
fn bad_input_is_refused_naming_the_field() {
    let mut log = Log::new();
    let before = lock_state(&log.t);
    let cases = [
        (MIN_MAX_HOLD_MS - 1, 0, "max_hold_ms", "1000"),
        (MAX_MAX_HOLD_MS + 1, 0, "max_hold_ms", "86400000"),
        (0, 0, "max_hold_ms", "1000"),
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
    let (r1, t1) = granted(&log.apply(rw(hdr(1, 1), new_lease(5_000), 0, Mode::Shared)));
    let (r2, t2) = granted(&log.apply(rw(hdr(2, 1), new_lease(5_000), 0, Mode::Shared)));
    assert_eq!(log.t.max_hold("rw", r1).map(|m| m.fencing_token), Some(t1));
    assert_eq!(log.t.max_hold("rw", r2).map(|m| m.fencing_token), Some(t2));
    // A writer waits with a cap of its own.
    let w = log.apply(rw(hdr(3, 1), new_lease(5_000), 3_000, Mode::Exclusive));
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
    log.apply(end(L1, &[("rw", r1, t1), ("rw", r2, t2)]));
    let h = log.t.holder("rw").expect("the writer got it");
    assert_eq!(h.lease_id, lw);
    let m = log.t.max_hold("rw", lw).expect("its cap");
    assert_eq!((m.grant_index, m.remaining_ms), (log.index, D));
    assert_eq!(log.t.wait_max_hold("rw", lw, enq), None);
    // A semaphore permit.
    let sem = LockKind::Semaphore { limit: 2 };
    let p = bounded(
        hdr(4, 1),
        "sem",
        new_lease(5_000),
        0,
        0,
        sem,
        Mode::Shared,
        D,
    );
    let (lp, tp) = granted(&log.apply(p));
    assert_eq!(log.t.max_hold("sem", lp).map(|m| m.fencing_token), Some(tp));
    log.apply(end(L1, &[("sem", lp, tp)]));
    assert!(log.t.holders("sem").is_empty());
}

/// Max-hold across leaders and snapshots ("Time", L2): a checkpoint
/// records the remaining cap (only ever shorter), a snapshot carries it,
/// and the deadline table of a node that loads the snapshot times the
/// remaining cap, not the full one; a restore keeps it.
#[test]
fn checkpoint_snapshot_and_restore_keep_the_remaining_cap() {
    let mut log = Log::new();
    let g = log.apply(mutex(hdr(1, 1), "r", new_lease(5_000), 0, 0));
    let (la, t1) = granted(&g);
    let mut dl = Deadlines::new();
    dl.on_effects(&g.effects, Duration::ZERO, Duration::ZERO);
    assert_eq!(
        dl.max_hold_deadline("r", la, t1),
        Some(Duration::from_millis(D))
    );
    assert_eq!(dl.next_deadline(), Some(Duration::from_millis(5_000)));
    // 4 s later the leader checkpoints 6 s left.
    let now = Duration::from_millis(4_000);
    let cp = dl
        .max_hold_checkpoint(&log.t, L1, now, Duration::from_millis(1_000))
        .expect("a cap has run for over the interval");
    assert_eq!(cp.grants.len(), 1);
    assert_eq!(cp.grants[0].1, 6_000);
    let out = log.apply(Command::CheckpointMaxHold(cp.clone()));
    dl.on_effects(&out.effects, now, now);
    assert_eq!(log.t.max_hold("r", la).map(|m| m.remaining_ms), Some(6_000));
    // A checkpoint never lengthens it.
    let mut longer = cp;
    longer.grants[0].1 = 9_000;
    log.apply(Command::CheckpointMaxHold(longer));
    assert_eq!(log.t.max_hold("r", la).map(|m| m.remaining_ms), Some(6_000));
    // The snapshot carries it; a loaded node times what is left.
    let bytes = log.t.to_snapshot();
    assert_eq!(bytes[0], 8);
    let back = LockTable::from_snapshot(&bytes).expect("loads");
    assert_eq!(back.max_hold("r", la), log.t.max_hold("r", la));
    let loaded = Deadlines::load(&back, Duration::from_millis(100));
    assert_eq!(
        loaded.max_hold_deadline("r", la, t1),
        Some(Duration::from_millis(6_100))
    );
    assert!(loaded
        .due_max_holds(&back, Duration::from_millis(6_099))
        .is_empty());
    assert_eq!(
        loaded.due_max_holds(&back, Duration::from_millis(6_100)),
        vec![MaxHoldRef {
            resource: "r".into(),
            lease_id: la,
            fencing_token: t1
        }]
    );
    // A restore into a new cluster keeps the remaining cap.
    let mut restored = back.clone();
    crate::restore::for_new_cluster(&mut restored, crate::restore::RestoreOptions::default())
        .expect("restores");
    assert_eq!(
        restored.max_hold("r", la).map(|m| m.remaining_ms),
        Some(6_000)
    );
    assert_eq!(restored.check_invariants(), Ok(()));
}

/// check_invariants knows max-hold: a cap without its grant, or with a
/// remaining cap above the full one, is reported (snapshot load refuses it).
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
        m.remaining_ms = m.max_hold_ms + 1;
    }
    assert!(broken.check_invariants().is_err());
    let mut broken = log.t.clone();
    broken.wait_max_holds.insert(("r".to_owned(), 99, 1), D);
    assert!(broken.check_invariants().is_err());
    assert!(LockTable::from_snapshot(&broken.to_snapshot()).is_err());
}

/// Max-hold: whatever else ends the grant (the lease's expiry) drops its
/// cap, and the deadline table forgets it; a version-6 snapshot (no
/// max-hold part) still loads.
#[test]
fn expiry_drops_the_cap_and_old_snapshots_load() {
    let mut log = Log::new();
    let g = log.apply(mutex(hdr(1, 1), "r", new_lease(5_000), 0, 0));
    let (la, t1) = granted(&g);
    let mut dl = Deadlines::new();
    dl.on_effects(&g.effects, Duration::ZERO, Duration::ZERO);
    let out = log.apply(expire(L1, &[(la, 1)]));
    dl.on_effects(&out.effects, Duration::ZERO, Duration::ZERO);
    assert_eq!(log.t.max_hold("r", la), None);
    assert_eq!(dl.max_hold_deadline("r", la, t1), None);
    // Version 6 wrote everything but the last three parts (two max-hold
    // maps, then the duty clock of version 8).
    let mut t = LockTable::new();
    t.apply(1, L1, &acquire(hdr(1, 1), "r", new_lease(5_000), 0, 0));
    let mut v6 = t.to_snapshot();
    v6[0] = 6;
    // The two empty maps and the clock's empty list are one byte each
    // (length 0).
    v6.truncate(v6.len() - 3);
    assert_eq!(LockTable::from_snapshot(&v6), Ok(t));
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
        due: None,
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
    log.apply(end(L1, &[("r", la, t1)]));
    assert!(log.t.holder("r").is_none());
    assert_eq!(log.t.max_holds().count(), 0);
}
