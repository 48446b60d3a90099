//! Quotas, cluster-wide limits and the outcome table's bounds with
//! identities (see `crate::auth`, "Quotas and limits", and S7).

use super::*;
use crate::auth::Usage;
use crate::limits::{DEFAULT_QUOTA_CLIENTS, DEFAULT_QUOTA_LEASES, MAX_CLIENTS};

/// A table where the role `lockers` holds lock on `""` and each of `users`
/// holds that role.
fn lockers(users: &[&str]) -> Log {
    let mut log = Log::new();
    log.root(grant_perm("lockers", "", Permission::Lock));
    for u in users {
        log.root(grant_role(u, "lockers"));
    }
    log
}

/// The next entry without the per-entry invariant check (for loops of
/// thousands of entries; the callers check the invariants at the end).
fn fast(log: &mut Log, cmd: Command) -> Response {
    log.index += 1;
    log.t
        .apply(log.index, log.leader, log.stamp(), &cmd)
        .response
}

/// Client `client`'s `n`-th request, acknowledging the one before.
fn nth(client: ClientId, n: RequestId) -> RequestHeader {
    RequestHeader {
        client_id: client,
        request_id: n,
        acked_request_id: n - 1,
    }
}

fn set_quota(role: &str, quota: Quota) -> AuthOp {
    AuthOp::SetRoleQuota {
        role: role.into(),
        quota: Some(quota),
    }
}

// Quotas (crate::auth): mallory creating leases in a loop hits the default
// quota of 10,000 with ResourceExhausted naming the quota, the principal and
// the limit, and nothing changes; alice is served as before; a role quota
// raises mallory's; of several roles the largest quota wins, per field.
#[test]
fn a_principal_over_its_lease_quota_is_refused_and_others_are_served() {
    let mut log = lockers(&["mallory", "alice"]);
    for n in 1..=DEFAULT_QUOTA_LEASES {
        let r = fast(&mut log, as_("mallory", lease_grant(nth(7, n), 60_000)));
        assert!(matches!(r, Response::LeaseGranted { .. }), "{n}: {r:?}");
    }
    assert_eq!(log.t.check_invariants(), Ok(()));
    assert_eq!(log.t.usage("mallory").leases, DEFAULT_QUOTA_LEASES);
    let before = lock_state(&log.t);
    let next = DEFAULT_QUOTA_LEASES + 1;
    for cmd in [
        lease_grant(nth(7, next), 60_000),
        acquire(nth(7, next + 1), "m/1", new_lease(5_000), 0, 0),
        acquire(nth(7, next + 2), "m/1", new_lease(5_000), 10_000, 0),
    ] {
        let out = log.apply(as_("mallory", cmd));
        let e = refused(&out.response);
        assert_eq!(e.code, ErrorCode::ResourceExhausted);
        assert_eq!(e.field.as_deref(), Some("quota.leases"));
        assert_eq!(
            e.message,
            "quota leases of principal mallory reached: 10000 (raise it per role)"
        );
        assert!(out.effects.is_empty());
    }
    assert_eq!(lock_state(&log.t), before);
    // Her existing leases still acquire (no new lease), and alice is served.
    granted(&log.apply(as_(
        "mallory",
        acquire(nth(7, next + 3), "m/1", on(1), 0, 0),
    )));
    granted(&log.apply(as_(
        "alice",
        acquire(hdr(1, 1), "a/1", new_lease(5_000), 0, 0),
    )));
    // A role quota raises mallory's.
    let big = Quota {
        leases: DEFAULT_QUOTA_LEASES + 2,
        ..Quota::default()
    };
    log.root(set_quota("big", big));
    log.root(grant_role("mallory", "big"));
    assert_eq!(log.t.effective_quota(Some("mallory")), Some(big));
    for n in next + 4..next + 6 {
        assert!(matches!(
            log.apply(as_("mallory", lease_grant(nth(7, n), 60_000)))
                .response,
            Response::LeaseGranted { .. }
        ));
    }
    let out = log.apply(as_("mallory", lease_grant(nth(7, next + 6), 60_000)));
    assert_eq!(
        refused(&out.response).message,
        "quota leases of principal mallory reached: 10002 (raise it per role)"
    );
    // Several roles: per field, the largest quota set by one of them.
    log.root(set_quota(
        "small",
        Quota {
            leases: 5,
            locks: 200_000,
            waiters: 3,
            clients: 1,
            ..Quota::default()
        },
    ));
    log.root(grant_role("mallory", "small"));
    assert_eq!(
        log.t.effective_quota(Some("mallory")),
        Some(Quota {
            leases: DEFAULT_QUOTA_LEASES + 2,
            locks: 200_000,
            waiters: Quota::default().waiters,
            clients: Quota::default().clients,
            ..Quota::default()
        })
    );
    // Root and anonymous callers have no quota; alice has the default.
    assert_eq!(log.t.effective_quota(Some("root")), None);
    assert_eq!(log.t.effective_quota(None), None);
    assert_eq!(log.t.effective_quota(Some("alice")), Some(Quota::default()));
}

