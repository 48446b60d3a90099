//! The receiving end of `Admin/SaveSnapshotStream` (admin.proto): the
//! bounds a snapshot stream must keep, and the checks that put its messages
//! back together into one snapshot or refuse it with a
//! [`SnapshotStreamError`] naming the field and the limit.
//!
//! # On the wire
//!
//! ```text
//! message 1      head = SaveSnapshotHead {cluster id, applied index, term,
//!                       leader node id, node id, data_bytes}, no data
//! message 2..n   data = the next bytes (at most MAX_SNAPSHOT_CHUNK_BYTES)
//! message n      done = true
//! ```
//!
//! # What is checked
//!
//! - The first message carries `head`, no later one does.
//! - `head.data_bytes` is at most [`MAX_SNAPSHOT_BYTES`] (4 GiB), checked
//!   before any data is kept; a declared length is only a claim, so at most
//!   64 MiB is reserved up front and the buffer grows with what arrives.
//! - Each message's `data` is at most [`MAX_SNAPSHOT_CHUNK_BYTES`] (1 MiB);
//!   the whole message at most [`MAX_SNAPSHOT_CHUNK_MESSAGE_BYTES`], which
//!   tonic enforces before it buffers the message.
//! - The bytes never exceed `data_bytes`, and `done` comes exactly when
//!   they reach it; a stream that ends without `done` was cut off (the
//!   leader stopped, a proxy closed it) and is refused, never returned
//!   short. Nothing may follow `done`.
//!
//! The same rules as the peer service's snapshot transfer (the server's
//! `raft::snapshot_chunks`), on the public API's own messages.

use warden_proto::v1;

/// Largest snapshot [`Admin::save_snapshot`](crate::Admin::save_snapshot)
/// accepts from `SaveSnapshotStream`: 4 GiB, the bound of the server's own
/// snapshot transfers between peers. The client holds the whole snapshot in
/// memory, so this is the most one save may ask of the caller.
pub const MAX_SNAPSHOT_BYTES: u64 = 4 * 1024 * 1024 * 1024;

/// Largest snapshot accepted from an older node's one-message
/// `SaveSnapshot` (the fallback when it does not serve
/// `SaveSnapshotStream`): 256 MiB, the bound this client always had there.
pub const MAX_UNARY_SNAPSHOT_BYTES: usize = 256 * 1024 * 1024;

/// Most snapshot bytes in one `SaveSnapshotStream` message: 1 MiB.
pub const MAX_SNAPSHOT_CHUNK_BYTES: usize = 1024 * 1024;

/// Largest `SaveSnapshotStream` message decoded: 1 MiB of data + 64 KiB for
/// the head and protobuf framing.
pub const MAX_SNAPSHOT_CHUNK_MESSAGE_BYTES: usize = MAX_SNAPSHOT_CHUNK_BYTES + 64 * 1024;

/// What is reserved before the data comes, at most: 64 MiB.
const MAX_UP_FRONT_BYTES: u64 = 64 * 1024 * 1024;

/// Why a `SaveSnapshotStream` answer was refused (in
/// [`ClientError::SnapshotStream`](crate::ClientError::SnapshotStream)).
/// Nothing of a refused stream is returned.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SnapshotStreamError {
    /// The stream ended before its first message.
    #[error("ended before its first message")]
    Empty,
    /// The first message has no `head`.
    #[error("the first message has no head")]
    NoHead,
    /// A later message carries `head` again.
    #[error("message {message} carries a head; only the first may")]
    HeadRepeated {
        /// The message (1 is the first).
        message: u64,
    },
    /// `head.data_bytes` is above [`MAX_SNAPSHOT_BYTES`].
    #[error("head.data_bytes is {declared}, the limit is {limit} bytes (MAX_SNAPSHOT_BYTES)")]
    TooLarge {
        /// What the head declared.
        declared: u64,
        /// [`MAX_SNAPSHOT_BYTES`].
        limit: u64,
    },
    /// A message's `data` is above [`MAX_SNAPSHOT_CHUNK_BYTES`].
    #[error(
        "message {message} carries {bytes} bytes of data, the limit is {limit} bytes \
         (MAX_SNAPSHOT_CHUNK_BYTES)"
    )]
    ChunkTooLarge {
        /// The message (1 is the first).
        message: u64,
        /// Its data's length.
        bytes: usize,
        /// [`MAX_SNAPSHOT_CHUNK_BYTES`].
        limit: usize,
    },
    /// More bytes came than `head.data_bytes`.
    #[error("more than the {declared} bytes head.data_bytes declared")]
    Overrun {
        /// What the head declared.
        declared: u64,
    },
    /// `done` came before every declared byte.
    #[error("done after {received} of the {declared} bytes head.data_bytes declared")]
    Short {
        /// Bytes received.
        received: u64,
        /// What the head declared.
        declared: u64,
    },
    /// The stream ended without a message marked `done`.
    #[error(
        "ended after {received} of {declared} bytes without its last message (done); \
         the snapshot was cut off"
    )]
    Unfinished {
        /// Bytes received.
        received: u64,
        /// What the head declared.
        declared: u64,
    },
    /// A message came after the one marked `done`.
    #[error("a message after the last one (done)")]
    AfterDone,
    /// The stream failed after it started (the connection broke, the
    /// server ended it with an error).
    #[error("failed after {received} of {declared} bytes: {reason}")]
    Broken {
        /// Bytes received.
        received: u64,
        /// What the head declared.
        declared: u64,
        /// The gRPC status, described.
        reason: String,
    },
    /// No message came within the per-message timeout.
    #[error("no message within {timeout_ms} ms after {received} of {declared} bytes")]
    Stalled {
        /// Bytes received.
        received: u64,
        /// What the head declared.
        declared: u64,
        /// [`SNAPSHOT_MESSAGE_TIMEOUT`](crate::SNAPSHOT_MESSAGE_TIMEOUT), in ms.
        timeout_ms: u64,
    },
}

