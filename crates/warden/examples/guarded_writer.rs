//! The holder's side of docs/semantics.md S5, as a program: take a lock on a session,
//! then, before each protected write, `check()` the session — synchronously,
//! so that a process that was paused (SIGSTOP, a long GC, a suspended VM)
//! notices the lost lease before it writes, even if no timer has run yet.
//!
//! ```sh
//! cargo run -p warden --example guarded_writer -- \
//!     --endpoints 127.0.0.1:7001,127.0.0.1:7002,127.0.0.1:7003 \
//!     --certs-dir ./warden-dev/certs --resource orders --ttl 2s --out /tmp/writes.log
//! ```
//!
//! Each write appends `ok <fencing token> <n>` to `--out`; once `check()`
//! fails it appends `lost <reason>` and exits 3. The real-process test
//! `frozen_client_fails_check_before_its_next_write` stops it with SIGSTOP
//! past its TTL and checks that no `ok` line follows the resume.

use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

use clap::Parser;
use warden_client::{Client, ClientOptions, TlsOptions};

#[derive(Parser)]
struct Args {
    /// Comma-separated host:port of the cluster's nodes.
    #[arg(long, value_delimiter = ',')]
    endpoints: Vec<String>,
    /// The resource to lock.
    #[arg(long)]
    resource: String,
    /// Session TTL.
    #[arg(long, value_parser = humantime::parse_duration, default_value = "2s")]
    ttl: Duration,
    /// Pause between writes.
    #[arg(long, value_parser = humantime::parse_duration, default_value = "20ms")]
    every: Duration,
    /// The file the writes are appended to.
    #[arg(long)]
    out: PathBuf,
    /// Certs dir with ca.crt and client.USER.crt/.key: mutual TLS as
    /// --user. Without it the client speaks plaintext, which only a cluster
    /// started with --insecure accepts.
    #[arg(long, env = "WARDEN_CERTS_DIR")]
    certs_dir: Option<PathBuf>,
    /// The principal whose certificate is presented.
    #[arg(long, env = "WARDEN_USER", default_value = "root")]
    user: String,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let options = ClientOptions {
        tls: args.certs_dir.map(|dir| TlsOptions::new(dir, args.user)),
        ..ClientOptions::default()
    };
    let client = Client::connect(args.endpoints, options).await?;
    let session = client.session(args.ttl).await?;
    let guard = session.lock(&args.resource).await?;
    let mut out = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&args.out)?;
    for n in 0u64.. {
        // The check comes right before the write it protects.
        if let Err(lost) = guard.check() {
            writeln!(out, "lost {lost}")?;
            std::process::exit(3);
        }
        writeln!(out, "ok {} {n}", guard.fencing_token())?;
        tokio::time::sleep(args.every).await;
    }
    Ok(())
}
