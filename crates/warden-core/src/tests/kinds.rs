//! Lock kinds (docs/semantics.md "Lock kinds"): semaphores, read-write locks,
//! one kind per resource, and what a lock-delay withholds for each.

use super::*;
use crate::effect::{Effect, FreeReason};
use crate::resource::DelayScope;

const SEM3: LockKind = LockKind::Semaphore { limit: 3 };

fn permit(h: RequestHeader, resource: &str, lease: LeaseSpec, wait_ms: u64) -> Command {
    acquire_kind(h, resource, lease, wait_ms, 0, SEM3, Mode::Shared)
}

fn read(
    h: RequestHeader,
    resource: &str,
    lease: LeaseSpec,
    wait_ms: u64,
    delay_ms: u64,
) -> Command {
    acquire_kind(
        h,
        resource,
        lease,
        wait_ms,
        delay_ms,
        LockKind::ReadWrite,
        Mode::Shared,
    )
}

fn write(h: RequestHeader, resource: &str, lease: LeaseSpec, wait_ms: u64) -> Command {
    acquire_kind(
        h,
        resource,
        lease,
        wait_ms,
        0,
        LockKind::ReadWrite,
        Mode::Exclusive,
    )
}

/// The slot a `Response::AcquireKind` answer carries.
fn slot(a: &Applied) -> Option<u32> {
    match &a.response {
        Response::AcquireKind { slot, .. } => *slot,
        other => panic!("expected an AcquireKind answer, got {other:?}"),
    }
}

fn queued(a: &Applied) -> u64 {
    match &a.response {
        Response::AcquireKind {
            reply:
                AcquireReply {
                    outcome: AcquireOutcome::Queued { position, .. },
                    ..
                },
            ..
        } => *position,
        other => panic!("expected a queued answer, got {other:?}"),
    }
}

/// (lease, token, slot) of every grant an entry made, in order.
fn grants(a: &Applied) -> Vec<(LeaseId, FencingToken, Option<u32>)> {
    a.effects
        .iter()
        .filter_map(|e| match e {
            Effect::Granted {
                lease_id,
                fencing_token,
                slot,
                ..
            } => Some((*lease_id, *fencing_token, *slot)),
            _ => None,
        })
        .collect()
}

fn holders(t: &LockTable, r: &str) -> Vec<(LeaseId, Mode, Option<u32>)> {
    t.holders(r)
        .iter()
        .map(|h| (h.lease_id, h.mode, h.slot))
        .collect()
}

// Semaphore: at most N holders, each in the lowest free slot with a fresh
// token; five waiters queue in order; a released permit goes to the oldest
// waiter in the same entry, in the freed slot, with a larger token.
#[test]
fn a_semaphore_grants_at_most_its_limit_in_fifo_order() {
    let mut log = Log::new();
    let mut tokens = Vec::new();
    for c in 1..=3 {
        let out = log.apply(permit(hdr(c, 1), "pool", new_lease(10_000), 0));
        tokens.push(granted(&out).1);
        assert_eq!(slot(&out), Some(c as u32 - 1));
    }
    assert!(tokens.windows(2).all(|w| w[0] < w[1]), "S2: {tokens:?}");
    // A try-lock on the full semaphore is not granted; five waiters queue.
    let full = log.apply(permit(hdr(4, 1), "pool", new_lease(10_000), 0));
    assert!(matches!(
        &full.response,
        Response::AcquireKind {
            reply: AcquireReply {
                outcome: AcquireOutcome::NotGranted {
                    reason: NotGrantedReason::Held,
                    ..
                },
                ..
            },
            slot: None
        }
    ));
    for (i, c) in (10..15).enumerate() {
        assert_eq!(
            queued(&log.apply(permit(hdr(c, 1), "pool", new_lease(10_000), 60_000))),
            i as u64 + 1
        );
    }
    assert_eq!(log.t.holders("pool").len(), 3);
    // Lease 2 (slot 1) releases: the oldest waiter (lease 4) gets slot 1 in
    // the same entry, with a token above every earlier one.
    let out = log.apply(release(hdr(2, 2), Some("pool"), 2, Some(tokens[1])));
    let g = grants(&out);
    assert_eq!(g.len(), 1);
    assert_eq!((g[0].0, g[0].2), (4, Some(1)));
    assert!(g[0].1 > tokens[2]);
    assert_eq!(
        holders(&log.t, "pool"),
        vec![
            (1, Mode::Shared, Some(0)),
            (3, Mode::Shared, Some(2)),
            (4, Mode::Shared, Some(1)),
        ]
    );
    assert_eq!(log.t.waiters("pool").len(), 4);
    assert_eq!(log.t.waiters("pool")[0].lease_id, 5);
}

