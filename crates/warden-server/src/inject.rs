//! What a node takes from outside: its clock, its disk, its peer connector,
//! its randomness seed and (simulator only) an observer and bug switches.
//!
//! Production uses [`Injected::production`] (the boot clock, a redb file in
//! the data dir, TCP, an OS-random seed, no observer, every bug switch off).
//! The simulator (`warden-sim`) gives each node a drifting clock, a disk whose
//! unsynced writes a crash drops, turmoil's network and a seed derived from
//! the run's seed, so that one seed replays one run.

use std::fmt::Debug;
use std::path::Path;
use std::sync::{Arc, OnceLock};

use tonic::transport::{Channel, Endpoint};
use warden_core::table::{Applied, LockTable};
use warden_core::types::{Command, LeaderId};

use crate::clock::{BootClock, Clock};

/// Opens channels to peers. Production: TCP (`Endpoint::connect_lazy`).
pub trait PeerConnector: Send + Sync + Debug + 'static {
    /// A lazily connected channel for a configured endpoint.
    fn channel(&self, endpoint: Endpoint) -> Channel;
}

/// The production connector: TCP.
#[derive(Debug)]
pub struct TcpConnector;

impl PeerConnector for TcpConnector {
    fn channel(&self, endpoint: Endpoint) -> Channel {
        endpoint.connect_lazy()
    }
}

static PEER_CONNECTOR: OnceLock<Arc<dyn PeerConnector>> = OnceLock::new();

/// Sets the process-wide peer connector (the simulator, once, before any node
/// starts). Returns false if one was already set. Production never calls it.
pub fn set_peer_connector(connector: Arc<dyn PeerConnector>) -> bool {
    PEER_CONNECTOR.set(connector).is_ok()
}

/// The peer connector: the one set by [`set_peer_connector`], else TCP.
pub fn peer_connector() -> &'static dyn PeerConnector {
    match PEER_CONNECTOR.get() {
        Some(c) => c.as_ref(),
        None => &TcpConnector,
    }
}

/// Opens the storage backend of a node's redb database. None (production):
/// the file `DIR/warden.redb`.
pub trait DiskFactory: Send + Sync + Debug + 'static {
    /// The backend for the database in `data_dir`.
    fn open(&self, data_dir: &Path) -> Box<dyn redb::StorageBackend>;
}

/// Simulator-only switches that reintroduce known bugs, so the simulator's
/// checkers can be shown to catch them. All off by default; production never
/// turns one on (nothing outside the simulator constructs a non-default value).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BugSwitches {
    /// A new leader restarts every lease's countdown with its full TTL
    /// (etcd issue 9395; breaks L2).
    pub full_ttl_reset_at_election: bool,
    /// Leases that only wait are never expired and due lists name no waiter,
    /// so a waiter whose lease is due is granted (Jepsen etcd 3.4.3; breaks S8).
    pub grant_to_due_waiter: bool,
    /// A stalled ex-leader's expiries reach the new leader through a
    /// forwarding path and apply without the leader-id and `last_index`
    /// guards (etcd issue 15247; breaks S4/S5).
    pub expiry_via_forwarding: bool,
    /// The outcome table is left out of snapshots (breaks S7).
    pub outcome_table_not_in_snapshot: bool,
    /// Apply uses the entry's leader's clock reading as the append stamp:
    /// an instant compared across nodes (breaks S4/L1).
    pub instant_across_nodes: bool,
    /// The fencing token is the grant's log index: several grants made by
    /// one entry share it (breaks S2 and the fence's "equal = same holder").
    pub token_is_log_index: bool,
    /// A leader acknowledges each renew from its own memory before the
    /// renew's entry commits; a deposed leader keeps doing so (breaks S4/S5).
    pub renew_acked_before_commit: bool,
}

/// Simulator-only observer of a node's state machine.
pub trait Observer: Send + Sync + Debug + 'static {
    /// Called after each normal entry is applied on `node_id`, with the table
    /// and deadlines as they are after that entry, the entry's append stamp
    /// and the apply time on this node's clock (the lock on the machine is
    /// held: do not block).
    #[allow(clippy::too_many_arguments)]
    fn on_apply(
        &self,
        node_id: u64,
        index: u64,
        log_leader: LeaderId,
        cmd: &Command,
        applied: &Applied,
        table: &LockTable,
        deadlines: &warden_core::deadline::Deadlines,
        stamp: std::time::Duration,
        now: std::time::Duration,
    );

    /// Called once when the node starts serving (after bootstrap).
    fn on_started(&self, _node: &Arc<crate::node::Node>) {}

    /// `instant_across_nodes`: the clock reading of node `node_id` now.
    fn clock_of(&self, _node_id: u64) -> Option<std::time::Duration> {
        None
    }

    /// `expiry_via_forwarding`: hands an ex-leader's expiry to whoever
    /// leads now (the "forwarding path").
    fn forward_expiry(&self, _from: u64, _cmd: Command) {}
}

/// Everything injected into a node.
#[derive(Clone, Debug)]
pub struct Injected {
    /// The node's clock.
    pub clock: Arc<dyn Clock>,
    /// The disk; None = a file in the data dir.
    pub disk: Option<Arc<dyn DiskFactory>>,
    /// Seed of openraft's randomness (election timeouts); None = OS random.
    pub rng_seed: Option<u64>,
    /// Observer (simulator only).
    pub observer: Option<Arc<dyn Observer>>,
    /// Bug switches (simulator only; all off by default).
    pub bugs: BugSwitches,
}

