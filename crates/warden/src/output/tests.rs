use super::*;
use warden_client::{Member, NotGrantedReason};

fn parse_one(report: &Report) -> Value {
    let stdout = report.stdout.as_deref().expect("json on stdout");
    assert!(
        !stdout.contains('\n'),
        "one JSON value on one line: {stdout}"
    );
    serde_json::from_str(stdout).expect("valid JSON")
}

fn keys(v: &Value) -> Vec<&str> {
    let mut k: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
    k.sort_unstable();
    k
}

// JSON contract of `warden acquire`: exactly resource, lease_id, fencing_token, ttl_ms,
// valid_for_ms (S5: validity from the follow-up renew's send); exit 0.
#[test]
fn acquire_granted_json_shape() {
    let r = acquire(
        &AcquireResult::Granted {
            resource: "orders".into(),
            lease_id: 7,
            fencing_token: 12,
            ttl_ms: 10_000,
            slot: None,
            grants: Vec::new(),
        },
        Some(9_700),
        OutputFormat::Json,
    );
    assert_eq!(r.exit_code, EXIT_OK);
    assert_eq!(r.stderr, None);
    let v = parse_one(&r);
    assert_eq!(
        keys(&v),
        [
            "fencing_token",
            "lease_id",
            "resource",
            "ttl_ms",
            "valid_for_ms"
        ]
    );
    assert_eq!(v["valid_for_ms"], 9_700);
    assert_eq!(v["fencing_token"], 12);
    assert_eq!(v["ttl_ms"], 10_000);
}

// Exit code 2 for "not granted", naming the holder's lease on stderr and in JSON.
#[test]
fn acquire_not_granted_exits_2_and_names_the_holder() {
    let result = AcquireResult::NotGranted {
        resource: "orders".into(),
        holder_lease_id: Some(5),
        reason: NotGrantedReason::Held,
        lock_delay_remaining_ms: None,
    };
    let r = acquire(&result, None, OutputFormat::Json);
    assert_eq!(r.exit_code, EXIT_NOT_GRANTED);
    assert_eq!(
        r.stderr.as_deref(),
        Some("not granted: \"orders\" held by lease 5 (reason: held)")
    );
    let v = parse_one(&r);
    assert_eq!(
        keys(&v),
        [
            "granted",
            "holder_lease_id",
            "lock_delay_remaining_ms",
            "reason",
            "resource"
        ]
    );
    assert_eq!(v["granted"], false);
    assert_eq!(v["holder_lease_id"], 5);
    assert_eq!(v["reason"], "held");
    assert_eq!(v["lock_delay_remaining_ms"], Value::Null);
    let text = acquire(&result, None, OutputFormat::Text);
    assert_eq!(text.stdout, None);
    assert_eq!(text.exit_code, EXIT_NOT_GRANTED);
    let no_holder = acquire(
        &AcquireResult::NotGranted {
            resource: "orders".into(),
            holder_lease_id: None,
            reason: NotGrantedReason::WaitTimeout,
            lock_delay_remaining_ms: None,
        },
        None,
        OutputFormat::Json,
    );
    assert_eq!(parse_one(&no_holder)["holder_lease_id"], Value::Null);
}

// Lock-delay is visible (docs/semantics.md "Words", lock-delay): a
// refusal for the lock-delay says so with the time left, in text and in
// JSON, instead of "no holder (reason: lock_delay)"; exit 2.
#[test]
fn acquire_refused_for_the_lock_delay_names_it_with_the_time_left() {
    let result = AcquireResult::NotGranted {
        resource: "R".into(),
        holder_lease_id: None,
        reason: NotGrantedReason::LockDelay,
        lock_delay_remaining_ms: Some(3_900),
    };
    let text = acquire(&result, None, OutputFormat::Text);
    assert_eq!(
        (text.stdout, text.stderr.as_deref(), text.exit_code),
        (
            None,
            Some("not granted: \"R\" is in its lock-delay (3s 900ms left)"),
            EXIT_NOT_GRANTED
        )
    );
    let v = parse_one(&acquire(&result, None, OutputFormat::Json));
    assert_eq!(v["reason"], "lock_delay");
    assert_eq!(v["lock_delay_remaining_ms"], 3_900);
    assert_eq!(v["holder_lease_id"], Value::Null);
    // A server that does not say how long: the lock-delay is still named.
    let unknown = AcquireResult::NotGranted {
        resource: "R".into(),
        holder_lease_id: None,
        reason: NotGrantedReason::LockDelay,
        lock_delay_remaining_ms: None,
    };
    assert_eq!(
        acquire(&unknown, None, OutputFormat::Text)
            .stderr
            .as_deref(),
        Some("not granted: \"R\" is in its lock-delay")
    );
}

