//! The command line: clap types and the small parsers they use. No IO here.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand, ValueEnum};

/// Warden: a distributed lock service with leases and fencing tokens.
#[derive(Debug, Parser)]
#[command(name = "warden", version, about, propagate_version = true)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The `Examples:` shown at the end of the most used commands' `--help`
/// (each line is checked to parse by the tests, so none can drift).
pub mod examples {
    /// `warden server`.
    pub const SERVER: &str = "Examples:
  warden server --id 1 --listen 10.0.0.1:7001 --peers 1=10.0.0.1:7001,2=10.0.0.2:7001,3=10.0.0.3:7001 --data-dir /var/lib/warden --certs-dir /etc/warden/certs
  warden server --config /etc/warden/warden.toml
  warden server --id 1 --listen 127.0.0.1:7001 --peers 1=127.0.0.1:7001 --data-dir /tmp/w1 --insecure";
    /// `warden dev`.
    pub const DEV: &str = "Examples:
  warden dev
  warden dev --nodes 1 --data-dir /tmp/warden-dev
  warden dev --insecure";
    /// `warden acquire`.
    pub const ACQUIRE: &str = "Examples:
  warden acquire orders --ttl 30s
  warden acquire orders --ttl 30s --wait 10s
  warden acquire orders --lease 7 --output json";
    /// `warden release`.
    pub const RELEASE: &str = "Examples:
  warden release 7 orders --token 12
  warden release --force orders";
    /// `warden status`.
    pub const STATUS: &str = "Examples:
  warden status orders
  warden status orders --output json";
    /// `warden list`.
    pub const LIST: &str = "Examples:
  warden list
  warden list payments/ --output json";
    /// `warden top`.
    pub const TOP: &str = "Examples:
  warden top
  warden top payments/ --limit 5 --watch";
    /// `warden exec`.
    pub const EXEC: &str = "Examples:
  warden exec backup --ttl 10s -- /usr/local/bin/backup.sh
  warden exec backup --ttl 10s --wait 1m -- make deploy";
    /// `warden elect`.
    pub const ELECT: &str = "Examples:
  warden elect scheduler --value node-a
  warden elect scheduler --leader --output json
  warden elect scheduler --observe";
    /// `warden cert`.
    pub const CERT: &str = "Examples:
  warden cert create-ca --certs-dir certs --ca-key ca.key
  warden cert create-node --certs-dir node1 --ca-key ca.key --id 1 node1.example.com 10.0.0.1
  warden cert create-client alice --certs-dir certs --ca-key ca.key
  warden cert list --certs-dir certs";
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run one node of a cluster (serves peers and clients on --listen);
    /// needs --certs-dir DIR (TLS) or --insecure.
    #[command(after_help = examples::SERVER)]
    Server(Box<ServerArgs>),
    /// Start a local cluster of `warden server` child processes on 127.0.0.1.
    #[command(after_help = examples::DEV)]
    Dev(DevArgs),
    /// Acquire a lock on RESOURCE (exit 2 if it is not granted).
    #[command(after_help = examples::ACQUIRE)]
    Acquire(AcquireArgs),
    /// Renew a lease: its countdown restarts with its full TTL.
    Renew(RenewArgs),
    /// Release a lease's lock.
    #[command(after_help = examples::RELEASE)]
    Release(ReleaseArgs),
    /// Show who holds RESOURCE.
    #[command(after_help = examples::STATUS)]
    Status(StatusArgs),
    /// Cluster-wide commands.
    Cluster(ClusterArgs),
    /// List locks (holder, token, ages, remaining TTL, waiters in queue order).
    #[command(after_help = examples::LIST)]
    List(crate::admin_cmd::ListArgs),
    /// The most contended locks now (queue length, oldest waiter, grants
    /// and expiries in the last minute, wait p99); --watch refreshes.
    #[command(after_help = examples::TOP)]
    Top(crate::top_cmd::TopArgs),
    /// Print the audit trail of forced releases (--auth: of auth changes).
    Audit(crate::admin_cmd::AuditArgs),
    /// Roles: `role grant | revoke | delete | list | quota` (permissions on
    /// prefixes; needs admin).
    Role(crate::role_cmd::RoleArgs),
    /// Principals: `user grant-role | revoke-role | list | deny | undeny | denied` (needs admin).
    User(crate::role_cmd::UserArgs),
    /// Sessions: `lease grant | keep-alive | revoke | ttl`.
    Lease(crate::lease_cmd::LeaseArgs),
    /// Stream lock events of RESOURCE (or --prefix P) until Ctrl-C.
    Watch(crate::watch_cmd::WatchArgs),
    /// Run CMD while holding RESOURCE; CMD is stopped by the lease's
    /// valid_until if the lease cannot be renewed (exit: CMD's status).
    #[command(after_help = examples::EXEC)]
    Exec(crate::exec_cmd::ExecArgs),
    /// Campaign in election NAME and hold the leadership (--value), follow
    /// its leaders (--observe), or print the current one (--leader).
    #[command(after_help = examples::ELECT)]
    Elect(crate::elect_cmd::ElectArgs),
    /// Ask the cluster whether TOKEN is the current grant of RESOURCE
    /// (advisory: exit 0 current, 2 stale or unknown).
    Validate(ValidateArgs),
    /// Run the reference fenced key-value store over HTTP.
    FencedStore(FencedStoreArgs),
    /// Runnable stories with real processes.
    Demo(DemoArgs),
    /// Backups: `snapshot save FILE`, `snapshot restore FILE --data-dir DIR ...`.
    Snapshot(crate::snapshot_cmd::SnapshotArgs),
    /// Certificates (offline): `cert create-ca | create-node | create-client | list`.
    #[command(after_help = examples::CERT)]
    Cert(crate::cert_cmd::CertArgs),
    /// Print this binary's version and the log, snapshot and wire formats
    /// it reads and writes (which binaries can run side by side).
    Version(crate::version_cmd::VersionArgs),
    /// Print a shell completion script: `warden completion bash >
    /// /etc/bash_completion.d/warden` (or zsh, fish, elvish, powershell).
    Completion(crate::version_cmd::CompletionArgs),
    /// A demo client: acquires, prints its grant, writes on a line of stdin.
    #[command(hide = true)]
    DemoHolder(DemoHolderArgs),
}

/// `warden validate`: a linearizable read, but advisory: the answer may be
/// stale by the time you act on it. Only the protected resource's own check
/// (keep the highest token, reject a lower one) closes that window.
#[derive(Debug, Args)]
pub struct ValidateArgs {
    /// The lock's name.
    pub resource: String,
    /// The fencing token to check.
    #[arg(value_parser = parse_id)]
    pub token: u64,
    #[command(flatten)]
    pub client: ClientArgs,
}

