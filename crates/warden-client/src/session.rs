//! [`Session`]: one lease kept alive in the background, with an honest
//! `valid_until` (docs/semantics.md S5), and the [`LockGuard`]s that hang on it.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tracing::debug;

use crate::client::{checked_deadline, Client};
use crate::types::{AcquireOptions, AcquireResult, GrantKind, ReleaseResult, ResourceToken};
use crate::{validity, BootClock, ClientError, Clock, ClockError};

/// A lost-timer fires this much before `valid_until`: tokio timers never fire
/// early but may fire up to a millisecond or so late, and `lost()` must resolve
/// no later than `valid_until` (S5).
const LOST_TIMER_SLACK: Duration = Duration::from_millis(5);

/// A timer never sleeps longer than this in one go: tokio's clock stops while
/// the machine is suspended, the session's (boot) clock does not, so a long
/// sleep re-reads the session clock at least this often.
const MAX_SLEEP: Duration = Duration::from_secs(1);

/// The longest wait one acquire asks the server for (the server's bound,
/// 1 h); [`Session::lock`] repeats it until granted.
const MAX_WAIT: Duration = Duration::from_secs(3_600);

/// How a session is made.
#[derive(Debug, Clone)]
pub struct SessionOptions {
    /// The lease's TTL (server bounds: 1 s ..= 1 h, whole milliseconds). The
    /// keep-alive renews every TTL/3.
    pub ttl: Duration,
    /// The clock validity is measured on. Default: [`BootClock`]
    /// (CLOCK_BOOTTIME, counts suspended time). Tests and the simulator pass
    /// [`TokioClock`](crate::TokioClock) or their own.
    pub clock: Arc<dyn Clock>,
}

impl SessionOptions {
    /// A session with this TTL on the boot clock.
    pub fn with_ttl(ttl: Duration) -> SessionOptions {
        SessionOptions {
            ttl,
            clock: BootClock::shared(),
        }
    }
}

/// Why a session (and every lock on it) can no longer be trusted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Lost {
    /// No renew was acknowledged in time: the session clock passed
    /// `valid_until` (no server reachable, no quorum, or this process was
    /// paused). The server may already have expired the lease and granted
    /// its locks to others.
    #[error("session lost: no renew was acknowledged before its validity ran out (the cluster may have expired the lease and granted its locks to others)")]
    Expired {
        /// The `valid_until` that passed, in milliseconds on the session clock.
        valid_until_ms: u64,
    },
    /// The server no longer knows the lease (it expired, or was revoked by
    /// someone else, e.g. `warden lease revoke`).
    #[error("session lost: the cluster no longer has lease {lease_id}")]
    LeaseGone {
        /// The lease.
        lease_id: u64,
    },
    /// The session clock could not be read: validity cannot be measured, so
    /// nothing on the session can be trusted (S5: no validity is ever
    /// computed from a made-up time). The server may still hold the lease
    /// until it expires or the best-effort revoke lands.
    #[error("session lost: {error}; its validity cannot be measured")]
    ClockFailed {
        /// Which clock failed, with the OS error.
        error: ClockError,
    },
    /// [`Session::close`] was called.
    #[error("session closed")]
    Closed,
    /// A grant taken with a max-hold ran past its bound (its acquire's
    /// send, plus the max-hold × (1 − 2ρ), less the margin): the cluster
    /// ends it by then however often the session renews. Only that guard reports it; the session
    /// stays valid (docs/semantics.md "Max-hold").
    #[error("grant lost: its max-hold ran out (the cluster frees it by then, however often the session renews)")]
    MaxHold {
        /// The bound that passed, in milliseconds on the session clock.
        max_hold_until_ms: u64,
    },
}

impl From<Lost> for ClientError {
    fn from(lost: Lost) -> ClientError {
        ClientError::SessionLost { reason: lost }
    }
}

#[derive(Debug, Clone, Copy)]
struct State {
    /// On the session clock: the send time of the last acknowledged renew
    /// (or of the lease grant's first attempt) + validity(TTL) (S5).
    valid_until: Duration,
    /// Set once, never cleared: a lost session stays lost.
    lost: Option<Lost>,
}

/// What the keep-alive task and the handles share.
struct Shared {
    client: Client,
    lease_id: u64,
    ttl_ms: u64,
    clock: Arc<dyn Clock>,
    state: watch::Sender<State>,
}

impl Shared {
    fn state(&self) -> State {
        *self.state.borrow()
    }

    /// Marks the session lost (first reason wins). Returns the reason in force.
    fn lose(&self, reason: Lost) -> Lost {
        let mut kept = reason;
        self.state.send_if_modified(|s| match s.lost {
            Some(earlier) => {
                kept = earlier;
                false
            }
            None => {
                s.lost = Some(reason);
                true
            }
        });
        kept
    }