// A permit lost to expiry withholds only its own slot for its lock-delay;
// the other slots are still granted, and the delay's end hands the slot to
// the next waiter.
#[test]
fn a_lost_permit_delays_only_its_slot() {
    let mut log = Log::new();
    for c in 1..=3 {
        let a = acquire_kind(
            hdr(c, 1),
            "pool",
            new_lease(10_000),
            0,
            5_000,
            SEM3,
            Mode::Shared,
        );
        granted(&log.apply(a));
    }
    // Lease 2 renews at 5 s; lease 1 (slot 0) and lease 3 (slot 2) expire
    // in one entry at 10 s.
    log.advance(5_000);
    log.apply(Command::RenewBatch(RenewBatch { lease_ids: vec![2] }));
    let out = log.tick_at(10_000);
    let delay = log.t.lock_delay("pool").expect("a delay runs");
    assert_eq!(delay.scope, DelayScope::Slots([0, 2].into()));
    assert_eq!(delay.start_index, log.index);
    assert_eq!(delay.ends_at_ms, 15_000, "counted from the leases' end");
    assert!(out.effects.iter().any(|e| matches!(
        e,
        Effect::LockDelayStarted {
            lock_delay_ms: 5_000,
            ..
        }
    )));
    // Slots 0 and 2 are withheld and slot 1 is held: a try-lock finds the
    // semaphore in lock-delay.
    let try_lock = log.apply(permit(hdr(4, 1), "pool", new_lease(10_000), 0));
    assert!(matches!(
        &try_lock.response,
        Response::AcquireKind {
            reply: AcquireReply {
                outcome: AcquireOutcome::NotGranted {
                    reason: NotGrantedReason::LockDelay,
                    ..
                },
                ..
            },
            ..
        }
    ));
    // Lease 2 releases cleanly: slot 1 is free again and granted at once.
    log.apply(release(hdr(2, 2), Some("pool"), 2, None));
    let out = log.apply(permit(hdr(5, 1), "pool", new_lease(10_000), 0));
    assert_eq!(slot(&out), Some(1));
    // A waiter queues; the delay's end grants it the lowest slot, 0.
    assert_eq!(
        queued(&log.apply(permit(hdr(6, 1), "pool", new_lease(10_000), 60_000))),
        1
    );
    assert!(
        grants(&log.tick_at(14_999)).is_empty(),
        "still in lock-delay"
    );
    let end = log.tick_at(15_000);
    let g = grants(&end);
    assert_eq!(g.len(), 1, "{g:?}");
    assert_eq!((g[0].0, g[0].2), (5, Some(0)), "lease 5, the waiter");
    assert_eq!(log.t.holders("pool").len(), 2);
}

// Read-write: readers share; a queued writer stops a later reader from
// overtaking it; when the writer frees, every reader at the head of the
// queue is granted together in that entry, each with its own token.
#[test]
fn readers_share_and_a_queued_writer_is_not_overtaken() {
    let mut log = Log::new();
    let (_, r1) = granted(&log.apply(read(hdr(1, 1), "doc", new_lease(10_000), 0, 0)));
    let (_, r2) = granted(&log.apply(read(hdr(2, 1), "doc", new_lease(10_000), 0, 0)));
    assert!(r2 > r1);
    assert_eq!(log.t.holders("doc").len(), 2);
    assert_eq!(log.t.holder("doc"), None, "no exclusive holder");
    // A writer queues behind the readers; a later reader queues behind it.
    assert_eq!(
        queued(&log.apply(write(hdr(3, 1), "doc", new_lease(10_000), 60_000))),
        1
    );
    assert_eq!(
        queued(&log.apply(read(hdr(4, 1), "doc", new_lease(10_000), 60_000, 0))),
        2
    );
    assert_eq!(
        queued(&log.apply(read(hdr(5, 1), "doc", new_lease(10_000), 60_000, 0))),
        3
    );
    // The readers release; the second release grants the writer.
    assert!(grants(&log.apply(release(hdr(1, 2), Some("doc"), 1, None))).is_empty());
    let g = grants(&log.apply(release(hdr(2, 2), Some("doc"), 2, None)));
    assert_eq!(g.iter().map(|g| g.0).collect::<Vec<_>>(), vec![3]);
    assert_eq!(holders(&log.t, "doc"), vec![(3, Mode::Exclusive, None)]);
    // The writer releases: both queued readers are granted in one entry.
    let out = log.apply(release(hdr(3, 2), Some("doc"), 3, None));
    let g = grants(&out);
    assert_eq!(g.iter().map(|g| g.0).collect::<Vec<_>>(), vec![4, 5]);
    assert!(g[0].1 < g[1].1, "S2: each grant takes its own token");
    assert!(log.t.waiters("doc").is_empty());
}

