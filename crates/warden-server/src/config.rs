//! Node configuration: identity, addresses, data directory and timing.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;

/// Everything a node needs to start.
#[derive(Clone, Debug)]
pub struct ServerConfig {
    /// This node's id (>= 1), unique in the cluster.
    pub node_id: u64,
    /// Address to listen on for clients; serves the peer (Raft) service too
    /// unless [`ServerConfig::peer_listen`] is given.
    pub listen: SocketAddr,
    /// `--peer-listen`: serve the peer service here, and only here (the
    /// client port then refuses peer calls as `Unimplemented`, and this port
    /// serves no client service), so a firewall can keep clients away from
    /// it (docs/security.md "The peer service"). Must differ from `listen`
    /// and `admin_listen`; this node's entry in [`ServerConfig::peer_addrs`]
    /// is where its peers reach it. None: `listen` serves both.
    pub peer_listen: Option<SocketAddr>,
    /// Every member's client address, this node included: id → "host:port".
    /// What a new cluster's membership holds, what leader hints name, and
    /// where a member without a [`ServerConfig::peer_addrs`] entry is dialed.
    pub peers: BTreeMap<u64, String>,
    /// `--peer-addrs`: the peer address of each member that serves its peer
    /// service apart (`--peer-listen`): id → "host:port"; a subset of
    /// `peers`' ids. This node has an entry exactly when it has
    /// `peer_listen`. Empty by default (every member serves both on one
    /// port).
    pub peer_addrs: BTreeMap<u64, String>,
    /// Where the Raft log, vote, snapshots and cluster id live.
    pub data_dir: PathBuf,
    /// Form a new cluster even if some peers cannot be reached
    /// (`--initial-cluster-state new`).
    pub initial_cluster_state_new: bool,
    /// Timing parameters.
    pub timing: Timing,
    /// Insecure mode only (`--insecure --allow-admin`): allow admin calls
    /// (force release, membership changes, snapshot save) from anonymous
    /// callers; refused with PermissionDenied otherwise. Default false. A
    /// node with [`ServerConfig::certs_dir`] refuses to start with it: there
    /// the caller's `admin` permission decides (docs/security.md).
    pub allow_admin: bool,
    /// Largest request a public service decodes, in bytes
    /// (`--max-request-bytes`, default [`DEFAULT_MAX_REQUEST_BYTES`]); a larger
    /// one is refused by tonic with OutOfRange ("decoded message length too
    /// large") before it reaches any handler.
    pub max_request_bytes: usize,
    /// Token floor (`--token-floor`, default 0 = none): the node that forms a
    /// new cluster commits `RaiseTokenFloor` before serving clients, so every
    /// token is above it (docs/semantics.md "Membership and data loss"). Only applied
    /// at cluster formation; ignored by a node whose cluster already exists.
    pub token_floor: u64,
    /// `--join`: with an empty data dir, do not take part in forming a
    /// cluster; wait until the cluster's leader adds this node (`warden
    /// cluster add-node` / `replace-node`) and hands it the cluster id. A node
    /// id that is already a member refuses to start ("lost its data").
    /// Ignored once the data dir holds a cluster id.
    pub join: bool,
    /// `--admin-listen`: serve `/healthz` and `/readyz` over HTTP here
    /// (none by default).
    pub admin_listen: Option<SocketAddr>,
    /// `--certs-dir`: the node's certificates (`ca.crt`, `node.crt`,
    /// `node.key`, read by `warden_tls::NodeTls::load` and again on SIGHUP);
    /// every client and peer connection is TLS 1.3, client calls carry the
    /// principal of the caller's certificate and the peer service admits
    /// node certificates only (docs/security.md).
    ///
    /// None: an **insecure** node (`warden server --insecure`): plaintext,
    /// every caller anonymous, a warning at start and `insecure` in
    /// `cluster status`. There is no separate `insecure` field: `None` is
    /// the insecure mode, and the binary refuses to build a config without
    /// `--certs-dir` unless `--insecure` was given.
    pub certs_dir: Option<PathBuf>,
    /// `--metrics-groups`: the resource prefixes that name the `group`
    /// label of the lock-side metrics (`crate::metrics::groups`: longest
    /// match; none matched: `other`; elections: `election`). Checked at
    /// start; the same list on every node gives the same labels.
    pub metrics_groups: Vec<String>,
    /// Connection and handshake limits of every listener (client port,
    /// `--peer-listen`, `--admin-listen`): docs/security.md "Connection
    /// limits". Checked at start ([`ConnLimits::validate`]).
    pub conn_limits: ConnLimits,
}

