//! Which queued acquires to look at again after an apply: the waiters of
//! the resources an applied entry touched, not every waiter on the node.
//!
//! A queued acquire's stream (`services::waiter`) re-reads its position or
//! its grant from the applied table when something may have changed it.
//! Everything that read depends on is a resource's own state (its holders,
//! its queue, its lock-delay, the waiters removed from it), and every change
//! to that state is an [`Effect`] that names the resource. So the state
//! machine hands each applied entry's effects to [`ResourceWakes::wake`],
//! which wakes the followers of the resources they name; a changed auth
//! table (`Effect::AuthChanged`, which may end waits by permission) and a
//! replaced table (a snapshot installed, [`ResourceWakes::wake_all`]) wake
//! every follower.
//!
//! Before, every follower woke at every applied index: with 100,000 acquires
//! queued, each entry cost 100,000 table reads, and while the leases ahead of
//! them expired the leader spent its cores on them (most of a profile was
//! `waiter_step` and the wake-ups around it) while a separate client's
//! acquire waited. Now an entry costs one map lookup per resource it names
//! and one read per follower of those resources.
//!
//! Node-local and not replicated: it only says when to read again, never
//! what the table holds. A follower registers before its first read (see
//! [`ResourceWakes::follow`]), so a change applied between the two still
//! wakes it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio::sync::watch;
use warden_core::Effect;

/// The followers of each resource that has one (see the module docs).
#[derive(Debug, Default)]
pub struct ResourceWakes {
    /// One sender per followed resource; its receivers are the followers.
    /// A resource leaves the map with its last follower.
    followed: Mutex<HashMap<String, watch::Sender<()>>>,
}

/// One follower of one resource; [`ResourceWake::changed`] resolves after
/// an apply touched the resource (or replaced the table) since the last
/// time it resolved, or since [`ResourceWakes::follow`].
#[derive(Debug)]
pub struct ResourceWake {
    wakes: Arc<ResourceWakes>,
    resource: String,
    rx: watch::Receiver<()>,
}

impl ResourceWakes {
    /// Follows `resource`. Call it before reading the resource's state: a
    /// change applied after this call wakes the follower even if the read
    /// already saw it (one read too many, never one too few).
    pub fn follow(self: &Arc<Self>, resource: &str) -> ResourceWake {
        let rx = match self.followed.lock() {
            Ok(mut map) => map
                .entry(resource.to_owned())
                .or_insert_with(|| watch::channel(()).0)
                .subscribe(),
            // A poisoned map (a panic while it was held) wakes nobody by
            // name; this follower is woken by nothing but its own timers,
            // and the node's state is unusable anyway.
            Err(_) => watch::channel(()).1,
        };
        ResourceWake {
            wakes: self.clone(),
            resource: resource.to_owned(),
            rx,
        }
    }

    /// Wakes the followers of every resource that `effects` (one applied
    /// entry's) name.
    pub fn wake(&self, effects: &[Effect]) {
        let Ok(map) = self.followed.lock() else {
            return;
        };
        if map.is_empty() {
            return;
        }
        // A changed auth table (rare) may end a wait by permission: the
        // table names each waiter it removes, but every follower reads again
        // rather than trust that no other answer moved.
        if effects
            .iter()
            .any(|e| matches!(e, Effect::AuthChanged { .. }))
        {
            for tx in map.values() {
                tx.send_replace(());
            }
            return;
        }
        for effect in effects {
            if let Some(tx) = effect_resource(effect).and_then(|r| map.get(r)) {
                tx.send_replace(());
            }
        }
    }

    /// Wakes every follower (the table was replaced).
    pub fn wake_all(&self) {
        if let Ok(map) = self.followed.lock() {
            for tx in map.values() {
                tx.send_replace(());
            }
        }
    }

    /// How many resources have a follower.
    pub fn followed(&self) -> usize {
        self.followed.lock().map(|m| m.len()).unwrap_or(0)
    }
}

impl ResourceWake {
    /// Resolves once the resource changed since the last time this resolved
    /// (see [`ResourceWakes::follow`]).
    pub async fn changed(&mut self) {
        if self.rx.changed().await.is_err() {
            // The sender is gone only with a poisoned map: nothing will
            // ever wake this follower by name.
            std::future::pending::<()>().await;
        }
    }
}

