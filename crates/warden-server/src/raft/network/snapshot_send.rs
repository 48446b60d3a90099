//! Sending a snapshot to a follower: `InstallSnapshotStream`, chunks of at
//! most 1 MiB on one client stream (`crate::raft::snapshot_chunks`), or, to
//! a peer that answers it `Unimplemented` (a binary from before the stream,
//! during a rolling upgrade), the whole snapshot in one unary
//! `InstallSnapshot`, as before; the connection remembers that and sends
//! the next snapshots unary too.
//!
//! # Timeouts
//!
//! A transfer is bounded per chunk, not as a whole: each chunk must be
//! taken by the transport within [`snapshot_chunk_timeout`] (the chunks go
//! through a channel of one slot, emptied only as fast as HTTP/2 flow
//! control lets the bytes leave), and the answer must come within the same
//! time after the last chunk (the follower decodes and installs the table
//! before it answers). So a stalled peer is given up on after one chunk's
//! timeout, while a large snapshot over a slow link that keeps moving is
//! never cut off by a fixed deadline for the whole: one fixed 10 s for a
//! million-lock snapshot was a floor of hundreds of MiB per 10 s, a link
//! slower than that could never catch a follower up. With the default 10 s
//! per chunk of 1 MiB the floor is 100 KiB/s. The unary fallback keeps one
//! deadline for the whole call (its peer reads one message), as before.
//!
//! A transfer that timed out fails as openraft's `Unreachable`, unlike an
//! append, which fails as `Timeout` ([`PeerConnection`]'s `timeout_error`):
//! an append's timeout is a fraction of a second and is often this node
//! running late, while a chunk's is seconds in which the peer took no byte,
//! and `Unreachable` makes openraft back off (200 ms) before it starts
//! another transfer of up to hundreds of MiB to a peer that is stalled.
//!
//! Cancellation: openraft's `cancel` future is raced against the whole
//! transfer by [`super::PeerConnection`]'s `full_snapshot`; dropping the
//! transfer drops the request stream before its last chunk, and the
//! follower refuses a stream without it (nothing is installed).

use std::time::Duration;

use openraft::errors::RPCError;
use openraft::network::{RPCOption, RPCTypes};
use openraft::raft::SnapshotResponse;
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use warden_proto::peer::SnapshotChunk;

use super::{unreachable, PeerConnection, SnapshotEnvelope};
use crate::raft::snapshot_chunks::chunks;
use crate::types::{Snapshot, TypeConfig, Vote};

/// The shortest time a snapshot chunk (and the answer after the last) may
/// take: 10 s, the whole transfer's timeout before snapshots were chunked.
pub const SNAPSHOT_CHUNK_TIMEOUT_FLOOR: Duration = Duration::from_secs(10);

/// How long each chunk of a snapshot, and the answer after the last, may
/// take (module docs): the larger of openraft's `hard_ttl` (its
/// `install_snapshot_timeout`) and `floor` ([`SNAPSHOT_CHUNK_TIMEOUT_FLOOR`]
/// on a node).
pub fn snapshot_chunk_timeout(option: &RPCOption, floor: Duration) -> Duration {
    option.hard_ttl().max(floor)
}

/// What the stream attempt came to.
enum Streamed {
    /// The follower answered (or the transfer failed).
    Done(Result<SnapshotResponse<TypeConfig>, RPCError<TypeConfig>>),
    /// The follower does not know `InstallSnapshotStream`.
    Unimplemented,
}

impl PeerConnection {
    /// Sends `snapshot` with the sender's `vote` (module docs).
    pub(super) async fn send_snapshot(
        &mut self,
        vote: Vote,
        snapshot: Snapshot,
        option: &RPCOption,
    ) -> Result<SnapshotResponse<TypeConfig>, RPCError<TypeConfig>> {
        let timeout = snapshot_chunk_timeout(option, self.snapshot_chunk_timeout_floor);
        if self.snapshot_stream {
            match self.stream_snapshot(vote, &snapshot, timeout).await {
                Streamed::Done(r) => return r,
                Streamed::Unimplemented => {
                    tracing::info!(
                        peer = self.target,
                        "peer has no snapshot stream; sending snapshots in one call"
                    );
                    self.snapshot_stream = false;
                }
            }
        }
        let env = SnapshotEnvelope {
            vote,
            meta: snapshot.meta,
            data: snapshot.snapshot,
        };
        self.call(
            RPCTypes::InstallSnapshot,
            &env,
            timeout,
            |mut c, r| async move { c.install_snapshot(r).await },
        )
        .await
    }

    /// One `InstallSnapshotStream`.
    async fn stream_snapshot(
        &mut self,
        vote: Vote,
        snapshot: &Snapshot,
        timeout: Duration,
    ) -> Streamed {
        let (tx, rx) = mpsc::channel::<SnapshotChunk>(1);
        let mut request = tonic::Request::new(ReceiverStream::new(rx));
        self.stamp_cluster_id(&mut request);
        self.count_dropped_call_at(tokio::time::Instant::now());
        let mut client = match self.client() {
            Ok(c) => c,
            Err(e) => return Streamed::Done(Err(e)),
        };
        let parts = chunks(
            vote,
            snapshot.meta.clone(),
            &snapshot.snapshot,
            self.snapshot_chunk_bytes,
        );
        self.call_unfinished = true;
        let call = client.install_snapshot_stream(request);
        tokio::pin!(call);
        // Err: a chunk waited longer than `timeout`. Ok: every chunk sent,
        // or the call ended early (its answer says why). Ends by dropping
        // `tx`, which ends the request stream.
        let feed = async move {
            for part in parts {
                match tokio::time::timeout(timeout, tx.send(part)).await {
                    Err(_) => return Err(()),
                    Ok(Err(_)) => return Ok(()),
                    Ok(Ok(())) => {}
                }
            }
            Ok(())
        };
        let answer = tokio::select! {
            answer = &mut call => Some(answer),
            fed = feed => match fed {
                Err(()) => None,
                Ok(()) => tokio::time::timeout(timeout, &mut call).await.ok(),
            },
        };
        self.call_unfinished = false;
        let reply = match answer {
            None => {
                self.timed_out();
                return Streamed::Done(Err(unreachable(format!(
                    "peer {}: snapshot chunk or answer timed out after {} ms",
                    self.target,
                    timeout.as_millis()
                ))));
            }
            Some(Err(status)) if status.code() == tonic::Code::Unimplemented => {
                return Streamed::Unimplemented
            }
            Some(Err(status)) => return Streamed::Done(Err(self.failed(&status))),
            Some(Ok(r)) => {
                self.answered(r.metadata());
                r.into_inner()
            }
        };
        Streamed::Done(decode_reply(&reply.data))
    }
}

fn decode_reply(data: &[u8]) -> Result<SnapshotResponse<TypeConfig>, RPCError<TypeConfig>> {
    let decoded: Result<SnapshotResponse<TypeConfig>, String> =
        postcard::from_bytes(data).map_err(|e| super::network(e.to_string()))?;
    decoded.map_err(super::network)
}
