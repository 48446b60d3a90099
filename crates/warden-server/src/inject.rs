//! What a node takes from outside: its clock, its disk, its peer connector,
//! its randomness seed and (simulator only) an observer, the identities of
//! its plaintext connections, and bug switches.
//!
//! Production uses [`Injected::production`] (the boot clock, a redb file in
//! the data dir, TCP to peers, an OS-random seed, no observer, every bug
//! switch off). The simulator (`warden-sim`) gives each node a drifting
//! clock, a disk whose unsynced writes a crash drops, turmoil's network and a
//! seed derived from the run's seed, so that one seed replays one run.
//!
//! # Injected identities (simulator only)
//!
//! With [`Injected::identities`] a node served by `run_injected` (plaintext,
//! no certificates) runs with principals on: each request's principal is
//! the identity the source gives its connection, as a verified TLS
//! handshake would (`services::injected`), client commands are proposed
//! wrapped with it, and the log-format gate treats the node as secure
//! (`raft::log_format::LogFormats::secure`). It cannot reach production:
//! [`Injected::production`] and [`Injected::with_clock`] leave it `None`,
//! `run` and `run_with` (the CLI's paths and the only TLS ones) build their
//! own `Injected` that way, and a node with certificates ignores it (it reads
//! identities from its TLS handshakes only; `run_injected` refuses
//! `certs_dir` anyway).

use std::sync::Arc;

use crate::clock::{BootClock, Clock};
use crate::raft::network::{PeerConnector, TcpConnector};
use crate::sim_hooks::{BugSwitches, IdentitySource, Observer};
use crate::store::DiskFactory;

/// Everything injected into a node.
#[derive(Clone, Debug)]
pub struct Injected {
    /// The node's clock.
    pub clock: Arc<dyn Clock>,
    /// The disk; None = a file in the data dir.
    pub disk: Option<Arc<dyn DiskFactory>>,
    /// How the node opens channels to its peers (TCP in production).
    pub peer_connector: Arc<dyn PeerConnector>,
    /// Seed of openraft's randomness (election timeouts); None = OS random.
    pub rng_seed: Option<u64>,
    /// Observer (simulator only).
    pub observer: Option<Arc<dyn Observer>>,
    /// Simulator only: the identity of each plaintext connection, where a
    /// TLS handshake would put it; `Some` runs the node with principals on
    /// (see the module docs). Ignored by a node with certificates.
    pub identities: Option<Arc<dyn IdentitySource>>,
    /// Bug switches (simulator only; all off by default).
    pub bugs: BugSwitches,
}

impl Injected {
    /// Production: the boot clock, a redb file, TCP, an OS-random seed.
    pub fn production() -> Self {
        Self::with_clock(BootClock::shared())
    }

    /// Production defaults with another clock.
    pub fn with_clock(clock: Arc<dyn Clock>) -> Self {
        Injected {
            clock,
            disk: None,
            peer_connector: Arc::new(TcpConnector),
            rng_seed: None,
            observer: None,
            identities: None,
            bugs: BugSwitches::default(),
        }
    }
}