// Quotas of locks (held grants + queued waits) and waiters (queued waits),
// counted on the principal's leases; lowering a quota takes nothing away;
// root and anonymous callers are bound only by the cluster-wide limits.
#[test]
fn lock_and_waiter_quotas_count_held_and_queued() {
    let mut log = lockers(&["mallory", "alice"]);
    log.root(AuthOp::SetLimits(ClusterLimits {
        default_quota: Quota {
            leases: 100,
            locks: 4,
            waiters: 1,
            clients: 100,
            ..Quota::default()
        },
        ..ClusterLimits::default()
    }));
    granted(&log.apply(as_(
        "alice",
        acquire(hdr(1, 1), "c", new_lease(9_000), 0, 0),
    )));
    granted(&log.apply(as_(
        "alice",
        acquire(hdr(1, 2), "d", new_lease(9_000), 0, 0),
    )));
    let out = log.apply(as_("mallory", lease_grant(hdr(7, 1), 60_000)));
    let Response::LeaseGranted { lease_id: s, .. } = out.response else {
        panic!("{out:?}")
    };
    granted(&log.apply(as_("mallory", acquire(hdr(7, 2), "a", on(s), 0, 0))));
    granted(&log.apply(as_("mallory", acquire(hdr(7, 3), "b", on(s), 0, 0))));
    let q = log.apply(as_("mallory", acquire(hdr(7, 4), "c", on(s), 60_000, 0)));
    assert!(matches!(
        q.response,
        Response::Acquire(AcquireReply {
            outcome: AcquireOutcome::Queued { .. },
            ..
        })
    ));
    let out = log.apply(as_("mallory", acquire(hdr(7, 5), "d", on(s), 60_000, 0)));
    assert_eq!(
        refused(&out.response).message,
        "quota waiters of principal mallory reached: 1 (raise it per role)"
    );
    assert_eq!(
        refused(&out.response).field.as_deref(),
        Some("quota.waiters")
    );
    assert!(log.t.waiters("d").is_empty());
    granted(&log.apply(as_("mallory", acquire(hdr(7, 6), "e", on(s), 0, 0))));
    let out = log.apply(as_("mallory", acquire(hdr(7, 7), "f", on(s), 0, 0)));
    assert_eq!(
        refused(&out.response).message,
        "quota locks of principal mallory reached: 4 (raise it per role)"
    );
    assert!(log.t.holder("f").is_none());
    assert_eq!(
        log.t.usage("mallory"),
        Usage {
            leases: 1,
            locks: 4,
            waiters: 1,
            clients: 1,
            ..Usage::default()
        }
    );
    // Alice holds c and d and still acquires.
    granted(&log.apply(as_(
        "alice",
        acquire(hdr(1, 3), "g", new_lease(9_000), 0, 0),
    )));
    // Lowering the quota takes nothing away; one release makes no room.
    log.root(AuthOp::SetLimits(ClusterLimits {
        default_quota: Quota {
            leases: 100,
            locks: 2,
            waiters: 1,
            clients: 100,
            ..Quota::default()
        },
        ..ClusterLimits::default()
    }));
    assert_eq!(log.t.lease(s).map(|l| l.locks.len()), Some(3));
    log.apply(as_("mallory", release(hdr(7, 8), Some("e"), s, None)));
    let out = log.apply(as_("mallory", acquire(hdr(7, 9), "e", on(s), 0, 0)));
    assert_eq!(refused(&out.response).field.as_deref(), Some("quota.locks"));
    // Root and anonymous callers: no quota.
    for (caller, client) in [(Some("root"), 50), (None, 51)] {
        let out = log.apply(by(caller, lease_grant(hdr(client, 1), 60_000)));
        let Response::LeaseGranted { lease_id, .. } = out.response else {
            panic!("{out:?}")
        };
        for (n, r) in ["r1", "r2", "r3", "r4", "r5"].iter().enumerate() {
            let resource = format!("{client}/{r}");
            granted(&log.apply(by(
                caller,
                acquire(hdr(client, n as u64 + 2), &resource, on(lease_id), 0, 0),
            )));
        }
    }
}