impl Drop for ResourceWake {
    fn drop(&mut self) {
        if let Ok(mut map) = self.wakes.followed.lock() {
            // This follower's receiver is still alive here: it is the last
            // one when the count is 1.
            if map
                .get(&self.resource)
                .is_some_and(|tx| tx.receiver_count() <= 1)
            {
                map.remove(&self.resource);
            }
        }
    }
}

/// The resource an effect changed, if it names one (lease-level effects do
/// not; what a lease's end does to its resources comes as effects that name
/// each of them).
fn effect_resource(effect: &Effect) -> Option<&str> {
    match effect {
        Effect::Granted { resource, .. }
        | Effect::Freed { resource, .. }
        | Effect::Queued { resource, .. }
        | Effect::WaiterRemoved { resource, .. }
        | Effect::LockDelayStarted { resource, .. }
        | Effect::LockDelayEnded { resource, .. }
        | Effect::Proclaimed { resource, .. }
        | Effect::MaxHoldStarted { resource, .. }
        | Effect::MaxHoldEnded { resource, .. } => Some(resource),
        // Handled by `wake` (every follower).
        Effect::AuthChanged { .. } => None,
        Effect::LeaseSet { .. } | Effect::LeaseEnded { .. } => None,
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn freed(resource: &str) -> Effect {
        Effect::Freed {
            resource: resource.into(),
            lease_id: 1,
            fencing_token: 1,
            reason: warden_core::effect::FreeReason::Released,
            granted_at_ms: 0,
        }
    }

    /// Whether `w` resolves within a moment of paused time.
    async fn woke(w: &mut ResourceWake) -> bool {
        tokio::time::timeout(Duration::from_millis(1), w.changed())
            .await
            .is_ok()
    }

    // A queued acquire learns of every change to its resource (a grant is
    // reported, S8), and only of changes to its resource: an entry that
    // touches other resources wakes none of its followers.
    #[tokio::test(start_paused = true)]
    async fn an_entry_wakes_the_followers_of_the_resources_it_names() {
        let wakes = Arc::new(ResourceWakes::default());
        let mut a1 = wakes.follow("a");
        let mut a2 = wakes.follow("a");
        let mut b = wakes.follow("b");
        wakes.wake(&[freed("a"), freed("c")]);
        assert!(woke(&mut a1).await);
        assert!(woke(&mut a2).await);
        assert!(!woke(&mut b).await, "b was not touched");
        assert!(!woke(&mut a1).await, "one change, one wake");
        wakes.wake(&[Effect::LeaseEnded {
            lease_id: 1,
            reason: warden_core::effect::LeaseEndReason::Expired,
        }]);
        assert!(
            !woke(&mut a1).await,
            "a lease-level effect names no resource"
        );
        wakes.wake(&[Effect::AuthChanged { index: 9 }]);
        assert!(woke(&mut a1).await && woke(&mut a2).await && woke(&mut b).await);
        wakes.wake_all();
        assert!(woke(&mut a1).await && woke(&mut b).await);
    }

    // The race between a follower's first read and an apply: a change
    // applied after `follow` wakes the follower even though nothing waited
    // yet, so a grant applied between registration and the first read is
    // never missed.
    #[tokio::test(start_paused = true)]
    async fn a_change_after_follow_wakes_a_follower_that_was_not_waiting_yet() {
        let wakes = Arc::new(ResourceWakes::default());
        let mut a = wakes.follow("a");
        wakes.wake(&[freed("a")]);
        assert!(woke(&mut a).await);
    }

    // Memory: a resource is in the map only while it has a follower.
    #[test]
    fn a_resource_leaves_with_its_last_follower() {
        let wakes = Arc::new(ResourceWakes::default());
        let a1 = wakes.follow("a");
        let a2 = wakes.follow("a");
        let b = wakes.follow("b");
        assert_eq!(wakes.followed(), 2);
        drop(a1);
        assert_eq!(wakes.followed(), 2, "a still has a follower");
        drop(a2);
        assert_eq!(wakes.followed(), 1);
        drop(b);
        assert_eq!(wakes.followed(), 0);
    }
}
