//! Connection and handshake limits of one listener: [`AcceptOptions`] and
//! the checks behind them.
//!
//! - **Handshakes.** At most [`AcceptOptions::max_handshakes`] run at once,
//!   and at most [`AcceptOptions::max_handshakes_per_source`] from one
//!   source (an IPv4 address, or an IPv6 /64). A source over its budget
//!   loses its own oldest pending handshake to its new one; when all slots
//!   are taken, a new connection takes the oldest pending handshake of the
//!   source that holds the most slots, if that source holds more than the
//!   newcomer's, and is closed at once otherwise. So silent sockets from
//!   one source never keep another source from a slot.
//! - **Connections.** At most [`AcceptOptions::max_connections`]
//!   established at once, and at most
//!   [`AcceptOptions::max_connections_per_principal`] of one principal
//!   (a client certificate's principal, a node id, or, for a connection
//!   without a certificate, its source). A connection over either cap takes
//!   the place of the oldest idle connection (no open stream) of that
//!   principal, or of all; with none idle it is closed at once.
//! - **Idle.** A connection with no open stream for
//!   [`AcceptOptions::idle_timeout`] is closed. Streams are counted by the
//!   HTTP layer: it holds a [`StreamGuard`] (from
//!   [`crate::PeerInfo::stream_guard`]) for each request until its response
//!   ends.
//! - **Denied.** Each connection keeps its certificate's serial and
//!   principal; when the deny list in force changes
//!   ([`crate::ServerTls::set_denied`], a reload), every connection it now
//!   denies is closed, on every listener of the [`crate::ServerTls`]
//!   ([`crate::deny`]).
//! - **Accept errors.** At the open-file limit (`EMFILE`, `ENFILE`) or out
//!   of buffers, the accept loop waits before it accepts again
//!   ([`AcceptBackoff`]: 10 ms, doubling to 1 s, back to 10 ms after a
//!   success) instead of spinning on the error.

use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::future::Future;
use std::io;
use std::net::{IpAddr, Ipv6Addr};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::task::{Context, Poll};
use std::time::Duration;

use futures::task::AtomicWaker;
use tokio::time::{Instant, Sleep};
use tokio_stream::Stream;

use crate::deny::DenyList;
use crate::failure_log::{FailureLog, HandshakeFailure};
use crate::identity::Identity;

/// Default [`AcceptOptions::handshake_timeout`]: 5 s.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(5);
/// Default [`AcceptOptions::max_handshakes`]: 1,024.
pub const MAX_HANDSHAKES: usize = 1024;
/// Default [`AcceptOptions::max_handshakes_per_source`]: 64.
pub const MAX_HANDSHAKES_PER_SOURCE: usize = 64;
/// Default [`AcceptOptions::max_connections`]: 16,384.
pub const MAX_CONNECTIONS: usize = 16_384;
/// Default [`AcceptOptions::max_connections_per_principal`]: 1,024.
pub const MAX_CONNECTIONS_PER_PRINCIPAL: usize = 1024;
/// Default [`AcceptOptions::idle_timeout`]: 5 min.
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(300);

/// Bounds of [`AcceptOptions::handshake_timeout`]: 100 ms ..= 60 s.
pub const HANDSHAKE_TIMEOUT_RANGE: (Duration, Duration) =
    (Duration::from_millis(100), Duration::from_secs(60));
/// Bounds of [`AcceptOptions::max_handshakes`]: 1 ..= 65,536.
pub const MAX_HANDSHAKES_RANGE: (usize, usize) = (1, 65_536);
/// Bounds of [`AcceptOptions::max_connections`]: 1 ..= 1,048,576.
pub const MAX_CONNECTIONS_RANGE: (usize, usize) = (1, 1_048_576);
/// Bounds of [`AcceptOptions::idle_timeout`]: 1 s ..= 24 h.
pub const IDLE_TIMEOUT_RANGE: (Duration, Duration) =
    (Duration::from_secs(1), Duration::from_secs(24 * 3600));