// The cluster-wide max_leases is replicated and binds every command, wrapped
// or not, root's too; the refusal names the limit.
#[test]
fn max_leases_binds_every_command() {
    let mut log = lockers(&["alice"]);
    log.root(AuthOp::SetLimits(ClusterLimits {
        max_leases: 2,
        ..ClusterLimits::default()
    }));
    log.apply(lease_grant(hdr(1, 1), 5_000));
    log.apply(as_("alice", lease_grant(hdr(2, 1), 5_000)));
    for cmd in [
        lease_grant(hdr(1, 2), 5_000),
        as_("alice", lease_grant(hdr(2, 2), 5_000)),
        as_("root", acquire(hdr(3, 1), "x", new_lease(5_000), 0, 0)),
    ] {
        let out = log.apply(cmd);
        let e = refused(&out.response);
        assert_eq!(e.code, ErrorCode::ResourceExhausted);
        assert!(
            e.message
                .starts_with("the cluster holds at most 2 live leases (max_leases"),
            "{}",
            e.message
        );
    }
    assert_eq!(log.t.lease_count(), 2);
}

// S7 with identities (a retry ran twice when a record was evicted to make
// room): 16,500 new client ids from mallory never evict alice's record:
// past her clients quota (4,096) she is refused and nothing is recorded; with
// a raised quota her records pass the legacy bound (16,384) and alice's
// record still stands; past max_clients every new client id is refused.
// Alice's retry returns its first outcome and never runs twice.
#[test]
fn new_client_ids_never_evict_another_principals_record() {
    let mut log = lockers(&["mallory", "alice"]);
    let first = as_(
        "alice",
        acquire(hdr(1, 1), "ledger", new_lease(15_000), 0, 0),
    );
    let (lease, token) = granted(&log.apply(first.clone()));
    let junk = |c: u64| {
        as_(
            "mallory",
            release(hdr(1_000 + c, 1), Some("x"), 999_999, None),
        )
    };
    let mut refusals = 0;
    for c in 1..=16_500u64 {
        match fast(&mut log, junk(c)) {
            Response::Error(e) if e.code == ErrorCode::NotFound => {}
            Response::Error(e) if e.code == ErrorCode::ResourceExhausted => {
                assert_eq!(e.field.as_deref(), Some("quota.clients"));
                assert_eq!(
                    e.message,
                    "quota clients of principal mallory reached: 4096 (raise it per role)"
                );
                refusals += 1;
            }
            other => panic!("{c}: {other:?}"),
        }
    }
    assert_eq!(refusals, 16_500 - DEFAULT_QUOTA_CLIENTS);
    assert_eq!(log.t.usage("mallory").clients, DEFAULT_QUOTA_CLIENTS);
    // Refused ids were not recorded.
    assert!(log
        .t
        .outcome_table()
        .record_of(Some("mallory"), 1_000 + DEFAULT_QUOTA_CLIENTS + 1)
        .is_none());
    // A role quota lets mallory's records pass the legacy bound.
    log.root(set_quota(
        "many",
        Quota {
            clients: 20_000,
            ..Quota::default()
        },
    ));
    log.root(grant_role("mallory", "many"));
    for c in 1..=16_500u64 {
        let r = fast(&mut log, junk(c));
        assert_eq!(refused(&r).code, ErrorCode::NotFound, "{c}");
    }
    assert_eq!(log.t.usage("mallory").clients, 16_500);
    assert!(log.t.outcome_stats().clients > MAX_CLIENTS);
    assert!(log.t.outcome_table().record_of(Some("alice"), 1).is_some());
    // max_clients: the cluster is full; no record is evicted for anyone.
    let total = log.t.outcome_stats().clients as u64;
    log.root(AuthOp::SetLimits(ClusterLimits {
        max_clients: total,
        ..ClusterLimits::default()
    }));
    let r = fast(&mut log, junk(16_501));
    let e = refused(&r);
    assert_eq!(
        (e.code, e.field.as_deref()),
        (ErrorCode::ResourceExhausted, Some("client_id"))
    );
    assert!(e.message.contains("max_clients"), "{}", e.message);
    let r = log.apply(as_("alice", lease_grant(hdr(2, 1), 5_000)));
    assert!(refused(&r.response).message.contains("max_clients"));
    assert_eq!(log.t.check_invariants(), Ok(()));
    // Alice's retry: the first outcome, never a second execution.
    let next_token = log.t.next_token();
    let retry = log.apply(first);
    let Response::Acquire(reply) = &retry.response else {
        panic!("{retry:?}")
    };
    assert!(reply.retried && reply.lease_live);
    assert!(matches!(
        reply.outcome,
        AcquireOutcome::Granted { fencing_token, lease_id, .. } if fencing_token == token && lease_id == lease
    ));
    assert!(retry.effects.is_empty());
    assert_eq!(log.t.next_token(), next_token);
    // Her client id has a record, so her next request has room.
    assert!(matches!(
        log.apply(as_(
            "alice",
            release(hdr(1, 2), Some("ledger"), lease, Some(token))
        ))
        .response,
        Response::Released { .. }
    ));
}