// A waiter's queue message says what it waits behind (S8's `Queued`
// reports): the holder with its lease, the lock-delay with its time
// left, or the earlier waiters; never "behind the holder" when there is
// none.
#[test]
fn queued_lines_say_what_the_waiter_waits_behind() {
    let q = |position, behind| Queued {
        position,
        lease_id: 9,
        behind,
    };
    assert_eq!(
        queued(&q(1, QueueBehind::Holder { lease_id: 4 })),
        "queued behind the holder (lease 4): position 1 (waiting as lease 9)"
    );
    assert_eq!(
        queued(&q(
            1,
            QueueBehind::LockDelay {
                remaining_ms: 2_000
            }
        )),
        "queued behind the lock-delay (2s left): position 1 (waiting as lease 9)"
    );
    assert_eq!(
        queued(&q(2, QueueBehind::Waiters { count: 1 })),
        "queued behind 1 earlier waiter: position 2 (waiting as lease 9)"
    );
    assert_eq!(
        queued(&q(4, QueueBehind::Waiters { count: 3 })),
        "queued behind 3 earlier waiters: position 4 (waiting as lease 9)"
    );
    assert_eq!(
        queued(&q(1, QueueBehind::Unknown)),
        "queued: position 1 (waiting as lease 9)"
    );
}

// JSON contract of `warden renew` and `warden release`.
#[test]
fn renew_and_release_json_shapes() {
    let v = parse_one(&renew(
        &RenewResult {
            lease_id: 7,
            ttl_ms: 10_000,
            sequence: 3,
        },
        OutputFormat::Json,
    ));
    assert_eq!(keys(&v), ["lease_id", "ttl_ms"]);
    let ok = ReleaseResult {
        resource: "orders".into(),
        lease_id: 7,
        released: true,
    };
    let v = parse_one(&release(&ok, OutputFormat::Json));
    assert_eq!(keys(&v), ["lease_id", "released"]);
    assert_eq!(v["released"], true);
    let refused = release(
        &ReleaseResult {
            released: false,
            ..ok
        },
        OutputFormat::Json,
    );
    assert_eq!((refused.exit_code, refused.stdout), (EXIT_ERROR, None));
}

// JSON contract of `warden status`: holder object or null.
#[test]
fn status_json_shape() {
    let holder = Holder {
        lease_id: 7,
        fencing_token: 12,
        ttl_remaining_ms: 8_400,
        ttl_ms: 10_000,
        value: String::new(),
        mode: GrantKind::Mutex,
        slot: None,
    };
    let held = StatusResult {
        resource: "orders".into(),
        holder: Some(holder.clone()),
        holders: vec![holder],
        kind: Some(ResourceKind::Mutex),
        waiters: 0,
        read_index: 40,
        lock_delay_remaining_ms: None,
    };
    let v = parse_one(&status(&held, OutputFormat::Json));
    assert_eq!(
        keys(&v),
        [
            "holder",
            "holders",
            "kind",
            "limit",
            "lock_delay_remaining_ms",
            "resource"
        ]
    );
    assert_eq!(v["kind"], "mutex");
    assert_eq!(v["limit"], Value::Null);
    assert_eq!(v["holders"][0]["fencing_token"], 12);
    assert_eq!(v["lock_delay_remaining_ms"], Value::Null);
    assert_eq!(
        keys(&v["holder"]),
        ["fencing_token", "lease_id", "ttl_remaining_ms"]
    );
    let free = StatusResult {
        holder: None,
        holders: Vec::new(),
        kind: None,
        ..held
    };
    let v = parse_one(&status(&free, OutputFormat::Json));
    assert_eq!(v["holder"], Value::Null);
    assert_eq!(v["kind"], Value::Null);
    assert_eq!(v["holders"], json!([]));
    assert_eq!(
        status(&free, OutputFormat::Text).stdout.unwrap(),
        "\"orders\" is free"
    );
}

// Lock-delay is visible (docs/semantics.md "Words", lock-delay): a
// resource free because of its lock-delay is not shown as plainly free;
// the text names the lock-delay and its time left, JSON carries it.
#[test]
fn status_in_lock_delay_shows_the_time_left() {
    let delayed = StatusResult {
        resource: "R".into(),
        holder: None,
        holders: Vec::new(),
        kind: Some(ResourceKind::Mutex),
        waiters: 0,
        read_index: 41,
        lock_delay_remaining_ms: Some(4_200),
    };
    assert_eq!(
        status(&delayed, OutputFormat::Text).stdout.unwrap(),
        "\"R\" is free (lock-delay: 4s 200ms left, no new grant until then)"
    );
    let v = parse_one(&status(&delayed, OutputFormat::Json));
    assert_eq!(v["holder"], Value::Null);
    assert_eq!(v["lock_delay_remaining_ms"], 4_200);
    let with_waiters = StatusResult {
        waiters: 2,
        ..delayed
    };
    assert_eq!(
        status(&with_waiters, OutputFormat::Text).stdout.unwrap(),
        "\"R\" is free (lock-delay: 4s 200ms left, no new grant until then); 2 waiting"
    );
}