// A lost reader delays writers only: readers are still granted while the
// delay runs, a writer waits for its end. A lost writer delays everyone.
#[test]
fn a_lost_reader_delays_writers_only() {
    let mut log = Log::new();
    granted(&log.apply(read(hdr(1, 1), "doc", new_lease(10_000), 0, 5_000)));
    log.expire(1);
    let delay = log.t.lock_delay("doc").expect("delay");
    assert_eq!(delay.scope, DelayScope::Writers);
    granted(&log.apply(read(hdr(2, 1), "doc", new_lease(10_000), 0, 0)));
    assert_eq!(
        queued(&log.apply(write(hdr(3, 1), "doc", new_lease(10_000), 60_000))),
        1
    );
    log.apply(release(hdr(2, 2), Some("doc"), 2, None));
    assert_eq!(
        log.t.holders("doc"),
        vec![],
        "the writer still waits for the delay"
    );
    let end = log.tick_at(delay.ends_at_ms);
    assert_eq!(
        grants(&end).iter().map(|g| g.0).collect::<Vec<_>>(),
        vec![3]
    );
    // The writer is lost: the delay now withholds readers too.
    let w = acquire_kind(
        hdr(7, 1),
        "other",
        new_lease(10_000),
        0,
        5_000,
        LockKind::ReadWrite,
        Mode::Exclusive,
    );
    let (lease, _) = granted(&log.apply(w));
    log.expire(lease);
    assert_eq!(
        log.t.lock_delay("other").map(|d| d.scope),
        Some(DelayScope::All)
    );
    let refused = log.apply(read(hdr(8, 1), "other", new_lease(10_000), 0, 0));
    assert!(matches!(
        &refused.response,
        Response::AcquireKind {
            reply: AcquireReply {
                outcome: AcquireOutcome::NotGranted {
                    reason: NotGrantedReason::LockDelay,
                    ..
                },
                ..
            },
            ..
        }
    ));
}

// One kind per resource: another kind, or another limit, is refused with
// FailedPrecondition naming the current kind; a lease asking again gets its
// grant back only in the same mode. Nothing changes on a refusal.
#[test]
fn one_kind_per_resource_and_one_mode_per_lease() {
    let mut log = Log::new();
    granted(&log.apply(permit(hdr(1, 1), "pool", new_lease(10_000), 0)));
    let before = lock_state(&log.t);
    let other_limit = acquire_kind(
        hdr(2, 1),
        "pool",
        new_lease(10_000),
        0,
        0,
        LockKind::Semaphore { limit: 4 },
        Mode::Shared,
    );
    let e = refused(&log.apply(other_limit).response).clone();
    assert_eq!(e.code, ErrorCode::FailedPrecondition);
    assert_eq!(e.field.as_deref(), Some("limit"));
    assert!(
        e.message.contains("semaphore of 3 permits"),
        "{}",
        e.message
    );
    let mutex = log.apply(acquire(hdr(3, 1), "pool", new_lease(10_000), 0, 0));
    let e = refused(&mutex.response).clone();
    assert_eq!(
        (e.code, e.field.as_deref()),
        (ErrorCode::FailedPrecondition, Some("kind"))
    );
    assert_eq!(lock_state(&log.t), before);
    // A reader asking again as a reader gets its grant; as a writer, a refusal.
    let (lease, token) = granted(&log.apply(read(hdr(4, 1), "doc", new_lease(10_000), 0, 0)));
    let again = log.apply(read(hdr(4, 2), "doc", on(lease), 0, 0));
    assert_eq!(granted(&again), (lease, token));
    let upgrade = log.apply(write(hdr(4, 3), "doc", on(lease), 0));
    let e = refused(&upgrade.response).clone();
    assert_eq!(
        (e.code, e.field.as_deref()),
        (ErrorCode::FailedPrecondition, Some("mode"))
    );
    // Once a resource is free it may take another kind.
    log.apply(release(hdr(1, 2), Some("pool"), 1, None));
    assert_eq!(log.t.kind("pool"), None);
    granted(&log.apply(acquire(hdr(5, 1), "pool", new_lease(10_000), 0, 0)));
    assert_eq!(log.t.kind("pool"), Some(LockKind::Mutex));
}

