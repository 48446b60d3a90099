//! The acquire and release calls, as the unary `Acquire` / `Release` and as
//! calls of a `Calls` stream (one long-lived HTTP/2 stream per client and
//! node carries all its acquires and releases, each answered by call id).

use std::pin::Pin;
use std::sync::Arc;

use futures::Stream;
use tokio::sync::mpsc;
use tonic::Status;
use warden_proto::v1 as pb;

use super::call_ids::{call_id_in_flight, CallIdClaim, InFlightIds};
use super::convert::{self, acquire_start, AcquireStart};
use super::status::{grant_ended, shutting_down};
use super::waiter::{follow_waiter, WaiterOut};
use crate::metrics::AcquireOutcome;
use crate::node::submit::{AcquireAnswer, Released};
use crate::node::{Node, Principal, SubmitError};

/// Validates and submits an acquire, as both `Acquire` and `Calls` serve it.
pub(super) async fn start_acquire(
    node: &Node,
    principal: &Principal,
    r: pb::AcquireRequest,
) -> Result<AcquireStart, Status> {
    let started = tokio::time::Instant::now();
    let out = async {
        let mode = convert::wire_mode_of(&r);
        let answer: AcquireAnswer = node.submit(principal, convert::acquire(r)?).await?;
        acquire_start(
            answer,
            mode,
            |resource| node.lock_delay_remaining_ms(resource),
            |resource, lease_id, token| node.max_hold_ms(resource, lease_id, token),
        )
        .map_err(|(token, lease_id)| grant_ended(token, lease_id))
    }
    .await;
    let outcome = match &out {
        Ok(AcquireStart::Final(pb::AcquireResponse {
            event: Some(pb::acquire_response::Event::Granted(_)),
        })) => Some(AcquireOutcome::Granted),
        Ok(AcquireStart::Final(_)) => Some(AcquireOutcome::NotGranted),
        // Answered when the wait ends (`follow_waiter`).
        Ok(AcquireStart::Queued { .. }) => None,
        Err(_) => Some(AcquireOutcome::Error),
    };
    if let Some(outcome) = outcome {
        node.metrics().acquire(outcome, started.elapsed());
    }
    out
}

/// Validates and submits a release, as both `Release` and `Calls` serve it.
pub(super) async fn release(
    node: &Node,
    principal: &Principal,
    r: pb::ReleaseRequest,
) -> Result<pb::ReleaseResponse, Status> {
    let released: Released = node.submit(principal, convert::release(r)?).await?;
    Ok(pb::ReleaseResponse {
        resource: released.resource,
        lease_id: released.lease_id,
        released: true,
    })
}

/// Most calls one `Calls` stream has in progress (validating, proposing or
/// waiting for their entry to apply); beyond it the stream is not read until
/// one finishes (backpressure, not an error: the client's further calls wait
/// in the stream's HTTP/2 flow-control window, 32 KiB, and then in the
/// client, paused by flow control; so the node's memory per stream stays
/// bounded). The window is kept that small so that a client that sends
/// faster than the node reads is paused before h2's budget for buffered
/// small DATA frames runs out, which would close the connection with
/// GOAWAY `ENHANCE_YOUR_CALM` (the crate root's `start.rs`,
/// `STREAM_WINDOW_BYTES`).
/// Queued waiters are not counted (a queued acquire's call is done once it is
/// queued; [`follow_waiter`] reports the rest): the lock table and the
/// principal's waiter quota bound them, since a stream follows each waiter
/// once (`call_ids`: the same wait sent again moves to the new call id).
pub const MAX_CALLS_IN_PROGRESS: usize = 1024;

/// Answers of one `Calls` stream waiting to be sent.
pub(super) const CALLS_OUTBOUND_BUFFER: usize = 64;

pub(super) type CallsStream = Pin<Box<dyn Stream<Item = Result<pb::CallResponse, Status>> + Send>>;

pub(super) fn call_answer(call_id: u64, answer: pb::call_response::Answer) -> pb::CallResponse {
    pb::CallResponse {
        call_id,
        answer: Some(answer),
    }
}

