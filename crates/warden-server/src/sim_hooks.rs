//! Simulator-only hooks: an observer of each apply, a view of a running
//! node for the simulator's fault scripts, the identity a simulated
//! connection carries where a TLS handshake would put it
//! ([`IdentitySource`]), and the switches that reintroduce known bugs so the
//! simulator's checkers can be shown to catch them.
//!
//! Everything here takes core types (the lock table, deadlines, commands),
//! warden-tls' [`Identity`] and the small [`SimNode`] view, never the
//! server's own structures. Production never turns a bug switch on, never
//! sets an observer and never sets an identity source.

use std::fmt::Debug;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use warden_core::deadline::Deadlines;
use warden_core::table::{Applied, LockTable};
use warden_core::types::{Command, LeaderId, LockKind, Mode};
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
    /// proposed (no validation, no due list); resolves once it applied here
    /// or failed.
    fn propose_duty(self: Arc<Self>, cmd: Command) -> Pin<Box<dyn Future<Output = ()> + Send>>;
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
    /// Lease ownership is not checked: a principal may release, revoke,
    /// proclaim on, acquire on and renew another principal's lease
    /// (`warden_core::auth`, "Leases have owners"; etcd PR 8031). Breaks the
    /// simulator's OWNERS checker.
    pub skip_lease_owner_check: bool,
    /// Every semaphore permit request applies as one of a semaphore with
    /// one permit more than asked (`AcquireKind` with `Semaphore { limit }`
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
    /// Every duty-clock advance applies with three times the time its
    /// leader measured (`Command::AdvanceClock`), so the clock runs ahead
    /// of real time and leases derive less than they have left
    /// (docs/semantics.md "Checkpoints"; breaks S4 for a node that loads
    /// the table).
    pub duty_clock_runs_fast: bool,
}

/// Simulator-only observer of a node's state machine.
pub trait Observer: Send + Sync + Debug + 'static {
    /// Called after each normal entry is applied on `node_id`, with the
    /// command as applied (`cmd`: a bug switch may have rewritten it) and as
    /// the log holds it (`logged`: what the client asked for), the table
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
        logged: &Command,
        applied: &Applied,
        table: &LockTable,
        deadlines: &warden_core::deadline::Deadlines,
        stamp: std::time::Duration,
        now: std::time::Duration,
    );

    /// Called once when the node starts serving (after bootstrap).
    fn on_started(&self, _node: Arc<dyn SimNode>) {}

    /// `instant_across_nodes`: the clock reading of node `node_id` now.
    fn clock_of(&self, _node_id: u64) -> Option<std::time::Duration> {
        None
    }

    /// `expiry_via_forwarding`: hands an ex-leader's expiry to whoever
    /// leads now (the "forwarding path").
    fn forward_expiry(&self, _from: u64, _cmd: Command) {}
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
    if bugs.duty_clock_runs_fast {
        if let Command::AdvanceClock(a) = &mut cmd {
            a.elapsed_ms = a.elapsed_ms.saturating_mul(3);
        }
    }
    if bugs.multi_grant_first_only {
        let inner = unwrapped_mut(&mut cmd);
        if let Command::AcquireMulti(m) = inner {
            let first = m.acquire.clone();
            *inner = Command::Acquire(first);
        }
    }
    if let Command::AcquireKind(k) = unwrapped_mut(&mut cmd) {
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
    let due = match &mut cmd {
        Command::Expire(d) => Some(d),
        // A duty's or a client command's list (bare or inside
        // `Command::Authorized`).
        c => c.due_mut().and_then(Option::as_mut),
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

/// The command a client asked for, inside a `Command::Authorized` or bare.
fn unwrapped_mut(cmd: &mut Command) -> &mut Command {
    match cmd {
        Command::Authorized(w) => &mut w.command,
        c => c,
    }
}

/// `full_ttl_reset_at_election`: every lease's countdown restarts at `now`
/// with its full TTL (etcd issue 9395).
pub(crate) fn reset_full_ttls(table: &LockTable, deadlines: &mut Deadlines, now: Duration) {
    for lease in table.leases() {
        let effect = warden_core::Effect::LeaseSet {
            lease_id: lease.lease_id,
            ttl_ms: lease.ttl_ms,
        };
        deadlines.on_effect(&effect, now, now);
    }
}

/// `outcome_table_not_in_snapshot`: the snapshot bytes of `table`, last
/// applied at `index` under `leader`, with every client's outcome record
/// dropped.
pub(crate) fn without_outcomes(table: &LockTable, index: u64, leader: LeaderId) -> Vec<u8> {
    let mut t = table.clone();
    let clients: Vec<(u64, u64)> = t.clients().collect();
    let _ = t.apply(
        index,
        leader,
        &Command::DropClients(warden_core::types::DropClients { leader, clients }),
    );
    t.to_snapshot()
}
