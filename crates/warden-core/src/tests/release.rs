//! Involuntary losses and their lock-delay, forced releases and their
//! audit trail, revoke, and the cluster-wide lease limit.

use super::*;
use crate::effect::Effect;

// Chubby/Consul lock-delay after an involuntary loss: a 5000 ms delay,
// counted from the lease's end, blocks grants until cluster time reaches
// its end; then the waiter is granted in that entry.
#[test]
fn lock_delay_blocks_until_its_end() {
    let mut log = Log::new();
    log.apply(acquire(hdr(1, 1), "db", new_lease(2_000), 0, 5_000)); // lease 1, token 1, index 1
    let out = log.expire(1); // index 2 at 2 s: the delay starts
    assert!(out.effects.contains(&Effect::LockDelayStarted {
        resource: "db".into(),
        start_index: 2,
        lock_delay_ms: 5_000,
        ends_at_ms: 7_000,
    }));
    let d = log.t.lock_delays();
    assert_eq!((d.len(), d[0].start_index, d[0].ends_at_ms), (1, 2, 7_000));
    let t = log.apply(acquire(hdr(2, 1), "db", new_lease(2_000), 0, 0)); // index 3
    assert!(matches!(
        t.response,
        Response::Acquire(AcquireReply {
            outcome: AcquireOutcome::NotGranted {
                reason: NotGrantedReason::LockDelay,
                holder_lease_id: None,
                ..
            },
            ..
        })
    ));
    log.apply(acquire(hdr(3, 1), "db", new_lease(9_000), 20_000, 0)); // index 4: lease 2 waits
    assert!(log.tick_at(6_999).effects.is_empty());
    assert_eq!(log.t.holder("db"), None);
    let out = log.tick_at(7_000);
    assert_eq!(
        out.effects.first(),
        Some(&Effect::LockDelayEnded {
            resource: "db".into(),
            start_index: 2
        })
    );
    assert_eq!(
        log.t.holder("db").map(|h| (h.lease_id, h.fencing_token)),
        Some((2, 2))
    );
    // A clean release starts no delay.
    log.apply(release(hdr(3, 2), Some("db"), 2, Some(2)));
    assert!(log.t.lock_delays().is_empty());
    assert!(log.t.holder("db").is_none());
}

// S6 / lock-delay: ForceRelease is involuntary (delay applies) and honours the token.
#[test]
fn force_release_applies_lock_delay() {
    let mut log = Log::new();
    log.apply(acquire(hdr(1, 1), "q", new_lease(2_000), 0, 1_000));
    let out = log.apply(Command::ForceRelease(ForceRelease {
        header: hdr(9, 1),
        resource: "q".into(),
        fencing_token: Some(1),
        requested_by: "ops".into(),
        at_unix_ms: 0,
    }));
    assert_eq!(
        out.response,
        Response::Released {
            resource: "q".into(),
            lease_id: 1,
            fencing_token: 1
        }
    );
    assert!(out.effects.contains(&Effect::LockDelayStarted {
        resource: "q".into(),
        start_index: 2,
        lock_delay_ms: 1_000,
        ends_at_ms: 1_000,
    }));
    assert!(
        log.t.lease(1).is_none(),
        "the auto lease lost its only lock"
    );
}

// Revoke frees locks cleanly (no lock-delay), removes waits, and hands off (S8).
#[test]
fn revoke_frees_and_hands_off() {
    let mut log = Log::new();
    log.apply(lease_grant(hdr(1, 1), 5_000)); // lease 1
    log.apply(acquire(hdr(1, 2), "a", on(1), 0, 3_000));
    log.apply(acquire(hdr(2, 1), "b", new_lease(5_000), 0, 0)); // lease 2 holds b
    log.apply(acquire(hdr(1, 3), "b", on(1), 10_000, 0)); // lease 1 waits on b
    log.apply(acquire(hdr(3, 1), "a", new_lease(5_000), 10_000, 0)); // lease 3 waits on a
    let out = log.apply(Command::Revoke(Revoke {
        header: hdr(1, 4),
        lease_id: 1,
        at_unix_ms: 0,
    }));
    assert_eq!(out.response, Response::Revoked { lease_id: 1 });
    assert!(log.t.lock_delays().is_empty());
    assert_eq!(
        log.t.holder("a").map(|h| (h.lease_id, h.fencing_token)),
        Some((3, 3))
    );
    assert!(log.t.waiters("b").is_empty());
}

fn force(h: RequestHeader, resource: &str, who: &str, at_unix_ms: u64) -> Command {
    Command::ForceRelease(ForceRelease {
        header: h,
        resource: resource.into(),
        fencing_token: None,
        requested_by: who.into(),
        at_unix_ms,
    })
}

