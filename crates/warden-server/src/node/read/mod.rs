//! The read paths. One linearizable read path ([`Node::linearizable_read`]:
//! read-index with a quorum, then wait until this node applied that far),
//! and the views the services read, each a method that says what it reads
//! and returns plain values (never a lock on the state machine).
//!
//! Ages, remaining TTLs and the lock-delay left are in cluster time
//! (docs/semantics.md "Time"): the table's instants (a lease's end, a
//! grant's and an enqueue's time, a lock-delay's end) less a `now`, and
//! only what is live at that `now` is shown (an item whose instant has
//! passed has ended, swept or not). A linearizable read's `now` is
//! [`read_now_ms`]: the later of the leader's cluster clock and the table's
//! `now`; a read of the applied table without a read-index (a queued
//! acquire's progress, an answer this node just applied) uses the table's
//! own `now`.
//!
//! # Permissions
//!
//! Every read takes the caller's principal and checks it against the auth
//! table the read is served from (after the read-index wait, under the same
//! machine lock: the table at the read's index; `warden_core::auth` for the
//! matching rules). A refusal is `PermissionDenied` naming the principal,
//! the permission and the target, and nothing is read:
//!
//! | read | needs |
//! |---|---|
//! | `status`, `validate` of a resource (an election's key too) | `read` on it |
//! | `list`, `top` (`node::top`) and `watch` of a prefix P | `read` on a prefix of P (never a silently filtered answer) |
//! | `watch` of one resource | `read` on it |
//! | `lease ttl` | ownership of the lease, or `admin` on `""` |
//! | audit trails, roles, users, limits, `snapshot save`, membership changes | `admin` on `""` |
//!
//! An anonymous caller (`None`: an insecure node) and `root` pass every
//! check. On an insecure node, the calls that change the cluster's
//! administration (forced release, membership, snapshot save, auth changes)
//! are refused unless it runs with `--insecure --allow-admin`
//! ([`Node::insecure_admin_gate`]); with certificates the `admin`
//! permission decides and `--allow-admin` plays no part.

use std::time::Duration;

use openraft::async_runtime::WatchReceiver as _;
use tokio::sync::watch;
use warden_core::auth::Target;
use warden_core::resource::Waiter;
use warden_core::types::{
    AuditRecord, CommandError, ErrorCode, FencingToken, LeaseId, LockKind, LogIndex, Mode,
    Permission,
};
use warden_core::{validate, LockTable, TokenState};

use super::error::command_error;
use super::renew::{ownership, Ownership};
use super::{Node, Principal, ReadError, COMMIT_TIMEOUT_MS};
use crate::events::EventLog;
use crate::store::Machine;
use crate::types::leader_of;

mod auth;
mod waiter;

pub use auth::{DenyListInfo, RoleInfo, UserInfo};
pub use waiter::{QueueBehind, WaiterStep};

/// A resource's holder, as `status` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HolderStatus {
    /// The holding lease.
    pub lease_id: LeaseId,
    /// Its grant's fencing token.
    pub fencing_token: FencingToken,
    /// The lease's TTL left at the read's cluster time, in milliseconds.
    pub ttl_remaining_ms: u64,
    /// The lease's TTL in milliseconds.
    pub ttl_ms: u64,
    /// The value the holder published (elections), or "".
    pub value: String,
    /// Exclusive, or shared (a reader or a permit).
    pub mode: Mode,
    /// A permit's slot.
    pub slot: Option<u32>,
}

/// A resource as `status` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceStatus {
    /// The log index the read is linearizable at.
    pub read_index: LogIndex,
    /// Every holder: the exclusive one, or every reader or permit.
    pub holders: Vec<HolderStatus>,
    /// Its kind while anything is on it (docs/semantics.md "Lock kinds").
    pub kind: Option<LockKind>,
    /// Live waiters queued on it.
    pub waiters: u64,
    /// The lock-delay left at the read's cluster time, in milliseconds,
    /// when the resource is in its lock-delay (no holder); 0 = none.
    pub lock_delay_remaining_ms: u64,
}

/// A fencing token checked against the table (`validate`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TokenCheck {
    /// The log index the read is linearizable at.
    pub read_index: LogIndex,
    /// Current, stale or unknown.
    pub state: TokenState,
    /// The holder's token now (0: free).
    pub holder_token: FencingToken,
}