/// How a listener accepts: handshake and connection limits (see the
/// module docs; checked by [`AcceptOptions::validate`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AcceptOptions {
    /// A connection whose handshake has not finished by then is closed.
    pub handshake_timeout: Duration,
    /// Handshakes in progress at once.
    pub max_handshakes: usize,
    /// Handshakes in progress at once from one source (an IPv4 address or
    /// an IPv6 /64); at most `max_handshakes`.
    pub max_handshakes_per_source: usize,
    /// Established connections at once.
    pub max_connections: usize,
    /// Established connections of one principal (or, without a
    /// certificate, one source); at most `max_connections`.
    pub max_connections_per_principal: usize,
    /// A connection with no open stream for this long is closed.
    pub idle_timeout: Duration,
}

impl Default for AcceptOptions {
    fn default() -> Self {
        AcceptOptions {
            handshake_timeout: HANDSHAKE_TIMEOUT,
            max_handshakes: MAX_HANDSHAKES,
            max_handshakes_per_source: MAX_HANDSHAKES_PER_SOURCE,
            max_connections: MAX_CONNECTIONS,
            max_connections_per_principal: MAX_CONNECTIONS_PER_PRINCIPAL,
            idle_timeout: IDLE_TIMEOUT,
        }
    }
}

/// A value of [`AcceptOptions`] outside its limit: names the field (as the
/// server's flag, without `--`), the value and the limit.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LimitError {
    /// A duration outside its bounds.
    #[error("{field}: {} is outside {}..={}", show(.value), show(.min), show(.max))]
    Duration {
        /// The field.
        field: &'static str,
        /// What was given.
        value: Duration,
        /// The least allowed.
        min: Duration,
        /// The most allowed.
        max: Duration,
    },
    /// A count outside its bounds.
    #[error("{field}: {value} is outside {min}..={max}")]
    Count {
        /// The field.
        field: &'static str,
        /// What was given.
        value: usize,
        /// The least allowed.
        min: usize,
        /// The most allowed (for a per-source or per-principal limit, the
        /// total it is part of).
        max: usize,
    },
}

fn show(d: &Duration) -> String {
    humantime::format_duration(*d).to_string()
}

impl AcceptOptions {
    /// Checks every field against its bounds; the first one outside them
    /// is the error.
    pub fn validate(&self) -> Result<(), LimitError> {
        let duration = |field, value: Duration, (min, max): (Duration, Duration)| {
            if value < min || value > max {
                Err(LimitError::Duration {
                    field,
                    value,
                    min,
                    max,
                })
            } else {
                Ok(())
            }
        };
        let count = |field, value: usize, (min, max): (usize, usize)| {
            if value < min || value > max {
                Err(LimitError::Count {
                    field,
                    value,
                    min,
                    max,
                })
            } else {
                Ok(())
            }
        };
        duration(
            "handshake-timeout",
            self.handshake_timeout,
            HANDSHAKE_TIMEOUT_RANGE,
        )?;
        count("max-handshakes", self.max_handshakes, MAX_HANDSHAKES_RANGE)?;
        count(
            "max-handshakes-per-source",
            self.max_handshakes_per_source,
            (1, self.max_handshakes),
        )?;
        count(
            "max-connections",
            self.max_connections,
            MAX_CONNECTIONS_RANGE,
        )?;
        count(
            "max-connections-per-principal",
            self.max_connections_per_principal,
            (1, self.max_connections),
        )?;
        duration(
            "connection-idle-timeout",
            self.idle_timeout,
            IDLE_TIMEOUT_RANGE,
        )
    }
}

/// The source a connection is counted under: its IPv4 address, or its
/// IPv6 /64 (one host usually holds a whole /64). An IPv4-mapped IPv6
/// address counts as the IPv4 address.
pub fn source_of(ip: IpAddr) -> IpAddr {
    match ip.to_canonical() {
        IpAddr::V6(v6) => {
            let bits = u128::from(v6) & !((1u128 << 64) - 1);
            IpAddr::V6(Ipv6Addr::from(bits))
        }
        v4 => v4,
    }
}

/// What [`Pending::admit`] decided for a new connection.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Admit<T> {
    /// Start its handshake.
    Yes,
    /// Start it, after closing this pending handshake (removed already).
    Evicting(T, HandshakeFailure),
    /// Close it at once.
    No,
}