/// A snapshot being received (see the module docs for what is checked).
#[derive(Debug)]
pub(crate) struct Assembly {
    head: v1::SaveSnapshotHead,
    data: Vec<u8>,
    messages: u64,
    done: bool,
}

impl Assembly {
    /// Starts from the stream's first message (None: the stream was empty).
    ///
    /// # Errors
    /// [`SnapshotStreamError`]: no message, no head, a declared length
    /// above [`MAX_SNAPSHOT_BYTES`], or the first message's data refused as
    /// by [`Assembly::push`].
    pub(crate) fn start(
        first: Option<v1::SaveSnapshotChunk>,
    ) -> Result<Assembly, SnapshotStreamError> {
        let mut first = first.ok_or(SnapshotStreamError::Empty)?;
        let head = first.head.take().ok_or(SnapshotStreamError::NoHead)?;
        if head.data_bytes > MAX_SNAPSHOT_BYTES {
            return Err(SnapshotStreamError::TooLarge {
                declared: head.data_bytes,
                limit: MAX_SNAPSHOT_BYTES,
            });
        }
        let reserve = head.data_bytes.min(MAX_UP_FRONT_BYTES) as usize;
        let mut assembly = Assembly {
            head,
            data: Vec::with_capacity(reserve),
            messages: 0,
            done: false,
        };
        assembly.push(first)?;
        Ok(assembly)
    }

    /// Takes the next message.
    ///
    /// # Errors
    /// [`SnapshotStreamError`]: a head again, too much data in the message
    /// or in all, `done` short of the declared length, or a message after
    /// `done`.
    pub(crate) fn push(&mut self, chunk: v1::SaveSnapshotChunk) -> Result<(), SnapshotStreamError> {
        if self.done {
            return Err(SnapshotStreamError::AfterDone);
        }
        self.messages += 1;
        if chunk.head.is_some() {
            return Err(SnapshotStreamError::HeadRepeated {
                message: self.messages,
            });
        }
        if chunk.data.len() > MAX_SNAPSHOT_CHUNK_BYTES {
            return Err(SnapshotStreamError::ChunkTooLarge {
                message: self.messages,
                bytes: chunk.data.len(),
                limit: MAX_SNAPSHOT_CHUNK_BYTES,
            });
        }
        let declared = self.head.data_bytes;
        let received = self.received() + chunk.data.len() as u64;
        if received > declared {
            return Err(SnapshotStreamError::Overrun { declared });
        }
        if chunk.done && received < declared {
            return Err(SnapshotStreamError::Short { received, declared });
        }
        self.data.extend_from_slice(&chunk.data);
        self.done = chunk.done;
        debug_assert!(self.received() <= declared);
        Ok(())
    }

    /// Bytes received so far.
    pub(crate) fn received(&self) -> u64 {
        self.data.len() as u64
    }

    /// What the head declared.
    pub(crate) fn declared(&self) -> u64 {
        self.head.data_bytes
    }