// Legacy commands keep their LRU bound (MAX_CLIENTS), but their eviction only
// ever replaces a `(None, _)` record: a principal's record survives 16,484
// new legacy clients; with no `(None, _)` record to replace, a new legacy
// client is refused ResourceExhausted and nothing changes.
#[test]
fn legacy_eviction_never_evicts_a_principals_record() {
    let mut log = lockers(&["alice"]);
    let first = as_("alice", acquire(hdr(1, 1), "a", new_lease(15_000), 0, 0));
    let (_, token) = granted(&log.apply(first.clone()));
    let n = MAX_CLIENTS as u64 + 100;
    for c in 1..=n {
        let r = fast(
            &mut log,
            release(hdr(1_000 + c, 1), Some("x"), 999_999, None),
        );
        assert_eq!(refused(&r).code, ErrorCode::NotFound, "{c}");
    }
    assert_eq!(log.t.check_invariants(), Ok(()));
    assert_eq!(log.t.outcome_stats().clients, MAX_CLIENTS);
    // root's and alice's records stand; the oldest legacy ones went.
    let table = log.t.outcome_table();
    assert!(table.record_of(Some("alice"), 1).is_some());
    assert!(table.record_of(Some("root"), 999_999).is_some());
    assert!(table.client(1_001).is_none());
    assert!(table.client(1_000 + n).is_some());
    let retry = log.apply(first);
    assert!(matches!(
        &retry.response,
        Response::Acquire(AcquireReply { retried: true, current_token: Some(t), .. }) if *t == token
    ));

    // No `(None, _)` record at all: a new legacy client is refused.
    let mut log = lockers(&["mallory"]);
    log.root(set_quota(
        "many",
        Quota {
            clients: 20_000,
            ..Quota::default()
        },
    ));
    log.root(grant_role("mallory", "many"));
    for c in 1..=MAX_CLIENTS as u64 {
        fast(
            &mut log,
            as_("mallory", release(hdr(c, 1), Some("x"), 999_999, None)),
        );
    }
    assert!(log.t.outcome_stats().clients > MAX_CLIENTS);
    let before = log.t.to_snapshot();
    let out = log.apply(acquire(hdr(777_777, 1), "free", new_lease(5_000), 0, 0));
    let e = refused(&out.response);
    assert_eq!(e.code, ErrorCode::ResourceExhausted);
    assert_eq!(e.field.as_deref(), Some("client_id"));
    assert!(e.message.contains("MAX_CLIENTS"), "{}", e.message);
    assert!(out.effects.is_empty());
    assert_eq!(log.t.to_snapshot(), before);
}

