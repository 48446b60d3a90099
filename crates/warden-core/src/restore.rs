//! Restoring a backup into a NEW cluster (docs/semantics.md "Membership and data
//! loss"): the pure transformation of a saved [`LockTable`] before it seeds
//! the new cluster's data dirs.
//!
//! The old cluster may have gone on issuing tokens after the backup was taken,
//! and its holders may still be running. So [`for_new_cluster`]:
//!
//! 1. **Tokens (S2).** Sets the token counter to
//!    `max(next_token, highest token in the table + 1) + token_gap`, and to at
//!    least `token_floor + 1` when a floor is given. No restored grant can
//!    reuse a token a fence has seen, provided the old cluster issued fewer
//!    than `token_gap` tokens after the backup (or the floor is above every
//!    token it issued).
//! 2. **Leases.** Every lease starts over with its full TTL from the table's
//!    cluster time (`expires_at_ms = now + ttl_ms`): its holder gets a full
//!    TTL to reach the new cluster and renew.
//! 3. **Lock-delay.** Every held grant's lock-delay becomes at least
//!    `min(its lease's TTL, MAX_LOCK_DELAY_MS)` and at least
//!    `min_lock_delay_ms`: if the holder never renews in the new cluster, the
//!    resource stays blocked for that long after its lease ends, because the
//!    holder may still be running (against the old cluster) and believe it
//!    holds the lock.
//! 4. **Waits and running lock-delays** restart with their full length
//!    from the table's cluster time.
//! 5. The promotes are forgotten (they are the old cluster's leaders').
//! 6. **Max-holds** keep their end instant (`ends_at_ms`), so each grant
//!    keeps its remaining cap as of the snapshot (docs/semantics.md
//!    "Max-hold"): a restore never lengthens one. The new cluster's time
//!    continues from the table's `now`.
//!
//! Lease ids, tokens of existing grants, log indexes inside the table, the
//! outcome table (S7), the audit trails and identities (roles, grants,
//! quotas, limits, lease owners) are kept as they are.

use crate::limits::{MAX_ID, MAX_LOCK_DELAY_MS};
use crate::table::LockTable;

/// Default gap between the backup's token counter and the restored one:
/// 1,000,000 tokens (room for that many grants by the old cluster after the
/// backup was taken).
pub const DEFAULT_TOKEN_GAP: u64 = 1_000_000;

/// What the operator asks of a restore.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RestoreOptions {
    /// Added to the backup's token counter (default [`DEFAULT_TOKEN_GAP`]).
    pub token_gap: u64,
    /// Every new token is above this (0 = none); e.g. the highest token any
    /// fence has seen.
    pub token_floor: u64,
    /// Every held grant's lock-delay is at least this (ms, at most
    /// [`MAX_LOCK_DELAY_MS`]), on top of the lease-TTL rule.
    pub min_lock_delay_ms: u64,
}

impl Default for RestoreOptions {
    fn default() -> Self {
        RestoreOptions {
            token_gap: DEFAULT_TOKEN_GAP,
            token_floor: 0,
            min_lock_delay_ms: 0,
        }
    }
}

/// What a restore did, for the operator.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RestoreSummary {
    /// The highest fencing token held in the backup (0 if none).
    pub max_token_in_snapshot: u64,
    /// The backup's own token counter.
    pub old_next_token: u64,
    /// The restored cluster's first token.
    pub next_token: u64,
    /// Leases restored (each with its full TTL).
    pub leases: usize,
    /// Held resources restored (each with a lock-delay).
    pub held: usize,
}

/// Why a restore was refused; nothing was changed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RestoreError {
    /// The new token counter would leave the JSON-safe id space.
    #[error("token-gap/token-floor: the restored token counter {0} would exceed the maximum id {MAX_ID}")]
    TokenOverflow(u128),
    /// `min_lock_delay_ms` above the limit.
    #[error("lock-delay: {0} ms is above the maximum {MAX_LOCK_DELAY_MS} ms")]
    LockDelay(u64),
}

