//! Published values (`Proclaim`) and the election namespace.

use super::*;
use crate::limits::{ELECTION_PREFIX, MAX_VALUE_BYTES};

fn proclaim(resource: &str, lease_id: LeaseId, token: Option<u64>, value: &str) -> Command {
    Command::Proclaim(Proclaim {
        resource: resource.into(),
        lease_id,
        fencing_token: token,
        value: value.into(),
    })
}

fn key(name: &str) -> String {
    format!("{ELECTION_PREFIX}{name}")
}

// Elections live in their own namespace (docs/semantics.md "Words"): an election key
// never meets the lock of the same name, and its name obeys the resource rules.
#[test]
fn election_keys_are_apart_from_lock_names() {
    let mut log = Log::new();
    let (_, lock_token) = granted(&log.apply(acquire(hdr(1, 1), "jobs", new_lease(10_000), 0, 0)));
    let (_, election_token) =
        granted(&log.apply(acquire(hdr(1, 2), &key("jobs"), new_lease(10_000), 0, 0)));
    assert_eq!((lock_token, election_token), (1, 2));
    assert_eq!(log.t.holder("jobs").unwrap().fencing_token, 1);
    assert_eq!(log.t.holder(&key("jobs")).unwrap().fencing_token, 2);
    // A name a user cannot type as a lock, and a bare prefix, are refused.
    assert!(crate::validate::resource(&key("x")).is_ok());
    assert_eq!(
        crate::validate::resource(ELECTION_PREFIX)
            .unwrap_err()
            .field
            .as_deref(),
        Some("resource")
    );
    assert!(crate::validate::resource(&key("a\u{1}b")).is_err());
}

// etcd's Proclaim, kept safe by the fencing token: a candidate publishes before
// it holds; the holder may change its value; a deposed holder cannot (S6).
#[test]
fn proclaim_needs_the_exact_grant_and_values_end_with_it() {
    let mut log = Log::new();
    let e = key("scheduler");
    log.apply(lease_grant(hdr(1, 1), 10_000)); // lease 1
    log.apply(lease_grant(hdr(2, 1), 10_000)); // lease 2
    assert!(matches!(
        log.apply(proclaim(&e, 1, None, "node-a")).response,
        Response::Proclaimed { lease_id: 1, .. }
    ));
    let (_, t1) = granted(&log.apply(acquire(hdr(1, 2), &e, on(1), 0, 0)));
    assert_eq!(log.t.value(1, &e), Some("node-a"));
    // Lease 2 stands too, and waits.
    log.apply(proclaim(&e, 2, None, "node-b"));
    log.apply(acquire(hdr(2, 2), &e, on(2), 60_000, 0));
    // The holder updates its value with its grant; a wrong token is refused
    // and changes nothing.
    log.apply(proclaim(&e, 1, Some(t1), "node-a v2"));
    assert_eq!(log.t.value(1, &e), Some("node-a v2"));
    let before = lock_state(&log.t);
    match log.apply(proclaim(&e, 1, Some(t1 + 7), "forged")).response {
        Response::Error(err) => {
            assert_eq!(err.code, ErrorCode::FailedPrecondition);
            assert_eq!(err.field.as_deref(), Some("fencing_token"));
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
    assert_eq!(lock_state(&log.t), before);
    // Resign: the release hands off to lease 2, whose candidate value is now
    // the leader's; lease 1's value is gone with its grant.
    log.apply(release(hdr(1, 3), Some(&e), 1, Some(t1)));
    let h = log.t.holder(&e).unwrap();
    assert_eq!(h.lease_id, 2);
    assert!(h.fencing_token > t1);
    assert_eq!(log.t.value(2, &e), Some("node-b"));
    assert_eq!(log.t.value(1, &e), None);
    // The deposed leader's proclaim with its old grant is refused.
    assert!(matches!(
        log.apply(proclaim(&e, 1, Some(t1), "still me")).response,
        Response::Error(CommandError {
            code: ErrorCode::FailedPrecondition,
            ..
        })
    ));
    // Values of an expired lease go with it.
    log.expire(2);
    assert_eq!(log.t.value(2, &e), None);
    assert_eq!(log.t.holder(&e), None);
}

// "What bad input gets": an oversized value, an unknown lease — typed errors
// naming the field; nothing changes.
#[test]
fn bad_proclaims_are_refused_with_a_named_field() {
    let mut log = Log::new();
    log.apply(lease_grant(hdr(1, 1), 10_000));
    let before = lock_state(&log.t);
    let big = "v".repeat(MAX_VALUE_BYTES + 1);
    for (cmd, code, field) in [
        (
            proclaim(&key("e"), 1, None, &big),
            ErrorCode::InvalidArgument,
            "value",
        ),
        (
            proclaim(&key("e"), 9, None, "x"),
            ErrorCode::NotFound,
            "lease_id",
        ),
        (
            proclaim("", 1, None, "x"),
            ErrorCode::InvalidArgument,
            "resource",
        ),
    ] {
        match log.apply(cmd).response {
            Response::Error(e) => {
                assert_eq!(e.code, code);
                assert_eq!(e.field.as_deref(), Some(field));
            }
            other => panic!("expected a refusal, got {other:?}"),
        }
    }
    assert_eq!(lock_state(&log.t), before);
    assert!(log
        .apply(proclaim(&key("e"), 1, None, &"v".repeat(MAX_VALUE_BYTES)))
        .response
        .eq(&Response::Proclaimed {
            resource: key("e"),
            lease_id: 1
        }));
}

// Snapshots carry published values.
#[test]
fn snapshots_keep_values() {
    let mut log = Log::new();
    log.apply(lease_grant(hdr(1, 1), 10_000));
    log.apply(proclaim(&key("e"), 1, None, "hello"));
    let bytes = log.t.to_snapshot();
    assert_eq!(bytes[0], crate::SNAPSHOT_VERSION);
    let back = LockTable::from_snapshot(&bytes).unwrap();
    assert_eq!(back, log.t);
    assert_eq!(back.value(1, &key("e")), Some("hello"));
}
