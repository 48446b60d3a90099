//! [`Client`]: leader following, retries within a deadline, request ids.

use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::time::Instant;
use tonic::transport::{Channel, Endpoint};
use tonic::Status;
use tracing::debug;
use warden_proto::v1::{
    self, acquire_response::Event, call_request::Call, call_response::Answer,
    lease_client::LeaseClient, lock_client::LockClient,
};

use crate::calls::{CallStream, OpenCall};
use crate::error::{
    certainly_not_acted, connection_refused, describe, disposition, is_server_unavailable,
    never_connected, not_tls, ClientError, Disposition,
};
use crate::published::Published;
use crate::requests::{InFlight, RequestIds};
use crate::routing::{leader_hint, parse_endpoint, CallPlan};
use crate::transport::{Connector, TcpConnector};
use crate::types::{
    millis, AcquireOptions, AcquireResult, CancelWaitOutcome, ClientOptions, ClusterStatus,
    LeaseGrantResult, LeaseInfo, Queued, ReleaseResult, RenewResult, StatusResult, ValidateResult,
};
use crate::ClockError;

/// Largest id the cluster hands out (2^53 − 1); the client id stays below it
/// too, so it is safe in JSON.
const MAX_ID: u64 = (1 << 53) - 1;

/// Which failed attempts of a call the retry loop repeats (S7).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Retry {
    /// Every failure that is not a final answer, timeouts and dropped
    /// connections included: for reads, renews (each attempt is a new
    /// renew) and mutations with a request id (the server applies those
    /// once).
    Always,
    /// Only attempts that certainly did nothing
    /// ([`certainly_not_acted`](crate::error::certainly_not_acted): the
    /// connection never opened, a redirect to the leader, `Unimplemented`);
    /// any other failure ends the call with [`ClientError::OutcomeUnknown`].
    /// An attempt starts only while a whole `attempt_timeout` still fits
    /// before the deadline, so the deadline never cuts an attempt that may
    /// have reached the leader (its outcome would be unknown). For
    /// membership changes, which carry no request id.
    IfCertainlyNotApplied {
        /// The longest one attempt may take (the attempt bounds itself).
        attempt_timeout: Duration,
    },
}

/// An async client of a Warden cluster. Cheap to clone: clones share
/// connections, the cached leader, the client id and the request-id counter.
///
/// Every call goes to the last known leader first. A node that is not the
/// leader answers `Unavailable` with the leader's address in the
/// `warden-leader` metadata entry when it knows it; the call is then re-sent
/// there at once. Otherwise the next endpoint is tried at once, and after a
/// whole round of endpoints failed the client pauses (backoff doubling from
/// 25 ms, capped by [`ClientOptions::backoff_cap`]). Each attempt waits at
/// most [`ClientOptions::attempt_timeout`]; the whole call at most
/// [`ClientOptions::deadline`] (plus the wait, for a waiting acquire), after
/// which it fails with [`ClientError::NoQuorum`] (servers answered but none
/// could serve) or [`ClientError::Unavailable`] (none reachable), naming the
/// addresses tried.
///
/// Mutating calls (acquire, release) carry this client's id and a request id
/// that every retry reuses, so a retry after a lost reply or a leader change
/// never takes effect twice (docs/semantics.md S7).
#[derive(Clone, Debug)]
pub struct Client {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    /// The endpoints given to `connect`, canonical `host:port`.
    endpoints: Vec<String>,
    options: ClientOptions,
    /// Opens the channels: [`ClientOptions::connector`], else the TLS
    /// connector of [`ClientOptions::tls`], else plain TCP.
    connector: Arc<dyn Connector>,
    /// Random, non-zero, below 2^53; chosen once per client.
    client_id: u64,
    /// Lazily connected channels by `host:port` (endpoints and leader hints).
    channels: Mutex<HashMap<String, Channel>>,
    /// Each node's `Calls` stream, opened on first use, or when a node that
    /// does not serve `Calls` was last found so (it gets unary calls until
    /// `recheck_calls_after` has passed).
    call_streams: Mutex<HashMap<String, NodeCalls>>,
    /// The address that last served a call; tried first. Cleared when it
    /// fails.
    leader: Mutex<Option<String>>,
    /// Request-id bookkeeping for mutating calls (S7).
    request_ids: Arc<Mutex<RequestIds>>,
    /// What the server publishes in `ClusterStatus` (`published.rs`).
    published: tokio::sync::Mutex<Published>,
    /// Set once a `ClusterStatus` answer was applied to `published`: after
    /// that a mutating call takes no lock for it.
    published_loaded: AtomicBool,
    /// Renew sequence numbers: one per attempt, echoed by the server (S5).
    renew_sequence: AtomicU64,
}

/// How the client reaches one node's `Lock` calls.
#[derive(Debug)]
enum NodeCalls {
    /// Over this `Calls` stream (replaced when it has closed).
    Stream(CallStream),
    /// With unary calls: the node answered `Unimplemented` to `Calls` at
    /// `since`.
    Unary { since: tokio::time::Instant },
}

impl Client {
    /// Builds a client for a cluster reachable at `endpoints` (`host:port`,
    /// any members; the leader is found by following hints). No connection is
    /// made here: connections open on first use, so this succeeds even when
    /// every node is down.
    ///
    /// # Errors
    ///
    /// [`ClientError::InvalidEndpoint`] when an endpoint is not `host:port`;
    /// [`ClientError::InvalidArgument`] when the list is empty, an option is
    /// zero, or both [`ClientOptions::tls`] and [`ClientOptions::connector`]
    /// are set; [`ClientError::Tls`] naming the file when the TLS files
    /// cannot be used (read here, once).
    pub async fn connect(
        endpoints: Vec<String>,
        options: ClientOptions,
    ) -> Result<Client, ClientError> {
        Client::new(endpoints, options)
    }

