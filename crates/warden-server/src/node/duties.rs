//! Leader duties (docs/semantics.md "Time"): the new leader's `Promote`,
//! ticks while something in the table is due, and idle clients' drops.
//!
//! Expiry needs no duty of its own: every entry's apply moves cluster time
//! and ends due items (at most [`warden_core::MAX_SWEEP_PER_ENTRY`]), and
//! an item whose instant has passed is ended for every decision, swept or
//! not. The leader only keeps entries coming: it proposes a
//! [`Command::Tick`] when the table's earliest instant is due on its clock,
//! and keeps ticking while due items remain; and while the table holds
//! anything with an instant it ticks when its applied `now` is
//! [`IDLE_TICK_MS`] behind the leader's clock (no entry for that long), so
//! what reads the applied time (hold durations, follower views, snapshots)
//! is never more than that stale. An empty table (no instant) needs no
//! ticks.
//!
//! Every duty entry is proposed to the *local* Raft handle, never through a
//! forwarding path (etcd issue 15247), and is stamped with this leader's id,
//! so apply ignores its time (and a `Promote`) if leadership moved on. No
//! duty runs before this leader's own `Promote` has applied.
//!
//! Leader duties never carry a principal and never pass the permission layer
//! (`warden_core::auth`): ticks, the promote and idle-client drops go on
//! whatever the auth table says (etcd issues 13975 and 14616: leases stopped
//! expiring when authentication broke). Idle clients are tracked per outcome
//! record, `(principal, client id)`, a slice of the records each tick
//! ([`crate::node::idle_clients`]).

use std::sync::Weak;
use std::time::Duration;

use warden_core::types::{Command, DropClients, LeaderId, Promote};

use crate::node::idle_clients::{IdleClients, CLIENT_IDLE_TIMEOUT_MS};
use crate::node::{Node, SubmitError};

/// Most ticks one duty pass proposes back to back while items stay due: at
/// [`warden_core::MAX_SWEEP_PER_ENTRY`] each, 1,000 ticks end 250,000 items,
/// more than twice the default cap on live leases with a wait each.
pub const MAX_TICKS_PER_PASS: usize = 1_000;

/// The longest a table that holds an instant goes without an entry: the
/// leader ticks once its applied `now` is this far behind its clock.
pub const IDLE_TICK_MS: u64 = 1_000;

/// Proposes this leader's `Promote` (L4): `no_expiry_before_ms` is its base
/// plus the grace G. Returns once it has applied here.
async fn promote(node: &Node, leader: LeaderId, grace_ms: u64) -> Result<(), SubmitError> {
    let base = node.start_leading(leader);
    let cmd = Command::Promote(Promote {
        no_expiry_before_ms: base.saturating_add(grace_ms),
    });
    node.propose_duty(cmd).await.map(|_| ())
}

/// Whether the table needs a tick at cluster time `now_ms`: it holds an
/// item due then, or it holds any instant and its applied `now` is
/// [`IDLE_TICK_MS`] behind.
fn tick_due_at(node: &Node, now_ms: u64) -> Option<bool> {
    let m = node.shared.machine.lock().ok()?;
    Some(
        m.table.next_instant_ms().is_some_and(|at| {
            at <= now_ms || now_ms.saturating_sub(m.table.now_ms()) >= IDLE_TICK_MS
        }),
    )
}

/// Runs the duty loop until the node is gone.
pub async fn run(node: Weak<Node>) {
    let (tick, grace_ms) = match node.upgrade() {
        Some(n) => (
            Duration::from_millis(n.config.timing.duty_interval_ms.max(1)),
            n.config.timing.promotion_grace_ms,
        ),
        None => return,
    };
    let mut interval = tokio::time::interval(tick);
    interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    // Node-local, never replicated: a new leader starts afresh, so a client
    // is dropped no earlier than the idle timeout after its last request.
    let mut idle_clients = IdleClients::default();
    let idle_timeout = Duration::from_millis(CLIENT_IDLE_TIMEOUT_MS);
    loop {
        interval.tick().await;
        let Some(node) = node.upgrade() else { return };
        let Some(leader) = node.leader_id_if_leader() else {
            node.set_promoted(None);
            node.shared.cluster_clock.stop_leading();
            idle_clients.clear();
            continue;
        };
        // 1. Promote, once per term of office and per process: a node
        // restarted while its vote still names it leader resumes that term
        // without an election, and starts its clock's base again.
        let promoted = node
            .promoted
            .lock()
            .map(|p| *p == Some(leader))
            .unwrap_or(false);
        if !promoted {
            match promote(&node, leader, grace_ms).await {
                Ok(()) => {
                    tracing::info!(term = leader.term, "leader duties start (promote applied)");
                    node.set_promoted(Some(leader));
                }
                Err(e) => {
                    tracing::debug!("promote: {}", e);
                    continue;
                }
            }
        }
        // 2. Tick while the earliest instant in the table is due, or once
        // when a table with instants has had no entry for IDLE_TICK_MS.
        for _ in 0..MAX_TICKS_PER_PASS {
            let Some(now_ms) = node.cluster_now_ms(leader) else {
                break;
            };
            match tick_due_at(&node, now_ms) {
                Some(true) => {}
                Some(false) => break,
                None => return,
            }
            if let Err(e) = node.propose_duty(Command::Tick).await {
                tracing::debug!("tick: {}", e);
                break;
            }
        }
        // 3. Drop idle clients' outcome records: a slice of the records a
        // tick (`IdleClients`), never a walk of every client.
        let now = node.shared.clock.now();
        let idle = {
            let Ok(m) = node.shared.machine.lock() else {
                return;
            };
            let records = m.table.client_records_after(idle_clients.after());
            idle_clients.slice(records, now, idle_timeout)
        };
        if !idle.is_empty() {
            let cmd = Command::DropClients(DropClients {
                leader,
                clients: idle,
            });
            if let Err(e) = node.propose_duty(cmd).await {
                tracing::debug!("drop clients: {}", e);
            }
        }
    }
}
