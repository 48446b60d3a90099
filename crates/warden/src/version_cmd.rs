//! `warden version`: the binary's version and the formats it reads and
//! writes, so an operator can tell which binaries can run side by side
//! (docs/operations.md "Versions and formats"); `warden completion SHELL`:
//! a completion script generated from the clap definition (`clap_complete`).

use clap::{Args, CommandFactory};
use serde_json::json;

use crate::cli::{Cli, OutputFormat};
use crate::output::{Report, EXIT_OK};

/// `warden version`.
#[derive(Debug, Args)]
pub struct VersionArgs {
    /// Output format.
    #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
    pub output: OutputFormat,
}

/// `warden completion`.
#[derive(Debug, Args)]
pub struct CompletionArgs {
    /// The shell.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

/// The versions this binary speaks, each with what it means.
struct Versions {
    binary: &'static str,
    /// The newest Raft log format it reads (and writes once every member
    /// reads it): `warden_server::raft::log_format`.
    log_format: u32,
    /// The lock table's snapshot format it writes (it reads every older one).
    snapshot_format: u8,
    /// The `warden snapshot save` file format.
    backup_file_format: u16,
    /// The gRPC API's package.
    client_api: &'static str,
    /// The peer service's package.
    peer_api: &'static str,
}

const VERSIONS: Versions = Versions {
    binary: env!("CARGO_PKG_VERSION"),
    log_format: warden_server::raft::log_format::LOG_FORMAT,
    snapshot_format: warden_core::snapshot::SNAPSHOT_VERSION,
    backup_file_format: warden_server::raft::backup::FILE_VERSION,
    client_api: "warden.v1",
    peer_api: "warden.peer.v1",
};

/// `warden version [--output json]`.
pub fn version(args: &VersionArgs) -> Report {
    let v = &VERSIONS;
    let stdout = match args.output {
        OutputFormat::Json => json!({
            "version": v.binary,
            "log_format": v.log_format,
            "snapshot_format": v.snapshot_format,
            "backup_file_format": v.backup_file_format,
            "client_api": v.client_api,
            "peer_api": v.peer_api,
        })
        .to_string(),
        OutputFormat::Text => format!(
            "warden {}\n\
             log format {} (reads 1..={}; writes a newer format only once every member reports it)\n\
             snapshot format {} (reads 1..={})\n\
             backup file format {} (`warden snapshot save` / `restore`)\n\
             gRPC API {}, peer service {}",
            v.binary,
            v.log_format,
            v.log_format,
            v.snapshot_format,
            v.snapshot_format,
            v.backup_file_format,
            v.client_api,
            v.peer_api
        ),
    };
    Report {
        stdout: Some(stdout),
        stderr: None,
        exit_code: EXIT_OK,
    }
}

/// `warden completion SHELL`: the script on stdout.
pub fn completion(args: &CompletionArgs) -> Report {
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut Cli::command(), "warden", &mut script);
    let text = String::from_utf8_lossy(&script);
    Report {
        stdout: Some(text.trim_end().to_string()),
        stderr: None,
        exit_code: EXIT_OK,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Operators tell which binaries can run side by side from numbered
    // formats (docs/operations.md "Versions and formats"): the JSON names
    // each, with this build's values.
    #[test]
    fn version_names_every_format() {
        let report = version(&VersionArgs {
            output: OutputFormat::Json,
        });
        let v: serde_json::Value = serde_json::from_str(report.stdout.as_deref().unwrap()).unwrap();
        assert_eq!(v["version"], env!("CARGO_PKG_VERSION"));
        assert_eq!(v["log_format"], warden_server::raft::log_format::LOG_FORMAT);
        assert_eq!(
            v["snapshot_format"],
            warden_core::snapshot::SNAPSHOT_VERSION
        );
        assert_eq!(v["backup_file_format"], 1);
        assert_eq!(v["client_api"], "warden.v1");
        let text = version(&VersionArgs {
            output: OutputFormat::Text,
        })
        .stdout
        .unwrap();
        assert!(
            text.starts_with(&format!(
                "warden {}\nlog format ",
                env!("CARGO_PKG_VERSION")
            )),
            "{text}"
        );
    }

    // etcdctl and consul users expect completions: each shell gets a
    // script that names the subcommands.
    #[test]
    fn completion_scripts_name_the_subcommands() {
        for shell in [
            clap_complete::Shell::Bash,
            clap_complete::Shell::Zsh,
            clap_complete::Shell::Fish,
        ] {
            let script = completion(&CompletionArgs { shell }).stdout.unwrap();
            for word in ["acquire", "release", "cluster", "completion"] {
                assert!(script.contains(word), "{shell:?}: {word}");
            }
        }
    }
}