    fn new(endpoints: Vec<String>, options: ClientOptions) -> Result<Client, ClientError> {
        if endpoints.is_empty() {
            return Err(ClientError::InvalidArgument {
                field: Some("endpoints".into()),
                message: "endpoints: at least one host:port is required".into(),
            });
        }
        for (name, value) in [
            ("deadline", options.deadline),
            ("attempt_timeout", options.attempt_timeout),
        ] {
            if value.is_zero() {
                return Err(ClientError::InvalidArgument {
                    field: Some(name.into()),
                    message: format!("{name}: must be greater than 0"),
                });
            }
        }
        let mut canonical: Vec<String> = Vec::with_capacity(endpoints.len());
        for raw in &endpoints {
            let endpoint = parse_endpoint(raw).map_err(|message| ClientError::InvalidEndpoint {
                endpoint: raw.clone(),
                message,
            })?;
            if !canonical.contains(&endpoint) {
                canonical.push(endpoint);
            }
        }
        let connector: Arc<dyn Connector> = match (&options.tls, &options.connector) {
            (Some(_), Some(_)) => {
                return Err(ClientError::InvalidArgument {
                    field: Some("tls".into()),
                    message: "tls and connector: set one of them (a connector does its own TLS)"
                        .into(),
                })
            }
            (None, Some(connector)) => connector.clone(),
            (Some(tls), None) => crate::tls::connector(tls)?,
            (None, None) => Arc::new(TcpConnector),
        };
        Ok(Client {
            inner: Arc::new(Inner {
                endpoints: canonical,
                options,
                connector,
                client_id: rand::random_range(1..=MAX_ID),
                channels: Mutex::new(HashMap::new()),
                call_streams: Mutex::new(HashMap::new()),
                leader: Mutex::new(None),
                request_ids: Arc::new(Mutex::new(RequestIds::default())),
                published: tokio::sync::Mutex::new(Published::default()),
                published_loaded: AtomicBool::new(false),
                renew_sequence: AtomicU64::new(0),
            }),
        })
    }

    /// This client's id, sent with every mutating request (S7).
    pub fn client_id(&self) -> u64 {
        self.inner.client_id
    }

    /// The endpoints, canonical `host:port`, without duplicates.
    pub fn endpoints(&self) -> &[String] {
        &self.inner.endpoints
    }

    /// The options in force.
    pub fn options(&self) -> &ClientOptions {
        &self.inner.options
    }

