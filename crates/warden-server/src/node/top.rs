//! `top`: the most contended resources under a prefix ([`Node::top_locks`]),
//! from the table (queue length, oldest waiter's age) and this node's
//! hot-locks window (the last minute's grants, expiries and wait p99;
//! [`crate::hot_locks`]), all in cluster time at the read's `now`
//! ([`super::read::read_now_ms`]). Served by the leader after a
//! read-index, like `list`, and with `list`'s permission: `read` on a
//! prefix of the prefix.

use std::collections::BTreeMap;

use warden_core::auth::Target;
use warden_core::types::{ErrorCode, LogIndex, Permission};

use super::error::command_error;
use super::read::{allowed, check_prefix, read_now_ms, waiter_live_at};
use super::{Node, Principal, ReadError};
use crate::hot_locks::{HotLock, QueueNow};

/// The most hot locks one `top` may ask for.
pub const MAX_TOP_LIMIT: u32 = 1_000;

impl Node {
    /// `top`: the `limit` hottest resources whose name starts with `prefix`
    /// (see [`crate::hot_locks::HotLocks::rank`] for the order),
    /// linearizable; with the read index. Needs `read` on a prefix of
    /// `prefix`.
    ///
    /// # Errors
    /// InvalidArgument naming `prefix` (over 512 bytes) or `limit` (not 1 to
    /// [`MAX_TOP_LIMIT`]); PermissionDenied; NotLeader / NoQuorum.
    pub async fn top_locks(
        &self,
        principal: &Principal,
        prefix: &str,
        limit: u32,
    ) -> Result<(LogIndex, Vec<HotLock>), ReadError> {
        check_prefix(prefix)?;
        if !(1..=MAX_TOP_LIMIT).contains(&limit) {
            return Err(command_error(
                ErrorCode::InvalidArgument,
                Some("limit"),
                format!("must be 1 to {MAX_TOP_LIMIT}; got {limit}"),
            )
            .into());
        }
        let read_index = self.linearizable_read().await?;
        let leader_clock = self.leader_clock_ms();
        let (now, queues) = {
            let m = self.machine()?;
            allowed(
                &m,
                principal,
                Permission::Read,
                Target::Prefix(prefix),
                "prefix",
            )?;
            let now = read_now_ms(&m.table, leader_clock);
            let queues = m
                .table
                .resources_with_prefix(prefix)
                .filter_map(|(name, state)| {
                    // Live waiters only; the queue is in enqueue order, so
                    // its first is the oldest.
                    let mut live = state
                        .waiters
                        .iter()
                        .filter(|w| waiter_live_at(&m.table, w, now));
                    let oldest = live.next()?;
                    let queue = QueueNow {
                        queue_length: 1 + live.count() as u64,
                        oldest_waiter_age_ms: now.saturating_sub(oldest.enqueued_at_ms()),
                    };
                    Some((name.clone(), queue))
                })
                .collect::<BTreeMap<_, _>>();
            (now, queues)
        };
        let hot = self
            .shared
            .hot_locks
            .rank(prefix, queues, now, limit as usize);
        Ok((read_index, hot))
    }
}
