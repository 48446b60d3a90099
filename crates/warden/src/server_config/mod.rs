//! `warden server`: merges flags over the config file over the defaults into
//! a [`ServerConfig`], and checks every value against its documented limit.

use std::collections::BTreeMap;
use std::net::{SocketAddr, ToSocketAddrs};
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;
use warden_server::{ServerConfig, Timing};

use crate::cli::{
    insert_peer, parse_duration, parse_peer_id, parse_peers, InitialClusterState, LogFormat, Peers,
    ServerArgs, TimingPreset,
};

/// The config file: the same keys as the flags, in kebab-case.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct FileConfig {
    id: Option<u64>,
    listen: Option<String>,
    peer_listen: Option<String>,
    peers: Option<FilePeers>,
    peer_addrs: Option<FilePeers>,
    data_dir: Option<PathBuf>,
    initial_cluster_state: Option<InitialClusterState>,
    timing: Option<TimingPreset>,
    heartbeat: Option<String>,
    election_timeout_min: Option<String>,
    election_timeout_max: Option<String>,
    promotion_grace: Option<String>,
    snapshot_threshold: Option<u64>,
    leader_transfer_timeout: Option<String>,
    grpc_keepalive_interval: Option<String>,
    grpc_keepalive_timeout: Option<String>,
    certs_dir: Option<PathBuf>,
    /// Refused when present: `--insecure` is read from the command line only.
    insecure: Option<toml::Value>,
    /// Refused when present: `--allow-admin` is read from the command line only.
    allow_admin: Option<toml::Value>,
    max_request_bytes: Option<u64>,
    token_floor: Option<u64>,
    join: Option<bool>,
    admin_listen: Option<String>,
    metrics_groups: Option<Vec<String>>,
    log_format: Option<LogFormat>,
    handshake_timeout: Option<String>,
    max_handshakes: Option<usize>,
    max_handshakes_per_source: Option<usize>,
    max_connections: Option<usize>,
    max_connections_per_principal: Option<usize>,
    connection_idle_timeout: Option<String>,
    admin_header_read_timeout: Option<String>,
    refused_requests_per_sec: Option<u32>,
}

/// `peers = "1=a:7001,2=b:7001"` or a `[peers]` table `1 = "a:7001"`.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum FilePeers {
    Text(String),
    Table(BTreeMap<String, String>),
}

impl FilePeers {
    /// The members it lists (errors name `--peers`).
    fn parse(self) -> Result<Peers, String> {
        match self {
            FilePeers::Text(text) => parse_peers(&text),
            FilePeers::Table(table) => {
                let mut peers = Peers::new();
                for (id, addr) in table {
                    insert_peer(&mut peers, parse_peer_id(id.trim())?, &addr)?;
                }
                Ok(peers)
            }
        }
    }
}

/// `--peer-listen` and `--peer-addrs`: the peer port is a port of its own
/// (not --listen, not --admin-listen); every --peer-addrs id is a --peers
/// id, and every peer address is nobody's client address and no other
/// member's peer address; this node has a --peer-addrs entry exactly when
/// it has --peer-listen.
fn check_peer_split(
    node_id: u64,
    listen: SocketAddr,
    admin_listen: Option<SocketAddr>,
    peer_listen: Option<SocketAddr>,
    peers: &Peers,
    peer_addrs: &Peers,
) -> Result<(), String> {
    if let Some(p) = peer_listen {
        if p == listen {
            return Err(format!(
                "--peer-listen: {p} is the --listen address; the peer port must be a port of its own"
            ));
        }
        if admin_listen == Some(p) {
            return Err(format!(
                "--peer-listen: {p} is the --admin-listen address; the peer port must be a port of its own"
            ));
        }
    }
    for (id, addr) in peer_addrs {
        if !peers.contains_key(id) {
            let ids: Vec<String> = peers.keys().map(u64::to_string).collect();
            return Err(format!(
                "--peer-addrs: node {id} is not one of the --peers ids ({})",
                ids.join(", ")
            ));
        }
        if let Some((other, _)) = peers.iter().find(|(_, a)| *a == addr) {
            return Err(format!(
                "--peer-addrs: {addr} (node {id}) is the --peers address of node {other}; a peer port serves the peer service only"
            ));
        }
    }
    match (peer_listen, peer_addrs.contains_key(&node_id)) {
        (Some(_), false) => Err(format!(
            "--peer-addrs: --peer-listen is given, so this node ({node_id}) needs its entry in --peer-addrs (where its peers reach it)"
        )),
        (None, true) => Err(format!(
            "--peer-listen: --peer-addrs gives this node ({node_id}) a peer address; serve it with --peer-listen HOST:PORT"
        )),
        _ => Ok(()),
    }
}