    /// The head and the whole snapshot, once the stream ended.
    ///
    /// # Errors
    /// [`SnapshotStreamError::Unfinished`] when no message was marked `done`.
    pub(crate) fn finish(self) -> Result<(v1::SaveSnapshotHead, Vec<u8>), SnapshotStreamError> {
        if !self.done {
            return Err(SnapshotStreamError::Unfinished {
                received: self.received(),
                declared: self.head.data_bytes,
            });
        }
        debug_assert_eq!(self.received(), self.head.data_bytes);
        Ok((self.head, self.data))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head(data_bytes: u64) -> v1::SaveSnapshotHead {
        v1::SaveSnapshotHead {
            cluster_id: "c1".into(),
            applied_index: 40,
            term: 3,
            leader_node_id: 2,
            node_id: 2,
            data_bytes,
        }
    }

    /// `data` as a stream: the head, then pieces of `chunk` bytes.
    fn stream(data: &[u8], chunk: usize) -> Vec<v1::SaveSnapshotChunk> {
        let mut out = vec![v1::SaveSnapshotChunk {
            head: Some(head(data.len() as u64)),
            data: vec![],
            done: false,
        }];
        let pieces: Vec<&[u8]> = data.chunks(chunk).collect();
        let count = pieces.len().max(1);
        for i in 0..count {
            out.push(v1::SaveSnapshotChunk {
                head: None,
                data: pieces.get(i).map(|p| p.to_vec()).unwrap_or_default(),
                done: i + 1 == count,
            });
        }
        out
    }

    fn assemble(
        messages: Vec<v1::SaveSnapshotChunk>,
    ) -> Result<(v1::SaveSnapshotHead, Vec<u8>), SnapshotStreamError> {
        let mut it = messages.into_iter();
        let mut a = Assembly::start(it.next())?;
        for m in it {
            a.push(m)?;
        }
        a.finish()
    }

    // A whole stream comes back byte for byte with its head; a snapshot of
    // no bytes is a head and one empty message marked done.
    #[test]
    fn a_whole_stream_assembles() {
        let data: Vec<u8> = (0..3584u32).map(|i| (i % 251) as u8).collect();
        let (h, back) = assemble(stream(&data, 1024)).expect("assembles");
        assert_eq!(back, data);
        assert_eq!(h, head(3584));
        let (h, back) = assemble(stream(&[], 1024)).expect("empty");
        assert_eq!((h.data_bytes, back), (0, vec![]));
    }

    // Bad input from the network is a typed refusal naming the field and
    // the limit, never a panic or a short snapshot: a declared length above
    // MAX_SNAPSHOT_BYTES, an oversized message, a stream cut before `done`,
    // `done` short of the declared length, extra bytes, a second head, a
    // message after `done`, no head, no message.
    #[test]
    fn bad_streams_are_refused() {
        let data = vec![7u8; 3000];
        let good = || stream(&data, 1024);

        let mut huge = good();
        huge[0].head = Some(head(MAX_SNAPSHOT_BYTES + 1));
        let e = assemble(huge).expect_err("declared too much");
        assert_eq!(
            e,
            SnapshotStreamError::TooLarge {
                declared: MAX_SNAPSHOT_BYTES + 1,
                limit: MAX_SNAPSHOT_BYTES
            }
        );
        assert!(
            e.to_string().contains("head.data_bytes")
                && e.to_string().contains("the limit is 4294967296 bytes"),
            "{e}"
        );

        let mut big = good();
        big[1].data = vec![0; MAX_SNAPSHOT_CHUNK_BYTES + 1];
        let e = assemble(big).expect_err("oversized message");
        assert_eq!(
            e,
            SnapshotStreamError::ChunkTooLarge {
                message: 2,
                bytes: MAX_SNAPSHOT_CHUNK_BYTES + 1,
                limit: MAX_SNAPSHOT_CHUNK_BYTES
            }
        );
        assert!(e.to_string().contains("the limit is 1048576 bytes"), "{e}");

        let mut cut = good();
        cut.pop();
        assert_eq!(
            assemble(cut),
            Err(SnapshotStreamError::Unfinished {
                received: 2048,
                declared: 3000
            })
        );

        let mut short = good();
        short[2].done = true;
        short.truncate(3);
        assert_eq!(
            assemble(short),
            Err(SnapshotStreamError::Short {
                received: 2048,
                declared: 3000
            })
        );

        let mut extra = good();
        extra[3].data.push(1);
        assert_eq!(
            assemble(extra),
            Err(SnapshotStreamError::Overrun { declared: 3000 })
        );

        let mut twice = good();
        twice[2].head = Some(head(3000));
        assert_eq!(
            assemble(twice),
            Err(SnapshotStreamError::HeadRepeated { message: 3 })
        );

        let mut after = good();
        after.push(v1::SaveSnapshotChunk::default());
        assert_eq!(assemble(after), Err(SnapshotStreamError::AfterDone));

        let mut headless = good();
        headless[0].head = None;
        assert_eq!(assemble(headless), Err(SnapshotStreamError::NoHead));
        assert_eq!(assemble(vec![]), Err(SnapshotStreamError::Empty));
    }
}