fn sample_cluster() -> ClusterStatus {
    ClusterStatus {
        cluster_id: "c0ffee".into(),
        leader_id: 2,
        term: 4,
        commit_index: 118,
        members: (1..=3)
            .map(|id| Member {
                id,
                addr: format!("127.0.0.1:700{id}"),
                peer_addr: None,
                role: if id == 2 { "leader" } else { "follower" }.into(),
                applied_index: 118,
                last_contact_ms: Some(0),
                matched_index: 118,
                term: 4,
                lag_entries: 0,
            })
            .collect(),
        timing: Some(Timing {
            heartbeat_ms: 50,
            election_timeout_min_ms: 250,
            election_timeout_max_ms: 500,
            promotion_grace_ms: 1_000,
            renew_batch_window_ms: 2,
            min_ttl_ms: 1_000,
            max_ttl_ms: 3_600_000,
            max_wait_timeout_ms: 3_600_000,
            max_lock_delay_ms: 60_000,
            bound_e_ms: 1_600,
            bound_g_ms: 1_000,
            preset: "lan".into(),
            call_timeout_floor_ms: 125,
        }),
        node_id: 1,
        last_log_index: 118,
        insecure: false,
        election_prefix: "\u{1}election/".into(),
        max_requests_in_flight: 64,
        members_log_format: 1,
        unconfirmed_peers: vec![],
    }
}

// JSON contract of `warden cluster status`, including the timing block with E and G.
#[test]
fn cluster_status_json_shape() {
    let v = parse_one(&cluster_status(&sample_cluster(), OutputFormat::Json));
    assert_eq!(
        keys(&v),
        [
            "cluster_id",
            "commit_index",
            "leader_id",
            "members",
            "term",
            "timing"
        ]
    );
    assert_eq!(
        keys(&v["members"][0]),
        ["addr", "applied_index", "id", "peer_addr", "role"]
    );
    assert_eq!(v["timing"]["bound_e_ms"], 1_600);
    assert!(
        v["timing"].get("checkpoint_interval_ms").is_none(),
        "no checkpoints since log format 1: {v}"
    );
    assert_eq!(v["timing"]["bound_g_ms"], 1_000);
    assert_eq!(v["timing"]["preset"], "lan");
    assert_eq!(v["timing"]["call_timeout_floor_ms"], 125);
}

// The text of `cluster status` shows the timing defaults and the bounds E and G.
#[test]
fn cluster_status_text_shows_timing_and_bounds() {
    let text = cluster_status(&sample_cluster(), OutputFormat::Text)
        .stdout
        .unwrap();
    assert!(
        text.contains("timing: lan preset, heartbeat 50ms, election timeout 250ms–500ms, peer call floor 125ms,"),
        "{text}"
    );
    assert!(
        text.contains(
            "bounds: E = 1s 600ms (promotion grace + max election timeout + duty interval + heartbeat), G = 1s"
        ),
        "{text}"
    );
    assert!(!text.contains("checkpoint"), "{text}");
    assert!(text.contains("G = 1s"), "{text}");
    assert!(text.contains("127.0.0.1:7002  leader"), "{text}");
}

// docs/operations.md "Latency between nodes": a `--timing wan` node's
// status names the preset and shows the values it reports (heartbeat,
// election timeout, call floor, E, G); a server that reports neither
// preset nor floor gets neither shown.
#[test]
fn cluster_status_text_names_the_timing_preset() {
    let mut c = sample_cluster();
    c.timing = Some(Timing {
        preset: "wan".into(),
        heartbeat_ms: 250,
        election_timeout_min_ms: 1_000,
        election_timeout_max_ms: 2_000,
        promotion_grace_ms: 2_000,
        call_timeout_floor_ms: 500,
        bound_e_ms: 4_300,
        bound_g_ms: 2_000,
        ..c.timing.clone().unwrap()
    });
    let text = cluster_status(&c, OutputFormat::Text).stdout.unwrap();
    assert!(
        text.contains(
            "timing: wan preset, heartbeat 250ms, election timeout 1s–2s, peer call floor 500ms,"
        ),
        "{text}"
    );
    assert!(text.contains("E = 4s 300ms"), "{text}");
    assert!(text.contains("G = 2s"), "{text}");
    let mut old = c.timing.clone().unwrap();
    old.preset = String::new();
    old.call_timeout_floor_ms = 0;
    c.timing = Some(old);
    let text = cluster_status(&c, OutputFormat::Text).stdout.unwrap();
    assert!(
        text.contains("timing: heartbeat 250ms, election timeout 1s–2s, promotion grace"),
        "{text}"
    );
}

// Exit code 1 with a one-line reason on stderr, nothing on stdout.
#[test]
fn errors_are_one_line_on_stderr() {
    let r = error("no quorum:\n  tried a:1");
    assert_eq!(r.exit_code, EXIT_ERROR);
    assert_eq!(r.stdout, None);
    assert_eq!(r.stderr.as_deref(), Some("error: no quorum: tried a:1"));
}
