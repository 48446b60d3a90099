//! `warden`: the one binary. `server` runs a node, `dev` a local cluster, and
//! the other subcommands are a CLI client.
//!
//! - `cli.rs`: clap types and parsers.
//! - `server_config/`: flags over config file over defaults, with limits.
//! - `dev.rs`: the local cluster of child processes.
//! - `dev_certs.rs`: the certificates `dev` and `demo` mint under their dir.
//! - `commands.rs`: the client subcommands.
//! - `exec_cmd.rs`: `warden exec`, a command run under a lock.
//! - `elect_cmd.rs`: `warden elect`, leader election.
//! - `fenced_store.rs`: `warden fenced-store`, the reference fenced resource.
//! - `demo.rs`: `warden demo split-brain` and its hidden `demo-holder` client.
//! - `cert_cmd.rs`: `warden cert`, minting and listing certificates.
//! - `top_cmd.rs`: `warden top`, the most contended locks (`--watch`).
//! - `role_cmd.rs`: identities and permissions: `warden role`, `warden user`,
//!   `warden cluster limits`, `warden audit --auth`.
//! - `version_cmd.rs`: `warden version` (binary and format versions) and
//!   `warden completion SHELL`.
//! - `profile.rs`: the client profile `warden dev` writes and client
//!   commands read when no flag or variable names the cluster.
//! - `output/`: what they print (text or one JSON value) and exit codes.
//! - `server_exit.rs`: `warden server`'s exit codes, one per class of stop.

mod admin_cmd;
mod cert_cmd;
mod cli;
mod cluster_cmd;
mod commands;
mod demo;
mod deny_cmd;
mod dev;
mod dev_certs;
mod elect_cmd;
mod exec_cmd;
mod fenced_store;
mod lease_cmd;
mod output;
mod profile;
mod role_cmd;
mod server_config;
mod server_exit;
mod snapshot_cmd;
mod top_cmd;
mod version_cmd;
mod watch_cmd;

use std::future::Future;
use std::process::ExitCode;

use anyhow::Context;
use clap::error::ErrorKind;
use clap::Parser;
use tokio::signal::unix::{signal, SignalKind};
use tracing::info;
use tracing_subscriber::EnvFilter;

use crate::cli::{Cli, ClusterCommand, Command, DemoCommand, LogFormat, ServerArgs};
use crate::output::{Report, EXIT_ERROR};

/// mimalloc instead of glibc's malloc: allocation and free were about 12 %
/// of the servers' CPU samples with glibc (docs/performance.md, "Allocator").
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// The server's default log levels: openraft logs its whole state at info,
/// so only its warnings are kept, and not its line per failed heartbeat,
/// replication or vote call (those failures are logged once per streak and
/// then summarised by `warden_server::raft::network::failures`). The
/// modules muted to `error` warn only of failed or stale peer calls, except
/// two in `replication`, kept at `warn`: a snapshot the state machine could
/// not give (`snapshot_transmitter`) and a log store breaking openraft's
/// contract (`stream_state`), both ours to hear about.
const SERVER_LOG_LEVELS: &str =
    "info,openraft=warn,openraft::core::heartbeat=error,openraft::replication=error,\
     openraft::replication::snapshot_transmitter=warn,openraft::replication::stream_state=warn,\
     openraft::engine::handler::replication_handler=error,openraft::core::raft_core=error";

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let code = clap_error(e);
            // A usage error of `warden server` is a refused start.
            if code != 0 && server_exit::is_server_command(std::env::args_os().skip(1)) {
                return ExitCode::from(server_exit::EXIT_REFUSED_START);
            }
            return ExitCode::from(code);
        }
    };
    if let Command::Server(args) = cli.command {
        return ExitCode::from(server_main(*args));
    }
    init_tracing("warn", LogFormat::Text);
    let Some(runtime) = runtime() else {
        return ExitCode::from(EXIT_ERROR);
    };
    ExitCode::from(runtime.block_on(run(cli.command)))
}

fn runtime() -> Option<tokio::runtime::Runtime> {
    match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => Some(runtime),
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            None
        }
    }
}

