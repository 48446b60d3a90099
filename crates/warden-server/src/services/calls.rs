//! The acquire and release calls, as the unary `Acquire` / `Release` and as
//! calls of a `Calls` stream (one long-lived HTTP/2 stream per client and
//! node carries all its acquires and releases, each answered by call id).

use std::pin::Pin;
use std::sync::Arc;

use futures::Stream;
use tokio::sync::mpsc;
use tonic::Status;
use warden_core::types::AcquireReply;
use warden_proto::v1 as pb;

use super::convert::{self, acquire_start, AcquireStart};
use super::status::{grant_ended, shutting_down};
use super::waiter::{follow_waiter, WaiterOut};
use crate::metrics::AcquireOutcome;
use crate::node::submit::Released;
use crate::node::{Node, Principal, SubmitError};

/// Validates and submits an acquire, as both `Acquire` and `Calls` serve it.
pub(super) async fn start_acquire(
    node: &Node,
    principal: &Principal,
    r: pb::AcquireRequest,
) -> Result<AcquireStart, Status> {
    let started = tokio::time::Instant::now();
    let out = async {
        let reply: AcquireReply = node.submit(principal, convert::acquire(r)?).await?;
        acquire_start(reply, |resource| node.lock_delay_remaining_ms(resource))
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
/// in the stream's HTTP/2 flow-control window, so the node's memory per
/// stream stays bounded).
/// Queued waiters are not counted (a queued acquire's call is done once it is
/// queued; [`follow_waiter`] reports the rest): the lock table bounds them.
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

/// Serves one call of a `Calls` stream; `None` when a queued acquire's
/// messages are left to [`follow_waiter`] (on `out`, under its call id).
pub(super) async fn serve_call(
    node: Arc<Node>,
    principal: Principal,
    call: pb::CallRequest,
    out: mpsc::Sender<Result<pb::CallResponse, Status>>,
) -> Option<pb::CallResponse> {
    use pb::call_request::Call;
    use pb::call_response::Answer;
    let id = call.call_id;
    let started = tokio::time::Instant::now();
    let answer = if id == 0 {
        Err(SubmitError::invalid("call_id", "must be 1..=2^64-1").into())
    } else {
        match call.call {
            None => Err(SubmitError::invalid("call", "required (acquire or release)").into()),
            Some(Call::Release(r)) => release(&node, &principal, r).await.map(Answer::Release),
            Some(Call::Acquire(a)) => match start_acquire(&node, &principal, a).await {
                Ok(AcquireStart::Final(m)) => Ok(Answer::Acquire(m)),
                Ok(AcquireStart::Queued {
                    resource,
                    lease_id,
                    enqueue_index,
                }) => {
                    tokio::spawn(follow_waiter(
                        node.clone(),
                        WaiterOut::Call { call_id: id, out },
                        resource,
                        lease_id,
                        enqueue_index,
                        started,
                    ));
                    return None;
                }
                Err(status) => Err(status),
            },
        }
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
pub(super) async fn serve_calls<S, F, Fut>(
    mut inbound: S,
    serve: F,
    max_in_progress: usize,
    out: mpsc::Sender<Result<pb::CallResponse, Status>>,
    mut stopping: tokio::sync::watch::Receiver<bool>,
) where
    S: Stream<Item = Result<pb::CallRequest, Status>> + Unpin,
    F: Fn(pb::CallRequest, mpsc::Sender<Result<pb::CallResponse, Status>>) -> Fut,
    Fut: std::future::Future<Output = Option<pb::CallResponse>>,
{
    use futures::StreamExt as _;
    let mut in_progress = futures::stream::FuturesUnordered::new();
    let mut reading = true;
    let mut unreadable = None;
    loop {
        tokio::select! {
            message = inbound.next(), if reading && in_progress.len() < max_in_progress => {
                match message {
                    Some(Ok(call)) => in_progress.push(serve(call, out.clone())),
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
        let serve = move |call: pb::CallRequest, _out| {
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
}
