//! The client against in-process fake nodes (port 0, no sleeps): leader
//! following, request-id reuse across retries, the acquire stream, and the
//! error mapping. The fakes implement only what each test scripts.

use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::Stream;
use tokio_stream::wrappers::TcpListenerStream;
use tonic::metadata::MetadataValue;
use tonic::{Request, Response, Status};
use warden_client::transport::{Connector, TcpConnector};
use warden_client::{
    AcquireOptions, AcquireResult, Client, ClientError, ClientOptions, Clock, ClockError, Lost,
    QueueBehind, Queued, SessionOptions, TokioClock,
};
use warden_proto::v1;
use warden_proto::v1::lease_server::{Lease, LeaseServer};
use warden_proto::v1::lock_server::{Lock, LockServer};
use warden_proto::v1::{
    acquire_response::Event, AcquireRequest, AcquireResponse, ClusterStatusRequest,
    ClusterStatusResponse, Granted, Queued as WireQueued, ReleaseRequest, ReleaseResponse,
    RenewRequest, RenewResponse, StatusRequest, StatusResponse,
};
use warden_proto::v1::{call_request, call_response::Answer, CallRequest, CallResponse};

/// Every CancelWait a fake node saw: (client_id, request_id,
/// acquire_request_id, resource).
type CancelLog = Arc<Mutex<Vec<(u64, u64, u64, String)>>>;

/// How a fake node answers.
#[derive(Clone)]
enum Role {
    /// Not the leader: `Unavailable`, with `warden-leader` when `Some`.
    Follower(Option<String>),
    /// The leader: grants; the first `drops` acquire calls send `Queued` and
    /// then break the stream.
    Leader { drops: usize },
    /// Refuses every acquire with InvalidArgument.
    Refuser,
    /// Answers renew with a sequence number one off.
    BadEcho,
    /// Sends `Queued`, then grants only after the waiter's lease was renewed.
    GrantAfterRenew,
    /// Grants sessions (lease 1, TTL 3 s) and answers each renew only after
    /// [`SLOW_RENEW`].
    SlowRenew,
    /// Sends `Queued` and never a final answer; records every CancelWait.
    QueuesForever,
    /// Grants, and publishes this election prefix in `ClusterStatus`.
    Publishes { election_prefix: &'static str },
}

/// How long a [`Role::SlowRenew`] node sits on a renew before answering.
const SLOW_RENEW: Duration = Duration::from_millis(300);

#[derive(Clone)]
struct Fake {
    role: Role,
    /// Serves `Calls` (by relaying each acquire to `acquire`); when false it
    /// answers `Unimplemented`, as a node from before `Calls` would. Set
    /// by the test to upgrade the node in place.
    serve_calls: Arc<AtomicBool>,
    /// How many `Calls` streams were opened on this node.
    calls_opened: Arc<AtomicUsize>,
    /// How many of the next `Calls` streams end (without a status) right
    /// after the first answer of their first call, as a cut connection or a
    /// node going away would.
    cut_streams: Arc<AtomicUsize>,
    /// Signalled by every renew.
    renewed: Arc<tokio::sync::Notify>,
    /// Every acquire header seen: (client_id, request_id, acked_request_id).
    acquires: Arc<Mutex<Vec<(u64, u64, u64)>>>,
    /// Every CancelWait seen: (client_id, request_id, acquire_request_id,
    /// resource).
    cancels: CancelLog,
    /// How many `ClusterStatus` calls this node answered.
    statuses: Arc<AtomicUsize>,
}

fn not_leader(hint: &Option<String>) -> Status {
    let mut status = Status::unavailable("not the leader");
    if let Some(leader) = hint {
        status.metadata_mut().insert(
            warden_proto::LEADER_METADATA,
            MetadataValue::try_from(leader.as_str()).unwrap(),
        );
    }
    status
}

type AcquireStream = Pin<Box<dyn Stream<Item = Result<AcquireResponse, Status>> + Send>>;
type CallsStream = Pin<Box<dyn Stream<Item = Result<CallResponse, Status>> + Send>>;

#[tonic::async_trait]
impl Lock for Fake {
    type AcquireStream = AcquireStream;
    type CallsStream = CallsStream;

    async fn calls(
        &self,
        request: Request<tonic::Streaming<CallRequest>>,
    ) -> Result<Response<CallsStream>, Status> {
        self.calls_opened.fetch_add(1, Ordering::SeqCst);
        if !self.serve_calls.load(Ordering::SeqCst) {
            return Err(Status::unimplemented("fake: a node from before Calls"));
        }
        let mut inbound = request.into_inner();
        let (tx, rx) = tokio::sync::mpsc::channel(16);
        let fake = self.clone();
        let cut = self
            .cut_streams
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            .is_ok();
        if cut {
            tokio::spawn(async move {
                let Ok(Some(call)) = inbound.message().await else {
                    return;
                };
                let Some(call_request::Call::Acquire(acquire)) = call.call else {
                    return;
                };
                let Ok(response) = fake.acquire(Request::new(acquire)).await else {
                    return;
                };
                let mut messages = response.into_inner();
                if let Some(Ok(first)) = futures::StreamExt::next(&mut messages).await {
                    let _ = tx
                        .send(Ok(CallResponse {
                            call_id: call.call_id,
                            answer: Some(Answer::Acquire(first)),
                        }))
                        .await;
                }
                // `tx` dropped: the stream ends with no final answer.
            });
            return Ok(Response::new(Box::pin(
                tokio_stream::wrappers::ReceiverStream::new(rx),
            )));
        }
        tokio::spawn(async move {
            while let Ok(Some(call)) = inbound.message().await {
                let call_id = call.call_id;
                let Some(call_request::Call::Acquire(acquire)) = call.call else {
                    continue;
                };
                let (fake, tx) = (fake.clone(), tx.clone());
                tokio::spawn(async move {
                    let send = |answer| {
                        tx.send(Ok(CallResponse {
                            call_id,
                            answer: Some(answer),
                        }))
                    };
                    match fake.acquire(Request::new(acquire)).await {
                        Err(status) => {
                            drop(send(Answer::Error(warden_proto::call_error(&status))).await)
                        }
                        Ok(response) => {
                            let mut messages = response.into_inner();
                            while let Some(item) = futures::StreamExt::next(&mut messages).await {
                                let last = item.is_err();
                                let answer = item.map_or_else(
                                    |s| Answer::Error(warden_proto::call_error(&s)),
                                    Answer::Acquire,
                                );
                                if send(answer).await.is_err() || last {
                                    break;
                                }
                            }
                        }
                    }
                });
            }
        });
        Ok(Response::new(Box::pin(
            tokio_stream::wrappers::ReceiverStream::new(rx),
        )))
    }

    async fn acquire(
        &self,
        request: Request<AcquireRequest>,
    ) -> Result<Response<AcquireStream>, Status> {
        let req = request.into_inner();
        let header = req.header.unwrap_or_default();
        let calls = {
            let mut seen = self.acquires.lock().unwrap();
            seen.push((header.client_id, header.request_id, header.acked_request_id));
            seen.len()
        };
        let granted = AcquireResponse {
            event: Some(Event::Granted(Granted {
                resource: req.resource.clone(),
                lease_id: 7,
                fencing_token: 40 + header.request_id,
                ttl_ms: req.ttl_ms,
                log_index: 9,
                ..Default::default()
            })),
        };
        let queued = AcquireResponse {
            event: Some(Event::Queued(WireQueued {
                position: 1,
                lease_id: 7,
                behind: "holder".into(),
                holder_lease_id: 5,
                lock_delay_remaining_ms: 0,
            })),
        };
        let items: Vec<Result<AcquireResponse, Status>> = match &self.role {
            Role::Follower(hint) => return Err(not_leader(hint)),
            Role::SlowRenew => return Err(Status::unimplemented("fake")),
            Role::Refuser => {
                return Err(Status::invalid_argument(
                    "ttl_ms: 10 is below the minimum 1000",
                ))
            }
            Role::Leader { drops } if calls <= *drops => {
                vec![Ok(queued), Err(Status::unavailable("leader changed"))]
            }
            Role::GrantAfterRenew => {
                let renewed = Arc::clone(&self.renewed);
                let after_renew = futures::stream::once(async move {
                    renewed.notified().await;
                    Ok(granted)
                });
                let stream =
                    futures::StreamExt::chain(futures::stream::iter(vec![Ok(queued)]), after_renew);
                return Ok(Response::new(Box::pin(stream)));
            }
            Role::QueuesForever => {
                let stream = futures::StreamExt::chain(
                    futures::stream::iter(vec![Ok(queued)]),
                    futures::stream::pending(),
                );
                return Ok(Response::new(Box::pin(stream)));
            }
            Role::Leader { .. } | Role::BadEcho | Role::Publishes { .. } => {
                vec![Ok(queued), Ok(granted)]
            }
        };
        Ok(Response::new(Box::pin(futures::stream::iter(items))))
    }

    async fn cancel_wait(
        &self,
        request: Request<v1::CancelWaitRequest>,
    ) -> Result<Response<v1::CancelWaitResponse>, Status> {
        let req = request.into_inner();
        let header = req.header.unwrap_or_default();
        self.cancels.lock().unwrap().push((
            header.client_id,
            header.request_id,
            req.acquire_request_id,
            req.resource.clone(),
        ));
        Ok(Response::new(v1::CancelWaitResponse {
            resource: req.resource,
            lease_id: 7,
            outcome: "removed".into(),
            fencing_token: 0,
        }))
    }

