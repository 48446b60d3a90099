//! Request ids and the acknowledged watermark (SEMANTICS S7).
//!
//! Each new mutating request takes the next id; its retries reuse it. The
//! watermark (`acked_request_id`) is the highest id such that it and every
//! lower id have been answered: the client will never retry them, so the
//! server may forget their outcomes. A request counts as answered when its
//! call returns (with any result) or is dropped, because the client never
//! re-sends an id after that.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex, PoisonError};

/// The id bookkeeping of one client.
#[derive(Debug, Default)]
pub(crate) struct RequestIds {
    /// The last id handed out; 0 before the first (ids start at 1, 0 is
    /// "none" on the wire).
    last_issued: u64,
    /// Ids handed out whose calls have not returned yet.
    in_flight: BTreeSet<u64>,
}

impl RequestIds {
    /// Takes the next id. Returns `(request_id, acked_request_id)`; the
    /// watermark is fixed here, so every retry of the request is byte-identical.
    pub(crate) fn begin(&mut self) -> (u64, u64) {
        let acked = self.acked();
        self.last_issued = self.last_issued.saturating_add(1);
        self.in_flight.insert(self.last_issued);
        (self.last_issued, acked)
    }

    /// Marks `request_id` answered.
    pub(crate) fn finish(&mut self, request_id: u64) {
        self.in_flight.remove(&request_id);
    }

    /// The highest id such that it and all lower ids were answered.
    pub(crate) fn acked(&self) -> u64 {
        match self.in_flight.first() {
            Some(&oldest) => oldest - 1,
            None => self.last_issued,
        }
    }
}

/// A request id in flight; marks it answered when dropped (also when the
/// caller's future is cancelled).
#[derive(Debug)]
pub(crate) struct InFlight {
    ids: Arc<Mutex<RequestIds>>,
    /// This request's id.
    pub(crate) request_id: u64,
    /// The watermark sent with every attempt of this request.
    pub(crate) acked_request_id: u64,
}

impl InFlight {
    pub(crate) fn begin(ids: &Arc<Mutex<RequestIds>>) -> InFlight {
        let (request_id, acked_request_id) =
            ids.lock().unwrap_or_else(PoisonError::into_inner).begin();
        InFlight {
            ids: Arc::clone(ids),
            request_id,
            acked_request_id,
        }
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.ids
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .finish(self.request_id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // S7: ids start at 1 and grow by one per new request; 0 is never sent.
    #[test]
    fn ids_start_at_one_and_grow() {
        let mut ids = RequestIds::default();
        assert_eq!(ids.begin(), (1, 0));
        ids.finish(1);
        assert_eq!(ids.begin(), (2, 1));
        ids.finish(2);
        assert_eq!(ids.acked(), 2);
    }

    // S7: the watermark never passes a request still in flight, even when later ones finished.
    #[test]
    fn watermark_waits_for_the_oldest_unanswered_request() {
        let mut ids = RequestIds::default();
        let (r1, _) = ids.begin();
        let (r2, a2) = ids.begin();
        let (r3, a3) = ids.begin();
        assert_eq!((a2, a3), (0, 0));
        ids.finish(r2);
        ids.finish(r3);
        assert_eq!(ids.acked(), 0, "request 1 is still in flight");
        let (_, a4) = ids.begin();
        assert_eq!(a4, 0);
        ids.finish(r1);
        assert_eq!(ids.acked(), 3, "4 is still in flight");
        ids.finish(4);
        assert_eq!(ids.acked(), 4);
    }

    // S7: a cancelled call (its future dropped) still counts as answered, so the watermark moves.
    #[test]
    fn dropping_an_in_flight_request_acknowledges_it() {
        let ids = Arc::new(Mutex::new(RequestIds::default()));
        let first = InFlight::begin(&ids);
        let second = InFlight::begin(&ids);
        assert_eq!((first.request_id, second.request_id), (1, 2));
        assert_eq!(second.acked_request_id, 0);
        drop(second);
        assert_eq!(ids.lock().unwrap().acked(), 0);
        drop(first);
        assert_eq!(ids.lock().unwrap().acked(), 2);
        assert_eq!(InFlight::begin(&ids).acked_request_id, 2);
    }
}