/// Largest config file read: 1 MiB (a real one is a few hundred bytes;
/// a larger file is a mistake, e.g. a log or a binary given by accident).
pub const MAX_CONFIG_FILE_BYTES: u64 = 1024 * 1024;

/// The text of `path` if it is at most `limit` bytes; None when larger
/// (the config file and the client profile are read this way).
pub(crate) fn read_at_most(path: &Path, limit: u64) -> std::io::Result<Option<String>> {
    use std::io::Read as _;
    let file = std::fs::File::open(path)?;
    let mut text = String::new();
    // One byte more than the limit tells an oversized file from one at it.
    file.take(limit + 1).read_to_string(&mut text)?;
    Ok((text.len() as u64 <= limit).then_some(text))
}

/// Reads and parses a config file (at most [`MAX_CONFIG_FILE_BYTES`]).
pub fn read_config_file(path: &Path) -> Result<FileConfig, String> {
    let Some(text) = read_at_most(path, MAX_CONFIG_FILE_BYTES)
        .map_err(|e| format!("--config {}: cannot read: {e}", path.display()))?
    else {
        return Err(format!(
            "--config {}: larger than the limit of {MAX_CONFIG_FILE_BYTES} bytes (1 MiB); is it the config file?",
            path.display()
        ));
    };
    parse_config_file(&text).map_err(|e| format!("--config {}: {e}", path.display()))
}

/// Parses a config file's text.
pub fn parse_config_file(text: &str) -> Result<FileConfig, String> {
    toml::from_str(text).map_err(|e| one_line(&e.to_string()))
}

/// `text` with every run of whitespace (newlines too) as one space.
pub(crate) fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Inclusive bounds of each timing parameter, in milliseconds.
pub mod limits {
    /// Heartbeat: 1 ms ..= 10 s.
    pub const HEARTBEAT_MS: (u64, u64) = (1, 10_000);
    /// Election timeout (either bound): at most 60 s; the lower bound must be
    /// at least 2 × heartbeat and below the upper bound.
    pub const ELECTION_TIMEOUT_MAX_MS: u64 = 60_000;
    /// Promotion grace: 0 ..= 60 s.
    pub const PROMOTION_GRACE_MS: (u64, u64) = (0, 60_000);
    /// Snapshot threshold: 1 ..= 100,000,000 entries.
    pub const SNAPSHOT_THRESHOLD: (u64, u64) = (1, 100_000_000);
    /// Leader transfer timeout: 0 ..= 60 s.
    pub const LEADER_TRANSFER_TIMEOUT_MS: (u64, u64) = (0, 60_000);
    /// HTTP/2 keep-alive interval: 100 ms ..= 2 h.
    pub const GRPC_KEEPALIVE_INTERVAL_MS: (u64, u64) =
        warden_server::config::GRPC_KEEPALIVE_INTERVAL_MS_RANGE;
    /// HTTP/2 keep-alive timeout: 100 ms ..= 10 min.
    pub const GRPC_KEEPALIVE_TIMEOUT_MS: (u64, u64) =
        warden_server::config::GRPC_KEEPALIVE_TIMEOUT_MS_RANGE;
}

/// `--log-format`: the flag, else `log-format` in the file, else text.
pub fn log_format(args: &ServerArgs, file: &FileConfig) -> LogFormat {
    args.log_format.or(file.log_format).unwrap_or_default()
}