    async fn renew(
        &self,
        request: Request<RenewRequest>,
    ) -> Result<Response<RenewResponse>, Status> {
        let req = request.into_inner();
        self.renewed.notify_one();
        match &self.role {
            Role::Follower(hint) => Err(not_leader(hint)),
            Role::SlowRenew => {
                tokio::time::sleep(SLOW_RENEW).await;
                Ok(Response::new(RenewResponse {
                    lease_id: req.lease_id,
                    ttl_ms: 3_000,
                    sequence: req.sequence,
                }))
            }
            role => Ok(Response::new(RenewResponse {
                lease_id: req.lease_id,
                ttl_ms: 10_000,
                sequence: req.sequence + u64::from(matches!(role, Role::BadEcho)),
            })),
        }
    }

    async fn release(
        &self,
        _request: Request<ReleaseRequest>,
    ) -> Result<Response<ReleaseResponse>, Status> {
        Err(Status::unimplemented("fake"))
    }

    async fn status(
        &self,
        _request: Request<StatusRequest>,
    ) -> Result<Response<StatusResponse>, Status> {
        Err(Status::unimplemented("fake"))
    }

    async fn validate(
        &self,
        _request: Request<warden_proto::v1::ValidateRequest>,
    ) -> Result<Response<warden_proto::v1::ValidateResponse>, Status> {
        Err(Status::unimplemented("fake"))
    }

    async fn lease_revoke(
        &self,
        _request: Request<warden_proto::v1::LeaseRevokeRequest>,
    ) -> Result<Response<warden_proto::v1::LeaseRevokeResponse>, Status> {
        Err(Status::unimplemented("fake"))
    }

    async fn proclaim(
        &self,
        _request: Request<warden_proto::v1::ProclaimRequest>,
    ) -> Result<Response<warden_proto::v1::ProclaimResponse>, Status> {
        Err(Status::unimplemented("fake"))
    }

    async fn cluster_status(
        &self,
        _request: Request<ClusterStatusRequest>,
    ) -> Result<Response<ClusterStatusResponse>, Status> {
        self.statuses.fetch_add(1, Ordering::SeqCst);
        match &self.role {
            Role::Follower(hint) => Err(not_leader(hint)),
            Role::Publishes { election_prefix } => Ok(Response::new(ClusterStatusResponse {
                election_prefix: (*election_prefix).to_string(),
                max_requests_in_flight: 8,
                ..ClusterStatusResponse::default()
            })),
            _ => Err(Status::unimplemented("fake")),
        }
    }
}

type KeepAliveStream =
    Pin<Box<dyn Stream<Item = Result<warden_proto::v1::LeaseKeepAliveResponse, Status>> + Send>>;

#[tonic::async_trait]
impl Lease for Fake {
    async fn lease_grant(
        &self,
        _request: Request<warden_proto::v1::LeaseGrantRequest>,
    ) -> Result<Response<warden_proto::v1::LeaseGrantResponse>, Status> {
        match self.role {
            Role::SlowRenew => Ok(Response::new(warden_proto::v1::LeaseGrantResponse {
                lease_id: 1,
                ttl_ms: 3_000,
            })),
            _ => Err(Status::unimplemented("fake")),
        }
    }

    type LeaseKeepAliveStream = KeepAliveStream;

    async fn lease_keep_alive(
        &self,
        _request: Request<tonic::Streaming<warden_proto::v1::LeaseKeepAliveRequest>>,
    ) -> Result<Response<KeepAliveStream>, Status> {
        Err(Status::unimplemented("fake"))
    }

    async fn lease_time_to_live(
        &self,
        _request: Request<warden_proto::v1::LeaseTimeToLiveRequest>,
    ) -> Result<Response<warden_proto::v1::LeaseTimeToLiveResponse>, Status> {
        Err(Status::unimplemented("fake"))
    }
}

/// What a test sees of a fake node.
struct Started {
    addr: String,
    /// Every acquire header seen: (client_id, request_id, acked_request_id).
    acquires: Arc<Mutex<Vec<(u64, u64, u64)>>>,
    /// How many `Calls` streams were opened on it.
    calls_opened: Arc<AtomicUsize>,
    /// See [`Fake::cut_streams`].
    cut_streams: Arc<AtomicUsize>,
    /// See [`Fake::serve_calls`].
    serves_calls: Arc<AtomicBool>,
    /// See [`Fake::cancels`].
    cancels: CancelLog,
    /// See [`Fake::statuses`].
    statuses: Arc<AtomicUsize>,
}

/// Starts a fake node on 127.0.0.1:0 that does not serve `Calls` (so these
/// tests also cover the client's unary fallback); returns its address and
/// its log.
async fn start(role: Role) -> (String, Arc<Mutex<Vec<(u64, u64, u64)>>>) {
    let started = start_node(role, false).await;
    (started.addr, started.acquires)
}

/// Starts a fake node on 127.0.0.1:0, serving `Calls` when `serve_calls`.
async fn start_node(role: Role, serve_calls: bool) -> Started {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let fake = Fake {
        role,
        serve_calls: Arc::new(AtomicBool::new(serve_calls)),
        calls_opened: Arc::default(),
        cut_streams: Arc::default(),
        renewed: Arc::default(),
        acquires: Arc::default(),
        cancels: Arc::default(),
        statuses: Arc::default(),
    };
    let acquires = Arc::clone(&fake.acquires);
    let statuses = Arc::clone(&fake.statuses);
    let cancels = Arc::clone(&fake.cancels);
    let calls_opened = Arc::clone(&fake.calls_opened);
    let cut_streams = Arc::clone(&fake.cut_streams);
    let serves_calls = Arc::clone(&fake.serve_calls);
    tokio::spawn(
        tonic::transport::Server::builder()
            .add_service(LeaseServer::new(fake.clone()))
            .add_service(LockServer::new(fake))
            .serve_with_incoming(TcpListenerStream::new(listener)),
    );
    Started {
        addr,
        acquires,
        calls_opened,
        cut_streams,
        serves_calls,
        cancels,
        statuses,
    }
}

/// A fake node reached in memory (a `tokio::io::duplex` pipe per
/// connection) instead of over loopback TCP: with tokio's time paused, a
/// loopback reply in flight would let the clock jump to the next timer (an
/// attempt timeout); an in-memory one wakes its reader directly.
/// Every endpoint of a client with this connector reaches the same node.
#[derive(Clone, Debug)]
struct InMemory {
    routes: tonic::service::Routes,
}

impl Connector for InMemory {
    fn channel(&self, endpoint: tonic::transport::Endpoint) -> tonic::transport::Channel {
        let routes = self.routes.clone();
        endpoint.connect_with_connector_lazy(tower::service_fn(move |_uri| {
            let routes = routes.clone();
            async move {
                let (client, server) = tokio::io::duplex(64 * 1024);
                tokio::spawn(
                    tonic::transport::Server::builder()
                        .add_routes(routes)
                        .serve_with_incoming(futures::stream::iter([Ok::<_, std::io::Error>(
                            server,
                        )])),
                );
                Ok::<_, std::io::Error>(hyper_util::rt::TokioIo::new(client))
            }
        }))
    }
}

/// A client of one in-memory node serving `routes` (its address is a name
/// only: nothing listens on it).
async fn in_memory_client_of(routes: tonic::service::Routes) -> Client {
    let options = ClientOptions {
        connector: Some(Arc::new(InMemory { routes })),
        ..ClientOptions::default()
    };
    Client::connect(vec!["fake-node:7001".into()], options)
        .await
        .unwrap()
}

/// A client of one in-memory fake node with this role.
async fn in_memory_client(role: Role) -> Client {
    let fake = Fake {
        role,
        serve_calls: Arc::new(AtomicBool::new(false)),
        calls_opened: Arc::default(),
        cut_streams: Arc::default(),
        renewed: Arc::default(),
        acquires: Arc::default(),
        cancels: Arc::default(),
        statuses: Arc::default(),
    };
    in_memory_client_of(
        tonic::service::Routes::new(LeaseServer::new(fake.clone()))
            .add_service(LockServer::new(fake)),
    )
    .await
}

/// tokio's clock until [`FailingClock::fail`] is called; from then on every
/// read fails with EIO, as a broken CLOCK_BOOTTIME would.
#[derive(Debug)]
struct FailingClock {
    inner: TokioClock,
    failing: AtomicBool,
}

impl FailingClock {
    fn new() -> Arc<FailingClock> {
        Arc::new(FailingClock {
            inner: TokioClock::new(),
            failing: AtomicBool::new(false),
        })
    }