/// A live lease, as `lease ttl` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaseStatus {
    /// The log index the read is linearizable at.
    pub read_index: LogIndex,
    /// The lease.
    pub lease_id: LeaseId,
    /// Its TTL in milliseconds.
    pub ttl_ms: u64,
    /// Its TTL left at the read's cluster time, in milliseconds.
    pub ttl_remaining_ms: u64,
    /// Resources it holds.
    pub locks: Vec<String>,
    /// Resources it waits on.
    pub waits: Vec<String>,
    /// Whether a new leader's grace keeps it live past its own
    /// `expires_at` (L4: the last promote's `no_expiry_before` is later,
    /// and its last grant or renew came after the promote before that one;
    /// docs/semantics.md "Time").
    pub graced: bool,
}

/// One waiter of a listed resource.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListedWaiter {
    /// The waiting lease.
    pub lease_id: LeaseId,
    /// How long it has waited, in cluster time, in milliseconds.
    pub age_ms: u64,
}

/// The holder of a listed resource.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListedHolder {
    /// The holding lease.
    pub lease_id: LeaseId,
    /// Its grant's token.
    pub fencing_token: FencingToken,
    /// How long it has held, in cluster time, in milliseconds.
    pub age_ms: u64,
    /// The lease's TTL left at the read's cluster time, in milliseconds.
    pub ttl_remaining_ms: u64,
    /// The principal owning the lease (None: anonymous, an insecure node).
    pub owner: Option<String>,
    /// Exclusive, or shared (a reader or a permit).
    pub mode: Mode,
    /// A permit's slot.
    pub slot: Option<u32>,
}

/// One resource with a holder or waiters (`list`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListedLock {
    /// Its name (an election's internal key for elections).
    pub resource: String,
    /// Every holder: the exclusive one, or every reader or permit.
    pub holders: Vec<ListedHolder>,
    /// Its kind (docs/semantics.md "Lock kinds").
    pub kind: LockKind,
    /// Live waiters in FIFO order.
    pub waiters: Vec<ListedWaiter>,
    /// The lock-delay left at the read's cluster time, in milliseconds,
    /// when the resource is in its lock-delay (no holder); 0 = none.
    pub lock_delay_remaining_ms: u64,
}

impl ResourceStatus {
    /// The exclusive holder (a mutex's, or a writer), if any: the wire's
    /// `holder`, which an older client reads.
    pub fn holder(&self) -> Option<&HolderStatus> {
        self.holders.iter().find(|h| h.mode == Mode::Exclusive)
    }
}

impl ListedLock {
    /// The exclusive holder (a mutex's, or a writer), if any.
    pub fn holder(&self) -> Option<&ListedHolder> {
        self.holders.iter().find(|h| h.mode == Mode::Exclusive)
    }
}

/// A consistent copy of the table for a backup (`snapshot save`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SnapshotCut {
    /// The index the copy was taken at.
    pub applied_index: LogIndex,
    /// The term of the leader of that entry.
    pub term: u64,
    /// The node id of the leader of that entry.
    pub leader_node_id: u64,
    /// The table's snapshot bytes.
    pub data: Vec<u8>,
}

/// Cluster time (ms) for a linearizable read: the later of the leader's
/// cluster clock (`leader_clock`: Some while this node leads with its base
/// set) and the table's `now` (docs/semantics.md "Time"). A read of the
/// applied table without a read-index uses the table's `now` alone.
pub(crate) fn read_now_ms(table: &LockTable, leader_clock: Option<u64>) -> u64 {
    leader_clock.map_or(table.now_ms(), |c| c.max(table.now_ms()))
}

/// The max-hold (ms, 0: none) of the grant (`resource`, `lease_id`,
/// `fencing_token`) in `m`'s table.
pub(super) fn grant_max_hold_ms(
    m: &Machine,
    resource: &str,
    lease_id: LeaseId,
    fencing_token: FencingToken,
) -> u64 {
    m.table
        .max_hold(resource, lease_id)
        .filter(|h| h.fencing_token == fencing_token)
        .map_or(0, |h| h.max_hold_ms)
}

/// The lock-delay left on `resource` at cluster time `now_ms`, in
/// milliseconds (0: none, or it has ended).
pub(super) fn lock_delay_left_ms(table: &LockTable, resource: &str, now_ms: u64) -> u64 {
    table
        .lock_delay(resource)
        .map_or(0, |d| d.ends_at_ms.saturating_sub(now_ms))
}