/// Builds the node's configuration: flags override the file, which overrides
/// the defaults. Every error names the flag (the file key has the same name
/// without `--`) and the limit.
pub fn resolve(args: &ServerArgs, file: FileConfig) -> Result<ServerConfig, String> {
    let certs_dir = transport(args, &file)?;
    let conn_limits = conn_limits(args, &file)?;
    let node_id = args
        .id
        .or(file.id)
        .ok_or("missing --id (or `id` in the config file)")?;
    if node_id == 0 || node_id > warden_core::limits::MAX_ID {
        return Err(format!(
            "--id: {node_id} is out of range; node ids are 1..={}",
            warden_core::limits::MAX_ID
        ));
    }
    let listen_text = args
        .listen
        .clone()
        .or(file.listen)
        .ok_or("missing --listen HOST:PORT (or `listen` in the config file)")?;
    let listen = resolve_listen(&listen_text)?;
    let peers = match (&args.peers, file.peers) {
        (Some(peers), _) => peers.clone(),
        (None, Some(file_peers)) => file_peers.parse()?,
        (None, None) => {
            return Err("missing --peers ID=HOST:PORT,... (or `peers` in the config file)".into())
        }
    };
    let peer_addrs = match (&args.peer_addrs, file.peer_addrs) {
        (Some(peer_addrs), _) => peer_addrs.clone(),
        (None, Some(file_peers)) => file_peers
            .parse()
            .map_err(|e| e.replacen("--peers", "--peer-addrs", 1))?,
        (None, None) => Peers::new(),
    };
    if peers.is_empty() {
        return Err("--peers: no members given; expected ID=HOST:PORT,...".into());
    }
    if !peers.contains_key(&node_id) {
        let ids: Vec<String> = peers.keys().map(u64::to_string).collect();
        return Err(format!(
            "--id {node_id} is not one of the --peers ids ({})",
            ids.join(", ")
        ));
    }
    let data_dir = args
        .data_dir
        .clone()
        .or(file.data_dir)
        .ok_or("missing --data-dir DIR (or `data-dir` in the config file)")?;
    let initial_cluster_state_new = args
        .initial_cluster_state
        .or(file.initial_cluster_state)
        .unwrap_or(InitialClusterState::Existing)
        == InitialClusterState::New;

    // The preset gives every default; an explicit flag (or file key)
    // overrides its own field only.
    let preset = args
        .timing
        .or(file.timing)
        .map_or(warden_server::TimingPreset::default(), Into::into);
    let defaults = preset.timing();
    let mut timing = defaults.clone();
    timing.heartbeat_ms = duration_ms(
        "heartbeat",
        args.heartbeat,
        file.heartbeat.as_deref(),
        defaults.heartbeat_ms,
    )?;
    timing.election_timeout_min_ms = duration_ms(
        "election-timeout-min",
        args.election_timeout_min,
        file.election_timeout_min.as_deref(),
        defaults.election_timeout_min_ms,
    )?;
    timing.election_timeout_max_ms = duration_ms(
        "election-timeout-max",
        args.election_timeout_max,
        file.election_timeout_max.as_deref(),
        defaults.election_timeout_max_ms,
    )?;
    timing.promotion_grace_ms = duration_ms(
        "promotion-grace",
        args.promotion_grace,
        file.promotion_grace.as_deref(),
        defaults.promotion_grace_ms,
    )?;
    timing.snapshot_threshold = args
        .snapshot_threshold
        .or(file.snapshot_threshold)
        .unwrap_or(defaults.snapshot_threshold);
    timing.leader_transfer_timeout_ms = duration_ms(
        "leader-transfer-timeout",
        args.leader_transfer_timeout,
        file.leader_transfer_timeout.as_deref(),
        defaults.leader_transfer_timeout_ms,
    )?;
    timing.grpc_keepalive_interval_ms = duration_ms(
        "grpc-keepalive-interval",
        args.grpc_keepalive_interval,
        file.grpc_keepalive_interval.as_deref(),
        defaults.grpc_keepalive_interval_ms,
    )?;
    timing.grpc_keepalive_timeout_ms = duration_ms(
        "grpc-keepalive-timeout",
        args.grpc_keepalive_timeout,
        file.grpc_keepalive_timeout.as_deref(),
        defaults.grpc_keepalive_timeout_ms,
    )?;
    validate_timing(&timing)?;
    let allow_admin = args.allow_admin;
    let max_request_bytes = args
        .max_request_bytes
        .or(file.max_request_bytes)
        .unwrap_or(warden_server::config::DEFAULT_MAX_REQUEST_BYTES as u64);
    let (lo, hi) = warden_server::config::MAX_REQUEST_BYTES_RANGE;
    if !(lo as u64..=hi as u64).contains(&max_request_bytes) {
        return Err(format!(
            "--max-request-bytes: {max_request_bytes} is out of range; allowed {lo}..={hi} bytes"
        ));
    }
    let token_floor = args.token_floor.or(file.token_floor).unwrap_or(0);
    if token_floor >= warden_core::limits::MAX_ID {
        return Err(format!(
            "--token-floor: {token_floor} is out of range; allowed 0..={}",
            warden_core::limits::MAX_ID - 1
        ));
    }

    let join = args.join || file.join.unwrap_or(false);
    let admin_listen = match args.admin_listen.clone().or(file.admin_listen) {
        Some(text) => {
            Some(resolve_listen(&text).map_err(|e| e.replacen("--listen", "--admin-listen", 1))?)
        }
        None => None,
    };
    if admin_listen.is_some_and(|a| a == listen) {
        return Err(format!(
            "--admin-listen: {listen} is the --listen address; give the HTTP endpoints their own port"
        ));
    }
    let peer_listen = match args.peer_listen.clone().or(file.peer_listen) {
        Some(text) => {
            Some(resolve_listen(&text).map_err(|e| e.replacen("--listen", "--peer-listen", 1))?)
        }
        None => None,
    };
    check_peer_split(
        node_id,
        listen,
        admin_listen,
        peer_listen,
        &peers,
        &peer_addrs,
    )?;

    let metrics_groups = args
        .metrics_groups
        .clone()
        .or(file.metrics_groups)
        .unwrap_or_default();
    warden_server::metrics::Groups::new(&metrics_groups)
        .map_err(|e| format!("--metrics-groups: {e}"))?;

    Ok(ServerConfig {
        node_id,
        listen,
        peer_listen,
        peers,
        peer_addrs,
        data_dir,
        initial_cluster_state_new,
        timing,
        allow_admin,
        max_request_bytes: max_request_bytes as usize,
        token_floor,
        join,
        admin_listen,
        certs_dir,
        metrics_groups,
        conn_limits,
    })
}

