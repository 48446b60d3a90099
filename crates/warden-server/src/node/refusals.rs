//! The refused-request rate limit (docs/security.md "Refused before the
//! log"): every write a principal makes that the table refuses (before the
//! log or at apply) spends one token of that principal's bucket; while its
//! bucket is empty, the node refuses the principal's writes at once, before
//! any check or proposal, with ResourceExhausted (field `principal`). A
//! bucket holds twice the rate in tokens and refills at the rate
//! (`--refused-requests-per-sec`, default 100), so a client that is refused
//! now and then never notices, and a flood of refused requests costs the
//! node one map lookup each. Anonymous callers (an insecure node) have no
//! bucket.
//!
//! Time is tokio's ([`tokio::time::Instant`]): paused in tests, simulated
//! in the simulator.

use std::collections::HashMap;
use std::sync::Mutex;

use tokio::time::Instant;
use warden_core::types::{CommandError, ErrorCode};

use super::error::command_error;
use super::Principal;

/// Buckets kept before full ones are forgotten: 10,000.
const MAX_BUCKETS: usize = 10_000;

#[derive(Debug, Clone, Copy)]
struct Bucket {
    tokens: f64,
    at: Instant,
}

/// Every principal's bucket (see the module docs).
#[derive(Debug)]
pub struct RefusalBudget {
    /// Tokens added a second.
    per_sec: f64,
    /// Tokens a full bucket holds: twice `per_sec`.
    burst: f64,
    buckets: Mutex<HashMap<String, Bucket>>,
}

impl RefusalBudget {
    /// Buckets refilling `per_sec` tokens a second, holding twice that.
    pub fn new(per_sec: u32) -> RefusalBudget {
        let per_sec = f64::from(per_sec.max(1));
        RefusalBudget {
            per_sec,
            burst: 2.0 * per_sec,
            buckets: Mutex::default(),
        }
    }

    /// `b`'s tokens at `now`, refilled since it was last spent.
    fn refilled(&self, b: Bucket, now: Instant) -> f64 {
        let secs = now.saturating_duration_since(b.at).as_secs_f64();
        (b.tokens + secs * self.per_sec).min(self.burst)
    }

    /// Refuses `principal` while its bucket is empty.
    ///
    /// # Errors
    /// ResourceExhausted, field `principal`, naming the limit.
    pub fn admit(&self, principal: &Principal) -> Result<(), CommandError> {
        let Some(name) = principal.as_ref().map(|p| p.as_str()) else {
            return Ok(());
        };
        let buckets = self.buckets.lock().unwrap_or_else(|e| e.into_inner());
        let Some(b) = buckets.get(name) else {
            return Ok(());
        };
        if self.refilled(*b, Instant::now()) >= 1.0 {
            return Ok(());
        }
        Err(command_error(
            ErrorCode::ResourceExhausted,
            Some("principal"),
            format!(
                "principal {name} made more than {} refused requests at once or {} a second (--refused-requests-per-sec, the refused-request rate limit); slow down",
                self.burst, self.per_sec
            ),
        ))
    }

    /// Spends one token of `principal`'s bucket: a write of its was refused.
    pub fn spend(&self, principal: &Principal) {
        let Some(name) = principal.as_ref().map(|p| p.as_str()) else {
            return;
        };
        let now = Instant::now();
        let mut buckets = self.buckets.lock().unwrap_or_else(|e| e.into_inner());
        if buckets.len() >= MAX_BUCKETS && !buckets.contains_key(name) {
            buckets.retain(|_, b| self.refilled(*b, now) < self.burst);
        }
        let b = buckets.entry(name.to_owned()).or_insert(Bucket {
            tokens: self.burst,
            at: now,
        });
        *b = Bucket {
            tokens: (self.refilled(*b, now) - 1.0).max(0.0),
            at: now,
        };
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn named(name: &str) -> Principal {
        Some(warden_core::types::Principal::new(name).expect("name"))
    }

    // A flood of refusals empties the flooder's bucket after the burst and
    // refuses it, naming the limit; another principal is untouched; the
    // bucket refills at the sustained rate; anonymous callers are never
    // limited.
    #[tokio::test(start_paused = true)]
    async fn a_flood_of_refusals_is_throttled_and_refills() {
        let budget = RefusalBudget::new(100);
        let (mallory, alice) = (named("mallory"), named("alice"));
        for _ in 0..200 {
            budget.admit(&mallory).expect("within the burst");
            budget.spend(&mallory);
        }
        let e = budget.admit(&mallory).expect_err("the burst is spent");
        assert_eq!(
            (e.code, e.field.as_deref()),
            (ErrorCode::ResourceExhausted, Some("principal"))
        );
        assert!(
            e.message.contains("refused-request rate limit"),
            "{}",
            e.message
        );
        budget.admit(&alice).expect("alice is not limited");
        tokio::time::advance(Duration::from_millis(10)).await;
        budget
            .admit(&mallory)
            .expect("one token after 10 ms at 100/s");
        budget.spend(&mallory);
        budget.admit(&mallory).expect_err("spent again");
        tokio::time::advance(Duration::from_secs(2)).await;
        for _ in 0..200 {
            budget.admit(&mallory).expect("refilled to the burst");
            budget.spend(&mallory);
        }
        budget
            .admit(&mallory)
            .expect_err("the burst is spent again");
        for _ in 0..1_000 {
            budget.spend(&None);
        }
        budget
            .admit(&None)
            .expect("anonymous callers have no bucket");
    }
}
