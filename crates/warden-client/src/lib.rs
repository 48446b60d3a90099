//! Warden's async client: talks to a Warden cluster over gRPC, follows the
//! leader, retries within a deadline, and makes every mutating request
//! exactly-once with request ids.
//!
//! # Layout
//!
//! - [`Client`] (`client.rs`): the calls ([`Client::acquire`],
//!   [`Client::renew`], [`Client::release`], [`Client::status`],
//!   [`Client::validate`], [`Client::cluster_status`]) and the retry loop they share.
//! - `routing.rs`: endpoint parsing ([`parse_endpoint`]), the
//!   `warden-leader` hint ([`leader_hint`]) and the per-call plan of targets
//!   and backoff (pure logic).
//! - `requests.rs`: request ids and the acknowledged watermark (SEMANTICS S7).
//! - [`ClientError`] (`error.rs`): typed errors, and the one place gRPC
//!   statuses are mapped to them.
//! - `types.rs`: [`ClientOptions`], [`AcquireOptions`] and the results.
//!
//! # The path of a call
//!
//! A call goes to the cached leader (or the first endpoint). A follower
//! answers `Unavailable` with `warden-leader: host:port`; the call is re-sent
//! there at once. A node that cannot be reached, or knows no leader, makes the
//! client try the next endpoint at once; after a whole round failed it pauses
//! (25 ms doubling, capped at 200 ms). Each attempt waits at most 500 ms, the
//! whole call at most 5 s (defaults); then it fails with
//! [`ClientError::NoQuorum`] or [`ClientError::Unavailable`], naming what it
//! tried. A retried acquire or release reuses its request id, so the server
//! applies it once.
//!
//! # Example
//!
//! ```no_run
//! use std::time::Duration;
//! use warden_client::{AcquireOptions, AcquireResult, Client, ClientOptions};
//!
//! # async fn demo() -> Result<(), warden_client::ClientError> {
//! let client = Client::connect(
//!     vec!["127.0.0.1:7001".into(), "127.0.0.1:7002".into(), "127.0.0.1:7003".into()],
//!     ClientOptions::default(),
//! )
//! .await?;
//! match client.acquire("orders", AcquireOptions::with_ttl(Duration::from_secs(10))).await? {
//!     AcquireResult::Granted { lease_id, fencing_token, .. } => {
//!         // Pass `fencing_token` with every write to the protected resource.
//!         client.renew(lease_id).await?;
//!         client.release(lease_id, Some("orders".into()), Some(fencing_token)).await?;
//!     }
//!     AcquireResult::NotGranted { holder_lease_id, reason, .. } => {
//!         println!("not granted ({reason}); held by lease {holder_lease_id:?}");
//!     }
//! }
//! # Ok(())
//! # }
//! ```
//!
//! # What this crate does not do (yet)
//!
//! Keep-alive sessions with `valid_until` and `check()` (SEMANTICS S5),
//! lock guards and elections are later work; this crate makes single calls.

#![warn(missing_docs)]

mod client;
mod error;
mod requests;
mod routing;
mod types;

pub use client::Client;
pub use error::ClientError;
pub use routing::{leader_hint, parse_endpoint};
pub use types::{
    AcquireOptions, AcquireResult, ClientOptions, ClusterStatus, Holder, Member, NotGrantedReason,
    Queued, ReleaseResult, RenewResult, StatusResult, Timing, TokenState, ValidateResult,
};