/// Connection and handshake limits, the same for each of the node's
/// listeners (each counts its own). The handshake and connection limits
/// ([`warden_tls::AcceptOptions`]) apply to TLS listeners; an insecure
/// node's listeners keep only the back-off on accept errors, which every
/// accept loop has.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConnLimits {
    /// Handshake deadline, pending handshakes in all and per source,
    /// connections in all and per principal, idle timeout.
    pub accept: warden_tls::AcceptOptions,
    /// `--admin-header-read-timeout`: an HTTP/1.1 request on the admin
    /// port whose header has not been read in full by then closes its
    /// connection; also how long an HTTP/1.1 connection may wait between
    /// requests ([`ADMIN_HEADER_READ_TIMEOUT`]).
    pub admin_header_read_timeout: std::time::Duration,
    /// `--refused-requests-per-sec`: writes the table refuses that one
    /// principal may make per second (twice as many at once) before the
    /// node refuses its writes outright (`crate::node::refusals`).
    pub refused_requests_per_sec: u32,
}

impl Default for ConnLimits {
    fn default() -> Self {
        ConnLimits {
            accept: warden_tls::AcceptOptions::default(),
            admin_header_read_timeout: ADMIN_HEADER_READ_TIMEOUT,
            refused_requests_per_sec: REFUSED_REQUESTS_PER_SEC,
        }
    }
}

/// Default [`ConnLimits::refused_requests_per_sec`]: 100.
pub const REFUSED_REQUESTS_PER_SEC: u32 = 100;
/// Bounds of [`ConnLimits::refused_requests_per_sec`]: 1 ..= 1,000,000.
pub const REFUSED_REQUESTS_PER_SEC_RANGE: (u32, u32) = (1, 1_000_000);

/// Default [`ConnLimits::admin_header_read_timeout`]: 10 s (hyper's own
/// default is 30 s, and only with a timer, which axum's `serve` does not
/// set).
pub const ADMIN_HEADER_READ_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);
/// Bounds of [`ConnLimits::admin_header_read_timeout`]: 100 ms ..= 5 min.
pub const ADMIN_HEADER_READ_TIMEOUT_RANGE: (std::time::Duration, std::time::Duration) = (
    std::time::Duration::from_millis(100),
    std::time::Duration::from_secs(300),
);

impl ConnLimits {
    /// Checks every limit against its bounds: the error names the field
    /// (as its flag, without `--`), the value and the bounds.
    pub fn validate(&self) -> Result<(), warden_tls::LimitError> {
        self.accept.validate()?;
        let value = self.admin_header_read_timeout;
        let (min, max) = ADMIN_HEADER_READ_TIMEOUT_RANGE;
        if value < min || value > max {
            return Err(warden_tls::LimitError::Duration {
                field: "admin-header-read-timeout",
                value,
                min,
                max,
            });
        }
        let (min, max) = REFUSED_REQUESTS_PER_SEC_RANGE;
        if !(min..=max).contains(&self.refused_requests_per_sec) {
            return Err(warden_tls::LimitError::Count {
                field: "refused-requests-per-sec",
                value: self.refused_requests_per_sec as usize,
                min: min as usize,
                max: max as usize,
            });
        }
        Ok(())
    }
}

impl ServerConfig {
    /// Where this node dials member `id`'s peer service: its `peer_addrs`
    /// entry, else its `peers` address; None for an id in neither.
    pub fn peer_dial_addr(&self, id: u64) -> Option<&str> {
        self.peer_addrs
            .get(&id)
            .or_else(|| self.peers.get(&id))
            .map(String::as_str)
    }
}

/// Default `--max-request-bytes`: 64 KiB (a resource name is at most 512 bytes).
pub const DEFAULT_MAX_REQUEST_BYTES: usize = 64 * 1024;
/// Bounds of `--max-request-bytes`: 1 KiB ..= 4 MiB.
pub const MAX_REQUEST_BYTES_RANGE: (usize, usize) =
    (warden_proto::SMALLEST_MAX_REQUEST_BYTES, 4 * 1024 * 1024);

/// `--timing`: the named set of timing defaults a node starts from; each
/// explicit timing flag (`--heartbeat`, `--election-timeout-min`, ...)
/// then overrides its own field (docs/operations.md, "Latency between
/// nodes").
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum TimingPreset {
    /// One data centre or region, peer round trips up to about 10 ms
    /// (writes commit up to about 100 ms): [`Timing::default`].
    #[default]
    Lan,
    /// Members spread over regions, peer round trips up to about 200 ms:
    /// [`Timing::wan`].
    Wan,
}

impl TimingPreset {
    /// Its `--timing` name: `lan` or `wan`.
    pub fn name(self) -> &'static str {
        match self {
            TimingPreset::Lan => "lan",
            TimingPreset::Wan => "wan",
        }
    }

    /// Its timing, before any explicit flag.
    pub fn timing(self) -> Timing {
        match self {
            TimingPreset::Lan => Timing::default(),
            TimingPreset::Wan => Timing::wan(),
        }
    }
}