/// `warden fenced-store`.
#[derive(Debug, Args)]
pub struct FencedStoreArgs {
    /// Address to serve HTTP on (port 0 picks one; the first stdout line says which).
    #[arg(long, value_name = "HOST:PORT", default_value = "127.0.0.1:7380")]
    pub listen: String,
    /// Where the store's redb file lives.
    #[arg(long, value_name = "DIR")]
    pub data_dir: PathBuf,
    /// Serve on a --listen address other than loopback. The store speaks
    /// plain HTTP and authenticates nobody: anyone who reaches the port can
    /// write with a token they saw, so by default it serves loopback only.
    #[arg(long)]
    pub insecure: bool,
}

/// `warden demo`.
#[derive(Debug, Args)]
pub struct DemoArgs {
    /// Which story.
    #[command(subcommand)]
    pub command: DemoCommand,
}

/// `warden demo ...`.
#[derive(Debug, Subcommand)]
pub enum DemoCommand {
    /// A paused holder's late write is rejected by the fenced store: starts a
    /// 3-node cluster, the store and two clients, and prints the timeline.
    SplitBrain(SplitBrainArgs),
}

/// `warden demo split-brain`.
#[derive(Debug, Args)]
pub struct SplitBrainArgs {
    /// Keep the cluster's and the store's data and logs here [default: a
    /// temporary directory, removed on success].
    #[arg(long, value_name = "DIR")]
    pub data_dir: Option<PathBuf>,
    /// Run the cluster and its clients with --insecure (plaintext, no
    /// identities). By default certificates are minted under the data dir
    /// and every node and client uses them.
    #[arg(long)]
    pub insecure: bool,
}

/// `warden demo-holder` (hidden; used by the demo and the tests).
#[derive(Debug, Args)]
pub struct DemoHolderArgs {
    /// The lock's name.
    #[arg(long)]
    pub resource: String,
    /// TTL of its lease.
    #[arg(long, value_parser = parse_duration, default_value = "1s")]
    pub ttl: Duration,
    /// How long to wait in the queue.
    #[arg(long, value_parser = parse_duration, default_value = "0s")]
    pub wait: Duration,
    /// The fenced store's HOST:PORT.
    #[arg(long)]
    pub store: String,
    /// The key to write.
    #[arg(long)]
    pub key: String,
    /// The value to write.
    #[arg(long)]
    pub value: String,
    /// A name for logs.
    #[arg(long, default_value = "holder")]
    pub name: String,
    #[command(flatten)]
    pub client: ClientArgs,
}