    /// The address that last served a call (the leader, as far as the client
    /// knows), if any.
    pub fn cached_leader(&self) -> Option<String> {
        self.inner
            .leader
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Acquires `resource`. Equivalent to [`acquire_with_progress`] with no
    /// progress callback.
    ///
    /// [`acquire_with_progress`]: Client::acquire_with_progress
    pub async fn acquire(
        &self,
        resource: impl Into<String>,
        options: AcquireOptions,
    ) -> Result<AcquireResult, ClientError> {
        self.acquire_with_progress(resource, options, |_| {}).await
    }

    /// Acquires `resource` on a new lease with `options.ttl` (or on
    /// `options.lease_id`), waiting up to `options.wait` in the server's queue
    /// (zero: try once). `on_queued` sees each queue position report.
    ///
    /// While queued, the waiter's lease (named by the `Queued` messages) is
    /// renewed every TTL/3, so a wait longer than the TTL does not lose its
    /// place (a waiter whose lease dies is removed, S8). Keep-alive stops when
    /// this returns: renew a granted lease yourself (or with a later session
    /// type) within its TTL.
    ///
    /// A refusal because of the resource's state is not an error: it is
    /// [`AcquireResult::NotGranted`] (held, lock-delay, wait ran out). If the
    /// stream drops mid-wait (a leader change drops every stream) the same
    /// request, with the same request id, is re-sent to the new leader, which
    /// re-attaches it to its waiter; this repeats until `wait` plus
    /// [`ClientOptions::deadline`] has passed.
    ///
    /// # Errors
    ///
    /// [`ClientError::InvalidArgument`] for a bad resource name, TTL, wait or
    /// lock-delay (the message names the field and the limit);
    /// [`ClientError::NotFound`] for an unknown `lease_id`;
    /// [`ClientError::NoQuorum`] / [`ClientError::Unavailable`] when the
    /// deadline ran out; [`ClientError::RequestExpired`] if the server forgot
    /// a retried request.
    pub async fn acquire_with_progress(
        &self,
        resource: impl Into<String>,
        options: AcquireOptions,
        on_queued: impl Fn(Queued) + Send + Sync,
    ) -> Result<AcquireResult, ClientError> {
        self.acquire_inner(resource.into(), Vec::new(), options, on_queued, true)
            .await
    }

    /// Acquires every one of `resources` together, as one multi-lock
    /// (docs/semantics.md "Multi-locks"; Curator `InterProcessMultiLock`):
    /// all are granted in one committed entry, each with its own fencing
    /// token ([`AcquireResult::Granted`]'s `grants`, in this order), or none
    /// is. While waiting it queues on every resource, and it is granted once
    /// it is at the head of every queue and all are free, so two multi-locks
    /// that name the same resources in different orders never deadlock.
    /// Release it by naming any one of its resources (with that resource's
    /// token): all are freed. Mutexes only (`options.kind` must be
    /// [`GrantKind::Mutex`](crate::GrantKind::Mutex)).
    ///
    /// # Errors
    ///
    /// As [`acquire_with_progress`](Client::acquire_with_progress);
    /// `InvalidArgument` naming `resources` for an empty list, a duplicate
    /// or more than 64; `FailedPrecondition` naming `resources` when the
    /// lease already holds or waits on one of them, or `kind` when one of
    /// them is a semaphore or a read-write lock now.
    pub async fn acquire_all(
        &self,
        resources: Vec<String>,
        options: AcquireOptions,
    ) -> Result<AcquireResult, ClientError> {
        self.acquire_all_with_progress(resources, options, |_| {})
            .await
    }

    /// [`acquire_all`](Client::acquire_all) with a callback that sees each
    /// queue position report (of the first resource).
    ///
    /// # Errors
    ///
    /// As [`acquire_all`](Client::acquire_all).
    pub async fn acquire_all_with_progress(
        &self,
        resources: Vec<String>,
        options: AcquireOptions,
        on_queued: impl Fn(Queued) + Send + Sync,
    ) -> Result<AcquireResult, ClientError> {
        let first = resources.first().cloned().unwrap_or_default();
        self.acquire_inner(first, resources, options, on_queued, true)
            .await
    }

    /// The acquire; `renew_while_waiting` false when the caller keeps the
    /// lease alive itself (a [`Session`](crate::Session) already renews its
    /// lease: a second keep-alive would renew it twice).
    pub(crate) async fn acquire_inner(
        &self,
        resource: String,
        resources: Vec<String>,
        options: AcquireOptions,
        on_queued: impl Fn(Queued) + Send + Sync,
        renew_while_waiting: bool,
    ) -> Result<AcquireResult, ClientError> {
        let in_flight = self.begin_request().await;
        let (mode, limit) = options.kind.wire();
        let request = v1::AcquireRequest {
            header: Some(self.header(&in_flight)),
            resource,
            ttl_ms: if options.lease_id.is_some() {
                0
            } else {
                millis(options.ttl)
            },
            lease_id: options.lease_id.unwrap_or(0),
            wait_timeout_ms: millis(options.wait),
            lock_delay_ms: millis(options.lock_delay),
            mode: mode as i32,
            limit,
            // A multi-lock's every resource (the first is `resource` too);
            // empty for one resource.
            resources,
            max_hold_ms: options.max_hold.map(millis).unwrap_or(0),
        };
        // A waiting acquire that is abandoned (this future dropped) or ends
        // in an error takes its wait back with a committed CancelWait, sent
        // in the background: a dropped stream alone cancels nothing (S8).
        let mut abandon = AbandonedWait {
            client: self.clone(),
            resource: request.resource.clone(),
            in_flight: Some(in_flight),
            armed: !options.wait.is_zero(),
        };
        let started = Instant::now();
        let wait_deadline = checked_deadline(started, options.wait);
        let deadline = checked_deadline(wait_deadline, self.inner.options.deadline);
        let attempt_timeout = self.inner.options.attempt_timeout;
        // Each Queued message names the waiter's lease; the keep-alive below
        // renews it every TTL/3 while the acquire waits (a waiter whose lease
        // dies is removed, docs/semantics.md S8).
        let (waiting_lease_tx, waiting_lease_rx) = tokio::sync::watch::channel(None::<u64>);
        let report_queued = move |q: Queued| {
            waiting_lease_tx.send_replace(Some(q.lease_id));
            on_queued(q);
        };
        let on_queued = &report_queued;
        let request = &request;
        let acquire = self.call_at("acquire", deadline, move |address, channel| async move {
            let mut answers = self
                .start_acquire(&address, channel, request, attempt_timeout)
                .await?;
            loop {
                // Before the wait ends, the final message may take the
                // rest of the wait; after, one attempt timeout (the
                // server reports a timeout once its removal committed).
                let budget = wait_deadline
                    .saturating_duration_since(Instant::now())
                    .saturating_add(attempt_timeout);
                let message = tokio::time::timeout(budget, answers.next())
                    .await
                    .map_err(|_| attempt_timed_out(budget))??;
                match message.and_then(|m| m.event) {
                    Some(Event::Queued(q)) => on_queued(Queued::from(q)),
                    Some(Event::Granted(g)) => return Ok(AcquireResult::from(g)),
                    Some(Event::NotGranted(n)) => return Ok(AcquireResult::from(n)),
                    // A stream that ends without a final message was cut:
                    // re-send the same request id.
                    None => {
                        return Err(Status::aborted(
                            "acquire stream ended without a final message",
                        ))
                    }
                }
            }
        });
        let known_ttl_ms = options.lease_id.is_none().then(|| millis(options.ttl));
        let keep_alive = async {
            if renew_while_waiting {
                self.keep_waiting_lease_alive(waiting_lease_rx, known_ttl_ms)
                    .await
            } else {
                std::future::pending().await
            }
        };
        let result = tokio::select! {
            result = acquire => result,
            never = keep_alive => match never {},
        };
        if result
            .as_ref()
            .map_or_else(ClientError::is_refusal, |_| true)
        {
            // A final answer, or a refusal (nothing was queued): nothing
            // waits any more, and a cancel would only commit an entry.
            abandon.armed = false;
        }
        drop(abandon);
        result
    }

    /// Takes back this client's waiting acquire `acquire_request_id` of
    /// `resource` with a committed, exactly-once `Lock/CancelWait` (its own
    /// request id, S7): the waiter leaves the queue, a grant that won the
    /// race is released, an acquire not applied yet is refused when it
    /// applies (docs/semantics.md S8).
    ///
    /// # Errors
    ///
    /// `InvalidArgument` for a bad resource or request id; `NoQuorum` /
    /// `Unavailable` when no leader committed it within the deadline.
    pub(crate) async fn cancel_wait(
        &self,
        acquire_request_id: u64,
        resource: String,
    ) -> Result<CancelWaitOutcome, ClientError> {
        let in_flight = self.begin_request().await;
        let request = v1::CancelWaitRequest {
            header: Some(self.header(&in_flight)),
            acquire_request_id,
            resource,
        };
        let deadline = checked_deadline(Instant::now(), self.inner.options.deadline);
        let attempt_timeout = self.inner.options.attempt_timeout;
        let request = &request;
        let result = self
            .call("cancel_wait", deadline, move |mut client| async move {
                let reply = within(attempt_timeout, client.cancel_wait(request.clone())).await?;
                Ok(match reply.outcome.as_str() {
                    "removed" => CancelWaitOutcome::Removed,
                    "released" => CancelWaitOutcome::Released {
                        fencing_token: reply.fencing_token,
                    },
                    "preempted" => CancelWaitOutcome::Preempted,
                    _ => CancelWaitOutcome::Nothing,
                })
            })
            .await;
        drop(in_flight);
        result
    }

    /// Renews the lease named in `lease` (once a Queued message named it)
    /// every TTL/3 for as long as it is polled; the acquire it serves drops
    /// it when the final answer arrives. `ttl_ms` is the new lease's TTL, or
    /// `None` for an existing lease (renewed at once to learn its TTL).
    async fn keep_waiting_lease_alive(
        &self,
        mut lease: tokio::sync::watch::Receiver<Option<u64>>,
        ttl_ms: Option<u64>,
    ) -> std::convert::Infallible {
        let lease_id = loop {
            if let Some(id) = *lease.borrow_and_update() {
                break id;
            }
            if lease.changed().await.is_err() {
                return std::future::pending().await;
            }
        };
        let mut period = ttl_ms.map_or(Duration::ZERO, |ttl| Duration::from_millis(ttl / 3));
        loop {
            tokio::time::sleep(period).await;
            match self.renew(lease_id).await {
                Ok(renewed) => period = Duration::from_millis((renewed.ttl_ms / 3).max(100)),
                Err(ClientError::NotFound { .. }) => return std::future::pending().await,
                Err(e) => {
                    debug!(lease_id, error = %e, "keep-alive of a waiting acquire failed; retrying");
                    period = self.inner.options.backoff_cap;
                }
            }
        }
    }

    /// Renews `lease_id`: its countdown restarts with its full TTL once the
    /// renew has committed (S4). Each attempt is a new renew with a new
    /// sequence number, which the server echoes; the result names the attempt
    /// acknowledged.
    ///
    /// # Errors
    ///
    /// [`ClientError::NotFound`] when the lease is gone (expired or
    /// released): it cannot be renewed back to life (S6);
    /// [`ClientError::NoQuorum`] / [`ClientError::Unavailable`] when the
    /// deadline ran out; [`ClientError::Transport`] if the reply does not echo
    /// the attempt's sequence number.
    pub async fn renew(&self, lease_id: u64) -> Result<RenewResult, ClientError> {
        let deadline = checked_deadline(Instant::now(), self.inner.options.deadline);
        let origin = Instant::now();
        let now = move || Ok(origin.elapsed());
        Ok(self.renew_sent_at(lease_id, deadline, &now).await?.0)
    }

    /// [`renew`](Client::renew) until `deadline`, also returning `now()` read
    /// just before the acknowledged attempt was sent (S5: validity counts
    /// from the send of the attempt whose echo came back). A failed `now()`
    /// ends the call before that attempt is sent, with
    /// [`ClientError::SessionLost`] ([`Lost::ClockFailed`](crate::Lost)).
    pub(crate) async fn renew_sent_at(
        &self,
        lease_id: u64,
        deadline: Instant,
        now: &(dyn Fn() -> Result<Duration, ClockError> + Sync),
    ) -> Result<(RenewResult, Duration), ClientError> {
        let attempt_timeout = self.inner.options.attempt_timeout;
        let client_id = self.inner.client_id;
        let sequences = &self.inner.renew_sequence;
        self.call("renew", deadline, move |mut client| async move {
            let sequence = sequences.fetch_add(1, Ordering::Relaxed) + 1;
            let request = v1::RenewRequest {
                lease_id,
                client_id,
                sequence,
            };
            let sent_at = match now() {
                Ok(sent_at) => sent_at,
                // Not retried: a validity from a made-up time is a lie (S5).
                Err(error) => return Ok(Err(crate::Lost::ClockFailed { error }.into())),
            };
            let reply = within(attempt_timeout, client.renew(request)).await?;
            if reply.sequence != sequence {
                // Not retried: a server that does not echo would fail again.
                return Ok(Err(ClientError::Transport {
                    message: format!(
                        "renew reply carries sequence {} but the attempt sent {sequence}",
                        reply.sequence
                    ),
                }));
            }
            Ok(Ok((
                RenewResult {
                    lease_id: reply.lease_id,
                    ttl_ms: reply.ttl_ms,
                    sequence,
                },
                sent_at,
            )))
        })
        .await?
    }

    /// Publishes `value` for `lease_id` on `resource` (elections; see
    /// [`Election`](crate::Election)). `fencing_token` 0: a candidate's
    /// value; otherwise the lease must hold `resource` with exactly that
    /// grant. Idempotent, so retried freely across leader changes.
    ///
    /// # Errors
    ///
    /// [`ClientError::InvalidArgument`] for a value over 4,096 bytes or a bad
    /// resource; [`ClientError::NotFound`] when the lease is not live;
    /// [`ClientError::FailedPrecondition`] when the lease no longer holds that
    /// grant; [`ClientError::NoQuorum`] / [`ClientError::Unavailable`] when
    /// the deadline ran out.
    pub async fn proclaim(
        &self,
        resource: impl Into<String>,
        lease_id: u64,
        fencing_token: u64,
        value: impl Into<String>,
    ) -> Result<(), ClientError> {
        let request = v1::ProclaimRequest {
            resource: resource.into(),
            lease_id,
            fencing_token,
            value: value.into(),
        };
        let deadline = checked_deadline(Instant::now(), self.inner.options.deadline);
        let attempt_timeout = self.inner.options.attempt_timeout;
        let request = &request;
        self.call("proclaim", deadline, move |mut client| async move {
            within(attempt_timeout, client.proclaim(request.clone())).await?;
            Ok(())
        })
        .await
    }

    /// Creates a session: a lease with no lock, which lives while renewed
    /// and does not end when its last lock is released. TTL: 1 s ..= 1 h.
    ///
    /// Errors: `InvalidArgument` naming `ttl_ms`; `ResourceExhausted` when
    /// the cluster's lease limit is reached; `NoQuorum`/`Unavailable`.
    /// Retried across leader changes with the same request id (S7).
    pub async fn lease_grant(&self, ttl: Duration) -> Result<LeaseGrantResult, ClientError> {
        let in_flight = self.begin_request().await;
        let request = v1::LeaseGrantRequest {
            header: Some(self.header(&in_flight)),
            ttl_ms: u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX),
        };
        let deadline = checked_deadline(Instant::now(), self.inner.options.deadline);
        let attempt_timeout = self.inner.options.attempt_timeout;
        let request = &request;
        let result = self
            .call_channel("lease grant", deadline, move |channel| async move {
                let mut client = LeaseClient::new(channel);
                let reply = within(attempt_timeout, client.lease_grant(*request)).await?;
                Ok(LeaseGrantResult {
                    lease_id: reply.lease_id,
                    ttl_ms: reply.ttl_ms,
                })
            })
            .await;
        drop(in_flight);
        result
    }

