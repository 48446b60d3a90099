//! Simulator-only hooks: an observer of each apply, a view of a running
//! node for the simulator's fault scripts, the identity a simulated
//! connection carries where a TLS handshake would put it
//! ([`IdentitySource`]), and the switches that reintroduce known bugs so the
//! simulator's checkers can be shown to catch them.
//!
//! Everything here takes core types (the lock table, entries, commands),
//! warden-tls' [`Identity`] and the small [`SimNode`] view, never the
//! server's own structures. Production never turns a bug switch on, never
//! sets an observer and never sets an identity source.

use std::fmt::Debug;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;

use warden_core::table::{Applied, LockTable};
use warden_core::types::{Command, LeaderId, LockKind, LogEntry, Mode};
use warden_tls::Identity;

/// Simulator only: the identity a verified TLS handshake would have given
/// the connection from `remote` (the simulator's network is plaintext
/// turmoil TCP; TLS itself is not simulated). Set through
/// `Injected::identities`, it is read only by a node served on injected
/// connections without certificates (`run_injected`); see
/// `services::injected` for where the identity enters a request.
pub trait IdentitySource: Send + Sync + Debug + 'static {
    /// The identity of the peer at `remote`: a client principal, a node,
    /// or [`Identity::Anonymous`] (no certificate: refused as
    /// `Unauthenticated`, as on a secure node).
    fn identity_of(&self, remote: SocketAddr) -> Identity;
}

/// What the simulator may ask of a running node.
pub trait SimNode: Send + Sync + Debug + 'static {
    /// This node's id.
    fn node_id(&self) -> u64;

    /// This node's leader id if it believes it leads now.
    fn leader_id_if_leader(&self) -> Option<LeaderId>;

    /// Proposes `cmd` to this node's local Raft handle as a leader duty is
    /// proposed (no validation); resolves once it applied here or failed.
    fn propose_duty(self: Arc<Self>, cmd: Command) -> Pin<Box<dyn Future<Output = ()> + Send>>;
}

/// Simulator-only switches that reintroduce known bugs, so the simulator's
/// checkers can be shown to catch them. All off by default; production never
/// turns one on (nothing outside the simulator constructs a non-default value).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BugSwitches {
    /// A new leader's promote restarts every lease's countdown with its
    /// full TTL (etcd issue 9395; breaks L2).
    pub full_ttl_reset_at_election: bool,
    /// Hand-off ignores cluster time: a waiter whose wait or lease has
    /// ended is granted (Jepsen etcd 3.4.3; breaks S8).
    pub grant_to_due_waiter: bool,
    /// A new leader's clock starts from its own monotonic clock's reading
    /// instead of the cluster's time: an instant compared across nodes
    /// (breaks S4 or L1/L2, whichever way the clocks differ).
    pub leader_base_from_own_clock: bool,
    /// The leader's cluster clock runs at three times its monotonic clock
    /// (breaks S4: leases end before the holder's `valid_until`).
    pub cluster_clock_runs_fast: bool,
    /// The sweep drops due leases from the time index without ending them;
    /// only touching a resource does, so a dead holder of a resource nobody
    /// touches keeps it (breaks L1/L2).
    pub sweep_skips_leases: bool,
    /// The outcome table is left out of snapshots (breaks S7).
    pub outcome_table_not_in_snapshot: bool,
    /// The fencing token is the grant's log index: several grants made by
    /// one entry share it (breaks S2 and the fence's "equal = same holder").
    pub token_is_log_index: bool,
    /// A leader acknowledges each renew from its own memory before the
    /// renew's entry commits; a deposed leader keeps doing so (breaks S4/S5).
    pub renew_acked_before_commit: bool,
    /// Lease ownership is not checked: a principal may release, revoke,
    /// proclaim on, acquire on and renew another principal's lease
    /// (`warden_core::auth`, "Leases have owners"; etcd PR 8031). Breaks the
    /// simulator's OWNERS checker.
    pub skip_lease_owner_check: bool,
    /// Every semaphore permit request applies as one of a semaphore with
    /// one permit more than asked (an `Acquire` with `Semaphore { limit }`
    /// applied with `limit + 1`), so N + 1 holders appear (docs/semantics.md
    /// "Lock kinds"; breaks the simulator's SEMAPHORE checker).
    pub semaphore_limit_plus_one: bool,
    /// A read-write lock's exclusive request applies as a shared one, so a
    /// writer holds beside readers or another writer (docs/semantics.md
    /// "Lock kinds"; breaks the simulator's RW checker).
    pub exclusive_as_shared: bool,
    /// A reader's (or a permit's) acquire is granted at once whenever the
    /// resource admits it, past earlier waiters
    /// (`LockTable::inject_readers_overtake_writers`; breaks the
    /// simulator's FIFO checker).
    pub readers_overtake_writers: bool,
    /// A multi-lock applies as an acquire of its first resource only, so a
    /// multi-lock is granted in part (docs/semantics.md "Multi-locks";
    /// breaks the simulator's MULTI checker).
    pub multi_grant_first_only: bool,
}

