//! Administration commands: `warden list [PREFIX]`, `warden release --force
//! RESOURCE` and `warden audit`, over the client's [`Admin`] calls (the
//! identity commands are in `role_cmd.rs`).
//!
//! Each call follows the leader and retries within
//! [`crate::commands::CLI_DEADLINE`] (the client's loop); a retried
//! force-release reuses its request id, so the server applies it once (S7).

use std::time::{Duration, UNIX_EPOCH};

use clap::Args;
use serde_json::{json, Value};
use warden_client::{Admin, GrantKind, ListedLock, ResourceKind};

use crate::cli::{ClientArgs, OutputFormat, ReleaseArgs};
use crate::commands::{check_resource, connect, describe_error};
use crate::output::{self, Report};

/// `warden list`.
#[derive(Debug, Args)]
pub struct ListArgs {
    /// Only locks whose name starts with PREFIX (default: all).
    pub prefix: Option<String>,
    #[command(flatten)]
    pub client: ClientArgs,
}

/// `warden audit`.
#[derive(Debug, Args)]
pub struct AuditArgs {
    /// The trail of auth changes (roles, grants, quotas, limits) instead of
    /// forced releases.
    #[arg(long)]
    pub auth: bool,
    #[command(flatten)]
    pub client: ClientArgs,
}

/// The admin calls of a client for `args` (`--endpoints`, checked by the
/// client), or the error report.
pub(crate) async fn admin(args: &ClientArgs) -> Result<Admin, Report> {
    match connect(args).await {
        Ok(client) => Ok(client.admin()),
        Err(e) => Err(output::error(&e)),
    }
}

/// A listed key as shown: `(true, NAME)` for election NAME, else
/// `(false, RESOURCE)`.
fn listed_name(lock: &ListedLock) -> (bool, &str) {
    match lock.election() {
        Some(name) => (true, name),
        None => (false, &lock.resource),
    }
}

/// The JSON contract of `warden list --output json`: `"election": true`
/// marks an election, whose `"resource"` is its NAME.
pub fn list_json(locks: &[ListedLock]) -> Value {
    Value::Array(
        locks
            .iter()
            .map(|l| {
                let (election, name) = listed_name(l);
                json!({
                    "resource": name,
                    "election": election,
                    "holder": l.holder.as_ref().map(|h| json!({
                        "lease_id": h.lease_id,
                        "fencing_token": h.fencing_token,
                        "age_ms": h.age_ms,
                        "ttl_remaining_ms": h.ttl_remaining_ms,
                    })),
                    // Every holder: the exclusive one, or each reader or permit.
                    "holders": l.holders.iter().map(|h| {
                        let mut v = json!({
                            "lease_id": h.lease_id,
                            "fencing_token": h.fencing_token,
                            "age_ms": h.age_ms,
                            "ttl_remaining_ms": h.ttl_remaining_ms,
                        });
                        match h.mode {
                            GrantKind::Shared => v["mode"] = json!("shared"),
                            GrantKind::Exclusive => v["mode"] = json!("exclusive"),
                            _ => {}
                        }
                        if let Some(slot) = h.slot {
                            v["slot"] = json!(slot);
                        }
                        v
                    }).collect::<Vec<_>>(),
                    "kind": l.kind.map(|k| match k {
                        ResourceKind::Mutex => "mutex",
                        ResourceKind::ReadWrite => "read_write",
                        ResourceKind::Semaphore { .. } => "semaphore",
                    }),
                    "limit": match l.kind {
                        Some(ResourceKind::Semaphore { limit }) => Some(limit),
                        _ => None,
                    },
                    "waiters": l.waiters.iter().map(|w| json!({
                        "lease_id": w.lease_id,
                        "age_ms": w.age_ms,
                    })).collect::<Vec<_>>(),
                    // null unless free because of a lock-delay.
                    "lock_delay_remaining_ms": l.lock_delay_remaining_ms,
                })
            })
            .collect(),
    )
}

