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
//! - [`transport`]: the connector that opens channels (TCP; the simulator
//!   injects its own network).
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
pub mod transport;
mod types;
mod watch;

pub use client::Client;

/// ρ: the documented bound on clock *rate* drift between any two machines
/// (SEMANTICS "Words"): 1 %, in parts per million.
pub const DRIFT_RHO_PPM: u64 = 10_000;

/// Margin subtracted from every validity the client computes (S5): 50 ms.
pub const VALIDITY_MARGIN: std::time::Duration = std::time::Duration::from_millis(50);

/// How long a grant or renew can be trusted after the *send* of the request
/// it acknowledges (S5): `ttl × (1 − 2ρ) − margin` (the server's clock may run
/// fast by ρ and this one slow by ρ). Saturates at zero.
pub fn validity(ttl: std::time::Duration) -> std::time::Duration {
    let ttl_us = u64::try_from(ttl.as_micros()).unwrap_or(u64::MAX);
    let scaled = ttl_us / 1_000_000 * (1_000_000 - 2 * DRIFT_RHO_PPM)
        + ttl_us % 1_000_000 * (1_000_000 - 2 * DRIFT_RHO_PPM) / 1_000_000;
    std::time::Duration::from_micros(scaled).saturating_sub(VALIDITY_MARGIN)
}
pub use error::ClientError;
pub use routing::{leader_hint, parse_endpoint};
pub use types::{
    AcquireOptions, AcquireResult, ClientOptions, ClusterStatus, Holder, LeaseGrantResult,
    LeaseInfo, Member, NotGrantedReason, Queued, ReleaseResult, RenewResult, StatusResult, Timing,
    TokenState, ValidateResult,
};
pub use watch::{WatchError, WatchEvent, WatchTarget, Watcher};

#[cfg(test)]
mod validity_tests {
    use std::time::Duration;

    // S5: validity = TTL × (1 − 2ρ) − margin, with ρ = 1 % and a 50 ms margin.
    #[test]
    fn validity_takes_drift_and_margin_off_the_ttl() {
        assert_eq!(
            super::validity(Duration::from_secs(10)),
            Duration::from_millis(9_750)
        );
        assert_eq!(
            super::validity(Duration::from_millis(1_000)),
            Duration::from_millis(930)
        );
        assert_eq!(super::validity(Duration::from_millis(40)), Duration::ZERO);
        assert_eq!(
            super::validity(Duration::from_secs(3_600)),
            Duration::from_millis(3_527_950)
        );
    }
}