/// The TTL left of lease `lease_id` at cluster time `now_ms`, in
/// milliseconds (0: not live).
fn ttl_left_ms(table: &LockTable, lease_id: LeaseId, now_ms: u64) -> u64 {
    table
        .lease(lease_id)
        .map_or(0, |l| table.lease_remaining_ms_at(l, now_ms))
}

/// Whether waiter `w` is live at cluster time `now_ms`: its wait has not
/// run out and its lease has not ended.
pub(super) fn waiter_live_at(table: &LockTable, w: &Waiter, now_ms: u64) -> bool {
    now_ms < w.deadline_ms && table.lease_live_at(w.lease_id, now_ms)
}

impl Node {
    /// Confirms leadership with a quorum (read-index), then waits until this
    /// node has applied up to that index; returns the index. A read served
    /// after this is linearizable.
    pub async fn linearizable_read(&self) -> Result<LogIndex, ReadError> {
        if self.leader_id_if_leader().is_none() {
            return Err(ReadError::NotLeader {
                leader: self.leader(),
            });
        }
        let timeout = Duration::from_millis(COMMIT_TIMEOUT_MS);
        let read = tokio::time::timeout(
            timeout,
            self.raft
                .ensure_linearizable(openraft::ReadPolicy::ReadIndex),
        )
        .await
        .map_err(|_| ReadError::NoQuorum {
            reason: "read-index did not complete in time".into(),
        })?
        .map_err(|e| ReadError::NoQuorum {
            reason: e.to_string(),
        })?;
        let read_index = read.index();
        self.wait_applied(read_index, timeout).await?;
        Ok(read_index)
    }

    /// Checks that a watch may wait for `start_index`: at most the cluster's
    /// commit index + 1 (the next entry). An index this node has applied
    /// (or the one after it, or 0: "from now") needs nothing more. Beyond
    /// it, the leader confirms its commit index with a quorum (the
    /// read-index round of [`Node::linearizable_read`]) and refuses an index
    /// above that + 1; a follower serves an index it knows the cluster has
    /// committed up to (the commit index the leader last reported, which a
    /// follower lagging in its log or its apply learns ahead of the
    /// entries: a client's legitimate resume at i + 1 after an event at i),
    /// waiting at most two heartbeat intervals for the leader's next report,
    /// and otherwise refers the caller to the leader, which can confirm it.
    ///
    /// # Errors
    /// [`ReadError::BeyondCommit`] naming both indexes (on the leader);
    /// [`ReadError::NotLeader`] from a follower that could not confirm it;
    /// the errors of a linearizable read.
    pub async fn check_watch_start(&self, start_index: LogIndex) -> Result<(), ReadError> {
        let applied = *self.shared.applied.subscribe().borrow();
        if start_index <= applied.saturating_add(1) {
            return Ok(());
        }
        // The newest index a client can have seen before asking for this one.
        let seen = start_index - 1;
        if self.leader_id_if_leader().is_some() {
            let commit_index = self.linearizable_read().await?;
            if seen > commit_index {
                return Err(ReadError::BeyondCommit {
                    start_index,
                    commit_index,
                });
            }
            return Ok(());
        }
        let index = |l: &Option<crate::types::LogId>| l.as_ref().map(|l| l.index()).unwrap_or(0);
        let mut rx = self.raft.metrics();
        let known = async {
            loop {
                let committed = {
                    let m = rx.borrow_watched();
                    index(&m.cluster_committed).max(index(&m.local_committed))
                };
                if committed >= seen {
                    return Ok(());
                }
                if rx.changed().await.is_err() {
                    return Err(ReadError::NotServing {
                        reason: "node stopping".into(),
                    });
                }
            }
        };
        // A live leader reports its commit index at least every heartbeat;
        // well within a client's attempt timeout.
        let wait = Duration::from_millis(2 * self.config.timing.heartbeat_ms);
        match tokio::time::timeout(wait, known).await {
            Ok(known) => known,
            Err(_) => Err(ReadError::NotLeader {
                leader: self.leader(),
            }),
        }
    }

