//! What each client command prints. Pure: builds a [`Report`] (stdout text,
//! stderr line, exit code) from a result, so the shapes are testable.
//!
//! With `--output json`, stdout carries exactly one JSON value per result and
//! nothing else; every message goes to stderr.

use std::time::Duration;

use serde_json::{json, Value};
use warden_client::{
    AcquireResult, ClusterStatus, GrantKind, Holder, NotGrantedReason, QueueBehind, Queued,
    ReleaseResult, RenewResult, ResourceKind, StatusResult, Timing, TokenState, ValidateResult,
};

use crate::cli::OutputFormat;

/// Exit code: success.
pub const EXIT_OK: u8 = 0;
/// Exit code: an error (bad input, no quorum, unreachable).
pub const EXIT_ERROR: u8 = 1;
/// Exit code: not granted (held, lock-delay, wait ran out).
pub const EXIT_NOT_GRANTED: u8 = 2;
/// Exit code: a lease held for the caller was lost (`warden exec` stopped
/// its command, `warden elect` lost the leadership).
pub const EXIT_LEASE_LOST: u8 = 3;

/// What a command prints and how it exits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Report {
    /// Written to stdout, followed by a newline.
    pub stdout: Option<String>,
    /// Written to stderr, followed by a newline.
    pub stderr: Option<String>,
    /// The process's exit code.
    pub exit_code: u8,
}

impl Report {
    fn ok(stdout: String) -> Report {
        Report {
            stdout: Some(stdout),
            stderr: None,
            exit_code: EXIT_OK,
        }
    }
}

/// Milliseconds as a human duration (`1s 250ms`).
pub(crate) fn ms(ms: u64) -> String {
    humantime::format_duration(Duration::from_millis(ms)).to_string()
}

fn json_text(value: &Value) -> String {
    value.to_string()
}

/// `warden acquire`.
///
/// `valid_for_ms`: how long the grant can still be trusted, counted from the
/// send of the renew the CLI made right after the grant (S5); `None` when that
/// renew failed (then only the TTL is known).
pub fn acquire(result: &AcquireResult, valid_for_ms: Option<u64>, format: OutputFormat) -> Report {
    match result {
        AcquireResult::Granted {
            resource,
            lease_id,
            fencing_token,
            ttl_ms,
            slot,
            grants,
        } if grants.len() > 1 => Report::ok(match format {
            // A multi-lock: one {"resource","fencing_token"} per resource.
            OutputFormat::Json => json_text(&json!({
                "resource": resource,
                "lease_id": lease_id,
                "fencing_token": fencing_token,
                "ttl_ms": ttl_ms,
                "valid_for_ms": valid_for_ms,
                "grants": grants
                    .iter()
                    .map(|g| json!({"resource": g.resource, "fencing_token": g.fencing_token}))
                    .collect::<Vec<_>>(),
            })),
            OutputFormat::Text => format!(
                "acquired {}: lease {lease_id}, TTL {}{}",
                grants
                    .iter()
                    .map(|g| format!("{:?} (fencing token {})", g.resource, g.fencing_token))
                    .collect::<Vec<_>>()
                    .join(", "),
                ms(*ttl_ms),
                match valid_for_ms {
                    Some(v) => format!(", valid for {}", ms(v)),
                    None => String::new(),
                }
            ),
        }),
        AcquireResult::Granted {
            resource,
            lease_id,
            fencing_token,
            ttl_ms,
            slot,
            ..
        } => Report::ok(match format {
            OutputFormat::Json => {
                let mut v = json!({
                    "resource": resource,
                    "lease_id": lease_id,
                    "fencing_token": fencing_token,
                    "ttl_ms": ttl_ms,
                    "valid_for_ms": valid_for_ms,
                });
                // Only a semaphore permit has a slot; the fence checks its
                // token per (resource, slot).
                if let Some(slot) = slot {
                    v["slot"] = json!(slot);
                }
                json_text(&v)
            }
            OutputFormat::Text => format!(
                "acquired {resource:?}: lease {lease_id}, fencing token {fencing_token}{}, TTL {}{}",
                match slot {
                    Some(slot) => format!(", slot {slot}"),
                    None => String::new(),
                },
                ms(*ttl_ms),
                match valid_for_ms {
                    Some(v) => format!(", valid for {}", ms(v)),
                    None => String::new(),
                }
            ),
        }),
        AcquireResult::NotGranted {
            resource,
            holder_lease_id,
            reason,
            lock_delay_remaining_ms,
        } => {
            let line = match (reason, holder_lease_id) {
                (NotGrantedReason::LockDelay, None) => format!(
                    "not granted: {resource:?} is in its lock-delay{}",
                    match lock_delay_remaining_ms {
                        Some(left) => format!(" ({} left)", ms(*left)),
                        None => String::new(),
                    }
                ),
                (_, Some(id)) => {
                    format!("not granted: {resource:?} held by lease {id} (reason: {reason})")
                }
                // Held by readers or permits (no exclusive holder to name).
                (_, None) => format!("not granted: {resource:?} is held (reason: {reason})"),
            };
            Report {
                stdout: match format {
                    OutputFormat::Json => Some(json_text(&json!({
                        "resource": resource,
                        "granted": false,
                        "holder_lease_id": holder_lease_id,
                        "reason": reason.as_str(),
                        // null unless the reason is lock_delay.
                        "lock_delay_remaining_ms": lock_delay_remaining_ms,
                    }))),
                    OutputFormat::Text => None,
                },
                stderr: Some(line),
                exit_code: EXIT_NOT_GRANTED,
            }
        }
    }
}