/// `warden server`: flags override their `WARDEN_SERVER_*` variables, which
/// override the config file, which overrides the defaults. `--insecure` and
/// `--allow-admin` are read from the command line only (docs/operations.md
/// "Environment").
#[derive(Debug, Args, Default, Clone)]
pub struct ServerArgs {
    /// This node's id (>= 1); must be one of the ids in --peers.
    #[arg(long, env = "WARDEN_SERVER_ID", value_name = "N")]
    pub id: Option<u64>,
    /// Address to serve clients on, and peers unless --peer-listen is given.
    #[arg(long, env = "WARDEN_SERVER_LISTEN", value_name = "HOST:PORT")]
    pub listen: Option<String>,
    /// Serve the peer (Raft) service on this address only, apart from the
    /// clients' --listen (so a firewall can keep clients away from it, as
    /// etcd's 2379/2380 split); this node's --peer-addrs entry says where
    /// its peers reach it [default: --listen serves both].
    #[arg(long, env = "WARDEN_SERVER_PEER_LISTEN", value_name = "HOST:PORT")]
    pub peer_listen: Option<String>,
    /// Every member, this node included, at its client address.
    #[arg(long, env = "WARDEN_SERVER_PEERS", value_name = "ID=HOST:PORT,...", value_parser = parse_peers)]
    pub peers: Option<Peers>,
    /// The peer address of each member that runs with --peer-listen (ids
    /// of --peers; the others are reached at their --peers address).
    #[arg(long, env = "WARDEN_SERVER_PEER_ADDRS", value_name = "ID=HOST:PORT,...", value_parser = parse_peer_addrs)]
    pub peer_addrs: Option<Peers>,
    /// Where the Raft log, vote, snapshots and cluster id live.
    #[arg(long, env = "WARDEN_SERVER_DATA_DIR", value_name = "DIR")]
    pub data_dir: Option<PathBuf>,
    /// `new`: form a cluster even if some peers cannot be reached.
    #[arg(
        long,
        env = "WARDEN_SERVER_INITIAL_CLUSTER_STATE",
        value_enum,
        value_name = "STATE"
    )]
    pub initial_cluster_state: Option<InitialClusterState>,
    /// TOML file with the same keys as these flags (e.g. `data-dir = "/var/lib/warden"`,
    /// `heartbeat = "50ms"`); flags override it.
    #[arg(long, env = "WARDEN_SERVER_CONFIG", value_name = "FILE.toml")]
    pub config: Option<PathBuf>,
    /// The timing defaults to start from: `lan` (peer round trips up to
    /// about 10 ms) or `wan` (members in several regions, round trips up to
    /// about 200 ms: heartbeat 250ms, election timeout 1s–2s, promotion
    /// grace 2s). Each timing flag below overrides its own value
    /// [default: lan].
    #[arg(long, env = "WARDEN_SERVER_TIMING", value_enum, value_name = "PRESET")]
    pub timing: Option<TimingPreset>,
    /// Raft heartbeat interval [default: 50ms; wan: 250ms].
    #[arg(long, env = "WARDEN_SERVER_HEARTBEAT", value_name = "DURATION", value_parser = parse_duration)]
    pub heartbeat: Option<Duration>,
    /// Raft election timeout, lower bound [default: 250ms; wan: 1s].
    #[arg(long, env = "WARDEN_SERVER_ELECTION_TIMEOUT_MIN", value_name = "DURATION", value_parser = parse_duration)]
    pub election_timeout_min: Option<Duration>,
    /// Raft election timeout, upper bound [default: 500ms; wan: 2s].
    #[arg(long, env = "WARDEN_SERVER_ELECTION_TIMEOUT_MAX", value_name = "DURATION", value_parser = parse_duration)]
    pub election_timeout_max: Option<Duration>,
    /// Grace a new leader gives each lease once (G) [default: 1s; wan: 2s].
    #[arg(long, env = "WARDEN_SERVER_PROMOTION_GRACE", value_name = "DURATION", value_parser = parse_duration)]
    pub promotion_grace: Option<Duration>,
    /// Take a snapshot once this many log entries were applied since the
    /// last one and the log has also grown by at least that snapshot's size
    /// in bytes (so a large table snapshots less often) [default: 10000].
    #[arg(long, env = "WARDEN_SERVER_SNAPSHOT_THRESHOLD", value_name = "ENTRIES")]
    pub snapshot_threshold: Option<u64>,
    /// Longest a SIGTERM'd leader waits to hand leadership over [default: 2s].
    #[arg(long, env = "WARDEN_SERVER_LEADER_TRANSFER_TIMEOUT", value_name = "DURATION", value_parser = parse_duration)]
    pub leader_transfer_timeout: Option<Duration>,
    /// HTTP/2 keep-alive: ping a connection on which nothing was read for
    /// this long (100ms..=2h) [default: 5s].
    #[arg(long, env = "WARDEN_SERVER_GRPC_KEEPALIVE_INTERVAL", value_name = "DURATION", value_parser = parse_duration)]
    pub grpc_keepalive_interval: Option<Duration>,
    /// HTTP/2 keep-alive: close a connection whose ping is not answered
    /// within this (100ms..=10m) [default: 5s].
    #[arg(long, env = "WARDEN_SERVER_GRPC_KEEPALIVE_TIMEOUT", value_name = "DURATION", value_parser = parse_duration)]
    pub grpc_keepalive_timeout: Option<Duration>,
    /// The node's certificates: `ca.crt` (one or more CAs), `node.crt` and
    /// `node.key` for this --id (`warden cert create-node`). Clients and
    /// peers are then served TLS 1.3 only, calls carry the principal of the
    /// caller's certificate, and SIGHUP re-reads the directory (new
    /// handshakes use the new files; a bad set is refused and logged, the
    /// old one stays). Config file: `certs-dir = "DIR"`. Required unless
    /// --insecure.
    #[arg(long, env = "WARDEN_SERVER_CERTS_DIR", value_name = "DIR")]
    pub certs_dir: Option<PathBuf>,
    /// Serve plaintext with no authentication: anyone who can reach the
    /// port can act as any client and as a peer. For a test cluster on a
    /// trusted network only. Command line only (never the config file or
    /// the environment).
    #[arg(long, conflicts_with = "certs_dir")]
    pub insecure: bool,
    /// With --insecure only: allow admin calls (`warden release --force`,
    /// `warden cluster add-node | remove-node | replace-node`, `warden
    /// snapshot save`) from anonymous callers; refused with
    /// PermissionDenied otherwise. With --certs-dir the caller's `admin`
    /// permission decides. Command line only.
    #[arg(long)]
    pub allow_admin: bool,
    /// Largest request the public services decode, in bytes (1024..=4194304)
    /// [default: 65536].
    #[arg(long, env = "WARDEN_SERVER_MAX_REQUEST_BYTES", value_name = "BYTES")]
    pub max_request_bytes: Option<u64>,
    /// When this node forms a new cluster, every fencing token is above N
    /// (0..=9007199254740990; 0 = none). Use after a restore or total loss:
    /// N above any token ever issued. Ignored once the cluster exists.
    #[arg(long, env = "WARDEN_SERVER_TOKEN_FLOOR", value_name = "N")]
    pub token_floor: Option<u64>,
    /// With an empty data dir, wait to be added by `warden cluster add-node`
    /// or `replace-node` instead of forming a cluster. Config file: `join = true`.
    #[arg(long, env = "WARDEN_SERVER_JOIN")]
    pub join: bool,
    /// Serve /healthz and /readyz over HTTP on HOST:PORT (over TLS, with no
    /// client certificate needed, when --certs-dir is given) [default: none].
    #[arg(long, env = "WARDEN_SERVER_ADMIN_LISTEN", value_name = "HOST:PORT")]
    pub admin_listen: Option<String>,
    /// Resource prefixes that name the `group` label of the lock metrics on
    /// /metrics, comma-separated (at most 64; longest match wins; others
    /// count as `other`, elections as `election`). Give every node the same
    /// list. Config file: `metrics-groups = ["payments/", "inventory/"]`.
    #[arg(
        long,
        env = "WARDEN_SERVER_METRICS_GROUPS",
        value_name = "PREFIX,...",
        value_delimiter = ','
    )]
    pub metrics_groups: Option<Vec<String>>,
    /// TLS listeners: close a connection whose handshake has not finished
    /// within this (100ms..=1m) [default: 5s].
    #[arg(long, env = "WARDEN_SERVER_HANDSHAKE_TIMEOUT", value_name = "DURATION", value_parser = parse_duration)]
    pub handshake_timeout: Option<Duration>,
    /// TLS listeners: handshakes in progress at once, per listener
    /// (1..=65536) [default: 1024].
    #[arg(long, env = "WARDEN_SERVER_MAX_HANDSHAKES", value_name = "N")]
    pub max_handshakes: Option<usize>,
    /// TLS listeners: handshakes in progress at once from one source (an
    /// IPv4 address or an IPv6 /64), at most --max-handshakes; a source over
    /// it loses its oldest pending handshake [default: 64].
    #[arg(
        long,
        env = "WARDEN_SERVER_MAX_HANDSHAKES_PER_SOURCE",
        value_name = "N"
    )]
    pub max_handshakes_per_source: Option<usize>,
    /// TLS listeners: established connections per listener
    /// (1..=1048576); past it the oldest idle connection is closed
    /// [default: 16384].
    #[arg(long, env = "WARDEN_SERVER_MAX_CONNECTIONS", value_name = "N")]
    pub max_connections: Option<usize>,
    /// TLS listeners: established connections of one principal (without a
    /// certificate: of one source) per listener, at most --max-connections
    /// [default: 1024].
    #[arg(
        long,
        env = "WARDEN_SERVER_MAX_CONNECTIONS_PER_PRINCIPAL",
        value_name = "N"
    )]
    pub max_connections_per_principal: Option<usize>,
    /// TLS listeners: close a connection with no open stream (call) for
    /// this long (1s..=24h) [default: 5m].
    #[arg(long, env = "WARDEN_SERVER_CONNECTION_IDLE_TIMEOUT", value_name = "DURATION", value_parser = parse_duration)]
    pub connection_idle_timeout: Option<Duration>,
    /// --admin-listen: close an HTTP/1.1 connection whose request header is
    /// not read in full within this, or that waits longer between requests
    /// (100ms..=5m) [default: 10s].
    #[arg(long, env = "WARDEN_SERVER_ADMIN_HEADER_READ_TIMEOUT", value_name = "DURATION", value_parser = parse_duration)]
    pub admin_header_read_timeout: Option<Duration>,
    /// Writes the table refuses that one principal may make per second
    /// (twice as many at once); past that the node refuses its writes
    /// outright with ResourceExhausted until it slows down (1..=1000000)
    /// [default: 100].
    #[arg(long, env = "WARDEN_SERVER_REFUSED_REQUESTS_PER_SEC", value_name = "N")]
    pub refused_requests_per_sec: Option<u32>,
    /// How log lines are written to stderr: `text` (one human-readable
    /// line each) or `json` (one JSON object a line: `timestamp`, `level`,
    /// `fields.message`, `target`, and the request's span: `method`,
    /// `principal`, `resource`, `client_id`, `request_id`) [default: text].
    /// `RUST_LOG` still sets the levels.
    #[arg(
        long,
        env = "WARDEN_SERVER_LOG_FORMAT",
        value_enum,
        value_name = "FORMAT"
    )]
    pub log_format: Option<LogFormat>,
    /// Stop (as on SIGTERM) when the parent process exits; `warden dev` sets it.
    #[arg(long, hide = true)]
    pub exit_with_parent: bool,
}

