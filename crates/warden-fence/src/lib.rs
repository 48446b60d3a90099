//! `warden-fence`: the check the *protected resource* runs on every write
//! (docs/semantics.md S2 and "The fencing story"). A lease only bounds how long a
//! holder *believes* it holds a lock; a holder that pauses past its TTL wakes
//! up believing it still does. The resource closes that window by keeping the
//! highest fencing token it has accepted per resource and refusing a lower
//! one. An equal token is the same grant continuing (S2 makes tokens unique
//! per grant), so it is accepted.
//!
//! Counting semaphores and read-write locks have rules of their own
//! (docs/fencing.md "Semaphore permits and read-write locks"): a permit is
//! fenced per (resource, slot), so permits in different slots never fence
//! each other; a shared grant is fenced only by the highest *exclusive*
//! token, so readers never fence each other, while an exclusive grant (and a
//! mutex's) is fenced by the highest token of any kind. A plain token is
//! the mutex rule, as before.
//!
//! # Modules
//!
//! - `fence.rs`: [`Fence`] (`check`, `check_claim`, `check_permit`,
//!   `check_shared`), the [`FenceStore`] trait, the one comparison of each
//!   rule ([`decide`] for exclusive tokens, [`decide_shared`],
//!   [`decide_permit`]) and [`decide_claim`], which picks the rule and says
//!   what to record ([`Highs`]); [`Claim`] and [`Kind`], a token with its
//!   grant's kind; [`Accepted`] and [`FenceError`] (`Stale { resource,
//!   presented, highest }`, and `StaleAt` naming the [`Bound`] that refused
//!   it: a slot, or the highest exclusive token).
//! - `memory.rs`: [`MemoryStore`], for tests and for resources whose state is
//!   itself in memory.
//! - `redb_store.rs`: [`RedbStore`], a durable file store; the check and the
//!   record are one fsync'd redb transaction, and
//!   [`RedbStore::check_and_write`] / [`RedbStore::check_claim_and_write`]
//!   put your own writes in that same transaction. Files written before
//!   permits and shared grants existed open with their highs kept.
//! - `wire.rs`: the wire convention, headers / gRPC metadata
//!   [`RESOURCE_HEADER`] (`warden-resource`), [`TOKEN_HEADER`]
//!   (`warden-fencing-token`), [`SLOT_HEADER`] (`warden-slot`) and
//!   [`MODE_HEADER`] (`warden-lock-mode`), and helpers to attach them to a
//!   tonic request or an HTTP header map and to read them back
//!   ([`FencingHeaders`] for a plain token, [`ClaimHeaders`] for any kind,
//!   [`HeaderError`]).
//! - `http.rs` ([`http`]): axum glue. [`ClaimHeaders`] and [`FencingHeaders`]
//!   are extractors (400 when a header is missing or malformed),
//!   [`FenceError`] is a response (409 Conflict with a JSON body),
//!   [`http::enforce`] is a middleware that fences every request it wraps by
//!   the rule its headers ask for, and [`http::client`] is a minimal HTTP/1.1
//!   client for demos and tests.
//!
//! # Example
//!
//! ```
//! use warden_fence::{Bound, Fence, FenceError, MemoryStore};
//!
//! let fence = Fence::new(MemoryStore::default());
//! fence.check("orders", 7).unwrap(); // first write of grant 7
//! fence.check("orders", 7).unwrap(); // the same grant continuing
//! fence.check("orders", 9).unwrap(); // a newer grant takes over
//! match fence.check("orders", 7) {   // the paused holder wakes up
//!     Err(FenceError::Stale { presented: 7, highest: 9, .. }) => {}
//!     other => panic!("{other:?}"),
//! }
//!
//! // A semaphore: permits in slots 0 and 1 do not fence each other...
//! fence.check_permit("pool", 1, 21).unwrap();
//! fence.check_permit("pool", 0, 20).unwrap();
//! // ...but a newer permit in slot 1 fences the older holder of slot 1.
//! fence.check_permit("pool", 1, 22).unwrap();
//! match fence.check_permit("pool", 1, 21) {
//!     Err(FenceError::StaleAt { bound: Bound::Slot(1), highest: 22, .. }) => {}
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

pub use fence::{
    decide, decide_claim, decide_permit, decide_shared, Accepted, Bound, Claim, Fence, FenceError,
    FenceStore, Highs, Kind,
};
pub use memory::MemoryStore;
pub use redb_store::RedbStore;
pub use wire::{
    attach, attach_claim, from_http, from_http_claim, from_metadata, from_metadata_claim,
    insert_http, insert_http_claim, ClaimHeaders, FencingHeaders, HeaderError, MAX_TOKEN,
    MODE_HEADER, RESOURCE_HEADER, SLOT_HEADER, TOKEN_HEADER,
};
