//! One `Calls` stream per node: the client's acquires and releases to that
//! node share one long-lived HTTP/2 stream instead of opening one each (a
//! unary call's stream, headers and server task were the leader's largest
//! cost at many clients: docs/performance.md). Each call has an id on the
//! stream; its answers come back under that id, in any order relative to
//! other calls.
//!
//! When the stream ends or breaks, every call still waiting on it fails with
//! the stream's status (retryable: the caller re-sends with the same request
//! id, S7) and the next call opens a new stream. A node that does not serve
//! `Calls` (an older version) answers `Unimplemented`; the caller then uses
//! the unary calls for that address until `recheck_calls_after` has passed.
//! Each call keeps at most two unread answers: the newest `queued` report
//! (a newer one replaces it) and the call's last answer, so neither a slow
//! caller nor a misbehaving server can grow its memory. An answer this
//! client cannot read (from a newer server) fails the call at once.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use tokio::sync::{mpsc, Notify};
use tokio_stream::wrappers::UnboundedReceiverStream;
use tonic::transport::Channel;
use tonic::Status;
use warden_proto::v1::{self, acquire_response::Event, call_response::Answer};

/// The sending half of a node's `Calls` stream; cheap to clone.
#[derive(Clone, Debug)]
pub(crate) struct CallStream {
    requests: mpsc::UnboundedSender<v1::CallRequest>,
    calls: Arc<Mutex<OpenCalls>>,
}

#[derive(Debug)]
struct OpenCalls {
    /// The id of the last call started (ids start at 1).
    last_id: u64,
    /// Where each open call's answers go; `None` once the stream has ended
    /// (nothing is started on it after that).
    waiting: Option<HashMap<u64, CallSender>>,
}

/// One call's unread answers, between the stream's reader and the caller.
/// Only a waiting acquire has more than one answer: its `queued` position
/// reports, then its last answer. The server sends a position only when it
/// changes, so the newest report is the one to keep: a newer one replaces
/// an unread one.
#[derive(Debug, Default)]
struct Unread {
    /// The newest `queued` report not yet read.
    report: Option<Answer>,
    /// The call's last answer (or the stream's end), once it came.
    last: Option<Result<Answer, Status>>,
    /// Nothing more will come: the reader dropped the call's sender.
    closed: bool,
}

#[derive(Debug, Default)]
struct CallSlot {
    unread: Mutex<Unread>,
    /// Signalled after each change to `unread` (one reader: the call).
    changed: Notify,
}

impl CallSlot {
    fn update(&self, f: impl FnOnce(&mut Unread)) {
        f(&mut self.unread.lock().unwrap_or_else(PoisonError::into_inner));
        self.changed.notify_one();
    }
}

/// The reader's end of one call; dropping it closes the call.
#[derive(Debug)]
struct CallSender(Arc<CallSlot>);

impl CallSender {
    fn report(&self, answer: Answer) {
        self.0.update(|unread| unread.report = Some(answer));
    }

    fn finish(&self, last: Result<Answer, Status>) {
        self.0.update(|unread| {
            unread.last.get_or_insert(last);
        });
    }
}

impl Drop for CallSender {
    fn drop(&mut self) {
        self.0.update(|unread| unread.closed = true);
    }
}

impl CallStream {
    /// Opens the stream on `channel` in the background; calls may start at
    /// once (they are sent as soon as the stream is up).
    pub(crate) fn open(channel: Channel) -> CallStream {
        let (requests, outbound) = mpsc::unbounded_channel();
        let calls = Arc::new(Mutex::new(OpenCalls {
            last_id: 0,
            waiting: Some(HashMap::new()),
        }));
        tokio::spawn(read_answers(channel, outbound, calls.clone()));
        CallStream { requests, calls }
    }

    /// True once the stream has ended: open a new one. Also when its reader
    /// task is gone without saying so (its runtime shut down): nothing sent
    /// on it would ever be read.
    pub(crate) fn is_closed(&self) -> bool {
        self.requests.is_closed() || lock(&self.calls).waiting.is_none()
    }

