//! A snapshot cut into chunks for the peer service's streaming calls
//! (`InstallSnapshotStream`, `TakeSnapshotStream`), and put back together.
//!
//! # On the wire (`InstallSnapshotStream`)
//!
//! ```text
//! chunk 1      head = postcard SnapshotHead {vote, meta, data_bytes}
//!              data = the first bytes (at most MAX_SNAPSHOT_CHUNK_BYTES)
//! chunk 2..n   head = empty, data = the next bytes (at most 1 MiB each)
//! chunk n      done = true
//! ```
//!
//! A snapshot of no bytes is one chunk with `head`, no `data` and `done`.
//!
//! **The last chunk is marked, and end of stream is not "done".** A sender
//! that stops (openraft cancels the replication, the leader steps down)
//! drops its end of the request stream, which tonic may close as a clean
//! end of stream; without the mark the receiver could not tell a cut-off
//! snapshot from a whole one. The receiver also checks that the bytes add
//! up to `data_bytes`, so a bug on either side is a refusal, never a
//! truncated table installed.
//!
//! # Bounds (receiver)
//!
//! - Each chunk message: at most [`MAX_SNAPSHOT_CHUNK_MESSAGE_BYTES`]
//!   (1 MiB of data + [`MAX_SNAPSHOT_HEAD_BYTES`] for the head and framing),
//!   enforced by tonic before it buffers the message (`OutOfRange`); a chunk
//!   inside that bound whose data exceeds [`MAX_SNAPSHOT_CHUNK_BYTES`] is
//!   refused here ([`ChunkError::ChunkTooLarge`]).
//! - The whole snapshot: at most [`MAX_SNAPSHOT_BYTES`] (4 GiB), checked
//!   against the head's declared length before any data is kept, and
//!   against the bytes received. The receiver holds the whole snapshot in
//!   memory (openraft's `install_full_snapshot` takes one `Vec<u8>`, as the
//!   state machine's in-memory `Snapshot` does), so this is the most memory
//!   one transfer may ask of a node: 16 times the old one-message bound
//!   (256 MiB).

use serde::{Deserialize, Serialize};
use warden_proto::peer::SnapshotChunk;

use crate::types::{SnapshotMeta, Vote};

/// Most snapshot bytes in one chunk: 1 MiB, one HTTP/2 stream window of a
/// peer port of its own (`--peer-listen`), so the receiver buffers at most
/// about one window per message on top of the snapshot it assembles.
pub const MAX_SNAPSHOT_CHUNK_BYTES: usize = 1024 * 1024;

/// Most bytes of a chunk's head and protobuf framing: 64 KiB (the peer
/// service's bound for control messages; a head is a vote and a snapshot
/// meta, whose membership names each member's addresses).
pub const MAX_SNAPSHOT_HEAD_BYTES: usize = 64 * 1024;

/// Largest chunk message the peer service decodes:
/// [`MAX_SNAPSHOT_CHUNK_BYTES`] + [`MAX_SNAPSHOT_HEAD_BYTES`].
pub const MAX_SNAPSHOT_CHUNK_MESSAGE_BYTES: usize =
    MAX_SNAPSHOT_CHUNK_BYTES + MAX_SNAPSHOT_HEAD_BYTES;

/// Largest snapshot one transfer may carry: 4 GiB (module docs).
pub const MAX_SNAPSHOT_BYTES: u64 = 4 * 1024 * 1024 * 1024;

/// The first chunk's head.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SnapshotHead {
    /// The sender's vote.
    pub vote: Vote,
    /// Snapshot meta.
    pub meta: SnapshotMeta,
    /// Length of the snapshot's bytes, all chunks together.
    pub data_bytes: u64,
}