    /// The session clock's reading. A failed read loses the session for
    /// good ([`Lost::ClockFailed`]); returns the reason in force.
    fn now(&self) -> Result<Duration, Lost> {
        self.clock
            .now()
            .map_err(|error| self.lose(Lost::ClockFailed { error }))
    }

    fn check(&self) -> Result<(), Lost> {
        let s = self.state();
        if let Some(lost) = s.lost {
            return Err(lost);
        }
        if self.now()? >= s.valid_until {
            return Err(self.lose(Lost::Expired {
                valid_until_ms: millis(s.valid_until),
            }));
        }
        Ok(())
    }

    /// Sleeps until `at` on the session clock (minus the timer slack),
    /// re-reading the clock at least every [`MAX_SLEEP`]; returns at once
    /// when the clock cannot be read (the session is then lost).
    async fn sleep_until(&self, at: Duration) {
        loop {
            let Ok(now) = self.now() else {
                return;
            };
            let left = at.saturating_sub(now).saturating_sub(LOST_TIMER_SLACK);
            if left.is_zero() {
                return;
            }
            tokio::time::sleep(left.min(MAX_SLEEP)).await;
        }
    }
}

struct Inner {
    shared: Arc<Shared>,
    keep_alive: JoinHandle<()>,
}

impl Drop for Inner {
    /// The last handle is gone: stop renewing and revoke the lease in the
    /// background (best effort; otherwise it expires after its TTL).
    fn drop(&mut self) {
        self.keep_alive.abort();
        if self.shared.state().lost.is_none() {
            self.shared.lose(Lost::Closed);
            if let Ok(runtime) = tokio::runtime::Handle::try_current() {
                let client = self.shared.client.clone();
                let lease_id = self.shared.lease_id;
                runtime.spawn(async move {
                    let _ = client.revoke(lease_id).await;
                });
            }
        }
    }
}

/// A lease kept alive by a background task (etcd's `concurrency.Session`,
/// ZooKeeper's session): one heartbeat for every lock taken with
/// [`Session::lock`].
///
/// **Validity (docs/semantics.md S5).** [`valid_until`](Session::valid_until) is, on
/// the session clock (CLOCK_BOOTTIME by default), the *send* time of the
/// attempt whose acknowledgement was last received (matched by the echoed
/// sequence number; for the lease grant, its first attempt) plus
/// `TTL × (1 − 2ρ) − 50 ms` ([`validity`]). The server never expires the
/// lease before `send + TTL × (1 − ρ)` (S4), so while `check()` passes no one
/// else can have been granted this session's locks.
///
/// **Loss.** [`lost`](Session::lost) resolves no later than `valid_until` if
/// no renew was acknowledged by then — also when no server can be reached —
/// or as soon as the server says the lease is gone. A timer can fire late
/// after a process pause, so call [`check`](Session::check) right before each
/// protected write: it compares the clock with `valid_until` synchronously.
/// A session clock that cannot be read loses the session too
/// ([`Lost::ClockFailed`]): `check()` fails naming the clock, `lost()`
/// resolves. Once lost, a session stays lost, even if a late renew succeeds
/// or the clock reads again: open a new one.
///
/// **Leader changes** are invisible here: renewals follow the leader like
/// every call, and the first leader after a lease's last committed renew
/// keeps it at least G = 1 s (L4), which covers the retry path.
///
/// Cheap to clone; the keep-alive stops, and the lease is revoked in the
/// background, when the last clone and the last [`LockGuard`] are dropped.
#[derive(Clone)]
pub struct Session {
    inner: Arc<Inner>,
}

impl fmt::Debug for Session {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = self.inner.shared.state();
        f.debug_struct("Session")
            .field("lease_id", &self.inner.shared.lease_id)
            .field("ttl_ms", &self.inner.shared.ttl_ms)
            .field("valid_until", &s.valid_until)
            .field("lost", &s.lost)
            .finish()
    }
}

impl Client {
    /// Opens a session with this TTL on the boot clock; see [`Session`].
    ///
    /// # Errors
    ///
    /// As [`Client::lease_grant`]: `InvalidArgument` naming `ttl_ms` outside
    /// 1 s ..= 1 h; `ResourceExhausted`; `NoQuorum` / `Unavailable`.
    pub async fn session(&self, ttl: Duration) -> Result<Session, ClientError> {
        self.session_with(SessionOptions::with_ttl(ttl)).await
    }

