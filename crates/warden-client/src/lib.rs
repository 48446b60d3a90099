//! Warden's async client: talks to a Warden cluster over gRPC, follows the
//! leader, retries within a deadline, makes every mutating request
//! exactly-once with request ids (docs/semantics.md S7), and tells a lock holder the
//! truth about its lease (S5).
//!
//! # Example
//!
//! A session (one lease, kept alive in the background), a lock on it, a
//! check right before the protected write, and the fencing token passed with
//! the write:
//!
//! ```no_run
//! use std::time::Duration;
//! use warden_client::{Client, ClientOptions};
//!
//! # async fn write_orders(_token: u64) {}
//! # async fn demo() -> Result<(), warden_client::ClientError> {
//! let client = Client::connect(
//!     vec!["127.0.0.1:7001".into(), "127.0.0.1:7002".into(), "127.0.0.1:7003".into()],
//!     ClientOptions::default(),
//! )
//! .await?;
//! let session = client.session(Duration::from_secs(10)).await?;
//! let guard = session.lock("orders").await?;
//! // ... work ...
//! guard.check()?; // synchronous: is the lease certainly still ours?
//! write_orders(guard.fencing_token()).await; // the resource rejects older tokens
//! guard.release().await?;
//! session.close().await?;
//! # Ok(())
//! # }
//! ```
//!
//! Leader election on the same session: `Election::new(session, "scheduler")
//! .campaign("node-a")` waits until elected and returns a [`Leadership`]
//! whose `fencing_token()` stamps the term's work; `observe()` follows the
//! leaders. `examples/scheduler.rs` in the `warden` crate is a whole program.
//!
//! # Layout
//!
//! - [`Client`] (`client.rs`): the calls ([`Client::acquire`],
//!   [`Client::renew`], [`Client::release`], [`Client::revoke`],
//!   [`Client::lease_grant`], [`Client::proclaim`], [`Client::status`],
//!   [`Client::validate`], [`Client::cluster_status`]) and the retry loop
//!   they share, [`Client::call_raw`] for a request this crate has no
//!   call for.
//! - [`Admin`] (`admin.rs`): the operator's calls ([`Client::admin`]: list,
//!   forced release, audit trail, membership changes, snapshot save, and
//!   identities: roles, grants, principals' roles, quotas, limits, the auth
//!   audit trail) on the same loop, each with its retry class (membership
//!   changes, which carry no request id, are repeated only after an attempt
//!   that certainly did nothing), and their results. A snapshot comes in
//!   bounded messages (`SaveSnapshotStream`, put back together and checked
//!   in `snapshot_stream.rs`: [`SnapshotStreamError`]), or in one message
//!   from an older node.
//! - [`Session`], [`LockGuard`], [`Lost`] (`session.rs`): a lease with a
//!   background keep-alive, `valid_until` / `check()` / `lost()` (S5), and
//!   the locks taken on it: mutexes (`lock`), a read-write lock's grants
//!   (`read_lock`, `write_lock`), a [`Semaphore`]'s permits (a guard's
//!   `slot()`), and multi-locks (`lock_all`, a [`MultiLockGuard`] with a
//!   token per resource); [`GrantKind`] names the kinds for
//!   [`Client::acquire`] (docs/semantics.md "Lock kinds", "Multi-locks").
//! - [`Election`], [`Leadership`], [`Observer`] (`election.rs`): campaign,
//!   proclaim, leader, observe, resign, in a namespace apart from locks.
//! - [`Clock`], [`ClockError`], [`BootClock`], [`TokioClock`]: the clock
//!   validity is measured on (CLOCK_BOOTTIME by default), re-exported from
//!   `warden-clock`, the one the server uses too.
//! - `calls.rs`: one `Calls` stream per node, shared by the client's
//!   acquires and releases to it (one HTTP/2 stream instead of one per call),
//!   with the unary calls for a node that does not serve it (asked again
//!   after [`ClientOptions::recheck_calls_after`]).
//! - `routing.rs`: endpoint parsing ([`parse_endpoint`]), the
//!   `warden-leader` hint ([`leader_hint`]) and the per-call plan of targets
//!   and backoff (pure logic).
//! - `requests.rs`: request ids and the acknowledged watermark (S7).
//! - `published.rs`: what the server publishes in `ClusterStatus` (the
//!   election prefix, the in-flight window), read once before the first
//!   call that needs it ([`Client::election_key`]).
//! - [`ClientError`] (`error.rs`): typed errors, and the one place gRPC
//!   statuses are mapped to them and judged for a retry (whether an attempt
//!   may be repeated, and whether it certainly did nothing).
//! - `types.rs`: [`ClientOptions`], [`TlsOptions`], [`AcquireOptions`] and the results.
//! - [`Watcher`] (`watch.rs`): a resumable stream of lock-table events.
//! - [`transport`]: the [`Connector`](transport::Connector) that opens
//!   channels, one per client: [`ClientOptions::connector`] when given
//!   (the simulator passes its own network; a [`warden_tls::ClientTls`] is
//!   one), else mutual TLS for [`ClientOptions::tls`], else plain TCP.
//! - `tls.rs`: loading [`ClientOptions::tls`] ([`TlsOptions`]: certs dir and
//!   user) and [`ClientError::Tls`], naming the file at fault.
//!
//! # TLS
//!
//! A secure cluster (the default: nodes started with `--certs-dir`) serves
//! only mutual TLS 1.3, and its nodes take the caller's principal from the
//! verified client certificate alone. Give the client the certs dir that
//! holds `ca.crt` and `client.USER.crt` / `client.USER.key`:
//!
//! ```no_run
//! # async fn f() -> Result<(), warden_client::ClientError> {
//! use warden_client::{Client, ClientOptions, TlsOptions};
//! let options = ClientOptions {
//!     tls: Some(TlsOptions::new("/home/me/warden-dev/certs", "root")),
//!     ..ClientOptions::default()
//! };
//! let client = Client::connect(vec!["127.0.0.1:7001".into()], options).await?;
//! # drop(client); Ok(()) }
//! ```
//!
//! Files that cannot be used fail [`Client::connect`] with
//! [`ClientError::Tls`] naming the file. A node whose certificate does not
//! chain to `ca.crt`, does not name the host dialled, or is not a node
//! certificate fails the handshake: that attempt is retried like any
//! connection that never opened, and the error at the deadline quotes the
//! reason. Without `tls` the client speaks plaintext, for a cluster started
//! with `--insecure`.
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
//! tried. A retried acquire, release, revoke, lease grant or forced release
//! reuses its request id, so the server applies it once. A membership change
//! has no request id: it is repeated only after an attempt that certainly did
//! nothing, else it fails with [`ClientError::OutcomeUnknown`] ([`Admin`]).
//!
//! # What a session promises (S5)
//!
//! `valid_until` = send time of the acknowledged renew (or of the grant's
//! first attempt) + TTL × (1 − 2ρ) − 50 ms, on CLOCK_BOOTTIME; [`validity`]
//! computes the duration. The server never expires a lease earlier than
//! TTL × (1 − ρ) after that send (S4), so while `check()` passes, nobody else
//! holds the session's locks. `lost()` fires no later than `valid_until`,
//! also when no server answers; after a process pause, `check()` fails at
//! once even if the timer has not run yet. A session clock that cannot be
//! read loses the session ([`Lost::ClockFailed`], naming the clock and the
//! OS error): no validity is ever computed from a made-up time.
//!
//! # What this crate does not do
//!
//! It does not notice an operator's forced release of one lock (the session
//! stays valid; the fence rejects the next write), and it does not stop your
//! code by itself: `warden exec` does that for a child process.

