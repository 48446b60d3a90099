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
    })
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
mod tests {
    use super::*;
    use crate::cli::parse_peer_addrs;

    // docs/semantics.md "Membership and data loss": the token floor comes from the
    // flag or the file, defaults to 0 and is bounded below MAX_ID.
    #[test]
    fn token_floor_is_resolved_and_bounded() {
        let config = resolve(&base_args(), FileConfig::default()).unwrap();
        assert_eq!(config.token_floor, 0);
        let file = parse_config_file("token-floor = 77").unwrap();
        assert_eq!(resolve(&base_args(), file).unwrap().token_floor, 77);
        let args = ServerArgs {
            token_floor: Some(warden_core::limits::MAX_ID - 1),
            ..base_args()
        };
        let file = parse_config_file("token-floor = 77").unwrap();
        assert_eq!(
            resolve(&args, file).unwrap().token_floor,
            warden_core::limits::MAX_ID - 1
        );
        let args = ServerArgs {
            token_floor: Some(warden_core::limits::MAX_ID),
            ..base_args()
        };
        let e = resolve(&args, FileConfig::default()).unwrap_err();
        assert!(e.starts_with("--token-floor:"), "{e}");
    }

    fn base_args() -> ServerArgs {
        ServerArgs {
            id: Some(2),
            listen: Some("127.0.0.1:7002".into()),
            peers: Some(parse_peers("1=127.0.0.1:7001,2=127.0.0.1:7002,3=127.0.0.1:7003").unwrap()),
            data_dir: Some("/tmp/w2".into()),
            insecure: true,
            ..ServerArgs::default()
        }
    }

    // The documented defaults (heartbeat 50 ms, election 250–500 ms, ...) are what a bare command gets.
    #[test]
    fn defaults_apply_when_nothing_is_given() {
        let config = resolve(&base_args(), FileConfig::default()).unwrap();
        assert_eq!(config.node_id, 2);
        assert_eq!(config.timing, Timing::default());
        assert_eq!(config.timing.heartbeat_ms, 50);
        assert_eq!(config.timing.bound_e_ms(), 1_600);
        assert_eq!(config.timing.grpc_keepalive_interval_ms, 5_000);
        assert_eq!(config.timing.grpc_keepalive_timeout_ms, 5_000);
        assert!(!config.initial_cluster_state_new);
    }

    // docs/operations.md "Latency between nodes": `--timing wan` (or
    // `timing = "wan"` in the file) starts from the wan preset, E and the
    // call floor follow from it, and an explicit flag (or file key)
    // overrides its own field only; the flag's preset wins over the file's.
    #[test]
    fn timing_preset_with_overrides() {
        let args = ServerArgs {
            timing: Some(TimingPreset::Wan),
            ..base_args()
        };
        let config = resolve(&args, FileConfig::default()).unwrap();
        assert_eq!(config.timing, Timing::wan());
        assert_eq!(config.timing.heartbeat_ms, 250);
        assert_eq!(config.timing.call_timeout_floor_ms(), 500);
        assert_eq!(config.timing.bound_e_ms(), 4_300);

        let args = ServerArgs {
            timing: Some(TimingPreset::Wan),
            heartbeat: Some(Duration::from_millis(300)),
            election_timeout_max: Some(Duration::from_secs(3)),
            ..base_args()
        };
        let t = resolve(&args, FileConfig::default()).unwrap().timing;
        assert_eq!(t.preset, warden_server::TimingPreset::Wan);
        assert_eq!(t.heartbeat_ms, 300);
        assert_eq!(t.election_timeout_min_ms, 1_000);
        assert_eq!(t.election_timeout_max_ms, 3_000);
        assert_eq!(t.promotion_grace_ms, 2_000);
        // E = G + max election timeout + duty interval + heartbeat, from
        // the values in effect.
        assert_eq!(t.bound_e_ms(), 2_000 + 3_000 + 50 + 300);

        let file = parse_config_file("timing = \"wan\"\npromotion-grace = \"1500ms\"").unwrap();
        let t = resolve(&base_args(), file).unwrap().timing;
        assert_eq!(t.preset, warden_server::TimingPreset::Wan);
        assert_eq!((t.heartbeat_ms, t.promotion_grace_ms), (250, 1_500));
        assert_eq!(t.bound_e_ms(), 1_500 + 2_000 + 50 + 250);

        let file = parse_config_file("timing = \"wan\"").unwrap();
        let args = ServerArgs {
            timing: Some(TimingPreset::Lan),
            ..base_args()
        };
        assert_eq!(resolve(&args, file).unwrap().timing, Timing::default());
    }