    /// Opens a session with explicit options; see [`Session`].
    ///
    /// # Errors
    ///
    /// As [`Client::session`].
    pub async fn session_with(&self, options: SessionOptions) -> Result<Session, ClientError> {
        let clock = options.clock;
        // The grant is retried with one request id: it took effect at or after
        // the first attempt's send, so validity counts from there (S5).
        let sent_at = clock
            .now()
            .map_err(|error| ClientError::from(Lost::ClockFailed { error }))?;
        let granted = self.lease_grant(options.ttl).await?;
        let valid_until = sent_at.saturating_add(validity(Duration::from_millis(granted.ttl_ms)));
        let (state, _) = watch::channel(State {
            valid_until,
            lost: None,
        });
        let shared = Arc::new(Shared {
            client: self.clone(),
            lease_id: granted.lease_id,
            ttl_ms: granted.ttl_ms,
            clock,
            state,
        });
        let keep_alive = tokio::spawn(keep_alive(shared.clone(), sent_at));
        Ok(Session {
            inner: Arc::new(Inner { shared, keep_alive }),
        })
    }
}

/// Renews every TTL/3 (counted from the last acknowledged send), retrying a
/// failed renew at once (the call itself backs off), until the session is
/// lost. Each acknowledgement moves `valid_until` to its attempt's send +
/// validity(TTL).
async fn keep_alive(shared: Arc<Shared>, mut last_sent: Duration) {
    let period = Duration::from_millis(shared.ttl_ms / 3);
    let mut failed = false;
    loop {
        let valid_until = shared.state().valid_until;
        let next = if failed {
            match shared.now() {
                Ok(now) => now,
                Err(_) => break,
            }
        } else {
            last_sent.saturating_add(period)
        };
        // Wait for the next renew, or the loss, whichever comes first.
        if next < valid_until {
            shared
                .sleep_until(next.saturating_add(LOST_TIMER_SLACK))
                .await;
        }
        let Ok(now) = shared.now() else {
            break;
        };
        if now.saturating_add(LOST_TIMER_SLACK) >= valid_until {
            shared.lose(Lost::Expired {
                valid_until_ms: millis(valid_until),
            });
            break;
        }
        // The renew may take until the loss; past it, nothing it says counts.
        let call_deadline = checked_deadline(Instant::now(), valid_until.saturating_sub(now));
        let clock = shared.clock.clone();
        let read_clock = move || clock.now();
        let outcome = tokio::select! {
            r = shared.client.renew_sent_at(shared.lease_id, call_deadline, &read_clock) => Some(r),
            () = shared.sleep_until(valid_until) => None,
        };
        match outcome {
            None => {
                shared.lose(Lost::Expired {
                    valid_until_ms: millis(valid_until),
                });
                break;
            }
            Some(Ok((renewed, sent_at))) => {
                failed = false;
                last_sent = sent_at;
                let until = sent_at.saturating_add(validity(Duration::from_millis(renewed.ttl_ms)));
                shared.state.send_if_modified(|s| {
                    // Never after the loss (a lost session stays lost), never
                    // backwards (replies can overtake each other).
                    if s.lost.is_none() && until > s.valid_until {
                        s.valid_until = until;
                        true
                    } else {
                        false
                    }
                });
                if shared.state().lost.is_some() {
                    break;
                }
            }
            Some(Err(ClientError::NotFound { .. })) => {
                shared.lose(Lost::LeaseGone {
                    lease_id: shared.lease_id,
                });
                return;
            }
            // The clock failed at the attempt's send: nothing it says counts.
            Some(Err(ClientError::SessionLost { reason })) => {
                shared.lose(reason);
                break;
            }
            Some(Err(e)) => {
                debug!(lease_id = shared.lease_id, error = %e, "session keep-alive failed; retrying");
                failed = true;
            }
        }
    }
    // Lost by time (or by the clock): the lease may still be live on the
    // server, and nobody here trusts it any more. Revoking frees its locks
    // sooner (best effort).
    let _ = tokio::time::timeout(
        Duration::from_secs(1),
        shared.client.revoke(shared.lease_id),
    )
    .await;
}

impl Session {
    /// The session's lease id.
    pub fn lease_id(&self) -> u64 {
        self.inner.shared.lease_id
    }

    /// The TTL the server granted, in milliseconds.
    pub fn ttl_ms(&self) -> u64 {
        self.inner.shared.ttl_ms
    }

    /// The client the session uses.
    pub fn client(&self) -> &Client {
        &self.inner.shared.client
    }

    /// The clock `valid_until` is measured on.
    pub fn clock(&self) -> &Arc<dyn Clock> {
        &self.inner.shared.clock
    }

    /// The instant, on [`clock`](Session::clock), until which the session
    /// (and every lock on it) is certainly still held, unless it is already
    /// lost (S5). Only moves forward.
    pub fn valid_until(&self) -> Duration {
        self.inner.shared.state().valid_until
    }

    /// Time left until [`valid_until`](Session::valid_until); zero once lost
    /// (also when the clock cannot be read).
    pub fn time_left(&self) -> Duration {
        if self.check().is_err() {
            return Duration::ZERO;
        }
        self.inner
            .shared
            .now()
            .map_or(Duration::ZERO, |now| self.valid_until().saturating_sub(now))
    }

