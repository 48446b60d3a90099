//! The call ids in flight on one `Calls` stream (`calls.rs` claims an id
//! when it reads a call; the claim lives in the call, then in a queued
//! acquire's `follow_waiter`, and frees the id when dropped).

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

/// The call ids in flight on one `Calls` stream: read, and not yet given
/// their final answer (validating, proposing, waiting for their entry to
/// apply, or queued as a waiter that `follow_waiter` follows). `calls.rs`
/// refuses a call whose id is in flight; an id is freed just before its
/// call's final answer is sent, so a client may reuse it as soon as it has
/// that answer.
#[derive(Debug, Clone, Default)]
pub(super) struct InFlightIds(Arc<Mutex<HashSet<u64>>>);

impl InFlightIds {
    /// Claims `call_id` for one call; `None` when it is in flight already.
    pub(super) fn claim(&self, call_id: u64) -> Option<CallIdClaim> {
        let mut ids = self.0.lock().unwrap_or_else(|e| e.into_inner());
        ids.insert(call_id).then(|| CallIdClaim {
            ids: self.clone(),
            call_id,
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
}

impl CallIdClaim {
    /// The claimed id.
    pub(super) fn call_id(&self) -> u64 {
        self.call_id
    }
}

impl Drop for CallIdClaim {
    fn drop(&mut self) {
        let mut ids = self.ids.0.lock().unwrap_or_else(|e| e.into_inner());
        ids.remove(&self.call_id);
    }
}