    /// Waits until this node has applied `index` or `timeout` passes.
    pub async fn wait_applied(&self, index: LogIndex, timeout: Duration) -> Result<(), ReadError> {
        let mut rx = self.shared.applied.subscribe();
        let fut = async {
            loop {
                if *rx.borrow_and_update() >= index {
                    return Ok(());
                }
                if rx.changed().await.is_err() {
                    return Err(ReadError::NotServing {
                        reason: "node stopping".into(),
                    });
                }
            }
        };
        tokio::time::timeout(timeout, fut)
            .await
            .map_err(|_| ReadError::NoQuorum {
                reason: "apply did not catch up in time".into(),
            })?
    }

    /// The state machine for a short read (never across an await).
    pub(super) fn machine(&self) -> Result<std::sync::MutexGuard<'_, Machine>, ReadError> {
        self.shared
            .machine
            .lock()
            .map_err(|_| ReadError::NotServing {
                reason: "state poisoned".into(),
            })
    }

    /// `status`: who holds `resource` and how many wait, linearizable.
    pub async fn resource_status(
        &self,
        principal: &Principal,
        resource: &str,
    ) -> Result<ResourceStatus, ReadError> {
        validate::resource(resource)?;
        let read_index = self.linearizable_read().await?;
        let leader_clock = self.leader_clock_ms();
        let m = self.machine()?;
        allowed(
            &m,
            principal,
            Permission::Read,
            Target::Resource(resource),
            "resource",
        )?;
        let now = read_now_ms(&m.table, leader_clock);
        let status = |h: &warden_core::HolderView| HolderStatus {
            lease_id: h.lease_id,
            fencing_token: h.fencing_token,
            ttl_remaining_ms: ttl_left_ms(&m.table, h.lease_id, now),
            ttl_ms: h.ttl_ms,
            value: m
                .table
                .value(h.lease_id, resource)
                .unwrap_or_default()
                .to_owned(),
            mode: h.mode,
            slot: h.slot,
        };
        Ok(ResourceStatus {
            read_index,
            holders: m
                .table
                .holders_at(resource, now)
                .iter()
                .map(status)
                .collect(),
            kind: m.table.kind(resource),
            waiters: m.table.resource(resource).map_or(0, |s| {
                s.waiters
                    .iter()
                    .filter(|w| waiter_live_at(&m.table, w, now))
                    .count() as u64
            }),
            lock_delay_remaining_ms: lock_delay_left_ms(&m.table, resource, now),
        })
    }

    /// `validate`: whether `token` is the current grant of `resource`,
    /// linearizable.
    pub async fn token_check(
        &self,
        principal: &Principal,
        resource: &str,
        token: FencingToken,
    ) -> Result<TokenCheck, ReadError> {
        validate::resource(resource)?;
        validate::fencing_token(token)?;
        let read_index = self.linearizable_read().await?;
        let leader_clock = self.leader_clock_ms();
        let m = self.machine()?;
        allowed(
            &m,
            principal,
            Permission::Read,
            Target::Resource(resource),
            "resource",
        )?;
        let now = read_now_ms(&m.table, leader_clock);
        Ok(TokenCheck {
            read_index,
            state: m.table.token_state_at(resource, token, now),
            holder_token: m
                .table
                .holders_at(resource, now)
                .iter()
                .find(|h| h.mode == Mode::Exclusive)
                .map(|h| h.fencing_token)
                .unwrap_or(0),
        })
    }

    /// `lease ttl`: a lease's TTL, what it holds and waits on; None when it
    /// is not live. Linearizable. Only the lease's owner, or a principal
    /// with `admin` on `""`, may read a live lease (the holder's resources
    /// and TTL are the owner's business); to anyone else another
    /// principal's lease reads as one that is not live (no liveness
    /// oracle).
    pub async fn lease_status(
        &self,
        principal: &Principal,
        lease_id: LeaseId,
    ) -> Result<Option<LeaseStatus>, ReadError> {
        validate::lease_id(lease_id)?;
        let read_index = self.linearizable_read().await?;
        let leader_clock = self.leader_clock_ms();
        let m = self.machine()?;
        let now = read_now_ms(&m.table, leader_clock);
        if ownership(m.table.lease_owner(lease_id), principal) == Ownership::Foreign
            && !m
                .table
                .allows(as_name(principal), Permission::Admin, Target::Prefix(""))
        {
            return Ok(None);
        }
        let live = m
            .table
            .lease(lease_id)
            .filter(|_| m.table.lease_live_at(lease_id, now));
        Ok(live.map(|lease| LeaseStatus {
            read_index,
            lease_id,
            ttl_ms: lease.ttl_ms,
            ttl_remaining_ms: m.table.lease_remaining_ms_at(lease, now),
            locks: lease.locks.iter().cloned().collect(),
            waits: lease.waits.iter().cloned().collect(),
            graced: m.table.lease_end_ms(lease) > lease.expires_at_ms,
        }))
    }

    /// `list`: every resource whose name starts with `prefix` that has a
    /// holder or waiters, linearizable; with the read index. Needs `read` on
    /// a prefix of `prefix`.
    pub async fn list(
        &self,
        principal: &Principal,
        prefix: &str,
    ) -> Result<(LogIndex, Vec<ListedLock>), ReadError> {
        check_prefix(prefix)?;
        let read_index = self.linearizable_read().await?;
        let leader_clock = self.leader_clock_ms();
        let m = self.machine()?;
        allowed(
            &m,
            principal,
            Permission::Read,
            Target::Prefix(prefix),
            "prefix",
        )?;
        let now = read_now_ms(&m.table, leader_clock);
        let table = &m.table;
        let locks = table
            .resources_with_prefix(prefix)
            .map(|(name, state)| {
                let listed = |g: &warden_core::Grant| ListedHolder {
                    lease_id: g.lease_id,
                    fencing_token: g.fencing_token,
                    age_ms: now.saturating_sub(g.granted_at_ms),
                    ttl_remaining_ms: ttl_left_ms(table, g.lease_id, now),
                    owner: table.lease_owner(g.lease_id).flatten().map(str::to_owned),
                    mode: g.mode,
                    slot: g.slot,
                };
                ListedLock {
                    resource: name.clone(),
                    holders: state
                        .holders()
                        .filter(|g| table.grant_live_at(name, g, now))
                        .map(listed)
                        .collect(),
                    kind: state.kind,
                    waiters: state
                        .waiters
                        .iter()
                        .filter(|w| waiter_live_at(table, w, now))
                        .map(|w| ListedWaiter {
                            lease_id: w.lease_id,
                            age_ms: now.saturating_sub(w.enqueued_at_ms()),
                        })
                        .collect(),
                    lock_delay_remaining_ms: lock_delay_left_ms(table, name, now),
                }
            })
            // Only what is live at `now`: a resource whose every item has
            // ended (not swept yet) is not listed.
            .filter(|l| {
                !l.holders.is_empty() || !l.waiters.is_empty() || l.lock_delay_remaining_ms > 0
            })
            .collect();
        Ok((read_index, locks))
    }

    /// `audit`: the forced releases the table keeps, oldest first,
    /// linearizable; with the read index. Needs `admin` on `""`.
    pub async fn audit_trail(
        &self,
        principal: &Principal,
    ) -> Result<(LogIndex, Vec<AuditRecord>), ReadError> {
        let read_index = self.linearizable_read().await?;
        let m = self.machine()?;
        admin(&m, principal)?;
        Ok((read_index, m.table.audit_trail().cloned().collect()))
    }

    /// Checks `permission` on `target` for `principal` against the table as
    /// this node has applied it now (no read-index: for streams that follow
    /// the applied table, like `watch`, and for calls that are not reads of
    /// the table, like membership changes); returns the applied index the
    /// check was made at.
    ///
    /// # Errors
    /// [`ReadError::Refused`] with PermissionDenied (field `field`).
    pub fn check_applied(
        &self,
        principal: &Principal,
        permission: Permission,
        target: Target<'_>,
        field: Option<&str>,
    ) -> Result<LogIndex, ReadError> {
        let m = self.machine()?;
        m.table
            .auth()
            .check(principal.as_ref(), permission, target, field)?;
        Ok(m.last_applied.as_ref().map(|l| l.index()).unwrap_or(0))
    }

    /// On an insecure node (`principal` None), `what` (an administration
    /// call: forced release, membership change, snapshot save, auth change)
    /// is allowed only with `--insecure --allow-admin`; a caller with a
    /// principal passes here (the `admin` permission decides for it).
    ///
    /// # Errors
    /// PermissionDenied naming the flags.
    pub fn insecure_admin_gate(
        &self,
        principal: &Principal,
        what: &str,
    ) -> Result<(), CommandError> {
        if principal.is_some() || self.config.allow_admin {
            return Ok(());
        }
        Err(command_error(
            ErrorCode::PermissionDenied,
            None,
            format!(
                "{what} is disabled on this node: start `warden server` with --insecure \
                 --allow-admin (or `allow-admin = true` in its config file) to allow it, or \
                 serve with certificates (--certs-dir), where the admin permission decides"
            ),
        ))
    }

    /// `snapshot save`: the table at this leader's applied index, after a
    /// read-index (every entry committed before the request is in it), copied
    /// under the machine lock (one consistent cut). Needs `admin` on `""`
    /// (the copy holds every lease, owner and outcome).
    pub async fn snapshot_cut(&self, principal: &Principal) -> Result<SnapshotCut, ReadError> {
        self.insecure_admin_gate(principal, "snapshot save")?;
        self.linearizable_read().await?;
        let m = self.machine()?;
        admin(&m, principal)?;
        let log_id = m.last_applied.ok_or_else(|| ReadError::NotServing {
            reason: "nothing applied yet; retry shortly".into(),
        })?;
        let leader = leader_of(&log_id);
        Ok(SnapshotCut {
            applied_index: log_id.index(),
            term: leader.term,
            leader_node_id: leader.node_id,
            data: m.table.to_snapshot(),
        })
    }

    /// The lock-delay left on `resource` in this node's applied table at
    /// its cluster time, in milliseconds (0: none, or the state is
    /// unusable). No read-index: for the answer to an acquire this node
    /// just applied (refused for the lock-delay), which is at least as new
    /// as that entry.
    pub fn lock_delay_remaining_ms(&self, resource: &str) -> u64 {
        self.shared
            .machine
            .lock()
            .map(|m| lock_delay_left_ms(&m.table, resource, m.table.now_ms()))
            .unwrap_or(0)
    }

    /// This node's cluster clock while it leads with its base set, for
    /// [`read_now_ms`]; None otherwise (a read then uses the table's `now`).
    pub(super) fn leader_clock_ms(&self) -> Option<u64> {
        let leader = self.leader_id_if_leader()?;
        self.cluster_now_ms(leader)
    }

    /// The max-hold (ms, 0: none) of the grant `lease_id` holds on
    /// `resource` with `fencing_token` in this node's applied table; for
    /// the answer to an acquire this node just applied.
    pub fn max_hold_ms(
        &self,
        resource: &str,
        lease_id: LeaseId,
        fencing_token: FencingToken,
    ) -> u64 {
        self.shared
            .machine
            .lock()
            .map(|m| grant_max_hold_ms(&m, resource, lease_id, fencing_token))
            .unwrap_or(0)
    }

    /// The last applied log index, watched (changes after every apply).
    pub fn applied(&self) -> watch::Receiver<LogIndex> {
        self.shared.applied.subscribe()
    }

    /// Wakes after each apply that touched `resource` (see
    /// [`crate::wakes`]); take it before reading the resource's state.
    pub fn follow_resource(&self, resource: &str) -> crate::wakes::ResourceWake {
        self.shared.wakes.follow(resource)
    }

    /// This node's watch event log (fed at apply, node-local).
    pub fn events(&self) -> &EventLog {
        &self.shared.events
    }
}

