//! The call ids in flight on one `Calls` stream (`calls.rs` claims an id
//! when it reads a call; the claim lives in the call, then in a queued
//! acquire's `follow_waiter`, and frees the id when dropped), and the
//! waiters the stream follows: one follower per waiter and stream. A client
//! that sends the same waiting acquire again under a new call id (its retry
//! answers `Queued` from the outcome table) moves the wait's answers to the
//! new id, and the earlier call ends at once with an error naming it, so
//! copies cannot pile up follower tasks (each would wake on every applied
//! entry).

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use tokio::sync::Notify;
use tonic::Status;

use crate::node::SubmitError;

/// A waiter as the table names it: (resource, lease id, enqueue index).
type WaiterKey = (String, u64, u64);

#[derive(Debug, Default)]
struct Inner {
    ids: HashSet<u64>,
    /// Each followed waiter → the call id whose follower answers it, and
    /// how to tell that follower it was superseded.
    followed: HashMap<WaiterKey, (u64, Arc<Notify>)>,
}

/// The call ids in flight on one `Calls` stream: read, and not yet given
/// their final answer (validating, proposing, waiting for their entry to
/// apply, or queued as a waiter that `follow_waiter` follows). `calls.rs`
/// refuses a call whose id is in flight; an id is freed just before its
/// call's final answer is sent, so a client may reuse it as soon as it has
/// that answer.
#[derive(Debug, Clone, Default)]
pub(super) struct InFlightIds(Arc<Mutex<Inner>>);

impl InFlightIds {
    /// Claims `call_id` for one call; `None` when it is in flight already.
    pub(super) fn claim(&self, call_id: u64) -> Option<CallIdClaim> {
        let mut inner = self.0.lock().unwrap_or_else(|e| e.into_inner());
        inner.ids.insert(call_id).then(|| CallIdClaim {
            ids: self.clone(),
            call_id,
            follows: None,
            superseded: Arc::new(Notify::new()),
        })
    }
}

/// One call's hold on its id; dropping it frees the id. It lives as long
/// as the call: in the call's future, then, for a queued acquire, in its
/// `follow_waiter` (which drops it just before it sends the final answer).
#[derive(Debug)]
pub(super) struct CallIdClaim {
    ids: InFlightIds,
    call_id: u64,
    /// The waiter this call's follower answers, once [`Self::follow`] took it.
    follows: Option<WaiterKey>,
    /// Notified when a later call of the stream takes the waiter over.
    superseded: Arc<Notify>,
}

impl CallIdClaim {
    /// The claimed id.
    pub(super) fn call_id(&self) -> u64 {
        self.call_id
    }

    /// Makes this call the stream's one follower of the waiter (resource,
    /// lease, enqueue index) until the claim is dropped. A call that
    /// followed it before is told ([`Self::superseded`]) and ends.
    pub(super) fn follow(&mut self, resource: &str, lease_id: u64, enqueue_index: u64) {
        let key = (resource.to_owned(), lease_id, enqueue_index);
        let mut inner = self.ids.0.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((_, earlier)) = inner
            .followed
            .insert(key.clone(), (self.call_id, self.superseded.clone()))
        {
            // A permit is kept if the earlier follower is not waiting yet.
            earlier.notify_one();
        }
        self.follows = Some(key);
    }

    /// The call id that follows this call's waiter now, if not this one.
    pub(super) fn superseded_by(&self) -> Option<u64> {
        let key = self.follows.as_ref()?;
        let inner = self.ids.0.lock().unwrap_or_else(|e| e.into_inner());
        match inner.followed.get(key) {
            Some((id, _)) if *id != self.call_id => Some(*id),
            _ => None,
        }
    }

    /// Resolves once a later call has taken this call's waiter over.
    pub(super) async fn superseded(&self) {
        self.superseded.notified().await
    }
}

/// `InvalidArgument` for a call whose `call_id` is in flight on its stream:
/// two calls under one id would both run and their answers could not be
/// told apart. The call is not submitted; the call in flight goes on.
pub(super) fn call_id_in_flight(call_id: u64) -> Status {
    SubmitError::invalid(
        "call_id",
        format!(
            "call_id {call_id} is in flight on this stream (its final answer has not been \
             sent); use an id not in flight (ids may be reused once answered)"
        ),
    )
    .into()
}

/// The final answer of a call whose wait a later call of the same stream
/// follows now (see the module docs).
pub(super) fn superseded_status(later: u64) -> Status {
    SubmitError::invalid(
        "call_id",
        format!(
            "this wait is answered under call_id {later} on this stream now (the same acquire \
             was sent again under that id)"
        ),
    )
    .into()
}

impl Drop for CallIdClaim {
    fn drop(&mut self) {
        let mut inner = self.ids.0.lock().unwrap_or_else(|e| e.into_inner());
        inner.ids.remove(&self.call_id);
        if let Some(key) = self.follows.take() {
            if inner
                .followed
                .get(&key)
                .is_some_and(|(id, _)| *id == self.call_id)
            {
                inner.followed.remove(&key);
            }
        }
    }
}