/// A PREFIX argument (`list`, `top`): at most a resource name's length.
pub(crate) fn check_prefix(prefix: &str) -> Result<(), Report> {
    let max = warden_core::limits::MAX_RESOURCE_BYTES;
    if prefix.len() > max {
        return Err(output::error(&format!(
            "PREFIX: {} bytes is above the limit of {max} bytes",
            prefix.len()
        )));
    }
    Ok(())
}

/// `warden list [PREFIX]`.
pub async fn list(args: ListArgs) -> Report {
    let prefix = args.prefix.unwrap_or_default();
    if let Err(report) = check_prefix(&prefix) {
        return report;
    }
    let admin = match admin(&args.client).await {
        Ok(a) => a,
        Err(report) => return report,
    };
    let listing = match admin.list(prefix).await {
        Ok(l) => l,
        Err(e) => return output::error(&describe_error(&e)),
    };
    let stdout = match args.client.output {
        OutputFormat::Json => list_json(&listing.locks).to_string(),
        OutputFormat::Text => list_text(&listing.locks),
    };
    Report {
        stdout: Some(stdout),
        stderr: None,
        exit_code: output::EXIT_OK,
    }
}

/// The text of `warden list`: one line per lock (`"NAME": ...`) or
/// election (`election "NAME": ...`).
fn list_text(locks: &[ListedLock]) -> String {
    if locks.is_empty() {
        return "no locks".to_string();
    }
    locks
        .iter()
        .map(|l| {
            let holder = match (&l.holder, l.holders.as_slice()) {
                (Some(h), _) => format!(
                    "held by lease {} (token {}, for {}, TTL left {})",
                    h.lease_id,
                    h.fencing_token,
                    output::ms(h.age_ms),
                    output::ms(h.ttl_remaining_ms)
                ),
                // Readers or permits.
                (None, holders) if !holders.is_empty() => {
                    let what = match l.kind {
                        Some(ResourceKind::Semaphore { limit }) => {
                            format!("{} of {limit} permits", holders.len())
                        }
                        _ => format!(
                            "{} reader{}",
                            holders.len(),
                            if holders.len() == 1 { "" } else { "s" }
                        ),
                    };
                    let each: Vec<String> = holders
                        .iter()
                        .map(|h| match h.slot {
                            Some(slot) => {
                                format!(
                                    "lease {} in slot {slot} (token {})",
                                    h.lease_id, h.fencing_token
                                )
                            }
                            None => format!("lease {} (token {})", h.lease_id, h.fencing_token),
                        })
                        .collect();
                    format!("held by {what}: {}", each.join(", "))
                }
                (None, _) => match l.lock_delay_remaining_ms {
                    Some(left) => format!("free (lock-delay: {} left)", output::ms(left)),
                    None => "free".to_string(),
                },
            };
            let waiters: Vec<String> = l
                .waiters
                .iter()
                .map(|w| format!("lease {} ({})", w.lease_id, output::ms(w.age_ms)))
                .collect();
            let name = match listed_name(l) {
                (true, name) => format!("election {name:?}"),
                (false, resource) => format!("{resource:?}"),
            };
            if waiters.is_empty() {
                format!("{name}: {holder}")
            } else {
                format!("{name}: {holder}; waiting: {}", waiters.join(", "))
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// `warden release --force RESOURCE [--token T]`.
pub async fn force_release(args: ReleaseArgs) -> Report {
    let Some(resource) = args.force.clone() else {
        return output::error("--force RESOURCE: required");
    };
    if let Err(e) = check_resource(&resource) {
        return output::error(&e);
    }
    let admin = match admin(&args.client).await {
        Ok(a) => a,
        Err(report) => return report,
    };
    let user = std::env::var("USER").unwrap_or_else(|_| "unknown".into());
    let requested_by = format!("{user} (warden release --force)");
    let r = match admin
        .force_release(resource, args.token, requested_by)
        .await
    {
        Ok(r) => r,
        Err(e) => return output::error(&describe_error(&e)),
    };
    let stdout = match args.client.output {
        OutputFormat::Json => json!({
            "resource": r.resource,
            "lease_id": r.lease_id,
            "fencing_token": r.fencing_token,
            "released": true,
            "forced": true,
        })
        .to_string(),
        OutputFormat::Text => format!(
            "force-released {:?}: lease {} lost token {} (lock-delay applies; recorded in the audit trail)",
            r.resource, r.lease_id, r.fencing_token
        ),
    };
    Report {
        stdout: Some(stdout),
        stderr: None,
        exit_code: output::EXIT_OK,
    }
}

/// `warden audit`.
pub async fn audit(args: AuditArgs) -> Report {
    let admin = match admin(&args.client).await {
        Ok(a) => a,
        Err(report) => return report,
    };
    let r = match admin.audit_trail().await {
        Ok(r) => r,
        Err(e) => return output::error(&describe_error(&e)),
    };
    let stdout = match args.client.output {
        OutputFormat::Json => Value::Array(
            r.records
                .iter()
                .map(|a| {
                    json!({
                        "index": a.index,
                        "resource": a.resource,
                        "lease_id": a.lease_id,
                        "fencing_token": a.fencing_token,
                        "requested_by": a.requested_by,
                        "at_unix_ms": a.at_unix_ms,
                    })
                })
                .collect(),
        )
        .to_string(),
        OutputFormat::Text if r.records.is_empty() => "no forced releases".to_string(),
        OutputFormat::Text => r
            .records
            .iter()
            .map(|a| {
                format!(
                    "#{} {:?}: lease {} token {} released by {} at {} (proposer's wall clock)",
                    a.index,
                    a.resource,
                    a.lease_id,
                    a.fencing_token,
                    a.requested_by,
                    humantime::format_rfc3339_millis(
                        UNIX_EPOCH + Duration::from_millis(a.at_unix_ms)
                    )
                )
            })
            .collect::<Vec<_>>()
            .join("\n"),
    };
    Report {
        stdout: Some(stdout),
        stderr: None,
        exit_code: output::EXIT_OK,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::{Cli, Command};
    use clap::Parser;
    use warden_client::{ListedHolder, ListedWaiter};

    fn parse(args: &[&str]) -> Result<Cli, clap::Error> {
        Cli::try_parse_from(std::iter::once("warden").chain(args.iter().copied()))
    }

    // CLI contract (README, docs/operations.md): `release --force RESOURCE` needs no lease id, the
    // plain form still needs one, and the two forms do not mix.
    #[test]
    fn release_force_parses_beside_the_plain_form() {
        let Command::Release(r) = parse(&["release", "--force", "db"]).unwrap().command else {
            panic!("not release")
        };
        assert_eq!((r.force.as_deref(), r.lease_id), (Some("db"), None));
        assert!(parse(&["release"]).is_err());
        assert!(parse(&["release", "7", "--force", "db"]).is_err());
        assert!(parse(&["list"]).is_ok());
        assert!(parse(&["list", "orders/", "--output", "json"]).is_ok());
        assert!(parse(&["audit", "--output", "json"]).is_ok());
    }

    fn mutex_holder(
        lease_id: u64,
        fencing_token: u64,
        age_ms: u64,
        ttl_remaining_ms: u64,
    ) -> ListedHolder {
        ListedHolder {
            lease_id,
            fencing_token,
            age_ms,
            ttl_remaining_ms,
            mode: GrantKind::Mutex,
            slot: None,
        }
    }

    // CLI contract (README, docs/operations.md): the JSON shape of `warden list`.
    #[test]
    fn list_json_has_the_contract_shape() {
        let h = mutex_holder(3, 9, 10, 900);
        let locks = vec![
            ListedLock {
                resource: "a".into(),
                holder: Some(h),
                holders: vec![h],
                kind: Some(ResourceKind::Mutex),
                waiters: vec![ListedWaiter {
                    lease_id: 4,
                    age_ms: 5,
                }],
                lock_delay_remaining_ms: None,
            },
            ListedLock {
                resource: "b".into(),
                holder: None,
                holders: vec![],
                kind: Some(ResourceKind::Mutex),
                waiters: vec![],
                lock_delay_remaining_ms: Some(2_500),
            },
        ];
        assert_eq!(
            list_json(&locks),
            json!([
                {"resource": "a", "election": false,
                 "holder": {"lease_id": 3, "fencing_token": 9, "age_ms": 10, "ttl_remaining_ms": 900},
                 "holders": [{"lease_id": 3, "fencing_token": 9, "age_ms": 10, "ttl_remaining_ms": 900}],
                 "kind": "mutex", "limit": null,
                 "waiters": [{"lease_id": 4, "age_ms": 5}],
                 "lock_delay_remaining_ms": null},
                {"resource": "b", "election": false, "holder": null, "holders": [],
                 "kind": "mutex", "limit": null, "waiters": [],
                 "lock_delay_remaining_ms": 2_500}
            ])
        );
    }

    // "Lock kinds" (`status` and `list` show every holder): readers and
    // permits are listed with their mode and slot, and the text names how
    // many hold it of how many permits.
    #[test]
    fn list_shows_readers_and_permits() {
        let permit = |lease_id, slot| ListedHolder {
            slot: Some(slot),
            ..mutex_holder(lease_id, lease_id + 10, 5, 800)
        };
        let reader = ListedHolder {
            mode: GrantKind::Shared,
            ..mutex_holder(7, 20, 5, 800)
        };
        let locks = vec![
            ListedLock {
                resource: "pool".into(),
                holder: None,
                holders: vec![permit(1, 0), permit(2, 1)],
                kind: Some(ResourceKind::Semaphore { limit: 4 }),
                waiters: vec![],
                lock_delay_remaining_ms: None,
            },
            ListedLock {
                resource: "doc".into(),
                holder: None,
                holders: vec![reader],
                kind: Some(ResourceKind::ReadWrite),
                waiters: vec![],
                lock_delay_remaining_ms: None,
            },
        ];
        assert_eq!(
            list_text(&locks),
            "\"pool\": held by 2 of 4 permits: lease 1 in slot 0 (token 11), lease 2 in slot 1 (token 12)\n\"doc\": held by 1 reader: lease 7 (token 20)"
        );
        let v = list_json(&locks);
        assert_eq!(
            (&v[0]["kind"], &v[0]["limit"]),
            (&json!("semaphore"), &json!(4))
        );
        assert_eq!(v[0]["holders"][1]["slot"], 1);
        assert_eq!(v[1]["holders"][0]["mode"], "shared");
        assert_eq!(v[1]["holder"], Value::Null);
    }

    // Lock-delay is visible (docs/semantics.md "Words", lock-delay): a
    // listed resource free because of its lock-delay shows the time left,
    // with its waiters listed after it.
    #[test]
    fn list_text_shows_the_lock_delay_left() {
        let locks = vec![ListedLock {
            resource: "R".into(),
            holder: None,
            holders: vec![],
            kind: Some(ResourceKind::Mutex),
            waiters: vec![ListedWaiter {
                lease_id: 4,
                age_ms: 1_500,
            }],
            lock_delay_remaining_ms: Some(2_500),
        }];
        assert_eq!(
            list_text(&locks),
            "\"R\": free (lock-delay: 2s 500ms left); waiting: lease 4 (1s 500ms)"
        );
    }

    // Public bug: `warden list` showed an election's internal key
    // ("\u{1}election/NAME"); it shows `election "NAME"` (text) and
    // `"election": true` with the NAME (JSON).
    #[test]
    fn list_shows_elections_by_name() {
        let locks = vec![ListedLock {
            resource: warden_client::election_key("scheduler"),
            holder: Some(mutex_holder(3, 9, 1_000, 9_000)),
            holders: vec![mutex_holder(3, 9, 1_000, 9_000)],
            kind: Some(ResourceKind::Mutex),
            waiters: vec![],
            lock_delay_remaining_ms: None,
        }];
        assert_eq!(
            list_text(&locks),
            "election \"scheduler\": held by lease 3 (token 9, for 1s, TTL left 9s)"
        );
        let v = list_json(&locks);
        assert_eq!(
            (&v[0]["resource"], &v[0]["election"]),
            (&json!("scheduler"), &json!(true))
        );
    }
}
