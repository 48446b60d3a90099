//! Starting a node: checking its configuration, loading its certificates
//! (TLS) or warning that it is insecure, opening its data dir, serving peers
//! and clients from the start (bootstrap needs the peer service),
//! bootstrapping the cluster id, starting Raft, the node and its background
//! tasks (SIGHUP reloads the certificates), and the orderly stop.
//!
//! # TLS or insecure
//!
//! With `certs_dir` ([`serve_tcp`]) the node loads its certs dir once
//! (`warden_tls::NodeTls::load`: a missing, unreadable or mismatched file
//! refuses the start, naming the file), accepts only TLS 1.3 connections
//! (`ServerTls::incoming`: every request then carries the caller's verified
//! `PeerInfo`), dials its peers with its node certificate
//! ([`TlsPeerConnector`]), serves `--admin-listen` over TLS, and re-reads
//! the certs dir on SIGHUP. A TLS node never serves a plaintext connection,
//! which is what lets `services::principal` read a request without a
//! `PeerInfo` as one to an insecure node. Without `certs_dir` the node is
//! insecure: plaintext, every caller anonymous, a warning at start.
//!
//! # One port or two
//!
//! Without `peer_listen` the client port serves the peer service too. With
//! it ([`ServerConfig::peer_listen`]) a second server on that port serves
//! the peer service (behind the same gate) and nothing else, and the client
//! port's server has no peer route: a peer call there is `Unimplemented`.
//! Both take the same kind of connection (TLS with `certs_dir`).
//!
//! The simulator's nodes are a third case: plaintext (`run_injected`) with
//! `Injected::identities` set, they authorize as a secure node does (every
//! request's principal is the injected identity of its connection,
//! `services::injected`; the log-format gate as [`LogFormats::secure`]).
//! [`serve_tcp`], the production path, drops any source, and a node with
//! certificates never installs one.
//!
//! [`LogFormats::secure`]: crate::raft::log_format::LogFormats::secure

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use openraft::SnapshotPolicy;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpListener;
use tokio::sync::{mpsc, watch};
use tokio_stream::Stream;
use tonic::transport::server::Connected;

use crate::clock::NodeClock;
use crate::config::{self, ServerConfig};
use crate::inject::Injected;
use crate::node::{self, Node, NodeCell, NodeParts};
use crate::raft::network::{Network, TlsPeerConnector, MAX_PEER_MESSAGE_BYTES};
use crate::raft::peer_access::{
    follow_members, PeerAccess, PeerGate, RemovedNodes, MAX_PEER_CONTROL_MESSAGE_BYTES,
};
use crate::raft::peer_service::{PeerService, PeerState};
use crate::raft::snapshot_chunks::MAX_SNAPSHOT_CHUNK_MESSAGE_BYTES;
use crate::store::{self, Db, LogStore, StateMachineStore};
use crate::{raft, services, types, ServerError};
use warden_proto::peer::peer_server::PeerServer;

/// Accepted connections with TCP_NODELAY (clients' and peers'): with Nagle
/// on, a reply written in two segments waits for the peer's delayed ACK (up
/// to 40 ms on Linux). `serve_with_incoming` ignores the builder's
/// `tcp_nodelay`, so it is set on the listener here (docs/performance.md).
/// Read through `AcceptBackoff`: tonic's accept loop goes straight on after
/// an accept error, so at the open-file limit it would spin on `EMFILE`.
pub(crate) fn nodelay_incoming(
    listener: TcpListener,
) -> warden_tls::AcceptBackoff<tonic::transport::server::TcpIncoming> {
    warden_tls::AcceptBackoff::new(
        tonic::transport::server::TcpIncoming::from(listener).with_nodelay(Some(true)),
    )
}

/// The HTTP/2 receive window of each stream the node serves: 32 KiB (the
/// protocol's default is 64 KiB, hyper's 1 MiB).
///
/// A client that sends faster than the node reads (a `Calls` stream past
/// `MAX_CALLS_IN_PROGRESS`, or one whose answers it does not read) is
/// paused by flow control once this much is unread. The window is bounded
/// by h2's budget for buffered small DATA frames: each unread frame of
/// under 256 bytes that does not end its stream counts 256 minus its size
/// against a budget of half the connection window
/// ([`CONNECTION_WINDOW_BYTES`]), and running out closes the whole
/// connection with GOAWAY `ENHANCE_YOUR_CALM` "too_many_data_frames"
/// instead of pausing it (h2 0.4.20, `Counts::record_data_frame`). With
/// hyper's 1 MiB that came after about 3,000 pipelined acquires on one
/// stream; with 64 KiB and a 4 MiB connection window, once a few dozen
/// streams of one connection stalled (the flow-control tests below). [`BUFFERED_FRAME_BUDGET`]
/// checks that [`MAX_STREAMS_PER_CONNECTION`] stalled streams of the
/// smallest messages Warden's clients send fit the budget.
pub(crate) const STREAM_WINDOW_BYTES: u32 = 32 * 1024;

/// The most streams one client connection may have open at once: 128
/// (announced as SETTINGS_MAX_CONCURRENT_STREAMS; tonic announces no limit
/// unless told). gRPC clients queue further calls until one ends. With
/// [`STREAM_WINDOW_BYTES`] it bounds what one connection can leave unread
/// in the node: 128 × 32 KiB = 4 MiB.
pub(crate) const MAX_STREAMS_PER_CONNECTION: u32 = 128;

/// The HTTP/2 receive window of each connection the node serves: 256 MiB.
/// Not memory: the streams' windows bound what is buffered (4 MiB, see
/// [`MAX_STREAMS_PER_CONNECTION`]); it sets h2's budget for buffered small
/// DATA frames (half of it, [`BUFFERED_FRAME_BUDGET`]).
pub(crate) const CONNECTION_WINDOW_BYTES: u32 = 256 * 1024 * 1024;

/// h2's budget for buffered small DATA frames on one connection: half of
/// [`CONNECTION_WINDOW_BYTES`] (h2 0.4.20 `DataFrameBudget::Auto`).
pub(crate) const BUFFERED_FRAME_BUDGET: u64 = CONNECTION_WINDOW_BYTES as u64 / 2;

/// The smallest message Warden's clients send on a stream that stays open,
/// in bytes on the wire: a gRPC frame's 5-byte prefix and a 4-byte body.
const SMALLEST_CLIENT_MESSAGE_BYTES: u64 = 9;

/// What h2 counts against [`BUFFERED_FRAME_BUDGET`] when every stream a
/// connection may open holds a full window of the smallest messages, each
/// in a DATA frame of its own.
const WORST_BUFFERED_FRAME_CHARGE: u64 = MAX_STREAMS_PER_CONNECTION as u64
    * (STREAM_WINDOW_BYTES as u64 / SMALLEST_CLIENT_MESSAGE_BYTES)
    * (256 - SMALLEST_CLIENT_MESSAGE_BYTES);

// Stalled streams are paused by flow control, never GOAWAY: the worst
// charge fits the budget, and the connection window is no limit on what
// the streams' windows let through.
const _: () = assert!(WORST_BUFFERED_FRAME_CHARGE <= BUFFERED_FRAME_BUDGET);
const _: () = assert!(
    MAX_STREAMS_PER_CONNECTION as u64 * STREAM_WINDOW_BYTES as u64
        <= CONNECTION_WINDOW_BYTES as u64
);

/// The HTTP/2 receive windows of a peer port of its own (`--peer-listen`):
/// 1 MiB per stream ([`CONNECTION_WINDOW_BYTES`] per connection, as on the
/// client port). Peers send few, large messages
/// (entry batches, snapshot chunks of 1 MiB), and a stream moves at most one window
/// per round trip: at 20 ms between nodes, 64 KiB a round trip made an
/// 8 MiB request take 3.1 s against 0.26 s with 1 MiB (one run of a
/// throw-away test, both windows side by side through a proxy delaying each
/// direction 10 ms), too slow to catch a follower up. Only node
/// certificates may call that port, so the small-frame budget that
/// [`STREAM_WINDOW_BYTES`] guards against is no client's to spend.
pub(crate) const PEER_STREAM_WINDOW_BYTES: u32 = 1024 * 1024;