    /// A lease's TTL, time left (in the leader's cluster time),
    /// locks and waits; a linearizable read. `NotFound` if not live.
    pub async fn lease_time_to_live(&self, lease_id: u64) -> Result<LeaseInfo, ClientError> {
        let deadline = checked_deadline(Instant::now(), self.inner.options.deadline);
        let attempt_timeout = self.inner.options.attempt_timeout;
        self.call_channel("lease ttl", deadline, move |channel| async move {
            let mut client = LeaseClient::new(channel);
            let reply = within(
                attempt_timeout,
                client.lease_time_to_live(v1::LeaseTimeToLiveRequest { lease_id }),
            )
            .await?;
            Ok(LeaseInfo {
                lease_id: reply.lease_id,
                ttl_ms: reply.ttl_ms,
                ttl_remaining_ms: reply.ttl_remaining_ms,
                locks: reply.locks,
                waits: reply.waits,
                graced: reply.graced,
            })
        })
        .await
    }

    /// Revokes a lease: every lock it holds is released (cleanly: no
    /// lock-delay) and its waits are removed, in one committed entry.
    /// Returns the lease id.
    ///
    /// Errors: `NotFound` if the lease is not live; `NoQuorum`/`Unavailable`
    /// when no leader commits it within the deadline. Retried across leader
    /// changes with the same request id (S7).
    pub async fn revoke(&self, lease_id: u64) -> Result<u64, ClientError> {
        let in_flight = self.begin_request().await;
        let request = v1::LeaseRevokeRequest {
            header: Some(self.header(&in_flight)),
            lease_id,
        };
        let deadline = checked_deadline(Instant::now(), self.inner.options.deadline);
        let attempt_timeout = self.inner.options.attempt_timeout;
        let request = &request;
        let result = self
            .call("revoke", deadline, move |mut client| async move {
                let reply = within(attempt_timeout, client.lease_revoke(*request)).await?;
                Ok(reply.lease_id)
            })
            .await;
        drop(in_flight);
        result
    }

