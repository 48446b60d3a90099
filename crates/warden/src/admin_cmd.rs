//! Administration commands (issue 3, item 5): `warden list [PREFIX]`,
//! `warden release --force RESOURCE` and `warden audit`, over the
//! `warden.v1.Admin` gRPC service.
//!
//! Each call follows the leader (a follower answers `Unavailable` with the
//! leader's address in `warden-leader`) and retries within
//! [`crate::commands::CLI_DEADLINE`]; a retried force-release reuses its
//! request id, so the server applies it once (S7).

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use clap::Args;
use serde_json::{json, Value};
use tonic::transport::{Channel, Endpoint};
use tonic::{Code, Status};
use warden_proto::v1 as pb;
use warden_proto::v1::admin_client::AdminClient;

use crate::cli::{ClientArgs, OutputFormat, ReleaseArgs};
use crate::commands::{check_resource, CLI_DEADLINE};
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
    #[command(flatten)]
    pub client: ClientArgs,
}

/// The endpoints of `--endpoints` / `WARDEN_ENDPOINTS`, each checked.
pub(crate) fn endpoints(args: &ClientArgs) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    for e in args
        .endpoints
        .iter()
        .map(|e| e.trim())
        .filter(|e| !e.is_empty())
    {
        out.push(warden_client::parse_endpoint(e).map_err(|m| format!("--endpoints: {e:?}: {m}"))?);
    }
    if out.is_empty() {
        return Err("no endpoints: pass --endpoints HOST:PORT,... or set WARDEN_ENDPOINTS (`warden dev` prints the line to use)".into());
    }
    Ok(out)
}

async fn connect(addr: &str, request_timeout: Duration) -> Result<Channel, Status> {
    Endpoint::from_shared(format!("http://{addr}"))
        .map_err(|e| Status::invalid_argument(e.to_string()))?
        .connect_timeout(Duration::from_millis(500))
        .timeout(request_timeout)
        .connect()
        .await
        .map_err(|e| Status::unavailable(format!("{addr}: {e}")))
}

/// Calls `f` on the leader: follows `warden-leader`, tries the next endpoint
/// on `Unavailable`, until `deadline` has passed; each attempt may take
/// `request_timeout`.
pub(crate) async fn on_leader<T, F, Fut>(
    endpoints: &[String],
    deadline: Duration,
    request_timeout: Duration,
    f: F,
) -> Result<T, Status>
where
    F: Fn(Channel) -> Fut,
    Fut: std::future::Future<Output = Result<T, Status>>,
{
    let deadline = Instant::now() + deadline;
    let mut next = 0usize;
    let mut target = endpoints[0].clone();
    loop {
        let result = match connect(&target, request_timeout).await {
            Ok(c) => f(c).await,
            Err(e) => Err(e),
        };
        match result {
            Err(s)
                if matches!(
                    s.code(),
                    Code::Unavailable | Code::Unknown | Code::Cancelled
                ) =>
            {
                if Instant::now() >= deadline {
                    return Err(s);
                }
                match warden_client::leader_hint(s.metadata()) {
                    Some(leader) if leader != target => target = leader,
                    _ => {
                        next += 1;
                        target = endpoints[next % endpoints.len()].clone();
                        if next.is_multiple_of(endpoints.len()) {
                            tokio::time::sleep(Duration::from_millis(100)).await;
                        }
                    }
                }
            }
            other => return other,
        }
    }
}

/// [`on_leader`] with the Admin client, within [`CLI_DEADLINE`].
async fn call<T, F, Fut>(endpoints: &[String], f: F) -> Result<T, Status>
where
    F: Fn(AdminClient<Channel>) -> Fut,
    Fut: std::future::Future<Output = Result<T, Status>>,
{
    on_leader(
        endpoints,
        CLI_DEADLINE,
        Duration::from_millis(3_500),
        |ch| f(AdminClient::new(ch)),
    )
    .await
}

/// A gRPC error as the CLI prints it (one line, exit 1).
pub(crate) fn status_error(s: &Status) -> Report {
    let code = match s.code() {
        Code::PermissionDenied => "permission denied",
        Code::NotFound => "not found",
        Code::InvalidArgument => "invalid argument",
        Code::FailedPrecondition => "failed precondition",
        Code::ResourceExhausted => "limit reached",
        Code::Unavailable => "unavailable",
        Code::DeadlineExceeded => "deadline exceeded",
        _ => "error",
    };
    output::error(&format!("{code}: {}", s.message()))
}

fn ms(v: u64) -> String {
    humantime::format_duration(Duration::from_millis(v)).to_string()
}

/// A listed key as shown: `(true, NAME)` for election NAME (its key is
/// `ELECTION_PREFIX` + NAME, which no lock name can be), else
/// `(false, RESOURCE)`.
fn listed_name(key: &str) -> (bool, &str) {
    match key.strip_prefix(warden_client::ELECTION_PREFIX) {
        Some(name) => (true, name),
        None => (false, key),
    }
}

/// The JSON contract of `warden list --output json` (issue 3, CLI contract):
/// `"election": true` marks an election, whose `"resource"` is its NAME.
pub fn list_json(locks: &[pb::ListedLock]) -> Value {
    Value::Array(
        locks
            .iter()
            .map(|l| {
                let (election, name) = listed_name(&l.resource);
                json!({
                    "resource": name,
                    "election": election,
                    "holder": l.holder.as_ref().map(|h| json!({
                        "lease_id": h.lease_id,
                        "fencing_token": h.fencing_token,
                        "age_ms": h.age_ms,
                        "ttl_remaining_ms": h.ttl_remaining_ms,
                    })),
                    "waiters": l.waiters.iter().map(|w| json!({
                        "lease_id": w.lease_id,
                        "age_ms": w.age_ms,
                    })).collect::<Vec<_>>(),
                })
            })
            .collect(),
    )
}