/// The stderr line of a waiting `warden acquire`'s progress report: what it
/// waits behind (the holder, the lock-delay with its time left, or earlier
/// waiters), its position, and the lease it waits on.
pub fn queued(q: &Queued) -> String {
    let behind = match q.behind {
        QueueBehind::Holder { lease_id } => format!("queued behind the holder (lease {lease_id})"),
        QueueBehind::LockDelay { remaining_ms } => {
            format!("queued behind the lock-delay ({} left)", ms(remaining_ms))
        }
        QueueBehind::Waiters { count: 1 } => "queued behind 1 earlier waiter".to_string(),
        QueueBehind::Waiters { count } => format!("queued behind {count} earlier waiters"),
        QueueBehind::Unknown => "queued".to_string(),
    };
    format!(
        "{behind}: position {} (waiting as lease {})",
        q.position, q.lease_id
    )
}

/// `warden renew`.
pub fn renew(result: &RenewResult, format: OutputFormat) -> Report {
    Report::ok(match format {
        OutputFormat::Json => json_text(&json!({
            "lease_id": result.lease_id,
            "ttl_ms": result.ttl_ms,
        })),
        OutputFormat::Text => format!(
            "renewed lease {}: TTL {}",
            result.lease_id,
            ms(result.ttl_ms)
        ),
    })
}

/// `warden release`. A reply with `released: false` is an error (exit 1).
pub fn release(result: &ReleaseResult, format: OutputFormat) -> Report {
    if !result.released {
        return Report {
            stdout: None,
            stderr: Some(format!(
                "error: lease {} did not release {:?}",
                result.lease_id, result.resource
            )),
            exit_code: EXIT_ERROR,
        };
    }
    Report::ok(match format {
        OutputFormat::Json => json_text(&json!({
            "lease_id": result.lease_id,
            "released": true,
        })),
        OutputFormat::Text if result.resource.is_empty() => {
            format!("released lease {}", result.lease_id)
        }
        OutputFormat::Text => format!("released {:?} (lease {})", result.resource, result.lease_id),
    })
}

/// `warden status`.
pub fn status(result: &StatusResult, format: OutputFormat) -> Report {
    Report::ok(match format {
        OutputFormat::Json => json_text(&json!({
            "resource": result.resource,
            "holder": result.holder.as_ref().map(|h| json!({
                "lease_id": h.lease_id,
                "fencing_token": h.fencing_token,
                "ttl_remaining_ms": h.ttl_remaining_ms,
            })),
            // Every holder (the exclusive one, or each reader or permit).
            "holders": result.holders.iter().map(holder_json).collect::<Vec<_>>(),
            // null when free.
            "kind": result.kind.map(kind_name),
            // A semaphore's permits; null for the other kinds.
            "limit": match result.kind {
                Some(ResourceKind::Semaphore { limit }) => Some(limit),
                _ => None,
            },
            // null unless free because of a lock-delay.
            "lock_delay_remaining_ms": result.lock_delay_remaining_ms,
        })),
        OutputFormat::Text => {
            let mut line = match (&result.holder, result.holders.as_slice()) {
                (Some(h), _) => format!(
                    "{:?} is held by lease {} (fencing token {}, {} of TTL left)",
                    result.resource,
                    h.lease_id,
                    h.fencing_token,
                    ms(h.ttl_remaining_ms)
                ),
                (None, []) => match result.lock_delay_remaining_ms {
                    Some(left) => format!(
                        "{:?} is free (lock-delay: {} left, no new grant until then)",
                        result.resource,
                        ms(left)
                    ),
                    None => format!("{:?} is free", result.resource),
                },
                (None, holders) => shared_holders_line(result, holders),
            };
            if result.waiters > 0 {
                line.push_str(&format!("; {} waiting", result.waiters));
            }
            line
        }
    })
}