/// The gRPC server's HTTP/2 settings, for the client port and (with
/// [`PEER_STREAM_WINDOW_BYTES`] instead) a peer port of its own: keep-alive
/// pings (a client that vanished silently loses its connection,
/// `Timing::grpc_keepalive_interval_ms`), the receive windows
/// ([`STREAM_WINDOW_BYTES`], [`CONNECTION_WINDOW_BYTES`]) and the streams
/// per connection ([`MAX_STREAMS_PER_CONNECTION`]).
pub(crate) fn http2_server(timing: &crate::config::Timing) -> tonic::transport::Server {
    tonic::transport::Server::builder()
        .http2_keepalive_interval(Some(Duration::from_millis(
            timing.grpc_keepalive_interval_ms,
        )))
        .http2_keepalive_timeout(Some(Duration::from_millis(
            timing.grpc_keepalive_timeout_ms,
        )))
        .initial_stream_window_size(STREAM_WINDOW_BYTES)
        .initial_connection_window_size(CONNECTION_WINDOW_BYTES)
        .max_concurrent_streams(MAX_STREAMS_PER_CONNECTION)
}

/// Serves `listener`: TLS with `config.certs_dir` (see the module docs),
/// plaintext without.
pub(crate) async fn serve_tcp(
    config: ServerConfig,
    listener: TcpListener,
    mut injected: Injected,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), ServerError> {
    // Injected identities are the simulator's (on `run_injected`); a real
    // listener's callers are identified by TLS or not at all.
    injected.identities = None;
    validate_config(&config)?;
    let peer_listener =
        match config.peer_listen {
            Some(addr) => Some(TcpListener::bind(addr).await.map_err(|e| {
                ServerError::Config(format!("peer-listen: cannot bind {addr}: {e}"))
            })?),
            None => None,
        };
    let Some(dir) = config.certs_dir.clone() else {
        let peer_incoming = peer_listener.map(nodelay_incoming);
        return run_node(
            config,
            nodelay_incoming(listener),
            peer_incoming,
            None,
            injected,
            shutdown,
        )
        .await;
    };
    let tls = warden_tls::NodeTls::load(&dir, config.node_id)
        .map_err(|e| ServerError::Config(format!("certs-dir: {e}")))?;
    match tls.server().installed().cluster {
        Some(name) => tracing::info!(
            cluster = %name,
            "certificates name cluster {name:?}: certificates of another cluster, or of none, are refused"
        ),
        None => tracing::info!(
            "this node's certificate names no cluster: it takes any certificate of its CA bundle \
             (docs/security.md \"Cluster names\")"
        ),
    }
    // The acceptor sets TCP_NODELAY on every connection itself. The peer
    // port takes the same handshakes: the peer gate, not the port, decides
    // that only node certificates get through.
    // Each listener has its own handshake and connection limits.
    let accept = config.conn_limits.accept;
    let incoming = tls.server().incoming_with(
        tokio_stream::wrappers::TcpListenerStream::new(listener),
        accept,
    );
    let peer_incoming = peer_listener.map(|l| {
        tls.server()
            .incoming_with(tokio_stream::wrappers::TcpListenerStream::new(l), accept)
    });
    injected.peer_connector = Arc::new(TlsPeerConnector(tls.clone()));
    run_node(
        config,
        incoming,
        peer_incoming,
        Some(tls),
        injected,
        shutdown,
    )
    .await
}

/// Re-reads the certs dir on every SIGHUP (`NodeTls::reload`): the new set
/// is installed only if all of it loads and matches this node, and then
/// serves new handshakes (clients' and peers', both directions) while
/// connections in use go on; a bad set is refused with one error line
/// naming the file and the old set stays.
fn reload_on_sighup(tls: warden_tls::NodeTls) -> Result<tokio::task::JoinHandle<()>, ServerError> {
    use tokio::signal::unix::{signal, SignalKind};
    let mut hup = signal(SignalKind::hangup())
        .map_err(|e| ServerError::Other(format!("cannot handle SIGHUP: {e}")))?;
    Ok(tokio::spawn(async move {
        while hup.recv().await.is_some() {
            let again = tls.clone();
            match tokio::task::spawn_blocking(move || again.reload()).await {
                Ok(Ok(installed)) => tracing::info!(
                    node_id = installed.node_id,
                    cluster = installed.cluster.as_deref().unwrap_or("none"),
                    cas = installed.cas,
                    not_after = %humantime::format_rfc3339_seconds(installed.not_after),
                    "SIGHUP: reloaded the certs dir; new handshakes use it"
                ),
                Ok(Err(e)) => tracing::error!(
                    "SIGHUP: the certs dir was refused, the certificates in use stay: {e}"
                ),
                Err(e) => tracing::error!("SIGHUP: reloading the certs dir failed: {e}"),
            }
        }
    }))
}

fn validate_config(config: &ServerConfig) -> Result<(), ServerError> {
    if config.node_id == 0 {
        return Err(ServerError::Config("id: must be >= 1".into()));
    }
    if config.allow_admin && config.certs_dir.is_some() {
        return Err(ServerError::Config(
            "allow-admin: only with --insecure; with --certs-dir the caller's admin permission decides"
                .into(),
        ));
    }
    if !config.peers.contains_key(&config.node_id) {
        return Err(ServerError::Config(format!(
            "peers: must include this node's id {}",
            config.node_id
        )));
    }
    check_peer_listen(config)?;
    // A data dir that is a file would fail later as a bare storage error.
    if config.data_dir.exists() && !config.data_dir.is_dir() {
        return Err(ServerError::Config(format!(
            "data-dir: {} is not a directory (give a directory; a missing one is created)",
            config.data_dir.display()
        )));
    }
    let t = &config.timing;
    if t.heartbeat_ms == 0 || t.election_timeout_min_ms <= t.heartbeat_ms {
        return Err(ServerError::Config(
            "election-timeout-min: must be greater than heartbeat (> 0)".into(),
        ));
    }
    if t.election_timeout_max_ms <= t.election_timeout_min_ms {
        return Err(ServerError::Config(
            "election-timeout-max: must be greater than election-timeout-min".into(),
        ));
    }
    config
        .conn_limits
        .validate()
        .map_err(|e| ServerError::Config(e.to_string()))?;
    let (lo, hi) = config::MAX_REQUEST_BYTES_RANGE;
    if !(lo..=hi).contains(&config.max_request_bytes) {
        return Err(ServerError::Config(format!(
            "max-request-bytes: must be within {lo}..={hi}; got {}",
            config.max_request_bytes
        )));
    }
    if t.snapshot_threshold == 0 {
        return Err(ServerError::Config(
            "snapshot-threshold: must be >= 1 entry".into(),
        ));
    }
    for (name, value, (lo, hi)) in [
        (
            "grpc-keepalive-interval",
            t.grpc_keepalive_interval_ms,
            config::GRPC_KEEPALIVE_INTERVAL_MS_RANGE,
        ),
        (
            "grpc-keepalive-timeout",
            t.grpc_keepalive_timeout_ms,
            config::GRPC_KEEPALIVE_TIMEOUT_MS_RANGE,
        ),
    ] {
        if !(lo..=hi).contains(&value) {
            return Err(ServerError::Config(format!(
                "{name}: must be within {lo}..={hi} ms; got {value}"
            )));
        }
    }
    Ok(())
}

/// `--peer-listen` and `--peer-addrs` (see [`ServerConfig::peer_listen`]):
/// the peer port is a port of its own, every peer address names a member
/// and is a valid [`types::MemberAddr`] with its client address, and this
/// node has a peer address exactly when it serves one.
fn check_peer_listen(config: &ServerConfig) -> Result<(), ServerError> {
    if let Some(peer) = config.peer_listen {
        if peer == config.listen {
            return Err(ServerError::Config(format!(
                "peer-listen: {peer} is the --listen address; the peer port must be a port of its own"
            )));
        }
        if config.admin_listen == Some(peer) {
            return Err(ServerError::Config(format!(
                "peer-listen: {peer} is the --admin-listen address; the peer port must be a port of its own"
            )));
        }
    }
    for (id, peer_addr) in &config.peer_addrs {
        let Some(client_addr) = config.peers.get(id) else {
            return Err(ServerError::Config(format!(
                "peer-addrs: node {id} is not one of the --peers ids"
            )));
        };
        types::MemberAddr::new(client_addr.clone(), Some(peer_addr.clone()))
            .map_err(|e| ServerError::Config(format!("peer-addrs: node {id}: {e}")))?;
    }
    let me = config.node_id;
    match (config.peer_listen, config.peer_addrs.contains_key(&me)) {
        (Some(_), false) => Err(ServerError::Config(format!(
            "peer-addrs: --peer-listen is given, so this node ({me}) needs its peer address in --peer-addrs (where its peers reach it)"
        ))),
        (None, true) => Err(ServerError::Config(format!(
            "peer-listen: --peer-addrs gives this node ({me}) a peer address; serve it with --peer-listen"
        ))),
        _ => Ok(()),
    }
}