    /// Releases the grant of `resource` held by `lease_id` (with `None`, the
    /// lease's single lock; refused if it holds more than one). With
    /// `fencing_token`, only that exact grant is released: a late release
    /// carrying an old token never frees a newer grant (S6).
    ///
    /// # Errors
    ///
    /// [`ClientError::NotFound`] for an unknown lease or resource;
    /// [`ClientError::FailedPrecondition`] for a stale token, another holder,
    /// or a lease holding several locks with no resource named;
    /// [`ClientError::NoQuorum`] / [`ClientError::Unavailable`] when the
    /// deadline ran out.
    pub async fn release(
        &self,
        lease_id: u64,
        resource: Option<String>,
        fencing_token: Option<u64>,
    ) -> Result<ReleaseResult, ClientError> {
        let in_flight = self.begin_request().await;
        let request = v1::ReleaseRequest {
            header: Some(self.header(&in_flight)),
            resource: resource.unwrap_or_default(),
            lease_id,
            fencing_token: fencing_token.unwrap_or(0),
        };
        let deadline = checked_deadline(Instant::now(), self.inner.options.deadline);
        let attempt_timeout = self.inner.options.attempt_timeout;
        let request = &request;
        let result = self
            .call_at("release", deadline, move |address, channel| async move {
                let reply = self
                    .release_at(&address, channel, request, attempt_timeout)
                    .await?;
                Ok(ReleaseResult {
                    resource: reply.resource,
                    lease_id: reply.lease_id,
                    released: reply.released,
                })
            })
            .await;
        drop(in_flight);
        result
    }

    /// Reads `resource`'s holder (linearizable: served by the leader after a
    /// read-index round).
    ///
    /// # Errors
    ///
    /// [`ClientError::InvalidArgument`] for a bad resource name;
    /// [`ClientError::NoQuorum`] / [`ClientError::Unavailable`] when the
    /// deadline ran out.
    pub async fn status(&self, resource: impl Into<String>) -> Result<StatusResult, ClientError> {
        let request = v1::StatusRequest {
            resource: resource.into(),
        };
        let deadline = checked_deadline(Instant::now(), self.inner.options.deadline);
        let attempt_timeout = self.inner.options.attempt_timeout;
        let request = &request;
        self.call("status", deadline, move |mut client| async move {
            let reply = within(attempt_timeout, client.status(request.clone())).await?;
            Ok(StatusResult::from(reply))
        })
        .await
    }

    /// Asks the cluster whether `fencing_token` is the current grant of
    /// `resource` (a linearizable read, Chubby's CheckSequencer).
    ///
    /// Advisory: the answer may be stale by the time it is used (the holder
    /// may lose the lock a moment later). Only the resource-side check
    /// (`warden-fence`: keep the highest token accepted, reject a lower one)
    /// closes that window.
    ///
    /// # Errors
    ///
    /// [`ClientError::InvalidArgument`] for a bad resource name or token;
    /// [`ClientError::NoQuorum`] / [`ClientError::Unavailable`] when the
    /// deadline ran out.
    pub async fn validate(
        &self,
        resource: impl Into<String>,
        fencing_token: u64,
    ) -> Result<ValidateResult, ClientError> {
        let request = v1::ValidateRequest {
            resource: resource.into(),
            fencing_token,
        };
        let deadline = checked_deadline(Instant::now(), self.inner.options.deadline);
        let attempt_timeout = self.inner.options.attempt_timeout;
        let request = &request;
        self.call("validate", deadline, move |mut client| async move {
            let reply = within(attempt_timeout, client.validate(request.clone())).await?;
            Ok(ValidateResult::from(reply))
        })
        .await
    }

    /// Membership, roles, indexes, timing and bounds, as seen by the leader.
    ///
    /// # Errors
    ///
    /// [`ClientError::NoQuorum`] when no leader answered before the deadline
    /// (e.g. while a cluster is still electing); [`ClientError::Unavailable`]
    /// when no node was reachable.
    pub async fn cluster_status(&self) -> Result<ClusterStatus, ClientError> {
        self.cluster_status_within(self.inner.options.deadline)
            .await
    }

    /// [`cluster_status`](Client::cluster_status) with its own deadline,
    /// e.g. for polling until a fresh cluster has elected a leader.
    ///
    /// # Errors
    ///
    /// As [`cluster_status`](Client::cluster_status).
    pub async fn cluster_status_within(
        &self,
        deadline: Duration,
    ) -> Result<ClusterStatus, ClientError> {
        let deadline = checked_deadline(Instant::now(), deadline);
        let attempt_timeout = self.inner.options.attempt_timeout;
        self.call("cluster_status", deadline, move |mut client| async move {
            let reply = within(
                attempt_timeout,
                client.cluster_status(v1::ClusterStatusRequest {}),
            )
            .await?;
            Ok(ClusterStatus::from(reply))
        })
        .await
    }

    /// The node's `Calls` stream (opened now if there is none or it ended),
    /// or `None` if the node was found not to serve `Calls` less than
    /// `recheck_calls_after` ago.
    fn call_stream(&self, address: &str, channel: &Channel) -> Option<CallStream> {
        let mut streams = self
            .inner
            .call_streams
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        match streams.get(address) {
            Some(NodeCalls::Unary { since })
                if since.elapsed() < self.inner.options.recheck_calls_after =>
            {
                None
            }
            Some(NodeCalls::Stream(stream)) if !stream.is_closed() => Some(stream.clone()),
            _ => {
                let stream = CallStream::open(channel.clone());
                streams.insert(address.to_string(), NodeCalls::Stream(stream.clone()));
                Some(stream)
            }
        }
    }