    /// `Ok` while the session is valid: not lost and the session clock is
    /// before `valid_until`. Synchronous and cheap: call it right before each
    /// write the lock protects (a timer may fire late after a pause; this
    /// comparison does not). A failure marks the session lost for good.
    ///
    /// # Errors
    ///
    /// The [`Lost`] reason: [`Lost::ClockFailed`] (naming the clock and the
    /// OS error) when the session clock cannot be read.
    pub fn check(&self) -> Result<(), Lost> {
        self.inner.shared.check()
    }

    /// Resolves when the session is lost: no later than `valid_until` without
    /// an acknowledged renew, at once when the server reports the lease gone,
    /// within 1 s of the session clock failing (sooner if
    /// `check()` saw it first), or on [`close`](Session::close). Cancel-safe;
    /// any number of callers.
    pub async fn lost(&self) -> Lost {
        let mut rx = self.inner.shared.state.subscribe();
        let lost = match rx.wait_for(|s| s.lost.is_some()).await {
            Ok(s) => s.lost.unwrap_or(Lost::Closed),
            // The sender lives as long as `self`: not reachable.
            Err(_) => Lost::Closed,
        };
        lost
    }

    /// Ends the session: marks it lost ([`Lost::Closed`]), stops the
    /// keep-alive and revokes the lease, which releases every lock on it
    /// (cleanly: no lock-delay) in one committed entry.
    ///
    /// # Errors
    ///
    /// `NoQuorum` / `Unavailable` if the revoke did not commit within the
    /// client's deadline (the lease then expires after its TTL). A lease the
    /// server no longer has is not an error.
    pub async fn close(self) -> Result<(), ClientError> {
        self.inner.keep_alive.abort();
        self.inner.shared.lose(Lost::Closed);
        match self.client().revoke(self.lease_id()).await {
            Ok(_) | Err(ClientError::NotFound { .. }) => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// Takes `resource` on this session's lease, waiting in the server's
    /// fair queue for as long as it takes (etcd `Mutex.Lock`). The waiter is
    /// kept across leader changes (S8); the wait ends with an error if the
    /// session is lost.
    ///
    /// # Errors
    ///
    /// [`ClientError::SessionLost`] when the session is lost before the
    /// grant; `InvalidArgument` for a bad resource name; `NoQuorum` /
    /// `Unavailable` when the cluster could not be reached.
    pub async fn lock(&self, resource: impl Into<String>) -> Result<LockGuard, ClientError> {
        self.lock_until_granted(&resource.into(), Ask::default(), GrantKind::Mutex)
            .await
    }

    /// Takes a shared (reader's) grant of the read-write lock `resource`,
    /// waiting in the queue as long as it takes: granted beside other
    /// readers, never beside a writer, and never ahead of a writer that
    /// queued first (Curator `InterProcessReadWriteLock.readLock()`;
    /// docs/semantics.md, "Lock kinds"). Its fencing token is checked by
    /// the resource-side fence only against the highest writer's token, so
    /// readers never fence each other out.
    ///
    /// # Errors
    ///
    /// As [`lock`](Session::lock); `FailedPrecondition` naming the current
    /// kind when the resource is a mutex or a semaphore now.
    pub async fn read_lock(&self, resource: impl Into<String>) -> Result<LockGuard, ClientError> {
        self.lock_until_granted(&resource.into(), Ask::default(), GrantKind::Shared)
            .await
    }

    /// Takes the exclusive (writer's) grant of the read-write lock
    /// `resource`, waiting as long as it takes. Readers that queue after it
    /// wait behind it.
    ///
    /// # Errors
    ///
    /// As [`read_lock`](Session::read_lock).
    pub async fn write_lock(&self, resource: impl Into<String>) -> Result<LockGuard, ClientError> {
        self.lock_until_granted(&resource.into(), Ask::default(), GrantKind::Exclusive)
            .await
    }

    /// A counting semaphore of `limit` permits named `resource` (Curator
    /// `InterProcessSemaphoreV2`, `consul lock -n`): at most `limit`
    /// sessions hold a permit at once. Nothing is sent until a permit is
    /// asked for.
    pub fn semaphore(&self, resource: impl Into<String>, limit: u32) -> Semaphore<'_> {
        Semaphore {
            session: self,
            resource: resource.into(),
            limit,
        }
    }

    /// Takes `resource` with `options` as a grant of `kind`: the general form
    /// of [`lock_with`](Session::lock_with), [`read_lock`](Session::read_lock),
    /// [`write_lock`](Session::write_lock) and [`Semaphore`]. `Ok(None)` when a
    /// bounded wait ran out.
    ///
    /// # Errors
    ///
    /// As [`lock_with`](Session::lock_with); `InvalidArgument` naming
    /// `limit` for a permit limit of 0 or above 10,000; `FailedPrecondition`
    /// naming the current kind (or limit) when the resource has another.
    pub async fn lock_kind_with(
        &self,
        resource: impl Into<String>,
        kind: GrantKind,
        options: LockOptions,
    ) -> Result<Option<LockGuard>, ClientError> {
        let resource = resource.into();
        match options.wait {
            Some(wait) => self.acquire(&resource, wait, Ask::of(&options), kind).await,
            None => self
                .lock_until_granted(&resource, Ask::of(&options), kind)
                .await
                .map(Some),
        }
    }

    /// Takes every one of `resources` together on this session's lease, as
    /// one multi-lock, waiting as long as it takes (Curator
    /// `InterProcessMultiLock`; docs/semantics.md "Multi-locks"): granted in
    /// one committed entry with a fencing token per resource, or not at all.
    /// It queues on every resource and is granted at the head of all of
    /// them, so `lock_all(["a", "b"])` and `lock_all(["b", "a"])` from two
    /// sessions never deadlock.
    ///
    /// # Errors
    ///
    /// As [`lock`](Session::lock); `InvalidArgument` naming `resources`
    /// (empty, a duplicate, more than 64); `FailedPrecondition` naming
    /// `resources` when this session already holds or waits on one of them.
    pub async fn lock_all<S: AsRef<str>>(
        &self,
        resources: &[S],
    ) -> Result<MultiLockGuard, ClientError> {
        let resources: Vec<String> = resources.iter().map(|r| r.as_ref().to_owned()).collect();
        loop {
            if let Some(guard) = self.acquire_multi(&resources, MAX_WAIT).await? {
                return Ok(guard);
            }
        }
    }

    /// [`lock_all`](Session::lock_all) with a bounded wait (zero: try once);
    /// `Ok(None)` when it ran out (the waiter's removal from every queue
    /// has committed).
    ///
    /// # Errors
    ///
    /// As [`lock_all`](Session::lock_all).
    pub async fn lock_all_with_timeout<S: AsRef<str>>(
        &self,
        resources: &[S],
        wait: Duration,
    ) -> Result<Option<MultiLockGuard>, ClientError> {
        let resources: Vec<String> = resources.iter().map(|r| r.as_ref().to_owned()).collect();
        self.acquire_multi(&resources, wait).await
    }

    async fn acquire_multi(
        &self,
        resources: &[String],
        wait: Duration,
    ) -> Result<Option<MultiLockGuard>, ClientError> {
        self.check()?;
        let options = AcquireOptions {
            ttl: Duration::ZERO,
            lease_id: Some(self.lease_id()),
            wait,
            lock_delay: Duration::ZERO,
            kind: GrantKind::Mutex,
            max_hold: None,
        };
        let first = resources.first().cloned().unwrap_or_default();
        let result = tokio::select! {
            r = self.client().acquire_inner(first, resources.to_vec(), options, |_| {}, false) => r?,
            lost = self.lost() => return Err(lost.into()),
        };
        match result {
            AcquireResult::Granted { grants, .. } => {
                self.check()?;
                Ok(Some(MultiLockGuard {
                    session: self.clone(),
                    grants,
                    released: false,
                }))
            }
            AcquireResult::NotGranted { .. } => Ok(None),
        }
    }

    /// Waits in the queue, one server-bounded wait after another, until
    /// granted (or an error: the session lost, bad input, no cluster).
    async fn lock_until_granted(
        &self,
        resource: &str,
        ask: Ask,
        kind: GrantKind,
    ) -> Result<LockGuard, ClientError> {
        // A wait as long as the max-hold is refused (no grant may arrive
        // already invalid): wait a little less, again and again.
        let wait = match ask.max_hold {
            Some(d) => MAX_WAIT.min(d.saturating_sub(Duration::from_millis(1))),
            None => MAX_WAIT,
        };
        loop {
            if let Some(guard) = self.acquire(resource, wait, ask, kind).await? {
                return Ok(guard);
            }
        }
    }

    /// Takes `resource` with `options`: a wait bound (None: as long as it
    /// takes, like [`lock`](Session::lock)) and a lock-delay, the time the
    /// resource stays ungrantable after this grant is lost involuntarily (the
    /// session expires, an operator forces a release), so a holder that
    /// lost it without knowing has time to stop (docs/semantics.md,
    /// "Lock-delay"; Chubby's lock-delay). A release or a close frees it at
    /// once. `Ok(None)` when a bounded wait ran out.
    ///
    /// # Errors
    ///
    /// As [`lock`](Session::lock); `InvalidArgument` naming `lock_delay_ms`
    /// for a lock-delay over the server's bound (1 min).
    pub async fn lock_with(
        &self,
        resource: impl Into<String>,
        options: LockOptions,
    ) -> Result<Option<LockGuard>, ClientError> {
        self.lock_kind_with(resource, GrantKind::Mutex, options)
            .await
    }

    /// Takes `resource` if it is free now (no wait). `Ok(None)` if it is held
    /// or in lock-delay.
    ///
    /// # Errors
    ///
    /// As [`lock`](Session::lock).
    pub async fn try_lock(
        &self,
        resource: impl Into<String>,
    ) -> Result<Option<LockGuard>, ClientError> {
        self.acquire(
            &resource.into(),
            Duration::ZERO,
            Ask::default(),
            GrantKind::Mutex,
        )
        .await
    }

    /// Takes `resource`, waiting in the queue at most `wait` (server bound
    /// 1 h). `Ok(None)` when the wait ran out; the waiter's removal has then
    /// committed (S8).
    ///
    /// # Errors
    ///
    /// As [`lock`](Session::lock).
    pub async fn lock_with_timeout(
        &self,
        resource: impl Into<String>,
        wait: Duration,
    ) -> Result<Option<LockGuard>, ClientError> {
        self.acquire(&resource.into(), wait, Ask::default(), GrantKind::Mutex)
            .await
    }

    async fn acquire(
        &self,
        resource: &str,
        wait: Duration,
        ask: Ask,
        kind: GrantKind,
    ) -> Result<Option<LockGuard>, ClientError> {
        self.check()?;
        let options = AcquireOptions {
            ttl: Duration::ZERO,
            lease_id: Some(self.lease_id()),
            wait,
            lock_delay: ask.lock_delay,
            kind,
            max_hold: ask.max_hold,
        };
        // The grant comes after the send: a max-hold counts from here on
        // the session clock (docs/semantics.md "Max-hold").
        let sent = self.inner.shared.now()?;
        let result = tokio::select! {
            // The session's keep-alive renews the lease while it waits.
            r = self.client().acquire_inner(resource.to_owned(), Vec::new(), options, |_| {}, false) => r?,
            lost = self.lost() => return Err(lost.into()),
        };
        match result {
            AcquireResult::Granted {
                resource,
                fencing_token,
                slot,
                ..
            } => {
                // Granted while the session may have been lost in between:
                // the caller must not be handed a guard it cannot trust.
                self.check()?;
                Ok(Some(LockGuard {
                    session: self.clone(),
                    resource,
                    fencing_token,
                    kind,
                    slot,
                    max_hold_until: ask.max_hold.map(|d| sent + crate::validity(d)),
                    released: false,
                }))
            }
            AcquireResult::NotGranted { .. } => Ok(None),
        }
    }
}

/// A counting semaphore on a [`Session`] ([`Session::semaphore`]): each
/// acquire takes one permit, a [`LockGuard`] whose
/// [`slot`](LockGuard::slot) and [`fencing_token`](LockGuard::fencing_token)
/// the resource-side fence checks per (resource, slot), so live permit
/// holders never fence each other out while a stale holder of a slot is
/// fenced by the slot's next holder (docs/fencing.md). A session holds at
/// most one permit of a semaphore.
#[derive(Debug, Clone)]
pub struct Semaphore<'a> {
    session: &'a Session,
    resource: String,
    limit: u32,
}