/// `"mutex"`, `"read_write"` or `"semaphore"`, as the server names kinds.
fn kind_name(kind: ResourceKind) -> &'static str {
    match kind {
        ResourceKind::Mutex => "mutex",
        ResourceKind::ReadWrite => "read_write",
        ResourceKind::Semaphore { .. } => "semaphore",
    }
}

/// One entry of `status`'s `holders` array: `mode` for a read-write lock's
/// holder, `slot` for a permit.
fn holder_json(h: &Holder) -> Value {
    let mut v = json!({
        "lease_id": h.lease_id,
        "fencing_token": h.fencing_token,
        "ttl_remaining_ms": h.ttl_remaining_ms,
    });
    match h.mode {
        GrantKind::Shared => v["mode"] = json!("shared"),
        GrantKind::Exclusive => v["mode"] = json!("exclusive"),
        GrantKind::Mutex | GrantKind::Permit { .. } => {}
    }
    if let Some(slot) = h.slot {
        v["slot"] = json!(slot);
    }
    v
}

/// The text of a resource held by readers or permits (no exclusive holder).
fn shared_holders_line(result: &StatusResult, holders: &[Holder]) -> String {
    let each: Vec<String> = holders
        .iter()
        .map(|h| match h.slot {
            Some(slot) => format!(
                "lease {} in slot {slot} (fencing token {})",
                h.lease_id, h.fencing_token
            ),
            None => format!("lease {} (fencing token {})", h.lease_id, h.fencing_token),
        })
        .collect();
    let what = match result.kind {
        Some(ResourceKind::Semaphore { limit }) => {
            format!("{} of {limit} permits", holders.len())
        }
        _ => format!(
            "{} reader{}",
            holders.len(),
            if holders.len() == 1 { "" } else { "s" }
        ),
    };
    format!(
        "{:?} is held by {what}: {}",
        result.resource,
        each.join(", ")
    )
}

/// `warden validate`: exit 0 when the token is current, 2 when it is stale
/// or unknown.
pub fn validate(result: &ValidateResult, format: OutputFormat) -> Report {
    let stdout = match format {
        OutputFormat::Json => json_text(&json!({
            "resource": result.resource,
            "fencing_token": result.fencing_token,
            "state": result.state.as_str(),
            "holder_token": result.holder_token,
            "read_index": result.read_index,
        })),
        OutputFormat::Text => {
            let holder = match result.holder_token {
                Some(t) => format!("current holder's token {t}"),
                None => "the resource is free".to_string(),
            };
            format!(
                "token {} is {} for {:?} ({holder}; advisory: only the resource's own check is final)",
                result.fencing_token,
                result.state.as_str(),
                result.resource
            )
        }
    };
    Report {
        stdout: Some(stdout),
        stderr: None,
        exit_code: if result.state == TokenState::Current {
            EXIT_OK
        } else {
            EXIT_NOT_GRANTED
        },
    }
}

fn timing_json(t: &Timing) -> Value {
    json!({
        // "" from a server that does not say.
        "preset": t.preset,
        "heartbeat_ms": t.heartbeat_ms,
        "election_timeout_min_ms": t.election_timeout_min_ms,
        "election_timeout_max_ms": t.election_timeout_max_ms,
        "promotion_grace_ms": t.promotion_grace_ms,
        "renew_batch_window_ms": t.renew_batch_window_ms,
        "min_ttl_ms": t.min_ttl_ms,
        "max_ttl_ms": t.max_ttl_ms,
        "max_wait_timeout_ms": t.max_wait_timeout_ms,
        "max_lock_delay_ms": t.max_lock_delay_ms,
        "bound_e_ms": t.bound_e_ms,
        "bound_g_ms": t.bound_g_ms,
        // 0 from a server that does not say.
        "call_timeout_floor_ms": t.call_timeout_floor_ms,
    })
}