/// The connection and handshake limits: each flag, else its file key, else
/// its default; checked by `ConnLimits::validate` (the error names the
/// flag, the value and the bounds).
fn conn_limits(
    args: &ServerArgs,
    file: &FileConfig,
) -> Result<warden_server::config::ConnLimits, String> {
    let defaults = warden_server::config::ConnLimits::default();
    let duration = |name: &str, flag: Option<Duration>, file: Option<&str>, default: Duration| {
        duration_ms(name, flag, file, default.as_millis() as u64).map(Duration::from_millis)
    };
    let d = defaults.accept;
    let limits = warden_server::config::ConnLimits {
        accept: warden_tls::AcceptOptions {
            handshake_timeout: duration(
                "handshake-timeout",
                args.handshake_timeout,
                file.handshake_timeout.as_deref(),
                d.handshake_timeout,
            )?,
            max_handshakes: args
                .max_handshakes
                .or(file.max_handshakes)
                .unwrap_or(d.max_handshakes),
            max_handshakes_per_source: args
                .max_handshakes_per_source
                .or(file.max_handshakes_per_source)
                .unwrap_or(d.max_handshakes_per_source),
            max_connections: args
                .max_connections
                .or(file.max_connections)
                .unwrap_or(d.max_connections),
            max_connections_per_principal: args
                .max_connections_per_principal
                .or(file.max_connections_per_principal)
                .unwrap_or(d.max_connections_per_principal),
            idle_timeout: duration(
                "connection-idle-timeout",
                args.connection_idle_timeout,
                file.connection_idle_timeout.as_deref(),
                d.idle_timeout,
            )?,
        },
        admin_header_read_timeout: duration(
            "admin-header-read-timeout",
            args.admin_header_read_timeout,
            file.admin_header_read_timeout.as_deref(),
            defaults.admin_header_read_timeout,
        )?,
        refused_requests_per_sec: args
            .refused_requests_per_sec
            .or(file.refused_requests_per_sec)
            .unwrap_or(defaults.refused_requests_per_sec),
    };
    limits.validate().map_err(|e| format!("--{e}"))?;
    Ok(limits)
}

/// What the node serves: TLS with `--certs-dir` (flag, else `certs-dir` in
/// the file), or plaintext with `--insecure`; neither or both is refused
/// naming both flags. `--insecure` and `--allow-admin` are read from the
/// command line only (not the file, not the environment), so that turning
/// security off is always in plain sight on the command that starts the
/// node; `--allow-admin` needs `--insecure`.
fn transport(args: &ServerArgs, file: &FileConfig) -> Result<Option<PathBuf>, String> {
    if file.insecure.is_some() {
        return Err(
            "insecure: not read from the config file; pass --insecure on the command line".into(),
        );
    }
    if file.allow_admin.is_some() {
        return Err(
            "allow-admin: not read from the config file; pass --insecure --allow-admin \
             on the command line (with --certs-dir, the admin permission decides)"
                .into(),
        );
    }
    let certs_dir = args.certs_dir.clone().or_else(|| file.certs_dir.clone());
    match (&certs_dir, args.insecure) {
        (Some(dir), true) => {
            return Err(format!(
                "--insecure and --certs-dir {}: give one, not both (--certs-dir serves TLS, \
                 --insecure plaintext)",
                dir.display()
            ))
        }
        (None, false) => {
            return Err(
                "no --certs-dir: give --certs-dir DIR (ca.crt, node.crt, node.key; see \
                 `warden cert create-node`) to serve TLS, or --insecure to serve plaintext \
                 without authentication (a trusted test network only)"
                    .into(),
            )
        }
        _ => {}
    }
    if args.allow_admin && !args.insecure {
        return Err(
            "--allow-admin: only with --insecure; with --certs-dir the caller's admin \
             permission decides (warden role grant ROLE --prefix \"\" --permission admin)"
                .into(),
        );
    }
    Ok(certs_dir)
}