/// `--log-format`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, ValueEnum, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LogFormat {
    /// One human-readable line per event.
    #[default]
    Text,
    /// One JSON object per line (for a log shipper).
    Json,
}

/// `--initial-cluster-state`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum InitialClusterState {
    /// Form a new cluster even if some peers cannot be reached.
    New,
    /// Join or restart an existing cluster (the default).
    Existing,
}

/// `--timing` (and `timing` in the config file).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TimingPreset {
    /// One data centre or region (the default).
    Lan,
    /// Members spread over regions, peer round trips up to about 200 ms.
    Wan,
}

impl From<TimingPreset> for warden_server::TimingPreset {
    fn from(p: TimingPreset) -> Self {
        match p {
            TimingPreset::Lan => warden_server::TimingPreset::Lan,
            TimingPreset::Wan => warden_server::TimingPreset::Wan,
        }
    }
}

/// `warden dev`.
#[derive(Debug, Args)]
pub struct DevArgs {
    /// Number of nodes (1..=7) [default: 3, or what DIR/dev.toml says].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=7))]
    pub nodes: Option<u64>,
    /// Where the nodes' data, logs, dev.toml and certificates live.
    #[arg(long, value_name = "DIR", default_value = "./warden-dev")]
    pub data_dir: PathBuf,
    /// Start the nodes with --insecure: plaintext, no identities, anyone
    /// who reaches a port owns the cluster. By default the cluster is
    /// secure: a CA, node certificates and root's client certificate are
    /// minted under DIR (DIR/ca.key, DIR/certs) on the first run.
    #[arg(long)]
    pub insecure: bool,
    /// Where to write the client profile (the endpoints and the certs dir,
    /// read by client commands in any shell) [default:
    /// $XDG_CONFIG_HOME/warden/profile.toml, else
    /// ~/.config/warden/profile.toml]. A profile not written by `warden
    /// dev` is never replaced.
    #[arg(long, env = "WARDEN_PROFILE", value_name = "FILE")]
    pub profile: Option<PathBuf>,
}

/// Flags every client command takes.
#[derive(Debug, Args, Clone)]
pub struct ClientArgs {
    /// Cluster members to contact (any of them; the leader is followed).
    #[arg(
        long,
        env = "WARDEN_ENDPOINTS",
        value_name = "HOST:PORT,...",
        value_delimiter = ','
    )]
    pub endpoints: Vec<String>,
    #[command(flatten)]
    pub tls: TlsArgs,
    /// `json`: stdout carries exactly one JSON value; messages go to stderr.
    #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
    pub output: OutputFormat,
}

/// Who a client command is and how it reaches the cluster: mutual TLS with
/// `--certs-dir` as `--user`, or plaintext with `--insecure` for a cluster
/// started with `--insecure`. Exactly one of the two (flag or variable).
#[derive(Debug, Args, Clone, PartialEq, Eq)]
pub struct TlsArgs {
    /// Certs dir with ca.crt and client.USER.crt / client.USER.key (`warden
    /// cert create-client USER` makes them; `warden dev` prints the export
    /// line).
    #[arg(long, env = "WARDEN_CERTS_DIR", value_name = "DIR")]
    pub certs_dir: Option<PathBuf>,
    /// The principal to act as: its certificate client.NAME.crt in
    /// --certs-dir is presented (ignored with --insecure).
    #[arg(long, env = "WARDEN_USER", value_name = "NAME",
          default_value = warden_client::DEFAULT_USER)]
    pub user: String,
    /// Talk to a cluster started with --insecure: plaintext, no identity.
    /// `WARDEN_INSECURE=true` does the same.
    #[arg(long, env = "WARDEN_INSECURE")]
    pub insecure: bool,
    /// The client profile, read for the endpoints and the certs dir (or
    /// --insecure) when no flag or variable gives them [default:
    /// $XDG_CONFIG_HOME/warden/profile.toml, else
    /// ~/.config/warden/profile.toml; `warden dev` writes it].
    #[arg(long, env = "WARDEN_PROFILE", value_name = "FILE")]
    pub profile: Option<PathBuf>,
}

impl Default for TlsArgs {
    fn default() -> Self {
        TlsArgs {
            certs_dir: None,
            user: warden_client::DEFAULT_USER.to_string(),
            insecure: false,
            profile: None,
        }
    }
}

/// `--output`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OutputFormat {
    /// Readable text.
    Text,
    /// One JSON value on stdout.
    Json,
}

/// `warden acquire`: a new lease (`--ttl`) or an existing one (`--lease`),
/// exactly one of them (clap's error names both).
#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("lease_source").required(true).args(["ttl", "lease"])))]
pub struct AcquireArgs {
    /// The lock's name (1..=512 bytes of UTF-8, no control characters);
    /// several names take them all together as one multi-lock (1..=64
    /// distinct mutexes, granted in one entry with a token each, or none).
    #[arg(required = true, value_name = "RESOURCE")]
    pub resources: Vec<String>,
    /// TTL of a new lease (1s ..= 1h).
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub ttl: Option<Duration>,
    /// Wait this long in the queue if the resource is held (<= 1h; 0 = try once).
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, default_value = "0s")]
    pub wait: Duration,
    /// Hang the grant on this existing lease instead of a new one.
    #[arg(long, value_name = "LEASE_ID", value_parser = parse_id)]
    pub lease: Option<u64>,
    /// Lock-delay after an involuntary loss (expiry) (<= 1m).
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, default_value = "0s")]
    pub lock_delay: Duration,
    #[command(flatten)]
    pub kind: GrantKindArgs,
    /// End the grant no later than this after it is granted, however often
    /// its lease is renewed (1s ..= 24h; --wait must be shorter; not for
    /// several RESOURCEs).
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub max_hold: Option<Duration>,
    #[command(flatten)]
    pub client: ClientArgs,
}

