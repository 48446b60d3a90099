//! Warden's server: one node of a Raft-replicated lock service.
//!
//! # Map
//!
//! The modules form layers; a file names only its own layer and the layers
//! below it (checked by `tests/layering.rs`):
//!
//! 1. The crate root: [`run`], [`run_with`], [`run_injected`] (this file),
//!    `start.rs` (config check, TLS or insecure serving, the peer service on
//!    the client port or on `--peer-listen` alone, data dir, bootstrap,
//!    Raft, the node and its tasks, SIGHUP reload of the certificates,
//!    orderly stop) and [`inject`] (what a node takes from outside: clock,
//!    disk, peer connector, randomness seed, simulator hooks).
//! 2. [`services`]: the gRPC and HTTP edge. `lock`, `lease`, `watch`,
//!    `admin` (the public `warden.v1` services), `health` (`/healthz`,
//!    `/readyz`, `/metrics` on the admin listener), `dashboard` (the
//!    read-only `/ui` page and its JSON on the same listener),
//!    `grpc_metrics` (requests by method and code), `calls` (acquire and
//!    release, unary or on a `Calls` stream), `call_ids` (the call ids in
//!    flight on one `Calls` stream), `waiter` (a queued acquire's
//!    stream), `convert` (wire to
//!    commands), `status`, the one place a typed error becomes a gRPC
//!    status, `trace` (each public request's log span: method, principal,
//!    resource, request ids), and `injected` (simulator only: a connection's injected
//!    identity, where a TLS handshake would put it).
//! 3. [`node`]: a running node. [`node::Node::submit`] is the one write path
//!    for client commands (validate, leader check, this leader's promote,
//!    propose, typed answer, [`node::SubmitError`]); `stamp` gives each entry
//!    its leader's cluster time; `renew` batches keep-alives (S4);
//!    `top` reads the hottest resources (`warden top`); `duties` proposes
//!    leader duties to the local Raft handle; `read` is
//!    the linearizable read path and the views services read; `cluster` the
//!    leader's view of the members and readiness; `proposer` packs queued
//!    commands into one entry; `membership` adds, removes and replaces
//!    members.
//! 4. [`raft`]: the Raft handle; `network` (openraft RPCs to peers over the
//!    internal `Peer` service, its append stream, snapshots sent in chunks
//!    with a unary fallback, failed calls logged once per streak then
//!    summarised per peer), `peer_service` (the
//!    receiving side, bootstrap RPCs, the early campaign), `snapshot_chunks`
//!    (a snapshot in chunks of at most 1 MiB on the peer service's
//!    streaming calls, and their bounds), `bootstrap` (the
//!    two-phase cluster id, docs/semantics.md "Membership and data loss"),
//!    `log_format` (the log format each peer reads, and the gate that
//!    proposes a newer format only when every member reads it),
//!    `cluster_time_wire` (the leader's cluster time on every append),
//!    `backup` (the snapshot file and seeding a restored cluster), `observe`
//!    (Raft's state in the metrics), `snapshot_schedule` (when this node
//!    takes a snapshot), and [`raft::LeaderContact`].
//! 5. [`store`]: the log store (a write-ahead file with group commit, folded
//!    into redb; durable before acknowledged, S3) and the state machine (the
//!    `warden-core` lock table, its instants in cluster time).
//! 6. The vocabulary every layer speaks: [`types`] (the openraft type
//!    configuration and [`types::MemberAddr`], a member's client and peer
//!    addresses), [`config`] (configuration and timing defaults, E and
//!    G), [`clock`] (the injected node clock), [`cluster_time`] (the
//!    leader's cluster clock and the heard time, docs/semantics.md "Time"), [`events`] (the watch event
//!    log, fed by apply), [`wakes`] (which queued acquires to read again
//!    after an apply: those of the resources it touched), [`metrics`] (this node's Prometheus series and
//!    their bounded `group` label, fed by apply and the layers above),
//!    [`hot_locks`] (the one-minute window of grants, expiries and waits
//!    behind `warden top`, fed by apply), [`sim_hooks`] (the simulator's
//!    observer and bug switches, on core types only).
//!
//! # The path of a request
//!
//! A client's `Acquire` reaches `services::lock`, becomes a command
//! (`services::convert`) and goes to [`node::Node::submit`]: validated (a bad
//! field gets `InvalidArgument` naming the field and the limit), and, on the
//! leader, once its `Promote` has applied, proposed to the local Raft handle
//! (through the proposer, which packs it with others that queued meanwhile
//! into one entry stamped with the leader's cluster time). openraft appends
//! it to each node's log (fsync) on a quorum, commits it, and the state
//! machine applies it: `warden_core::table::LockTable::apply` decides,
//! deterministically, from the entry and its stamp alone, and its effects
//! feed the event log, the metrics and the waiting acquires. The reply is sent after apply. A follower answers `Unavailable`
//! with the leader's address.
//!
//! Every call carries its principal (`services::principal`: the caller's
//! client certificate; none on an insecure node; in the simulator, the
//! identity `Injected::identities` gives its plaintext connection). `Node::submit` proposes the
//! command wrapped in `Authorized` with it, and the table decides permission, lease
//! ownership and quotas when the entry applies; the renew batcher renews
//! only the caller's own leases; reads check the table they are served from
//! (`node::read`, docs/security.md). Leader duties carry no principal.
//!
//! # What this crate does not do
//!
//! It never reads a wall clock in replicated logic, never forwards leader
//! duties, and never acknowledges a renew before it commits.