// Bad input: a limit of 0 or above the maximum, a shared mutex, an exclusive
// permit: InvalidArgument naming the field, nothing changed, nothing recorded.
#[test]
fn bad_kinds_are_refused_naming_the_field() {
    let mut log = Log::new();
    let before = log.t.to_snapshot();
    let cases = [
        (LockKind::Semaphore { limit: 0 }, Mode::Shared, "limit"),
        (
            LockKind::Semaphore {
                limit: crate::limits::MAX_SEMAPHORE_LIMIT + 1,
            },
            Mode::Shared,
            "limit",
        ),
        (LockKind::Mutex, Mode::Shared, "mode"),
        (SEM3, Mode::Exclusive, "mode"),
    ];
    for (i, (kind, mode, field)) in cases.into_iter().enumerate() {
        let out = log.apply(acquire_kind(
            hdr(1, i as u64 + 1),
            "x",
            new_lease(10_000),
            0,
            0,
            kind,
            mode,
        ));
        let e = refused(&out.response);
        assert_eq!(
            (e.code, e.field.as_deref()),
            (ErrorCode::InvalidArgument, Some(field))
        );
        assert!(out.effects.is_empty());
    }
    assert_eq!(log.t.to_snapshot(), before);
}

// Force release without a token frees every holder (each an involuntary
// loss with its own audit record); S7: a retried acquire of a kind answers from the
// outcome table with the permit's current slot; Validate's token state knows
// shared grants.
#[test]
fn force_release_frees_every_reader_and_retries_keep_the_slot() {
    let mut log = Log::new();
    let (_, t1) = granted(&log.apply(read(hdr(1, 1), "doc", new_lease(10_000), 0, 0)));
    let (_, t2) = granted(&log.apply(read(hdr(2, 1), "doc", new_lease(10_000), 0, 0)));
    assert_eq!(log.t.token_state("doc", t1), crate::TokenState::Current);
    let out = log.apply(Command::ForceRelease(ForceRelease {
        header: hdr(9, 1),
        resource: "doc".into(),
        fencing_token: None,
        requested_by: "ops".into(),
        at_unix_ms: 0,
    }));
    let freed: Vec<_> = out
        .effects
        .iter()
        .filter_map(|e| match e {
            Effect::Freed {
                fencing_token,
                reason: FreeReason::Forced,
                ..
            } => Some(*fencing_token),
            _ => None,
        })
        .collect();
    assert_eq!(freed, vec![t1, t2]);
    assert_eq!(
        log.t
            .audit_trail()
            .map(|r| r.fencing_token)
            .collect::<Vec<_>>(),
        vec![t1, t2]
    );
    assert!(log.t.holders("doc").is_empty());
    assert_eq!(log.t.token_state("doc", t1), crate::TokenState::Stale);
    // S7: the same acquire again is a retry with the slot it holds.
    let first = log.apply(permit(hdr(3, 1), "pool", new_lease(10_000), 0));
    let second = log.apply(permit(hdr(3, 1), "pool", new_lease(10_000), 0));
    assert_eq!(granted(&first), granted(&second));
    assert_eq!(slot(&second), Some(0));
    assert!(second.effects.is_empty());
}

// Snapshots carry kinds, shared holders, slots, waiter modes and
// delay scopes, byte-identical for equal tables.
#[test]
fn snapshots_carry_every_kind() {
    let mut log = Log::new();
    granted(&log.apply(permit(hdr(1, 1), "pool", new_lease(10_000), 0)));
    granted(&log.apply(read(hdr(2, 1), "doc", new_lease(10_000), 0, 5_000)));
    queued(&log.apply(write(hdr(3, 1), "doc", new_lease(10_000), 60_000)));
    let a = acquire_kind(
        hdr(4, 1),
        "pool",
        new_lease(10_000),
        0,
        5_000,
        SEM3,
        Mode::Shared,
    );
    let (lease, _) = granted(&log.apply(a));
    // The others renew; lease 4 alone expires.
    log.advance(5_000);
    log.apply(Command::RenewBatch(RenewBatch {
        lease_ids: vec![1, 2, 3],
    }));
    log.expire(lease);
    let bytes = log.t.to_snapshot();
    let back = LockTable::from_snapshot(&bytes).expect("load");
    assert_eq!(back, log.t);
    assert_eq!(back.to_snapshot(), bytes);
    assert_eq!(back.kind("pool"), Some(SEM3));
    assert_eq!(
        back.lock_delay("pool").map(|d| d.scope),
        Some(DelayScope::Slots([1].into()))
    );
    assert_eq!(back.waiters("doc").len(), 1);
}