/// The pending handshakes of one listener, by source, oldest first.
#[derive(Debug)]
pub(crate) struct Pending<T> {
    by_source: HashMap<IpAddr, VecDeque<(u64, T)>>,
    total: usize,
}

impl<T> Default for Pending<T> {
    fn default() -> Self {
        Pending {
            by_source: HashMap::new(),
            total: 0,
        }
    }
}

impl<T> Pending<T> {
    /// Handshakes pending.
    pub(crate) fn len(&self) -> usize {
        self.total
    }

    /// Decides whether a new connection from `source` may start its
    /// handshake (see the module docs), removing the one it replaces.
    pub(crate) fn admit(&mut self, source: IpAddr, options: &AcceptOptions) -> Admit<T> {
        let mine = self.by_source.get(&source).map_or(0, VecDeque::len);
        if mine >= options.max_handshakes_per_source {
            return match self.pop_oldest(source) {
                Some(t) => Admit::Evicting(t, HandshakeFailure::SourceBudget),
                None => Admit::No,
            };
        }
        if self.total < options.max_handshakes {
            return Admit::Yes;
        }
        let busiest = self
            .by_source
            .iter()
            .max_by_key(|(_, q)| q.len())
            .map(|(s, q)| (*s, q.len()));
        match busiest {
            Some((other, n)) if n > mine => match self.pop_oldest(other) {
                Some(t) => Admit::Evicting(t, HandshakeFailure::TooMany),
                None => Admit::No,
            },
            _ => Admit::No,
        }
    }

    fn pop_oldest(&mut self, source: IpAddr) -> Option<T> {
        let queue = self.by_source.get_mut(&source)?;
        let (_, t) = queue.pop_front()?;
        if queue.is_empty() {
            self.by_source.remove(&source);
        }
        self.total -= 1;
        Some(t)
    }

    /// Records a started handshake `id` from `source`.
    pub(crate) fn insert(&mut self, source: IpAddr, id: u64, t: T) {
        self.by_source.entry(source).or_default().push_back((id, t));
        self.total += 1;
    }

    /// Forgets handshake `id` of `source` (it ended); nothing if it was
    /// evicted already.
    pub(crate) fn remove(&mut self, source: IpAddr, id: u64) {
        if let Some(queue) = self.by_source.get_mut(&source) {
            if let Some(at) = queue.iter().position(|(i, _)| *i == id) {
                queue.remove(at);
                self.total -= 1;
            }
            if queue.is_empty() {
                self.by_source.remove(&source);
            }
        }
    }
}

/// Who a connection counts against under
/// [`AcceptOptions::max_connections_per_principal`].
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Principal {
    Client(String),
    Node(u64),
    /// No certificate: its source ([`source_of`]).
    Anonymous(IpAddr),
}

impl Principal {
    fn of(identity: &Identity, remote: IpAddr) -> Principal {
        match identity {
            Identity::Client { principal } => Principal::Client(principal.clone()),
            Identity::Node { node_id } => Principal::Node(*node_id),
            Identity::Anonymous => Principal::Anonymous(source_of(remote)),
        }
    }
}

/// One established connection's state, shared by its IO, its
/// [`StreamGuard`]s and the [`Registry`].
pub(crate) struct ConnState {
    id: u64,
    principal: Principal,
    /// The certificate's serial (normalized); none without a certificate.
    serial: Option<String>,
    streams: AtomicUsize,
    /// The registry's epoch.
    epoch: Instant,
    /// Milliseconds since `epoch` when a stream last opened or closed (or
    /// the connection was established).
    last_active_ms: AtomicU64,
    closed: AtomicBool,
    /// The task reading the connection, woken when it is closed.
    waker: AtomicWaker,
    registry: Weak<Registry>,
}