/// Why a chunked snapshot was refused (each becomes a
/// [`crate::raft::peer_access::PeerRefusal`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ChunkError {
    /// The stream ended before its first chunk.
    #[error("snapshot stream: ended before its first chunk")]
    Empty,
    /// The first chunk has no head.
    #[error("snapshot stream: the first chunk has no head")]
    NoHead,
    /// The head does not decode.
    #[error("snapshot stream: head does not decode: {0}")]
    BadHead(String),
    /// A later chunk carries a head again.
    #[error("snapshot stream: chunk {chunk} carries a head; only the first may")]
    HeadRepeated {
        /// The chunk (1 is the first).
        chunk: u64,
    },
    /// A chunk carries more data than [`MAX_SNAPSHOT_CHUNK_BYTES`].
    #[error(
        "snapshot stream: chunk {chunk} carries {bytes} bytes of data, the limit is \
         {limit} bytes (MAX_SNAPSHOT_CHUNK_BYTES)"
    )]
    ChunkTooLarge {
        /// The chunk (1 is the first).
        chunk: u64,
        /// Its data's length.
        bytes: usize,
        /// [`MAX_SNAPSHOT_CHUNK_BYTES`].
        limit: usize,
    },
    /// The head declares more than [`MAX_SNAPSHOT_BYTES`].
    #[error(
        "snapshot stream: data_bytes is {declared}, the limit is {limit} bytes \
         (MAX_SNAPSHOT_BYTES)"
    )]
    SnapshotTooLarge {
        /// What the head declared.
        declared: u64,
        /// [`MAX_SNAPSHOT_BYTES`].
        limit: u64,
    },
    /// More bytes came than the head declared.
    #[error("snapshot stream: more than the {declared} bytes the head declared")]
    Overrun {
        /// What the head declared.
        declared: u64,
    },
    /// `done` came before every declared byte.
    #[error("snapshot stream: done after {received} of the {declared} bytes the head declared")]
    Short {
        /// Bytes received.
        received: u64,
        /// What the head declared.
        declared: u64,
    },
    /// The stream ended without a chunk marked `done` (the sender stopped).
    #[error(
        "snapshot stream: ended after {received} of {declared} bytes without its last chunk \
         (the sender stopped); nothing was installed"
    )]
    Unfinished {
        /// Bytes received.
        received: u64,
        /// What the head declared.
        declared: u64,
    },
    /// A chunk came after the one marked `done`.
    #[error("snapshot stream: a chunk after the last one")]
    AfterDone,
}

/// How `len` bytes are cut into pieces of at most `chunk_bytes` (clamped
/// to 1 ..= [`MAX_SNAPSHOT_CHUNK_BYTES`]): each piece's byte range, in
/// order, and whether it is the last. At least one piece: an empty one for
/// `len` 0. Shared by the peer snapshot stream ([`chunks`]) and the Admin
/// backup stream.
pub fn pieces(
    len: usize,
    chunk_bytes: usize,
) -> impl Iterator<Item = (std::ops::Range<usize>, bool)> + Send + 'static {
    let chunk_bytes = chunk_bytes.clamp(1, MAX_SNAPSHOT_CHUNK_BYTES);
    let count = len.div_ceil(chunk_bytes).max(1);
    (0..count).map(move |i| {
        let start = (i * chunk_bytes).min(len);
        let end = (start + chunk_bytes).min(len);
        debug_assert!(end - start <= MAX_SNAPSHOT_CHUNK_BYTES);
        (start..end, i + 1 == count)
    })
}

/// The chunks of one snapshot, in order, each with at most `chunk_bytes`
/// of data (1 ..= [`MAX_SNAPSHOT_CHUNK_BYTES`]; clamped into that range).
pub fn chunks<'a>(
    vote: Vote,
    meta: SnapshotMeta,
    data: &'a [u8],
    chunk_bytes: usize,
) -> impl Iterator<Item = SnapshotChunk> + Send + 'a {
    let head = SnapshotHead {
        vote,
        meta,
        data_bytes: data.len() as u64,
    };
    // postcard cannot fail on this type (ids, strings, maps of them).
    let head = postcard::to_allocvec(&head).unwrap_or_default();
    let mut head = Some(head);
    pieces(data.len(), chunk_bytes).map(move |(range, done)| SnapshotChunk {
        head: head.take().unwrap_or_default(),
        data: data[range].to_vec(),
        done,
    })
}

/// A snapshot being received (see the module docs for what is checked).
#[derive(Debug)]
pub struct Assembly {
    declared: u64,
    data: Vec<u8>,
    chunks: u64,
    done: bool,
}