    // "What bad input gets": an override that contradicts the preset's
    // other values is refused naming both flags, and an unknown preset in
    // the file names the key and the known ones.
    #[test]
    fn timing_preset_overrides_are_checked() {
        let args = ServerArgs {
            timing: Some(TimingPreset::Wan),
            election_timeout_max: Some(Duration::from_millis(800)),
            ..base_args()
        };
        let e = resolve(&args, FileConfig::default()).unwrap_err();
        assert_eq!(
            e,
            "--election-timeout-max: 800ms must be above --election-timeout-min 1s"
        );
        let e = parse_config_file("timing = \"moon\"").unwrap_err();
        assert!(e.contains("timing"), "{e}");
        assert!(
            e.contains("`lan`, `wan`") || e.contains("`lan` or `wan`"),
            "{e}"
        );
    }

    // "What bad input gets": a config file over 1 MiB (a log or a binary
    // given by mistake; 50 MB ones were read whole) is refused naming the
    // flag and the limit; one at the limit is read (and parsed).
    #[test]
    fn an_oversized_config_file_is_refused_naming_the_limit() {
        let dir = tempfile::tempdir().unwrap();
        let big = dir.path().join("big.toml");
        std::fs::write(&big, "#".repeat(MAX_CONFIG_FILE_BYTES as usize + 1)).unwrap();
        let e = read_config_file(&big).unwrap_err();
        assert!(
            e.starts_with(&format!(
                "--config {}: larger than the limit of 1048576 bytes",
                big.display()
            )),
            "{e}"
        );
        let at_limit = dir.path().join("at-limit.toml");
        std::fs::write(&at_limit, "#".repeat(MAX_CONFIG_FILE_BYTES as usize)).unwrap();
        assert!(read_config_file(&at_limit).is_ok());
    }

    // The HTTP/2 keep-alive (docs/operations.md) comes from the flag or the
    // file, flags first.
    #[test]
    fn grpc_keepalive_from_flags_and_file() {
        let file =
            parse_config_file("grpc-keepalive-interval = \"2s\"\ngrpc-keepalive-timeout = \"3s\"")
                .unwrap();
        let config = resolve(&base_args(), file).unwrap();
        assert_eq!(config.timing.grpc_keepalive_interval_ms, 2_000);
        assert_eq!(config.timing.grpc_keepalive_timeout_ms, 3_000);
        let args = ServerArgs {
            grpc_keepalive_timeout: Some(Duration::from_millis(500)),
            ..base_args()
        };
        let file = parse_config_file("grpc-keepalive-timeout = \"3s\"").unwrap();
        assert_eq!(
            resolve(&args, file)
                .unwrap()
                .timing
                .grpc_keepalive_timeout_ms,
            500
        );
    }

    // Flags override the config file, which overrides the defaults.
    #[test]
    fn flags_override_the_file() {
        let file = parse_config_file(
            r#"
            id = 1
            listen = "127.0.0.1:7001"
            data-dir = "/var/lib/warden"
            initial-cluster-state = "new"
            heartbeat = "20ms"
            promotion-grace = "2s"
            snapshot-threshold = 20
            [peers]
            1 = "127.0.0.1:7001"
            2 = "127.0.0.1:7002"
            "#,
        )
        .unwrap();
        let args = ServerArgs {
            heartbeat: Some(Duration::from_millis(40)),
            id: Some(2),
            insecure: true,
            ..ServerArgs::default()
        };
        let config = resolve(&args, file).unwrap();
        assert_eq!(config.node_id, 2);
        assert_eq!(config.peers.len(), 2);
        assert_eq!(config.timing.heartbeat_ms, 40);
        assert_eq!(config.timing.promotion_grace_ms, 2_000);
        assert_eq!(config.timing.snapshot_threshold, 20);
        assert!(config.initial_cluster_state_new);
        assert_eq!(config.data_dir, PathBuf::from("/var/lib/warden"));
    }

