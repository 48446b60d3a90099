//! The log row codec: one row per log entry, the postcard-encoded entry
//! (its stamp is inside: [`warden_core::types::Stamp`], docs/semantics.md
//! "Time").

use std::io;

use super::{decode, io_err};
use crate::types::Entry;

/// A log row: the postcard-encoded entry.
pub(super) fn encode_row(entry: &Entry) -> Result<Vec<u8>, io::Error> {
    postcard::to_allocvec(entry).map_err(io_err)
}

/// Decodes the entry of a log row.
pub(super) fn decode_row_entry(row: &[u8]) -> Result<Entry, io::Error> {
    decode(row)
}