// S7 across the upgrade: a legacy command and a wrapped anonymous one with
// the same client id share the `(None, id)` record (a request proposed
// unwrapped and retried wrapped finds its outcome); a principal's retry of a
// request recorded unwrapped is request_expired, never a second execution;
// the same client id under a principal is a record of its own.
#[test]
fn legacy_and_anonymous_share_records_and_principals_never_run_a_legacy_request_twice() {
    let mut log = lockers(&["alice"]);
    let cmd = acquire(hdr(5, 1), "ledger", new_lease(15_000), 0, 0);
    let (lease, token) = granted(&log.apply(cmd.clone()));
    let retry = log.apply(by(None, cmd.clone()));
    let Response::Acquire(r) = &retry.response else {
        panic!("{retry:?}")
    };
    assert!(r.retried);
    assert!(
        matches!(r.outcome, AcquireOutcome::Granted { fencing_token, .. } if fencing_token == token)
    );
    // A principal retrying it: refused, not run again.
    let before = lock_state(&log.t);
    let out = log.apply(as_("alice", cmd));
    let e = refused(&out.response);
    assert_eq!(e.code, ErrorCode::RequestExpired);
    assert!(e.message.starts_with("request_expired"), "{}", e.message);
    assert_eq!(lock_state(&log.t), before);
    assert!(log.t.outcome_table().record_of(Some("alice"), 5).is_none());
    // Alice's own request under the same client id is hers.
    granted(&log.apply(as_(
        "alice",
        acquire(hdr(5, 2), "other", new_lease(15_000), 0, 0),
    )));
    assert!(log.t.outcome_table().record_of(Some("alice"), 5).is_some());
    assert_eq!(log.t.holder("ledger").map(|h| h.lease_id), Some(lease));
}

// S7 idle clients: DropClients keeps its format and drops every record of
// the named client id whose last_index matches, whatever its principal;
// `clients()` lists each id once (its newest record), `client_records()`
// every record with its principal.
#[test]
fn drop_clients_drops_idle_records_of_every_principal() {
    let mut log = lockers(&["alice", "bob"]);
    log.apply(lease_grant(hdr(5, 1), 5_000));
    let i_none = log.index;
    // Other request ids: a principal's request 1 of client 5 would be taken
    // for a retry of the unwrapped one (request_expired).
    log.apply(as_("alice", lease_grant(hdr(5, 2), 5_000)));
    let i_alice = log.index;
    log.apply(as_("bob", lease_grant(hdr(5, 3), 5_000)));
    let i_bob = log.index;
    let records: Vec<_> = log
        .t
        .client_records()
        .filter(|v| v.client_id == 5)
        .map(|v| (v.principal, v.last_index))
        .collect();
    assert_eq!(
        records,
        vec![
            (None, i_none),
            (Some("alice"), i_alice),
            (Some("bob"), i_bob)
        ]
    );
    assert!(log.t.clients().any(|c| c == (5, i_bob)));
    assert_eq!(log.t.clients().filter(|(c, _)| *c == 5).count(), 1);
    log.apply(Command::DropClients(DropClients {
        leader: L1,
        clients: vec![(5, i_alice)],
    }));
    let left: Vec<_> = log
        .t
        .client_records()
        .filter(|v| v.client_id == 5)
        .map(|v| v.principal)
        .collect();
    assert_eq!(left, vec![None, Some("bob")]);
    // A stale proposal (moved last_index) drops nothing.
    log.apply(Command::DropClients(DropClients {
        leader: L1,
        clients: vec![(5, i_alice)],
    }));
    assert_eq!(
        log.t.client_records().filter(|v| v.client_id == 5).count(),
        2
    );
    // Records touched by one packed entry share its index and go together.
    log.apply(Command::Batch(vec![
        as_("alice", lease_grant(hdr(6, 1), 5_000)),
        as_("bob", lease_grant(hdr(6, 1), 5_000)),
    ]));
    let i_batch = log.index;
    log.apply(Command::DropClients(DropClients {
        leader: L1,
        clients: vec![(5, i_none), (5, i_bob), (6, i_batch)],
    }));
    assert!(log
        .t
        .client_records()
        .all(|v| v.client_id != 5 && v.client_id != 6));
    assert_eq!(log.t.usage("bob").clients, 0);
}