// Two losses in different entries: the running delay is ended and one
// delay starts at the second loss, for the longer of the two delays, with
// both scopes (docs/semantics.md "Lock kinds", lock-delay): never shorter
// than either (it ends at the later of the two ends). The effects end the
// old delay and start the new one, so watchers see exactly one.
#[test]
fn a_second_loss_merges_the_delays_into_the_longer_one() {
    let mut log = Log::new();
    let a = acquire_kind(
        hdr(1, 1),
        "pool",
        new_lease(10_000),
        0,
        5_000,
        SEM3,
        Mode::Shared,
    );
    let b = acquire_kind(
        hdr(2, 1),
        "pool",
        new_lease(10_000),
        0,
        1_000,
        SEM3,
        Mode::Shared,
    );
    granted(&log.apply(a));
    granted(&log.apply(b));
    // Lease 2 renews at 3 s: lease 1 ends at 10 s, lease 2 at 13 s.
    log.advance(3_000);
    log.apply(Command::RenewBatch(RenewBatch { lease_ids: vec![2] }));
    log.expire(1);
    let first = log.t.lock_delay("pool").expect("first delay");
    assert_eq!(
        (first.lock_delay_ms, first.ends_at_ms, first.scope.clone()),
        (5_000, 15_000, DelayScope::Slots([0].into()))
    );
    let out = log.expire(2);
    let merged = log.t.lock_delay("pool").expect("merged delay");
    assert_eq!(merged.start_index, log.index);
    assert_eq!(
        (merged.lock_delay_ms, merged.ends_at_ms),
        (5_000, 15_000),
        "the longer delay and the later end, not lease 2's 14 s"
    );
    assert_eq!(merged.scope, DelayScope::Slots([0, 1].into()));
    let ended = out.effects.iter().position(|e| {
        matches!(e, Effect::LockDelayEnded { start_index, .. } if *start_index == first.start_index)
    });
    let started = out.effects.iter().position(|e| {
        matches!(e, Effect::LockDelayStarted { start_index, lock_delay_ms: 5_000, .. } if *start_index == merged.start_index)
    });
    assert!(ended.is_some() && ended < started, "{:?}", out.effects);
    // Lease 2's own delay would have ended at 14 s: the merged one runs on.
    log.tick_at(14_000);
    assert_eq!(log.t.lock_delay("pool"), Some(merged));
    log.tick_at(15_000);
    assert_eq!(log.t.lock_delay("pool"), None);
}

// Security: an acquire of another kind needs `lock` on the resource, as a
// mutex acquire does (warden_core::auth); without it, PermissionDenied
// naming the resource, and nothing is held.
#[test]
fn a_permit_or_a_read_grant_needs_lock_on_the_resource() {
    let mut log = Log::new();
    log.root(grant_perm("jobs", "jobs/", Permission::Lock));
    log.root(grant_role("alice", "jobs"));
    for (i, (kind, mode)) in [(SEM3, Mode::Shared), (LockKind::ReadWrite, Mode::Shared)]
        .into_iter()
        .enumerate()
    {
        let outside = acquire_kind(
            hdr(1, i as u64 * 2 + 1),
            "other/x",
            new_lease(10_000),
            0,
            0,
            kind,
            mode,
        );
        let out = log.apply(as_("alice", outside));
        let e = refused(&out.response);
        assert_eq!(
            (e.code, e.field.as_deref()),
            (ErrorCode::PermissionDenied, Some("resource"))
        );
        assert!(log.t.holders("other/x").is_empty());
        let inside = acquire_kind(
            hdr(1, i as u64 * 2 + 2),
            &format!("jobs/{i}"),
            new_lease(10_000),
            0,
            0,
            kind,
            mode,
        );
        granted(&log.apply(as_("alice", inside)));
    }
}
