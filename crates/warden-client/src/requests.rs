//! Request ids and the acknowledged watermark (docs/semantics.md S7).
//!
//! Each new mutating request takes the next id; its retries reuse it. The
//! watermark (`acked_request_id`) is the highest id such that it and every
//! lower id have been answered: the client will never retry them, so the
//! server may forget their outcomes. A request counts as answered when its
//! call returns (with any result) or is dropped, because the client never
//! re-sends an id after that. At most a window of ids are handed out past the
//! watermark (the server's published `max_requests_in_flight`, until it is
//! known [`MAX_REQUESTS_AHEAD`]); a further request waits for the oldest to
//! return.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex, PoisonError};

use tokio::sync::Notify;

/// The id bookkeeping of one client.
#[derive(Debug)]
pub(crate) struct RequestIds {
    /// Most ids handed out past the watermark: [`MAX_REQUESTS_AHEAD`] until
    /// [`RequestIds::set_window`] applies the server's published value.
    window: u64,
    /// The last id handed out; 0 before the first (ids start at 1, 0 is
    /// "none" on the wire).
    last_issued: u64,
    /// Ids handed out whose calls have not returned yet.
    in_flight: BTreeSet<u64>,
    /// Woken when a request returns (a request waiting for room in the
    /// window may go).
    returned: Arc<Notify>,
}

/// Most request ids a client hands out past its acknowledged watermark
/// until the server has published its own window (`ClusterStatus`'s
/// `max_requests_in_flight`; a server that predates it publishes 0 and this
/// stays): the server keeps at most this many outcomes per client above the
/// watermark it knows (`warden_core::limits::MAX_OUTCOMES_PER_CLIENT`), and
/// refuses as expired any id at or below the floor its evictions leave. With
/// more in flight, one slow request (its id stuck at the watermark) could
/// arrive after 64 later ones had been recorded and be refused although it
/// never ran (seen in the `sessions` benchmark: 64 concurrent lease grants
/// on one client, "the outcome of request 7450 is no longer kept
/// (acknowledged up to 7449, dropped up to 7464)"). A new request waits
/// until the oldest returns, as a TCP sender waits for its window.
pub const MAX_REQUESTS_AHEAD: u64 = 64;

impl Default for RequestIds {
    fn default() -> Self {
        RequestIds {
            window: MAX_REQUESTS_AHEAD,
            last_issued: 0,
            in_flight: BTreeSet::new(),
            returned: Arc::default(),
        }
    }
}

impl RequestIds {
    /// Applies the window the server publishes; 0 (a server that does not
    /// publish one) changes nothing. Requests waiting for room look again.
    pub(crate) fn set_window(&mut self, window: u64) {
        if window == 0 || window == self.window {
            return;
        }
        self.window = window;
        self.returned.notify_waiters();
    }

    /// Takes the next id. Returns `(request_id, acked_request_id)`; the
    /// watermark is fixed here, so every retry of the request is byte-identical.
    pub(crate) fn begin(&mut self) -> (u64, u64) {
        let acked = self.acked();
        debug_assert!(self.has_room());
        self.last_issued = self.last_issued.saturating_add(1);
        self.in_flight.insert(self.last_issued);
        (self.last_issued, acked)
    }

    /// Whether the next id stays within the window of the watermark.
    pub(crate) fn has_room(&self) -> bool {
        self.last_issued - self.acked() < self.window
    }

    /// Marks `request_id` answered.
    pub(crate) fn finish(&mut self, request_id: u64) {
        self.in_flight.remove(&request_id);
        self.returned.notify_waiters();
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
    /// Takes the next request id, first waiting (if needed) until it is
    /// within the window of the watermark.
    pub(crate) async fn begin(ids: &Arc<Mutex<RequestIds>>) -> InFlight {
        loop {
            let returned = {
                let mut guard = ids.lock().unwrap_or_else(PoisonError::into_inner);
                if guard.has_room() {
                    let (request_id, acked_request_id) = guard.begin();
                    return InFlight {
                        ids: Arc::clone(ids),
                        request_id,
                        acked_request_id,
                    };
                }
                Arc::clone(&guard.returned)
            };
            let wait = returned.notified();
            tokio::pin!(wait);
            // Registered before the lock is taken again: a return between
            // this check and the wait is not missed.
            wait.as_mut().enable();
            if ids
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .has_room()
            {
                continue;
            }
            wait.await;
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
    #[tokio::test]
    async fn dropping_an_in_flight_request_acknowledges_it() {
        let ids = Arc::new(Mutex::new(RequestIds::default()));
        let first = InFlight::begin(&ids).await;
        let second = InFlight::begin(&ids).await;
        assert_eq!((first.request_id, second.request_id), (1, 2));
        assert_eq!(second.acked_request_id, 0);
        drop(second);
        assert_eq!(ids.lock().unwrap().acked(), 0);
        drop(first);
        assert_eq!(ids.lock().unwrap().acked(), 2);
        assert_eq!(InFlight::begin(&ids).await.acked_request_id, 2);
    }

    // S7 under concurrency (the sessions benchmark's "outcome of request
    // 7450 is no longer kept"): with the oldest request still out, no id
    // goes past watermark + MAX_REQUESTS_AHEAD, so the server's per-client
    // outcome cap can never leave its floor above a request not yet run; the
    // next request goes as soon as the oldest returns.
    #[tokio::test]
    async fn no_request_goes_more_than_the_window_past_the_watermark() {
        use futures::FutureExt as _;
        let ids = Arc::new(Mutex::new(RequestIds::default()));
        let oldest = InFlight::begin(&ids).await;
        let mut later = Vec::new();
        for _ in 1..MAX_REQUESTS_AHEAD {
            let r = InFlight::begin(&ids).await;
            assert_eq!(r.acked_request_id, 0);
            later.push(r);
        }
        // Every later one returns; the oldest does not: the watermark stays 0.
        later.clear();
        assert_eq!(ids.lock().unwrap().acked(), 0);
        let waiting = InFlight::begin(&ids);
        tokio::pin!(waiting);
        assert!(
            waiting.as_mut().now_or_never().is_none(),
            "request {} would be {} past the watermark",
            MAX_REQUESTS_AHEAD + 1,
            MAX_REQUESTS_AHEAD + 1
        );
        drop(oldest);
        let next = tokio::time::timeout(std::time::Duration::from_secs(10), waiting)
            .await
            .expect("the waiting request goes once the oldest returned");
        assert_eq!(
            (next.request_id, next.acked_request_id),
            (MAX_REQUESTS_AHEAD + 1, MAX_REQUESTS_AHEAD)
        );
    }

    // S7: the window the server publishes replaces the default: with a
    // published window of 2, a third request waits for the oldest, and one
    // waiting is let go when the window grows.
    #[tokio::test]
    async fn the_published_window_replaces_the_default() {
        use futures::FutureExt as _;
        let ids = Arc::new(Mutex::new(RequestIds::default()));
        ids.lock().unwrap().set_window(2);
        let first = InFlight::begin(&ids).await;
        let _second = InFlight::begin(&ids).await;
        let third = InFlight::begin(&ids);
        tokio::pin!(third);
        assert!(third.as_mut().now_or_never().is_none(), "3 is 3 past 0");
        ids.lock().unwrap().set_window(0);
        assert!(third.as_mut().now_or_never().is_none(), "0 changes nothing");
        ids.lock().unwrap().set_window(3);
        let third = third.now_or_never().expect("the window grew to 3");
        assert_eq!((third.request_id, third.acked_request_id), (3, 0));
        drop(first);
        assert_eq!(ids.lock().unwrap().acked(), 1);
    }
}
