//! One replication session over `AppendStream`: openraft's requests into
//! the stream's request body, the follower's answers out, one request in
//! flight, commit-only requests the follower already matched left unsent.

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use futures::{Stream, StreamExt};
use openraft::errors::RPCError;
use openraft::network::RPCTypes;
use openraft::raft::{AppendEntriesRequest, StreamAppendResult};
use tokio::sync::mpsc;
use warden_proto::peer::Blob;

use super::{network, PeerConnection, MAX_APPENDS_IN_FLIGHT};
use crate::types::{LogId, TypeConfig};

/// One replication session over `AppendStream` (see
/// [`PeerConnection::stream_append`]). Polling it takes openraft's requests
/// (at most [`MAX_APPENDS_IN_FLIGHT`] unanswered) into the stream's request
/// body and yields the follower's answers in order. The oldest unanswered
/// request gets the call timeout: past it the session ends with openraft's
/// `Timeout` (see [`PeerConnection::timeout_error`]; counted toward
/// [`PEER_RECONNECT_AFTER`]), so a stream on a connection
/// that stopped delivering is given up, as a unary call is. Dropping it drops
/// openraft's request stream with it, as openraft's own sequential session
/// does: no request is taken for a session that has ended.
pub(super) struct AppendStream<'s, S> {
    pub(super) conn: &'s mut PeerConnection,
    /// openraft's requests; None once it has ended.
    pub(super) input: Option<S>,
    /// The request body; dropped (ending the body) when `input` ends.
    pub(super) tx: Option<mpsc::UnboundedSender<Blob>>,
    pub(super) replies: tonic::Streaming<Blob>,
    /// When each unanswered request was sent, oldest first.
    pub(super) sent: VecDeque<tokio::time::Instant>,
    /// The greatest log id the follower acknowledged as matching on this
    /// session (`Some(None)`: it acknowledged an empty log); None before the
    /// first acknowledgement.
    pub(super) acked: Option<Option<LogId>>,
    pub(super) timeout: Duration,
    pub(super) deadline: Pin<Box<tokio::time::Sleep>>,
    pub(super) done: bool,
}

/// Whether `rpc` is an AppendEntries that only moves the follower's commit
/// index: no entries, and a `prev_log_id` that the follower already
/// acknowledged as matching on this session. openraft sends one after every
/// commit that no entry follows to carry (`stream_state.rs`,
/// `get_log_id_range`): a second round trip per entry on an idle cluster.
/// Such a request is not sent. The follower learns the commit index from the
/// next request with entries, or else from the next heartbeat (every
/// `heartbeat_ms`; openraft's heartbeats carry the leader's commit), as etcd's
/// followers do. Nothing waits for its answer: openraft counts a request
/// acknowledged once a later answer matches at or past its last log id, and
/// its answer would only repeat what the follower has acknowledged. Only
/// when a follower applies moves (at most one heartbeat later); what the
/// leader counts as committed does not (S3).
fn carries_only_a_commit(
    rpc: &AppendEntriesRequest<TypeConfig>,
    acked: Option<&Option<LogId>>,
) -> bool {
    rpc.entries.is_empty() && acked == Some(&rpc.prev_log_id)
}

impl<S> AppendStream<'_, S> {
    fn end(&mut self, e: RPCError<TypeConfig>) -> Poll<Option<<Self as Stream>::Item>>
    where
        S: Stream<Item = AppendEntriesRequest<TypeConfig>> + Unpin,
    {
        self.done = true;
        Poll::Ready(Some(Err(e)))
    }
}

impl<S> Stream for AppendStream<'_, S>
where
    S: Stream<Item = AppendEntriesRequest<TypeConfig>> + Unpin,
{
    type Item = Result<StreamAppendResult<TypeConfig>, RPCError<TypeConfig>>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        if this.done {
            return Poll::Ready(None);
        }
        // 1. Send what openraft has, up to the in-flight bound.
        while this.sent.len() < MAX_APPENDS_IN_FLIGHT {
            let Some(input) = this.input.as_mut() else {
                break;
            };
            match input.poll_next_unpin(cx) {
                Poll::Ready(Some(rpc)) => {
                    if carries_only_a_commit(&rpc, this.acked.as_ref()) {
                        continue;
                    }
                    let timed = crate::raft::cluster_time_wire::timed(&this.conn.cluster_time, rpc);
                    let data = match postcard::to_allocvec(&timed) {
                        Ok(data) => data,
                        Err(e) => return this.end(network(e.to_string())),
                    };
                    // A failed send means the stream is gone; its error
                    // arrives with the replies (or the timeout does).
                    if let Some(tx) = &this.tx {
                        let _ = tx.send(Blob { data });
                    }
                    this.sent.push_back(tokio::time::Instant::now());
                }
                Poll::Ready(None) => {
                    this.input = None;
                    this.tx = None;
                }
                Poll::Pending => break,
            }
        }
        // 2. The next answer.
        match Pin::new(&mut this.replies).poll_next(cx) {
            Poll::Ready(Some(Ok(blob))) => {
                this.sent.pop_front();
                this.conn.answered_now();
                return match postcard::from_bytes::<StreamAppendResult<TypeConfig>>(&blob.data) {
                    Ok(result) => {
                        if let Ok(matching) = &result {
                            this.acked = this.acked.max(Some(*matching));
                        }
                        Poll::Ready(Some(Ok(result)))
                    }
                    Err(e) => this.end(network(format!(
                        "peer {}: bad append answer: {e}",
                        this.conn.target
                    ))),
                };
            }
            Poll::Ready(Some(Err(status))) => {
                let e = this.conn.failed(&status);
                return this.end(e);
            }
            Poll::Ready(None) => {
                this.done = true;
                return Poll::Ready(None);
            }
            Poll::Pending => {}
        }
        // 3. The oldest unanswered request's timeout.
        if let Some(oldest) = this.sent.front() {
            let due = *oldest + this.timeout;
            if this.deadline.deadline() != due {
                this.deadline.as_mut().reset(due);
            }
            if this.deadline.as_mut().poll(cx).is_ready() {
                this.conn.timed_out();
                let e = this
                    .conn
                    .timeout_error(RPCTypes::AppendEntries, this.timeout);
                return this.end(e);
            }
        }
        Poll::Pending
    }
}