impl fmt::Debug for ConnState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ConnState")
            .field("id", &self.id)
            .field("streams", &self.streams.load(Ordering::Relaxed))
            .field("closed", &self.closed.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

impl ConnState {
    fn touch(&self) {
        self.last_active_ms
            .store(ms_since(self.epoch), Ordering::Relaxed);
    }

    fn idle_since(&self) -> Option<u64> {
        (self.streams.load(Ordering::Acquire) == 0)
            .then(|| self.last_active_ms.load(Ordering::Relaxed))
    }

    /// Closes the connection: its IO fails from the next read or write on,
    /// and the task reading it is woken.
    pub(crate) fn close(&self) {
        self.closed.store(true, Ordering::Release);
        self.waker.wake();
    }

    /// Whether `deny` denies its certificate: a client's by principal or
    /// serial, a node's by serial; never a connection without one.
    pub(crate) fn denied_by(&self, deny: &DenyList) -> bool {
        match (&self.principal, &self.serial) {
            (Principal::Client(p), Some(serial)) => deny.denies(Some(p), serial),
            (Principal::Node(_), Some(serial)) => deny.denies(None, serial),
            _ => false,
        }
    }

    /// Whether it was closed; registers `cx` to be woken when it is.
    pub(crate) fn poll_closed(&self, cx: &mut Context<'_>) -> bool {
        if self.closed.load(Ordering::Acquire) {
            return true;
        }
        self.waker.register(cx.waker());
        self.closed.load(Ordering::Acquire)
    }

    /// Whether it was closed.
    pub(crate) fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    /// The registry forgets it (its IO was dropped).
    pub(crate) fn forget(&self) {
        if let Some(registry) = self.registry.upgrade() {
            registry.remove(self.id);
        }
    }

    /// Opens a stream: the connection is not idle until the guard drops.
    pub(crate) fn stream(self: &Arc<Self>) -> StreamGuard {
        self.streams.fetch_add(1, Ordering::AcqRel);
        self.touch();
        StreamGuard(self.clone())
    }
}

/// An open stream (a request until its response ends) of a connection;
/// the connection counts as idle only while it has none. Get one with
/// [`crate::PeerInfo::stream_guard`] and drop it when the response's body
/// ends.
#[derive(Debug)]
pub struct StreamGuard(Arc<ConnState>);

impl Drop for StreamGuard {
    fn drop(&mut self) {
        self.0.touch();
        self.0.streams.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Why the registry refused an established connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refused {
    /// Its principal is at its cap with none of its connections idle.
    Principal(usize),
    /// The listener is at its cap with no connection idle.
    Total(usize),
}

impl fmt::Display for Refused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refused::Principal(n) => write!(
                f,
                "{n} connections of this principal (max-connections-per-principal), none idle"
            ),
            Refused::Total(n) => write!(f, "{n} connections (max-connections), none idle"),
        }
    }
}

#[derive(Default)]
struct Conns {
    next_id: u64,
    all: HashMap<u64, Arc<ConnState>>,
    per_principal: HashMap<Principal, usize>,
}

impl Conns {
    fn remove(&mut self, id: u64) -> Option<Arc<ConnState>> {
        let conn = self.all.remove(&id)?;
        if let Some(n) = self.per_principal.get_mut(&conn.principal) {
            *n -= 1;
            if *n == 0 {
                self.per_principal.remove(&conn.principal);
            }
        }
        Some(conn)
    }

    /// The connection idle the longest (of `principal` only, if given).
    fn oldest_idle(&self, principal: Option<&Principal>) -> Option<u64> {
        self.all
            .values()
            .filter(|c| principal.is_none_or(|p| *p == c.principal))
            .filter_map(|c| c.idle_since().map(|t| (t, c.id)))
            .min()
            .map(|(_, id)| id)
    }
}

/// Whole milliseconds from `epoch` to now.
fn ms_since(epoch: Instant) -> u64 {
    Instant::now().saturating_duration_since(epoch).as_millis() as u64
}

/// The established connections of one listener (see the module docs).
pub(crate) struct Registry {
    options: AcceptOptions,
    epoch: Instant,
    conns: Mutex<Conns>,
}