    /// Sends `call`; its answers arrive on the returned [`OpenCall`].
    pub(crate) fn start(&self, call: v1::call_request::Call) -> Result<OpenCall, Status> {
        let slot = Arc::new(CallSlot::default());
        let tx = CallSender(slot.clone());
        let call_id = {
            let mut calls = lock(&self.calls);
            calls.last_id += 1;
            let id = calls.last_id;
            match calls.waiting.as_mut() {
                Some(waiting) => waiting.insert(id, tx),
                None => return Err(stream_ended()),
            };
            id
        };
        let open = OpenCall {
            call_id,
            slot,
            calls: self.calls.clone(),
        };
        self.requests
            .send(v1::CallRequest {
                call_id,
                call: Some(call),
            })
            .map_err(|_| stream_ended())?;
        Ok(open)
    }
}

/// One call in progress on a [`CallStream`]; dropping it forgets the call
/// (a late answer is discarded).
#[derive(Debug)]
pub(crate) struct OpenCall {
    call_id: u64,
    slot: Arc<CallSlot>,
    calls: Arc<Mutex<OpenCalls>>,
}

impl OpenCall {
    /// The call's next answer; a failed call (its `error` answer) is the
    /// status the unary call would have returned, with its leader hint.
    pub(crate) async fn next(&mut self) -> Result<Answer, Status> {
        let answer = loop {
            {
                let mut unread = self
                    .slot
                    .unread
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner);
                // A report came before the last answer: it goes first.
                if let Some(report) = unread.report.take() {
                    break Ok(report);
                }
                if let Some(last) = unread.last.take() {
                    break last;
                }
                if unread.closed {
                    break Err(stream_ended());
                }
            }
            self.slot.changed.notified().await;
        };
        match answer {
            Ok(Answer::Error(e)) => Err(warden_proto::call_error_status(e)),
            answer => answer,
        }
    }
}

impl Drop for OpenCall {
    fn drop(&mut self) {
        if let Some(waiting) = lock(&self.calls).waiting.as_mut() {
            waiting.remove(&self.call_id);
        }
    }
}

/// True when `call` may go on a `Calls` stream: it fits the smallest
/// request-size limit a node can have. A larger one goes as its unary call,
/// so that the node's refusal of its size (`OutOfRange`) ends that call alone;
/// on the stream it would end the stream, failing every call on it.
///
/// Sized without building (or cloning into) the request: the call's own
/// field plus the largest `call_id` field.
pub(crate) fn fits_any_node(call: &v1::call_request::Call) -> bool {
    call.encoded_len() + LARGEST_CALL_ID_FIELD_BYTES <= warden_proto::SMALLEST_MAX_REQUEST_BYTES
}

/// `call_id`'s field at its largest: a one-byte tag and a ten-byte varint.
const LARGEST_CALL_ID_FIELD_BYTES: usize = 1 + 10;

/// Retryable, and not "the server said unavailable": the stream is gone, not
/// the cluster.
fn stream_ended() -> Status {
    Status::aborted("the call stream to this node ended; retry")
}

fn lock(calls: &Mutex<OpenCalls>) -> std::sync::MutexGuard<'_, OpenCalls> {
    calls.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Opens the stream and routes each answer to its call until the stream
/// ends; then fails every call still waiting with the stream's status.
async fn read_answers(
    channel: Channel,
    outbound: mpsc::UnboundedReceiver<v1::CallRequest>,
    calls: Arc<Mutex<OpenCalls>>,
) {
    let mut client = v1::lock_client::LockClient::new(channel);
    let end = match client.calls(UnboundedReceiverStream::new(outbound)).await {
        Err(status) => status,
        Ok(response) => {
            let mut inbound = response.into_inner();
            loop {
                match inbound.message().await {
                    Ok(Some(answer)) => route(&calls, answer),
                    Ok(None) => break stream_ended(),
                    Err(status) => break status,
                }
            }
        }
    };
    let waiting = lock(&calls).waiting.take();
    for (_, tx) in waiting.into_iter().flatten() {
        tx.finish(Err(end.clone()));
    }
}

