//! `warden-fence`: the check the *protected resource* runs on every write
//! (docs/semantics.md S2 and "The fencing story"). A lease only bounds how long a
//! holder *believes* it holds a lock; a holder that pauses past its TTL wakes
//! up believing it still does. The resource closes that window by keeping the
//! highest fencing token it has accepted per resource and refusing a lower
//! one. An equal token is the same grant continuing (S2 makes tokens unique
//! per grant), so it is accepted.
//!
//! # Modules
//!
//! - `fence.rs`: [`Fence`], the [`FenceStore`] trait, [`decide`] (the one
//!   comparison every store uses), [`Accepted`] and [`FenceError`]
//!   (`Stale { resource, presented, highest }`).
//! - `memory.rs`: [`MemoryStore`], for tests and for resources whose state is
//!   itself in memory.
//! - `redb_store.rs`: [`RedbStore`], a durable file store; the check and the
//!   record are one fsync'd redb transaction, and
//!   [`RedbStore::check_and_write`] puts your own writes in that same
//!   transaction.
//! - `wire.rs`: the wire convention, headers / gRPC metadata
//!   [`RESOURCE_HEADER`] (`warden-resource`) and [`TOKEN_HEADER`]
//!   (`warden-fencing-token`), and helpers to attach them to a tonic request
//!   or an HTTP header map and to read them back ([`FencingHeaders`],
//!   [`HeaderError`]).
//! - `http.rs` ([`http`]): axum glue. [`FencingHeaders`] is an extractor
//!   (400 when a header is missing or malformed), [`FenceError`] is a
//!   response (409 Conflict with a JSON body), [`http::enforce`] is a
//!   middleware that fences every request it wraps, and [`http::client`] is a
//!   minimal HTTP/1.1 client for demos and tests.
//!
//! # Example
//!
//! ```
//! use warden_fence::{Fence, FenceError, MemoryStore};
//!
//! let fence = Fence::new(MemoryStore::default());
//! fence.check("orders", 7).unwrap(); // first write of grant 7
//! fence.check("orders", 7).unwrap(); // the same grant continuing
//! fence.check("orders", 9).unwrap(); // a newer grant takes over
//! match fence.check("orders", 7) {   // the paused holder wakes up
//!     Err(FenceError::Stale { presented: 7, highest: 9, .. }) => {}
//!     other => panic!("{other:?}"),
//! }
//! ```
//!
//! For SQL databases and object stores, see `docs/fencing.md`: the same
//! comparison is a conditional `UPDATE ... WHERE token <= $new` in the
//! transaction of the write.

#![warn(missing_docs)]

mod fence;
pub mod http;
mod memory;
mod redb_store;
mod wire;

pub use fence::{decide, Accepted, Fence, FenceError, FenceStore};
pub use memory::MemoryStore;
pub use redb_store::RedbStore;
pub use wire::{
    attach, from_http, from_metadata, insert_http, FencingHeaders, HeaderError, MAX_TOKEN,
    RESOURCE_HEADER, TOKEN_HEADER,
};