    // docs/operations.md: admin calls on an insecure node are off unless
    // --allow-admin; the request size bound defaults to 64 KiB, is
    // configurable, and out-of-range values name the flag and the limit.
    #[test]
    fn allow_admin_and_max_request_bytes() {
        let config = resolve(&base_args(), FileConfig::default()).unwrap();
        assert!(!config.allow_admin);
        assert_eq!(config.max_request_bytes, 65_536);
        let file = parse_config_file("max-request-bytes = 8192").unwrap();
        let args = ServerArgs {
            allow_admin: true,
            ..base_args()
        };
        let config = resolve(&args, file).unwrap();
        assert!(config.allow_admin);
        assert_eq!(config.certs_dir, None);
        assert_eq!(config.max_request_bytes, 8_192);
        let mut args = base_args();
        args.allow_admin = true;
        args.max_request_bytes = Some(100);
        let err = resolve(&args, FileConfig::default()).unwrap_err();
        assert!(
            err.starts_with("--max-request-bytes") && err.contains("1024"),
            "{err}"
        );
    }

    // docs/security.md "Insecure mode": a node serves TLS with --certs-dir
    // (flag or file) or plaintext with --insecure; neither or both is
    // refused naming both flags, and --allow-admin needs --insecure.
    #[test]
    fn certs_dir_or_insecure_exactly_one() {
        let secure = ServerArgs {
            insecure: false,
            certs_dir: Some("/etc/warden/certs".into()),
            ..base_args()
        };
        let config = resolve(&secure, FileConfig::default()).unwrap();
        assert_eq!(config.certs_dir, Some(PathBuf::from("/etc/warden/certs")));
        assert!(!config.allow_admin);
        let from_file = ServerArgs {
            insecure: false,
            ..base_args()
        };
        let file = parse_config_file("certs-dir = \"/srv/certs\"").unwrap();
        assert_eq!(
            resolve(&from_file, file).unwrap().certs_dir,
            Some(PathBuf::from("/srv/certs"))
        );
        // The flag wins over the file.
        let file = parse_config_file("certs-dir = \"/srv/certs\"").unwrap();
        assert_eq!(
            resolve(&secure, file).unwrap().certs_dir,
            Some(PathBuf::from("/etc/warden/certs"))
        );

        let err = resolve(&from_file, FileConfig::default()).unwrap_err();
        assert!(err.starts_with("no --certs-dir"), "{err}");
        assert!(err.contains("--insecure"), "{err}");
        let both = ServerArgs {
            insecure: true,
            ..secure.clone()
        };
        let err = resolve(&both, FileConfig::default()).unwrap_err();
        assert!(
            err.starts_with("--insecure and --certs-dir /etc/warden/certs"),
            "{err}"
        );
        let file = parse_config_file("certs-dir = \"/srv/certs\"").unwrap();
        let err = resolve(&base_args(), file).unwrap_err();
        assert!(
            err.starts_with("--insecure and --certs-dir /srv/certs"),
            "{err}"
        );

        let admin = ServerArgs {
            allow_admin: true,
            ..secure
        };
        let err = resolve(&admin, FileConfig::default()).unwrap_err();
        assert!(
            err.starts_with("--allow-admin: only with --insecure"),
            "{err}"
        );
    }

