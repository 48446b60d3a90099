//! `warden elect NAME --value V | --observe | --leader`: leader election from
//! the shell, on the client library's [`Election`].
//!
//! Every form prints a leader as one line; with `--output json` the line is
//! `{"name","value","fencing_token"}` (`null` for "no leader", `--leader`
//! only). Elections live in their own namespace: an election named `jobs`
//! and a lock named `jobs` are two things.
//!
//! - `--value V [--ttl 10s]`: campaigns on a session with that TTL, prints
//!   the line once elected, and holds the leadership until SIGINT/SIGTERM,
//!   which resigns (or withdraws the candidacy) and exits 0. If the session is
//!   lost it says why on stderr and exits 3 ([`EXIT_LEASE_LOST`]).
//! - `--observe`: prints the current leader (if any), then each new leader
//!   or new value, until SIGINT/SIGTERM (exit 0).
//! - `--leader`: prints the current leader once.

use std::time::Duration;

use clap::{ArgGroup, Args};
use serde_json::json;
use tokio::signal::unix::{signal, SignalKind};
use warden_client::{Election, LeaderInfo, Observer, WatchError};
use warden_core::limits;

use crate::cli::{parse_duration, ClientArgs, OutputFormat};
use crate::commands::{check_resource, connect_long_lived, describe_error};
use crate::output::{EXIT_ERROR, EXIT_LEASE_LOST, EXIT_OK};

/// `warden elect`.
#[derive(Debug, Args)]
#[command(group(ArgGroup::new("mode").required(true).args(["value", "observe", "leader"])))]
pub struct ElectArgs {
    /// The election's name (1..=512 bytes of UTF-8, no control characters).
    pub name: String,
    /// Campaign with this value (<= 4096 bytes) and hold the leadership
    /// until interrupted.
    #[arg(long, value_name = "V")]
    pub value: Option<String>,
    /// Print each new leader, one line each, until interrupted.
    #[arg(long)]
    pub observe: bool,
    /// Print the current leader once.
    #[arg(long)]
    pub leader: bool,
    /// TTL of the campaigner's session (1s ..= 1h); renewed every TTL/3.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, default_value = "10s")]
    pub ttl: Duration,
    #[command(flatten)]
    pub client: ClientArgs,
}

/// A leader as one line of output: `{"name","value","fencing_token"}` in
/// JSON, `null` when there is none.
pub fn leader_line(name: &str, leader: Option<&LeaderInfo>, format: OutputFormat) -> String {
    match (format, leader) {
        (OutputFormat::Json, Some(l)) => json!({
            "name": name,
            "value": l.value,
            "fencing_token": l.fencing_token,
        })
        .to_string(),
        (OutputFormat::Json, None) => "null".to_string(),
        (OutputFormat::Text, Some(l)) => format!(
            "leader of {name:?}: {:?} (fencing token {})",
            l.value, l.fencing_token
        ),
        (OutputFormat::Text, None) => format!("{name:?} has no leader"),
    }
}

/// The line a campaigner prints once elected.
pub fn elected_line(name: &str, value: &str, fencing_token: u64, format: OutputFormat) -> String {
    match format {
        OutputFormat::Json => leader_line(
            name,
            Some(&LeaderInfo {
                lease_id: 0,
                fencing_token,
                value: value.to_string(),
            }),
            format,
        ),
        OutputFormat::Text => {
            format!("elected leader of {name:?} with {value:?} (fencing token {fencing_token})")
        }
    }
}

/// Checks the name, value and TTL before anything is sent.
pub fn check_args(args: &ElectArgs) -> Result<(), String> {
    check_resource(&args.name).map_err(|e| e.replacen("RESOURCE", "NAME", 1))?;
    if let Some(value) = &args.value {
        if value.len() > limits::MAX_VALUE_BYTES {
            return Err(format!(
                "--value: {} bytes is above the limit of {} bytes",
                value.len(),
                limits::MAX_VALUE_BYTES
            ));
        }
    }
    let ttl_ms = u64::try_from(args.ttl.as_millis()).unwrap_or(u64::MAX);
    if !(limits::MIN_TTL_MS..=limits::MAX_TTL_MS).contains(&ttl_ms) {
        return Err(format!(
            "--ttl: {} is outside 1s ..= 1h",
            humantime::format_duration(args.ttl)
        ));
    }
    Ok(())
}