impl Registry {
    /// A registry and its sweeper task, which closes idle connections
    /// until the registry is dropped. Must be called inside a tokio
    /// runtime.
    pub(crate) fn start(options: AcceptOptions, log: Arc<FailureLog>) -> Arc<Registry> {
        let registry = Arc::new(Registry {
            options,
            epoch: Instant::now(),
            conns: Mutex::new(Conns::default()),
        });
        let weak = Arc::downgrade(&registry);
        // A quarter of the timeout, within 10 ms ..= 1 s: a connection is
        // closed at most that late.
        let period =
            (options.idle_timeout / 4).clamp(Duration::from_millis(10), Duration::from_secs(1));
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(period);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tick.tick().await;
                let Some(registry) = weak.upgrade() else {
                    break;
                };
                let closed = registry.close_idle();
                if closed > 0 {
                    if let Some(suppressed) = log.admit(HandshakeFailure::Idle, Instant::now()) {
                        tracing::info!(
                            closed,
                            suppressed,
                            idle_timeout = %show(&options.idle_timeout),
                            "closed connections idle (no open stream) for the idle timeout"
                        );
                    }
                }
            }
        });
        registry
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Conns> {
        self.conns.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn now_ms(&self) -> u64 {
        ms_since(self.epoch)
    }

    /// Established connections.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.lock().all.len()
    }

    /// Admits a connection of `identity` (whose certificate has `serial`)
    /// from `remote`, closing the oldest idle connection it replaces (see
    /// the module docs).
    pub(crate) fn admit(
        self: &Arc<Self>,
        identity: &Identity,
        serial: Option<String>,
        remote: IpAddr,
    ) -> Result<Arc<ConnState>, Refused> {
        let principal = Principal::of(identity, remote);
        let mut conns = self.lock();
        let mine = conns.per_principal.get(&principal).copied().unwrap_or(0);
        if mine >= self.options.max_connections_per_principal {
            let id = conns
                .oldest_idle(Some(&principal))
                .ok_or(Refused::Principal(mine))?;
            if let Some(c) = conns.remove(id) {
                c.close();
            }
        } else if conns.all.len() >= self.options.max_connections {
            let id = conns
                .oldest_idle(None)
                .ok_or(Refused::Total(conns.all.len()))?;
            if let Some(c) = conns.remove(id) {
                c.close();
            }
        }
        conns.next_id += 1;
        let conn = Arc::new(ConnState {
            id: conns.next_id,
            principal: principal.clone(),
            serial,
            streams: AtomicUsize::new(0),
            epoch: self.epoch,
            last_active_ms: AtomicU64::new(self.now_ms()),
            closed: AtomicBool::new(false),
            waker: AtomicWaker::new(),
            registry: Arc::downgrade(self),
        });
        conns.all.insert(conn.id, conn.clone());
        *conns.per_principal.entry(principal).or_default() += 1;
        Ok(conn)
    }

    fn remove(&self, id: u64) {
        self.lock().remove(id);
    }

    /// Closes every connection idle for the idle timeout; how many.
    pub(crate) fn close_idle(&self) -> usize {
        let timeout = self.options.idle_timeout.as_millis() as u64;
        let now = self.now_ms();
        let mut conns = self.lock();
        let due: Vec<u64> = conns
            .all
            .values()
            .filter(|c| {
                c.idle_since()
                    .is_some_and(|t| now.saturating_sub(t) >= timeout)
            })
            .map(|c| c.id)
            .collect();
        for id in &due {
            if let Some(c) = conns.remove(*id) {
                c.close();
            }
        }
        due.len()
    }
}

impl Registry {
    /// Closes every connection `deny` denies ([`ConnState::denied_by`]);
    /// how many.
    pub(crate) fn close_denied(&self, deny: &DenyList) -> usize {
        let mut conns = self.lock();
        let due: Vec<u64> = conns
            .all
            .values()
            .filter(|c| c.denied_by(deny))
            .map(|c| c.id)
            .collect();
        for id in &due {
            if let Some(c) = conns.remove(*id) {
                c.close();
            }
        }
        due.len()
    }
}

/// The registries of every listener of one [`crate::ServerTls`], held
/// weakly: a listener that stopped accepting drops its own (its remaining
/// connections are then out of reach of [`Registries::close_denied`], as
/// of the idle timeout).
#[derive(Debug, Default)]
pub(crate) struct Registries(Mutex<Vec<Weak<Registry>>>);