/// Hands one answer to its call. A `queued` report replaces the call's
/// unread one; any other answer is the call's last. An answer this client
/// cannot read (none, or an acquire answer without an event: a kind from a
/// newer server) ends the call at once with an error naming it, instead of
/// leaving it waiting out its whole wait.
fn route(calls: &Mutex<OpenCalls>, answer: v1::CallResponse) {
    let call_id = answer.call_id;
    let last = match answer.answer {
        Some(
            report @ Answer::Acquire(v1::AcquireResponse {
                event: Some(Event::Queued(_)),
            }),
        ) => {
            let calls = lock(calls);
            if let Some(tx) = calls.waiting.as_ref().and_then(|w| w.get(&call_id)) {
                tx.report(report);
            }
            return;
        }
        None | Some(Answer::Acquire(v1::AcquireResponse { event: None })) => {
            Err(unreadable_answer(call_id))
        }
        Some(body) => Ok(body),
    };
    let tx = lock(calls)
        .waiting
        .as_mut()
        .and_then(|waiting| waiting.remove(&call_id));
    if let Some(tx) = tx {
        tx.finish(last);
    }
}

/// Not retried (a server-chosen status): the same server would send the
/// same answer again.
fn unreadable_answer(call_id: u64) -> Status {
    Status::internal(format!(
        "call {call_id}: the server sent an answer this client version cannot read; \
         upgrade the client"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::FutureExt;
    use tonic::Code;

    // L3 (a call reaches a live node): a stream whose reader task vanished
    // without failing its calls (its runtime shut down under it) counts as
    // closed, so the next call opens a new one instead of failing on it
    // until the deadline, every time.
    #[test]
    fn a_stream_whose_reader_is_gone_is_closed() {
        let (requests, outbound) = mpsc::unbounded_channel();
        let stream = CallStream {
            requests,
            calls: Arc::new(Mutex::new(OpenCalls {
                last_id: 0,
                waiting: Some(HashMap::new()),
            })),
        };
        assert!(!stream.is_closed());
        drop(outbound);
        assert!(stream.is_closed());
        let call = v1::call_request::Call::Release(v1::ReleaseRequest::default());
        assert_eq!(stream.start(call).unwrap_err().code(), Code::Aborted);
    }

    /// A stream with no reader task, its call table open (for `route`).
    fn stream_without_reader() -> (CallStream, mpsc::UnboundedReceiver<v1::CallRequest>) {
        let (requests, outbound) = mpsc::unbounded_channel();
        let stream = CallStream {
            requests,
            calls: Arc::new(Mutex::new(OpenCalls {
                last_id: 0,
                waiting: Some(HashMap::new()),
            })),
        };
        (stream, outbound)
    }

    fn queued(call_id: u64, position: u64) -> v1::CallResponse {
        v1::CallResponse {
            call_id,
            answer: Some(Answer::Acquire(v1::AcquireResponse {
                event: Some(Event::Queued(v1::Queued {
                    position,
                    ..Default::default()
                })),
            })),
        }
    }

    fn granted(call_id: u64, fencing_token: u64) -> v1::CallResponse {
        v1::CallResponse {
            call_id,
            answer: Some(Answer::Acquire(v1::AcquireResponse {
                event: Some(Event::Granted(v1::Granted {
                    fencing_token,
                    ..Default::default()
                })),
            })),
        }
    }

    fn start_acquire(stream: &CallStream) -> OpenCall {
        stream
            .start(v1::call_request::Call::Acquire(
                v1::AcquireRequest::default(),
            ))
            .unwrap()
    }

    /// The queue position of a `queued` answer.
    fn position(answer: Answer) -> u64 {
        match answer {
            Answer::Acquire(v1::AcquireResponse {
                event: Some(Event::Queued(q)),
            }) => q.position,
            other => panic!("not a queued report: {other:?}"),
        }
    }

    // Bounded client memory per call, and a caller that fell behind still
    // learns where it stands: the server sends a position only when it
    // changes (lock_service's ReportThrottle), so the newest report is kept
    // (it replaces an unread one), then the grant with its fencing token
    // (S2) arrives after it. (Newcomer review of 9de4dde: keeping the oldest
    // reports left such a caller at position 14 while it was first.)
    #[tokio::test]
    async fn a_slow_caller_sees_the_latest_queue_position_then_the_grant() {
        let (stream, _outbound) = stream_without_reader();
        let mut open = start_acquire(&stream);
        // The queue advances from 20 to 1 while the caller does not read.
        for p in (1..=20).rev() {
            route(&stream.calls, queued(1, p));
        }
        assert_eq!(position(open.next().await.unwrap()), 1);
        assert!(open.next().now_or_never().is_none(), "one report is kept");
        route(&stream.calls, queued(1, 1));
        route(&stream.calls, granted(1, 41));
        assert_eq!(position(open.next().await.unwrap()), 1);
        match open.next().await.unwrap() {
            Answer::Acquire(v1::AcquireResponse {
                event: Some(Event::Granted(g)),
            }) => assert_eq!(g.fencing_token, 41),
            other => panic!("expected the grant, got {other:?}"),
        }
        assert!(lock(&stream.calls).waiting.as_ref().unwrap().is_empty());
        assert_eq!(open.next().await.unwrap_err().code(), Code::Aborted);
    }

    // The last answer is never lost (S2's token is in it): an `error`
    // answer after many unread reports still arrives after the newest one,
    // and a second "last" answer for the same call is dropped, not queued.
    #[tokio::test]
    async fn an_error_answer_after_unread_reports_arrives_and_a_second_last_is_dropped() {
        let (stream, _outbound) = stream_without_reader();
        let mut open = start_acquire(&stream);
        for p in 1..=20 {
            route(&stream.calls, queued(1, p));
        }
        let error = |message: &str| v1::CallResponse {
            call_id: 1,
            answer: Some(Answer::Error(v1::CallError {
                code: tonic::Code::Unavailable as i32,
                message: message.to_string(),
                ..Default::default()
            })),
        };
        route(&stream.calls, error("first"));
        route(&stream.calls, error("second"));
        assert_eq!(position(open.next().await.unwrap()), 20);
        let status = open.next().await.unwrap_err();
        assert_eq!(
            (status.code(), status.message()),
            (Code::Unavailable, "first")
        );
        // The call is finished: its sender is gone, nothing else queued.
        assert_eq!(open.next().await.unwrap_err().code(), Code::Aborted);
    }

    // L3 (a call fails rather than hang): a stream that ends while a call
    // waits fails it with the stream's status, which the caller retries
    // with the same request id (S7).
    #[tokio::test]
    async fn a_call_waiting_when_its_stream_ends_gets_the_streams_status() {
        let (stream, _outbound) = stream_without_reader();
        let mut open = start_acquire(&stream);
        route(&stream.calls, queued(1, 3));
        let waiting = lock(&stream.calls).waiting.take();
        for (_, tx) in waiting.into_iter().flatten() {
            tx.finish(Err(Status::unavailable("node stopping")));
        }
        assert_eq!(position(open.next().await.unwrap()), 3);
        assert_eq!(open.next().await.unwrap_err().code(), Code::Unavailable);
        assert!(stream.is_closed());
    }

    // Newcomer review (forward compatibility, L3): a newer server's answer
    // kind this client cannot decode arrives as a `CallResponse` without
    // `answer`; `route` drops it silently and the call stays waiting, so a
    // waiting acquire sits out its whole wait (up to 1 h) plus an attempt
    // timeout instead of failing at once and retrying. FAILS on 9de4dde.
    #[tokio::test]
    async fn an_answer_this_client_cannot_read_fails_the_call_at_once() {
        let (stream, _outbound) = stream_without_reader();
        let mut open = start_acquire(&stream);
        route(
            &stream.calls,
            v1::CallResponse {
                call_id: 1,
                answer: None,
            },
        );
        let status = open
            .next()
            .now_or_never()
            .expect("the call is still waiting")
            .unwrap_err();
        assert_eq!(status.code(), Code::Internal);
        assert!(status
            .message()
            .starts_with("call 1: the server sent an answer"));
        assert_eq!(
            crate::error::disposition(&status),
            crate::error::Disposition::Fatal,
            "the same server would send it again: not retried"
        );
        // An acquire answer without an event (a newer report kind) too.
        let mut open = start_acquire(&stream);
        route(
            &stream.calls,
            v1::CallResponse {
                call_id: 2,
                answer: Some(Answer::Acquire(v1::AcquireResponse { event: None })),
            },
        );
        let status = open.next().now_or_never().unwrap().unwrap_err();
        assert!(status.message().starts_with("call 2: "), "{status:?}");
    }

    // Request size limit (docs/operations.md): every valid call (largest
    // numbers, a 512-byte resource) goes on the stream; one over the smallest
    // node limit goes unary, where the refusal of its size is its own.
    #[test]
    fn only_a_call_over_the_smallest_node_limit_leaves_the_stream() {
        let header = Some(v1::RequestHeader {
            client_id: u64::MAX,
            request_id: u64::MAX,
            acked_request_id: u64::MAX,
        });
        let acquire = |resource: String| {
            v1::call_request::Call::Acquire(v1::AcquireRequest {
                header,
                resource,
                ttl_ms: u64::MAX,
                lease_id: u64::MAX,
                wait_timeout_ms: u64::MAX,
                lock_delay_ms: u64::MAX,
                mode: i32::MAX,
                limit: u32::MAX,
                resources: Vec::new(),
                max_hold_ms: u64::MAX,
            })
        };
        // The sizing is exactly the request's at its largest call id.
        let big = acquire("r".repeat(512));
        let request = v1::CallRequest {
            call_id: u64::MAX,
            call: Some(big.clone()),
        };
        assert_eq!(
            prost::Message::encoded_len(&request),
            big.encoded_len() + LARGEST_CALL_ID_FIELD_BYTES
        );
        assert!(fits_any_node(&big));
        assert!(fits_any_node(&v1::call_request::Call::Release(
            v1::ReleaseRequest {
                header,
                resource: "r".repeat(512),
                lease_id: u64::MAX,
                fencing_token: u64::MAX,
            }
        )));
        assert!(!fits_any_node(&acquire("r".repeat(1_024))));
    }

    // L3 / redirects: a failed call keeps the leader hint its status carried,
    // so the retry goes straight to the leader as with a unary call.
    #[test]
    fn a_call_error_keeps_code_message_and_leader_hint() {
        let status = warden_proto::call_error_status(v1::CallError {
            code: Code::Unavailable as i32,
            message: "not the leader; the leader is node 2 at 127.0.0.1:7002".into(),
            leader: "127.0.0.1:7002".into(),
            details: Vec::new(),
        });
        assert_eq!(status.code(), Code::Unavailable);
        assert_eq!(
            status.message(),
            "not the leader; the leader is node 2 at 127.0.0.1:7002"
        );
        assert_eq!(
            crate::routing::leader_hint(status.metadata()).as_deref(),
            Some("127.0.0.1:7002")
        );
        let plain = warden_proto::call_error_status(v1::CallError {
            code: Code::InvalidArgument as i32,
            message: "resource: 1..=512 bytes".into(),
            leader: String::new(),
            details: Vec::new(),
        });
        assert_eq!(plain.code(), Code::InvalidArgument);
        assert!(plain
            .metadata()
            .get(warden_proto::LEADER_METADATA)
            .is_none());
    }

    // "What bad input gets": a refusal on the stream keeps its structured
    // details, so the field of an invalid argument is the one BadRequest
    // names, as on the unary call.
    #[test]
    fn a_call_error_keeps_the_status_details() {
        use tonic_types::StatusExt as _;
        let mut details = tonic_types::ErrorDetails::with_error_info(
            "INVALID_ARGUMENT",
            crate::error::ERROR_DOMAIN,
            std::collections::HashMap::<String, String>::new(),
        );
        details.add_bad_request_violation("ttl_ms", "below the minimum");
        let refused =
            tonic::Status::with_error_details(Code::InvalidArgument, "ttl_ms: low", details);
        let status = warden_proto::call_error_status(warden_proto::call_error(&refused));
        assert_eq!(
            crate::ClientError::from_status(&status),
            crate::ClientError::InvalidArgument {
                field: Some("ttl_ms".into()),
                message: "ttl_ms: low".into()
            }
        );
    }
}