fn fail(message: &str) -> u8 {
    eprintln!("error: {}", crate::output::one_line(message));
    EXIT_ERROR
}

/// Resolves on SIGINT or SIGTERM.
struct Interrupt {
    int: tokio::signal::unix::Signal,
    term: tokio::signal::unix::Signal,
}

impl Interrupt {
    fn install() -> Result<Interrupt, String> {
        Ok(Interrupt {
            int: signal(SignalKind::interrupt())
                .map_err(|e| format!("cannot handle SIGINT: {e}"))?,
            term: signal(SignalKind::terminate())
                .map_err(|e| format!("cannot handle SIGTERM: {e}"))?,
        })
    }

    async fn recv(&mut self) {
        tokio::select! {
            _ = self.int.recv() => {}
            _ = self.term.recv() => {}
        }
    }
}

/// Runs `warden elect`; returns the exit code.
pub async fn run(args: ElectArgs) -> u8 {
    if let Err(e) = check_args(&args) {
        return fail(&e);
    }
    let mut interrupt = match Interrupt::install() {
        Ok(i) => i,
        Err(e) => return fail(&e),
    };
    let client = match connect_long_lived(&args.client).await {
        Ok(c) => c,
        Err(e) => return fail(&e),
    };
    let format = args.client.output;
    if args.leader {
        return match client.status(client.election_key(&args.name).await).await {
            Ok(s) => {
                let leader = s.holder.map(|h| LeaderInfo {
                    lease_id: h.lease_id,
                    fencing_token: h.fencing_token,
                    value: h.value,
                });
                match crate::output::line(&leader_line(&args.name, leader.as_ref(), format)) {
                    Ok(()) => EXIT_OK,
                    Err(e) => crate::output::stdout_failed(&e, EXIT_OK),
                }
            }
            Err(e) => fail(&describe_error(&e)),
        };
    }
    if args.observe {
        let observe = async {
            let mut observer = Observer::start(client.clone(), &args.name).await?;
            loop {
                let leader = observer.next().await?;
                if let Err(e) = crate::output::line(&leader_line(&args.name, Some(&leader), format))
                {
                    // The reader closed stdout: the stream ends.
                    return Ok::<std::io::Error, WatchError>(e);
                }
            }
        };
        return tokio::select! {
            r = observe => match r {
                Err(WatchError::Client(e)) => fail(&describe_error(&e)),
                Err(e) => fail(&e.to_string()),
                Ok(e) => crate::output::stdout_failed(&e, EXIT_OK),
            },
            () = interrupt.recv() => EXIT_OK,
        };
    }
    let value = args.value.clone().unwrap_or_default();
    campaign(&client, &args.name, value, args.ttl, format, &mut interrupt).await
}

