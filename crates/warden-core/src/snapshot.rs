//! Snapshot encoding of the [`LockTable`]: one version byte, then postcard.
//!
//! Every collection in the table is ordered (`BTreeMap`, `BTreeSet`, `Vec`),
//! so equal tables give byte-identical snapshots on every replica
//! (docs/semantics.md "Time", last point). Decoding never panics: garbage
//! gives a [`SnapshotError`], and a decoded table must pass
//! [`LockTable::check_invariants`].
//!
//! Layout (each part postcard, one after the other):
//!
//! | part | since version |
//! |---|---|
//! | the table body (leases without owners, resources, `(None, _)` outcome records, counters) | 1 |
//! | the forced-release audit trail | 2 |
//! | published values (elections) | 3 |
//! | the auth table (roles, grants, role quotas, principals' roles, cluster-wide limits and default quota) | 4 |
//! | lease owners: lease id → principal, for owned leases | 4 |
//! | principals' outcome records: principal → client id → record | 4 |
//! | the auth audit trail | 4 |
//! | multi-locks: (lease, first resource) → resources, enqueue index, grant index | 6 |
//! | max-holds: (resource, lease) → token, grant index, cap, remaining cap; then (resource, lease, enqueue index) → a waiter's cap | 7 |
//! | the duty clock: (advance index, clock ms) of the last hour's advances | 8 |
//!
//! Version 5 changed the table body's resource shape (a resource's kind and
//! shared holders, a grant's mode and slot, a waiter's mode, a lock-delay's
//! scope: docs/semantics.md "Lock kinds"); a body of versions 1 to 4 is read
//! in its own shape ([`legacy`]) and every resource in it becomes a mutex.
//! Version 6 appended the multi-locks part and left the body's shape as
//! version 5 has it, so a version-5 snapshot loads with no multi-locks.
//! Version 7 appended the max-holds part (docs/semantics.md "Max-hold"); an
//! older snapshot loads with no max-holds.
//! Version 8 appended the duty clock ([`crate::duty_clock`]); an older
//! snapshot loads with the clock not running, so its remaining times are
//! read as recorded, as they were written.
//!
//! An older version loads with the parts it lacks empty: no roles (only
//! `root` and anonymous callers can act), default limits, ownerless leases,
//! every outcome record `(None, id)`, empty trails. Derived state (per
//! principal usage, the outcome table's indexes) is rebuilt on load.

use std::collections::{BTreeMap, VecDeque};

use crate::outcome::NamedRecords;
use crate::table::LockTable;
use crate::types::{AuthAuditRecord, LeaseId, Principal};

/// The current snapshot format version (the first byte): see the module
/// docs for what each version adds. Versions 1 to 7 still load.
pub const SNAPSHOT_VERSION: u8 = 8;

/// Why a snapshot could not be loaded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SnapshotError {
    /// Zero bytes.
    #[error("empty snapshot")]
    Empty,
    /// The version byte names a format this build does not know.
    #[error("unsupported snapshot version {0} (this build reads version {SNAPSHOT_VERSION})")]
    UnsupportedVersion(u8),
    /// The body is not a postcard-encoded table.
    #[error("snapshot does not decode: {0}")]
    Decode(String),
    /// Bytes were left over after the table.
    #[error("snapshot has {0} trailing bytes")]
    TrailingBytes(usize),
    /// The table decoded but is internally inconsistent.
    #[error("snapshot is inconsistent: {0}")]
    Inconsistent(String),
}

fn decode(e: postcard::Error) -> SnapshotError {
    SnapshotError::Decode(e.to_string())
}

impl LockTable {
    /// Encodes the whole table: [`SNAPSHOT_VERSION`] then postcard. Equal
    /// tables give identical bytes.
    pub fn to_snapshot(&self) -> Vec<u8> {
        // postcard cannot fail on these types (every sequence and map has a
        // known length); should it ever, the bare version byte is refused by
        // `from_snapshot` instead of loading a wrong table.
        let owners: BTreeMap<LeaseId, &Principal> = self
            .leases
            .iter()
            .filter_map(|(id, l)| l.owner.as_ref().map(|p| (*id, p)))
            .collect();
        postcard::to_extend(self, vec![SNAPSHOT_VERSION])
            .and_then(|bytes| postcard::to_extend(&self.audit, bytes))
            .and_then(|bytes| postcard::to_extend(&self.values, bytes))
            .and_then(|bytes| postcard::to_extend(&self.auth, bytes))
            .and_then(|bytes| postcard::to_extend(&owners, bytes))
            .and_then(|bytes| postcard::to_extend(self.outcomes.named(), bytes))
            .and_then(|bytes| postcard::to_extend(&self.auth_audit, bytes))
            .and_then(|bytes| postcard::to_extend(&self.multis, bytes))
            .and_then(|bytes| postcard::to_extend(&self.max_holds, bytes))
            .and_then(|bytes| postcard::to_extend(&self.wait_max_holds, bytes))
            .and_then(|bytes| postcard::to_extend(&self.clock, bytes))
            .unwrap_or_else(|_| vec![SNAPSHOT_VERSION])
    }

