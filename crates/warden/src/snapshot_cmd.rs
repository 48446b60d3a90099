//! `warden snapshot save FILE` (the client's
//! [`Admin::save_snapshot`](warden_client::Admin::save_snapshot), on the
//! leader) and `warden snapshot restore FILE ...`. The file format and the
//! restore itself live in
//! `warden_server::raft::backup`; docs/operations.md "Backup and restore" says how
//! to use them.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::{Args, Subcommand};
use serde_json::json;
use warden_core::restore::{RestoreOptions, DEFAULT_TOKEN_GAP};
use warden_core::table::LockTable;
use warden_server::raft::backup::{restore_data_dir, RestoreTarget, SnapshotFile};

use crate::admin_cmd::admin;
use crate::cli::{
    parse_duration, parse_id, parse_peer_addrs, parse_peers, ClientArgs, OutputFormat, Peers,
};
use crate::commands::describe_error;
use crate::output::{self, Report};

/// `warden snapshot`.
#[derive(Debug, Args)]
pub struct SnapshotArgs {
    /// What to do.
    #[command(subcommand)]
    pub command: SnapshotCommand,
}

/// `warden snapshot ...`.
#[derive(Debug, Subcommand)]
pub enum SnapshotCommand {
    /// Save a consistent snapshot of the cluster's lock table to FILE.
    Save(SaveArgs),
    /// Build the data dir of one member of a NEW cluster from FILE (offline).
    Restore(RestoreArgs),
    /// Check FILE and print what it holds (offline): cluster id, log index,
    /// counts, highest held token, checksum.
    Inspect(InspectArgs),
}

/// `warden snapshot inspect`.
#[derive(Debug, Args)]
pub struct InspectArgs {
    /// The snapshot file (`warden snapshot save` wrote it).
    pub file: PathBuf,
    /// Output format.
    #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
    pub output: OutputFormat,
}

/// `warden snapshot save`.
#[derive(Debug, Args)]
pub struct SaveArgs {
    /// Where to write it (replaced atomically).
    pub file: PathBuf,
    #[command(flatten)]
    pub client: ClientArgs,
}

/// `warden snapshot restore`.
#[derive(Debug, Args)]
pub struct RestoreArgs {
    /// A file written by `warden snapshot save`.
    pub file: PathBuf,
    /// The member's data dir: must be empty (or not exist).
    #[arg(long, value_name = "DIR")]
    pub data_dir: PathBuf,
    /// This member's id in the new cluster.
    #[arg(long, value_name = "N", value_parser = parse_id)]
    pub id: u64,
    /// Every member of the new cluster, this one included, at its client
    /// address (same on every member).
    #[arg(long, value_name = "ID=HOST:PORT,...", value_parser = parse_peers)]
    pub peers: Peers,
    /// The peer address of each member that will run with --peer-listen
    /// (same on every member; as `warden server --peer-addrs`).
    #[arg(long, value_name = "ID=HOST:PORT,...", value_parser = parse_peer_addrs)]
    pub peer_addrs: Option<Peers>,
    /// The new cluster's id, as printed by the first member's restore
    /// [default: mint a new one].
    #[arg(long, value_name = "ID")]
    pub cluster_id: Option<String>,
    /// Tokens the old cluster may have issued after the backup
    /// [default: 1000000]; the new counter starts above the backup's plus this.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_TOKEN_GAP)]
    pub token_gap: u64,
    /// Every new token is above N (e.g. the highest token any fence has seen).
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub token_floor: u64,
    /// Every held resource's lock-delay is at least this (0s..=1m) on top of
    /// the default (its lease's TTL, at most 1m).
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, default_value = "0s")]
    pub lock_delay: Duration,
    /// `json`: stdout carries exactly one JSON value.
    #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
    pub output: OutputFormat,
}

fn ok(stdout: String) -> Report {
    Report {
        stdout: Some(stdout),
        stderr: None,
        exit_code: output::EXIT_OK,
    }
}

/// Writes `bytes` to `path` via a temp file in the same dir, fsync, rename.
fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let tmp = dir.join(format!(
        ".{}.tmp",
        path.file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "snapshot".into())
    ));
    {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
    }
    std::fs::rename(&tmp, path)
}

/// `warden snapshot save FILE`.
pub async fn save(args: SaveArgs) -> Report {
    let admin = match admin(&args.client).await {
        Ok(a) => a,
        Err(report) => return report,
    };
    let r = match admin.save_snapshot().await {
        Ok(r) => r,
        Err(e) => return output::error(&describe_error(&e)),
    };
    let table = match LockTable::from_snapshot(&r.data) {
        Ok(t) => t,
        Err(e) => return output::error(&format!("the server sent a bad snapshot: {e}")),
    };
    let file = SnapshotFile {
        cluster_id: r.cluster_id,
        applied_index: r.applied_index,
        term: r.term,
        leader_node_id: r.leader_node_id,
        saved_by_node_id: r.node_id,
        table: r.data,
    };
    let bytes = file.encode();
    if let Err(e) = write_atomically(&args.file, &bytes) {
        return output::error(&format!("{}: cannot write: {e}", args.file.display()));
    }
    let max_token = max_held_token(&table);
    let v = json!({
        "file": args.file.display().to_string(),
        "cluster_id": file.cluster_id,
        "applied_index": file.applied_index,
        "bytes": bytes.len(),
        "leases": table.lease_count(),
        "held": table.resources_held(),
        "max_token": max_token,
        "next_token": table.next_token(),
    });
    match args.client.output {
        OutputFormat::Json => ok(v.to_string()),
        OutputFormat::Text => ok(format!(
            "saved {} ({} bytes): cluster {} at log index {}, {} leases, {} held resources, highest held token {}, next token {}",
            args.file.display(),
            bytes.len(),
            file.cluster_id,
            file.applied_index,
            table.lease_count(),
            table.resources_held(),
            max_token,
            table.next_token()
        )),
    }
}