/// `warden list [PREFIX]`.
pub async fn list(args: ListArgs) -> Report {
    let eps = match endpoints(&args.client) {
        Ok(e) => e,
        Err(e) => return output::error(&e),
    };
    let prefix = args.prefix.unwrap_or_default();
    if prefix.len() > warden_core::limits::MAX_RESOURCE_BYTES {
        return output::error(&format!(
            "PREFIX: {} bytes is above the limit of {} bytes",
            prefix.len(),
            warden_core::limits::MAX_RESOURCE_BYTES
        ));
    }
    let result = call(&eps, |mut c| {
        let prefix = prefix.clone();
        async move { Ok(c.list(pb::ListRequest { prefix }).await?.into_inner()) }
    })
    .await;
    let r = match result {
        Ok(r) => r,
        Err(s) => return status_error(&s),
    };
    let stdout = match args.client.output {
        OutputFormat::Json => list_json(&r.locks).to_string(),
        OutputFormat::Text => list_text(&r.locks),
    };
    Report {
        stdout: Some(stdout),
        stderr: None,
        exit_code: output::EXIT_OK,
    }
}

/// The text of `warden list`: one line per lock (`"NAME": ...`) or
/// election (`election "NAME": ...`).
fn list_text(locks: &[pb::ListedLock]) -> String {
    if locks.is_empty() {
        return "no locks".to_string();
    }
    locks
        .iter()
        .map(|l| {
            let holder = match &l.holder {
                Some(h) => format!(
                    "held by lease {} (token {}, for {}, TTL left {})",
                    h.lease_id,
                    h.fencing_token,
                    ms(h.age_ms),
                    ms(h.ttl_remaining_ms)
                ),
                None => "free (lock-delay)".to_string(),
            };
            let waiters: Vec<String> = l
                .waiters
                .iter()
                .map(|w| format!("lease {} ({})", w.lease_id, ms(w.age_ms)))
                .collect();
            let name = match listed_name(&l.resource) {
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

/// A client id for one CLI run: never 0, below 2^53 (S7).
fn client_id() -> u64 {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    let mixed = nanos ^ (u64::from(std::process::id()) << 32);
    (mixed & warden_core::limits::MAX_ID).max(1)
}

/// `warden release --force RESOURCE [--token T]`.
pub async fn force_release(args: ReleaseArgs) -> Report {
    let Some(resource) = args.force.clone() else {
        return output::error("--force RESOURCE: required");
    };
    if let Err(e) = check_resource(&resource) {
        return output::error(&e);
    }
    let eps = match endpoints(&args.client) {
        Ok(e) => e,
        Err(e) => return output::error(&e),
    };
    let user = std::env::var("USER").unwrap_or_else(|_| "unknown".into());
    let requested_by = format!("{user} (warden release --force)");
    let header = pb::RequestHeader {
        client_id: client_id(),
        request_id: 1,
        acked_request_id: 0,
    };
    let req = pb::ForceReleaseRequest {
        header: Some(header),
        resource,
        fencing_token: args.token.unwrap_or(0),
        requested_by,
    };
    let result = call(&eps, |mut c| {
        let req = req.clone();
        async move { Ok(c.force_release(req).await?.into_inner()) }
    })
    .await;
    let r = match result {
        Ok(r) => r,
        Err(s) => return status_error(&s),
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
    let eps = match endpoints(&args.client) {
        Ok(e) => e,
        Err(e) => return output::error(&e),
    };
    let result = call(&eps, |mut c| async move {
        Ok(c.audit_trail(pb::AuditTrailRequest {}).await?.into_inner())
    })
    .await;
    let r = match result {
        Ok(r) => r,
        Err(s) => return status_error(&s),
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

    fn parse(args: &[&str]) -> Result<Cli, clap::Error> {
        Cli::try_parse_from(std::iter::once("warden").chain(args.iter().copied()))
    }

    // Issue 3 CLI contract: `release --force RESOURCE` needs no lease id, the
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

    // Issue 3 CLI contract: the JSON shape of `warden list`.
    #[test]
    fn list_json_has_the_contract_shape() {
        let locks = vec![
            pb::ListedLock {
                resource: "a".into(),
                holder: Some(pb::ListHolder {
                    lease_id: 3,
                    fencing_token: 9,
                    age_ms: 10,
                    ttl_remaining_ms: 900,
                }),
                waiters: vec![pb::ListWaiter {
                    lease_id: 4,
                    age_ms: 5,
                }],
            },
            pb::ListedLock {
                resource: "b".into(),
                holder: None,
                waiters: vec![],
            },
        ];
        assert_eq!(
            list_json(&locks),
            json!([
                {"resource": "a", "election": false,
                 "holder": {"lease_id": 3, "fencing_token": 9, "age_ms": 10, "ttl_remaining_ms": 900},
                 "waiters": [{"lease_id": 4, "age_ms": 5}]},
                {"resource": "b", "election": false, "holder": null, "waiters": []}
            ])
        );
    }

    // Public bug: `warden list` showed an election's internal key
    // ("\u{1}election/NAME"); it shows `election "NAME"` (text) and
    // `"election": true` with the NAME (JSON).
    #[test]
    fn list_shows_elections_by_name() {
        let locks = vec![pb::ListedLock {
            resource: warden_client::election_key("scheduler"),
            holder: Some(pb::ListHolder {
                lease_id: 3,
                fencing_token: 9,
                age_ms: 1_000,
                ttl_remaining_ms: 9_000,
            }),
            waiters: vec![],
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
