//! `warden lease grant | keep-alive | revoke | ttl`: sessions from the shell.

use std::time::Duration;

use clap::{Args, Subcommand};
use serde_json::json;

use crate::cli::{parse_duration, parse_id, ClientArgs, OutputFormat};
use crate::commands::{connect, connect_long_lived, describe_error};
use crate::output::{Report, EXIT_OK};

/// `warden lease ...`.
#[derive(Debug, Args)]
pub struct LeaseArgs {
    #[command(subcommand)]
    pub command: LeaseCommand,
}

/// The lease subcommands.
#[derive(Debug, Subcommand)]
pub enum LeaseCommand {
    /// Create a session: a lease with no lock that lives while renewed.
    Grant(LeaseGrantArgs),
    /// Renew a lease every TTL/3 until Ctrl-C (or --count renewals); exit 1
    /// if the lease is lost.
    KeepAlive(LeaseKeepAliveArgs),
    /// Revoke a lease: releases all its locks and removes its waits.
    Revoke(LeaseIdArgs),
    /// Show a lease's TTL, time left, locks and waits.
    Ttl(LeaseIdArgs),
}

/// `warden lease grant`.
#[derive(Debug, Args)]
pub struct LeaseGrantArgs {
    /// The lease's TTL (1s ..= 1h).
    #[arg(long, value_parser = parse_duration)]
    pub ttl: Duration,
    #[command(flatten)]
    pub client: ClientArgs,
}

/// `warden lease keep-alive`.
#[derive(Debug, Args)]
pub struct LeaseKeepAliveArgs {
    /// The lease to keep alive.
    #[arg(value_parser = parse_id)]
    pub lease_id: u64,
    /// Stop after this many acknowledged renewals (default: until Ctrl-C).
    #[arg(long)]
    pub count: Option<u64>,
    #[command(flatten)]
    pub client: ClientArgs,
}

/// A command naming one lease.
#[derive(Debug, Args)]
pub struct LeaseIdArgs {
    /// The lease.
    #[arg(value_parser = parse_id)]
    pub lease_id: u64,
    #[command(flatten)]
    pub client: ClientArgs,
}

fn report(stdout: String) -> Report {
    Report {
        stdout: Some(stdout),
        stderr: None,
        exit_code: EXIT_OK,
    }
}

fn error(message: String) -> Report {
    crate::output::error(&message)
}

fn fmt_ms(ms: u64) -> String {
    humantime::format_duration(Duration::from_millis(ms)).to_string()
}

/// Runs a lease subcommand.
pub async fn run(args: LeaseArgs) -> Report {
    match args.command {
        LeaseCommand::Grant(a) => grant(a).await,
        LeaseCommand::KeepAlive(a) => keep_alive(a).await,
        LeaseCommand::Revoke(a) => revoke(a).await,
        LeaseCommand::Ttl(a) => ttl(a).await,
    }
}

async fn grant(args: LeaseGrantArgs) -> Report {
    let ttl_ms = u64::try_from(args.ttl.as_millis()).unwrap_or(u64::MAX);
    if !(warden_core::limits::MIN_TTL_MS..=warden_core::limits::MAX_TTL_MS).contains(&ttl_ms) {
        return error(format!(
            "--ttl: {} is outside 1s ..= 1h",
            humantime::format_duration(args.ttl)
        ));
    }
    let client = match connect(&args.client).await {
        Ok(c) => c,
        Err(e) => return error(e),
    };
    match client.lease_grant(args.ttl).await {
        Ok(g) => report(match args.client.output {
            OutputFormat::Json => json!({"lease_id": g.lease_id, "ttl_ms": g.ttl_ms}).to_string(),
            OutputFormat::Text => {
                format!("granted lease {} (TTL {})", g.lease_id, fmt_ms(g.ttl_ms))
            }
        }),
        Err(e) => error(describe_error(&e)),
    }
}

async fn keep_alive(args: LeaseKeepAliveArgs) -> Report {
    let client = match connect_long_lived(&args.client).await {
        Ok(c) => c,
        Err(e) => return error(e),
    };
    let mut renewed = 0u64;
    loop {
        let ack = match client.renew(args.lease_id).await {
            Ok(a) => a,
            Err(e) => {
                return error(format!(
                    "lease {} lost or unreachable after {renewed} renewals: {}",
                    args.lease_id,
                    describe_error(&e)
                ))
            }
        };
        renewed += 1;
        // One line per acknowledgement (JSON lines in json mode).
        let line = match args.client.output {
            OutputFormat::Json => json!({
                "lease_id": ack.lease_id,
                "ttl_ms": ack.ttl_ms,
                "renewal": renewed,
                "sequence": ack.sequence,
            })
            .to_string(),
            OutputFormat::Text => format!(
                "renewed lease {}: TTL {} (renewal {renewed}{})",
                ack.lease_id,
                fmt_ms(ack.ttl_ms),
                args.count.map(|c| format!(" of {c}")).unwrap_or_default()
            ),
        };
        if let Err(e) = crate::output::line(&line) {
            // The reader closed stdout: the stream (and the keep-alive) ends.
            return Report {
                stdout: None,
                stderr: None,
                exit_code: crate::output::stdout_failed(&e, EXIT_OK),
            };
        }
        if args.count.is_some_and(|c| renewed >= c) {
            return Report {
                stdout: None,
                stderr: None,
                exit_code: EXIT_OK,
            };
        }
        let period = Duration::from_millis((ack.ttl_ms / 3).max(1));
        tokio::select! {
            _ = tokio::time::sleep(period) => {}
            _ = tokio::signal::ctrl_c() => {
                return Report { stdout: None, stderr: Some(format!("stopped keeping lease {} alive", args.lease_id)), exit_code: EXIT_OK };
            }
        }
    }
}

async fn revoke(args: LeaseIdArgs) -> Report {
    let client = match connect(&args.client).await {
        Ok(c) => c,
        Err(e) => return error(e),
    };
    match client.revoke(args.lease_id).await {
        Ok(id) => report(match args.client.output {
            OutputFormat::Json => json!({"lease_id": id, "revoked": true}).to_string(),
            OutputFormat::Text => format!("revoked lease {id}"),
        }),
        Err(e) => error(describe_error(&e)),
    }
}

async fn ttl(args: LeaseIdArgs) -> Report {
    let client = match connect(&args.client).await {
        Ok(c) => c,
        Err(e) => return error(e),
    };
    match client.lease_time_to_live(args.lease_id).await {
        Ok(l) => report(match args.client.output {
            OutputFormat::Json => json!({
                "lease_id": l.lease_id,
                "ttl_ms": l.ttl_ms,
                "ttl_remaining_ms": l.ttl_remaining_ms,
                "locks": l.locks,
                "waits": l.waits,
                "graced": l.graced,
            })
            .to_string(),
            OutputFormat::Text => format!(
                "lease {}: TTL {}, {} left; holds {}; waits on {}",
                l.lease_id,
                fmt_ms(l.ttl_ms),
                fmt_ms(l.ttl_remaining_ms),
                name_list(&l.locks),
                name_list(&l.waits)
            ),
        }),
        Err(e) => error(describe_error(&e)),
    }
}

/// Resource names for text output, each quoted as every text line quotes
/// one: `"R1", "R2"`, or `nothing`.
fn name_list(names: &[String]) -> String {
    if names.is_empty() {
        return "nothing".into();
    }
    names
        .iter()
        .map(|n| format!("{n:?}"))
        .collect::<Vec<_>>()
        .join(", ")
}
