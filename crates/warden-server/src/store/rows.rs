//! The log row codec: one row per log entry, the entry's append stamp (the
//! node clock's epoch and the time the entry reached this log) before the
//! postcard-encoded entry.

use std::io;
use std::time::Duration;

use super::{decode, io_err};
use crate::types::Entry;

pub(super) fn encode_stamp(epoch: u64, stamp: Duration) -> [u8; 16] {
    let ns = u64::try_from(stamp.as_nanos()).unwrap_or(u64::MAX);
    let mut b = [0u8; 16];
    b[..8].copy_from_slice(&epoch.to_be_bytes());
    b[8..].copy_from_slice(&ns.to_be_bytes());
    b
}

pub(super) fn decode_stamp(b: &[u8]) -> Option<(u64, u64)> {
    let epoch = u64::from_be_bytes(b.get(..8)?.try_into().ok()?);
    let ns = u64::from_be_bytes(b.get(8..16)?.try_into().ok()?);
    Some((epoch, ns))
}

/// A log row: one tag byte (0: no stamp; 1: a 16-byte stamp follows, see
/// [`encode_stamp`]), then the postcard-encoded entry.
pub(super) fn encode_row(stamp: Option<&[u8; 16]>, entry: &Entry) -> Result<Vec<u8>, io::Error> {
    postcard::to_extend(entry, row_head(stamp, 64)).map_err(io_err)
}

/// The start of a log row, before the entry: the tag byte and the stamp.
pub(super) fn row_head(stamp: Option<&[u8; 16]>, entry_len: usize) -> Vec<u8> {
    let mut row = Vec::with_capacity(17 + entry_len);
    match stamp {
        Some(p) => {
            row.push(1);
            row.extend_from_slice(p);
        }
        None => row.push(0),
    }
    row
}

/// A persisted append stamp: the clock's epoch and the stamp in ns.
pub(super) type PersistedStamp = (u64, u64);

/// Splits a log row into its stamp, if any, and the encoded entry.
pub(super) fn decode_row(row: &[u8]) -> Result<(Option<PersistedStamp>, &[u8]), io::Error> {
    let bad = || io::Error::new(io::ErrorKind::InvalidData, "log row: bad stamp tag");
    match row.split_first() {
        Some((0, rest)) => Ok((None, rest)),
        Some((1, rest)) if rest.len() >= 16 => Ok((decode_stamp(rest), &rest[16..])),
        _ => Err(bad()),
    }
}

/// Decodes the entry of a log row.
pub(super) fn decode_row_entry(row: &[u8]) -> Result<Entry, io::Error> {
    decode(decode_row(row)?.1)
}