/// The caller's name for the table's permission checks (None: anonymous).
fn as_name(principal: &Principal) -> Option<&str> {
    principal.as_ref().map(|p| p.as_str())
}

/// A prefix argument (`list`, `top`): at most a resource name's length.
pub(super) fn check_prefix(prefix: &str) -> Result<(), ReadError> {
    let max = warden_core::limits::MAX_RESOURCE_BYTES;
    if prefix.len() > max {
        return Err(command_error(
            ErrorCode::InvalidArgument,
            Some("prefix"),
            format!("at most {max} bytes; got {}", prefix.len()),
        )
        .into());
    }
    Ok(())
}

/// `permission` on `target` for `principal` in `m`'s table, or
/// PermissionDenied naming them (field `field`).
pub(super) fn allowed(
    m: &Machine,
    principal: &Principal,
    permission: Permission,
    target: Target<'_>,
    field: &str,
) -> Result<(), ReadError> {
    m.table
        .auth()
        .check(principal.as_ref(), permission, target, Some(field))
        .map_err(ReadError::Refused)
}

/// `admin` on `""` for `principal` in `m`'s table.
pub(super) fn admin(m: &Machine, principal: &Principal) -> Result<(), ReadError> {
    m.table
        .auth()
        .check(
            principal.as_ref(),
            Permission::Admin,
            Target::Prefix(""),
            None,
        )
        .map_err(ReadError::Refused)
}
