//! When this node last accepted an AppendEntries from a leader: the peer
//! service touches it, `/readyz` reads it (openraft's metrics say nothing
//! about a follower's contact with its leader).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::time::Instant;

/// When this node last accepted an AppendEntries from a leader (the peer
/// service touches it; `/readyz` reads it).
#[derive(Debug, Clone, Default)]
pub struct LeaderContact(Arc<Mutex<Option<Instant>>>);

impl LeaderContact {
    /// Records an AppendEntries accepted now.
    pub fn touch(&self) {
        self.touch_at(Instant::now());
    }

    fn touch_at(&self, at: Instant) {
        if let Ok(mut last) = self.0.lock() {
            *last = Some(at);
        }
    }

    /// When the last AppendEntries was accepted; `None` when never.
    pub fn last(&self) -> Option<Instant> {
        self.0.lock().ok().and_then(|last| *last)
    }

    /// Time since the last accepted AppendEntries; `None` when never.
    pub fn since(&self) -> Option<Duration> {
        self.since_at(Instant::now())
    }

    fn since_at(&self, now: Instant) -> Option<Duration> {
        self.last().map(|t| now.saturating_duration_since(t))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // /readyz of a removed node (docs/operations.md "Rolling restart"): contact with the leader is
    // "never" until an AppendEntries is accepted, then counts from it.
    #[test]
    fn leader_contact_counts_from_the_last_append() {
        let contact = LeaderContact::default();
        assert_eq!(contact.since(), None);
        let t0 = Instant::now();
        contact.touch_at(t0);
        let ms = Duration::from_millis;
        assert_eq!(contact.since_at(t0 + ms(700)), Some(ms(700)));
        // A clone shares the record (the peer service and /readyz).
        contact.clone().touch_at(t0 + ms(700));
        assert_eq!(contact.since_at(t0 + ms(1_000)), Some(ms(300)));
    }
}