    fn fail(&self, failing: bool) {
        self.failing.store(failing, Ordering::SeqCst);
    }
}

/// What [`FailingClock`] returns once failing.
const CLOCK_ERROR: ClockError = ClockError {
    clock: "test clock",
    errno: 5,
};

impl Clock for FailingClock {
    fn now(&self) -> Result<Duration, ClockError> {
        if self.failing.load(Ordering::SeqCst) {
            Err(CLOCK_ERROR)
        } else {
            self.inner.now()
        }
    }
}

/// A session (TTL 3 s) on `clock` against an in-memory [`Role::SlowRenew`]
/// node, once its first renew has been acknowledged.
async fn renewed_session(clock: Arc<FailingClock>) -> warden_client::Session {
    let client = in_memory_client(Role::SlowRenew).await;
    let session = client
        .session_with(SessionOptions {
            ttl: Duration::from_secs(3),
            clock,
        })
        .await
        .unwrap();
    let first = session.valid_until();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while session.valid_until() == first {
        assert!(
            tokio::time::Instant::now() < deadline,
            "no renew acknowledged"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(session.check(), Ok(()));
    session
}

// S5: a session clock that starts failing loses the session on its own: the
// keep-alive's next read (within 1 s) fires `lost()` with the clock's error,
// long before `valid_until`; `check()` then fails naming the clock, the time
// left is zero, and the session stays lost once the clock reads again (no
// validity is ever computed from a made-up time, and nothing panics).
#[tokio::test(start_paused = true)]
async fn a_failing_clock_loses_the_session_and_it_stays_lost() {
    let clock = FailingClock::new();
    let session = renewed_session(clock.clone()).await;
    let valid_until = session.valid_until();
    clock.fail(true);
    let failed_at = tokio::time::Instant::now();
    let lost = tokio::time::timeout(Duration::from_millis(1_100), session.lost())
        .await
        .expect("lost() fires within the keep-alive's longest sleep");
    let expected = Lost::ClockFailed { error: CLOCK_ERROR };
    assert_eq!(lost, expected);
    assert!(failed_at.elapsed() <= Duration::from_millis(1_000));
    assert_eq!(session.check(), Err(expected));
    let text = session.check().unwrap_err().to_string();
    assert!(
        text.contains("reading test clock failed") && text.contains("os error 5"),
        "{text}"
    );
    assert_eq!(session.time_left(), Duration::ZERO);
    assert_eq!(
        session.valid_until(),
        valid_until,
        "no validity from a failed read"
    );

    clock.fail(false);
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(session.check(), Err(expected), "a lost session stays lost");
    assert_eq!(session.lost().await, expected);
    assert_eq!(session.valid_until(), valid_until);
    match session.try_lock("orders").await {
        Err(ClientError::SessionLost { reason }) => assert_eq!(reason, expected),
        other => panic!("a lock on a lost session: {other:?}"),
    }
}

// S5: the synchronous `check()` right before a protected write is the first
// to see the failure: it fails at once, naming the clock, and `lost()`
// resolves at once too (no waiting for the keep-alive).
#[tokio::test(start_paused = true)]
async fn check_sees_a_failing_clock_at_once_and_lost_follows() {
    let clock = FailingClock::new();
    let session = renewed_session(clock.clone()).await;
    clock.fail(true);
    let expected = Lost::ClockFailed { error: CLOCK_ERROR };
    assert_eq!(session.check(), Err(expected));
    let lost = tokio::time::timeout(Duration::ZERO, session.lost())
        .await
        .expect("lost() has already resolved");
    assert_eq!(lost, expected);
}

// S5: a session cannot start on a clock that cannot be read: the send time
// of the grant is unknown, so there is no validity to count from. The error
// names the clock.
#[tokio::test(start_paused = true)]
async fn a_session_is_not_opened_on_a_failing_clock() {
    let clock = FailingClock::new();
    clock.fail(true);
    let client = in_memory_client(Role::SlowRenew).await;
    let err = client
        .session_with(SessionOptions {
            ttl: Duration::from_secs(3),
            clock,
        })
        .await
        .unwrap_err();
    assert_eq!(
        err,
        ClientError::SessionLost {
            reason: Lost::ClockFailed { error: CLOCK_ERROR }
        }
    );
    assert!(
        err.to_string().contains("reading test clock failed"),
        "{err}"
    );
}

fn ten_seconds() -> AcquireOptions {
    AcquireOptions::with_ttl(Duration::from_secs(10))
}

/// The request ids of the acquires a fake node logged, in order.
fn request_ids(log: &Mutex<Vec<(u64, u64, u64)>>) -> Vec<u64> {
    log.lock().unwrap().iter().map(|h| h.1).collect()
}

/// Acquires "orders" at `addr`, waiting up to 5 s in the queue; asserts
/// the fake leader's grant (fencing token 41) and returns how many `Queued`
/// reports reached the callback (each saying it waits behind lease 5).
async fn waiting_acquire(addr: &str) -> usize {
    let client = Client::connect(vec![addr.to_string()], ClientOptions::default())
        .await
        .unwrap();
    let seen = Arc::new(AtomicUsize::new(0));
    let sink = Arc::clone(&seen);
    let options = AcquireOptions {
        wait: Duration::from_secs(5),
        ..ten_seconds()
    };
    let result = client
        .acquire_with_progress("orders", options, move |q: Queued| {
            // Counted only as the fake leader sent it: behind holder lease 5.
            if q.lease_id == 7 && q.behind == (QueueBehind::Holder { lease_id: 5 }) {
                sink.fetch_add(1, Ordering::SeqCst);
            }
        })
        .await
        .unwrap();
    assert!(
        matches!(
            result,
            AcquireResult::Granted {
                fencing_token: 41,
                ..
            }
        ),
        "{result:?}"
    );
    seen.load(Ordering::SeqCst)
}

/// A client that knows only `follower` acquires "orders" once; asserts it
/// was granted at the leader the hint named, with the request the follower
/// saw (same client id, request id 1, watermark 0, S7), and that the leader
/// is cached. Returns the client.
async fn acquire_through_the_hint(
    follower: &str,
    follower_log: &Mutex<Vec<(u64, u64, u64)>>,
    leader: &str,
    leader_log: &Mutex<Vec<(u64, u64, u64)>>,
) -> Client {
    let client = Client::connect(vec![follower.to_string()], ClientOptions::default())
        .await
        .unwrap();
    let result = client.acquire("orders", ten_seconds()).await.unwrap();
    assert!(
        matches!(
            result,
            AcquireResult::Granted {
                lease_id: 7,
                fencing_token: 41,
                ..
            }
        ),
        "{result:?}"
    );
    assert_eq!(client.cached_leader().as_deref(), Some(leader));
    let f = follower_log.lock().unwrap().clone();
    let l = leader_log.lock().unwrap().clone();
    assert_eq!(f.len(), 1);
    assert_eq!(
        f, l,
        "the retry carries the same client id, request id and watermark"
    );
    assert_eq!((f[0].0, f[0].1, f[0].2), (client.client_id(), 1, 0));
    client
}

// Leader following: a follower's `warden-leader` hint is followed, the retry reuses the request id (S7), and the leader is cached.
#[tokio::test]
async fn follower_hint_is_followed_with_the_same_request_id() {
    let (leader, leader_log) = start(Role::Leader { drops: 0 }).await;
    let (follower, follower_log) = start(Role::Follower(Some(leader.clone()))).await;
    let client = acquire_through_the_hint(&follower, &follower_log, &leader, &leader_log).await;

    // The next call goes straight to the cached leader, with the next id and a moved watermark.
    client.acquire("orders", ten_seconds()).await.unwrap();
    assert_eq!(follower_log.lock().unwrap().len(), 1);
    let l = leader_log.lock().unwrap().clone();
    assert_eq!((l[1].1, l[1].2), (2, 1));
}

// S8/S7: a stream dropped mid-wait is re-sent with the same request id; queued messages are skipped and reported.
#[tokio::test]
async fn dropped_acquire_stream_is_resent_with_the_same_request_id() {
    let (leader, log) = start(Role::Leader { drops: 2 }).await;
    let queued = waiting_acquire(&leader).await;
    assert_eq!(request_ids(&log), vec![1, 1, 1]);
    assert_eq!(queued, 3, "every Queued reaches the callback");
}

// L3: with no leader anywhere the call fails with NoQuorum within its deadline, naming what it tried.
#[tokio::test]
async fn no_leader_fails_with_no_quorum_within_the_deadline() {
    let (a, _) = start(Role::Follower(None)).await;
    let (b, _) = start(Role::Follower(None)).await;
    let options = ClientOptions {
        deadline: Duration::from_millis(300),
        ..ClientOptions::default()
    };
    let client = Client::connect(vec![a.clone(), b.clone()], options)
        .await
        .unwrap();
    let started = std::time::Instant::now();
    let err = client.acquire("orders", ten_seconds()).await.unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(2), "never hangs");
    match &err {
        ClientError::NoQuorum { tried, .. } => assert_eq!(tried, &vec![a, b]),
        other => panic!("expected NoQuorum, got {other:?}"),
    }
    assert!(err.to_string().contains("not the leader"), "{err}");
}

// L3: nothing listening: Unavailable (not NoQuorum) within the deadline.
#[tokio::test]
async fn unreachable_cluster_fails_with_unavailable() {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let options = ClientOptions {
        deadline: Duration::from_millis(300),
        ..ClientOptions::default()
    };
    let client = Client::connect(vec![format!("127.0.0.1:{port}")], options)
        .await
        .unwrap();
    let err = client.cluster_status().await.unwrap_err();
    assert!(matches!(err, ClientError::Unavailable { .. }), "{err:?}");
}

// "What bad input gets": the server's InvalidArgument is returned at once, typed, message intact.
#[tokio::test]
async fn refusal_is_typed_and_not_retried() {
    let (node, log) = start(Role::Refuser).await;
    let client = Client::connect(vec![node], ClientOptions::default())
        .await
        .unwrap();
    let err = client.acquire("orders", ten_seconds()).await.unwrap_err();
    assert_eq!(
        err,
        ClientError::InvalidArgument {
            field: None,
            message: "ttl_ms: 10 is below the minimum 1000".into()
        }
    );
    assert_eq!(log.lock().unwrap().len(), 1);
}

// S5: a renew reply must echo its attempt's sequence number; a mismatch is an error, not a renewal.
#[tokio::test]
async fn renew_checks_the_echoed_sequence() {
    let (good, _) = start(Role::Leader { drops: 0 }).await;
    let client = Client::connect(vec![good], ClientOptions::default())
        .await
        .unwrap();
    let first = client.renew(7).await.unwrap();
    let second = client.renew(7).await.unwrap();
    assert_eq!((first.lease_id, first.ttl_ms), (7, 10_000));
    assert!(second.sequence > first.sequence);

    let (bad, _) = start(Role::BadEcho).await;
    let client = Client::connect(vec![bad], ClientOptions::default())
        .await
        .unwrap();
    assert!(matches!(
        client.renew(7).await.unwrap_err(),
        ClientError::Transport { .. }
    ));
}

// S8/L4: while an acquire waits in the queue, the client renews the waiter's lease (every TTL/3).
#[tokio::test]
async fn waiting_acquire_keeps_its_lease_alive() {
    let (leader, _) = start(Role::GrantAfterRenew).await;
    let client = Client::connect(vec![leader], ClientOptions::default())
        .await
        .unwrap();
    let options = AcquireOptions {
        ttl: Duration::from_secs(1),
        wait: Duration::from_secs(10),
        ..ten_seconds()
    };
    let result = client.acquire("orders", options).await.unwrap();
    assert!(
        matches!(result, AcquireResult::Granted { lease_id: 7, .. }),
        "{result:?}"
    );
}

// S5: a session's validity counts from the *send* of the renew whose echo came
// back, not from the reply's arrival: with a node that sits on each renew for
// 300 ms, valid_until is at least 300 ms short of (arrival + validity).
#[tokio::test]
async fn session_validity_counts_from_the_renew_send() {
    let (addr, _) = start(Role::SlowRenew).await;
    let client = Client::connect(vec![addr], ClientOptions::default())
        .await
        .unwrap();
    let session = client
        .session_with(SessionOptions {
            ttl: Duration::from_secs(3),
            clock: TokioClock::shared(),
        })
        .await
        .unwrap();
    let clock = session.clock().clone();
    let first = session.valid_until();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    // The first renew goes out at TTL/3 = 1 s and is answered 300 ms later.
    let arrived = loop {
        if session.valid_until() > first {
            break clock.now().unwrap();
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "no renew acknowledged"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    };
    let validity = warden_client::validity(Duration::from_secs(3));
    assert!(
        session.valid_until() + SLOW_RENEW <= arrived + validity,
        "valid_until {:?} counts from the arrival ({arrived:?}), not the send",
        session.valid_until()
    );
    assert!(session.valid_until() > first, "it moved forward");
    assert_eq!(session.check(), Ok(()));
}

// Leader following over `Calls` (L3, S7): a follower's in-band error keeps its
// `warden-leader` hint, the retry at the leader reuses the request id, and
// each node's one stream carries every later call.
#[tokio::test]
async fn calls_follow_the_leader_hint_with_the_same_request_id_on_one_stream() {
    let leader = start_node(Role::Leader { drops: 0 }, true).await;
    let follower = start_node(Role::Follower(Some(leader.addr.clone())), true).await;
    let client = acquire_through_the_hint(
        &follower.addr,
        &follower.acquires,
        &leader.addr,
        &leader.acquires,
    )
    .await;

    for _ in 0..3 {
        client.acquire("orders", ten_seconds()).await.unwrap();
    }
    assert_eq!(request_ids(&leader.acquires), vec![1, 2, 3, 4]);
    assert_eq!(
        leader.calls_opened.load(Ordering::SeqCst),
        1,
        "one stream for four calls"
    );
    assert_eq!(follower.calls_opened.load(Ordering::SeqCst), 1);
}

// S8/S7 over `Calls`: a call that fails mid-wait (in-band Unavailable after a
// `queued` report) is re-sent with the same request id on the same stream.
#[tokio::test]
async fn a_call_failed_mid_wait_is_resent_with_the_same_request_id() {
    let leader = start_node(Role::Leader { drops: 2 }, true).await;
    let queued = waiting_acquire(&leader.addr).await;
    assert_eq!(request_ids(&leader.acquires), vec![1, 1, 1]);
    assert_eq!(queued, 3, "every Queued reaches the callback");
    assert_eq!(leader.calls_opened.load(Ordering::SeqCst), 1);
}

// Rolling upgrades: a node from before `Calls` answers Unimplemented; the
// client falls back to the unary Acquire there and does not ask again
// within `recheck_calls_after` (30 s by default).
#[tokio::test]
async fn a_node_without_calls_gets_unary_calls_and_is_asked_once() {
    let old = start_node(Role::Leader { drops: 0 }, false).await;
    let client = Client::connect(vec![old.addr.clone()], ClientOptions::default())
        .await
        .unwrap();
    for _ in 0..3 {
        let result = client.acquire("orders", ten_seconds()).await.unwrap();
        assert!(
            matches!(result, AcquireResult::Granted { lease_id: 7, .. }),
            "{result:?}"
        );
    }
    assert_eq!(
        request_ids(&old.acquires),
        vec![1, 2, 3],
        "each acquire reached the node once, unary"
    );
    assert_eq!(old.calls_opened.load(Ordering::SeqCst), 1);
}

// Rolling upgrades: a node found without `Calls` is asked again once
// `recheck_calls_after` has passed (here at once), so after it is upgraded
// in place the client moves to its stream and stays there.
#[tokio::test]
async fn a_node_without_calls_is_asked_again_after_the_recheck_interval() {
    let node = start_node(Role::Leader { drops: 0 }, false).await;
    let options = ClientOptions {
        recheck_calls_after: Duration::ZERO,
        ..ClientOptions::default()
    };
    let client = Client::connect(vec![node.addr.clone()], options)
        .await
        .unwrap();
    let acquire_once = || async {
        let result = client.acquire("orders", ten_seconds()).await.unwrap();
        assert!(
            matches!(result, AcquireResult::Granted { lease_id: 7, .. }),
            "{result:?}"
        );
    };
    acquire_once().await;
    acquire_once().await;
    assert_eq!(
        node.calls_opened.load(Ordering::SeqCst),
        2,
        "asked again on the next call once the interval passed"
    );
    node.serves_calls.store(true, Ordering::SeqCst);
    acquire_once().await;
    acquire_once().await;
    assert_eq!(
        node.calls_opened.load(Ordering::SeqCst),
        3,
        "the upgraded node's stream is opened once and then kept"
    );
    assert_eq!(request_ids(&node.acquires), vec![1, 2, 3, 4]);
}

// S7/S8 over `Calls`: a stream that ends mid-wait (no final answer: a cut
// connection, a node going away) fails the call; the client opens a new
// stream and re-sends it with the same request id, which re-attaches to its
// waiter and gets the grant.
#[tokio::test]
async fn a_stream_cut_mid_wait_is_replaced_and_the_call_resent_with_its_id() {
    let leader = start_node(Role::Leader { drops: 0 }, true).await;
    leader.cut_streams.store(1, Ordering::SeqCst);
    let queued = waiting_acquire(&leader.addr).await;
    assert_eq!(
        request_ids(&leader.acquires),
        vec![1, 1],
        "re-sent with the same request id"
    );
    assert_eq!(
        leader.calls_opened.load(Ordering::SeqCst),
        2,
        "a new stream replaced the cut one"
    );
    assert_eq!(queued, 2, "a queued report from each");
}

/// A TCP connector that counts the channels it opened.
#[derive(Debug, Default)]
struct CountingConnector {
    opened: AtomicUsize,
}

impl Connector for CountingConnector {
    fn channel(&self, endpoint: tonic::transport::Endpoint) -> tonic::transport::Channel {
        self.opened.fetch_add(1, Ordering::SeqCst);
        TcpConnector.channel(endpoint)
    }
}

// Injection without globals (the simulator's network, TLS): a connector is
// per client. The client given one opens its channels through it, once per
// node (channels are cached); another client of the same process is not
// affected by it.
#[tokio::test]
async fn a_connector_serves_only_the_client_it_was_given_to() {
    let (leader, log) = start(Role::Leader { drops: 0 }).await;
    let counting = Arc::new(CountingConnector::default());
    let options = ClientOptions {
        connector: Some(counting.clone()),
        ..ClientOptions::default()
    };
    let injected = Client::connect(vec![leader.clone()], options)
        .await
        .unwrap();
    let plain = Client::connect(vec![leader], ClientOptions::default())
        .await
        .unwrap();
    for client in [&injected, &injected, &plain] {
        let result = client.acquire("orders", ten_seconds()).await.unwrap();
        assert!(
            matches!(result, AcquireResult::Granted { lease_id: 7, .. }),
            "{result:?}"
        );
    }
    assert_eq!(
        log.lock().unwrap().len(),
        3,
        "every acquire reached the node"
    );
    assert_eq!(
        counting.opened.load(Ordering::SeqCst),
        1,
        "one channel, opened through the injected connector, for its two calls"
    );
}

// ---------------------------------------------------------------- admin

/// How a fake node answers `warden.v1.Admin`.
#[derive(Clone)]
enum AdminRole {
    /// Not the leader: every call is `Unavailable` naming this leader.
    Follower(String),
    /// The leader: answers every call.
    Leader,
    /// The leader, but its membership changes never answer, nor does the
    /// first forced release.
    Silent,
    /// The leader; its membership changes answer `Unavailable` without a
    /// redirect, as one that did not commit in time does.
    NoCommit,
}

/// A call a fake admin node saw: (method, client id, request id); 0, 0
/// for calls without a request header.
type AdminCall = (&'static str, u64, u64);

#[derive(Clone)]
struct FakeAdmin {
    role: AdminRole,
    /// Every call seen, in order.
    seen: Arc<Mutex<Vec<AdminCall>>>,
    /// What `SaveSnapshotStream` sends, in order (an `Err` ends the stream
    /// with that status); `None`: `Unimplemented`, as a node from before
    /// the stream answers.
    snapshot_stream: Option<Arc<Vec<Result<v1::SaveSnapshotChunk, Status>>>>,
}

type SnapshotChunks = Pin<Box<dyn Stream<Item = Result<v1::SaveSnapshotChunk, Status>> + Send>>;

impl FakeAdmin {
    fn new(role: AdminRole) -> FakeAdmin {
        FakeAdmin {
            role,
            seen: Arc::default(),
            snapshot_stream: None,
        }
    }

    /// This node serves `SaveSnapshotStream` with `messages`.
    fn streaming(mut self, messages: Vec<Result<v1::SaveSnapshotChunk, Status>>) -> FakeAdmin {
        self.snapshot_stream = Some(Arc::new(messages));
        self
    }

    /// Logs the call; `Err` when this node redirects it.
    fn arrive(
        &self,
        method: &'static str,
        header: Option<&warden_proto::v1::RequestHeader>,
    ) -> Result<usize, Status> {
        let mut seen = self.seen.lock().unwrap();
        seen.push((
            method,
            header.map_or(0, |h| h.client_id),
            header.map_or(0, |h| h.request_id),
        ));
        let count = seen.iter().filter(|s| s.0 == method).count();
        match &self.role {
            AdminRole::Follower(leader) => Err(not_leader(&Some(leader.clone()))),
            _ => Ok(count),
        }
    }

    async fn change(
        &self,
        method: &'static str,
    ) -> Result<Response<v1::MembershipResponse>, Status> {
        self.arrive(method, None)?;
        match self.role {
            AdminRole::Silent => std::future::pending().await,
            AdminRole::NoCommit => Err(Status::unavailable(
                "the membership change did not commit within 10 s; check `warden cluster status`",
            )),
            _ => Ok(Response::new(v1::MembershipResponse {
                voters: vec![1, 2, 4],
                learners: vec![5],
                log_index: 30,
            })),
        }
    }

    /// How many times `method` reached this node.
    fn count(&self, method: &str) -> usize {
        self.seen
            .lock()
            .unwrap()
            .iter()
            .filter(|s| s.0 == method)
            .count()
    }
}

#[tonic::async_trait]
impl v1::admin_server::Admin for FakeAdmin {
    type SaveSnapshotStreamStream = SnapshotChunks;

    async fn save_snapshot_stream(
        &self,
        _request: Request<v1::SaveSnapshotRequest>,
    ) -> Result<Response<SnapshotChunks>, Status> {
        let Some(messages) = &self.snapshot_stream else {
            return Err(Status::unimplemented("SaveSnapshotStream"));
        };
        self.arrive("save_snapshot_stream", None)?;
        let messages: Vec<_> = messages.iter().cloned().collect();
        Ok(Response::new(Box::pin(tokio_stream::iter(messages))))
    }

    async fn top_locks(
        &self,
        _request: Request<v1::TopLocksRequest>,
    ) -> Result<Response<v1::TopLocksResponse>, Status> {
        self.arrive("top locks", None)?;
        Ok(Response::new(v1::TopLocksResponse {
            locks: vec![v1::HotLock {
                resource: "orders".into(),
                queue_length: 8,
                oldest_waiter_age_ms: 1_500,
                grants_last_minute: 3,
                expiries_last_minute: 1,
                wait_p99_ms: Some(40),
            }],
            read_index: 12,
        }))
    }

    async fn list(
        &self,
        _request: Request<v1::ListRequest>,
    ) -> Result<Response<v1::ListResponse>, Status> {
        self.arrive("list", None)?;
        Ok(Response::new(v1::ListResponse {
            locks: vec![
                v1::ListedLock {
                    resource: warden_client::election_key("scheduler"),
                    holder: None,
                    waiters: vec![],
                    lock_delay_remaining_ms: 2_500,
                    kind: "mutex".into(),
                    ..Default::default()
                },
                v1::ListedLock {
                    resource: "orders".into(),
                    holder: Some(v1::ListHolder {
                        lease_id: 3,
                        fencing_token: 9,
                        age_ms: 10,
                        ttl_remaining_ms: 900,
                        ..Default::default()
                    }),
                    waiters: vec![v1::ListWaiter {
                        lease_id: 4,
                        age_ms: 5,
                    }],
                    lock_delay_remaining_ms: 0,
                    kind: "mutex".into(),
                    ..Default::default()
                },
            ],
            read_index: 12,
        }))
    }

    async fn force_release(
        &self,
        request: Request<v1::ForceReleaseRequest>,
    ) -> Result<Response<v1::ForceReleaseResponse>, Status> {
        let r = request.into_inner();
        let n = self.arrive("force_release", r.header.as_ref())?;
        if matches!(self.role, AdminRole::Silent) && n == 1 {
            return std::future::pending().await;
        }
        Ok(Response::new(v1::ForceReleaseResponse {
            resource: r.resource,
            lease_id: 3,
            fencing_token: r.fencing_token,
        }))
    }

    async fn audit_trail(
        &self,
        _request: Request<v1::AuditTrailRequest>,
    ) -> Result<Response<v1::AuditTrailResponse>, Status> {
        self.arrive("audit_trail", None)?;
        Ok(Response::new(v1::AuditTrailResponse {
            records: vec![v1::AuditRecord {
                index: 17,
                resource: "orders".into(),
                lease_id: 3,
                fencing_token: 9,
                requested_by: "alice from 127.0.0.1:4000".into(),
                at_unix_ms: 1_700_000_000_000,
            }],
            read_index: 18,
        }))
    }

    async fn add_node(
        &self,
        _request: Request<v1::AddNodeRequest>,
    ) -> Result<Response<v1::MembershipResponse>, Status> {
        self.change("add_node").await
    }

    async fn remove_node(
        &self,
        _request: Request<v1::RemoveNodeRequest>,
    ) -> Result<Response<v1::MembershipResponse>, Status> {
        self.change("remove_node").await
    }

    async fn replace_node(
        &self,
        _request: Request<v1::ReplaceNodeRequest>,
    ) -> Result<Response<v1::MembershipResponse>, Status> {
        self.change("replace_node").await
    }

    async fn save_snapshot(
        &self,
        _request: Request<v1::SaveSnapshotRequest>,
    ) -> Result<Response<v1::SaveSnapshotResponse>, Status> {
        self.arrive("save_snapshot", None)?;
        Ok(Response::new(v1::SaveSnapshotResponse {
            cluster_id: "c1".into(),
            applied_index: 40,
            term: 3,
            leader_node_id: 2,
            data: vec![1, 2, 3],
            node_id: 2,
        }))
    }

    async fn grant_permission(
        &self,
        request: Request<v1::GrantPermissionRequest>,
    ) -> Result<Response<v1::AuthChangeResponse>, Status> {
        let r = request.into_inner();
        self.arrive("grant_permission", r.header.as_ref())?;
        if r.permission == v1::Permission::Admin as i32 {
            return Err(Status::permission_denied(
                "principal alice has no admin permission on prefix \"\"",
            ));
        }
        Ok(Response::new(v1::AuthChangeResponse {}))
    }

    async fn revoke_permission(
        &self,
        request: Request<v1::RevokePermissionRequest>,
    ) -> Result<Response<v1::AuthChangeResponse>, Status> {
        self.arrive("revoke_permission", request.get_ref().header.as_ref())?;
        Ok(Response::new(v1::AuthChangeResponse {}))
    }

    async fn delete_role(
        &self,
        request: Request<v1::DeleteRoleRequest>,
    ) -> Result<Response<v1::AuthChangeResponse>, Status> {
        self.arrive("delete_role", request.get_ref().header.as_ref())?;
        Ok(Response::new(v1::AuthChangeResponse {}))
    }

    async fn grant_role(
        &self,
        request: Request<v1::GrantRoleRequest>,
    ) -> Result<Response<v1::AuthChangeResponse>, Status> {
        self.arrive("grant_role", request.get_ref().header.as_ref())?;
        Ok(Response::new(v1::AuthChangeResponse {}))
    }

    async fn revoke_role(
        &self,
        request: Request<v1::RevokeRoleRequest>,
    ) -> Result<Response<v1::AuthChangeResponse>, Status> {
        self.arrive("revoke_role", request.get_ref().header.as_ref())?;
        Ok(Response::new(v1::AuthChangeResponse {}))
    }

    async fn deny(
        &self,
        request: Request<v1::DenyRequest>,
    ) -> Result<Response<v1::AuthChangeResponse>, Status> {
        self.arrive("deny", request.get_ref().header.as_ref())?;
        Ok(Response::new(v1::AuthChangeResponse {}))
    }

    async fn undeny(
        &self,
        request: Request<v1::DenyRequest>,
    ) -> Result<Response<v1::AuthChangeResponse>, Status> {
        self.arrive("undeny", request.get_ref().header.as_ref())?;
        Ok(Response::new(v1::AuthChangeResponse {}))
    }

    async fn list_denied(
        &self,
        _request: Request<v1::ListDeniedRequest>,
    ) -> Result<Response<v1::ListDeniedResponse>, Status> {
        self.arrive("list_denied", None)?;
        Ok(Response::new(v1::ListDeniedResponse {
            users: vec!["mallory".into()],
            serials: vec!["1f".into()],
            file_users: vec![],
            file_serials: vec!["2a".into()],
            read_index: 23,
        }))
    }

    async fn set_role_quota(
        &self,
        request: Request<v1::SetRoleQuotaRequest>,
    ) -> Result<Response<v1::AuthChangeResponse>, Status> {
        self.arrive("set_role_quota", request.get_ref().header.as_ref())?;
        Ok(Response::new(v1::AuthChangeResponse {}))
    }

    async fn set_limits(
        &self,
        request: Request<v1::SetLimitsRequest>,
    ) -> Result<Response<v1::AuthChangeResponse>, Status> {
        self.arrive("set_limits", request.get_ref().header.as_ref())?;
        Ok(Response::new(v1::AuthChangeResponse {}))
    }

    async fn list_roles(
        &self,
        _request: Request<v1::ListRolesRequest>,
    ) -> Result<Response<v1::ListRolesResponse>, Status> {
        self.arrive("list_roles", None)?;
        Ok(Response::new(v1::ListRolesResponse {
            roles: vec![v1::RoleInfo {
                name: "payments".into(),
                grants: vec![v1::RoleGrant {
                    prefix: "payments/".into(),
                    permission: v1::Permission::Lock as i32,
                }],
                quota: Some(v1::Quota {
                    leases: 5,
                    locks: 6,
                    waiters: 7,
                    clients: 8,
                    values: 9,
                    value_bytes: 10,
                    waits_per_resource: 11,
                    watches: 12,
                }),
            }],
            read_index: 21,
        }))
    }

    async fn list_users(
        &self,
        _request: Request<v1::ListUsersRequest>,
    ) -> Result<Response<v1::ListUsersResponse>, Status> {
        self.arrive("list_users", None)?;
        Ok(Response::new(v1::ListUsersResponse {
            users: vec![v1::UserInfo {
                principal: "carol".into(),
                roles: vec!["payments".into()],
                quota: None,
                usage: Some(v1::QuotaUsage {
                    leases: 1,
                    locks: 2,
                    waiters: 1,
                    clients: 3,
                    values: 4,
                    value_bytes: 5,
                }),
                denied: true,
            }],
            read_index: 22,
        }))
    }

    async fn get_limits(
        &self,
        _request: Request<v1::GetLimitsRequest>,
    ) -> Result<Response<v1::GetLimitsResponse>, Status> {
        self.arrive("get_limits", None)?;
        Ok(Response::new(v1::GetLimitsResponse {
            limits: Some(v1::ClusterLimits {
                max_leases: 500,
                max_clients: 600,
                default_quota: Some(v1::Quota {
                    leases: 1,
                    locks: 2,
                    waiters: 3,
                    clients: 4,
                    values: 5,
                    value_bytes: 6,
                    waits_per_resource: 7,
                    watches: 8,
                }),
            }),
            read_index: 23,
        }))
    }

    async fn auth_audit_trail(
        &self,
        _request: Request<v1::AuthAuditTrailRequest>,
    ) -> Result<Response<v1::AuthAuditTrailResponse>, Status> {
        self.arrive("auth_audit_trail", None)?;
        Ok(Response::new(v1::AuthAuditTrailResponse {
            records: vec![
                v1::AuthAuditRecord {
                    index: 5,
                    principal: "root".into(),
                    op: "grant_role".into(),
                    user: "carol".into(),
                    role: "payments".into(),
                    at_unix_ms: 1_700_000_000_000,
                    ..Default::default()
                },
                v1::AuthAuditRecord {
                    index: 6,
                    op: "set_role_quota".into(),
                    role: "payments".into(),
                    ..Default::default()
                },
            ],
            read_index: 24,
        }))
    }
}

/// Starts a fake admin node on 127.0.0.1:0; returns its address.
async fn start_admin(fake: FakeAdmin) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    tokio::spawn(
        tonic::transport::Server::builder()
            .add_service(v1::admin_server::AdminServer::new(fake))
            .serve_with_incoming(TcpListenerStream::new(listener)),
    );
    addr
}

async fn client_of(endpoints: &[&str]) -> Client {
    Client::connect(
        endpoints.iter().map(|e| e.to_string()).collect(),
        ClientOptions::default(),
    )
    .await
    .unwrap()
}

/// A port nothing listens on (bound, then closed): connects are refused.
fn refused_port() -> String {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().to_string()
}

// L3: every admin call follows a follower's redirect to the leader and its
// answer is converted field for field; a forced release carries the
// client's id and request id 1 on both attempts (S7); a membership change
// is repeated after a redirect (the follower did nothing).
#[tokio::test]
async fn admin_calls_follow_the_leader_hint() {
    let leader = FakeAdmin::new(AdminRole::Leader);
    let leader_addr = start_admin(leader.clone()).await;
    let follower = FakeAdmin::new(AdminRole::Follower(leader_addr.clone()));
    let follower_addr = start_admin(follower.clone()).await;

    let listing = client_of(&[&follower_addr])
        .await
        .admin()
        .list("")
        .await
        .unwrap();
    assert_eq!(listing.read_index, 12);
    assert_eq!(listing.locks.len(), 2);
    assert_eq!(listing.locks[0].election(), Some("scheduler"));
    assert_eq!(listing.locks[1].election(), None);
    // A free key in its lock-delay carries the time left; 0 on the wire is none.
    assert_eq!(listing.locks[0].lock_delay_remaining_ms, Some(2_500));
    // The fake names `holder` and its kind but no holders array (as a server
    // from before lock kinds would): the holders are that one holder.
    let holder = warden_client::ListedHolder {
        lease_id: 3,
        fencing_token: 9,
        age_ms: 10,
        ttl_remaining_ms: 900,
        mode: warden_client::GrantKind::Mutex,
        slot: None,
    };
    assert_eq!(
        listing.locks[1],
        warden_client::ListedLock {
            resource: "orders".into(),
            holder: Some(holder),
            holders: vec![holder],
            kind: Some(warden_client::ResourceKind::Mutex),
            waiters: vec![warden_client::ListedWaiter {
                lease_id: 4,
                age_ms: 5
            }],
            lock_delay_remaining_ms: None,
        }
    );

    // TopLocks follows the hint too and maps every field.
    let top = client_of(&[&follower_addr])
        .await
        .admin()
        .top_locks("", 20)
        .await
        .unwrap();
    assert_eq!(top.read_index, 12);
    assert_eq!(
        top.locks,
        vec![warden_client::HotLock {
            resource: "orders".into(),
            queue_length: 8,
            oldest_waiter_age_ms: 1_500,
            grants_last_minute: 3,
            expiries_last_minute: 1,
            wait_p99_ms: Some(40),
        }]
    );

    let trail = client_of(&[&follower_addr])
        .await
        .admin()
        .audit_trail()
        .await
        .unwrap();
    assert_eq!(trail.read_index, 18);
    assert_eq!(
        trail.records,
        vec![warden_client::AuditRecord {
            index: 17,
            resource: "orders".into(),
            lease_id: 3,
            fencing_token: 9,
            requested_by: "alice from 127.0.0.1:4000".into(),
            at_unix_ms: 1_700_000_000_000,
        }]
    );

    let saved = client_of(&[&follower_addr])
        .await
        .admin()
        .save_snapshot()
        .await
        .unwrap();
    assert_eq!(
        (saved.cluster_id.as_str(), saved.applied_index, saved.term),
        ("c1", 40, 3)
    );
    assert_eq!((saved.leader_node_id, saved.node_id), (2, 2));
    assert_eq!(saved.data, vec![1, 2, 3]);
    // The fake leader serves no SaveSnapshotStream (an older node): the
    // client fell back to the one-message SaveSnapshot.
    assert_eq!(leader.count("save_snapshot"), 1);

    let client = client_of(&[&follower_addr]).await;
    let released = client
        .admin()
        .force_release("orders", Some(9), "alice")
        .await
        .unwrap();
    assert_eq!(
        released,
        warden_client::ForceReleased {
            resource: "orders".into(),
            lease_id: 3,
            fencing_token: 9,
        }
    );
    let attempt = ("force_release", client.client_id(), 1);
    assert!(follower.seen.lock().unwrap().contains(&attempt));
    assert!(leader.seen.lock().unwrap().contains(&attempt));

    let membership = client_of(&[&follower_addr])
        .await
        .admin()
        .remove_node(3)
        .await
        .unwrap();
    assert_eq!(
        membership,
        warden_client::Membership {
            voters: vec![1, 2, 4],
            learners: vec![5],
            log_index: 30,
        }
    );
    assert_eq!(
        (follower.count("remove_node"), leader.count("remove_node")),
        (1, 1)
    );
}

/// A SaveSnapshotStream answer: the head declaring `declared` bytes, then
/// `pieces` as data messages, the last marked done.
fn snapshot_messages(
    declared: u64,
    pieces: &[&[u8]],
) -> Vec<Result<v1::SaveSnapshotChunk, Status>> {
    let mut out = vec![Ok(v1::SaveSnapshotChunk {
        head: Some(v1::SaveSnapshotHead {
            cluster_id: "c1".into(),
            applied_index: 41,
            term: 3,
            leader_node_id: 2,
            node_id: 2,
            data_bytes: declared,
        }),
        data: vec![],
        done: false,
    })];
    for (i, piece) in pieces.iter().enumerate() {
        out.push(Ok(v1::SaveSnapshotChunk {
            head: None,
            data: piece.to_vec(),
            done: i + 1 == pieces.len(),
        }));
    }
    out
}

/// What `save_snapshot` makes of a leader that streams `messages` (behind
/// a follower that redirects to it), and how often the leader was asked
/// the one-message SaveSnapshot.
async fn save_from(
    messages: Vec<Result<v1::SaveSnapshotChunk, Status>>,
) -> (Result<warden_client::SavedSnapshot, ClientError>, usize) {
    let leader = FakeAdmin::new(AdminRole::Leader).streaming(messages);
    let leader_addr = start_admin(leader.clone()).await;
    let follower = FakeAdmin::new(AdminRole::Follower(leader_addr));
    let follower_addr = start_admin(follower).await;
    let saved = client_of(&[&follower_addr])
        .await
        .admin()
        .save_snapshot()
        .await;
    (saved, leader.count("save_snapshot"))
}

// A snapshot in bounded messages (admin.proto SaveSnapshotStream): the
// client follows the redirect, puts the data messages back together in
// order with the head's metadata, and does not ask the one-message call.
#[tokio::test]
async fn save_snapshot_assembles_the_stream() {
    let (saved, unary) = save_from(snapshot_messages(7, &[b"abc", b"de", b"fg"])).await;
    assert_eq!(
        saved.unwrap(),
        warden_client::SavedSnapshot {
            cluster_id: "c1".into(),
            applied_index: 41,
            term: 3,
            leader_node_id: 2,
            node_id: 2,
            data: b"abcdefg".to_vec(),
        }
    );
    assert_eq!(unary, 0);
}

// A stream that breaks the rules is refused with a typed error naming the
// field and the limit, never returned short or long, and never made up by
// the one-message call: cut off before `done` (a leader that stopped
// mid-way), more or fewer bytes than `head.data_bytes`, a declared length
// above MAX_SNAPSHOT_BYTES (4 GiB), a data message above 1 MiB, and a
// stream that fails mid-way.
#[tokio::test]
async fn save_snapshot_refuses_bad_streams() {
    use warden_client::SnapshotStreamError as E;
    let refusal = |r: Result<warden_client::SavedSnapshot, ClientError>| match r {
        Err(ClientError::SnapshotStream { error }) => error,
        other => panic!("expected a snapshot stream refusal, got {other:?}"),
    };

    let mut cut = snapshot_messages(7, &[b"abc", b"de", b"fg"]);
    cut.pop();
    let (r, unary) = save_from(cut).await;
    assert_eq!(
        refusal(r),
        E::Unfinished {
            received: 5,
            declared: 7
        }
    );
    assert_eq!(unary, 0);

    let (r, _) = save_from(snapshot_messages(6, &[b"abc", b"de", b"fg"])).await;
    assert_eq!(refusal(r), E::Overrun { declared: 6 });

    let (r, _) = save_from(snapshot_messages(8, &[b"abc", b"de", b"fg"])).await;
    assert_eq!(
        refusal(r),
        E::Short {
            received: 7,
            declared: 8
        }
    );

    let declared = warden_client::MAX_SNAPSHOT_BYTES + 1;
    let (r, _) = save_from(snapshot_messages(declared, &[b"abc"])).await;
    let e = refusal(r);
    assert_eq!(
        e,
        E::TooLarge {
            declared,
            limit: 4 * 1024 * 1024 * 1024
        }
    );
    let text = ClientError::SnapshotStream { error: e }.to_string();
    assert!(
        text.contains("head.data_bytes") && text.contains("MAX_SNAPSHOT_BYTES"),
        "{text}"
    );

    let big = vec![0u8; warden_client::MAX_SNAPSHOT_CHUNK_BYTES + 1];
    let (r, _) = save_from(snapshot_messages(big.len() as u64, &[&big])).await;
    assert_eq!(
        refusal(r),
        E::ChunkTooLarge {
            message: 2,
            bytes: big.len(),
            limit: 1024 * 1024
        }
    );

    let mut broken = snapshot_messages(7, &[b"abc", b"de", b"fg"]);
    broken[2] = Err(Status::internal("disk on fire"));
    let (r, unary) = save_from(broken).await;
    match refusal(r) {
        E::Broken {
            received,
            declared,
            reason,
        } => {
            assert_eq!((received, declared), (3, 7));
            assert!(reason.contains("disk on fire"), "{reason}");
        }
        other => panic!("expected Broken, got {other:?}"),
    }
    assert_eq!(unary, 0);
}

// S7 and L3 for the auth calls: an auth change follows the follower's
// redirect and carries the client's id and one request id on both attempts
// (the server applies it once); a refusal (PermissionDenied) is final and
// keeps the server's message; the auth reads convert field for field.
#[tokio::test]
async fn auth_calls_carry_a_request_id_and_convert_their_answers() {
    use warden_client::{AuthChange, Permission};
    let leader = FakeAdmin::new(AdminRole::Leader);
    let leader_addr = start_admin(leader.clone()).await;
    let follower = FakeAdmin::new(AdminRole::Follower(leader_addr.clone()));
    let follower_addr = start_admin(follower.clone()).await;
    let client = client_of(&[&follower_addr]).await;
    let admin = client.admin();
    admin
        .grant_permission("payments", "payments/", Permission::Lock)
        .await
        .unwrap();
    let attempt = ("grant_permission", client.client_id(), 1);
    assert!(follower.seen.lock().unwrap().contains(&attempt));
    assert!(leader.seen.lock().unwrap().contains(&attempt));
    admin.grant_role("carol", "payments").await.unwrap();
    assert!(leader
        .seen
        .lock()
        .unwrap()
        .contains(&("grant_role", client.client_id(), 2)));
    let err = admin
        .grant_permission("payments", "", Permission::Admin)
        .await
        .unwrap_err();
    assert!(
        matches!(&err, ClientError::PermissionDenied { message } if message.contains("no admin permission on prefix")),
        "{err:?}"
    );
    assert_eq!(
        leader.count("grant_permission"),
        2,
        "a refusal is not retried"
    );

    let roles = admin.roles().await.unwrap();
    assert_eq!(roles.read_index, 21);
    assert_eq!(
        roles.roles,
        vec![warden_client::RoleInfo {
            name: "payments".into(),
            grants: vec![warden_client::RoleGrant {
                prefix: "payments/".into(),
                permission: Some(Permission::Lock),
            }],
            quota: Some(warden_client::Quota {
                leases: 5,
                locks: 6,
                waiters: 7,
                clients: 8,
                values: 9,
                value_bytes: 10,
                waits_per_resource: 11,
                watches: 12,
            }),
        }]
    );
    let users = admin.users().await.unwrap();
    assert_eq!(users.users.len(), 1);
    assert_eq!(users.users[0].principal, "carol");
    assert_eq!(users.users[0].quota, None);
    assert_eq!(users.users[0].usage.clients, 3);
    assert!(users.users[0].denied);
    admin
        .deny(warden_client::DenyTarget::User("mallory".into()))
        .await
        .unwrap();
    admin
        .undeny(warden_client::DenyTarget::Serial("1f".into()))
        .await
        .unwrap();
    let seen = leader.seen.lock().unwrap().clone();
    assert!(seen.contains(&("deny", client.client_id(), 4)), "{seen:?}");
    assert!(
        seen.contains(&("undeny", client.client_id(), 5)),
        "{seen:?}"
    );
    let denied = admin.denied().await.unwrap();
    assert_eq!(
        denied,
        warden_client::DenyList {
            users: vec!["mallory".into()],
            serials: vec!["1f".into()],
            file_users: vec![],
            file_serials: vec!["2a".into()],
            read_index: 23,
        }
    );
    assert_eq!(
        (
            users.users[0].usage.values,
            users.users[0].usage.value_bytes
        ),
        (4, 5)
    );
    let limits = admin.limits().await.unwrap();
    assert_eq!(
        (limits.limits.max_leases, limits.limits.max_clients),
        (500, 600)
    );
    assert_eq!(limits.limits.default_quota.waiters, 3);
    assert_eq!(
        (
            limits.limits.default_quota.values,
            limits.limits.default_quota.value_bytes,
            limits.limits.default_quota.waits_per_resource
        ),
        (5, 6, 7)
    );
    let trail = admin.auth_audit_trail().await.unwrap();
    assert_eq!(trail.records.len(), 2);
    assert_eq!(trail.records[0].principal.as_deref(), Some("root"));
    assert_eq!(
        trail.records[0].change,
        AuthChange::GrantRole {
            user: "carol".into(),
            role: "payments".into(),
        }
    );
    assert_eq!(trail.records[1].principal, None, "anonymous");
    assert_eq!(
        trail.records[1].change,
        AuthChange::SetRoleQuota {
            role: "payments".into(),
            quota: None,
        }
    );
}

// S7 for membership changes (no request id): a connection that never opened
// sent nothing, so the change goes on to the next endpoint, and reaches the
// leader exactly once.
#[tokio::test]
async fn a_membership_change_is_repeated_when_the_connection_never_opened() {
    let leader = FakeAdmin::new(AdminRole::Leader);
    let leader_addr = start_admin(leader.clone()).await;
    let dead = refused_port();
    let client = client_of(&[&dead, &leader_addr]).await;
    let membership = client.admin().add_node(4, "127.0.0.1:7004").await.unwrap();
    assert_eq!(membership.voters, vec![1, 2, 4]);
    assert_eq!(leader.count("add_node"), 1);
    assert_eq!(client.cached_leader(), Some(leader_addr));
}

// S7 for membership changes: an attempt that timed out may have applied the
// change, so it is not repeated: the call ends with OutcomeUnknown after one
// attempt (at the 45 s attempt timeout, not the 60 s deadline), naming what
// happened. Paused time; no real wait.
#[tokio::test(start_paused = true)]
async fn a_membership_change_that_timed_out_is_not_repeated() {
    let node = FakeAdmin::new(AdminRole::Silent);
    let client = in_memory_client_of(tonic::service::Routes::new(
        v1::admin_server::AdminServer::new(node.clone()),
    ))
    .await;
    let started = tokio::time::Instant::now();
    let err = client.admin().remove_node(3).await.unwrap_err();
    assert_eq!(started.elapsed(), warden_client::MEMBERSHIP_ATTEMPT_TIMEOUT);
    match &err {
        ClientError::OutcomeUnknown { tried, last_error } => {
            assert_eq!(tried, &vec!["fake-node:7001".to_string()]);
            assert!(
                last_error.contains("no answer within 45000 ms"),
                "{last_error}"
            );
        }
        other => panic!("expected OutcomeUnknown, got {other:?}"),
    }
    assert!(
        err.to_string().contains("may or may not have been applied"),
        "{err}"
    );
    assert_eq!(node.count("remove_node"), 1, "never repeated");
}

// S7 for membership changes: `Unavailable` without a redirect ("did not
// commit within 10 s") may follow an applied change: not repeated either,
// and the server's message reaches the caller.
#[tokio::test(start_paused = true)]
async fn a_membership_change_answered_unavailable_without_a_redirect_is_not_repeated() {
    let node = FakeAdmin::new(AdminRole::NoCommit);
    let client = in_memory_client_of(tonic::service::Routes::new(
        v1::admin_server::AdminServer::new(node.clone()),
    ))
    .await;
    let err = client
        .admin()
        .replace_node(3, 4, "127.0.0.1:7004")
        .await
        .unwrap_err();
    assert!(
        matches!(&err, ClientError::OutcomeUnknown { last_error, .. } if last_error.contains("did not commit within 10 s")),
        "{err:?}"
    );
    assert_eq!(node.count("replace_node"), 1, "never repeated");
}

// S7: a forced release carries a request id, so an attempt that timed out
// (4 s) is repeated, with the same client id and request id, and the
// second answer is the call's.
#[tokio::test(start_paused = true)]
async fn a_forced_release_that_timed_out_is_repeated_with_its_request_id() {
    let node = FakeAdmin::new(AdminRole::Silent);
    let client = in_memory_client_of(tonic::service::Routes::new(
        v1::admin_server::AdminServer::new(node.clone()),
    ))
    .await;
    let released = client
        .admin()
        .force_release("orders", None, "alice")
        .await
        .unwrap();
    assert_eq!(released.resource, "orders");
    let seen = node.seen.lock().unwrap().clone();
    let attempt = ("force_release", client.client_id(), 1);
    assert_eq!(seen, vec![attempt, attempt]);
}

/// A network on which no connection ever opens (every connect hangs).
#[derive(Debug)]
struct NeverConnects;

impl Connector for NeverConnects {
    fn channel(&self, endpoint: tonic::transport::Endpoint) -> tonic::transport::Channel {
        endpoint.connect_with_connector_lazy(tower::service_fn(|_uri| {
            std::future::pending::<
                Result<hyper_util::rt::TokioIo<tokio::io::DuplexStream>, std::io::Error>,
            >()
        }))
    }
}

// S7 for membership changes: an attempt whose connect timed out sent
// nothing, so it is repeated (each attempt costs the 500 ms connect
// timeout), as long as a whole attempt (45 s) still fits before the 60 s
// deadline; then the call ends as Unavailable (no node reachable, nothing
// applied), never cut mid-attempt into OutcomeUnknown. Paused time.
#[tokio::test(start_paused = true)]
async fn a_membership_change_is_repeated_when_the_connect_timed_out() {
    let options = ClientOptions {
        connector: Some(Arc::new(NeverConnects)),
        ..ClientOptions::default()
    };
    let client = Client::connect(vec!["a:7001".into(), "b:7002".into()], options)
        .await
        .unwrap();
    let started = tokio::time::Instant::now();
    let err = client.admin().remove_node(3).await.unwrap_err();
    match &err {
        ClientError::Unavailable {
            tried, last_error, ..
        } => {
            assert_eq!(tried, &vec!["a:7001".to_string(), "b:7002".to_string()]);
            assert!(!last_error.contains("deadline"), "{last_error}");
        }
        other => panic!("expected Unavailable, got {other:?}"),
    }
    let last_start = warden_client::MEMBERSHIP_DEADLINE - warden_client::MEMBERSHIP_ATTEMPT_TIMEOUT;
    let waited = started.elapsed();
    assert!(
        waited > last_start - Duration::from_secs(1)
            && waited <= last_start + Duration::from_secs(1),
        "{waited:?}"
    );
}

// S8: a caller that drops its waiting acquire (once it is queued) takes the
// wait back: the client sends one CancelWait naming that acquire's request
// id and resource, with a request id of its own (S7), in the background.
#[tokio::test]
async fn an_abandoned_waiting_acquire_sends_cancel_wait() {
    let node = start_node(Role::QueuesForever, false).await;
    let client = Client::connect(vec![node.addr.clone()], ClientOptions::default())
        .await
        .unwrap();
    let (queued_tx, queued_rx) = tokio::sync::oneshot::channel();
    let queued_tx = Mutex::new(Some(queued_tx));
    let options = AcquireOptions {
        wait: Duration::from_secs(30),
        ..ten_seconds()
    };
    let waiting = {
        let client = client.clone();
        tokio::spawn(async move {
            client
                .acquire_with_progress("orders", options, move |_: Queued| {
                    if let Some(tx) = queued_tx.lock().unwrap().take() {
                        let _ = tx.send(());
                    }
                })
                .await
        })
    };
    queued_rx.await.expect("queued");
    assert!(
        node.cancels.lock().unwrap().is_empty(),
        "nothing cancelled while it waits"
    );
    waiting.abort();
    assert!(waiting.await.unwrap_err().is_cancelled());
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while node.cancels.lock().unwrap().is_empty() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "no CancelWait was sent"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let acquires = node.acquires.lock().unwrap().clone();
    let cancels = node.cancels.lock().unwrap().clone();
    assert_eq!(acquires.len(), 1);
    assert_eq!(
        cancels,
        vec![(client.client_id(), 2, acquires[0].1, "orders".to_string())],
        "one cancel, for that acquire, with the next request id"
    );
}

// A try-lock (no wait) and a waiting acquire that got its final answer
// send no CancelWait.
#[tokio::test]
async fn a_finished_acquire_sends_no_cancel_wait() {
    let node = start_node(Role::Leader { drops: 0 }, false).await;
    let client = Client::connect(vec![node.addr.clone()], ClientOptions::default())
        .await
        .unwrap();
    let options = AcquireOptions {
        wait: Duration::from_secs(5),
        ..ten_seconds()
    };
    let result = client.acquire("orders", options).await.unwrap();
    assert!(
        matches!(result, AcquireResult::Granted { .. }),
        "{result:?}"
    );
    client.acquire("orders", ten_seconds()).await.unwrap();
    // Any cancel would have been sent from a task spawned when the acquire
    // ended; a status call after both puts one round trip behind them.
    let _ = client.status("orders").await;
    assert!(node.cancels.lock().unwrap().is_empty());
}

// A waiting acquire the server refused (InvalidArgument: nothing queued)
// sends no CancelWait: the cancel would only commit a needless entry.
#[tokio::test]
async fn a_refused_waiting_acquire_sends_no_cancel_wait() {
    let node = start_node(Role::Refuser, false).await;
    let client = Client::connect(vec![node.addr.clone()], ClientOptions::default())
        .await
        .unwrap();
    let options = AcquireOptions {
        wait: Duration::from_secs(5),
        ..ten_seconds()
    };
    let err = client.acquire("orders", options).await.unwrap_err();
    assert!(
        matches!(err, ClientError::InvalidArgument { .. }),
        "{err:?}"
    );
    // Any cancel is sent from a task spawned as the acquire returned; a
    // status call after it puts one round trip behind that task.
    let _ = client.status("orders").await;
    assert!(node.cancels.lock().unwrap().is_empty());
}

// No client hard-codes what the server publishes: the election key is the
// server's published prefix and the name, and the settings are read once
// (one ClusterStatus) however many mutating calls follow.
#[tokio::test]
async fn the_election_key_and_the_window_are_read_from_cluster_status_once() {
    let node = start_node(
        Role::Publishes {
            election_prefix: "\u{1}elect-v2/",
        },
        false,
    )
    .await;
    let client = Client::connect(vec![node.addr.clone()], ClientOptions::default())
        .await
        .unwrap();
    assert_eq!(
        client.election_key("scheduler").await,
        "\u{1}elect-v2/scheduler"
    );
    for _ in 0..3 {
        let granted = client.acquire("orders", ten_seconds()).await.unwrap();
        assert!(matches!(granted, AcquireResult::Granted { .. }));
    }
    assert_eq!(node.statuses.load(Ordering::SeqCst), 1, "asked once");
    assert_eq!(node.acquires.lock().unwrap().len(), 3);
}

// A server that does not answer ClusterStatus (older, or unreachable for
// it) leaves the defaults in place and the calls go on.
#[tokio::test]
async fn without_published_settings_the_defaults_hold() {
    let node = start_node(Role::Leader { drops: 0 }, false).await;
    let client = Client::connect(vec![node.addr.clone()], ClientOptions::default())
        .await
        .unwrap();
    let granted = client.acquire("orders", ten_seconds()).await.unwrap();
    assert!(matches!(granted, AcquireResult::Granted { .. }));
    assert_eq!(
        client.election_key("scheduler").await,
        warden_client::election_key("scheduler")
    );
}