impl Registries {
    fn live(&self) -> std::sync::MutexGuard<'_, Vec<Weak<Registry>>> {
        let mut all = self.0.lock().unwrap_or_else(|e| e.into_inner());
        all.retain(|r| r.strong_count() > 0);
        all
    }

    /// Adds a listener's registry (dropping those of stopped listeners).
    pub(crate) fn add(&self, registry: &Arc<Registry>) {
        self.live().push(Arc::downgrade(registry));
    }

    /// Closes every connection `deny` denies on every listener; how many.
    pub(crate) fn close_denied(&self, deny: &DenyList) -> usize {
        let registries: Vec<Arc<Registry>> = self.live().iter().filter_map(Weak::upgrade).collect();
        registries.iter().map(|r| r.close_denied(deny)).sum()
    }

    /// Listeners whose registry is still alive.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.live().len()
    }
}

/// The first pause after a resource error: 10 ms.
pub const ACCEPT_BACKOFF_MIN: Duration = Duration::from_millis(10);
/// The longest pause: 1 s.
pub const ACCEPT_BACKOFF_MAX: Duration = Duration::from_secs(1);

/// Whether an accept error means the process or the system is out of a
/// resource (file descriptors, buffers, memory): accepting again at once
/// fails the same way.
pub fn is_resource_error(e: &io::Error) -> bool {
    // EMFILE (24), ENFILE (23) and ENOMEM (12) are the same on Linux and
    // the BSDs; ENOBUFS is 105 on Linux, 55 on the BSDs and macOS.
    const ENOBUFS: i32 = if cfg!(target_os = "linux") { 105 } else { 55 };
    matches!(e.raw_os_error(), Some(23 | 24 | 12))
        || e.raw_os_error() == Some(ENOBUFS)
        || e.kind() == io::ErrorKind::OutOfMemory
}

/// A stream of accepted connections that backs off on resource errors
/// ([`is_resource_error`]): such an error is logged (rate-limited) and not
/// yielded, and the next accept waits 10 ms, doubling up to 1 s, until one
/// succeeds. Other errors (a connection reset before it was accepted) are
/// yielded as they come. Every accept loop of the node reads through one.
pub struct AcceptBackoff<S> {
    inner: S,
    pause: Option<Pin<Box<Sleep>>>,
    next: Duration,
    log: Arc<FailureLog>,
}

impl<S> fmt::Debug for AcceptBackoff<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AcceptBackoff")
            .field("next", &self.next)
            .field("pausing", &self.pause.is_some())
            .finish_non_exhaustive()
    }
}

impl<S> AcceptBackoff<S> {
    /// Wraps `inner`.
    pub fn new(inner: S) -> AcceptBackoff<S> {
        AcceptBackoff::with_log(inner, Arc::new(FailureLog::default()))
    }

    pub(crate) fn with_log(inner: S, log: Arc<FailureLog>) -> AcceptBackoff<S> {
        AcceptBackoff {
            inner,
            pause: None,
            next: ACCEPT_BACKOFF_MIN,
            log,
        }
    }
}

impl<S, T> Stream for AcceptBackoff<S>
where
    S: Stream<Item = io::Result<T>> + Unpin,
{
    type Item = io::Result<T>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        loop {
            if let Some(pause) = self.pause.as_mut() {
                std::task::ready!(pause.as_mut().poll(cx));
                self.pause = None;
            }
            match std::task::ready!(Pin::new(&mut self.inner).poll_next(cx)) {
                Some(Err(e)) if is_resource_error(&e) => {
                    let wait = self.next;
                    if let Some(suppressed) =
                        self.log.admit(HandshakeFailure::Accept, Instant::now())
                    {
                        tracing::warn!(
                            error = %e,
                            suppressed,
                            pause = %show(&wait),
                            "accepting a connection failed; pausing before the next accept"
                        );
                    }
                    self.pause = Some(Box::pin(tokio::time::sleep(wait)));
                    self.next = (wait * 2).min(ACCEPT_BACKOFF_MAX);
                }
                Some(Ok(t)) => {
                    self.next = ACCEPT_BACKOFF_MIN;
                    return Poll::Ready(Some(Ok(t)));
                }
                other => return Poll::Ready(other),
            }
        }
    }
}

#[cfg(test)]
mod tests;