    /// Decodes a snapshot made by [`LockTable::to_snapshot`].
    ///
    /// # Errors
    /// [`SnapshotError`] for an empty input, an unknown version, a body that
    /// does not decode, trailing bytes, or a table that fails
    /// [`LockTable::check_invariants`].
    pub fn from_snapshot(bytes: &[u8]) -> Result<Self, SnapshotError> {
        let (version, body) = bytes.split_first().ok_or(SnapshotError::Empty)?;
        if !(1..=SNAPSHOT_VERSION).contains(version) {
            return Err(SnapshotError::UnsupportedVersion(*version));
        }
        let (mut table, mut rest): (LockTable, &[u8]) = if *version >= 5 {
            postcard::take_from_bytes(body).map_err(decode)?
        } else {
            let (old, rest): (legacy::Body, &[u8]) =
                postcard::take_from_bytes(body).map_err(decode)?;
            (old.into_table(), rest)
        };
        if *version >= 2 {
            let (audit, after) = postcard::take_from_bytes(rest)
                .map_err(|e| SnapshotError::Decode(e.to_string()))?;
            table.audit = audit;
            rest = after;
        }
        if *version >= 3 {
            let (values, after) = postcard::take_from_bytes(rest)
                .map_err(|e| SnapshotError::Decode(e.to_string()))?;
            table.values = values;
            rest = after;
        }
        if *version >= 4 {
            let (auth, after) = postcard::take_from_bytes(rest).map_err(decode)?;
            table.auth = auth;
            let (owners, after): (BTreeMap<LeaseId, Principal>, _) =
                postcard::take_from_bytes(after).map_err(decode)?;
            for (id, owner) in owners {
                let lease = table.leases.get_mut(&id).ok_or_else(|| {
                    SnapshotError::Inconsistent(format!("owner of lease {id}, which is not live"))
                })?;
                lease.owner = Some(owner);
            }
            let (named, after): (NamedRecords, _) =
                postcard::take_from_bytes(after).map_err(decode)?;
            table.outcomes.set_named(named);
            let (auth_audit, after): (VecDeque<AuthAuditRecord>, _) =
                postcard::take_from_bytes(after).map_err(decode)?;
            table.auth_audit = auth_audit;
            rest = after;
        }
        if *version >= 6 {
            let (multis, after) = postcard::take_from_bytes(rest).map_err(decode)?;
            table.multis = multis;
            rest = after;
        }
        if *version >= 7 {
            let (max_holds, after) = postcard::take_from_bytes(rest).map_err(decode)?;
            table.max_holds = max_holds;
            let (wait_max_holds, after) = postcard::take_from_bytes(after).map_err(decode)?;
            table.wait_max_holds = wait_max_holds;
            rest = after;
        }
        if *version >= 8 {
            let (clock, after) = postcard::take_from_bytes(rest).map_err(decode)?;
            table.clock = clock;
            rest = after;
        }
        table.usage = table.computed_usage();
        if !rest.is_empty() {
            return Err(SnapshotError::TrailingBytes(rest.len()));
        }
        table
            .check_invariants()
            .map_err(SnapshotError::Inconsistent)?;
        Ok(table)
    }
}

/// The table body of snapshot versions 1 to 4: every resource a mutex, no
/// mode, slot or delay scope. Field order is the encoding; never change it.
pub(crate) mod legacy {
    use std::collections::BTreeMap;

    use serde::{Deserialize, Serialize};

    use crate::outcome::OutcomeTable;
    use crate::resource::{DelayScope, Grant, LockDelay, ResourceState, Waiter};
    use crate::table::{LeaseRecord, LockTable};
    use crate::types::{FencingToken, LeaderId, LeaseId, LockKind, LogIndex, Mode, RequestHeader};