/// The call floor for a minimum election timeout of
/// `election_timeout_min_ms`: half of it, in ms (the rule of
/// `crate::raft::network::call_timeout_floor`, which explains it).
pub const fn call_timeout_floor_ms(election_timeout_min_ms: u64) -> u64 {
    election_timeout_min_ms / 2
}

/// Timing parameters and their defaults (documented in docs/operations.md).
/// The defaults listed per field are the `lan` preset's; [`Timing::wan`]
/// gives the `wan` preset's.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Timing {
    /// The preset these values started from (`--timing`, default `lan`);
    /// reported by `cluster status` beside the effective values, which
    /// explicit flags may have changed.
    pub preset: TimingPreset,
    /// Raft heartbeat interval: 50 ms.
    pub heartbeat_ms: u64,
    /// Raft election timeout, lower bound: 250 ms.
    pub election_timeout_min_ms: u64,
    /// Raft election timeout, upper bound: 500 ms.
    pub election_timeout_max_ms: u64,
    /// Grace a new leader gives each lease once (G, docs/semantics.md L4): 1 s.
    pub promotion_grace_ms: u64,
    /// Window in which renewals are collected into one entry: 10 ms. Each
    /// entry costs the leader an fsync group and a round of AppendEntries;
    /// at 10,000 keep-alives a second, 2 ms kept the leader at ~51 % of a
    /// core and 10 ms at ~34 % (docs/performance.md, "Sessions"), for ~8 ms
    /// more per renew acknowledgement. Not part of E: the countdown restarts
    /// at the entry's stamp, after the window, so a client's view (counted
    /// from its send time) only gets more conservative (S5).
    pub renew_batch_window_ms: u64,
    /// Take a snapshot after this many entries since the last one, once the
    /// log has also grown by the last snapshot's size in bytes
    /// (`raft::snapshot_schedule`): 10,000.
    pub snapshot_threshold: u64,
    /// Longest a SIGTERM'd leader waits for leadership transfer: 2 s.
    pub leader_transfer_timeout_ms: u64,
    /// Period of the leader's duty loop (expiry, timeouts): 50 ms.
    pub duty_interval_ms: u64,
    /// HTTP/2 keep-alive of every accepted connection (clients' and
    /// peers'): a connection on which nothing was read for this long gets a
    /// PING (`--grpc-keepalive-interval`, 5 s). Without it a client that
    /// vanished silently (host dead, network black-holed) kept its
    /// connection, its `Calls` stream's task and its queued waiters' follow
    /// tasks until TCP gave up, minutes later. etcd's default is 2 h, made
    /// for clients that hold nothing; here what a vanished client holds
    /// expires with its lease within seconds (L1), so its connection should
    /// not outlive that by much. The lease, not the connection, frees the
    /// lock, and a closed connection cancels no waiter (S8), so the value
    /// only bounds what the node keeps for the dead. Cheap: a busy
    /// connection is never pinged (hyper pings only after `interval` with
    /// nothing read), an idle one costs a 17-byte PING and its ACK per
    /// interval. The warden client pings every second itself, so its
    /// connections are never idle here; a peer's idle connection (the
    /// replication stream of an idle cluster) is pinged and answered by the
    /// live peer's HTTP/2 layer without involving openraft, so replication
    /// is not disturbed.
    pub grpc_keepalive_interval_ms: u64,
    /// How long a keep-alive PING may go unanswered before the node closes
    /// the connection (`--grpc-keepalive-timeout`, 5 s; etcd's default is
    /// 20 s). A silent client is gone within interval + timeout = 10 s of
    /// its last frame. An ACK is sent by the peer's HTTP/2 connection task,
    /// not its application, so only a dead or frozen process (or network)
    /// misses 5 s; such a client reconnects and re-attaches its calls with
    /// the same request ids (S7, S8).
    pub grpc_keepalive_timeout_ms: u64,
}

/// Bounds of `--grpc-keepalive-interval`, in ms: 100 ms ..= 2 h (etcd's
/// default, the laxest that makes sense).
pub const GRPC_KEEPALIVE_INTERVAL_MS_RANGE: (u64, u64) = (100, 2 * 60 * 60 * 1_000);
/// Bounds of `--grpc-keepalive-timeout`, in ms: 100 ms ..= 10 min.
pub const GRPC_KEEPALIVE_TIMEOUT_MS_RANGE: (u64, u64) = (100, 10 * 60 * 1_000);

/// The `lan` preset's (the default) heartbeat, in ms.
pub const LAN_HEARTBEAT_MS: u64 = 50;