impl Semaphore<'_> {
    /// The semaphore's resource name.
    pub fn resource(&self) -> &str {
        &self.resource
    }

    /// Its number of permits.
    pub fn limit(&self) -> u32 {
        self.limit
    }

    /// Takes a permit, waiting in the fair queue as long as it takes; a
    /// freed permit goes to the oldest waiter in the entry that frees it.
    ///
    /// # Errors
    ///
    /// As [`Session::lock_kind_with`].
    pub async fn acquire(&self) -> Result<LockGuard, ClientError> {
        self.session
            .lock_until_granted(&self.resource, Ask::default(), self.kind())
            .await
    }

    /// Takes a permit if one is free now (no wait); `Ok(None)` if all are
    /// held (or the free one is in lock-delay).
    ///
    /// # Errors
    ///
    /// As [`Session::lock_kind_with`].
    pub async fn try_acquire(&self) -> Result<Option<LockGuard>, ClientError> {
        self.session
            .acquire(&self.resource, Duration::ZERO, Ask::default(), self.kind())
            .await
    }

    /// Takes a permit with a wait bound and a lock-delay, as
    /// [`Session::lock_with`]; a permit lost involuntarily withholds only
    /// its own slot during its lock-delay. `Ok(None)` when the wait ran out.
    ///
    /// # Errors
    ///
    /// As [`Session::lock_kind_with`].
    pub async fn acquire_with(
        &self,
        options: LockOptions,
    ) -> Result<Option<LockGuard>, ClientError> {
        self.session
            .lock_kind_with(self.resource.clone(), self.kind(), options)
            .await
    }

    fn kind(&self) -> GrantKind {
        GrantKind::Permit { limit: self.limit }
    }
}