/// The membership a new cluster starts with: every `--peers` member at its
/// client address, with its `--peer-addrs` entry if it has one (checked by
/// [`check_peer_listen`]).
pub(crate) fn initial_members(
    config: &ServerConfig,
) -> Result<BTreeMap<u64, types::MemberAddr>, ServerError> {
    config
        .peers
        .iter()
        .map(|(id, addr)| {
            let peer = config.peer_addrs.get(id).cloned();
            types::MemberAddr::new(addr.clone(), peer)
                .map(|m| (*id, m))
                .map_err(|e| ServerError::Config(format!("peers: node {id}: {e}")))
        })
        .collect()
}

/// Runs a node serving clients on `incoming`, and the peer service there
/// too, or only on `peer_incoming` when that is given (`--peer-listen`).
pub(crate) async fn run_node<I, IO, IE>(
    config: ServerConfig,
    incoming: I,
    peer_incoming: Option<I>,
    tls: Option<warden_tls::NodeTls>,
    injected: Injected,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), ServerError>
where
    I: Stream<Item = Result<IO, IE>> + Send + 'static,
    IO: AsyncRead + AsyncWrite + Connected + Unpin + Send + 'static,
    IE: Into<Box<dyn std::error::Error + Send + Sync>> + Send + 'static,
{
    validate_config(&config)?;
    let metrics = Arc::new(crate::metrics::Metrics::new(
        crate::metrics::Groups::new(&config.metrics_groups)
            .map_err(|e| ServerError::Config(format!("metrics-groups: {e}")))?,
    ));
    tokio::spawn(crate::metrics::keep_up(Arc::downgrade(&metrics)));
    // A node with certificates reads identities from its handshakes only.
    let identities = match tls {
        Some(_) => None,
        None => injected.identities.clone(),
    };
    if identities.is_some() {
        tracing::info!(
            "simulated identities: plaintext connections, principals injected where a TLS \
             handshake would put them (simulator only)"
        );
    } else if tls.is_none() {
        tracing::warn!(
            "insecure mode: plaintext, no authentication; anyone who can reach {} can act as \
             any client and as a peer. Use --certs-dir DIR outside a trusted test network \
             (docs/security.md)",
            config.listen
        );
    }
    let clock = NodeClock::new(injected.clock.clone());
    let mut clock_failure = clock.failure();
    let storage = ServerError::of_data_dir;
    // How long each step of a start takes, in the log (a node restarted
    // with a large table spends seconds here before it serves).
    let starting = tokio::time::Instant::now();
    let db = Db::open_on(&config.data_dir, injected.disk.as_deref()).map_err(storage)?;
    tracing::info!(
        elapsed_ms = starting.elapsed().as_millis() as u64,
        "data dir opened"
    );
    // A data dir belongs to one node id: a copy of another node's dir would
    // carry that node's vote and could vote twice in one term.
    match db.get_meta_string(store::KEY_NODE_ID).map_err(storage)? {
        Some(id) if id != config.node_id.to_string() => {
            return Err(ServerError::ForeignData(format!(
                "{} belongs to node {id}, not node {}; give each node its own data dir",
                config.data_dir.display(),
                config.node_id
            )));
        }
        Some(_) => {}
        None => db
            .put_meta(store::KEY_NODE_ID, config.node_id.to_string().as_bytes())
            .map_err(storage)?,
    }
    let committed = db.get_meta_string(store::KEY_CLUSTER_ID).map_err(storage)?;
    let empty_at_start = committed.is_none() && db.raft_state_is_empty().map_err(storage)?;
    let (cluster_tx, _) = watch::channel(committed);
    // Unknown peer ids are confirmed with the voters this node knows,
    // over its own peer connections (`raft::member_confirm`).
    let access = Arc::new(
        PeerAccess::new(
            tls.is_some(),
            cluster_tx.subscribe(),
            RemovedNodes::open(db.clone()).map_err(storage)?,
        )
        .confirming_with(config.node_id, injected.peer_connector.clone()),
    );
    let peer_state = Arc::new(PeerState {
        node_id: config.node_id,
        db: db.clone(),
        raft: OnceLock::new(),
        cluster_id: cluster_tx,
        empty_at_start,
        bootstrap_lock: Mutex::new(()),
        connector: injected.peer_connector.clone(),
        leader_contact: raft::LeaderContact::default(),
        access: access.clone(),
        early_campaign: raft::peer_service::EarlyCampaign::new(
            config.node_id,
            config.timing.election_timeout_min_ms,
            config.timing.election_timeout_max_ms,
        ),
        stopping: Default::default(),
        formats: OnceLock::new(),
        heard: OnceLock::new(),
    });
    let node_cell = NodeCell::default();

    // Serve peers and clients from the start: bootstrap needs the peer service.
    let (stop_tx, mut stop_rx) = watch::channel(false);
    let metrics_stop = stop_rx.clone();
    // HTTP/2 keep-alive: a client that vanished silently loses its
    // connection (and with it its streams' tasks) within interval + timeout;
    // its waiters stay queued (S8). See `Timing::grpc_keepalive_interval_ms`.
    // The health task ends when `stop_rx` turns true, as the servers do.
    let (grpc_health, _grpc_health_task) = services::health::grpc_health(
        config.node_id,
        node_cell.clone(),
        peer_state.leader_contact.clone(),
        stop_rx.clone(),
    );
    let mut builder = http2_server(&config.timing)
        .layer(services::grpc_metrics::GrpcMetrics::new(metrics.clone()))
        .trace_fn(services::trace::request_span)
        .layer(services::injected::InjectIdentities::new(identities));
    let peer_gate = PeerGate::new(
        access.clone(),
        PeerServer::new(PeerService::new(peer_state.clone()))
            .max_decoding_message_size(MAX_PEER_MESSAGE_BYTES)
            .max_encoding_message_size(MAX_PEER_MESSAGE_BYTES),
        PeerServer::new(PeerService::new(peer_state.clone()))
            .max_decoding_message_size(MAX_SNAPSHOT_CHUNK_MESSAGE_BYTES)
            .max_encoding_message_size(MAX_PEER_MESSAGE_BYTES),
        PeerServer::new(PeerService::new(peer_state.clone()))
            .max_decoding_message_size(MAX_PEER_CONTROL_MESSAGE_BYTES)
            .max_encoding_message_size(MAX_PEER_MESSAGE_BYTES),
    );
    // With a peer port of its own (`--peer-listen`) the peer service is
    // served there only, and that port serves nothing else: a peer call on
    // the client port finds no route (`Unimplemented`), a client call on the
    // peer port neither (docs/security.md "The peer service").
    let (gate_on_client_port, peer_server) = match peer_incoming {
        Some(peer_incoming) => (
            None,
            Some((
                builder
                    .clone()
                    .initial_stream_window_size(PEER_STREAM_WINDOW_BYTES)
                    .add_service(peer_gate),
                peer_incoming,
            )),
        ),
        None => (Some(peer_gate), None),
    };
    let server = builder
        .add_optional_service(gate_on_client_port)
        .add_service(grpc_health)
        .add_service(services::health::grpc_reflection()?)
        .add_service(
            warden_proto::v1::lock_server::LockServer::new(services::lock::LockService::new(
                node_cell.clone(),
                stop_rx.clone(),
            ))
            .max_decoding_message_size(config.max_request_bytes),
        )
        .add_service(
            warden_proto::v1::admin_server::AdminServer::new(services::admin::AdminService::new(
                node_cell.clone(),
            ))
            .max_decoding_message_size(config.max_request_bytes),
        )
        .add_service(
            warden_proto::v1::watch_server::WatchServer::new(services::watch::WatchService::new(
                node_cell.clone(),
            ))
            .max_decoding_message_size(config.max_request_bytes),
        )
        .add_service(
            warden_proto::v1::lease_server::LeaseServer::new(services::lease::LeaseService::new(
                node_cell.clone(),
            ))
            .max_decoding_message_size(config.max_request_bytes),
        );
    let health_task = match config.admin_listen {
        Some(addr) => Some(
            services::health::serve(
                addr,
                tls.as_ref().map(|t| t.server().clone()),
                config.node_id,
                node_cell.clone(),
                peer_state.leader_contact.clone(),
                metrics.clone(),
                services::health::AdminHttp::of(&config, MAX_STREAMS_PER_CONNECTION),
                stop_rx.clone(),
            )
            .await?,
        ),
        None => None,
    };
    let reload_task = match &tls {
        Some(tls) => Some(reload_on_sighup(tls.clone())?),
        None => None,
    };
    let peer_server_task = peer_server.map(|(peer_server, peer_incoming)| {
        let mut stop_rx = stop_rx.clone();
        tokio::spawn(async move {
            let _ = peer_server
                .serve_with_incoming_shutdown(peer_incoming, async move {
                    let _ = stop_rx.wait_for(|s| *s).await;
                })
                .await;
        })
    });
    let client_server_task = tokio::spawn(async move {
        let _ = server
            .serve_with_incoming_shutdown(incoming, async move {
                let _ = stop_rx.wait_for(|s| *s).await;
            })
            .await;
    });
    // Both servers stop on `stop_tx`; this waits for both.
    let server_task = tokio::spawn(async move {
        let _ = client_server_task.await;
        if let Some(t) = peer_server_task {
            let _ = t.await;
        }
    });

    let mut shutdown = Box::pin(shutdown);
    let boot = tokio::select! {
        b = raft::bootstrap::bootstrap(&config, peer_state.clone()) => b,
        _ = &mut shutdown => {
            let _ = stop_tx.send(true);
            let _ = server_task.await;
            if let Some(t) = reload_task {
                t.abort();
            }
            return Ok(());
        }
    };
    let boot = match boot {
        Ok(b) => b,
        Err(e) => {
            let _ = stop_tx.send(true);
            let _ = server_task.await;
            if let Some(t) = reload_task {
                t.abort();
            }
            return Err(e);
        }
    };

    let t = &config.timing;
    let raft_config = openraft::Config {
        cluster_name: "warden".into(),
        heartbeat_interval: t.heartbeat_ms,
        election_timeout_min: t.election_timeout_min_ms,
        election_timeout_max: t.election_timeout_max_ms,
        // This node asks for each snapshot itself, when the log has grown by
        // `--snapshot-threshold` entries and by the last snapshot's size
        // (`raft::snapshot_schedule`).
        snapshot_policy: SnapshotPolicy::Never,
        max_in_snapshot_log_to_keep: t.snapshot_threshold.min(1_000),
        install_snapshot_timeout: 10_000,
        // Pre-vote: an isolated node does not inflate its term and depose a
        // healthy leader when it comes back.
        enable_pre_vote: Some(true),
        // No leader restore: a node that led before a restart stands for
        // election like any other. `save_committed` is not fsync'd, so a
        // restored leader may come back with a stale committed index, and
        // openraft's read index (max(first entry of its term, committed))
        // would then let a linearizable read miss an acknowledged grant (S3;
        // openraft documents the stale-committed case on `save_committed`).
        // A newly elected leader's first entry sits after its whole log, so
        // every read after it covers all that was acknowledged. Caught by
        // `full_restart_keeps_holders_and_tokens` in CI.
        enable_leader_restore: Some(false),
        // Replicate an entry as soon as the log store has taken it, not
        // after this node's own fsync: the leader's fsync overlaps the
        // followers' (the log writer in `store` returns from `append` before
        // the fsync). An entry still commits only once a quorum has it on
        // disk (S3). Measured in docs/performance.md.
        broadcast_submitted_on_append: Some(true),
        ..Default::default()
    }
    .validate()
    .map_err(|e| ServerError::Config(e.to_string()))?;

    let max_stamp = crate::store::MaxStamp::default();
    let sm = StateMachineStore::open_injected(
        db.clone(),
        clock.clone(),
        max_stamp.clone(),
        config.node_id,
        injected.observer.clone(),
        injected.bugs,
        metrics.clone(),
    )
    .map_err(storage)?;
    let shared = sm.shared.clone();
    tracing::info!(
        elapsed_ms = starting.elapsed().as_millis() as u64,
        applied_index = *shared.applied.borrow(),
        "state machine loaded from the stored snapshot"
    );
    let applied_log_format = shared.applied_log_format.subscribe();
    let log_store =
        LogStore::with_fsync_metric(db.clone(), max_stamp, Some(metrics.raft.wal_fsync.clone()))
            .map_err(storage)?;
    // A secure node's peers are TLS node certificates, which only binaries
    // that read authorized entries hold (see `raft::log_format`); the
    // simulator's nodes with injected identities all run this binary.
    let formats = Arc::new(raft::log_format::LogFormats::new(config.node_id));
    let _ = peer_state.formats.set(formats.clone());
    // Cluster time across elections (docs/semantics.md "Time"): what this
    // node sends as leader with every AppendEntries, and what it keeps of a
    // leader's from the calls it accepts.
    let _ = peer_state.heard.set(shared.clone());
    let raft = raft::Raft::new(
        config.node_id,
        Arc::new(raft_config),
        Network::new(
            boot.cluster_id.clone(),
            raft::network::call_timeout_floor(t.election_timeout_min_ms),
            formats.clone(),
            injected.peer_connector.clone(),
        )
        .with_cluster_time(Some(shared.clone())),
        log_store,
        sm,
    )
    .await
    .map_err(|e| of_fatal("raft did not start", e))?;
    let _ = peer_state.raft.set(raft.clone());
    // At once: until it has read the membership, Raft calls that need a
    // member are refused (`Unavailable`).
    let removals_task = tokio::spawn(follow_members(raft.clone(), access.clone()));
    tracing::info!(
        elapsed_ms = starting.elapsed().as_millis() as u64,
        "raft started"
    );
    if !boot.pending.is_empty() {
        tokio::spawn(raft::bootstrap::push_to_pending(
            injected.peer_connector.clone(),
            config.node_id,
            boot.cluster_id.clone(),
            boot.pending.clone(),
        ));
    }
    if boot.initialize {
        match raft.initialize(initial_members(&config)?).await {
            Err(e) => tracing::info!("initialize: {e}"),
            Ok(()) if config.token_floor > 0 => {
                // Before clients are served (node_cell is still empty), so no
                // grant precedes the floor.
                raise_token_floor(&raft, config.token_floor).await;
            }
            Ok(()) => {}
        }
    }

    let (renew_tx, renew_rx) = mpsc::channel(16_384);
    let node = Node::new(NodeParts {
        id: config.node_id,
        config: config.clone(),
        cluster_id: boot.cluster_id.clone(),
        raft: raft.clone(),
        shared,
        formats: formats.clone(),
        connector: injected.peer_connector.clone(),
        renew_tx,
        tls: tls.clone(),
        peer_access: Some(access.clone()),
    });
    node_cell.set(node.clone());
    tracing::info!(
        node_id = config.node_id,
        cluster_id = %boot.cluster_id,
        elapsed_ms = starting.elapsed().as_millis() as u64,
        "serving"
    );
    let renew_task = tokio::spawn(node::renew::run(
        Arc::downgrade(&node),
        renew_rx,
        Duration::from_millis(config.timing.renew_batch_window_ms),
    ));
    let duty_task = tokio::spawn(node::duties::run(Arc::downgrade(&node)));
    let deny_task = tokio::spawn(node::deny_sync::run(Arc::downgrade(&node)));
    let applied_format_task = tokio::spawn(raft::log_format::follow_applied_format(
        applied_log_format,
        formats.clone(),
    ));
    let membership_task = tokio::spawn(raft::log_format::follow_membership(
        raft.clone(),
        formats.clone(),
    ));
    let snapshot_task = tokio::spawn(raft::snapshot_schedule::run(
        raft.clone(),
        db.log_growth(),
        config.timing.snapshot_threshold,
    ));
    let raft_metrics_task = tokio::spawn(raft::observe::follow(
        raft.clone(),
        metrics.clone(),
        formats,
        access,
        metrics_stop,
    ));
    if let Some(observer) = &injected.observer {
        observer.on_started(node.clone());
    }

    // The node stops on its own when its clock fails (it cannot keep lease
    // deadlines without it; see `NodeClock`) or when Raft stopped on a
    // storage error (a failed write or fsync: it serves nothing after that).
    let failed = tokio::select! {
        _ = shutdown => None,
        f = clock_failure.wait_for(|f| f.is_some()) => f.ok().and_then(|f| *f).map(ServerError::Clock),
        e = raft_fatal(raft.clone()) => Some(e),
    };
    tracing::info!("shutting down");
    node.transfer_leadership().await;
    duty_task.abort();
    deny_task.abort();
    renew_task.abort();
    membership_task.abort();
    applied_format_task.abort();
    removals_task.abort();
    raft_metrics_task.abort();
    snapshot_task.abort();
    if let Some(t) = reload_task {
        t.abort();
    }
    // Peers' calls from here on are answered "stopping" by the peer
    // service, not handed to a Raft core that is going away.
    peer_state
        .stopping
        .store(true, std::sync::atomic::Ordering::Release);
    let _ = raft.shutdown().await;
    let _ = stop_tx.send(true);
    let _ = tokio::time::timeout(Duration::from_secs(2), server_task).await;
    if let Some(t) = health_task {
        let _ = tokio::time::timeout(Duration::from_secs(1), t).await;
    }
    match failed {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// Resolves when Raft stops on its own: a storage error (the log or the
/// state machine could not be written) is [`ServerError::Storage`], a panic
/// in its core [`ServerError::Other`]. Pending forever while it runs.
///
/// It waits on openraft's server metrics, which change only with the vote,
/// the state, the leader or the membership (its full metrics change after
/// every entry, and a task woken by each cost every node a wake-up per
/// commit, docs/performance.md), and whose sender the core drops when it
/// stops, panics included, after publishing why in `running_state`.
async fn raft_fatal(raft: raft::Raft) -> ServerError {
    use openraft::async_runtime::WatchReceiver as _;
    let mut server = raft.server_metrics();
    while server.changed().await.is_ok() {}
    let stopped = raft.metrics().borrow_watched().running_state.clone();
    match stopped {
        Err(e) => of_fatal("raft stopped", e),
        Ok(()) => ServerError::Other("raft stopped without saying why".into()),
    }
}

/// A fatal Raft error as the server's: a storage error is
/// [`ServerError::Storage`] (exit 74: a restart does not cure the disk),
/// anything else [`ServerError::Other`].
fn of_fatal(what: &str, e: openraft::errors::Fatal<crate::types::TypeConfig>) -> ServerError {
    match e {
        openraft::errors::Fatal::StorageError(e) => ServerError::Storage(format!("{what}: {e}")),
        e => ServerError::Other(format!("{what}: {e}")),
    }
}

/// How long the forming node tries to commit its token floor.
const TOKEN_FLOOR_DEADLINE: Duration = Duration::from_secs(20);

/// Commits `RaiseTokenFloor { floor }` from the node that just formed the
/// cluster (it is the only node that can win the first election), retrying
/// until it commits or [`TOKEN_FLOOR_DEADLINE`] passes.
async fn raise_token_floor(raft: &raft::Raft, floor: u64) {
    use warden_core::types::{Command, LogEntry, RaiseTokenFloor, Response};
    let deadline = tokio::time::Instant::now() + TOKEN_FLOOR_DEADLINE;
    let mut last = String::new();
    while tokio::time::Instant::now() < deadline {
        let cmd = Command::RaiseTokenFloor(RaiseTokenFloor { floor });
        // No stamp of a leader's clock (the node has no duties yet): a
        // stamp that names no leader is ignored by apply ("Time").
        let entry = LogEntry {
            stamp: Default::default(),
            command: cmd,
        };
        let write = raft.client_write(types::Request(entry));
        match tokio::time::timeout_at(deadline, write).await {
            Ok(Ok(r)) => match r.data {
                Response::Done => {
                    tracing::info!(floor, index = r.log_id.index, "token floor committed");
                    return;
                }
                other => {
                    tracing::error!(floor, "token floor refused: {other:?}");
                    return;
                }
            },
            Ok(Err(e)) => last = e.to_string(),
            Err(_) => break,
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    tracing::error!(
        floor,
        "token floor did not commit within {} s ({last}); tokens may start below it: \
         re-create the cluster with --token-floor or reset every fence",
        TOKEN_FLOOR_DEADLINE.as_secs()
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Timing;

    // Bad config names the field and the limit (HTTP/2 keep-alive,
    // docs/operations.md): a library caller's zero or huge keep-alive is
    // refused before anything starts, as the CLI refuses it.
    #[test]
    fn keepalive_out_of_range_is_refused_naming_the_field() {
        let config = |interval_ms, timeout_ms| ServerConfig {
            node_id: 1,
            listen: "127.0.0.1:0".parse().unwrap(),
            peers: BTreeMap::from([(1, "127.0.0.1:1".to_string())]),
            data_dir: "/nonexistent".into(),
            initial_cluster_state_new: true,
            timing: Timing {
                grpc_keepalive_interval_ms: interval_ms,
                grpc_keepalive_timeout_ms: timeout_ms,
                ..Timing::default()
            },
            allow_admin: false,
            max_request_bytes: config::DEFAULT_MAX_REQUEST_BYTES,
            token_floor: 0,
            join: false,
            admin_listen: None,
            peer_listen: None,
            peer_addrs: BTreeMap::new(),
            certs_dir: None,
            metrics_groups: Vec::new(),
            conn_limits: Default::default(),
        };
        assert!(validate_config(&config(5_000, 5_000)).is_ok());
        let e = validate_config(&config(0, 5_000)).unwrap_err().to_string();
        assert_eq!(
            e,
            "invalid config: grpc-keepalive-interval: must be within 100..=7200000 ms; got 0"
        );
        let e = validate_config(&config(5_000, 600_001))
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "invalid config: grpc-keepalive-timeout: must be within 100..=600000 ms; got 600001"
        );
    }

    // What bad input gets (`--peer-listen`, docs/operations.md): a peer port
    // that is the client or admin port, a peer address of no member or equal
    // to its client address, and a peer port without this node's peer
    // address (or the reverse) are refused naming the flag; a valid split
    // puts both addresses into the first membership.
    #[test]
    fn peer_listen_is_checked_naming_the_flag() {
        let config = |peer_listen: Option<&str>, peer_addrs: &[(u64, &str)]| ServerConfig {
            node_id: 1,
            listen: "127.0.0.1:7001".parse().unwrap(),
            peer_listen: peer_listen.map(|a| a.parse().unwrap()),
            peers: BTreeMap::from([
                (1, "127.0.0.1:7001".to_string()),
                (2, "127.0.0.1:7002".to_string()),
            ]),
            peer_addrs: peer_addrs
                .iter()
                .map(|(id, a)| (*id, a.to_string()))
                .collect(),
            data_dir: "/nonexistent".into(),
            initial_cluster_state_new: true,
            timing: Timing::default(),
            allow_admin: false,
            max_request_bytes: config::DEFAULT_MAX_REQUEST_BYTES,
            token_floor: 0,
            join: false,
            admin_listen: Some("127.0.0.1:7080".parse().unwrap()),
            certs_dir: None,
            metrics_groups: Vec::new(),
            conn_limits: Default::default(),
        };
        let err = |c: ServerConfig| validate_config(&c).unwrap_err().to_string();
        let good = config(Some("127.0.0.1:7101"), &[(1, "127.0.0.1:7101")]);
        validate_config(&good).expect("valid");
        let members = initial_members(&good).expect("members");
        assert_eq!(members[&1].client_addr(), "127.0.0.1:7001");
        assert_eq!(members[&1].peer_addr(), Some("127.0.0.1:7101"));
        assert_eq!(
            members[&2],
            types::MemberAddr::client_only("127.0.0.1:7002")
        );
        validate_config(&config(None, &[])).expect("no split");
        validate_config(&config(None, &[(2, "127.0.0.1:7102")])).expect("only node 2 splits");
        assert_eq!(
            err(config(Some("127.0.0.1:7001"), &[(1, "127.0.0.1:7101")])),
            "invalid config: peer-listen: 127.0.0.1:7001 is the --listen address; the peer port must be a port of its own"
        );
        assert_eq!(
            err(config(Some("127.0.0.1:7080"), &[(1, "127.0.0.1:7101")])),
            "invalid config: peer-listen: 127.0.0.1:7080 is the --admin-listen address; the peer port must be a port of its own"
        );
        assert_eq!(
            err(config(Some("127.0.0.1:7101"), &[])),
            "invalid config: peer-addrs: --peer-listen is given, so this node (1) needs its peer address in --peer-addrs (where its peers reach it)"
        );
        assert_eq!(
            err(config(None, &[(1, "127.0.0.1:7101")])),
            "invalid config: peer-listen: --peer-addrs gives this node (1) a peer address; serve it with --peer-listen"
        );
        assert_eq!(
            err(config(
                Some("127.0.0.1:7101"),
                &[(1, "127.0.0.1:7101"), (3, "127.0.0.1:7103")]
            )),
            "invalid config: peer-addrs: node 3 is not one of the --peers ids"
        );
        let e = err(config(
            Some("127.0.0.1:7101"),
            &[(1, "127.0.0.1:7101"), (2, "127.0.0.1:7002")],
        ));
        assert!(
            e.starts_with("invalid config: peer-addrs: node 2: peer_addr: \"127.0.0.1:7002\" is the client address"),
            "{e}"
        );
    }

    /// An insecure one-node cluster on `listen` with its data in `data_dir`.
    pub(super) fn one_node_config(
        listen: std::net::SocketAddr,
        data_dir: std::path::PathBuf,
    ) -> ServerConfig {
        ServerConfig {
            node_id: 1,
            listen,
            peer_listen: None,
            peers: BTreeMap::from([(1, listen.to_string())]),
            peer_addrs: BTreeMap::new(),
            data_dir,
            initial_cluster_state_new: true,
            timing: Timing::default(),
            allow_admin: false,
            max_request_bytes: config::DEFAULT_MAX_REQUEST_BYTES,
            token_floor: 0,
            join: false,
            admin_listen: None,
            certs_dir: None,
            metrics_groups: Vec::new(),
            conn_limits: Default::default(),
        }
    }

    // "What bad input gets": a --data-dir that is a file is named as such
    // before anything opens it (not `storage: File exists (os error 17)`).
    #[test]
    fn a_data_dir_that_is_a_file_is_refused_naming_the_flag() {
        let file = tempfile::NamedTempFile::new().unwrap();
        let config = one_node_config("127.0.0.1:7001".parse().unwrap(), file.path().to_path_buf());
        let e = validate_config(&config).unwrap_err().to_string();
        assert_eq!(
            e,
            format!(
                "invalid config: data-dir: {} is not a directory (give a directory; a missing one is created)",
                file.path().display()
            )
        );
    }

    /// A clock that reads tokio's time `reads_left` times, then fails.
    #[derive(Debug)]
    struct FailingClock {
        inner: crate::clock::TokioClock,
        reads_left: std::sync::atomic::AtomicU64,
    }

    impl crate::clock::Clock for FailingClock {
        fn now(&self) -> Result<Duration, crate::clock::ClockError> {
            use std::sync::atomic::Ordering::SeqCst;
            let left = self
                .reads_left
                .fetch_update(SeqCst, SeqCst, |n| n.checked_sub(1));
            if left.is_err() {
                return Err(crate::clock::ClockError {
                    clock: "CLOCK_BOOTTIME",
                    errno: 22,
                });
            }
            crate::clock::Clock::now(&self.inner)
        }
    }

    // docs/semantics.md "Time": a node whose clock cannot be read stops and
    // says which clock failed (`warden server` then exits non-zero), rather
    // than carry on with a made-up time (a reading of zero is time running
    // backwards: a lease would outlive its TTL).
    #[tokio::test]
    async fn a_node_whose_clock_fails_stops_naming_the_clock() {
        let dir = tempfile::tempdir().expect("tempdir");
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let config = one_node_config(addr, dir.path().to_path_buf());
        // It forms its one-node cluster and serves (its leader duties read
        // the clock every duty interval), then its clock breaks.
        let clock = Arc::new(FailingClock {
            inner: crate::clock::TokioClock::new(),
            reads_left: std::sync::atomic::AtomicU64::new(100),
        });
        let node = tokio::spawn(crate::run_with(
            config,
            listener,
            clock,
            std::future::pending(),
        ));
        let result = tokio::time::timeout(Duration::from_secs(20), node)
            .await
            .expect("the node stops on its own")
            .expect("join");
        let e = result.expect_err("a failed clock is an error");
        assert!(matches!(e, ServerError::Clock(_)), "{e}");
        assert!(
            e.to_string().contains("reading CLOCK_BOOTTIME failed"),
            "{e}"
        );
    }

    /// Files in memory whose `sync_data` fails once `fail` is set.
    #[derive(Debug, Default)]
    struct BreakingDisk {
        files: std::sync::Mutex<BTreeMap<std::path::PathBuf, Vec<u8>>>,
        fail: std::sync::atomic::AtomicBool,
    }

    #[derive(Debug)]
    struct BreakingFile {
        disk: Arc<BreakingDisk>,
        path: std::path::PathBuf,
    }

    impl redb::StorageBackend for BreakingFile {
        fn len(&self) -> Result<u64, std::io::Error> {
            let files = self.disk.files.lock().expect("files");
            Ok(files.get(&self.path).map_or(0, |f| f.len() as u64))
        }
        fn read(&self, offset: u64, out: &mut [u8]) -> Result<(), std::io::Error> {
            let files = self.disk.files.lock().expect("files");
            let file = files.get(&self.path).map(Vec::as_slice).unwrap_or_default();
            let range = offset as usize..offset as usize + out.len();
            let bytes = file.get(range).ok_or_else(|| {
                std::io::Error::new(std::io::ErrorKind::UnexpectedEof, "past the end")
            })?;
            out.copy_from_slice(bytes);
            Ok(())
        }
        fn set_len(&self, len: u64) -> Result<(), std::io::Error> {
            let mut files = self.disk.files.lock().expect("files");
            files
                .entry(self.path.clone())
                .or_default()
                .resize(len as usize, 0);
            Ok(())
        }
        fn sync_data(&self) -> Result<(), std::io::Error> {
            if self.disk.fail.load(std::sync::atomic::Ordering::SeqCst) {
                return Err(std::io::Error::other(
                    "fsync: Input/output error (injected)",
                ));
            }
            Ok(())
        }
        fn write(&self, offset: u64, data: &[u8]) -> Result<(), std::io::Error> {
            let mut files = self.disk.files.lock().expect("files");
            let file = files.entry(self.path.clone()).or_default();
            let end = offset as usize + data.len();
            if end > file.len() {
                file.resize(end, 0);
            }
            file[offset as usize..end].copy_from_slice(data);
            Ok(())
        }
    }

    #[derive(Debug)]
    struct BreakingDisks(Arc<BreakingDisk>);

    impl crate::store::DiskFactory for BreakingDisks {
        fn open(&self, path: &std::path::Path) -> Box<dyn redb::StorageBackend> {
            Box::new(BreakingFile {
                disk: self.0.clone(),
                path: path.to_path_buf(),
            })
        }
    }

    // docs/operations.md "Server exit codes" (S3: nothing is acknowledged
    // that is not on disk): a node whose log fsync fails stops on its own
    // with `ServerError::Storage` (exit 74), instead of running on with a
    // stopped Raft that serves nothing.
    #[tokio::test]
    async fn a_node_whose_fsync_fails_stops_with_a_storage_error() {
        let dir = tempfile::tempdir().expect("tempdir");
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let config = one_node_config(addr, dir.path().to_path_buf());
        let disk = Arc::new(BreakingDisk::default());
        let mut injected = Injected::with_clock(crate::clock::TokioClock::shared());
        injected.disk = Some(Arc::new(BreakingDisks(disk.clone())));
        let incoming = tokio_stream::wrappers::TcpListenerStream::new(listener);
        let node = tokio::spawn(crate::run_injected(
            config,
            incoming,
            injected,
            std::future::pending(),
        ));
        // It forms its one-node cluster and serves; its leader's first
        // entry is its promote, fsync'd.
        use tonic_health::pb::health_check_response::ServingStatus;
        use tonic_health::pb::{health_client::HealthClient, HealthCheckRequest};
        let channel = tonic::transport::Endpoint::from_shared(format!("http://{addr}"))
            .expect("endpoint")
            .connect_lazy();
        let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
        loop {
            let status = HealthClient::new(channel.clone())
                .check(HealthCheckRequest {
                    service: String::new(),
                })
                .await
                .map(|r| r.into_inner().status);
            if status.is_ok_and(|s| s == ServingStatus::Serving as i32) {
                break;
            }
            assert!(tokio::time::Instant::now() < deadline, "never SERVING");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        disk.fail.store(true, std::sync::atomic::Ordering::SeqCst);
        // A write: its entry's fsync fails. (Its answer, if any, is not the
        // point; the node's own stop is.)
        let mut lock = warden_proto::v1::lock_client::LockClient::new(channel);
        let acquire = lock.acquire(warden_proto::v1::AcquireRequest {
            header: Some(warden_proto::v1::RequestHeader {
                client_id: 7,
                request_id: 1,
                acked_request_id: 0,
            }),
            resource: "orders".into(),
            ttl_ms: 10_000,
            ..Default::default()
        });
        let _ = tokio::time::timeout(Duration::from_secs(5), acquire).await;
        let result = tokio::time::timeout(Duration::from_secs(20), node)
            .await
            .expect("the node stops on its own")
            .expect("join");
        let e = result.expect_err("a failed fsync is an error");
        assert!(matches!(e, ServerError::Storage(_)), "{e}");
        assert!(e.to_string().contains("raft stopped"), "{e}");
    }

    // docs/operations.md "Server exit codes": what opening the data dir
    // fails with decides the class: unreadable data is foreign data, a
    // database another process holds or a directory without permission is
    // a refused start, any other IO error is storage.
    #[test]
    fn data_dir_errors_are_classified_by_kind() {
        use std::io::{Error, ErrorKind};
        let class = |kind| ServerError::of_data_dir(Error::new(kind, "x"));
        assert!(matches!(
            class(ErrorKind::InvalidData),
            ServerError::ForeignData(_)
        ));
        assert!(matches!(
            class(ErrorKind::ResourceBusy),
            ServerError::Config(_)
        ));
        assert!(matches!(
            class(ErrorKind::PermissionDenied),
            ServerError::Config(_)
        ));
        assert!(matches!(class(ErrorKind::Other), ServerError::Storage(_)));
    }
}

#[cfg(test)]
mod flow_control_tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    use futures::StreamExt as _;
    use warden_core::types::{AcquireOutcome, AcquireReply};
    use warden_proto::v1 as pb;

    use super::*;
    use crate::node::test_node::{Setup, TestNode};

    /// Calls pipelined on the one stream, all queued behind one holder.
    const CALLS: usize = 6_000;

    /// Streams on the one connection that stall at once.
    const STALLED_STREAMS: usize = 32;

    /// Calls pipelined on each of the [`STALLED_STREAMS`]: fewer than a
    /// 32 KiB stream window holds of them (about 10 bytes each), enough for
    /// the unread ones of about ten such streams (each frame counted 246
    /// bytes) to run out h2's small-frame budget with a 64 KiB stream
    /// window and a 4 MiB connection window (the test then fails).
    const CALLS_PER_STALLED_STREAM: usize = 1_000;

    /// A node with `p/1` held for 10 minutes, serving the Lock service on a
    /// loopback port with the node's HTTP/2 settings ([`http2_server`]).
    async fn node_serving_lock() -> (TestNode, std::net::SocketAddr, watch::Sender<bool>) {
        let t = TestNode::start(Setup::default()).await;
        let holder: AcquireReply = t.hold("p/1", 600_000, 0).await;
        assert!(matches!(holder.outcome, AcquireOutcome::Granted { .. }));
        let cell = NodeCell::default();
        cell.set(t.node.clone());
        let (stop, stopping) = watch::channel(false);
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let server = http2_server(&config::Timing::default()).add_service(
            warden_proto::v1::lock_server::LockServer::new(services::lock::LockService::new(
                cell, stopping,
            )),
        );
        tokio::spawn(server.serve_with_incoming(nodelay_incoming(listener)));
        (t, addr, stop)
    }

    /// `count` waiting acquires of `p/1` (client ids from `first_client`),
    /// each in a DATA frame of its own: the stream is pending once before
    /// each, so the encoder sends what it has (as a client that writes each
    /// call as it comes). `sent` counts the calls taken for sending; the
    /// last is taken only once the ones before it were sent.
    fn acquires(
        count: usize,
        first_client: u64,
        sent: Arc<AtomicUsize>,
    ) -> impl futures::Stream<Item = pb::CallRequest> + Send + 'static {
        futures::stream::iter(1..=count as u64).then(move |i| {
            sent.fetch_add(1, Ordering::SeqCst);
            async move {
                tokio::task::yield_now().await;
                pb::CallRequest {
                    call_id: i,
                    call: Some(pb::call_request::Call::Acquire(pb::AcquireRequest {
                        header: Some(pb::RequestHeader {
                            client_id: first_client + i,
                            request_id: 1,
                            acked_request_id: 0,
                        }),
                        resource: "p/1".into(),
                        ttl_ms: 600_000,
                        wait_timeout_ms: 600_000,
                        ..Default::default()
                    })),
                }
            }
        })
    }

    /// Reads `count` answers from `answers` within `deadline`, each a
    /// `Queued` for a call of its own; panics naming `stream` otherwise.
    async fn expect_queued(
        stream: usize,
        count: usize,
        mut answers: tonic::Streaming<pb::CallResponse>,
        deadline: tokio::time::Instant,
    ) {
        let mut queued = std::collections::BTreeSet::new();
        while queued.len() < count {
            let answer = tokio::time::timeout_at(deadline, answers.message())
                .await
                .unwrap_or_else(|_| {
                    panic!(
                        "stream {stream}: {} of {count} answered in time",
                        queued.len()
                    )
                })
                .unwrap_or_else(|s| {
                    panic!(
                        "stream {stream} failed after {} answers: {s:?}",
                        queued.len()
                    )
                })
                .expect("the stream stays open");
            match answer.answer {
                Some(pb::call_response::Answer::Acquire(pb::AcquireResponse {
                    event: Some(pb::acquire_response::Event::Queued(_)),
                })) => {
                    assert!(queued.insert(answer.call_id), "one Queued per call");
                }
                other => panic!("stream {stream} call {}: {other:?}", answer.call_id),
            }
        }
        assert_eq!(queued.len(), count);
    }

    /// Waits until `sent` reaches `target` or `within` passes.
    async fn all_taken(sent: &AtomicUsize, target: usize, within: Duration) {
        let deadline = tokio::time::Instant::now() + within;
        while sent.load(Ordering::SeqCst) < target {
            assert!(
                tokio::time::Instant::now() < deadline,
                "only {} of {target} calls sent within {within:?}",
                sent.load(Ordering::SeqCst)
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    // Backpressure, not an error (MAX_CALLS_IN_PROGRESS; public bug: 8,000
    // waiting acquires pipelined on one `Calls` stream got GOAWAY
    // ENHANCE_YOUR_CALM "too_many_data_frames" after 3,232 answers): a
    // client that sends faster than it reads, each acquire in a DATA frame
    // of its own, and reads nothing until all are sent, is paused by flow
    // control (the node's 32 KiB stream window) instead of overrunning h2's
    // budget for buffered small frames; every call is sent, and each gets
    // its `Queued` answer on the same, never reset, stream. The client's own
    // windows are large, so the node's answers never wait for it.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_calls_stream_that_sends_faster_than_it_reads_is_paused_not_reset() {
        let (t, addr, _stop) = node_serving_lock().await;
        let channel = tonic::transport::Endpoint::from_shared(format!("http://{addr}"))
            .expect("endpoint")
            .initial_stream_window_size(64 * 1024 * 1024)
            .initial_connection_window_size(64 * 1024 * 1024)
            .connect()
            .await
            .expect("connect");
        let sent = Arc::new(AtomicUsize::new(0));
        let mut client = pb::lock_client::LockClient::new(channel);
        let answers = tokio::time::timeout(
            Duration::from_secs(30),
            client.calls(acquires(CALLS, 1_000, sent.clone())),
        )
        .await
        .expect("the stream opens within 30 s")
        .expect("the stream opens")
        .into_inner();
        // Read nothing until every call has been taken for sending.
        all_taken(&sent, CALLS, Duration::from_secs(120)).await;
        let deadline = tokio::time::Instant::now() + Duration::from_secs(120);
        expect_queued(0, CALLS, answers, deadline).await;
        assert_eq!(t.table(|m| m.waiters("p/1").len()), CALLS);
    }

    // The same across many streams of one connection (h2's small-frame
    // budget is the connection's, not the stream's: with a 64 KiB stream
    // window and a 4 MiB connection window, a few stalled streams of small
    // calls closed the connection with GOAWAY ENHANCE_YOUR_CALM). A client
    // opens STALLED_STREAMS `Calls` streams on one channel and reads none of
    // their answers, with a small receive window of its own: each stream's
    // answers soon wait for it, the node stops reading that stream, and the
    // rest of its calls (the smallest a client can send: an acquire with
    // nothing in it, each in a DATA frame of its own) wait unread in the
    // node. Once every call is sent, every stream still answers each call,
    // InvalidArgument (no header), on the same connection.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn many_stalled_calls_streams_on_one_connection_are_paused_not_closed() {
        let (t, addr, _stop) = node_serving_lock().await;
        let channel = tonic::transport::Endpoint::from_shared(format!("http://{addr}"))
            .expect("endpoint")
            // Small: the node's answers stall each stream early. The
            // connection window is large, so the client's own small-frame
            // budget (half of it) holds every unread answer.
            .initial_stream_window_size(4 * 1024)
            .initial_connection_window_size(256 * 1024 * 1024)
            .connect()
            .await
            .expect("connect");
        let sent = Arc::new(AtomicUsize::new(0));
        let mut streams = Vec::new();
        for stream in 0..STALLED_STREAMS {
            let mut client = pb::lock_client::LockClient::new(channel.clone());
            let counted = sent.clone();
            let calls = futures::stream::iter(1..=CALLS_PER_STALLED_STREAM as u64).then(move |i| {
                counted.fetch_add(1, Ordering::SeqCst);
                async move {
                    tokio::task::yield_now().await;
                    pb::CallRequest {
                        call_id: i,
                        call: Some(pb::call_request::Call::Acquire(Default::default())),
                    }
                }
            });
            let answers = tokio::time::timeout(Duration::from_secs(30), client.calls(calls))
                .await
                .unwrap_or_else(|_| panic!("stream {stream} opens within 30 s"))
                .unwrap_or_else(|s| panic!("stream {stream} opens: {s:?}"))
                .into_inner();
            streams.push(answers);
        }
        let total = STALLED_STREAMS * CALLS_PER_STALLED_STREAM;
        all_taken(&sent, total, Duration::from_secs(120)).await;
        let deadline = tokio::time::Instant::now() + Duration::from_secs(120);
        let answered = futures::future::join_all(streams.into_iter().enumerate().map(
            |(stream, mut answers)| async move {
                let mut refused = std::collections::BTreeSet::new();
                while refused.len() < CALLS_PER_STALLED_STREAM {
                    let answer = tokio::time::timeout_at(deadline, answers.message())
                        .await
                        .unwrap_or_else(|_| panic!("stream {stream}: answers in time"))
                        .unwrap_or_else(|s| {
                            panic!("stream {stream} failed after {}: {s:?}", refused.len())
                        })
                        .expect("the stream stays open");
                    match answer.answer {
                        Some(pb::call_response::Answer::Error(e)) if e.code == 3 => {
                            assert!(refused.insert(answer.call_id), "one answer per call");
                        }
                        other => panic!("stream {stream} call {}: {other:?}", answer.call_id),
                    }
                }
                refused.len()
            },
        ))
        .await;
        assert_eq!(answered, vec![CALLS_PER_STALLED_STREAM; STALLED_STREAMS]);
        // Nothing was queued: only the holder's lease is in the table.
        assert!(t.table(|m| m.waiters("p/1").is_empty()));
    }
}

#[cfg(test)]
mod window_tests {
    use std::collections::BTreeMap;
    use std::time::Duration;

    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::{TcpListener, TcpStream};

    use super::{MAX_STREAMS_PER_CONNECTION, PEER_STREAM_WINDOW_BYTES, STREAM_WINDOW_BYTES};
    use crate::config::ServerConfig;

    /// The settings (RFC 9113 §6.5.2: identifier to value) that the server
    /// on `addr` announces in its first SETTINGS frame, read over a
    /// plaintext connection that sends the preface and empty SETTINGS.
    async fn announced_settings(addr: std::net::SocketAddr) -> BTreeMap<u16, u32> {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        let mut tcp = loop {
            match TcpStream::connect(addr).await {
                Ok(tcp) => break tcp,
                Err(e) => {
                    assert!(tokio::time::Instant::now() < deadline, "{addr}: {e}");
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
            }
        };
        tcp.write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\0\0\0\x04\0\0\0\0\0")
            .await
            .expect("preface");
        loop {
            let mut head = [0u8; 9];
            tokio::time::timeout(Duration::from_secs(10), tcp.read_exact(&mut head))
                .await
                .expect("a frame within 10 s")
                .expect("read");
            let len = u32::from_be_bytes([0, head[0], head[1], head[2]]) as usize;
            let mut payload = vec![0u8; len];
            tcp.read_exact(&mut payload).await.expect("payload");
            // A SETTINGS frame (type 4) that is not an ACK (flag 1).
            if head[3] == 4 && head[4] & 1 == 0 {
                return payload
                    .chunks(6)
                    .map(|p| {
                        (
                            u16::from_be_bytes([p[0], p[1]]),
                            u32::from_be_bytes([p[2], p[3], p[4], p[5]]),
                        )
                    })
                    .collect();
            }
        }
    }

    /// SETTINGS_INITIAL_WINDOW_SIZE (0x4): absent means the protocol's
    /// default, 65,535.
    fn stream_window(settings: &BTreeMap<u16, u32>) -> u32 {
        settings.get(&4).copied().unwrap_or(65_535)
    }

    // Flow control (docs/operations.md "Latency between nodes"): the client
    // port announces the 32 KiB stream window that pauses a client sending
    // faster than the node reads, and a peer port of its own the 1 MiB one
    // that large peer messages need on links with real latency; both
    // announce at most 128 streams per connection (SETTINGS 0x3), which
    // bounds what one connection leaves unread in the node.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_peer_port_has_a_larger_stream_window_than_the_client_port() {
        let dir = tempfile::tempdir().expect("tempdir");
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let peer_addr = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
            l.local_addr().expect("addr")
        };
        let config = ServerConfig {
            peer_listen: Some(peer_addr),
            peer_addrs: BTreeMap::from([(1, peer_addr.to_string())]),
            ..super::tests::one_node_config(addr, dir.path().to_path_buf())
        };
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let node = tokio::spawn(crate::run_with(
            config,
            listener,
            crate::clock::TokioClock::shared(),
            async move {
                let _ = stopped.await;
            },
        ));
        let client_port = announced_settings(addr).await;
        let peer_port = announced_settings(peer_addr).await;
        assert_eq!(stream_window(&client_port), STREAM_WINDOW_BYTES);
        assert_eq!(stream_window(&peer_port), PEER_STREAM_WINDOW_BYTES);
        assert_eq!(client_port.get(&3), Some(&MAX_STREAMS_PER_CONNECTION));
        assert_eq!(peer_port.get(&3), Some(&MAX_STREAMS_PER_CONNECTION));
        let _ = stop.send(());
        let _ = tokio::time::timeout(Duration::from_secs(20), node).await;
    }

    // Finding: anonymous HTTP/2 connections stayed open for ever. On a TLS
    // node's client port (through `serve_tcp`, the production path) a
    // connection that opens no stream is closed at the connection idle
    // timeout (1 s here); and a bad limit refuses the start naming it.
    #[tokio::test]
    async fn a_tls_node_closes_a_connection_with_no_stream_at_the_idle_timeout() {
        use std::sync::Arc;
        use tokio::time::Instant;

        let dir = tempfile::tempdir().unwrap();
        let certs = dir.path().join("certs");
        let set = warden_tls::mint::loopback_set(&certs, &[1], &[]).unwrap();
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let mut config = super::tests::one_node_config(addr, dir.path().join("data"));
        config.certs_dir = Some(set.node_dirs[&1].clone());
        config.conn_limits.accept.max_connections = 0;
        let refused = super::validate_config(&config).unwrap_err().to_string();
        assert_eq!(
            refused,
            "invalid config: max-connections: 0 is outside 1..=1048576"
        );
        config.conn_limits.accept.max_connections = 100;
        config.conn_limits.accept.max_connections_per_principal = 10;
        config.conn_limits.accept.idle_timeout = Duration::from_secs(1);
        super::validate_config(&config).expect("valid limits");
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let node = tokio::spawn(crate::run_with(
            config,
            listener,
            crate::clock::TokioClock::shared(),
            async move {
                let _ = stopped.await;
            },
        ));
        let mut roots = rustls::RootCertStore::empty();
        {
            use rustls::pki_types::pem::PemObject as _;
            for ca in
                rustls::pki_types::CertificateDer::pem_file_iter(set.client_dir.join("ca.crt"))
                    .unwrap()
            {
                roots.add(ca.unwrap()).unwrap();
            }
        }
        let mut tls = rustls::ClientConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_protocol_versions(&[&rustls::version::TLS13])
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
        tls.alpn_protocols = vec![b"h2".to_vec()];
        let tcp = TcpStream::connect(addr).await.expect("connect");
        let mut conn = tokio_rustls::TlsConnector::from(Arc::new(tls))
            .connect(
                rustls::pki_types::ServerName::try_from("127.0.0.1").unwrap(),
                tcp,
            )
            .await
            .expect("handshake");
        let connected = Instant::now();
        conn.write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\0\0\0\x04\0\0\0\0\0")
            .await
            .expect("preface");
        let mut buf = [0u8; 256];
        let closed = tokio::time::timeout(Duration::from_secs(10), async {
            loop {
                match conn.read(&mut buf).await {
                    Ok(0) | Err(_) => return Instant::now(),
                    Ok(_) => {} // SETTINGS, their ACK
                }
            }
        })
        .await
        .expect("closed within 10 s");
        let after = closed - connected;
        assert!(
            after >= Duration::from_millis(900) && after < Duration::from_secs(4),
            "closed after {after:?}"
        );
        let _ = stop.send(());
        let _ = tokio::time::timeout(Duration::from_secs(20), node).await;
    }
}