pub mod clock;
pub mod cluster_time;
pub mod config;
pub mod events;
pub mod hot_locks;
pub mod inject;
pub mod metrics;
pub mod node;
pub mod raft;
pub mod services;
pub mod sim_hooks;
mod start;
pub mod store;
pub mod types;
pub mod wakes;

use std::future::Future;
use std::sync::Arc;

pub use config::{ServerConfig, Timing, TimingPreset};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpListener;
use tokio_stream::Stream;
use tonic::transport::server::Connected;

use crate::clock::Clock;
use crate::inject::Injected;

/// Errors that stop a node.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    /// The data dir is empty but the peers already formed a cluster.
    #[error("node {node_id} lost its data: its data dir is empty but its peers already form cluster {cluster_id}; replace it (warden cluster replace-node) instead of restarting it empty")]
    LostData {
        /// This node.
        node_id: u64,
        /// The peers' cluster id.
        cluster_id: String,
    },
    /// Bad configuration: flags, config file, certificates, an address that
    /// cannot be bound, a data dir another process has open. The node never
    /// starts as configured.
    #[error("invalid config: {0}")]
    Config(String),
    /// The data dir is not this node's as it stands: another node's or
    /// another cluster's, or data this binary cannot read (a newer format,
    /// or damaged). Starting again changes nothing.
    #[error("data-dir: {0}")]
    ForeignData(String),
    /// Storage failure: a read, write or fsync of the data dir failed, at
    /// start or while running (Raft stopped on a storage error).
    #[error("storage: {0}")]
    Storage(String),
    /// The node's clock could not be read: the node stopped.
    #[error("clock: {0}; the node stopped (it cannot keep lease deadlines without its clock)")]
    Clock(crate::clock::ClockError),
    /// Anything else.
    #[error("{0}")]
    Other(String),
}

impl ServerError {
    /// A storage error of the data dir at start: data this binary cannot
    /// read (`InvalidData`: a damaged file, a format from a newer binary) is
    /// [`ServerError::ForeignData`]; a database another process has open
    /// (`ResourceBusy`) or a data dir this user may not use
    /// (`PermissionDenied`) is [`ServerError::Config`]; any other error is
    /// [`ServerError::Storage`].
    pub fn of_data_dir(e: std::io::Error) -> ServerError {
        match e.kind() {
            std::io::ErrorKind::InvalidData => ServerError::ForeignData(e.to_string()),
            std::io::ErrorKind::ResourceBusy | std::io::ErrorKind::PermissionDenied => {
                ServerError::Config(format!("data-dir: {e}"))
            }
            _ => ServerError::Storage(e.to_string()),
        }
    }
}

/// Runs a node on `config.listen` (and the peer service on
/// `config.peer_listen` alone when that is given) until `shutdown` resolves
/// (then, if leader, transfers leadership within `leader_transfer_timeout_ms`
/// and exits). With `config.certs_dir` it serves TLS 1.3 only (see
/// [`ServerConfig`]).
pub async fn run(
    config: ServerConfig,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), ServerError> {
    let listener = TcpListener::bind(config.listen)
        .await
        .map_err(|e| ServerError::Config(format!("listen: cannot bind {}: {e}", config.listen)))?;
    run_with(config, listener, Injected::production().clock, shutdown).await
}

/// Runs a node on an already bound client listener with an injected clock
/// (TLS when `config.certs_dir` is given, and `config.peer_listen` bound
/// here, as [`run`]).
pub async fn run_with(
    config: ServerConfig,
    listener: TcpListener,
    clock: Arc<dyn Clock>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), ServerError> {
    let injected = Injected::with_clock(clock);
    let seed = injected.rng_seed.unwrap_or_else(rand::random);
    types::Rt::scope(seed, start::serve_tcp(config, listener, injected, shutdown)).await
}

/// Runs a node on an injected stream of incoming connections with an
/// injected clock, disk and randomness seed (see [`inject`]). openraft's
/// randomness (election timeouts) is drawn from a generator seeded with
/// `injected.rng_seed` (OS random when None), so a seed replays a run.
///
/// Insecure only: the connections are served as they come (no TLS), so a
/// config with `certs_dir` is refused (`ServerError::Config` naming
/// `certs-dir`); [`run`] and [`run_with`] serve TLS.
pub async fn run_injected<I, IO, IE>(
    config: ServerConfig,
    incoming: I,
    injected: Injected,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), ServerError>
where
    I: Stream<Item = Result<IO, IE>> + Send + 'static,
    IO: AsyncRead + AsyncWrite + Connected + Unpin + Send + 'static,
    IE: Into<Box<dyn std::error::Error + Send + Sync>> + Send + 'static,
{
    if config.certs_dir.is_some() {
        return Err(ServerError::Config(
            "certs-dir: a node on injected connections serves no TLS; run it with run or run_with"
                .into(),
        ));
    }
    if config.peer_listen.is_some() {
        return Err(ServerError::Config(
            "peer-listen: a node on injected connections serves one stream of them; run it with run or run_with"
                .into(),
        ));
    }
    let seed = injected.rng_seed.unwrap_or_else(rand::random);
    types::Rt::scope(
        seed,
        start::run_node(config, incoming, None, None, injected, shutdown),
    )
    .await
}