    // docs/security.md "Insecure mode": turning security off is read from
    // the command line only; the config file's keys are refused by name.
    #[test]
    fn insecure_and_allow_admin_are_not_read_from_the_file() {
        for (text, key) in [
            ("insecure = true", "insecure:"),
            ("insecure = false", "insecure:"),
            ("allow-admin = true", "allow-admin:"),
        ] {
            let err = resolve(&base_args(), parse_config_file(text).unwrap()).unwrap_err();
            assert!(err.starts_with(key), "{text}: {err}");
            assert!(err.contains("command line"), "{text}: {err}");
        }
    }

    // docs/operations.md: `--join` and `--admin-listen` come from the flag or the file;
    // a bad or clashing admin address names the flag.
    #[test]
    fn join_and_admin_listen() {
        let config = resolve(&base_args(), FileConfig::default()).unwrap();
        assert!(!config.join);
        assert_eq!(config.admin_listen, None);
        let file = parse_config_file("join = true\nadmin-listen = \"127.0.0.1:7080\"").unwrap();
        let config = resolve(&base_args(), file).unwrap();
        assert!(config.join);
        assert_eq!(config.admin_listen, Some("127.0.0.1:7080".parse().unwrap()));
        let mut args = base_args();
        args.admin_listen = Some("not an address".into());
        let err = resolve(&args, FileConfig::default()).unwrap_err();
        assert!(err.starts_with("--admin-listen"), "{err}");
        args.admin_listen = args.listen.clone();
        let err = resolve(&args, FileConfig::default()).unwrap_err();
        assert!(
            err.starts_with("--admin-listen") && err.contains("own port"),
            "{err}"
        );
    }

    // `--metrics-groups` from the flag or the file; a bad list is refused
    // at start naming the flag and the limit ("What bad input gets").
    #[test]
    fn metrics_groups_from_flag_or_file() {
        let file = parse_config_file("metrics-groups = [\"payments/\", \"inventory/\"]").unwrap();
        let config = resolve(&base_args(), file).unwrap();
        assert_eq!(config.metrics_groups, ["payments/", "inventory/"]);
        let mut args = base_args();
        args.metrics_groups = Some(vec!["a/".into(), "a/".into()]);
        let err = resolve(&args, FileConfig::default()).unwrap_err();
        assert_eq!(err, "--metrics-groups: \"a/\" is given twice");
        args.metrics_groups = Some((0..65).map(|i| format!("g{i}/")).collect());
        let err = resolve(&args, FileConfig::default()).unwrap_err();
        assert_eq!(err, "--metrics-groups: at most 64 prefixes; got 65");
    }