impl Injected {
    /// Production: the boot clock, a redb file, an OS-random seed.
    pub fn production() -> Self {
        Self::with_clock(BootClock::shared())
    }

    /// Production defaults with another clock.
    pub fn with_clock(clock: Arc<dyn Clock>) -> Self {
        Injected {
            clock,
            disk: None,
            rng_seed: None,
            observer: None,
            bugs: BugSwitches::default(),
        }
    }
}

/// `expiry_via_forwarding` (simulator only): while this node believes it
/// leads, every duty interval it hands the leases its own deadline table sees
/// as due to the observer, which proposes them at whoever leads now.
pub(crate) async fn forward_stale_expiries(
    node: std::sync::Weak<crate::node::Node>,
    observer: Arc<dyn Observer>,
) {
    let tick = match node.upgrade() {
        Some(n) => std::time::Duration::from_millis(n.config.timing.duty_interval_ms.max(1)),
        None => return,
    };
    loop {
        tokio::time::sleep(tick).await;
        let Some(node) = node.upgrade() else { return };
        let Some(leader) = node.leader_id_if_leader() else {
            continue;
        };
        let now = node.shared.clock.now();
        let due = match node.shared.machine.lock() {
            Ok(m) => m.deadlines.due(&m.table, leader, now),
            Err(_) => return,
        };
        if !due.leases.is_empty() {
            observer.forward_expiry(node.id, Command::Expire(due));
        }
    }
}

/// The command as a buggy server would apply it (simulator only): see
/// [`BugSwitches`]. With every switch off it is `cmd` unchanged.
pub(crate) fn buggy_command(
    bugs: &BugSwitches,
    table: &LockTable,
    log_leader: LeaderId,
    cmd: &Command,
) -> Command {
    if let Command::Batch(cmds) = cmd {
        // A packed entry: each command as the buggy server would apply it.
        return Command::Batch(
            cmds.iter()
                .map(|c| buggy_command(bugs, table, log_leader, c))
                .collect(),
        );
    }
    let mut cmd = cmd.clone();
    let due = match &mut cmd {
        Command::Acquire(a) => a.due.as_mut(),
        Command::Release(r) => r.due.as_mut(),
        Command::Revoke(r) => r.due.as_mut(),
        Command::ForceRelease(f) => f.due.as_mut(),
        Command::EndLockDelay(e) => e.due.as_mut(),
        Command::Expire(d) => Some(d),
        _ => None,
    };
    if let Some(due) = due {
        if bugs.grant_to_due_waiter {
            due.waiters.clear();
            due.leases.retain(|l| {
                table
                    .lease(l.lease_id)
                    .is_none_or(|r| !r.locks.is_empty() || r.waits.is_empty())
            });
        }
    }
    if bugs.expiry_via_forwarding {
        if let Command::Expire(due) = &mut cmd {
            if due.leader != log_leader {
                due.leader = log_leader;
                for l in &mut due.leases {
                    if let Some(r) = table.lease(l.lease_id) {
                        l.last_index = r.last_index;
                    }
                }
            }
        }
    }
    cmd
}

/// `full_ttl_reset_at_election`: every lease's countdown restarts at `now`
/// with its full TTL (etcd issue 9395).
pub(crate) fn reset_full_ttls(m: &mut crate::store::Machine, now: std::time::Duration) {
    let leases: Vec<(u64, u64)> = m.table.leases().map(|l| (l.lease_id, l.ttl_ms)).collect();
    for (lease_id, ttl_ms) in leases {
        m.deadlines.on_effect(
            &warden_core::Effect::LeaseSet { lease_id, ttl_ms },
            now,
            now,
        );
    }
}

/// `outcome_table_not_in_snapshot`: the snapshot bytes of `table` with every
/// client's outcome record dropped.
pub(crate) fn without_outcomes(
    table: &LockTable,
    last: Option<&crate::raft_types::LogId>,
) -> Vec<u8> {
    let mut t = table.clone();
    let leader = last.map(crate::raft_types::leader_of).unwrap_or(LeaderId {
        term: 0,
        node_id: 0,
    });
    let clients: Vec<(u64, u64)> = t.clients().collect();
    let index = last.map(|l| l.index()).unwrap_or(0);
    let _ = t.apply(
        index,
        leader,
        &Command::DropClients(warden_core::types::DropClients { leader, clients }),
    );
    t.to_snapshot()
}

/// `renew_acked_before_commit`: a node that believes it leads answers every
/// renew of the batch at once from its own table (the lease's TTL, or "not
/// live"), before the batch is proposed; the returned jobs carry detached
/// reply channels, so the batch is still proposed and its result dropped.
pub(crate) fn ack_renews_from_memory(
    node: &crate::node::Node,
    jobs: Vec<crate::renew::RenewJob>,
) -> Vec<crate::renew::RenewJob> {
    if node.leader_id_if_leader().is_none() {
        return jobs;
    }
    let Ok(m) = node.shared.machine.lock() else {
        return jobs;
    };
    jobs.into_iter()
        .map(|job| {
            let ttl_ms = m.table.lease(job.lease_id).map(|l| l.ttl_ms);
            let _ = job.reply.send(Ok(ttl_ms));
            let (reply, _) = tokio::sync::oneshot::channel();
            crate::renew::RenewJob {
                lease_id: job.lease_id,
                reply,
            }
        })
        .collect()
}