    /// Starts `call` on the node's `Calls` stream and waits at most `timeout`
    /// for its first answer. `Ok(None)` when the node does not serve `Calls`
    /// (it answered `Unimplemented`; it is remembered for
    /// `recheck_calls_after`) or the call is too
    /// large for every node's stream (`calls::fits_any_node`): use the unary
    /// call.
    async fn first_answer(
        &self,
        address: &str,
        channel: &Channel,
        call: Call,
        timeout: Duration,
    ) -> Result<Option<(Answer, OpenCall)>, Status> {
        if !crate::calls::fits_any_node(&call) {
            return Ok(None);
        }
        let Some(stream) = self.call_stream(address, channel) else {
            return Ok(None);
        };
        let mut open = stream.start(call)?;
        match tokio::time::timeout(timeout, open.next()).await {
            Err(_) => Err(attempt_timed_out(timeout)),
            Ok(Err(status)) if status.code() == tonic::Code::Unimplemented => {
                debug!(address, "node does not serve Calls; using unary calls");
                self.inner
                    .call_streams
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .insert(
                        address.to_string(),
                        NodeCalls::Unary {
                            since: tokio::time::Instant::now(),
                        },
                    );
                Ok(None)
            }
            Ok(answer) => Ok(Some((answer?, open))),
        }
    }

    /// One attempt to start an acquire at `address`: on its `Calls` stream,
    /// else as a unary `Acquire`.
    async fn start_acquire(
        &self,
        address: &str,
        channel: Channel,
        request: &v1::AcquireRequest,
        timeout: Duration,
    ) -> Result<AcquireAnswers, Status> {
        let call = Call::Acquire(request.clone());
        if let Some((first, open)) = self.first_answer(address, &channel, call, timeout).await? {
            return Ok(AcquireAnswers::Call {
                first: Some(first),
                open,
            });
        }
        let stream = within(timeout, LockClient::new(channel).acquire(request.clone())).await?;
        Ok(AcquireAnswers::Stream(stream))
    }

    /// One attempt of a release at `address`: on its `Calls` stream, else as
    /// a unary `Release`.
    async fn release_at(
        &self,
        address: &str,
        channel: Channel,
        request: &v1::ReleaseRequest,
        timeout: Duration,
    ) -> Result<v1::ReleaseResponse, Status> {
        let call = Call::Release(request.clone());
        match self.first_answer(address, &channel, call, timeout).await? {
            Some((Answer::Release(reply), _)) => Ok(reply),
            Some((other, _)) => Err(unexpected_answer("release", &other)),
            None => within(timeout, LockClient::new(channel).release(request.clone())).await,
        }
    }

    /// A new request id for a mutating call (S7); answered when dropped.
    /// The first one reads what the server publishes (its window).
    pub(crate) async fn begin_request(&self) -> InFlight {
        if !self.inner.published_loaded.load(Ordering::Acquire) {
            drop(self.published().await);
        }
        InFlight::begin(&self.inner.request_ids).await
    }