/// Several locks held together by a [`Session`]'s lease
/// ([`Session::lock_all`]): one fencing token per resource
/// ([`fencing_token`](MultiLockGuard::fencing_token)), valid while the
/// session is. Releasing frees all of them in one committed entry; dropping
/// the guard does so in the background. A forced release of any one of
/// them ends them all (docs/semantics.md "Multi-locks").
pub struct MultiLockGuard {
    session: Session,
    grants: Vec<ResourceToken>,
    released: bool,
}

impl fmt::Debug for MultiLockGuard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MultiLockGuard")
            .field("lease_id", &self.session.lease_id())
            .field("grants", &self.grants)
            .finish()
    }
}

impl MultiLockGuard {
    /// Every resource held with its fencing token, in the order asked for.
    pub fn grants(&self) -> &[ResourceToken] {
        &self.grants
    }

    /// The fencing token of `resource`, if this guard holds it.
    pub fn fencing_token(&self, resource: &str) -> Option<u64> {
        self.grants
            .iter()
            .find(|g| g.resource == resource)
            .map(|g| g.fencing_token)
    }

    /// The lease holding the locks (the session's).
    pub fn lease_id(&self) -> u64 {
        self.session.lease_id()
    }

    /// The session the locks hang on.
    pub fn session(&self) -> &Session {
        &self.session
    }