/// `HOST:PORT` → a socket address (a host name is resolved once, here).
fn resolve_listen(text: &str) -> Result<SocketAddr, String> {
    if let Ok(addr) = text.trim().parse::<SocketAddr>() {
        return Ok(addr);
    }
    warden_client::parse_endpoint(text).map_err(|e| format!("--listen {text:?}: {e}"))?;
    text.trim()
        .to_socket_addrs()
        .map_err(|e| format!("--listen {text:?}: cannot resolve: {e}"))?
        .next()
        .ok_or_else(|| format!("--listen {text:?}: resolves to no address"))
}

/// A duration from the flag, else the file, else the default, in whole ms.
fn duration_ms(
    name: &str,
    flag: Option<Duration>,
    file: Option<&str>,
    default_ms: u64,
) -> Result<u64, String> {
    let duration = match (flag, file) {
        (Some(d), _) => d,
        (None, Some(text)) => parse_duration(text).map_err(|e| format!("--{name}: {e}"))?,
        (None, None) => return Ok(default_ms),
    };
    u64::try_from(duration.as_millis())
        .map_err(|_| format!("--{name}: {duration:?} is far too long"))
}

fn check_range(
    name: &str,
    value: u64,
    (min, max): (u64, u64),
    unit_ms: bool,
) -> Result<(), String> {
    let show = |v: u64| {
        if unit_ms {
            humantime::format_duration(Duration::from_millis(v)).to_string()
        } else {
            format!("{v} entries")
        }
    };
    if value < min {
        return Err(format!(
            "--{name}: {} is below the minimum {}",
            show(value),
            show(min)
        ));
    }
    if value > max {
        return Err(format!(
            "--{name}: {} is above the maximum {}",
            show(value),
            show(max)
        ));
    }
    Ok(())
}

/// Checks every timing parameter against its limit (see [`limits`]).
pub fn validate_timing(t: &Timing) -> Result<(), String> {
    check_range("heartbeat", t.heartbeat_ms, limits::HEARTBEAT_MS, true)?;
    check_range(
        "election-timeout-min",
        t.election_timeout_min_ms,
        (
            t.heartbeat_ms.saturating_mul(2),
            limits::ELECTION_TIMEOUT_MAX_MS,
        ),
        true,
    )
    .map_err(|e| format!("{e} (at least 2 × heartbeat)"))?;
    if t.election_timeout_max_ms <= t.election_timeout_min_ms {
        return Err(format!(
            "--election-timeout-max: {} must be above --election-timeout-min {}",
            humantime::format_duration(Duration::from_millis(t.election_timeout_max_ms)),
            humantime::format_duration(Duration::from_millis(t.election_timeout_min_ms)),
        ));
    }
    check_range(
        "election-timeout-max",
        t.election_timeout_max_ms,
        (0, limits::ELECTION_TIMEOUT_MAX_MS),
        true,
    )?;
    check_range(
        "promotion-grace",
        t.promotion_grace_ms,
        limits::PROMOTION_GRACE_MS,
        true,
    )?;
    check_range(
        "snapshot-threshold",
        t.snapshot_threshold,
        limits::SNAPSHOT_THRESHOLD,
        false,
    )?;
    check_range(
        "leader-transfer-timeout",
        t.leader_transfer_timeout_ms,
        limits::LEADER_TRANSFER_TIMEOUT_MS,
        true,
    )?;
    check_range(
        "grpc-keepalive-interval",
        t.grpc_keepalive_interval_ms,
        limits::GRPC_KEEPALIVE_INTERVAL_MS,
        true,
    )?;
    check_range(
        "grpc-keepalive-timeout",
        t.grpc_keepalive_timeout_ms,
        limits::GRPC_KEEPALIVE_TIMEOUT_MS,
        true,
    )?;
    Ok(())
}

#[cfg(test)]
mod tests;
