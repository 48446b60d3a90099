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
mod tests;