    /// See [`Session::check`].
    ///
    /// # Errors
    ///
    /// The [`Lost`] reason.
    pub fn check(&self) -> Result<(), Lost> {
        self.session.check()
    }

    /// See [`Session::lost`].
    pub async fn lost(&self) -> Lost {
        self.session.lost().await
    }

    /// Releases every resource of this grant (named by its first resource
    /// and that resource's token, S6) and waits until the release commits.
    ///
    /// # Errors
    ///
    /// As [`LockGuard::release`].
    pub async fn release(mut self) -> Result<ReleaseResult, ClientError> {
        self.released = true;
        let first = self.grants.first().cloned();
        self.session
            .client()
            .release(
                self.session.lease_id(),
                first.as_ref().map(|g| g.resource.clone()),
                first.map(|g| g.fencing_token),
            )
            .await
    }
}

impl Drop for MultiLockGuard {
    fn drop(&mut self) {
        if self.released || self.session.inner.shared.state().lost.is_some() {
            return;
        }
        let Some(first) = self.grants.first().cloned() else {
            return;
        };
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            let client = self.session.client().clone();
            let lease_id = self.session.lease_id();
            let session = self.session.clone();
            runtime.spawn(async move {
                let _ = client
                    .release(lease_id, Some(first.resource), Some(first.fencing_token))
                    .await;
                drop(session);
            });
        }
    }
}

/// How [`Session::lock_with`] takes a lock.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LockOptions {
    /// The longest wait in the server's queue (server bound 1 h); None:
    /// until granted or the session is lost.
    pub wait: Option<Duration>,
    /// Lock-delay after an involuntary loss of the grant; zero: none
    /// (server bound 1 min).
    pub lock_delay: Duration,
    /// Max-hold: the grant ends no later than this after it is granted,
    /// however often the session renews (docs/semantics.md "Max-hold";
    /// server bounds 1 s ..= 24 h; `wait` must be shorter). The guard's
    /// [`valid_until`](LockGuard::valid_until) is then the earlier of the
    /// session's and the acquire's send + this × (1 − 2ρ) − margin. None:
    /// no cap.
    pub max_hold: Option<Duration>,
}

/// The per-grant part of [`LockOptions`] (the wait is passed apart).
#[derive(Clone, Copy, Debug, Default)]
struct Ask {
    lock_delay: Duration,
    max_hold: Option<Duration>,
}

impl Ask {
    fn of(options: &LockOptions) -> Ask {
        Ask {
            lock_delay: options.lock_delay,
            max_hold: options.max_hold,
        }
    }
}

/// A lock held by a [`Session`]'s lease (etcd's `Mutex` once locked, with the
/// grant's fencing token). Valid while its session is: [`check`] before each
/// protected write, and pass [`fencing_token`] with the write so the resource
/// rejects it if the lock was lost anyway (S2).
///
/// Dropping a guard releases the lock in the background (its exact grant,
/// S6); [`release`](LockGuard::release) releases it and waits for the commit.
/// A forced release by an operator (`warden release --force`) is not
/// seen here; the fence rejects the holder's next write.
///
/// [`check`]: LockGuard::check
/// [`fencing_token`]: LockGuard::fencing_token
pub struct LockGuard {
    session: Session,
    resource: String,
    fencing_token: u64,
    kind: GrantKind,
    slot: Option<u32>,
    /// With a max-hold: on the session clock, the acquire's send +
    /// validity(max-hold); the grant is not trusted past it.
    max_hold_until: Option<Duration>,
    released: bool,
}