/// Checks `--max-hold` against the server's bounds (1 s ..= 24 h) and
/// `wait` against it (a wait as long as the max-hold is refused), naming
/// the flag and the limit.
pub fn check_max_hold(max_hold: Option<Duration>, wait: Option<Duration>) -> Result<(), String> {
    use warden_core::limits::{MAX_MAX_HOLD_MS, MIN_MAX_HOLD_MS};
    let Some(max_hold) = max_hold else {
        return Ok(());
    };
    let ms = |d: Duration| u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
    let human = |ms: u64| humantime::format_duration(Duration::from_millis(ms)).to_string();
    let hold_ms = ms(max_hold);
    if !(MIN_MAX_HOLD_MS..=MAX_MAX_HOLD_MS).contains(&hold_ms) {
        return Err(format!(
            "--max-hold: {} is outside {}s ..= {}h",
            human(hold_ms),
            MIN_MAX_HOLD_MS / 1_000,
            MAX_MAX_HOLD_MS / 3_600_000
        ));
    }
    if let Some(wait) = wait.filter(|w| ms(*w) >= hold_ms) {
        return Err(format!(
            "--wait: {} is not shorter than --max-hold {} (a grant must not arrive already over its max-hold)",
            human(ms(wait)),
            human(hold_ms)
        ));
    }
    Ok(())
}

/// What kind of grant `warden acquire` and `warden exec` ask for: a mutex
/// unless one of these is given (docs/semantics.md, "Lock kinds").
#[derive(Debug, Clone, Copy, Default, Args)]
pub struct GrantKindArgs {
    /// Take one permit of a semaphore of N permits (1..=10000), as
    /// `consul lock -n N`: at most N holders at once. Every holder and
    /// waiter of the resource must give the same N.
    #[arg(long, value_name = "N", conflicts_with_all = ["shared", "exclusive"])]
    pub limit: Option<u32>,
    /// Take a read-write lock's shared (reader's) grant: beside other
    /// readers, never beside a writer.
    #[arg(long, conflicts_with = "exclusive")]
    pub shared: bool,
    /// Take a read-write lock's exclusive (writer's) grant (without
    /// --shared, --exclusive or --limit the resource is a plain mutex).
    #[arg(long)]
    pub exclusive: bool,
}

impl GrantKindArgs {
    /// The kind asked for, or an error naming `--limit` and its bounds.
    pub fn kind(&self) -> Result<warden_client::GrantKind, String> {
        use warden_client::GrantKind;
        match (self.limit, self.shared, self.exclusive) {
            (Some(limit), _, _) => {
                if limit == 0 || limit > warden_core::limits::MAX_SEMAPHORE_LIMIT {
                    return Err(format!(
                        "--limit: {limit} is outside 1..={} permits",
                        warden_core::limits::MAX_SEMAPHORE_LIMIT
                    ));
                }
                Ok(GrantKind::Permit { limit })
            }
            (None, true, _) => Ok(GrantKind::Shared),
            (None, false, true) => Ok(GrantKind::Exclusive),
            (None, false, false) => Ok(GrantKind::Mutex),
        }
    }
}

/// `warden renew`.
#[derive(Debug, Args)]
pub struct RenewArgs {
    /// The lease to renew.
    #[arg(value_parser = parse_id)]
    pub lease_id: u64,
    #[command(flatten)]
    pub client: ClientArgs,
}

/// `warden release LEASE_ID [RESOURCE]`, or `warden release --force RESOURCE`.
#[derive(Debug, Args)]
pub struct ReleaseArgs {
    /// The lease holding the lock.
    #[arg(value_parser = parse_id, required_unless_present = "force")]
    pub lease_id: Option<u64>,
    /// The resource to release; without it, the lease's single lock.
    pub resource: Option<String>,
    /// Admin: release RESOURCE whoever holds it (lock-delay applies; recorded
    /// in the audit trail). Needs admin on "" (an insecure server must run
    /// with --insecure --allow-admin).
    #[arg(long, value_name = "RESOURCE", conflicts_with_all = ["lease_id", "resource"])]
    pub force: Option<String>,
    /// Release only the grant with this fencing token.
    #[arg(long, value_name = "T", value_parser = parse_id)]
    pub token: Option<u64>,
    #[command(flatten)]
    pub client: ClientArgs,
}

/// `warden status`.
#[derive(Debug, Args)]
pub struct StatusArgs {
    /// The lock's name.
    pub resource: String,
    #[command(flatten)]
    pub client: ClientArgs,
}

/// `warden cluster`.
#[derive(Debug, Args)]
pub struct ClusterArgs {
    /// What to do.
    #[command(subcommand)]
    pub command: ClusterCommand,
}

/// `warden cluster ...`.
#[derive(Debug, Subcommand)]
pub enum ClusterCommand {
    /// Leader, term, members with their roles and indexes, timing and bounds.
    Status(ClusterStatusArgs),
    /// Add a node (started with --join) as a learner, then as a voter.
    AddNode(crate::cluster_cmd::AddNodeArgs),
    /// Remove a member (refused if the rest would have no reachable majority).
    RemoveNode(crate::cluster_cmd::RemoveNodeArgs),
    /// Swap a dead voter for a new node (started with --join) under a new id.
    ReplaceNode(crate::cluster_cmd::ReplaceNodeArgs),
    /// Show the cluster-wide limits and default quota, or set the ones given
    /// (needs admin).
    Limits(crate::role_cmd::LimitsArgs),
}

/// `warden cluster status`.
#[derive(Debug, Args)]
pub struct ClusterStatusArgs {
    #[command(flatten)]
    pub client: ClientArgs,
}

/// Every member of the cluster: id → `host:port`.
pub type Peers = BTreeMap<u64, String>;

/// Parses a duration such as `50ms`, `10s`, `1m 30s`. Durations are used in
/// whole milliseconds (u64), so a longer one is refused here, naming what
/// was typed: a later range check would echo a clamped value instead.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    if text == "0" {
        return Ok(Duration::ZERO);
    }
    let d = humantime::parse_duration(text)
        .map_err(|e| format!("{text:?} is not a duration ({e}); use e.g. 500ms, 10s, 1m"))?;
    if d.as_millis() > u128::from(u64::MAX) {
        return Err(format!(
            "{text:?} is too long a duration (more than {} ms)",
            u64::MAX
        ));
    }
    Ok(d)
}

/// Parses a lease id or fencing token: a whole number in 1..=2^53-1.
pub fn parse_id(text: &str) -> Result<u64, String> {
    match text.trim().parse::<u64>() {
        Ok(id) if (1..=warden_core::limits::MAX_ID).contains(&id) => Ok(id),
        _ => Err(format!(
            "{text:?} is not a whole number in 1..={}",
            warden_core::limits::MAX_ID
        )),
    }
}

/// Parses `--peers 1=HOST:PORT,2=HOST:PORT,...`.
pub fn parse_peers(text: &str) -> Result<Peers, String> {
    let mut peers = Peers::new();
    for entry in text.split(',').map(str::trim) {
        if entry.is_empty() {
            continue;
        }
        let Some((id, addr)) = entry.split_once('=') else {
            return Err(format!(
                "--peers: entry {entry:?} is not ID=HOST:PORT (e.g. 1=10.0.0.1:7001)"
            ));
        };
        let id = parse_peer_id(id.trim())?;
        insert_peer(&mut peers, id, addr)?;
    }
    if peers.is_empty() {
        return Err("--peers: no members given; expected ID=HOST:PORT,...".into());
    }
    Ok(peers)
}