    // What bad input gets (`--peer-listen`, docs/operations.md): the split
    // resolves from flags or the file; a peer port that is --listen or
    // --admin-listen, a --peer-addrs id not in --peers, a peer address that
    // is a client address, and a --peer-listen without this node's peer
    // address (or the reverse) are refused naming the flag.
    #[test]
    fn peer_listen_and_peer_addrs() {
        let config = resolve(&base_args(), FileConfig::default()).unwrap();
        assert_eq!(config.peer_listen, None);
        assert!(config.peer_addrs.is_empty());
        let split = || ServerArgs {
            peer_listen: Some("127.0.0.1:7102".into()),
            peer_addrs: Some(parse_peer_addrs("1=127.0.0.1:7101,2=127.0.0.1:7102").unwrap()),
            ..base_args()
        };
        let config = resolve(&split(), FileConfig::default()).unwrap();
        assert_eq!(config.peer_listen, Some("127.0.0.1:7102".parse().unwrap()));
        assert_eq!(config.peer_dial_addr(1), Some("127.0.0.1:7101"));
        assert_eq!(config.peer_dial_addr(3), Some("127.0.0.1:7003"));
        let file = parse_config_file(
            "peer-listen = \"127.0.0.1:7102\"\n[peer-addrs]\n2 = \"127.0.0.1:7102\"",
        )
        .unwrap();
        let config = resolve(&base_args(), file).unwrap();
        assert_eq!(config.peer_listen, Some("127.0.0.1:7102".parse().unwrap()));
        assert_eq!(
            config.peer_addrs.get(&2).map(String::as_str),
            Some("127.0.0.1:7102")
        );

        let err = |args: ServerArgs| resolve(&args, FileConfig::default()).unwrap_err();
        assert_eq!(
            err(ServerArgs {
                peer_listen: Some("127.0.0.1:7002".into()),
                ..split()
            }),
            "--peer-listen: 127.0.0.1:7002 is the --listen address; the peer port must be a port of its own"
        );
        assert_eq!(
            err(ServerArgs {
                admin_listen: Some("127.0.0.1:7102".into()),
                ..split()
            }),
            "--peer-listen: 127.0.0.1:7102 is the --admin-listen address; the peer port must be a port of its own"
        );
        assert!(err(ServerArgs {
            peer_listen: Some("nowhere".into()),
            ..split()
        })
        .starts_with("--peer-listen \"nowhere\""));
        assert_eq!(
            err(ServerArgs {
                peer_addrs: Some(parse_peer_addrs("2=127.0.0.1:7102,4=127.0.0.1:7104").unwrap()),
                ..split()
            }),
            "--peer-addrs: node 4 is not one of the --peers ids (1, 2, 3)"
        );
        assert_eq!(
            err(ServerArgs {
                peer_addrs: Some(parse_peer_addrs("2=127.0.0.1:7102,3=127.0.0.1:7001").unwrap()),
                ..split()
            }),
            "--peer-addrs: 127.0.0.1:7001 (node 3) is the --peers address of node 1; a peer port serves the peer service only"
        );
        assert_eq!(
            err(ServerArgs {
                peer_addrs: Some(parse_peer_addrs("1=127.0.0.1:7101").unwrap()),
                ..split()
            }),
            "--peer-addrs: --peer-listen is given, so this node (2) needs its entry in --peer-addrs (where its peers reach it)"
        );
        assert_eq!(
            err(ServerArgs {
                peer_listen: None,
                ..split()
            }),
            "--peer-listen: --peer-addrs gives this node (2) a peer address; serve it with --peer-listen HOST:PORT"
        );
        let e = parse_peer_addrs("2=nowhere").unwrap_err();
        assert!(e.starts_with("--peer-addrs: address of node 2"), "{e}");
    }

    // docs/operations.md "Logs": `--log-format` comes from the flag or the
    // file (flag first), text by default; a bad value in the file names the
    // key and the choices.
    #[test]
    fn log_format_from_flag_and_file() {
        assert_eq!(
            log_format(&base_args(), &FileConfig::default()),
            LogFormat::Text
        );
        let file = parse_config_file("log-format = \"json\"").unwrap();
        assert_eq!(log_format(&base_args(), &file), LogFormat::Json);
        let args = ServerArgs {
            log_format: Some(LogFormat::Text),
            ..base_args()
        };
        assert_eq!(log_format(&args, &file), LogFormat::Text);
        let err = parse_config_file("log-format = \"xml\"").unwrap_err();
        assert!(
            err.contains("log-format") && err.contains("xml") && err.contains("json"),
            "{err}"
        );
    }

    // Bad input names the field: unknown keys and bad values in the file are refused.
    #[test]
    fn config_file_errors_name_the_key() {
        let err = parse_config_file("hearbeat = \"50ms\"").unwrap_err();
        assert!(err.contains("hearbeat"), "{err}");
        let err = resolve(
            &base_args(),
            parse_config_file("election-timeout-min = \"fast\"").unwrap(),
        )
        .unwrap_err();
        assert!(err.starts_with("--election-timeout-min"), "{err}");
    }

