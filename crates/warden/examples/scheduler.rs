//! A job scheduler run as several instances, of which exactly one — the
//! leader of the election `scheduler` — runs jobs.
//!
//! ```sh
//! cargo run -p warden -- dev                  # a local cluster; paste its two export lines
//! cargo run -p warden --example scheduler -- --name a
//! cargo run -p warden --example scheduler -- --name b
//! ```
//!
//! The leader runs a job every `--every` (200 ms): it calls `check()` right
//! before each job (is the term of office certainly still ours, S5?) and
//! stamps the job with the term's fencing token, which only grows from one
//! leader to the next (S2). A job is one JSON line on stdout (or appended to
//! `--out FILE`): `{"job":N,"scheduler":"a","fencing_token":T}`.
//!
//! Kill the leader (`kill -9`) and another instance is elected once the dead
//! leader's lease has expired: within TTL + E of its last committed renew
//! (E = 2.5 s with the default timing; elections use no lock-delay; see
//! docs/operations.md). With `--ttl 5s` that is at most 7.5 s.
//!
//! A leader whose session is lost (it could not renew in time) stops
//! running jobs before its `valid_until`, and campaigns again on a new
//! session. Ctrl-C resigns, so the next instance takes over at once.

use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

use clap::Parser;
use tokio::signal::unix::{signal, Signal, SignalKind};
use warden_client::{Client, ClientOptions, Election, Leadership, TlsOptions};

/// One scheduler instance.
#[derive(Debug, Parser)]
struct Args {
    /// Cluster members (any of them).
    #[arg(long, env = "WARDEN_ENDPOINTS", value_delimiter = ',', required = true)]
    endpoints: Vec<String>,
    /// This instance's name: its value in the election, and the stamp on its jobs.
    #[arg(long)]
    name: String,
    /// The election campaigned in.
    #[arg(long, default_value = "scheduler")]
    election: String,
    /// TTL of the session (1s ..= 1h).
    #[arg(long, value_parser = humantime::parse_duration, default_value = "5s")]
    ttl: Duration,
    /// How often the leader runs a job.
    #[arg(long, value_parser = humantime::parse_duration, default_value = "200ms")]
    every: Duration,
    /// Append job lines to this file instead of stdout.
    #[arg(long)]
    out: Option<PathBuf>,
    /// Certs dir with ca.crt and client.USER.crt/.key: mutual TLS as
    /// --user. Without it the client speaks plaintext, which only a cluster
    /// started with --insecure accepts.
    #[arg(long, env = "WARDEN_CERTS_DIR")]
    certs_dir: Option<PathBuf>,
    /// The principal whose certificate is presented.
    #[arg(long, env = "WARDEN_USER", default_value = "root")]
    user: String,
}

/// Where job lines go: appended whole, one write per line.
enum Sink {
    Stdout,
    File(std::fs::File),
}

impl Sink {
    fn open(path: Option<&PathBuf>) -> std::io::Result<Sink> {
        Ok(match path {
            None => Sink::Stdout,
            Some(p) => Sink::File(
                std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(p)?,
            ),
        })
    }

    fn line(&mut self, line: &str) -> std::io::Result<()> {
        let bytes = format!("{line}\n");
        match self {
            Sink::Stdout => {
                let mut out = std::io::stdout().lock();
                out.write_all(bytes.as_bytes())?;
                out.flush()
            }
            Sink::File(f) => f.write_all(bytes.as_bytes()),
        }
    }
}

/// How a term of office ended.
enum Ended {
    /// The session was lost: campaign again on a new one.
    Lost,
    /// Ctrl-C: resigned; stop.
    Interrupted,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let mut sink = Sink::open(args.out.as_ref())?;
    // Installed once, so that no Ctrl-C is missed between two waits.
    let mut interrupt = signal(SignalKind::interrupt())?;
    let options = ClientOptions {
        tls: args
            .certs_dir
            .as_ref()
            .map(|dir| TlsOptions::new(dir, &args.user)),
        ..ClientOptions::default()
    };
    let client = Client::connect(args.endpoints.clone(), options).await?;
    let mut retry = tokio::time::interval(Duration::from_secs(1));
    loop {
        let session = match client.session(args.ttl).await {
            Ok(s) => s,
            Err(e) => {
                eprintln!("{}: cannot open a session ({e}); retrying", args.name);
                retry.tick().await;
                continue;
            }
        };
        let election = Election::new(session.clone(), args.election.clone());
        eprintln!(
            "{}: campaigning in {:?} (lease {})",
            args.name,
            args.election,
            session.lease_id()
        );
        let leadership = tokio::select! {
            r = election.campaign(args.name.clone()) => match r {
                Ok(l) => l,
                Err(e) => {
                    eprintln!("{}: campaign failed ({e}); starting over", args.name);
                    drop(session);
                    retry.tick().await;
                    continue;
                }
            },
            _ = interrupt.recv() => {
                // Revoking the lease withdraws the candidacy.
                let _ = session.close().await;
                return Ok(());
            }
        };
        eprintln!(
            "{}: elected, fencing token {}",
            args.name,
            leadership.fencing_token()
        );
        match lead(&leadership, &args, &mut sink, &mut interrupt).await? {
            Ended::Interrupted => {
                let token = leadership.fencing_token();
                let _ = leadership.resign().await;
                let _ = session.close().await;
                eprintln!("{}: resigned (fencing token {token})", args.name);
                return Ok(());
            }
            Ended::Lost => {
                eprintln!("{}: session lost; campaigning again", args.name);
            }
        }
    }
}

/// Runs a job every `--every` while the leadership holds.
async fn lead(
    leadership: &Leadership,
    args: &Args,
    sink: &mut Sink,
    interrupt: &mut Signal,
) -> anyhow::Result<Ended> {
    let mut tick = tokio::time::interval(args.every);
    let mut job = 0u64;
    loop {
        tokio::select! {
            lost = leadership.lost() => {
                eprintln!("{}: {lost}", args.name);
                return Ok(Ended::Lost);
            }
            _ = interrupt.recv() => return Ok(Ended::Interrupted),
            _ = tick.tick() => {}
        }
        // Right before the job: is the term certainly still ours (S5)?
        if let Err(lost) = leadership.check() {
            eprintln!("{}: {lost}", args.name);
            return Ok(Ended::Lost);
        }
        job += 1;
        let line = serde_json::json!({
            "job": job,
            "scheduler": args.name,
            "fencing_token": leadership.fencing_token(),
        });
        sink.line(&line.to_string())?;
    }
}