/// Reads and checks a snapshot file ([`SnapshotFile::decode`]): its bytes
/// and contents, or the error report naming the file.
fn read_snapshot_file(path: &Path) -> Result<(Vec<u8>, SnapshotFile), Report> {
    let bytes = std::fs::read(path)
        .map_err(|e| output::error(&format!("{}: cannot read: {e}", path.display())))?;
    let file = SnapshotFile::decode(&bytes)
        .map_err(|e| output::error(&format!("{}: {e}", path.display())))?;
    Ok((bytes, file))
}

/// The highest fencing token a holder in `table` holds; 0 for none.
fn max_held_token(table: &LockTable) -> u64 {
    table
        .resources_with_prefix("")
        .filter_map(|(_, s)| s.holder.as_ref().map(|g| g.fencing_token))
        .max()
        .unwrap_or(0)
}

/// `warden snapshot inspect FILE`: decodes and checks it (magic, version,
/// SHA-256, the lock table's invariants) and prints its summary.
pub fn inspect(args: &InspectArgs) -> Report {
    let (bytes, file) = match read_snapshot_file(&args.file) {
        Ok(read) => read,
        Err(report) => return report,
    };
    let table = match LockTable::from_snapshot(&file.table) {
        Ok(t) => t,
        Err(e) => return output::error(&format!("{}: lock table: {e}", args.file.display())),
    };
    // decode checked the trailing SHA-256; print it as the file's identity.
    let checksum: String = bytes[bytes.len().saturating_sub(32)..]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let max_token = max_held_token(&table);
    match args.output {
        OutputFormat::Json => ok(
            json!({
                "file": args.file.display().to_string(),
                "cluster_id": file.cluster_id,
                "applied_index": file.applied_index,
                "term": file.term,
                "saved_by_node_id": file.saved_by_node_id,
                "bytes": bytes.len(),
                "leases": table.lease_count(),
                "held": table.resources_held(),
                "max_token": max_token,
                "next_token": table.next_token(),
                "sha256": checksum,
            })
            .to_string(),
        ),
        OutputFormat::Text => ok(format!(
            "{} ({} bytes, sha256 {checksum}): cluster {} at log index {} (term {}, saved by node {}), {} leases, {} held resources, highest held token {}, next token {}",
            args.file.display(),
            bytes.len(),
            file.cluster_id,
            file.applied_index,
            file.term,
            file.saved_by_node_id,
            table.lease_count(),
            table.resources_held(),
            max_token,
            table.next_token()
        )),
    }
}

/// `warden snapshot restore FILE --data-dir DIR --id N --peers ...`.
pub fn restore(args: RestoreArgs) -> Report {
    let lock_delay_ms = u64::try_from(args.lock_delay.as_millis()).unwrap_or(u64::MAX);
    if args.token_floor >= warden_core::limits::MAX_ID {
        return output::error(&format!(
            "--token-floor: {} is out of range; allowed 0..={}",
            args.token_floor,
            warden_core::limits::MAX_ID - 1
        ));
    }
    let (_, file) = match read_snapshot_file(&args.file) {
        Ok(read) => read,
        Err(report) => return report,
    };
    let target = RestoreTarget {
        data_dir: args.data_dir.clone(),
        node_id: args.id,
        peers: args.peers,
        peer_addrs: args.peer_addrs.unwrap_or_default(),
        cluster_id: args.cluster_id,
        options: RestoreOptions {
            token_gap: args.token_gap,
            token_floor: args.token_floor,
            min_lock_delay_ms: lock_delay_ms,
        },
    };
    let r = match restore_data_dir(&file, &target) {
        Ok(r) => r,
        Err(e) => return output::error(&e),
    };
    let v = json!({
        "data_dir": args.data_dir.display().to_string(),
        "node_id": args.id,
        "cluster_id": r.cluster_id,
        "old_cluster_id": r.old_cluster_id,
        "applied_index": r.applied_index,
        "max_token_in_snapshot": r.summary.max_token_in_snapshot,
        "next_token": r.summary.next_token,
        "leases": r.summary.leases,
        "held": r.summary.held,
    });
    match args.output {
        OutputFormat::Json => ok(v.to_string()),
        OutputFormat::Text => ok(format!(
            "restored node {} into {}: new cluster {} (from {} at log index {}); {} leases with full TTLs, {} held resources with lock-delay; first token {} (highest in the backup {})\n\
             restore the other members with --cluster-id {}",
            args.id,
            args.data_dir.display(),
            r.cluster_id,
            r.old_cluster_id,
            r.applied_index,
            r.summary.leases,
            r.summary.held,
            r.summary.next_token,
            r.summary.max_token_in_snapshot,
            r.cluster_id,
        )),
    }
}