/// Simulator-only observer of a node's state machine.
pub trait Observer: Send + Sync + Debug + 'static {
    /// Called after each normal entry is applied on `node_id`, with the
    /// entry as applied (`entry`: a bug switch may have rewritten it) and
    /// as the log holds it (`logged`: what the client asked for), and the
    /// table as it is after that entry (the lock on the machine is held: do
    /// not block).
    #[allow(clippy::too_many_arguments)]
    fn on_apply(
        &self,
        node_id: u64,
        index: u64,
        log_leader: LeaderId,
        entry: &LogEntry,
        logged: &LogEntry,
        applied: &Applied,
        table: &LockTable,
    );

    /// Called once when the node starts serving (after bootstrap).
    fn on_started(&self, _node: Arc<dyn SimNode>) {}
}

/// Turns on the table's own switches (simulator only).
pub(crate) fn inject(bugs: &BugSwitches, table: &mut LockTable) {
    if bugs.token_is_log_index {
        table.inject_token_is_log_index();
    }
    if bugs.skip_lease_owner_check {
        table.inject_skip_lease_owner_check();
    }
    if bugs.readers_overtake_writers {
        table.inject_readers_overtake_writers();
    }
    if bugs.grant_to_due_waiter {
        table.inject_handoff_ignores_now();
    }
    if bugs.sweep_skips_leases {
        table.inject_sweep_skips_leases();
    }
}

/// The entry as a buggy server would apply it (simulator only): see
/// [`BugSwitches`]. With every switch off it is `entry` unchanged.
pub(crate) fn buggy_entry(
    bugs: &BugSwitches,
    table: &LockTable,
    log_leader: LeaderId,
    entry: &LogEntry,
) -> LogEntry {
    let mut command = buggy_command(bugs, &entry.command);
    if bugs.full_ttl_reset_at_election && matches!(command, Command::Promote(_)) {
        // Every lease renewed by the promote's entry: full TTLs again.
        let lease_ids = table.leases().map(|l| l.lease_id).collect();
        command = Command::Batch(vec![
            Command::RenewBatch(warden_core::types::RenewBatch { lease_ids }),
            command,
        ]);
    }
    let _ = log_leader;
    LogEntry {
        stamp: entry.stamp,
        command,
    }
}

/// The command as a buggy server would apply it.
fn buggy_command(bugs: &BugSwitches, cmd: &Command) -> Command {
    if let Command::Batch(cmds) = cmd {
        // A packed entry: each command as the buggy server would apply it.
        return Command::Batch(cmds.iter().map(|c| buggy_command(bugs, c)).collect());
    }
    let mut cmd = cmd.clone();
    if bugs.multi_grant_first_only {
        let inner = unwrapped_mut(&mut cmd);
        if let Command::Acquire(m) = inner {
            // Only the first resource: a plain acquire of it.
            m.resources.clear();
        }
    }
    if let Command::Acquire(k) = unwrapped_mut(&mut cmd) {
        match (&mut k.kind, k.mode) {
            (LockKind::Semaphore { limit }, _) if bugs.semaphore_limit_plus_one => {
                *limit = limit.saturating_add(1);
            }
            (LockKind::ReadWrite, Mode::Exclusive) if bugs.exclusive_as_shared => {
                k.mode = Mode::Shared;
            }
            _ => {}
        }
    }
    cmd
}

/// The command a client asked for, inside a `Command::Authorized` or bare.
fn unwrapped_mut(cmd: &mut Command) -> &mut Command {
    match cmd {
        Command::Authorized(w) => &mut w.command,
        c => c,
    }
}

/// `outcome_table_not_in_snapshot`: the snapshot bytes of `table` with
/// every client's outcome record dropped.
pub(crate) fn without_outcomes(table: &LockTable, index: u64, leader: LeaderId) -> Vec<u8> {
    let mut t = table.clone();
    let clients: Vec<(u64, u64)> = t.clients().collect();
    let stamp = warden_core::types::Stamp {
        leader,
        at_ms: t.now_ms(),
    };
    let _ = t.apply(
        index,
        leader,
        stamp,
        &Command::DropClients(warden_core::types::DropClients { leader, clients }),
    );
    t.to_snapshot()
}