    #[derive(Serialize, Deserialize)]
    pub(super) struct Body {
        next_token: u64,
        next_lease_id: u64,
        leases: BTreeMap<LeaseId, LeaseRecord>,
        resources: BTreeMap<String, Resource>,
        outcomes: OutcomeTable,
        last_promote: Option<(LeaderId, LogIndex)>,
    }

    #[derive(Serialize, Deserialize)]
    struct Resource {
        holder: Option<OldGrant>,
        waiters: Vec<OldWaiter>,
        lock_delay: Option<OldDelay>,
    }

    #[derive(Serialize, Deserialize)]
    struct OldGrant {
        lease_id: LeaseId,
        fencing_token: FencingToken,
        ttl_ms: u64,
        grant_index: LogIndex,
        lock_delay_ms: u64,
    }

    #[derive(Serialize, Deserialize)]
    struct OldWaiter {
        lease_id: LeaseId,
        enqueue_index: LogIndex,
        wait_timeout_ms: u64,
        remaining_wait_ms: u64,
        lock_delay_ms: u64,
        header: RequestHeader,
    }

    #[derive(Serialize, Deserialize)]
    struct OldDelay {
        start_index: LogIndex,
        lock_delay_ms: u64,
        remaining_ms: u64,
    }

    impl Body {
        pub(super) fn into_table(self) -> LockTable {
            let mut table = LockTable::new();
            table.next_token = self.next_token;
            table.next_lease_id = self.next_lease_id;
            table.leases = self.leases;
            table.outcomes = self.outcomes;
            table.last_promote = self.last_promote;
            table.resources = self
                .resources
                .into_iter()
                .map(|(name, r)| (name, r.into_state()))
                .collect();
            table
        }
    }

    impl Resource {
        fn into_state(self) -> ResourceState {
            ResourceState {
                holder: self.holder.map(|g| Grant {
                    lease_id: g.lease_id,
                    fencing_token: g.fencing_token,
                    ttl_ms: g.ttl_ms,
                    grant_index: g.grant_index,
                    lock_delay_ms: g.lock_delay_ms,
                    mode: Mode::Exclusive,
                    slot: None,
                }),
                waiters: self
                    .waiters
                    .into_iter()
                    .map(|w| Waiter {
                        lease_id: w.lease_id,
                        enqueue_index: w.enqueue_index,
                        wait_timeout_ms: w.wait_timeout_ms,
                        remaining_wait_ms: w.remaining_wait_ms,
                        lock_delay_ms: w.lock_delay_ms,
                        header: w.header,
                        mode: Mode::Exclusive,
                    })
                    .collect(),
                lock_delay: self.lock_delay.map(|d| LockDelay {
                    start_index: d.start_index,
                    lock_delay_ms: d.lock_delay_ms,
                    remaining_ms: d.remaining_ms,
                    scope: DelayScope::All,
                }),
                kind: LockKind::Mutex,
                shared: BTreeMap::new(),
            }
        }
    }

    /// Tests only: `version` (1 to 4) then the body of `t` in the old shape
    /// (its mutexes; other kinds did not exist), as those versions wrote it.
    #[cfg(test)]
    pub(crate) fn encode_body(t: &LockTable, version: u8) -> Vec<u8> {
        let body = Body {
            next_token: t.next_token,
            next_lease_id: t.next_lease_id,
            leases: t.leases.clone(),
            resources: t
                .resources
                .iter()
                .map(|(name, r)| {
                    let old = Resource {
                        holder: r.holder.as_ref().map(|g| OldGrant {
                            lease_id: g.lease_id,
                            fencing_token: g.fencing_token,
                            ttl_ms: g.ttl_ms,
                            grant_index: g.grant_index,
                            lock_delay_ms: g.lock_delay_ms,
                        }),
                        waiters: r
                            .waiters
                            .iter()
                            .map(|w| OldWaiter {
                                lease_id: w.lease_id,
                                enqueue_index: w.enqueue_index,
                                wait_timeout_ms: w.wait_timeout_ms,
                                remaining_wait_ms: w.remaining_wait_ms,
                                lock_delay_ms: w.lock_delay_ms,
                                header: w.header,
                            })
                            .collect(),
                        lock_delay: r.lock_delay.as_ref().map(|d| OldDelay {
                            start_index: d.start_index,
                            lock_delay_ms: d.lock_delay_ms,
                            remaining_ms: d.remaining_ms,
                        }),
                    };
                    (name.clone(), old)
                })
                .collect(),
            outcomes: t.outcomes.clone(),
            last_promote: t.last_promote,
        };
        postcard::to_extend(&body, vec![version]).expect("old body")
    }
}