/// `warden server`: the config is read and checked before logging starts
/// (it says the log format); the exit code says why the node stopped
/// (`server_exit`).
fn server_main(args: ServerArgs) -> u8 {
    let refused = |e: String| {
        eprintln!("error: {}", output::one_line(&e));
        server_exit::EXIT_REFUSED_START
    };
    let file = match &args.config {
        Some(path) => match server_config::read_config_file(path) {
            Ok(file) => file,
            Err(e) => return refused(e),
        },
        None => server_config::FileConfig::default(),
    };
    let format = server_config::log_format(&args, &file);
    let config = match server_config::resolve(&args, file) {
        Ok(config) => config,
        Err(e) => return refused(e),
    };
    init_tracing(SERVER_LOG_LEVELS, format);
    let Some(runtime) = runtime() else {
        return server_exit::EXIT_FAILURE;
    };
    let result = runtime.block_on(server(config, args.exit_with_parent));
    match result {
        Ok(()) => server_exit::EXIT_CLEAN,
        Err(e) => {
            let code = server_exit::code(&e);
            let message = output::one_line(&e.to_string());
            match format {
                LogFormat::Text => eprintln!("error: {message}"),
                // One JSON line, as every other line on stderr.
                LogFormat::Json => tracing::error!(exit_code = code, "{message}"),
            }
            code
        }
    }
}

/// Help and version go to stdout with exit 0; a usage error is one line on
/// stderr with exit 1 (exit 2 means "not granted").
fn clap_error(e: clap::Error) -> u8 {
    match e.kind() {
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => {
            let _ = e.print();
            0
        }
        ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            let _ = e.print();
            EXIT_ERROR
        }
        _ => {
            let rendered = e.render().to_string();
            let reason = rendered
                .split("\n\nUsage:")
                .next()
                .and_then(|r| r.split("\n\nFor more information").next())
                .unwrap_or(&rendered);
            let reason = output::one_line(reason);
            let reason = reason.strip_prefix("error: ").unwrap_or(&reason);
            eprintln!("error: {reason} (see --help)");
            EXIT_ERROR
        }
    }
}

/// Logs go to stderr, as text or one JSON object a line (tracing-subscriber's
/// `json` formatter, with the current span's fields: a request's method,
/// principal, resource and ids); `RUST_LOG` overrides the default levels.
fn init_tracing(default_levels: &str, format: LogFormat) {
    let filter =
        EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(default_levels));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    match format {
        LogFormat::Text => builder
            .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
            .init(),
        LogFormat::Json => builder
            .json()
            .with_current_span(true)
            .with_span_list(false)
            .init(),
    }
}

async fn run(command: Command) -> u8 {
    match command {
        // Handled before the runtime starts (`server_main`).
        Command::Server(_) => EXIT_ERROR,
        Command::Dev(args) => match dev::run(args).await {
            Ok(code) => code,
            Err(e) => fail(&e),
        },
        Command::Acquire(args) => print(commands::acquire(args).await),
        Command::Renew(args) => print(commands::renew(args).await),
        Command::Release(args) if args.force.is_some() => {
            print(admin_cmd::force_release(args).await)
        }
        Command::Release(args) => print(commands::release(args).await),
        Command::List(args) => print(admin_cmd::list(args).await),
        Command::Top(args) => print(top_cmd::run(args).await),
        Command::Audit(args) if args.auth => print(role_cmd::auth_audit(&args.client).await),
        Command::Audit(args) => print(admin_cmd::audit(args).await),
        Command::Role(args) => print(role_cmd::role(args).await),
        Command::User(args) => print(role_cmd::user(args).await),
        Command::Status(args) => print(commands::status(args).await),
        Command::Cluster(args) => match args.command {
            ClusterCommand::Status(args) => print(cluster_cmd::status(args).await),
            ClusterCommand::AddNode(args) => print(cluster_cmd::add_node(args).await),
            ClusterCommand::RemoveNode(args) => print(cluster_cmd::remove_node(args).await),
            ClusterCommand::ReplaceNode(args) => print(cluster_cmd::replace_node(args).await),
            ClusterCommand::Limits(args) => print(role_cmd::limits(args).await),
        },
        Command::Validate(args) => print(commands::validate(args).await),
        Command::Snapshot(args) => match args.command {
            snapshot_cmd::SnapshotCommand::Save(args) => print(snapshot_cmd::save(args).await),
            snapshot_cmd::SnapshotCommand::Restore(args) => print(snapshot_cmd::restore(args)),
            snapshot_cmd::SnapshotCommand::Inspect(args) => print(snapshot_cmd::inspect(&args)),
        },
        Command::Lease(args) => print(lease_cmd::run(args).await),
        Command::Cert(args) => print(cert_cmd::run(args).await),
        Command::Version(args) => print(version_cmd::version(&args)),
        Command::Completion(args) => print(version_cmd::completion(&args)),
        Command::Watch(args) => print(watch_cmd::run(args).await),
        Command::Exec(args) => exec_cmd::run(args).await,
        Command::Elect(args) => elect_cmd::run(args).await,
        Command::FencedStore(args) => match fenced_store::run(args).await {
            Ok(()) => 0,
            Err(e) => fail(&e),
        },
        Command::Demo(args) => match args.command {
            DemoCommand::SplitBrain(args) => match demo::split_brain(args).await {
                Ok(code) => code,
                Err(e) => fail(&e),
            },
        },
        Command::DemoHolder(args) => match demo::holder(args).await {
            Ok(code) => code,
            Err(e) => fail(&e),
        },
    }
}