    // Bad input names the field: `checkpoint-interval` is gone with the
    // checkpoints (cluster time, log format 1, docs/semantics.md "Time").
    // A config file that still names it is refused like any unknown key,
    // naming it, and so is the flag; nothing is silently dropped.
    #[test]
    fn a_removed_checkpoint_interval_is_refused_naming_the_key() {
        let err =
            parse_config_file("heartbeat = \"50ms\"\ncheckpoint-interval = \"1s\"").unwrap_err();
        assert!(err.contains("unknown field `checkpoint-interval`"), "{err}");
        let dir = tempfile::tempdir().unwrap();
        let old = dir.path().join("old.toml");
        std::fs::write(&old, "checkpoint-interval = \"2s\"\n").unwrap();
        let err = read_config_file(&old).unwrap_err();
        assert!(
            err.starts_with("--config ") && err.contains("`checkpoint-interval`"),
            "{err}"
        );
        use clap::Parser as _;
        let err =
            crate::cli::Cli::try_parse_from(["warden", "server", "--checkpoint-interval", "1s"])
                .expect_err("--checkpoint-interval is refused");
        assert!(err.to_string().contains("--checkpoint-interval"), "{err}");
    }

    // Bad input names the field and the limit, and never panics.
    #[test]
    fn out_of_bounds_timing_names_field_and_limit() {
        type Change = Box<dyn Fn(&mut ServerArgs)>;
        let cases: Vec<(Change, &str)> = vec![
            (
                Box::new(|a| a.heartbeat = Some(Duration::ZERO)),
                "--heartbeat: 0s is below the minimum 1ms",
            ),
            (
                Box::new(|a| a.heartbeat = Some(Duration::from_secs(11))),
                "--heartbeat: 11s is above the maximum 10s",
            ),
            (
                Box::new(|a| a.election_timeout_min = Some(Duration::from_millis(60))),
                "--election-timeout-min: 60ms is below the minimum 100ms",
            ),
            (
                Box::new(|a| a.election_timeout_max = Some(Duration::from_millis(200))),
                "--election-timeout-max: 200ms must be above --election-timeout-min 250ms",
            ),
            (
                Box::new(|a| a.promotion_grace = Some(Duration::from_secs(61))),
                "--promotion-grace: 1m 1s is above the maximum 1m",
            ),
            (
                Box::new(|a| a.snapshot_threshold = Some(0)),
                "--snapshot-threshold: 0 entries is below the minimum 1 entries",
            ),
            (
                Box::new(|a| a.leader_transfer_timeout = Some(Duration::MAX)),
                "--leader-transfer-timeout",
            ),
            (
                Box::new(|a| a.grpc_keepalive_interval = Some(Duration::from_millis(50))),
                "--grpc-keepalive-interval: 50ms is below the minimum 100ms",
            ),
            (
                Box::new(|a| a.grpc_keepalive_interval = Some(Duration::from_secs(3 * 3600))),
                "--grpc-keepalive-interval: 3h is above the maximum 2h",
            ),
            (
                Box::new(|a| a.grpc_keepalive_timeout = Some(Duration::ZERO)),
                "--grpc-keepalive-timeout: 0s is below the minimum 100ms",
            ),
            (
                Box::new(|a| a.grpc_keepalive_timeout = Some(Duration::from_secs(601))),
                "--grpc-keepalive-timeout: 10m 1s is above the maximum 10m",
            ),
        ];
        for (change, expected) in cases {
            let mut args = base_args();
            change(&mut args);
            let err = resolve(&args, FileConfig::default()).unwrap_err();
            assert!(
                err.starts_with(expected),
                "got {err:?}, expected {expected:?}"
            );
        }
    }

    // Identity errors are clear: a missing flag, an id outside --peers, a bad --listen.
    #[test]
    fn identity_errors_are_clear() {
        let mut args = base_args();
        args.id = Some(4);
        let err = resolve(&args, FileConfig::default()).unwrap_err();
        assert!(
            err.contains("not one of the --peers ids (1, 2, 3)"),
            "{err}"
        );
        let mut args = base_args();
        args.id = None;
        assert!(resolve(&args, FileConfig::default())
            .unwrap_err()
            .contains("missing --id"));
        let mut args = base_args();
        args.listen = Some("nowhere".into());
        assert!(resolve(&args, FileConfig::default())
            .unwrap_err()
            .starts_with("--listen"));
        let mut args = base_args();
        args.data_dir = None;
        assert!(resolve(&args, FileConfig::default())
            .unwrap_err()
            .contains("--data-dir"));
    }
}