async fn campaign(
    client: &warden_client::Client,
    name: &str,
    value: String,
    ttl: Duration,
    format: OutputFormat,
    interrupt: &mut Interrupt,
) -> u8 {
    let session = tokio::select! {
        s = client.session(ttl) => match s {
            Ok(s) => s,
            Err(e) => return fail(&describe_error(&e)),
        },
        () = interrupt.recv() => return EXIT_OK,
    };
    let election = Election::new(session.clone(), name);
    let leadership = tokio::select! {
        r = election.campaign(value.clone()) => match r {
            Ok(l) => l,
            Err(e) => {
                let _ = tokio::time::timeout(Duration::from_secs(1), session.close()).await;
                return fail(&describe_error(&e));
            }
        },
        () = interrupt.recv() => {
            // Revoking the session's lease withdraws the candidacy (S8).
            return match session.close().await {
                Ok(()) => {
                    eprintln!("withdrew from {name:?} before being elected");
                    EXIT_OK
                }
                Err(e) => fail(&format!(
                    "could not withdraw from {name:?} ({}); the candidacy ends when its lease expires",
                    describe_error(&e)
                )),
            };
        }
    };
    // A closed stdout does not end the leadership: only the announcement
    // is lost, and the leader keeps leading until interrupted or it loses.
    if let Err(e) = crate::output::line(&elected_line(
        name,
        &value,
        leadership.fencing_token(),
        format,
    )) {
        if e.kind() != std::io::ErrorKind::BrokenPipe {
            eprintln!("warning: cannot write to stdout: {e}");
        }
    }
    tokio::select! {
        lost = leadership.lost() => {
            eprintln!(
                "error: no longer the leader of {name:?} (fencing token {}): {lost}",
                leadership.fencing_token()
            );
            let _ = tokio::time::timeout(Duration::from_secs(1), session.close()).await;
            EXIT_LEASE_LOST
        }
        () = interrupt.recv() => {
            let token = leadership.fencing_token();
            let resigned = leadership.resign().await;
            let closed = session.close().await;
            match (resigned, closed) {
                (Ok(_), Ok(())) => {
                    eprintln!("resigned as leader of {name:?} (fencing token {token})");
                    EXIT_OK
                }
                (Err(e), _) | (_, Err(e)) => fail(&format!(
                    "could not resign as leader of {name:?} ({}); the leadership ends when its lease expires",
                    describe_error(&e)
                )),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::{Cli, Command};
    use clap::Parser;

    fn parse(extra: &[&str]) -> Result<ElectArgs, clap::Error> {
        let args = ["warden", "elect"].iter().chain(extra.iter()).copied();
        match Cli::try_parse_from(args)?.command {
            Command::Elect(a) => Ok(a),
            other => panic!("{other:?}"),
        }
    }

    // CLI contract (README): exactly one of --value, --observe, --leader; TTL defaults to 10 s.
    #[test]
    fn exactly_one_mode() {
        let a = parse(&["sched", "--value", "a"]).unwrap();
        assert_eq!(
            (a.value.as_deref(), a.ttl),
            (Some("a"), Duration::from_secs(10))
        );
        assert!(parse(&["sched", "--observe"]).unwrap().observe);
        assert!(parse(&["sched", "--leader"]).unwrap().leader);
        assert!(parse(&["sched"]).is_err());
        assert!(parse(&["sched", "--value", "a", "--observe"]).is_err());
        assert!(parse(&["sched", "--leader", "--observe"]).is_err());
    }

    // "What bad input gets": bad name, oversized value and TTL name the field and limit.
    #[test]
    fn bad_input_names_the_field() {
        let a = parse(&["", "--observe"]).unwrap();
        assert!(check_args(&a)
            .unwrap_err()
            .starts_with("NAME: must not be empty"));
        let big = "v".repeat(4_097);
        let a = parse(&["s", "--value", &big]).unwrap();
        assert_eq!(
            check_args(&a).unwrap_err(),
            "--value: 4097 bytes is above the limit of 4096 bytes"
        );
        let a = parse(&["s", "--value", "a", "--ttl", "100ms"]).unwrap();
        assert_eq!(
            check_args(&a).unwrap_err(),
            "--ttl: 100ms is outside 1s ..= 1h"
        );
    }

    // CLI contract (README): one JSON object {"name","value","fencing_token"}, `null` for none.
    #[test]
    fn lines_follow_the_contract() {
        let l = LeaderInfo {
            lease_id: 4,
            fencing_token: 9,
            value: "node-a".into(),
        };
        let v: serde_json::Value =
            serde_json::from_str(&leader_line("sched", Some(&l), OutputFormat::Json)).unwrap();
        assert_eq!(
            v,
            json!({"name": "sched", "value": "node-a", "fencing_token": 9})
        );
        let e: serde_json::Value =
            serde_json::from_str(&elected_line("sched", "node-a", 9, OutputFormat::Json)).unwrap();
        assert_eq!(e, v);
        assert_eq!(leader_line("sched", None, OutputFormat::Json), "null");
        assert_eq!(
            leader_line("sched", Some(&l), OutputFormat::Text),
            "leader of \"sched\": \"node-a\" (fencing token 9)"
        );
        assert_eq!(
            elected_line("sched", "node-a", 9, OutputFormat::Text),
            "elected leader of \"sched\" with \"node-a\" (fencing token 9)"
        );
        assert_eq!(
            leader_line("sched", None, OutputFormat::Text),
            "\"sched\" has no leader"
        );
    }
}