/// What the receiver reserves before the data comes, at most: 64 MiB (a
/// declared length is only a claim; beyond this the buffer grows with
/// what arrives).
const MAX_UP_FRONT_BYTES: u64 = 64 * 1024 * 1024;

impl Assembly {
    /// The head of the stream's first chunk (None: the stream was empty),
    /// and that chunk with its head taken out, for [`Assembly::push`]. The
    /// head names the sender, to be checked before any data is kept.
    ///
    /// # Errors
    /// [`ChunkError`]: no chunk, no head, or a head that does not decode.
    pub fn head(first: Option<SnapshotChunk>) -> Result<(SnapshotHead, SnapshotChunk), ChunkError> {
        let mut first = first.ok_or(ChunkError::Empty)?;
        if first.head.is_empty() {
            return Err(ChunkError::NoHead);
        }
        let head: SnapshotHead = postcard::from_bytes(&std::mem::take(&mut first.head))
            .map_err(|e| ChunkError::BadHead(e.to_string()))?;
        Ok((head, first))
    }

    /// An empty assembly of the snapshot `head` declares.
    ///
    /// # Errors
    /// [`ChunkError::SnapshotTooLarge`] above [`MAX_SNAPSHOT_BYTES`].
    pub fn new(head: &SnapshotHead) -> Result<Assembly, ChunkError> {
        if head.data_bytes > MAX_SNAPSHOT_BYTES {
            return Err(ChunkError::SnapshotTooLarge {
                declared: head.data_bytes,
                limit: MAX_SNAPSHOT_BYTES,
            });
        }
        Ok(Assembly {
            declared: head.data_bytes,
            data: Vec::with_capacity(head.data_bytes.min(MAX_UP_FRONT_BYTES) as usize),
            chunks: 0,
            done: false,
        })
    }

    /// Takes the next chunk.
    ///
    /// # Errors
    /// [`ChunkError`]: a head again, too much data in the chunk or in all,
    /// `done` short of the declared length, or a chunk after `done`.
    pub fn push(&mut self, chunk: SnapshotChunk) -> Result<(), ChunkError> {
        if self.done {
            return Err(ChunkError::AfterDone);
        }
        if !chunk.head.is_empty() {
            return Err(ChunkError::HeadRepeated {
                chunk: self.chunks + 1,
            });
        }
        self.chunks += 1;
        let (data, done) = (chunk.data, chunk.done);
        if data.len() > MAX_SNAPSHOT_CHUNK_BYTES {
            return Err(ChunkError::ChunkTooLarge {
                chunk: self.chunks,
                bytes: data.len(),
                limit: MAX_SNAPSHOT_CHUNK_BYTES,
            });
        }
        let received = self.data.len() as u64 + data.len() as u64;
        if received > self.declared {
            return Err(ChunkError::Overrun {
                declared: self.declared,
            });
        }
        if done && received < self.declared {
            return Err(ChunkError::Short {
                received,
                declared: self.declared,
            });
        }
        self.data.extend_from_slice(&data);
        self.done = done;
        debug_assert!(self.data.len() as u64 <= self.declared);
        Ok(())
    }

    /// Whether the chunk marked `done` has come.
    pub fn is_done(&self) -> bool {
        self.done
    }