/// The lease a wrapped lease grant makes.
fn lease_of(r: Response) -> LeaseId {
    match r {
        Response::LeaseGranted { lease_id, .. } => lease_id,
        other => panic!("expected a lease, got {other:?}"),
    }
}

// Quotas on published values (docs/security.md "Quotas and limits"; the
// election-value flood: one principal filled the table-wide cap of 100,000
// values and every other principal's Proclaim failed): mallory, with one
// lease, publishes values on election after election until her default quota
// of 1,000 (ResourceExhausted, field `quota.values`, nothing changed); a
// replacement of one of her values still works; alice still publishes; a
// byte quota refuses a value that would take her over it, and a shorter
// replacement frees bytes; when the lease ends, her usage is zero again.
#[test]
fn values_count_against_their_owners_quota_and_others_still_publish() {
    let mut log = lockers(&["mallory", "alice"]);
    let m = lease_of(
        log.apply(as_("mallory", lease_grant(nth(7, 1), 60_000)))
            .response,
    );
    let quota = crate::limits::DEFAULT_QUOTA_VALUES;
    for i in 0..quota {
        let r = fast(
            &mut log,
            as_(
                "mallory",
                super::auth::proclaim(&super::auth::election(&format!("e{i}")), m, "v"),
            ),
        );
        assert!(matches!(r, Response::Proclaimed { .. }), "{i}: {r:?}");
    }
    assert_eq!(log.t.check_invariants(), Ok(()));
    assert_eq!(log.t.usage("mallory").values, quota);
    assert_eq!(log.t.usage("mallory").value_bytes, quota);
    let before = lock_state(&log.t);
    let out = log.apply(as_(
        "mallory",
        super::auth::proclaim(&super::auth::election("one-more"), m, "v"),
    ));
    let e = refused(&out.response);
    assert_eq!(
        (e.code, e.field.as_deref()),
        (ErrorCode::ResourceExhausted, Some("quota.values"))
    );
    assert!(
        e.message.contains("mallory") && e.message.contains("1000"),
        "{e:?}"
    );
    assert!(out.effects.is_empty());
    assert_eq!(lock_state(&log.t), before);
    assert_eq!(log.t.value(m, &super::auth::election("one-more")), None);
    // Replacing one of hers takes no new value.
    let out = log.apply(as_(
        "mallory",
        super::auth::proclaim(&super::auth::election("e0"), m, "w"),
    ));
    assert!(
        matches!(out.response, Response::Proclaimed { .. }),
        "{out:?}"
    );
    // Alice is served.
    let a = lease_of(
        log.apply(as_("alice", lease_grant(nth(8, 1), 60_000)))
            .response,
    );
    let out = log.apply(as_(
        "alice",
        super::auth::proclaim(&super::auth::election("e0"), a, "alice"),
    ));
    assert!(
        matches!(out.response, Response::Proclaimed { .. }),
        "{out:?}"
    );
    // Bytes: a role quota of 10 bytes for alice.
    log.root(set_quota(
        "lockers",
        Quota {
            value_bytes: 10,
            ..Quota::default()
        },
    ));
    let out = log.apply(as_(
        "alice",
        super::auth::proclaim(&super::auth::election("e1"), a, "123456"),
    ));
    let e = refused(&out.response);
    assert_eq!(e.field.as_deref(), Some("quota.value_bytes"), "{e:?}");
    let out = log.apply(as_(
        "alice",
        super::auth::proclaim(&super::auth::election("e0"), a, "12"),
    ));
    assert!(
        matches!(out.response, Response::Proclaimed { .. }),
        "{out:?}"
    );
    let out = log.apply(as_(
        "alice",
        super::auth::proclaim(&super::auth::election("e1"), a, "12345678"),
    ));
    assert!(
        matches!(out.response, Response::Proclaimed { .. }),
        "{out:?}"
    );
    assert_eq!(log.t.usage("alice").value_bytes, 10);
    // The lease's end takes its values and their usage with it.
    log.apply(as_("mallory", super::auth::revoke(nth(7, 2), m)));
    assert_eq!(log.t.usage("mallory").values, 0);
    assert_eq!(log.t.usage("mallory").value_bytes, 0);
}