impl fmt::Debug for LockGuard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LockGuard")
            .field("resource", &self.resource)
            .field("lease_id", &self.lease_id())
            .field("fencing_token", &self.fencing_token)
            .field("kind", &self.kind)
            .field("slot", &self.slot)
            .finish()
    }
}

impl LockGuard {
    /// The resource held.
    pub fn resource(&self) -> &str {
        &self.resource
    }

    /// This grant's fencing token: larger than every token issued before it
    /// for this resource (S2).
    pub fn fencing_token(&self) -> u64 {
        self.fencing_token
    }

    /// The kind of grant held: a mutex, a read-write lock's shared or
    /// exclusive grant, or a semaphore permit.
    pub fn kind(&self) -> GrantKind {
        self.kind
    }

    /// A semaphore permit's slot in `0..limit`; `None` for the other kinds.
    /// Send it beside the fencing token: the fence checks a permit's token
    /// per (resource, slot).
    pub fn slot(&self) -> Option<u32> {
        self.slot
    }

    /// The lease holding the lock (the session's).
    pub fn lease_id(&self) -> u64 {
        self.session.lease_id()
    }

    /// The session the lock hangs on.
    pub fn session(&self) -> &Session {
        &self.session
    }

    /// Until when, on the session clock, the grant is certainly still
    /// held: [`Session::valid_until`], or the earlier max-hold bound (the
    /// acquire's send + max-hold × (1 − 2ρ) − margin; docs/semantics.md
    /// "Max-hold").
    pub fn valid_until(&self) -> Duration {
        let session = self.session.valid_until();
        self.max_hold_until.map_or(session, |m| m.min(session))
    }

    /// The max-hold bound of this grant on the session clock; None without
    /// a max-hold.
    pub fn max_hold_until(&self) -> Option<Duration> {
        self.max_hold_until
    }

    /// See [`Session::check`]; with a max-hold, also fails once the session
    /// clock passes [`max_hold_until`](LockGuard::max_hold_until) (the
    /// session itself stays valid: only this grant has run out).
    ///
    /// # Errors
    ///
    /// The [`Lost`] reason; [`Lost::MaxHold`] past the max-hold bound.
    pub fn check(&self) -> Result<(), Lost> {
        self.session.check()?;
        let Some(until) = self.max_hold_until else {
            return Ok(());
        };
        let now = self.session.inner.shared.now()?;
        if now >= until {
            return Err(Lost::MaxHold {
                max_hold_until_ms: u64::try_from(until.as_millis()).unwrap_or(u64::MAX),
            });
        }
        Ok(())
    }

    /// See [`Session::lost`]; with a max-hold, also resolves (with
    /// [`Lost::MaxHold`]) once the max-hold bound has passed.
    pub async fn lost(&self) -> Lost {
        if self.max_hold_until.is_none() {
            return self.session.lost().await;
        }
        loop {
            if let Err(lost) = self.check() {
                return lost;
            }
            let left = self
                .session
                .inner
                .shared
                .now()
                .ok()
                .zip(self.max_hold_until)
                .map_or(Duration::ZERO, |(now, until)| until.saturating_sub(now));
            // Re-read the session clock at least every second: it counts
            // suspended time, tokio's timer may not.
            tokio::select! {
                lost = self.session.lost() => return lost,
                () = tokio::time::sleep(left.min(Duration::from_secs(1))) => {}
            }
        }
    }

    /// Releases this exact grant (S6) and waits until the release commits.
    ///
    /// # Errors
    ///
    /// `FailedPrecondition` / `NotFound` when the grant had already ended
    /// (expired, forced, lease gone); `NoQuorum` / `Unavailable`.
    pub async fn release(mut self) -> Result<ReleaseResult, ClientError> {
        self.released = true;
        self.session
            .client()
            .release(
                self.session.lease_id(),
                Some(self.resource.clone()),
                Some(self.fencing_token),
            )
            .await
    }
}

impl Drop for LockGuard {
    fn drop(&mut self) {
        if self.released || self.session.inner.shared.state().lost.is_some() {
            return;
        }
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            let client = self.session.client().clone();
            let lease_id = self.session.lease_id();
            let resource = std::mem::take(&mut self.resource);
            let token = self.fencing_token;
            // Holds the session until the release is done, so its lease is
            // not revoked underneath it (which would be fine, but noisier).
            let session = self.session.clone();
            runtime.spawn(async move {
                let _ = client.release(lease_id, Some(resource), Some(token)).await;
                drop(session);
            });
        }
    }
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}