#![warn(missing_docs)]

mod admin;
mod calls;
mod client;
mod election;
mod error;
mod published;
mod requests;
mod routing;
mod session;
mod snapshot_stream;
mod tls;
pub mod transport;
mod types;
mod watch;

pub use admin::{
    Admin, AuditRecord, AuditTrail, AuthAuditRecord, AuthAuditTrail, AuthChange, ClusterLimits,
    DenyList, DenyTarget, ForceReleased, HotLock, Limits, ListedHolder, ListedLock, ListedWaiter,
    Listing, Membership, Permission, Quota, QuotaUsage, RoleGrant, RoleInfo, Roles, SavedSnapshot,
    TopLocks, UserInfo, Users, ADMIN_ATTEMPT_TIMEOUT, MEMBERSHIP_ATTEMPT_TIMEOUT,
    MEMBERSHIP_DEADLINE, SNAPSHOT_MESSAGE_TIMEOUT,
};
pub use client::Client;
pub use election::{election_key, Election, LeaderInfo, Leadership, Observer, ELECTION_PREFIX};
pub use session::{
    LockGuard, LockOptions, Lost, MultiLockGuard, Semaphore, Session, SessionOptions,
};
pub use snapshot_stream::{
    SnapshotStreamError, MAX_SNAPSHOT_BYTES, MAX_SNAPSHOT_CHUNK_BYTES,
    MAX_SNAPSHOT_CHUNK_MESSAGE_BYTES, MAX_UNARY_SNAPSHOT_BYTES,
};
pub use warden_clock::{BootClock, Clock, ClockError, TokioClock};

/// ρ: the documented bound on clock *rate* drift between any two machines
/// (docs/semantics.md "Words"): 1 %, in parts per million.
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
pub use requests::MAX_REQUESTS_AHEAD;
pub use routing::{leader_hint, parse_endpoint};
pub use types::{
    AcquireOptions, AcquireResult, CancelWaitOutcome, ClientOptions, ClusterStatus, GrantKind,
    Holder, LeaseGrantResult, LeaseInfo, Member, NotGrantedReason, QueueBehind, Queued,
    ReleaseResult, RenewResult, ResourceKind, ResourceToken, StatusResult, Timing, TlsOptions,
    TokenState, ValidateResult, DEFAULT_USER,
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