// Quota `waits_per_resource` (docs/security.md "Quotas and limits"; the
// queue flood: one principal with the holder's role queued 10,000 waits on
// her resource, the per-resource cap, and even root was refused a wait
// there): with the quota at 3, bob's fourth wait on `q` is refused
// (ResourceExhausted, field `quota.waits_per_resource`, nothing changed)
// while his wait on another resource, carol's wait on `q` and root's still
// queue; a multi-lock naming `q` is refused the same way.
#[test]
fn one_principal_cannot_fill_a_resources_queue() {
    let mut log = lockers(&["alice", "bob", "carol"]);
    log.root(set_quota(
        "lockers",
        Quota {
            waits_per_resource: 3,
            ..Quota::default()
        },
    ));
    granted(&log.apply(as_(
        "alice",
        acquire(nth(1, 1), "q", new_lease(60_000), 0, 0),
    )));
    for n in 1..=3 {
        let out = log.apply(as_(
            "bob",
            acquire(nth(2, n), "q", new_lease(60_000), 60_000, 0),
        ));
        assert!(
            matches!(
                out.response,
                Response::Acquire(AcquireReply {
                    outcome: AcquireOutcome::Queued { .. },
                    ..
                })
            ),
            "{out:?}"
        );
    }
    let before = lock_state(&log.t);
    let out = log.apply(as_(
        "bob",
        acquire(nth(2, 4), "q", new_lease(60_000), 60_000, 0),
    ));
    let e = refused(&out.response);
    assert_eq!(
        (e.code, e.field.as_deref()),
        (
            ErrorCode::ResourceExhausted,
            Some("quota.waits_per_resource")
        )
    );
    assert!(out.effects.is_empty());
    assert_eq!(lock_state(&log.t), before);
    let multi = Command::Acquire(Acquire::multi(
        nth(2, 5),
        vec!["q".into(), "r".into()],
        new_lease(60_000),
        60_000,
        0,
    ));
    let e = refused(&log.apply(as_("bob", multi)).response).clone();
    assert_eq!(e.field.as_deref(), Some("quota.waits_per_resource"));
    let queued = |out: &Applied| {
        matches!(
            out.response,
            Response::Acquire(AcquireReply {
                outcome: AcquireOutcome::Queued { .. },
                ..
            })
        )
    };
    granted(&log.apply(as_(
        "alice",
        acquire(nth(1, 2), "r", new_lease(60_000), 0, 0),
    )));
    assert!(queued(&log.apply(as_(
        "bob",
        acquire(nth(2, 6), "r", new_lease(60_000), 60_000, 0)
    ))));
    assert!(queued(&log.apply(as_(
        "carol",
        acquire(nth(3, 1), "q", new_lease(60_000), 60_000, 0)
    ))));
    assert!(queued(&log.apply(as_(
        "root",
        acquire(nth(4, 1), "q", new_lease(60_000), 60_000, 0)
    ))));
    assert_eq!(log.t.waiters("q").len(), 5);
}