    /// The settings the server publishes, read first if they are due
    /// (`published.rs`): one `ClusterStatus` within one attempt's timeout;
    /// a failure keeps the defaults and is tried again later.
    async fn published(&self) -> tokio::sync::MutexGuard<'_, Published> {
        let mut published = self.inner.published.lock().await;
        if !self.inner.published_loaded.load(Ordering::Acquire) && published.due(Instant::now()) {
            match self
                .cluster_status_within(self.inner.options.attempt_timeout)
                .await
            {
                Ok(status) => {
                    self.inner
                        .request_ids
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .set_window(status.max_requests_in_flight);
                    if !status.election_prefix.is_empty() {
                        published.election_prefix = Some(status.election_prefix);
                    }
                    self.inner.published_loaded.store(true, Ordering::Release);
                }
                Err(e) => {
                    debug!(error = %e, "published settings not read; defaults kept");
                    published.failed_at = Some(Instant::now());
                }
            }
        }
        published
    }

    /// The lock-table key of election `name`: the server's published
    /// election prefix (the default [`ELECTION_PREFIX`](crate::ELECTION_PREFIX)
    /// until it is known) followed by `name`.
    pub async fn election_key(&self, name: &str) -> String {
        format!("{}{name}", self.published().await.election_prefix())
    }

    /// The request header of `in_flight`: this client's id, the request id
    /// and the acknowledged watermark, the same on every retry (S7).
    pub(crate) fn header(&self, in_flight: &InFlight) -> v1::RequestHeader {
        v1::RequestHeader {
            client_id: self.inner.client_id,
            request_id: in_flight.request_id,
            acked_request_id: in_flight.acked_request_id,
        }
    }

    fn channel(&self, address: &str) -> Result<Channel, ClientError> {
        let mut channels = self
            .inner
            .channels
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(channel) = channels.get(address) {
            return Ok(channel.clone());
        }
        let attempt_timeout = self.inner.options.attempt_timeout;
        let endpoint = Endpoint::from_shared(format!("http://{address}"))
            .map_err(|e| ClientError::InvalidEndpoint {
                endpoint: address.to_string(),
                message: e.to_string(),
            })?
            .connect_timeout(attempt_timeout)
            .tcp_nodelay(true)
            // Detects a dead or partitioned leader during a long wait.
            .http2_keep_alive_interval(Duration::from_secs(1))
            .keep_alive_timeout(attempt_timeout.max(Duration::from_secs(1)));
        let channel = self.inner.connector.channel(endpoint);
        channels.insert(address.to_string(), channel.clone());
        Ok(channel)
    }

    fn set_cached_leader(&self, leader: Option<String>) {
        *self
            .inner
            .leader
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = leader;
    }

    /// Runs `attempt` with a `Lock` service client; see [`Self::call_at`].
    async fn call<T, F, Fut>(
        &self,
        op: &'static str,
        deadline: Instant,
        mut attempt: F,
    ) -> Result<T, ClientError>
    where
        F: FnMut(LockClient<Channel>) -> Fut,
        Fut: Future<Output = Result<T, Status>>,
    {
        self.call_channel(op, deadline, move |channel| {
            attempt(LockClient::new(channel))
        })
        .await
    }

    /// Runs `attempt` on the leader with this client's leader following and
    /// retries (hints, rotation, backoff; see [`Client`]) until it succeeds,
    /// fails for good, or `deadline` (from now) passes: for a request this
    /// crate has no call for, e.g. a test that sends hand-made request ids.
    /// `attempt` gets a channel to one node (any of Warden's services) and
    /// bounds its own wait: no attempt timeout is added (a waiting acquire
    /// may wait long).
    ///
    /// Every failure that is not a final answer is retried, timeouts and
    /// dropped connections included, so `attempt` must be safe to repeat: a
    /// read, a renew, or a mutation that carries a request id (S7).
    ///
    /// # Errors
    ///
    /// The final answer's status mapped to a [`ClientError`] (as every call
    /// maps it); [`ClientError::NoQuorum`] / [`ClientError::Unavailable`]
    /// once `deadline` has passed.
    pub async fn call_raw<T, F, Fut>(
        &self,
        op: &'static str,
        deadline: Duration,
        attempt: F,
    ) -> Result<T, ClientError>
    where
        F: FnMut(Channel) -> Fut,
        Fut: Future<Output = Result<T, Status>>,
    {
        let deadline = checked_deadline(Instant::now(), deadline);
        self.call_channel(op, deadline, attempt).await
    }

    /// [`Self::call_at`] for an attempt that needs only the channel (any of
    /// Warden's services), retried [`Retry::Always`].
    pub(crate) async fn call_channel<T, F, Fut>(
        &self,
        op: &'static str,
        deadline: Instant,
        attempt: F,
    ) -> Result<T, ClientError>
    where
        F: FnMut(Channel) -> Fut,
        Fut: Future<Output = Result<T, Status>>,
    {
        self.call_channel_retrying(op, deadline, Retry::Always, attempt)
            .await
    }

    /// [`Self::call_channel`] with an explicit retry class.
    pub(crate) async fn call_channel_retrying<T, F, Fut>(
        &self,
        op: &'static str,
        deadline: Instant,
        retry: Retry,
        mut attempt: F,
    ) -> Result<T, ClientError>
    where
        F: FnMut(Channel) -> Fut,
        Fut: Future<Output = Result<T, Status>>,
    {
        self.call_retrying(op, deadline, retry, move |_address, channel| {
            attempt(channel)
        })
        .await
    }

    /// [`Self::call_retrying`] with [`Retry::Always`].
    async fn call_at<T, F, Fut>(
        &self,
        op: &'static str,
        deadline: Instant,
        attempt: F,
    ) -> Result<T, ClientError>
    where
        F: FnMut(String, Channel) -> Fut,
        Fut: Future<Output = Result<T, Status>>,
    {
        self.call_retrying(op, deadline, Retry::Always, attempt)
            .await
    }

    /// The client's one retry loop: runs `attempt` against the leader,
    /// following hints and rotating over the endpoints, until it succeeds,
    /// fails for good, `retry` forbids another attempt, or `deadline`
    /// passes. `attempt` gets the node's address (`host:port`) and a channel
    /// to it.
    async fn call_retrying<T, F, Fut>(
        &self,
        op: &'static str,
        deadline: Instant,
        retry: Retry,
        mut attempt: F,
    ) -> Result<T, ClientError>
    where
        F: FnMut(String, Channel) -> Fut,
        Fut: Future<Output = Result<T, Status>>,
    {
        let started = Instant::now();
        let (mut plan, mut target) = CallPlan::new(
            &self.inner.endpoints,
            self.cached_leader(),
            self.inner.options.backoff_cap,
        );
        let mut server_said_unavailable = false;
        let mut last_error = String::new();
        // Endpoints whose latest attempt was refused at connect
        // (`ClientOptions::fail_fast_when_refused`), with that failure.
        let mut refused: BTreeMap<String, String> = BTreeMap::new();
        // Plaintext endpoints already probed in this call for what they are
        // (`transport::sniff_plaintext`), with the verdict.
        let mut sniffed: BTreeMap<String, Option<&'static str>> = BTreeMap::new();
        let plaintext = self.inner.options.tls.is_none() && self.inner.options.connector.is_none();
        loop {
            let outcome = match self.channel(&target) {
                Ok(channel) => {
                    tokio::time::timeout_at(deadline, attempt(target.clone(), channel)).await
                }
                Err(e) => Ok(Err(Status::invalid_argument(e.to_string()))),
            };
            let status = match outcome {
                Err(_deadline) => {
                    // An earlier attempt's failure (a refused handshake, a
                    // node without a leader) says more than the cut one.
                    last_error = if last_error.is_empty() {
                        format!("{target}: no answer before the deadline")
                    } else {
                        format!("{target}: no answer before the deadline; before that {last_error}")
                    };
                    if matches!(retry, Retry::IfCertainlyNotApplied { .. }) {
                        // The attempt was cut mid-way: it may have applied.
                        return Err(ClientError::OutcomeUnknown {
                            tried: plan.tried().to_vec(),
                            last_error,
                        });
                    }
                    break;
                }
                Ok(Ok(value)) => {
                    self.set_cached_leader(Some(target));
                    return Ok(value);
                }
                Ok(Err(status)) => status,
            };
            if disposition(&status) == Disposition::Fatal {
                // The node answered for the cluster: it is as good a first
                // try as any next time.
                self.set_cached_leader(Some(target));
                return Err(ClientError::from_status(&status));
            }
            let answered = is_server_unavailable(&status);
            server_said_unavailable |= answered;
            if self.cached_leader().as_deref() == Some(target.as_str()) {
                self.set_cached_leader(None);
            }
            let hint = leader_hint(status.metadata());
            last_error = format!("{target}: {}", describe(&status));
            // A plaintext connection that opened and then failed without
            // an answer (a transport error, or h2 refusing what came back):
            // name what the port is, once per endpoint. A port that is not
            // HTTP/2 counts as refused for `fail_fast_when_refused`: no
            // Warden node can answer there.
            let mut not_warden = false;
            if plaintext
                && (std::error::Error::source(&status).is_some()
                    || status.message().starts_with("h2 protocol error"))
                && !connection_refused(&status)
                && !never_connected(&status)
            {
                if !sniffed.contains_key(&target) {
                    let within = self
                        .inner
                        .options
                        .attempt_timeout
                        .min(deadline.saturating_duration_since(Instant::now()));
                    let verdict = crate::transport::sniff_plaintext(&target, within).await;
                    sniffed.insert(target.clone(), verdict);
                }
                if let Some(Some(verdict)) = sniffed.get(&target) {
                    last_error = format!("{last_error} ({verdict})");
                    not_warden = true;
                }
            }
            // Over TLS, a port that answered the handshake in plaintext.
            not_warden |= !plaintext && not_tls(&status);
            if connection_refused(&status) || not_warden {
                refused.insert(target.clone(), last_error.clone());
            } else {
                refused.remove(&target);
            }
            if self.inner.options.fail_fast_when_refused
                && self.inner.endpoints.iter().all(|e| refused.contains_key(e))
            {
                last_error = refused.into_values().collect::<Vec<_>>().join("; ");
                return Err(ClientError::Unavailable {
                    tried: plan.tried().to_vec(),
                    waited_ms: millis(started.elapsed()),
                    last_error,
                });
            }
            if matches!(retry, Retry::IfCertainlyNotApplied { .. }) && !certainly_not_acted(&status)
            {
                debug!(op, target, error = %last_error, "attempt may have applied; not repeated");
                return Err(ClientError::OutcomeUnknown {
                    tried: plan.tried().to_vec(),
                    last_error,
                });
            }
            debug!(op, target, error = %last_error, ?hint, "attempt failed; retrying");
            let (pause, next) = plan.after_failure(&target, hint, answered);
            let next_start = Instant::now() + pause;
            let fits = match retry {
                Retry::Always => next_start < deadline,
                Retry::IfCertainlyNotApplied { attempt_timeout } => {
                    next_start + attempt_timeout <= deadline
                }
            };
            if !fits {
                break;
            }
            if !pause.is_zero() {
                tokio::time::sleep(pause).await;
            }
            target = next;
        }
        let tried = plan.tried().to_vec();
        let waited_ms = millis(started.elapsed());
        Err(if server_said_unavailable {
            ClientError::NoQuorum {
                tried,
                waited_ms,
                last_error,
            }
        } else {
            ClientError::Unavailable {
                tried,
                waited_ms,
                last_error,
            }
        })
    }
}

