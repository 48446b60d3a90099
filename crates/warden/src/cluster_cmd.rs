//! `warden cluster status | add-node | remove-node | replace-node`.
//!
//! Membership commands are the client's [`Admin`](warden_client::Admin)
//! calls: they go to the leader and may take up to
//! [`warden_client::MEMBERSHIP_DEADLINE`] (adding a node waits until it has
//! caught up), and are repeated only after an attempt that certainly did
//! nothing (else "outcome unknown": check `cluster status` first). `status`
//! shows each member's role, term, applied and matched index, replication
//! lag and last contact, as the leader sees them.

use std::time::Duration;

use clap::Args;
use serde_json::{json, Value};
use warden_client::{ClientError, ClusterStatus, Membership};

use crate::admin_cmd::admin;
use crate::cli::{parse_id, ClientArgs, ClusterStatusArgs, OutputFormat};
use crate::commands::{connect, describe_error};
use crate::output::{self, Report};

/// `warden cluster add-node`.
#[derive(Debug, Args)]
pub struct AddNodeArgs {
    /// The new node's id (never one a member ever had).
    #[arg(value_parser = parse_id)]
    pub node_id: u64,
    /// The address it serves clients on, and peers unless --peer-addr is
    /// given (it must already run with `--join`).
    #[arg(long, value_name = "HOST:PORT")]
    pub addr: String,
    /// Where its peers reach its peer (Raft) service, when it runs with
    /// `--peer-listen`.
    #[arg(long, value_name = "HOST:PORT")]
    pub peer_addr: Option<String>,
    #[command(flatten)]
    pub client: ClientArgs,
}

/// `warden cluster remove-node`.
#[derive(Debug, Args)]
pub struct RemoveNodeArgs {
    /// The member to remove.
    #[arg(value_parser = parse_id)]
    pub node_id: u64,
    #[command(flatten)]
    pub client: ClientArgs,
}

/// `warden cluster replace-node`.
#[derive(Debug, Args)]
pub struct ReplaceNodeArgs {
    /// The voter to replace (e.g. the one whose disk was lost).
    #[arg(value_parser = parse_id)]
    pub old_node_id: u64,
    /// The replacement's id: a new id, never a reused one.
    #[arg(long = "id", value_name = "NEW_ID", value_parser = parse_id)]
    pub new_node_id: u64,
    /// The replacement's client address, and peer address unless
    /// --peer-addr is given (it must already run with `--join`).
    #[arg(long, value_name = "HOST:PORT")]
    pub addr: String,
    /// Where its peers reach its peer (Raft) service, when it runs with
    /// `--peer-listen`.
    #[arg(long, value_name = "HOST:PORT")]
    pub peer_addr: Option<String>,
    #[command(flatten)]
    pub client: ClientArgs,
}

fn check_addr(addr: &str) -> Result<String, String> {
    warden_client::parse_endpoint(addr).map_err(|e| format!("--addr {addr:?}: {e}"))
}

/// `--peer-addr`: HOST:PORT, not the `--addr` (one port serves both then:
/// leave it out).
fn check_peer_addr(peer_addr: Option<&str>, addr: &str) -> Result<Option<String>, String> {
    let Some(p) = peer_addr else {
        return Ok(None);
    };
    let p = warden_client::parse_endpoint(p).map_err(|e| format!("--peer-addr {p:?}: {e}"))?;
    if p == addr {
        return Err(format!(
            "--peer-addr: {p} is the --addr; leave --peer-addr out when one port serves both"
        ));
    }
    Ok(Some(p))
}

/// The report of a membership change's outcome.
fn membership(result: Result<Membership, ClientError>, format: OutputFormat) -> Report {
    match result {
        Ok(m) => membership_report(&m, format),
        Err(e) => output::error(&describe_error(&e)),
    }
}

/// The JSON (`{"voters","learners","log_index"}`) or text of a change.
pub fn membership_report(r: &Membership, format: OutputFormat) -> Report {
    let stdout = match format {
        OutputFormat::Json => json!({
            "voters": r.voters,
            "learners": r.learners,
            "log_index": r.log_index,
        })
        .to_string(),
        OutputFormat::Text => format!(
            "membership committed at log index {}: voters {}; learners {}",
            r.log_index,
            id_list(&r.voters),
            id_list(&r.learners)
        ),
    };
    Report {
        stdout: Some(stdout),
        stderr: None,
        exit_code: output::EXIT_OK,
    }
}