impl Default for Timing {
    fn default() -> Self {
        Timing {
            preset: TimingPreset::Lan,
            heartbeat_ms: LAN_HEARTBEAT_MS,
            election_timeout_min_ms: 250,
            election_timeout_max_ms: 500,
            promotion_grace_ms: 1_000,
            renew_batch_window_ms: 10,
            snapshot_threshold: 10_000,
            leader_transfer_timeout_ms: 2_000,
            duty_interval_ms: 50,
            grpc_keepalive_interval_ms: 5_000,
            grpc_keepalive_timeout_ms: 5_000,
        }
    }
}

impl Timing {
    /// The `wan` preset: for members spread over regions, with peer round
    /// trips up to about 200 ms. Only the fields that depend on the round
    /// trip differ from [`Timing::default`]:
    ///
    /// - heartbeat 250 ms: above the worst round trip, since openraft gives
    ///   up on a heartbeat after one interval and a linearizable read is
    ///   confirmed by an answered heartbeat round (docs/operations.md,
    ///   "Latency between nodes"); 50 ms of headroom for the peer's
    ///   scheduling and TLS.
    /// - election timeout 1–2 s: four heartbeat intervals at the least, as
    ///   the `lan` preset's five (a follower does not stand for election
    ///   after a few late heartbeats); the call floor (half the minimum,
    ///   500 ms, [`Timing::call_timeout_floor_ms`]) is 2.5 × the worst
    ///   round trip, room for an append's fsync on the follower and a
    ///   retransmitted TCP segment; a vote's round trip fits in the 1 s
    ///   openraft allows it.
    /// - promotion grace (G) 2 s: G covers the client's retry path to the
    ///   new leader (docs/semantics.md L4); across regions a renew takes a
    ///   client round trip to the leader plus a commit round trip to a
    ///   quorum, up to about 400 ms, so the `lan` preset's 1 s (two 500 ms
    ///   attempts) leaves no room for the first failed attempt.
    ///
    /// E is then 2 s + 2 s + 50 ms + 250 ms = 4.3 s. The renew batch
    /// window, duty period and keep-alives do not depend on the round trip
    /// and keep their `lan` values.
    pub fn wan() -> Self {
        Timing {
            preset: TimingPreset::Wan,
            heartbeat_ms: 250,
            election_timeout_min_ms: 1_000,
            election_timeout_max_ms: 2_000,
            promotion_grace_ms: 2_000,
            ..Timing::default()
        }
    }

    /// The shortest per-call timeout of a peer call, in ms: half the
    /// minimum election timeout (125 ms with `lan`, 500 ms with `wan`;
    /// `crate::raft::network::call_timeout_floor` explains the choice).
    pub fn call_timeout_floor_ms(&self) -> u64 {
        call_timeout_floor_ms(self.election_timeout_min_ms)
    }

    /// E: the most a lease may outlive its TTL in cluster time before it
    /// is ended and its locks handed on (docs/semantics.md "E, term by
    /// term"): one promotion grace G (a new leader's promote), one election
    /// timeout (no entry is applied while there is no leader), one duty
    /// period (the leader ticks when the earliest instant is due) and one
    /// heartbeat (the tick's commit round trip).
    pub fn bound_e_ms(&self) -> u64 {
        self.promotion_grace_ms
            + self.election_timeout_max_ms
            + self.duty_interval_ms
            + self.heartbeat_ms
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // docs/operations.md "Latency between nodes": the `wan` preset puts the
    // heartbeat above a 200 ms round trip, the call floor at 2.5 × it, and
    // E and G follow from its values (docs/semantics.md "E, term by term").
    #[test]
    fn wan_preset_values_and_derived_bounds() {
        let wan = TimingPreset::Wan.timing();
        assert_eq!(wan.preset, TimingPreset::Wan);
        assert_eq!(wan.heartbeat_ms, 250);
        assert_eq!(
            (wan.election_timeout_min_ms, wan.election_timeout_max_ms),
            (1_000, 2_000)
        );
        assert_eq!(wan.call_timeout_floor_ms(), 500);
        assert_eq!(wan.promotion_grace_ms, 2_000);
        assert_eq!(wan.bound_e_ms(), 4_300);
        // What does not depend on the round trip stays as in `lan`.
        let lan = TimingPreset::Lan.timing();
        assert_eq!(lan, Timing::default());
        assert_eq!(wan.renew_batch_window_ms, lan.renew_batch_window_ms);
        assert_eq!(wan.duty_interval_ms, lan.duty_interval_ms);
        assert_eq!(lan.call_timeout_floor_ms(), 125);
        assert_eq!(lan.bound_e_ms(), 1_600);
        assert_eq!((lan.preset.name(), wan.preset.name()), ("lan", "wan"));
    }
}