fn fail(e: &anyhow::Error) -> u8 {
    // Multi-line context (e.g. a node's log tail from `dev`) keeps its lines.
    eprintln!("error: {e:#}");
    EXIT_ERROR
}

/// Prints a one-shot command's report. A closed stdout does not change the
/// exit code: the command's result stands, only its printing was cut short.
fn print(report: Report) -> u8 {
    let mut exit_code = report.exit_code;
    if let Some(stdout) = &report.stdout {
        if let Err(e) = output::line(stdout) {
            exit_code = output::stdout_failed(&e, report.exit_code);
        }
    }
    if let Some(stderr) = &report.stderr {
        eprintln!("{stderr}");
    }
    exit_code
}

async fn server(
    config: warden_server::ServerConfig,
    exit_with_parent: bool,
) -> Result<(), warden_server::ServerError> {
    info!(
        node_id = config.node_id,
        listen = %config.listen,
        data_dir = %config.data_dir.display(),
        "starting warden server"
    );
    let signals =
        shutdown_signal().map_err(|e| warden_server::ServerError::Other(format!("{e:#}")))?;
    let shutdown = async move {
        if exit_with_parent {
            tokio::select! {
                _ = signals => {}
                _ = parent_exited() => info!("parent process exited: shutting down"),
            }
        } else {
            signals.await
        }
    };
    warden_server::run(config, shutdown).await
}

/// Resolves when this process's parent has exited (it is re-parented).
async fn parent_exited() {
    let parent = std::os::unix::process::parent_id();
    let mut tick = tokio::time::interval(std::time::Duration::from_millis(500));
    loop {
        tick.tick().await;
        if std::os::unix::process::parent_id() != parent {
            return;
        }
    }
}

/// Resolves on the first SIGTERM or SIGINT. The handlers are installed here,
/// before the node starts, so an early signal is not lost.
fn shutdown_signal() -> anyhow::Result<impl Future<Output = ()> + Send + 'static> {
    let mut sigterm = signal(SignalKind::terminate()).context("cannot handle SIGTERM")?;
    let mut sigint = signal(SignalKind::interrupt()).context("cannot handle SIGINT")?;
    Ok(async move {
        tokio::select! {
            _ = sigterm.recv() => info!("SIGTERM: shutting down"),
            _ = sigint.recv() => info!("SIGINT: shutting down"),
        }
    })
}

#[cfg(test)]
mod tests {
    // Elections live in their own namespace (docs/semantics.md "Words"): the client
    // (which must not depend on the server's crates) and the lock table agree
    // on the election key prefix, and no lock name can carry it.
    #[test]
    fn client_and_core_agree_on_the_election_prefix() {
        assert_eq!(
            warden_client::ELECTION_PREFIX,
            warden_core::limits::ELECTION_PREFIX
        );
        let key = warden_client::election_key("scheduler");
        assert!(warden_core::validate::resource(&key).is_ok());
        assert!(warden_core::validate::resource(&key["\u{1}".len()..]).is_ok());
        assert_ne!(key, "election/scheduler");
    }

    // Node ids are one range everywhere: a node certificate can name every
    // id a server accepts for --id, and no other.
    #[test]
    fn tls_and_core_agree_on_the_largest_node_id() {
        assert_eq!(warden_tls::MAX_NODE_ID, warden_core::limits::MAX_ID);
    }

    // S7 under concurrency: the client never hands out more request ids
    // past its watermark than the server keeps outcomes for, so no request
    // that never ran is refused as expired (warden-client `requests.rs`).
    #[test]
    fn client_window_fits_the_servers_outcome_cap() {
        assert_eq!(
            warden_client::MAX_REQUESTS_AHEAD,
            warden_core::limits::MAX_OUTCOMES_PER_CLIENT as u64
        );
    }
}