    /// The whole snapshot, once the stream ended.
    ///
    /// # Errors
    /// [`ChunkError::Unfinished`] when no chunk was marked `done`.
    pub fn finish(self) -> Result<Vec<u8>, ChunkError> {
        if !self.done {
            return Err(ChunkError::Unfinished {
                received: self.data.len() as u64,
                declared: self.declared,
            });
        }
        debug_assert_eq!(self.data.len() as u64, self.declared);
        Ok(self.data)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta() -> SnapshotMeta {
        SnapshotMeta {
            last_log_id: Some(crate::types::LogId::new(
                openraft::vote::leader_id_adv::LeaderId {
                    term: 3,
                    node_id: 1,
                },
                42,
            )),
            last_membership: Default::default(),
        }
    }

    fn assemble(chunks: Vec<SnapshotChunk>) -> Result<(SnapshotHead, Vec<u8>), ChunkError> {
        let mut it = chunks.into_iter();
        let (head, first) = Assembly::head(it.next())?;
        let mut a = Assembly::new(&head)?;
        a.push(first)?;
        for c in it {
            a.push(c)?;
        }
        Ok((head, a.finish()?))
    }

    // The wire format round-trips: a snapshot of 3.5 chunks travels as 4,
    // the head only on the first, `done` only on the last, and comes back
    // byte for byte; a snapshot of no bytes is one chunk.
    #[test]
    fn chunks_round_trip() {
        let data: Vec<u8> = (0..3584u32).map(|i| (i % 251) as u8).collect();
        let vote = Vote::new_committed(3, 1);
        let sent: Vec<_> = chunks(vote, meta(), &data, 1024).collect();
        assert_eq!(sent.len(), 4);
        assert!(!sent[0].head.is_empty());
        assert!(sent[1..].iter().all(|c| c.head.is_empty()));
        assert_eq!(
            sent.iter().map(|c| c.done).collect::<Vec<_>>(),
            vec![false, false, false, true]
        );
        assert_eq!(sent[3].data.len(), 512);
        let (head, back) = assemble(sent).expect("assembles");
        assert_eq!(back, data);
        assert_eq!(head.vote, vote);
        assert_eq!(head.data_bytes, 3584);
        assert_eq!(head.meta, meta());

        let empty: Vec<_> = chunks(vote, meta(), &[], 1024).collect();
        assert_eq!(empty.len(), 1);
        assert!(empty[0].done);
        assert_eq!(assemble(empty).expect("empty").1, Vec::<u8>::new());
    }

    // Bad input from a peer is a typed refusal naming the limit, never a
    // panic or a truncated snapshot: an oversized chunk, a declared length
    // above MAX_SNAPSHOT_BYTES, a stream cut before `done` (a sender that
    // stopped), `done` short of the declared length, extra bytes, a second
    // head, a chunk after `done`, no head.
    #[test]
    fn bad_streams_are_refused() {
        let data = vec![7u8; 3000];
        let vote = Vote::new_committed(3, 1);
        let good = || chunks(vote, meta(), &data, 1024).collect::<Vec<_>>();

        let mut big = good();
        big[1].data = vec![0; MAX_SNAPSHOT_CHUNK_BYTES + 1];
        let e = assemble(big).expect_err("oversized chunk");
        assert_eq!(
            e,
            ChunkError::ChunkTooLarge {
                chunk: 2,
                bytes: MAX_SNAPSHOT_CHUNK_BYTES + 1,
                limit: MAX_SNAPSHOT_CHUNK_BYTES
            }
        );
        assert!(e.to_string().contains("the limit is 1048576 bytes"), "{e}");

        let mut huge = good();
        huge[0].head = postcard::to_allocvec(&SnapshotHead {
            vote,
            meta: meta(),
            data_bytes: MAX_SNAPSHOT_BYTES + 1,
        })
        .expect("encode");
        let e = assemble(huge).expect_err("declared too much");
        assert!(
            e.to_string().contains("the limit is 4294967296 bytes"),
            "{e}"
        );

        let mut cut = good();
        cut.pop();
        assert_eq!(
            assemble(cut),
            Err(ChunkError::Unfinished {
                received: 2048,
                declared: 3000
            })
        );

        let mut short = good();
        short[1].done = true;
        short.truncate(2);
        assert_eq!(
            assemble(short),
            Err(ChunkError::Short {
                received: 2048,
                declared: 3000
            })
        );

        let mut extra = good();
        extra[2].data.push(1);
        assert_eq!(assemble(extra), Err(ChunkError::Overrun { declared: 3000 }));

        let mut twice = good();
        twice[1].head = twice[0].head.clone();
        assert_eq!(assemble(twice), Err(ChunkError::HeadRepeated { chunk: 2 }));

        let mut after = good();
        after.push(SnapshotChunk::default());
        assert_eq!(assemble(after), Err(ChunkError::AfterDone));

        let mut headless = good();
        headless[0].head.clear();
        assert_eq!(assemble(headless), Err(ChunkError::NoHead));
        assert_eq!(assemble(vec![]), Err(ChunkError::Empty));
        let mut garbage = good();
        garbage[0].head = vec![0xff; 4];
        assert!(matches!(assemble(garbage), Err(ChunkError::BadHead(_))));
    }
}