/// Transforms a backup's table for a new cluster (see the module docs).
///
/// # Errors
/// [`RestoreError`] when the token counter would pass [`MAX_ID`] or the
/// lock-delay is above [`MAX_LOCK_DELAY_MS`]; the table is then unchanged.
pub fn for_new_cluster(
    table: &mut LockTable,
    opts: RestoreOptions,
) -> Result<RestoreSummary, RestoreError> {
    if opts.min_lock_delay_ms > MAX_LOCK_DELAY_MS {
        return Err(RestoreError::LockDelay(opts.min_lock_delay_ms));
    }
    let max_token = table
        .resources
        .values()
        .flat_map(|r| r.holders().map(|g| g.fencing_token))
        .max()
        .unwrap_or(0);
    let base = u128::from(table.next_token.max(max_token + 1));
    let next = (base + u128::from(opts.token_gap)).max(u128::from(opts.token_floor) + 1);
    if next > u128::from(MAX_ID) {
        return Err(RestoreError::TokenOverflow(next));
    }
    let old_next_token = table.next_token;
    table.next_token = next as u64;
    // Full times from the backup's cluster time, where the new cluster's
    // clock starts (docs/semantics.md "Time").
    let now = table.now_ms;
    for l in table.leases.values_mut() {
        l.expires_at_ms = now.saturating_add(l.ttl_ms);
        l.renew_index = 0;
    }
    let mut held = 0;
    for state in table.resources.values_mut() {
        if state.is_held() {
            held += 1;
        }
        for g in state.holder.iter_mut().chain(state.shared.values_mut()) {
            let ttl = table
                .leases
                .get(&g.lease_id)
                .map(|l| l.ttl_ms)
                .unwrap_or(g.ttl_ms);
            g.lock_delay_ms = g
                .lock_delay_ms
                .max(ttl.min(MAX_LOCK_DELAY_MS))
                .max(opts.min_lock_delay_ms);
        }
        for w in &mut state.waiters {
            w.deadline_ms = now.saturating_add(w.wait_timeout_ms);
        }
        if let Some(d) = state.lock_delay.as_mut() {
            d.ends_at_ms = now.saturating_add(d.lock_delay_ms);
        }
    }
    table.promotion = crate::expiry::Promotion::default();
    table.timeline = table.computed_timeline();
    Ok(RestoreSummary {
        max_token_in_snapshot: max_token,
        old_next_token,
        next_token: table.next_token,
        leases: table.leases.len(),
        held,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::{Acquire, Command, LeaderId, LeaseSpec, Promote, RequestHeader, Stamp};

    const LEADER: LeaderId = LeaderId {
        term: 3,
        node_id: 1,
    };

    fn at(at_ms: u64) -> Stamp {
        Stamp {
            leader: LEADER,
            at_ms,
        }
    }

    fn acquire(t: &mut LockTable, index: u64, client: u64, resource: &str, ttl_ms: u64) -> u64 {
        let cmd = Command::Acquire(Acquire::mutex(
            RequestHeader {
                client_id: client,
                request_id: 1,
                acked_request_id: 0,
            },
            resource,
            LeaseSpec::New { ttl_ms },
            0,
            0,
        ));
        let now = t.now_ms();
        t.apply(index, LEADER, at(now), &cmd);
        t.holder(resource).expect("granted").fencing_token
    }

    // S2 and docs/semantics.md "Membership and data loss" (restore): the first token after a restore is above every
    // token in the backup plus the gap; leases get their full TTL back from
    // the table's cluster time, the promotes are forgotten, and every held
    // grant gets a lock-delay.
    #[test]
    fn restore_raises_tokens_renews_leases_and_sets_lock_delay() {
        let mut t = LockTable::new();
        let a = acquire(&mut t, 1, 7, "a", 10_000);
        let b = acquire(&mut t, 2, 8, "b", 90_000);
        // Two promotes, then 8 s pass: lease a has 2 s left.
        let promote = |n| {
            Command::Promote(Promote {
                no_expiry_before_ms: n,
            })
        };
        t.apply(3, LEADER, at(1_000), &promote(5_000));
        t.apply(4, LEADER, at(2_000), &promote(6_000));
        t.apply(5, LEADER, at(8_000), &Command::Tick);
        assert_eq!(t.now_ms(), 8_000);
        let ends: Vec<_> = t.leases().map(|l| t.lease_remaining_ms(l)).collect();
        assert_eq!(ends, vec![2_000, 82_000]);
        let old_next = t.next_token();

        let s = for_new_cluster(&mut t, RestoreOptions::default()).expect("restore");
        assert_eq!(s.max_token_in_snapshot, b.max(a));
        assert_eq!(s.old_next_token, old_next);
        assert_eq!(t.next_token(), old_next + DEFAULT_TOKEN_GAP);
        assert!(t.next_token() > a.max(b) + DEFAULT_TOKEN_GAP - 1);
        assert_eq!((s.leases, s.held), (2, 2));
        for l in t.leases() {
            assert_eq!(l.expires_at_ms, 8_000 + l.ttl_ms, "lease {}", l.lease_id);
            assert_eq!(t.lease_remaining_ms(l), l.ttl_ms, "lease {}", l.lease_id);
        }
        // Lock-delay: the lease's TTL (10 s), capped at the maximum (60 s).
        assert_eq!(
            t.resource("a")
                .and_then(|r| r.holder.as_ref())
                .map(|g| g.lock_delay_ms),
            Some(10_000)
        );
        assert_eq!(
            t.resource("b")
                .and_then(|r| r.holder.as_ref())
                .map(|g| g.lock_delay_ms),
            Some(MAX_LOCK_DELAY_MS)
        );
        assert_eq!(t.promotion(), crate::expiry::Promotion::default());
        assert_eq!(t.now_ms(), 8_000, "cluster time goes on from the table's");
        t.check_invariants().expect("still consistent");
        // Holders and their tokens are unchanged, and survive a snapshot.
        let back = LockTable::from_snapshot(&t.to_snapshot()).expect("round trip");
        assert_eq!(back.holder("a").map(|h| h.fencing_token), Some(a));
        // The first grant in the new cluster gets the raised counter.
        let c = acquire(&mut t, 10, 9, "c", 10_000);
        assert_eq!(c, old_next + DEFAULT_TOKEN_GAP);
    }

    // S2: an operator floor above the gap wins; a floor or gap past 2^53 is
    // refused and changes nothing; so is a lock-delay above the limit.
    #[test]
    fn floor_wins_and_overflow_is_refused() {
        let mut t = LockTable::new();
        acquire(&mut t, 1, 7, "a", 10_000);
        let opts = RestoreOptions {
            token_gap: 10,
            token_floor: 5_000_000,
            min_lock_delay_ms: 30_000,
        };
        let s = for_new_cluster(&mut t.clone(), opts).expect("restore");
        assert_eq!(s.next_token, 5_000_001);
        let mut tt = t.clone();
        for_new_cluster(&mut tt, opts).expect("restore");
        assert_eq!(
            tt.resource("a")
                .and_then(|r| r.holder.as_ref())
                .map(|g| g.lock_delay_ms),
            Some(30_000)
        );
        let before = t.clone();
        let e = for_new_cluster(
            &mut t,
            RestoreOptions {
                token_gap: MAX_ID,
                ..RestoreOptions::default()
            },
        )
        .expect_err("overflow");
        assert!(matches!(e, RestoreError::TokenOverflow(_)), "{e}");
        let e = for_new_cluster(
            &mut t,
            RestoreOptions {
                min_lock_delay_ms: MAX_LOCK_DELAY_MS + 1,
                ..RestoreOptions::default()
            },
        )
        .expect_err("delay");
        assert!(e.to_string().starts_with("lock-delay"), "{e}");
        assert_eq!(t, before);
    }
}