/// An acquire's messages: from its call on a `Calls` stream, or from a
/// unary `Acquire`'s response stream.
enum AcquireAnswers {
    Call {
        /// The first answer, already received.
        first: Option<Answer>,
        open: OpenCall,
    },
    Stream(tonic::Streaming<v1::AcquireResponse>),
}

impl AcquireAnswers {
    /// The next message; `None` when a unary stream ended.
    async fn next(&mut self) -> Result<Option<v1::AcquireResponse>, Status> {
        match self {
            AcquireAnswers::Stream(stream) => stream.message().await,
            AcquireAnswers::Call { first, open } => {
                let answer = match first.take() {
                    Some(answer) => answer,
                    None => open.next().await?,
                };
                match answer {
                    Answer::Acquire(message) => Ok(Some(message)),
                    other => Err(unexpected_answer("acquire", &other)),
                }
            }
        }
    }
}

/// A `Calls` answer of the wrong kind for the call (a server bug, not input).
fn unexpected_answer(op: &str, answer: &Answer) -> Status {
    Status::internal(format!("unexpected answer to {op}: {answer:?}"))
}

/// One attempt of a unary call, bounded by `timeout` (a slow node is left
/// for the next endpoint rather than waited on).
pub(crate) async fn within<T>(
    timeout: Duration,
    call: impl Future<Output = Result<tonic::Response<T>, Status>>,
) -> Result<T, Status> {
    Ok(tokio::time::timeout(timeout, call)
        .await
        .map_err(|_| attempt_timed_out(timeout))??
        .into_inner())
}

fn attempt_timed_out(after: Duration) -> Status {
    Status::deadline_exceeded(format!("no answer within {} ms", millis(after)))
}

/// `start + d`, or far in the future if that overflows (never panics).
pub(crate) fn checked_deadline(start: Instant, d: Duration) -> Instant {
    start
        .checked_add(d)
        .unwrap_or_else(|| start + Duration::from_secs(100 * 365 * 24 * 3600))
}

/// A waiting acquire's request: when dropped while `armed` (its caller
/// abandoned the wait, or it ended in an error), sends the CancelWait in
/// the background on the current runtime and keeps the acquire's request
/// id in flight until the cancel is answered, so the server still holds
/// the acquire's outcome record when the cancel applies (S7). Outside a
/// runtime nothing is sent (the session's end removes the waiter, S8).
struct AbandonedWait {
    client: Client,
    resource: String,
    in_flight: Option<InFlight>,
    armed: bool,
}

impl Drop for AbandonedWait {
    fn drop(&mut self) {
        let Some(in_flight) = self.in_flight.take() else {
            return;
        };
        if !self.armed {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let client = self.client.clone();
        let resource = std::mem::take(&mut self.resource);
        runtime.spawn(async move {
            let outcome = client
                .cancel_wait(in_flight.request_id, resource.clone())
                .await;
            debug!(%resource, request_id = in_flight.request_id, ?outcome, "abandoned wait cancelled");
            drop(in_flight);
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Bad input never panics: an empty endpoint list or a malformed endpoint is a typed error.
    #[tokio::test]
    async fn connect_refuses_bad_endpoints() {
        let e = Client::connect(vec![], ClientOptions::default())
            .await
            .unwrap_err();
        assert!(matches!(e, ClientError::InvalidArgument { .. }));
        let e = Client::connect(vec!["nohost".into()], ClientOptions::default())
            .await
            .unwrap_err();
        assert!(matches!(e, ClientError::InvalidEndpoint { .. }), "{e}");
    }

    // S7: the client id is random, non-zero and JSON-safe (below 2^53).
    #[tokio::test]
    async fn client_id_is_nonzero_and_below_2_pow_53() {
        let client = Client::connect(vec!["127.0.0.1:1".into()], ClientOptions::default())
            .await
            .unwrap();
        assert!((1..=MAX_ID).contains(&client.client_id()));
        assert_eq!(client.endpoints(), &["127.0.0.1:1".to_string()]);
    }

    // S7/L3: `call_raw` is the client's own loop: an attempt that timed out
    // is repeated (the caller's request must be safe to repeat), a final
    // answer ends the call at once, typed.
    #[tokio::test(start_paused = true)]
    async fn call_raw_repeats_a_timed_out_attempt_and_stops_at_a_final_answer() {
        let client = Client::connect(vec!["127.0.0.1:1".into()], ClientOptions::default())
            .await
            .unwrap();
        let attempts = AtomicU64::new(0);
        let attempts = &attempts;
        let answer = client
            .call_raw("test", Duration::from_secs(5), move |_channel| async move {
                match attempts.fetch_add(1, Ordering::SeqCst) {
                    0 => Err(attempt_timed_out(Duration::from_millis(500))),
                    n => Ok(n),
                }
            })
            .await;
        assert_eq!(answer, Ok(1));
        let refused = client
            .call_raw("test", Duration::from_secs(5), move |_channel| async move {
                attempts.fetch_add(1, Ordering::SeqCst);
                Err::<(), _>(Status::failed_precondition("held by lease 3"))
            })
            .await;
        assert_eq!(
            refused,
            Err(ClientError::FailedPrecondition {
                message: "held by lease 3".into()
            })
        );
        assert_eq!(
            attempts.load(Ordering::SeqCst),
            3,
            "the refusal was not repeated"
        );
    }

    // Deadline arithmetic never overflows.
    #[test]
    fn checked_deadline_saturates() {
        let now = Instant::now();
        assert!(checked_deadline(now, Duration::MAX) > now);
    }
}