/// Serves one call of a `Calls` stream, holding its id's `claim` (None for
/// id 0, which is refused) until its final answer; `None` when a queued
/// acquire's messages, and its claim, are left to [`follow_waiter`] (on
/// `out`, under its call id).
pub(super) async fn serve_call(
    node: Arc<Node>,
    principal: Principal,
    call: pb::CallRequest,
    claim: Option<CallIdClaim>,
    out: mpsc::Sender<Result<pb::CallResponse, Status>>,
) -> Option<pb::CallResponse> {
    use pb::call_request::Call;
    use pb::call_response::Answer;
    let id = call.call_id;
    let started = tokio::time::Instant::now();
    let answer = match claim {
        None => Err(SubmitError::invalid("call_id", "must be 1..=2^64-1").into()),
        Some(mut claim) => match call.call {
            None => Err(SubmitError::invalid("call", "required (acquire or release)").into()),
            Some(Call::Release(r)) => release(&node, &principal, r).await.map(Answer::Release),
            Some(Call::Acquire(a)) => match start_acquire(&node, &principal, a).await {
                Ok(AcquireStart::Final(m)) => Ok(Answer::Acquire(m)),
                Ok(AcquireStart::Queued {
                    resource,
                    lease_id,
                    enqueue_index,
                }) => {
                    claim.follow(&resource, lease_id, enqueue_index);
                    tokio::spawn(follow_waiter(
                        node.clone(),
                        WaiterOut::Call { claim, out },
                        resource,
                        lease_id,
                        enqueue_index,
                        started,
                    ));
                    return None;
                }
                Err(status) => Err(status),
            },
        },
    };
    Some(call_answer(
        id,
        answer.unwrap_or_else(|status: Status| Answer::Error(warden_proto::call_error(&status))),
    ))
}