/// Parses `--peer-addrs 1=HOST:PORT,...`: as [`parse_peers`], naming
/// `--peer-addrs`.
pub fn parse_peer_addrs(text: &str) -> Result<Peers, String> {
    parse_peers(text).map_err(|e| e.replacen("--peers", "--peer-addrs", 1))
}

/// Parses a member id: 1..=2^53-1.
pub fn parse_peer_id(text: &str) -> Result<u64, String> {
    match text.parse::<u64>() {
        Ok(0) => Err("--peers: node id 0 is not allowed; ids start at 1".into()),
        Ok(id) if id > warden_core::limits::MAX_ID => Err(format!(
            "--peers: node id {id} is above the limit {}",
            warden_core::limits::MAX_ID
        )),
        Ok(id) => Ok(id),
        Err(_) => Err(format!(
            "--peers: node id {text:?} is not a number (expected ID=HOST:PORT)"
        )),
    }
}

/// Adds one member, refusing duplicates and bad addresses.
pub fn insert_peer(peers: &mut Peers, id: u64, addr: &str) -> Result<(), String> {
    let addr = warden_client::parse_endpoint(addr)
        .map_err(|e| format!("--peers: address of node {id} ({addr:?}): {e}"))?;
    // One address for two members would make a node call itself as if it
    // were the other one; openraft's core panics on its own AppendEntries.
    if let Some((other, _)) = peers.iter().find(|(i, a)| **i != id && **a == addr) {
        return Err(format!(
            "--peers: address {addr} is given to node {other} and node {id}; each member needs its own"
        ));
    }
    if let Some(previous) = peers.insert(id, addr) {
        return Err(format!(
            "--peers: node id {id} appears twice (first as {previous})"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Cli, clap::Error> {
        Cli::try_parse_from(std::iter::once("warden").chain(args.iter().copied()))
    }

    // The clap definition is internally consistent (no conflicting names, valid defaults).
    #[test]
    fn cli_definition_is_valid() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
    }

    /// Every subcommand at any depth, with its path (`lease grant`).
    fn all_commands(cmd: &clap::Command, path: String, out: &mut Vec<(String, clap::Command)>) {
        for sub in cmd.get_subcommands() {
            let name = format!("{path} {}", sub.get_name()).trim().to_string();
            out.push((name.clone(), sub.clone()));
            all_commands(sub, name, out);
        }
    }

    // Every client command (one that takes --endpoints) takes --certs-dir,
    // --user and --insecure, with their variables, and the default user is
    // root; no other command takes --user or --insecure from the
    // environment (the server never reads --insecure from it).
    #[test]
    fn every_client_command_takes_the_tls_flags() {
        use clap::CommandFactory;
        let mut commands = Vec::new();
        all_commands(&Cli::command(), String::new(), &mut commands);
        let mut clients = 0;
        for (name, cmd) in &commands {
            let arg = |id: &str| cmd.get_arguments().find(|a| a.get_id() == id).cloned();
            if arg("endpoints").is_none() {
                assert!(
                    arg("insecure")
                        .and_then(|a| a.get_env().map(ToOwned::to_owned))
                        .is_none(),
                    "{name}: --insecure from the environment"
                );
                continue;
            }
            clients += 1;
            for (id, env) in [
                ("certs_dir", "WARDEN_CERTS_DIR"),
                ("user", "WARDEN_USER"),
                ("insecure", "WARDEN_INSECURE"),
            ] {
                let a = arg(id).unwrap_or_else(|| panic!("{name}: no --{id}"));
                assert_eq!(a.get_env().and_then(|e| e.to_str()), Some(env), "{name}");
            }
            let user = arg("user").unwrap();
            assert_eq!(user.get_default_values(), ["root"], "{name}");
        }
        // acquire renew release status validate cluster{status,add,remove,
        // replace} list audit lease{grant,keep-alive,revoke,ttl} watch exec
        // elect snapshot save demo-holder.
        assert!(clients >= 20, "only {clients} client commands found");
        let cli = parse(&[
            "status",
            "orders",
            "--certs-dir",
            "/c",
            "--user",
            "alice",
            "--endpoints",
            "a:1",
        ])
        .unwrap();
        let Command::Status(s) = cli.command else {
            panic!("not status")
        };
        assert_eq!(s.client.tls.certs_dir, Some(PathBuf::from("/c")));
        assert_eq!(s.client.tls.user, "alice");
        assert!(!s.client.tls.insecure);
        assert!(parse(&["exec", "r", "--insecure", "--", "true"]).is_ok());
    }

    // Bad input names the field: each malformed --peers entry says what is wrong.
    #[test]
    fn peers_parse_errors_name_the_field() {
        let ok = parse_peers("1=127.0.0.1:7001, 2=127.0.0.1:7002,3=node3:7003").unwrap();
        assert_eq!(ok.len(), 3);
        assert_eq!(ok[&3], "node3:7003");
        for (bad, needle) in [
            ("", "no members"),
            ("1:127.0.0.1:7001", "not ID=HOST:PORT"),
            ("0=127.0.0.1:7001", "id 0"),
            ("x=127.0.0.1:7001", "not a number"),
            ("1=a:1,1=b:2", "appears twice"),
            ("1=a:1,2=b:2,3=a:1", "given to node 1 and node 3"),
            ("1=nohost", "port"),
            ("1=h:70000", "1..=65535"),
            ("9007199254740992=h:1", "above the limit"),
        ] {
            let err = parse_peers(bad).unwrap_err();
            assert!(err.starts_with("--peers"), "{bad}: {err}");
            assert!(err.contains(needle), "{bad}: {err}");
        }
    }

    // Durations use humantime units; garbage is refused with an example.
    #[test]
    fn durations_parse_with_units() {
        assert_eq!(parse_duration("50ms").unwrap(), Duration::from_millis(50));
        assert_eq!(parse_duration("10s").unwrap(), Duration::from_secs(10));
        assert_eq!(parse_duration("1m 30s").unwrap(), Duration::from_secs(90));
        assert_eq!(parse_duration("0").unwrap(), Duration::ZERO);
        assert!(parse_duration("10").unwrap_err().contains("e.g. 500ms"));
        assert!(parse_duration("soon").is_err());
    }

    // Public bug: `--ttl 18446744073709551615s` was echoed clamped
    // ("584542046years ..."); the error now names what was typed.
    #[test]
    fn a_huge_duration_is_refused_with_the_text_typed() {
        let e = parse_duration("18446744073709551615s").unwrap_err();
        assert!(
            e.starts_with("\"18446744073709551615s\" is too long"),
            "{e}"
        );
        assert!(!e.contains("years"), "{e}");
        let e = parse(&["acquire", "r", "--ttl", "18446744073709551615s"])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("18446744073709551615s") && !e.contains("years"),
            "{e}"
        );
    }

    // The acquire surface: --ttl or --lease (exactly one), --wait defaults to a try-lock.
    #[test]
    fn acquire_needs_exactly_one_of_ttl_and_lease() {
        let cli = parse(&[
            "acquire",
            "orders",
            "--ttl",
            "10s",
            "--endpoints",
            "a:1,b:2",
        ])
        .unwrap();
        let Command::Acquire(a) = cli.command else {
            panic!("not acquire")
        };
        assert_eq!(a.ttl, Some(Duration::from_secs(10)));
        assert_eq!(a.wait, Duration::ZERO);
        assert_eq!(a.lock_delay, Duration::ZERO);
        assert_eq!(a.client.endpoints, vec!["a:1", "b:2"]);
        assert_eq!(a.client.output, OutputFormat::Text);
        // Neither: the error names both ways to give a lease.
        let neither = parse(&["acquire", "orders", "--endpoints", "a:1"])
            .unwrap_err()
            .to_string();
        assert!(
            neither.contains("--ttl") && neither.contains("--lease"),
            "{neither}"
        );
        assert!(parse(&["acquire", "orders", "--ttl", "1s", "--lease", "4"]).is_err());
        assert!(parse(&["acquire", "orders", "--lease", "4", "--output", "json"]).is_ok());
        assert!(parse(&["acquire", "orders", "--ttl", "ten"]).is_err());
    }

    // Lease ids and tokens are >= 1: 0 and negative numbers are refused by the parser.
    #[test]
    fn lease_ids_and_tokens_must_be_positive() {
        assert!(parse(&["renew", "0"]).is_err());
        assert!(parse(&["renew", "-3"]).is_err());
        assert!(parse(&["renew", "7"]).is_ok());
        assert!(parse(&["release", "7", "orders", "--token", "0"]).is_err());
        let cli = parse(&["release", "7", "orders", "--token", "12"]).unwrap();
        let Command::Release(r) = cli.command else {
            panic!("not release")
        };
        assert_eq!(
            (r.lease_id, r.resource.as_deref(), r.token),
            (Some(7), Some("orders"), Some(12))
        );
    }

    // The server surface: every timing flag takes a humantime duration.
    #[test]
    fn server_flags_parse() {
        let cli = parse(&[
            "server",
            "--id",
            "1",
            "--listen",
            "127.0.0.1:7001",
            "--peers",
            "1=127.0.0.1:7001,2=127.0.0.1:7002,3=127.0.0.1:7003",
            "--data-dir",
            "/tmp/w1",
            "--initial-cluster-state",
            "new",
            "--heartbeat",
            "20ms",
            "--snapshot-threshold",
            "20",
        ])
        .unwrap();
        let Command::Server(s) = cli.command else {
            panic!("not server")
        };
        assert_eq!(s.id, Some(1));
        assert_eq!(s.peers.as_ref().map(|p| p.len()), Some(3));
        assert_eq!(s.initial_cluster_state, Some(InitialClusterState::New));
        assert_eq!(s.heartbeat, Some(Duration::from_millis(20)));
        assert_eq!(s.snapshot_threshold, Some(20));
        let err = parse(&["server", "--peers", "1=a"])
            .unwrap_err()
            .to_string();
        assert!(err.contains("--peers"), "{err}");
    }

    // docs/operations.md "Latency between nodes": --timing takes `lan` or
    // `wan`; anything else is clap's error naming the flag and the values.
    #[test]
    fn server_timing_preset_parses() {
        let server = |extra: &[&str]| -> Result<ServerArgs, clap::Error> {
            let mut all = vec!["server", "--id", "1"];
            all.extend_from_slice(extra);
            parse(&all).map(|cli| match cli.command {
                Command::Server(s) => *s,
                _ => panic!("not server"),
            })
        };
        assert_eq!(server(&[]).unwrap().timing, None);
        assert_eq!(
            server(&["--timing", "wan"]).unwrap().timing,
            Some(TimingPreset::Wan)
        );
        assert_eq!(
            server(&["--timing", "lan"]).unwrap().timing,
            Some(TimingPreset::Lan)
        );
        let err = server(&["--timing", "moon"]).unwrap_err().to_string();
        assert!(err.contains("--timing"), "{err}");
        assert!(err.contains("lan") && err.contains("wan"), "{err}");
    }

    // docs/security.md "Insecure mode": --insecure and --certs-dir conflict
    // at the parser, and neither is read from the environment.
    #[test]
    fn server_security_flags_parse() {
        let base = ["server", "--id", "1"];
        let server = |extra: &[&str]| -> Result<ServerArgs, clap::Error> {
            let mut all = base.to_vec();
            all.extend_from_slice(extra);
            parse(&all).map(|cli| match cli.command {
                Command::Server(s) => *s,
                _ => panic!("not server"),
            })
        };
        let s = server(&["--certs-dir", "/etc/warden/certs"]).unwrap();
        assert_eq!(s.certs_dir, Some(PathBuf::from("/etc/warden/certs")));
        assert!(!s.insecure && !s.allow_admin);
        let s = server(&["--insecure", "--allow-admin"]).unwrap();
        assert!(s.insecure && s.allow_admin && s.certs_dir.is_none());
        let e = server(&["--insecure", "--certs-dir", "c"])
            .unwrap_err()
            .to_string();
        assert!(e.contains("--insecure") && e.contains("--certs-dir"), "{e}");
        use clap::CommandFactory;
        let cmd = Cli::command();
        let server_cmd = cmd.find_subcommand("server").expect("server");
        let arg = |id: &str| {
            server_cmd
                .get_arguments()
                .find(|a| a.get_id() == id)
                .expect(id)
        };
        for id in ["insecure", "allow_admin"] {
            assert_eq!(
                arg(id).get_env(),
                None,
                "{id} must not be read from the environment"
            );
        }
        // Never the CLI's WARDEN_CERTS_DIR: a server's variables have their own prefix.
        assert_eq!(
            arg("certs_dir").get_env(),
            Some(std::ffi::OsStr::new("WARDEN_SERVER_CERTS_DIR"))
        );
        for a in server_cmd.get_arguments() {
            if let Some(env) = a.get_env() {
                assert!(
                    env.to_string_lossy().starts_with("WARDEN_SERVER_"),
                    "{:?} reads {env:?}",
                    a.get_id()
                );
            }
        }
    }

    // Every `Examples:` line of a command's --help parses as written (so the
    // examples cannot drift from the flags).
    #[test]
    fn help_examples_parse() {
        use clap::Parser as _;
        let all = [
            ("server", examples::SERVER),
            ("dev", examples::DEV),
            ("acquire", examples::ACQUIRE),
            ("release", examples::RELEASE),
            ("status", examples::STATUS),
            ("list", examples::LIST),
            ("top", examples::TOP),
            ("exec", examples::EXEC),
            ("elect", examples::ELECT),
            ("cert", examples::CERT),
        ];
        let cmd = {
            use clap::CommandFactory;
            Cli::command()
        };
        let mut lines = 0;
        for (name, text) in all {
            // Each command shows its own examples, and they name it.
            let sub = cmd.find_subcommand(name).expect(name);
            assert_eq!(
                sub.get_after_help().map(|h| h.to_string()).as_deref(),
                Some(text),
                "{name}"
            );
            assert!(text.starts_with("Examples:\n"), "{text}");
            for line in text.lines().skip(1) {
                let words: Vec<&str> = line.split_whitespace().collect();
                assert_eq!(&words[..2], ["warden", name], "{line}");
                if let Err(e) = Cli::try_parse_from(&words) {
                    panic!("{line}: {e}");
                }
                lines += 1;
            }
        }
        assert!(lines >= 25, "{lines}");
        let help = {
            use clap::CommandFactory;
            let mut cmd = Cli::command();
            cmd.find_subcommand_mut("acquire")
                .expect("acquire")
                .render_long_help()
                .to_string()
        };
        assert!(
            help.contains("warden acquire orders --ttl 30s --wait 10s"),
            "{help}"
        );
    }

    // `warden cluster status` and `warden dev` parse; dev's node count is bounded.
    #[test]
    fn cluster_and_dev_parse() {
        assert!(parse(&["cluster", "status", "--output", "json"]).is_ok());
        assert!(parse(&["dev"]).is_ok());
        assert!(parse(&["dev", "--nodes", "0"]).is_err());
        assert!(parse(&["dev", "--nodes", "8"]).is_err());
        // Secure unless told: --insecure is a flag of its own.
        let Command::Dev(d) = parse(&["dev"]).unwrap().command else {
            panic!("not dev")
        };
        assert!(!d.insecure);
        let Command::Dev(d) = parse(&["dev", "--insecure"]).unwrap().command else {
            panic!("not dev")
        };
        assert!(d.insecure);
        let Command::Demo(DemoArgs {
            command: DemoCommand::SplitBrain(b),
        }) = parse(&["demo", "split-brain", "--insecure"])
            .unwrap()
            .command
        else {
            panic!("not demo split-brain")
        };
        assert!(b.insecure);
    }

    // The fencing surface: validate takes a positive token; fenced-store needs a data dir.
    #[test]
    fn validate_fenced_store_and_demo_parse() {
        let cli = parse(&["validate", "orders", "12", "--output", "json"]).unwrap();
        let Command::Validate(v) = cli.command else {
            panic!("not validate")
        };
        assert_eq!((v.resource.as_str(), v.token), ("orders", 12));
        assert!(parse(&["validate", "orders", "0"]).is_err());
        assert!(parse(&["fenced-store", "--listen", "127.0.0.1:0"]).is_err());
        let cli = parse(&[
            "fenced-store",
            "--listen",
            "127.0.0.1:0",
            "--data-dir",
            "/d",
        ])
        .unwrap();
        let Command::FencedStore(f) = cli.command else {
            panic!("not fenced-store")
        };
        assert_eq!(f.listen, "127.0.0.1:0");
        assert!(!f.insecure);
        assert!(parse(&["demo", "split-brain"]).is_ok());
    }

    // The cert surface: each subcommand's required flags, hosts as
    // positional arguments, node ids and lifetimes checked by the parser.
    #[test]
    fn cert_commands_parse() {
        use crate::cert_cmd::CertCommand;
        let cert = |args: &[&str]| -> Result<CertCommand, clap::Error> {
            let mut all = vec!["cert"];
            all.extend_from_slice(args);
            parse(&all).map(|cli| match cli.command {
                Command::Cert(c) => c.command,
                _ => panic!("not cert"),
            })
        };
        let CertCommand::CreateCa(ca) = cert(&[
            "create-ca",
            "--certs-dir",
            "certs",
            "--ca-key",
            "safe/ca.key",
            "--overwrite",
            "--lifetime",
            "10y",
        ])
        .unwrap() else {
            panic!("not create-ca")
        };
        assert_eq!(ca.dir.certs_dir, PathBuf::from("certs"));
        assert_eq!(ca.sign.ca_key, PathBuf::from("safe/ca.key"));
        assert!(ca.sign.overwrite);
        assert_eq!(ca.sign.lifetime, Some(Duration::from_secs(315_576_000)));
        assert_eq!(ca.dir.output, OutputFormat::Text);
        assert!(cert(&["create-ca", "--certs-dir", "certs"]).is_err());
        assert!(cert(&[
            "create-ca",
            "--certs-dir",
            "c",
            "--ca-key",
            "k",
            "--lifetime",
            "0s"
        ])
        .is_err());
        assert!(cert(&[
            "create-ca",
            "--certs-dir",
            "c",
            "--ca-key",
            "k",
            "--lifetime",
            "forever"
        ])
        .is_err());

        let CertCommand::CreateNode(node) = cert(&[
            "create-node",
            "--certs-dir",
            "c",
            "--ca-key",
            "k",
            "--id",
            "3",
            "10.0.0.3",
            "node3.example.com",
            "--output",
            "json",
        ])
        .unwrap() else {
            panic!("not create-node")
        };
        assert_eq!(node.id, 3);
        assert_eq!(node.hosts, ["10.0.0.3", "node3.example.com"]);
        assert_eq!(node.dir.output, OutputFormat::Json);
        assert!(!node.sign.overwrite && node.sign.lifetime.is_none());
        assert!(cert(&[
            "create-node",
            "--certs-dir",
            "c",
            "--ca-key",
            "k",
            "--id",
            "3"
        ])
        .is_err());
        let e = cert(&[
            "create-node",
            "--certs-dir",
            "c",
            "--ca-key",
            "k",
            "--id",
            "0",
            "h",
        ])
        .unwrap_err()
        .to_string();
        assert!(e.contains("not a node id in 1..=9007199254740991"), "{e}");

        let CertCommand::CreateClient(client) = cert(&[
            "create-client",
            "alice",
            "--certs-dir",
            "c",
            "--ca-key",
            "k",
        ])
        .unwrap() else {
            panic!("not create-client")
        };
        assert_eq!(client.name, "alice");
        assert!(cert(&["create-client", "--certs-dir", "c", "--ca-key", "k"]).is_err());

        let CertCommand::List(list) =
            cert(&["list", "--certs-dir", "c", "--output", "json"]).unwrap()
        else {
            panic!("not list")
        };
        assert_eq!(list.dir.output, OutputFormat::Json);
    }
}