/// Node ids for text output: `1, 2, 3`, or `none`.
fn id_list(ids: &[u64]) -> String {
    if ids.is_empty() {
        return "none".into();
    }
    ids.iter()
        .map(u64::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

/// `warden cluster add-node ID --addr HOST:PORT [--peer-addr HOST:PORT]`.
pub async fn add_node(args: AddNodeArgs) -> Report {
    let addr = match check_addr(&args.addr) {
        Ok(a) => a,
        Err(e) => return output::error(&e),
    };
    let peer_addr = match check_peer_addr(args.peer_addr.as_deref(), &addr) {
        Ok(p) => p,
        Err(e) => return output::error(&e),
    };
    let admin = match admin(&args.client).await {
        Ok(a) => a,
        Err(report) => return report,
    };
    membership(
        admin
            .add_node_with_peer_addr(args.node_id, addr, peer_addr)
            .await,
        args.client.output,
    )
}

/// `warden cluster remove-node ID`.
pub async fn remove_node(args: RemoveNodeArgs) -> Report {
    let admin = match admin(&args.client).await {
        Ok(a) => a,
        Err(report) => return report,
    };
    membership(admin.remove_node(args.node_id).await, args.client.output)
}

/// `warden cluster replace-node OLD --id NEW --addr HOST:PORT [--peer-addr HOST:PORT]`.
pub async fn replace_node(args: ReplaceNodeArgs) -> Report {
    let addr = match check_addr(&args.addr) {
        Ok(a) => a,
        Err(e) => return output::error(&e),
    };
    let peer_addr = match check_peer_addr(args.peer_addr.as_deref(), &addr) {
        Ok(p) => p,
        Err(e) => return output::error(&e),
    };
    if args.old_node_id == args.new_node_id {
        return output::error(
            "--id: the replacement needs a new id, not the old node's (a reused id could vote twice in one term)",
        );
    }
    let admin = match admin(&args.client).await {
        Ok(a) => a,
        Err(report) => return report,
    };
    let result = admin
        .replace_node_with_peer_addr(args.old_node_id, args.new_node_id, addr, peer_addr)
        .await;
    membership(result, args.client.output)
}

fn ms(v: u64) -> String {
    humantime::format_duration(Duration::from_millis(v)).to_string()
}

/// `warden cluster status`: the base report (see `output::cluster_status`)
/// plus, per member, `term`, `last_contact_ms`, `matched_index` and
/// `lag_entries`, and the leader's `last_log_index`.
pub fn status_report(r: &ClusterStatus, format: OutputFormat) -> Report {
    let base = output::cluster_status(r, format);
    let Some(stdout) = base.stdout.clone() else {
        return base;
    };
    let stdout = match format {
        OutputFormat::Json => {
            let Ok(mut v) = serde_json::from_str::<Value>(&stdout) else {
                return base;
            };
            v["last_log_index"] = json!(r.last_log_index);
            v["insecure"] = json!(r.insecure);
            v["election_prefix"] = json!(r.election_prefix);
            v["max_requests_in_flight"] = json!(r.max_requests_in_flight);
            v["members_log_format"] = json!(r.members_log_format);
            v["unconfirmed_peers"] = json!(r.unconfirmed_peers);
            if let Some(members) = v["members"].as_array_mut() {
                for (j, m) in members.iter_mut().zip(&r.members) {
                    j["term"] = json!(m.term);
                    // null: never heard from (or a follower answered).
                    j["last_contact_ms"] = json!(m.last_contact_ms);
                    j["matched_index"] = json!(m.matched_index);
                    j["lag_entries"] = json!(m.lag_entries);
                }
            }
            v.to_string()
        }
        OutputFormat::Text => {
            // The base text: one header line, the member table (a title line
            // and one line per member), then timing, limits and bounds.
            let mut lines = stdout.lines();
            let mut out = String::new();
            if let Some(head) = lines.next() {
                out.push_str(&format!("{head}  last log index {}\n", r.last_log_index));
            }
            if r.insecure {
                out.push_str(
                    "insecure: this node serves plaintext without authentication (--insecure)\n",
                );
            }
            if !r.unconfirmed_peers.is_empty() {
                let ids: Vec<String> = r.unconfirmed_peers.iter().map(u64::to_string).collect();
                out.push_str(&format!(
                    "unconfirmed peers: node {} (not in this node's membership, not confirmed by a majority of the voters it knows: their Raft calls are refused; a member listed by itself cannot follow: wipe it and add it back)\n",
                    ids.join(", node ")
                ));
            }
            let rest: Vec<&str> = lines.skip(1 + r.members.len()).collect();
            let w = r
                .members
                .iter()
                .map(|m| m.addr.len())
                .max()
                .unwrap_or(0)
                .max(7);
            out.push_str(&format!(
                "{:<4} {:<w$}  {:<11} {:>6} {:>9} {:>9} {:>6}  {}\n",
                "ID", "ADDRESS", "ROLE", "TERM", "APPLIED", "MATCHED", "LAG", "LAST CONTACT"
            ));
            for m in &r.members {
                let term = if m.term == 0 {
                    "?".to_string()
                } else {
                    m.term.to_string()
                };
                let contact = match m.last_contact_ms {
                    _ if m.role == "leader" => "-".to_string(),
                    None => "never".to_string(),
                    Some(last) => format!("{} ago", ms(last)),
                };
                // A member with a peer port of its own (`--peer-listen`)
                // names it last; clients use ADDRESS.
                let peer = match &m.peer_addr {
                    Some(p) => format!("  peer {p}"),
                    None => String::new(),
                };
                out.push_str(&format!(
                    "{:<4} {:<w$}  {:<11} {:>6} {:>9} {:>9} {:>6}  {}{}\n",
                    m.id,
                    m.addr,
                    m.role,
                    term,
                    m.applied_index,
                    m.matched_index,
                    m.lag_entries,
                    contact,
                    peer
                ));
            }
            out.push_str(&rest.join("\n"));
            out
        }
    };
    Report {
        stdout: Some(stdout),
        ..base
    }
}

/// `warden cluster status`.
pub async fn status(args: ClusterStatusArgs) -> Report {
    let client = match connect(&args.client).await {
        Ok(c) => c,
        Err(e) => return output::error(&e),
    };
    match client.cluster_status().await {
        Ok(r) => status_report(&r, args.client.output),
        Err(e) => output::error(&describe_error(&e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use warden_proto::v1 as pb;

    /// As the server sends it; the tests report it as the client converts it.
    fn sample() -> ClusterStatus {
        ClusterStatus::from(sample_response())
    }

    fn sample_response() -> pb::ClusterStatusResponse {
        pb::ClusterStatusResponse {
            cluster_id: "c1".into(),
            leader_id: 1,
            term: 4,
            commit_index: 120,
            members: vec![
                pb::Member {
                    id: 1,
                    addr: "127.0.0.1:7001".into(),
                    role: "leader".into(),
                    applied_index: 120,
                    last_contact_ms: 0,
                    matched_index: 120,
                    term: 4,
                    lag_entries: 0,
                    contacted: true,
                    peer_addr: String::new(),
                },
                pb::Member {
                    id: 2,
                    addr: "127.0.0.1:7002".into(),
                    role: "unreachable".into(),
                    applied_index: 90,
                    last_contact_ms: 4_000,
                    matched_index: 90,
                    term: 0,
                    lag_entries: 31,
                    contacted: true,
                    peer_addr: "127.0.0.1:7102".into(),
                },
                pb::Member {
                    id: 3,
                    addr: "127.0.0.1:7003".into(),
                    role: "unreachable".into(),
                    applied_index: 0,
                    last_contact_ms: 0,
                    matched_index: 0,
                    term: 0,
                    lag_entries: 121,
                    contacted: false,
                    peer_addr: String::new(),
                },
            ],
            timing: None,
            node_id: 1,
            last_log_index: 121,
            insecure: false,
            election_prefix: "\u{1}election/".into(),
            max_requests_in_flight: 64,
            members_log_format: 1,
            unconfirmed_peers: vec![],
        }
    }

    // docs/operations.md: the JSON contract of `cluster status` has role, term,
    // applied index, last contact and lag per member.
    #[test]
    fn status_json_has_term_lag_and_last_contact() {
        let r = status_report(&sample(), OutputFormat::Json);
        let v: Value = serde_json::from_str(r.stdout.as_deref().expect("stdout")).expect("json");
        assert_eq!(v["last_log_index"], 121);
        let m = &v["members"][1];
        assert_eq!(m["role"], "unreachable");
        assert_eq!(m["term"], 0);
        assert_eq!(m["lag_entries"], 31);
        assert_eq!(m["last_contact_ms"], 4_000);
        assert_eq!(m["matched_index"], 90);
        assert_eq!(v["members"][0]["term"], 4);
        assert_eq!(v["members"][0]["last_contact_ms"], 0);
        // Never heard from is null, not 0 (0 is the answering node itself).
        assert_eq!(v["members"][2]["last_contact_ms"], Value::Null);
        // `--peer-listen`: a member's own peer address, null without one;
        // `addr` stays the client address.
        assert_eq!(m["peer_addr"], "127.0.0.1:7102");
        assert_eq!(m["addr"], "127.0.0.1:7002");
        assert_eq!(v["members"][0]["peer_addr"], Value::Null);
    }

    #[test]
    fn status_text_has_a_row_per_member() {
        let r = status_report(&sample(), OutputFormat::Text);
        let text = r.stdout.expect("stdout");
        assert!(text.contains("LAG"), "{text}");
        let row = text.lines().find(|l| l.starts_with("2 ")).expect("row 2");
        assert!(
            row.contains("unreachable") && row.contains(" 31 ") && row.contains("4s ago"),
            "{row}"
        );
        assert!(row.ends_with("4s ago  peer 127.0.0.1:7102"), "{row}");
        let row = text.lines().find(|l| l.starts_with("3 ")).expect("row 3");
        assert!(row.ends_with("never"), "{row}");
        assert!(text.contains("timing: not reported"), "{text}");
        assert!(!text.contains("insecure"), "{text}");
        assert!(!text.contains("unconfirmed"), "{text}");
    }

    // docs/security.md "The peer service": `cluster status` names the peer
    // ids the answering node refuses as unconfirmed, in text and JSON.
    #[test]
    fn status_shows_unconfirmed_peers() {
        let r = ClusterStatus {
            unconfirmed_peers: vec![7, 9],
            ..sample()
        };
        let text = status_report(&r, OutputFormat::Text)
            .stdout
            .expect("stdout");
        let line = text
            .lines()
            .find(|l| l.starts_with("unconfirmed peers:"))
            .expect("the unconfirmed line");
        assert!(
            line.starts_with("unconfirmed peers: node 7, node 9 (not in this node's membership"),
            "{line}"
        );
        let v: Value = serde_json::from_str(
            status_report(&r, OutputFormat::Json)
                .stdout
                .as_deref()
                .expect("stdout"),
        )
        .expect("json");
        assert_eq!(v["unconfirmed_peers"], json!([7, 9]));
    }

    // docs/security.md "Insecure mode": `cluster status` says so when the
    // answering node runs without certificates, in text and JSON.
    #[test]
    fn status_shows_insecure() {
        let insecure = ClusterStatus::from(pb::ClusterStatusResponse {
            insecure: true,
            ..sample_response()
        });
        let text = status_report(&insecure, OutputFormat::Text)
            .stdout
            .expect("stdout");
        assert_eq!(
            text.lines().nth(1),
            Some("insecure: this node serves plaintext without authentication (--insecure)"),
            "{text}"
        );
        let v: Value = serde_json::from_str(
            status_report(&insecure, OutputFormat::Json)
                .stdout
                .as_deref()
                .expect("stdout"),
        )
        .expect("json");
        assert_eq!(v["insecure"], true);
        let v: Value = serde_json::from_str(
            status_report(&sample(), OutputFormat::Json)
                .stdout
                .as_deref()
                .expect("stdout"),
        )
        .expect("json");
        assert_eq!(v["insecure"], false);
    }
}