/// `warden cluster status`.
pub fn cluster_status(result: &ClusterStatus, format: OutputFormat) -> Report {
    match format {
        OutputFormat::Json => Report::ok(json_text(&json!({
            "cluster_id": result.cluster_id,
            "leader_id": result.leader_id,
            "term": result.term,
            "commit_index": result.commit_index,
            "members": result.members.iter().map(|m| json!({
                "id": m.id,
                "addr": m.addr,
                // null: `addr` serves the peer service too.
                "peer_addr": m.peer_addr,
                "role": m.role,
                "applied_index": m.applied_index,
            })).collect::<Vec<_>>(),
            "timing": result.timing.as_ref().map(timing_json),
        }))),
        OutputFormat::Text => Report::ok(cluster_status_text(result)),
    }
}

fn cluster_status_text(c: &ClusterStatus) -> String {
    let mut out = String::new();
    let leader = if c.leader_id == 0 {
        "none".to_string()
    } else {
        c.leader_id.to_string()
    };
    out.push_str(&format!(
        "cluster {}  leader {}  term {}  commit index {}\n",
        c.cluster_id, leader, c.term, c.commit_index
    ));
    let addr_width = c
        .members
        .iter()
        .map(|m| m.addr.len())
        .max()
        .unwrap_or(0)
        .max(7);
    out.push_str(&format!(
        "{:<4} {:<addr_width$}  {:<10} {}\n",
        "ID", "ADDRESS", "ROLE", "APPLIED"
    ));
    for m in &c.members {
        out.push_str(&format!(
            "{:<4} {:<addr_width$}  {:<10} {}\n",
            m.id, m.addr, m.role, m.applied_index
        ));
    }
    match &c.timing {
        Some(t) => {
            // The preset the values started from (flags may have changed
            // some; the values shown are the ones in effect).
            let preset = if t.preset.is_empty() {
                String::new()
            } else {
                format!("{} preset, ", t.preset)
            };
            let floor = if t.call_timeout_floor_ms == 0 {
                String::new()
            } else {
                format!(", peer call floor {}", ms(t.call_timeout_floor_ms))
            };
            out.push_str(&format!(
                "timing: {preset}heartbeat {}, election timeout {}–{}{floor}, promotion grace {}, renew batch window {}\n",
                ms(t.heartbeat_ms),
                ms(t.election_timeout_min_ms),
                ms(t.election_timeout_max_ms),
                ms(t.promotion_grace_ms),
                ms(t.renew_batch_window_ms),
            ));
            out.push_str(&format!(
                "limits: TTL {} ..= {}, wait <= {}, lock-delay <= {} (default 0)\n",
                ms(t.min_ttl_ms),
                ms(t.max_ttl_ms),
                ms(t.max_wait_timeout_ms),
                ms(t.max_lock_delay_ms),
            ));
            out.push_str(&format!(
                "bounds: E = {} (promotion grace + max election timeout + duty interval + heartbeat), G = {}\n",
                ms(t.bound_e_ms),
                ms(t.bound_g_ms),
            ));
        }
        None => out.push_str("timing: not reported by the server\n"),
    }
    out.push_str(
        "client: keep-alive every TTL/3, attempt timeout 500ms, backoff cap 200ms, CLI deadline 5s",
    );
    out
}

/// Writes `text` and a newline to stdout and flushes it. Every stdout write
/// of the binary goes through here: Rust ignores SIGPIPE, so a reader that
/// closed the pipe early (`warden cluster status | head -1`) shows up as an
/// `io::ErrorKind::BrokenPipe` error, which the caller turns into a quiet
/// stop with [`stdout_failed`] instead of `println!`'s panic (exit 101).
pub fn line(text: &str) -> std::io::Result<()> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    writeln!(out, "{text}")?;
    out.flush()
}

/// The exit code after a stdout write failed: a closed pipe means the reader
/// has what it wanted, so the command stops quietly with `ok_code`; any other
/// error (a full disk, ...) is one line on stderr and exit 1.
pub fn stdout_failed(e: &std::io::Error, ok_code: u8) -> u8 {
    if e.kind() == std::io::ErrorKind::BrokenPipe {
        ok_code
    } else {
        eprintln!("error: cannot write to stdout: {e}");
        EXIT_ERROR
    }
}

/// An error: one line on stderr, nothing on stdout, exit 1.
pub fn error(message: &str) -> Report {
    Report {
        stdout: None,
        stderr: Some(format!("error: {}", one_line(message))),
        exit_code: EXIT_ERROR,
    }
}

/// Collapses whitespace (including newlines) so a message fits one line.
pub fn one_line(message: &str) -> String {
    message.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
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
            text.contains("timing: wan preset, heartbeat 250ms, election timeout 1s–2s, peer call floor 500ms,"),
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
}