// S2, S7 and the audit trail (docs/operations.md): a forced release is recorded (who, when, which
// grant) in the replicated audit trail, saved in snapshots; a retry with a new
// display-only wall-clock stamp replays instead of being refused or recorded
// twice; the next grant's token is larger.
#[test]
fn force_release_is_audited_and_next_token_is_larger() {
    let mut log = Log::new();
    let (lease, token) = granted(&log.apply(acquire(hdr(1, 1), "q", new_lease(5_000), 0, 0)));
    let out = log.apply(force(hdr(9, 1), "q", "alice@ops (127.0.0.1)", 1_700));
    assert!(matches!(out.response, Response::Released { .. }));
    let trail: Vec<_> = log.t.audit_trail().cloned().collect();
    assert_eq!(
        trail,
        vec![AuditRecord {
            index: 2,
            resource: "q".into(),
            lease_id: lease,
            fencing_token: token,
            requested_by: "alice@ops (127.0.0.1)".into(),
            at_unix_ms: 1_700,
        }]
    );
    // The retry carries another wall-clock stamp: same outcome, no new record.
    let retry = log.apply(force(hdr(9, 1), "q", "alice@ops (127.0.0.1)", 9_999));
    assert_eq!(retry.response, out.response);
    assert!(retry.effects.is_empty());
    assert_eq!(log.t.audit_trail().count(), 1);
    let (_, next) = granted(&log.apply(acquire(hdr(2, 1), "q", new_lease(5_000), 0, 0)));
    assert!(next > token, "S2: {next} > {token}");
    // The trail is in the snapshot.
    let back = LockTable::from_snapshot(&log.t.to_snapshot()).expect("load");
    assert_eq!(back, log.t);
    assert_eq!(back.audit_trail().count(), 1);
    // A bad requested_by is refused, naming the field; nothing changes.
    let before = lock_state(&log.t);
    match log.apply(force(hdr(9, 2), "q", "", 1)).response {
        Response::Error(e) => assert_eq!(e.field.as_deref(), Some("requested_by")),
        other => panic!("{other:?}"),
    }
    assert_eq!(lock_state(&log.t), before);
}

// The audit trail (docs/operations.md): is bounded (oldest records dropped first).
#[test]
fn audit_trail_is_bounded() {
    use crate::limits::MAX_AUDIT_RECORDS;
    let mut log = Log::new();
    let n = MAX_AUDIT_RECORDS as u64 + 5;
    for i in 1..=n {
        let h = RequestHeader {
            client_id: 1,
            request_id: i,
            acked_request_id: i - 1,
        };
        granted(&log.apply(acquire(h, "r", new_lease(5_000), 0, 0)));
        let h = RequestHeader {
            client_id: 2,
            request_id: i,
            acked_request_id: i - 1,
        };
        let out = log.apply(force(h, "r", "ops", i));
        assert!(
            matches!(out.response, Response::Released { .. }),
            "{i}: {:?}",
            out.response
        );
    }
    let trail: Vec<_> = log.t.audit_trail().collect();
    assert_eq!(trail.len(), MAX_AUDIT_RECORDS);
    assert_eq!(trail[0].at_unix_ms, 6, "the oldest five were dropped");
    assert_eq!(trail[MAX_AUDIT_RECORDS - 1].at_unix_ms, n);
}

// "What bad input gets", the cluster-wide lease limit; a refusal is ResourceExhausted
// naming MAX_LEASES and changes nothing; an existing lease still acquires.
#[test]
fn lease_limit_is_enforced_with_a_named_error() {
    use crate::limits::MAX_LEASES;
    let mut t = LockTable::new();
    for i in 1..=MAX_LEASES as u64 {
        let h = RequestHeader {
            client_id: 1,
            request_id: i,
            acked_request_id: i - 1,
        };
        t.apply(i, L1, stamp(L1, 0), &lease_grant(h, 60_000));
    }
    assert_eq!(t.lease_count(), MAX_LEASES);
    let mut log = Log::of(t, MAX_LEASES as u64);
    let before = lock_state(&log.t);
    for cmd in [
        lease_grant(hdr(2, 1), 60_000),
        acquire(hdr(2, 2), "x", new_lease(5_000), 0, 0),
        acquire(hdr(2, 3), "x", new_lease(5_000), 1_000, 0),
    ] {
        match log.apply(cmd).response {
            Response::Error(e) => {
                assert_eq!(e.code, ErrorCode::ResourceExhausted);
                assert!(e.message.contains("MAX_LEASES"), "{}", e.message);
            }
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(lock_state(&log.t), before);
    granted(&log.apply(acquire(hdr(2, 4), "x", on(1), 0, 0)));
}