/// Reads a `Calls` stream and serves its calls concurrently with `serve`
/// ([`serve_call`] in the service), at most `max_in_progress`
/// ([`MAX_CALLS_IN_PROGRESS`] in the service) at a time: with that many in
/// progress the next call is read only once one of them is answered. After
/// the client half-closes, the calls in progress are still answered. A
/// stream that cannot be read on (a message over `--max-request-bytes`, a
/// malformed one, a connection that broke or that the HTTP/2 keep-alive
/// closed) ends with that status once the calls in progress are answered:
/// the client must not keep sending calls that will never be read (queued
/// waiters, which hold the stream, would otherwise keep the stream open for
/// their whole wait). When the node stops (`stopping`), the stream ends with
/// `Unavailable`.
///
/// Each call is handed the claim of its id ([`InFlightIds`]; `None` for id
/// 0) when it is read; a call whose id is still in flight on this stream
/// (its final answer not yet sent, a queued acquire's included) is answered
/// at once with `InvalidArgument` naming `call_id` and not served, and the
/// call in flight goes on. The ids are read and claimed in stream order, and
/// a call's answer is queued for sending before the next call is read, so an
/// id is free for every call the client sends after it saw the answer.
pub(super) async fn serve_calls<S, F, Fut>(
    mut inbound: S,
    serve: F,
    max_in_progress: usize,
    out: mpsc::Sender<Result<pb::CallResponse, Status>>,
    mut stopping: tokio::sync::watch::Receiver<bool>,
) where
    S: Stream<Item = Result<pb::CallRequest, Status>> + Unpin,
    F: Fn(
        pb::CallRequest,
        Option<CallIdClaim>,
        mpsc::Sender<Result<pb::CallResponse, Status>>,
    ) -> Fut,
    Fut: std::future::Future<Output = Option<pb::CallResponse>>,
{
    use futures::future::Either;
    use futures::StreamExt as _;
    let in_flight = InFlightIds::default();
    let mut in_progress = futures::stream::FuturesUnordered::new();
    let mut reading = true;
    let mut unreadable = None;
    loop {
        tokio::select! {
            message = inbound.next(), if reading && in_progress.len() < max_in_progress => {
                match message {
                    Some(Ok(call)) if call.call_id == 0 => {
                        in_progress.push(Either::Left(serve(call, None, out.clone())));
                    }
                    Some(Ok(call)) => match in_flight.claim(call.call_id) {
                        Some(claim) => {
                            in_progress.push(Either::Left(serve(call, Some(claim), out.clone())));
                        }
                        None => {
                            let refused = call_answer(
                                call.call_id,
                                pb::call_response::Answer::Error(warden_proto::call_error(
                                    &call_id_in_flight(call.call_id),
                                )),
                            );
                            in_progress.push(Either::Right(std::future::ready(Some(refused))));
                        }
                    },
                    // Half-closed: finish what is in progress.
                    None => reading = false,
                    // Unreadable (or the connection broke): finish what is
                    // in progress, then end the stream with this status.
                    Some(Err(status)) => {
                        reading = false;
                        unreadable = Some(status);
                    }
                }
            }
            Some(answer) = in_progress.next(), if !in_progress.is_empty() => {
                if let Some(answer) = answer {
                    if out.send(Ok(answer)).await.is_err() {
                        return;
                    }
                }
            }
            _ = out.closed() => return,
            // The node is stopping: end the stream now (its calls are
            // retried elsewhere with their request ids, S7; a queued waiter
            // stays queued, S8), or the graceful stop would wait for it.
            _ = async { stopping.wait_for(|s| *s).await.map(|_| ()) } => {
                let _ = out.send(Err(shutting_down())).await;
                return;
            }
        }
        if !reading && in_progress.is_empty() {
            if let Some(status) = unreadable {
                let _ = out.send(Err(status)).await;
            }
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Bounded server memory per stream (MAX_CALLS_IN_PROGRESS): a `Calls`
    // stream has at most the limit in progress, reads the next call only
    // once one of them is answered (in any order), and answers every call
    // once under its id. The stream is polled by hand: `Pending` means it
    // has done all it can, so a call not read then is held back.
    #[tokio::test]
    async fn a_calls_stream_reads_no_more_than_the_limit_in_progress() {
        use futures::StreamExt as _;
        use std::collections::BTreeMap;
        use std::sync::atomic::{AtomicUsize, Ordering};
        use std::task::Poll;
        use tokio::sync::oneshot;

        const LIMIT: usize = 2;
        const CALLS: u64 = 5;
        let (calls_tx, calls_rx) = mpsc::unbounded_channel();
        for id in 1..=CALLS {
            calls_tx
                .send(Ok(pb::CallRequest {
                    call_id: id,
                    call: None,
                }))
                .unwrap();
        }
        let read = Arc::new(AtomicUsize::new(0));
        let counted = read.clone();
        let inbound = tokio_stream::wrappers::UnboundedReceiverStream::new(calls_rx).inspect(
            move |_: &Result<pb::CallRequest, Status>| {
                counted.fetch_add(1, Ordering::SeqCst);
            },
        );
        // Each call stays in progress until its gate opens.
        let mut open = BTreeMap::new();
        let gates = Arc::new(std::sync::Mutex::new(BTreeMap::new()));
        for id in 1..=CALLS {
            let (tx, rx) = oneshot::channel::<()>();
            open.insert(id, tx);
            gates.lock().unwrap().insert(id, rx);
        }
        let serve = move |call: pb::CallRequest, _claim, _out| {
            let gate = gates.lock().unwrap().remove(&call.call_id);
            async move {
                gate.expect("each call is read once").await.unwrap();
                Some(call_answer(
                    call.call_id,
                    pb::call_response::Answer::Release(pb::ReleaseResponse::default()),
                ))
            }
        };
        let (out, mut answers) = mpsc::channel(CALLS_OUTBOUND_BUFFER);
        let (_stop_tx, stopping) = tokio::sync::watch::channel(false);
        let mut stream = std::pin::pin!(serve_calls(inbound, serve, LIMIT, out, stopping));
        let mut answered = Vec::new();
        let mut step = async |open_now: &[u64]| {
            for id in open_now {
                open.remove(id).unwrap().send(()).unwrap();
            }
            assert_eq!(futures::poll!(stream.as_mut()), Poll::Pending);
            while let Ok(answer) = answers.try_recv() {
                answered.push(answer.unwrap().call_id);
            }
            let mut ids = answered.clone();
            ids.sort();
            (read.load(Ordering::SeqCst), ids)
        };

        assert_eq!(step(&[]).await, (2, vec![]), "the limit is read, no more");
        assert_eq!(
            step(&[2]).await,
            (3, vec![2]),
            "one answered, one more read"
        );
        assert_eq!(step(&[1, 3]).await, (5, vec![1, 2, 3]));
        assert_eq!(step(&[4, 5]).await, (5, vec![1, 2, 3, 4, 5]));
        // Half-closed with nothing in progress: the stream ends.
        drop(calls_tx);
        assert_eq!(futures::poll!(stream.as_mut()), Poll::Ready(()));
    }

    /// A `Calls` stream served by the real [`serve_call`] on `t`'s node for
    /// an anonymous caller: (where its calls go, its answers, the stream's
    /// task, the node-stopping switch to hold while it runs).
    #[allow(clippy::type_complexity)]
    fn open_calls_stream(
        t: &crate::node::test_node::TestNode,
    ) -> (
        mpsc::UnboundedSender<Result<pb::CallRequest, Status>>,
        mpsc::Receiver<Result<pb::CallResponse, Status>>,
        tokio::task::JoinHandle<()>,
        tokio::sync::watch::Sender<bool>,
    ) {
        let (calls_tx, calls_rx) = mpsc::unbounded_channel();
        let (out, answers) = mpsc::channel(CALLS_OUTBOUND_BUFFER);
        let (stop_tx, stopping) = tokio::sync::watch::channel(false);
        let node = t.node.clone();
        let stream = tokio::spawn(serve_calls(
            tokio_stream::wrappers::UnboundedReceiverStream::new(calls_rx),
            move |call, claim, out| serve_call(node.clone(), None, call, claim, out),
            MAX_CALLS_IN_PROGRESS,
            out,
            stopping,
        ));
        (calls_tx, answers, stream, stop_tx)
    }

    fn gated_release(call_id: u64) -> pb::CallRequest {
        pb::CallRequest {
            call_id,
            call: Some(pb::call_request::Call::Release(
                pb::ReleaseRequest::default(),
            )),
        }
    }

    // A call id names one call in flight on its stream (public bug: a
    // `Calls` stream that reused a call id in flight ran both calls, and
    // their answers could not be told apart): a second call under id 7
    // while the first is in progress is answered at once with
    // InvalidArgument naming `call_id`, is never served, and the first call
    // still gets its own answer; once that answer is out, id 7 is served
    // again. Polled by hand as above.
    #[tokio::test]
    async fn a_call_id_in_flight_is_refused_and_free_again_once_answered() {
        use std::collections::VecDeque;
        use std::sync::Mutex;
        use std::task::Poll;
        use tokio::sync::oneshot;

        let (calls_tx, calls_rx) = mpsc::unbounded_channel();
        let inbound = tokio_stream::wrappers::UnboundedReceiverStream::new(calls_rx);
        // Each served call waits for the next gate; `served` counts them.
        let gates = Arc::new(Mutex::new(VecDeque::new()));
        let served = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let (gates_in, counted) = (gates.clone(), served.clone());
        let serve = move |call: pb::CallRequest, claim: Option<CallIdClaim>, _out| {
            counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            let gate: oneshot::Receiver<u64> = gates_in
                .lock()
                .unwrap()
                .pop_front()
                .expect("a gate per call");
            async move {
                let answer = gate.await.unwrap();
                drop(claim);
                Some(call_answer(
                    call.call_id,
                    pb::call_response::Answer::Release(pb::ReleaseResponse {
                        lease_id: answer,
                        ..Default::default()
                    }),
                ))
            }
        };
        let mut open = VecDeque::new();
        for _ in 0..2 {
            let (tx, rx) = oneshot::channel();
            open.push_back(tx);
            gates.lock().unwrap().push_back(rx);
        }
        let (out, mut answers) = mpsc::channel(CALLS_OUTBOUND_BUFFER);
        let (_stop_tx, stopping) = tokio::sync::watch::channel(false);
        let mut stream = std::pin::pin!(serve_calls(inbound, serve, 16, out, stopping));
        let served_now = || served.load(std::sync::atomic::Ordering::SeqCst);

        calls_tx.send(Ok(gated_release(7))).unwrap();
        calls_tx.send(Ok(gated_release(7))).unwrap();
        assert_eq!(futures::poll!(stream.as_mut()), Poll::Pending);
        let refused = answers
            .try_recv()
            .expect("the second call is answered")
            .unwrap();
        assert_eq!(refused.call_id, 7);
        let Some(pb::call_response::Answer::Error(e)) = refused.answer else {
            panic!("not refused: {refused:?}")
        };
        assert_eq!(e.code, tonic::Code::InvalidArgument as i32, "{e:?}");
        assert!(
            e.message
                .starts_with("call_id: call_id 7 is in flight on this stream"),
            "{}",
            e.message
        );
        assert_eq!(served_now(), 1, "the refused call is not served");
        assert!(
            answers.try_recv().is_err(),
            "the first call is still in flight"
        );

        // The first call answers as its own (lease_id 41 marks it).
        open.pop_front().unwrap().send(41).unwrap();
        assert_eq!(futures::poll!(stream.as_mut()), Poll::Pending);
        let first = answers
            .try_recv()
            .expect("the first call's answer")
            .unwrap();
        assert_eq!(first.call_id, 7);
        assert!(
            matches!(first.answer, Some(pb::call_response::Answer::Release(ref r)) if r.lease_id == 41),
            "{first:?}"
        );

        // Answered: the id is free, and a call under it is served.
        calls_tx.send(Ok(gated_release(7))).unwrap();
        assert_eq!(futures::poll!(stream.as_mut()), Poll::Pending);
        assert_eq!(served_now(), 2, "id 7 is served again");
        open.pop_front().unwrap().send(42).unwrap();
        assert_eq!(futures::poll!(stream.as_mut()), Poll::Pending);
        let again = answers.try_recv().expect("its answer").unwrap();
        assert!(
            matches!(again.answer, Some(pb::call_response::Answer::Release(ref r)) if r.lease_id == 42),
            "{again:?}"
        );
        drop(calls_tx);
        assert_eq!(futures::poll!(stream.as_mut()), Poll::Ready(()));
    }

    // The same for a queued acquire (public bug: a reused call id ran both
    // calls): its call stays in flight while it waits, so id 7 is refused
    // (nothing is submitted: the second acquire's resource stays free) until
    // the wait ends in a grant, and is accepted right after it. Served by
    // the real `serve_call` and `follow_waiter` on a one-node cluster.
    #[tokio::test]
    async fn a_queued_acquires_call_id_is_in_flight_until_its_grant() {
        use crate::node::submit::Released;
        use crate::node::test_node::{header, Setup, TestNode};
        use std::time::Duration;
        use warden_core::types::{AcquireOutcome, Command, Release};

        let t = TestNode::start(Setup::default()).await;
        let holder: warden_core::types::AcquireReply = t.hold("q/1", 30_000, 0).await;
        let AcquireOutcome::Granted {
            lease_id: holder_lease,
            fencing_token,
            ..
        } = holder.outcome
        else {
            panic!("not granted: {holder:?}")
        };
        let acquire = |request_id, resource: &str, wait_timeout_ms| pb::CallRequest {
            call_id: 7,
            call: Some(pb::call_request::Call::Acquire(pb::AcquireRequest {
                header: Some(pb::RequestHeader {
                    client_id: 2,
                    request_id,
                    acked_request_id: 0,
                }),
                resource: resource.into(),
                ttl_ms: 30_000,
                wait_timeout_ms,
                ..Default::default()
            })),
        };
        let (calls_tx, mut answers, stream, _stop_tx) = open_calls_stream(&t);
        let mut next = async || {
            let answer = tokio::time::timeout(Duration::from_secs(10), answers.recv())
                .await
                .expect("an answer within 10 s")
                .expect("open")
                .expect("not a stream error");
            assert_eq!(answer.call_id, 7);
            answer.answer.expect("an answer")
        };
        use pb::acquire_response::Event;
        use pb::call_response::Answer;

        calls_tx.send(Ok(acquire(1, "q/1", 60_000))).unwrap();
        let Answer::Acquire(pb::AcquireResponse {
            event: Some(Event::Queued(q)),
        }) = next().await
        else {
            panic!("not queued")
        };
        assert_eq!(q.position, 1);

        calls_tx.send(Ok(acquire(2, "q/2", 0))).unwrap();
        let Answer::Error(e) = next().await else {
            panic!("the second call under id 7 is not refused")
        };
        assert_eq!(e.code, tonic::Code::InvalidArgument as i32, "{e:?}");
        assert!(
            e.message.contains("in flight on this stream"),
            "{}",
            e.message
        );
        assert_eq!(t.table(|m| m.holder("q/2")), None, "nothing was submitted");

        let _: Released = t
            .node
            .submit(
                &None,
                Command::Release(Release {
                    header: header(1, 2),
                    resource: Some("q/1".into()),
                    lease_id: holder_lease,
                    fencing_token: Some(fencing_token),
                }),
            )
            .await
            .expect("release");
        let granted = loop {
            match next().await {
                Answer::Acquire(pb::AcquireResponse {
                    event: Some(Event::Queued(_)),
                }) => continue,
                other => break other,
            }
        };
        let Answer::Acquire(pb::AcquireResponse {
            event: Some(Event::Granted(g)),
        }) = granted
        else {
            panic!("the first call is not granted: {granted:?}")
        };
        assert_eq!(g.resource, "q/1");

        // Its final answer is out: id 7 is free again.
        calls_tx.send(Ok(acquire(2, "q/2", 0))).unwrap();
        let Answer::Acquire(pb::AcquireResponse {
            event: Some(Event::Granted(g)),
        }) = next().await
        else {
            panic!("the reused id is not served")
        };
        assert_eq!(g.resource, "q/2");
        assert!(t.table(|m| m.holder("q/2")).is_some());
        drop(calls_tx);
        tokio::time::timeout(Duration::from_secs(10), stream)
            .await
            .expect("the stream ends once half-closed")
            .expect("no panic");
    }

    // Bounded followers per stream (found by an attack: 30,000 copies of one
    // waiting acquire under new call ids started 30,000 follower tasks, each
    // woken by every applied entry): the same wait sent again under a new id
    // takes its answers over, and the earlier call ends at once with an
    // error naming the new id (woken by the take-over, not by the next
    // applied entry, so copies cannot pile up between entries). After 200
    // copies the release grants the last id alone; the table holds one
    // waiter throughout.
    #[tokio::test]
    async fn the_same_wait_sent_again_moves_to_the_new_call_id() {
        use crate::node::submit::Released;
        use crate::node::test_node::{header, Setup, TestNode};
        use std::time::Duration;
        use warden_core::types::{AcquireOutcome, Command, Release};

        let t = TestNode::start(Setup::default()).await;
        let holder: warden_core::types::AcquireReply = t.hold("s/1", 30_000, 0).await;
        let AcquireOutcome::Granted {
            lease_id: holder_lease,
            fencing_token,
            ..
        } = holder.outcome
        else {
            panic!("not granted: {holder:?}")
        };
        // One waiting acquire (client 2, request 1), sent under `call_id`.
        let acquire = |call_id| pb::CallRequest {
            call_id,
            call: Some(pb::call_request::Call::Acquire(pb::AcquireRequest {
                header: Some(pb::RequestHeader {
                    client_id: 2,
                    request_id: 1,
                    acked_request_id: 0,
                }),
                resource: "s/1".into(),
                ttl_ms: 30_000,
                wait_timeout_ms: 60_000,
                ..Default::default()
            })),
        };
        let (calls_tx, mut answers, _stream, _stop_tx) = open_calls_stream(&t);
        let mut next = async || {
            tokio::time::timeout(Duration::from_secs(10), answers.recv())
                .await
                .expect("an answer within 10 s")
                .expect("open")
                .expect("not a stream error")
        };
        use pb::acquire_response::Event;
        use pb::call_response::Answer;
        let queued = |a: &pb::CallResponse| {
            matches!(
                &a.answer,
                Some(Answer::Acquire(pb::AcquireResponse {
                    event: Some(Event::Queued(_))
                }))
            )
        };

        calls_tx.send(Ok(acquire(1))).unwrap();
        let first = next().await;
        assert!(first.call_id == 1 && queued(&first), "{first:?}");
        const COPIES: u64 = 200;
        for id in 2..=COPIES {
            calls_tx.send(Ok(acquire(id))).unwrap();
            // Two answers, in either order: id's Queued and id − 1's end.
            let (mut got_queued, mut got_end) = (false, false);
            while !(got_queued && got_end) {
                let a = next().await;
                if a.call_id == id && queued(&a) {
                    got_queued = true;
                } else if a.call_id == id - 1 {
                    let Some(Answer::Error(e)) = &a.answer else {
                        panic!("call {} did not end with an error: {a:?}", id - 1)
                    };
                    assert_eq!(e.code, tonic::Code::InvalidArgument as i32, "{e:?}");
                    assert!(
                        e.message.contains(&format!("call_id {id}")),
                        "{}",
                        e.message
                    );
                    got_end = true;
                } else {
                    panic!("unexpected answer {a:?} after call {id}");
                }
            }
        }
        assert_eq!(
            t.table(|m| m.resource("s/1").map(|r| r.waiters.len())),
            Some(1)
        );

        let _: Released = t
            .node
            .submit(
                &None,
                Command::Release(Release {
                    header: header(1, 2),
                    resource: Some("s/1".into()),
                    lease_id: holder_lease,
                    fencing_token: Some(fencing_token),
                }),
            )
            .await
            .expect("release");
        let granted = loop {
            let a = next().await;
            if queued(&a) {
                assert_eq!(a.call_id, COPIES, "only the last id follows the wait");
                continue;
            }
            break a;
        };
        assert_eq!(granted.call_id, COPIES, "{granted:?}");
        assert!(
            matches!(
                granted.answer,
                Some(Answer::Acquire(pb::AcquireResponse {
                    event: Some(Event::Granted(_))
                }))
            ),
            "{granted:?}"
        );
    }
}
