"""The asyncio :class:`Client`: leader following, retries within a deadline,
request ids, and every call of the public API.

The path of a call (docs/semantics.md L3): it goes to the cached leader (or
the first endpoint). A follower answers ``Unavailable`` with ``warden-leader:
host:port``; the call is re-sent there at once. A node that cannot be reached,
or knows no leader, makes the client try the next endpoint at once; after a
whole round failed it pauses (25 ms doubling, capped at 200 ms). Each attempt
waits at most 500 ms, the whole call at most 5 s (defaults; a waiting acquire
gets its wait on top); then it fails with NoQuorumError (servers answered but
none could serve) or UnavailableError (none reachable), naming what it tried.

Exactly once (S7): every mutating call carries ``RequestHeader{client_id,
request_id, acked_request_id}``; a retry reuses its request id, so the server
applies it once; at most the in-flight window of ids is out above the
watermark (:mod:`warden_client.requests`).
"""

from __future__ import annotations

import asyncio
import logging
import secrets
import weakref
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

import grpc
from grpc import aio

from .._proto import (
    admin_pb2,
    admin_pb2_grpc,
    lease_pb2,
    lease_pb2_grpc,
    warden_pb2,
    warden_pb2_grpc,
    watch_pb2_grpc,
)
from ..clock import Clock
from ..errors import (
    InvalidArgumentError,
    LeaseNotFoundError,
    NoQuorumError,
    StatusInfo,
    TransportError,
    UnavailableError,
    UnimplementedError,
    WardenError,
    error_from_status,
    is_retryable,
    server_answered,
    status_of,
)
from ..requests import InFlight, RequestIds
from ..routing import CallPlan, leader_hint, parse_endpoints
from ..types import (
    DEFAULT_ELECTION_PREFIX,
    DEFAULT_MAX_REQUESTS_IN_FLIGHT,
    CancelWaitResult,
    ClientOptions,
    ClusterStatus,
    Granted,
    Holder,
    LeaseGrantResult,
    LeaseInfo,
    ListedLock,
    ListedWaiter,
    LockMode,
    Member,
    NotGranted,
    NotGrantedReason,
    Queued,
    ReleaseResult,
    RenewResult,
    ResourceStatus,
    ResourceToken,
    TokenState,
    ValidateResult,
)

if TYPE_CHECKING:
    from .session import Session
    from .watch import Observer, Watcher

log = logging.getLogger("warden_client")

T = TypeVar("T")

#: Largest id the cluster hands out (2**53 - 1); the client id stays below it.
MAX_ID = (1 << 53) - 1


class AttemptFailed(Exception):
    """An attempt failed without a status of its own (it timed out, or its
    stream ended without a final message): retried like a lost connection."""


@dataclass
class AcquireControl:
    """How an acquire behaves when its caller abandons it (the task is
    cancelled). ``await_cancel_wait``: the cancellation propagates only once
    the CancelWait has committed (or failed); a session that lost its lease
    cancels its waits without waiting."""

    await_cancel_wait: bool = True
    #: Set when a session cancelled the acquire because it was lost.
    cancelled_by_session: bool = False


class _Node:
    """One node's channel and stubs."""

    def __init__(self, channel: aio.Channel) -> None:
        self.channel = channel
        self.lock = warden_pb2_grpc.LockStub(channel)
        self.lease = lease_pb2_grpc.LeaseStub(channel)
        self.watch = watch_pb2_grpc.WatchStub(channel)
        self.admin = admin_pb2_grpc.AdminStub(channel)


def ms(seconds: float, name: str) -> int:
    """Whole milliseconds of a duration argument (refused if negative)."""
    if seconds < 0:
        raise InvalidArgumentError(f"{name}: must not be negative; got {seconds}", field=name)
    return round(seconds * 1000)


def _holder(h: warden_pb2.Holder) -> Holder:
    return Holder(
        lease_id=h.lease_id,
        fencing_token=h.fencing_token,
        ttl_remaining_ms=h.ttl_remaining_ms,
        ttl_ms=h.ttl_ms,
        value=h.value,
        mode=LockMode(h.mode) if h.mode in (1, 2) else LockMode.UNSPECIFIED,
        slot=h.slot if h.HasField("slot") else None,
    )


async def read_within(call: Any, timeout_s: float) -> Any:
    """The next message of a stream within ``timeout_s``; raises AttemptFailed
    on a timeout or a stream that ended cleanly, AioRpcError on its status."""
    try:
        message = await asyncio.wait_for(call.read(), max(timeout_s, 0.0))
    except TimeoutError:
        raise AttemptFailed(f"no answer within {round(timeout_s * 1000)} ms") from None
    if message is aio.EOF:
        # The server ends a stream with a status; a clean end before the
        # final message means the stream was cut (re-send, same request id).
        code = await call.code()
        if code is not grpc.StatusCode.OK:
            raise TransportError(f"stream ended with {code.name}")
        raise AttemptFailed("stream ended without a final message")
    return message


class Client:
    """An asyncio client of a Warden cluster.

    ``endpoints``: any members, as ``host:port`` strings (a list or one
    comma-separated string); the leader is found by following hints. No
    connection is made here; channels open on first use. Use ``async with
    Client(...) as client:`` or call :meth:`close`.

    Raises InvalidArgumentError (field ``endpoints``) for a malformed
    endpoint, TlsConfigError for unusable TLS files.
    """

    def __init__(self, endpoints: str | Sequence[str], options: ClientOptions | None = None) -> None:
        self._options = options or ClientOptions()
        self._endpoints = parse_endpoints(endpoints)
        for name in ("deadline_s", "attempt_timeout_s"):
            if getattr(self._options, name) <= 0:
                raise InvalidArgumentError(f"{name}: must be greater than 0", field=name)
        self._credentials = self._options.tls.channel_credentials() if self._options.tls else None
        self._client_id = secrets.randbelow(MAX_ID) + 1
        self._nodes: dict[str, _Node] = {}
        self._leader: str | None = None
        window = self._options.max_requests_in_flight or DEFAULT_MAX_REQUESTS_IN_FLIGHT
        self._ids = RequestIds(window)
        self._renew_sequence = 0
        self._params_known = False
        self._params_lock: asyncio.Lock | None = None
        self._election_prefix = DEFAULT_ELECTION_PREFIX
        self._background: set[asyncio.Task[Any]] = set()
        self._sessions: weakref.WeakSet[Session] = weakref.WeakSet()
        self._warned_no_cancel_wait = False
        self._closed = False

    # --- identity and plumbing -------------------------------------------

    @property
    def client_id(self) -> int:
        """This client's id, sent with every mutating request (S7): random,
        never 0, below 2**53, one per client instance."""
        return self._client_id

    @property
    def endpoints(self) -> tuple[str, ...]:
        return self._endpoints

    @property
    def options(self) -> ClientOptions:
        return self._options

    @property
    def cached_leader(self) -> str | None:
        """The address that last served a call, if any."""
        return self._leader

    @property
    def max_requests_in_flight(self) -> int:
        """The in-flight window in force."""
        return self._ids.window

    @property
    def request_ids(self) -> RequestIds:
        """The request-id bookkeeping (read-only use: ``acked``)."""
        return self._ids

    async def __aenter__(self) -> Client:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        """Stops the keep-alive of every session still open on this client
        (they are lost, CLOSED; their leases expire after their TTL: close
        the sessions first to revoke them), waits (at most the call deadline)
        for cancels still being sent, then closes every channel."""
        if self._closed:
            return
        self._closed = True
        for session in list(self._sessions):
            await session.stop()
        if self._background:
            await asyncio.wait(set(self._background), timeout=self._options.deadline_s)
        for task in list(self._background):
            task.cancel()
        for node in self._nodes.values():
            await node.channel.close()
        self._nodes.clear()

    def _node(self, address: str) -> _Node:
        node = self._nodes.get(address)
        if node is None:
            attempt_ms = round(self._options.attempt_timeout_s * 1000)
            channel_options: list[tuple[str, Any]] = [
                # Detects a dead or partitioned node during a long wait.
                ("grpc.keepalive_time_ms", 1000),
                ("grpc.keepalive_timeout_ms", max(attempt_ms, 1000)),
                ("grpc.http2.max_pings_without_data", 0),
                # A node that comes back is reached again within a second.
                ("grpc.initial_reconnect_backoff_ms", 100),
                ("grpc.min_reconnect_backoff_ms", 100),
                ("grpc.max_reconnect_backoff_ms", 1000),
            ]
            if self._options.tls is not None and self._credentials is not None:
                channel_options += self._options.tls.channel_options()
                channel = aio.secure_channel(address, self._credentials, options=channel_options)
            else:
                channel = aio.insecure_channel(address, options=channel_options)
            node = _Node(channel)
            self._nodes[address] = node
        return node

    def spawn(self, coro: Awaitable[T]) -> asyncio.Task[T]:
        """Runs ``coro`` in the background, kept until it ends (``close``
        waits for it)."""
        task: asyncio.Task[T] = asyncio.ensure_future(coro)
        self._background.add(task)
        task.add_done_callback(self._background.discard)
        return task

    def header(self, in_flight: InFlight) -> warden_pb2.RequestHeader:
        """The request header of ``in_flight``: the same on every retry (S7)."""
        return warden_pb2.RequestHeader(
            client_id=self._client_id,
            request_id=in_flight.request_id,
            acked_request_id=in_flight.acked_request_id,
        )

    def next_renew_sequence(self) -> int:
        """A new renew sequence number, one per attempt (S5)."""
        self._renew_sequence += 1
        return self._renew_sequence

    async def begin_request(self) -> InFlight:
        """A new request id, within the in-flight window (waits for room at
        most one call deadline)."""
        await self._server_params()
        return await self._ids.begin(self._options.deadline_s)

    def _deadline(self, seconds: float | None = None) -> float:
        return asyncio.get_running_loop().time() + (self._options.deadline_s if seconds is None else seconds)

    # --- the retry loop ---------------------------------------------------

    async def call(
        self,
        op: str,
        deadline: float,
        attempt: Callable[[str, _Node], Awaitable[T]],
        *,
        unimplemented_is_final: bool = False,
    ) -> T:
        """Runs ``attempt(address, node)`` on the leader, following hints and
        rotating over the endpoints, until it succeeds, fails for good, or
        ``deadline`` (event-loop time) passes. Every failure that is not a
        final answer is retried, so ``attempt`` must be safe to repeat: a
        read, a renew, or a mutation with a request id."""
        loop = asyncio.get_running_loop()
        started = loop.time()
        plan = CallPlan(self._endpoints, self._leader, self._options.backoff_cap_s)
        target = plan.first
        answered_any = False
        last_error = "the deadline passed before the first attempt"
        last_status: StatusInfo | None = None
        while True:
            left = deadline - loop.time()
            if left <= 0:
                break
            timeout = asyncio.timeout(left)
            try:
                async with timeout:
                    value = await attempt(target, self._node(target))
            except TimeoutError:
                if not timeout.expired():
                    raise
                last_error = f"{target}: no answer before the deadline"
                break
            except aio.AioRpcError as e:
                status = status_of(e)
                final = not is_retryable(status) or (
                    unimplemented_is_final and status.code is grpc.StatusCode.UNIMPLEMENTED
                )
                if final:
                    # The node answered for the cluster: as good a first try as any.
                    self._leader = target
                    raise error_from_status(status) from None
                answered = server_answered(status)
                hint = leader_hint(status.metadata)
                last_status = status
                last_error = f"{target}: {status.describe()}"
            except AttemptFailed as e:
                answered, hint, last_status = False, None, None
                last_error = f"{target}: {e}"
            else:
                self._leader = target
                return value
            answered_any |= answered
            if self._leader == target:
                self._leader = None
            log.debug("%s: attempt failed (%s); retrying (hint %s)", op, last_error, hint)
            pause, nxt = plan.after_failure(target, hint, answered)
            if loop.time() + pause >= deadline:
                break
            if pause > 0:
                await asyncio.sleep(pause)
            target = nxt
        waited_ms = round((loop.time() - started) * 1000)
        tried = plan.tried
        if answered_any:
            raise NoQuorumError(
                f"no quorum: no leader served {op} within {waited_ms} ms (tried {', '.join(tried)}); "
                f"last error: {last_error}",
                tried=tried,
                waited_ms=waited_ms,
                last_error=last_error,
                last_status=last_status,
            )
        raise UnavailableError(
            f"unavailable: no server reachable for {op} after trying for {waited_ms} ms (tried {', '.join(tried)}); "
            f"last error: {last_error}",
            tried=tried,
            waited_ms=waited_ms,
            last_error=last_error,
            last_status=last_status,
        )

    async def _unary(
        self,
        op: str,
        method: Callable[[_Node], Any],
        request: Any,
        *,
        deadline_s: float | None = None,
        unimplemented_is_final: bool = False,
    ) -> Any:
        attempt_timeout = self._options.attempt_timeout_s

        async def attempt(_address: str, node: _Node) -> Any:
            return await method(node)(request, timeout=attempt_timeout)

        return await self.call(op, self._deadline(deadline_s), attempt, unimplemented_is_final=unimplemented_is_final)

    # --- what the server publishes --------------------------------------

    async def _server_params(self) -> None:
        """Reads once what the server publishes for clients (the in-flight
        window, the election prefix) from ClusterStatus; until a read
        succeeds, the defaults hold and the next call asks again."""
        if self._params_known:
            return
        if self._params_lock is None:
            self._params_lock = asyncio.Lock()
        async with self._params_lock:
            if self._params_known:
                return
            try:
                await self.cluster_status(deadline_s=2 * self._options.attempt_timeout_s)
            except WardenError as e:
                log.debug("cluster status for the published limits failed (%s); using defaults", e)

    def _adopt(self, status: ClusterStatus) -> None:
        if status.max_requests_in_flight:
            # A window of the caller's own only narrows the server's: beyond
            # it, the server no longer keeps the oldest outcome (S7).
            own = self._options.max_requests_in_flight
            self._ids.set_window(min(own, status.max_requests_in_flight) if own else status.max_requests_in_flight)
        if status.election_prefix:
            self._election_prefix = status.election_prefix
        self._params_known = True

    async def election_prefix(self) -> str:
        """The election key prefix the server publishes (or the default)."""
        await self._server_params()
        return self._election_prefix

    # --- reads ------------------------------------------------------------

    async def cluster_status(self, *, deadline_s: float | None = None) -> ClusterStatus:
        """Membership, leader, term and indexes as the leader sees them, and
        what the server publishes for clients."""
        reply: warden_pb2.ClusterStatusResponse = await self._unary(
            "cluster status",
            lambda n: n.lock.ClusterStatus,
            warden_pb2.ClusterStatusRequest(),
            deadline_s=deadline_s,
        )
        status = ClusterStatus(
            cluster_id=reply.cluster_id,
            leader_id=reply.leader_id,
            term=reply.term,
            commit_index=reply.commit_index,
            node_id=reply.node_id,
            members=tuple(
                Member(id=m.id, addr=m.addr, role=m.role, applied_index=m.applied_index) for m in reply.members
            ),
            # 0 / "" from a server that publishes none: the defaults hold.
            max_requests_in_flight=reply.max_requests_in_flight or None,
            election_prefix=reply.election_prefix or None,
        )
        self._adopt(status)
        return status

    async def status(self, resource: str) -> ResourceStatus:
        """Who holds ``resource`` and how many wait (linearizable read)."""
        reply: warden_pb2.StatusResponse = await self._unary(
            "status", lambda n: n.lock.Status, warden_pb2.StatusRequest(resource=resource)
        )
        return ResourceStatus(
            resource=reply.resource,
            holder=_holder(reply.holder) if reply.HasField("holder") else None,
            waiters=reply.waiters,
            read_index=reply.read_index,
            kind=reply.kind,
            limit=reply.limit,
            holders=tuple(_holder(h) for h in reply.holders),
        )

    async def validate(self, resource: str, fencing_token: int) -> ValidateResult:
        """Whether ``fencing_token`` is the current grant of ``resource``.
        ADVISORY: stale by the time it is used; only the resource-side check
        (keep the highest token accepted) closes that window."""
        reply: warden_pb2.ValidateResponse = await self._unary(
            "validate",
            lambda n: n.lock.Validate,
            warden_pb2.ValidateRequest(resource=resource, fencing_token=fencing_token),
        )
        return ValidateResult(
            resource=reply.resource,
            fencing_token=reply.fencing_token,
            state=TokenState(reply.state),
            holder_token=reply.holder_token,
            read_index=reply.read_index,
        )

    async def lease_time_to_live(self, lease_id: int) -> LeaseInfo:
        """A lease's TTL, time left, locks and waits. LeaseNotFoundError if it
        is not live."""
        reply: lease_pb2.LeaseTimeToLiveResponse = await self._unary(
            "lease ttl",
            lambda n: n.lease.LeaseTimeToLive,
            lease_pb2.LeaseTimeToLiveRequest(lease_id=lease_id),
        )
        return LeaseInfo(
            lease_id=reply.lease_id,
            ttl_ms=reply.ttl_ms,
            ttl_remaining_ms=reply.ttl_remaining_ms,
            locks=tuple(reply.locks),
            waits=tuple(reply.waits),
            graced=reply.graced,
        )

    async def list_locks(self, prefix: str = "") -> tuple[ListedLock, ...]:
        """Every resource whose name starts with ``prefix``: its holder and its
        waiters in queue order (Admin List, linearizable)."""
        reply: admin_pb2.ListResponse = await self._unary(
            "list", lambda n: n.admin.List, admin_pb2.ListRequest(prefix=prefix)
        )
        return tuple(
            ListedLock(
                resource=lock.resource,
                holder=(
                    Holder(
                        lease_id=lock.holder.lease_id,
                        fencing_token=lock.holder.fencing_token,
                        ttl_remaining_ms=lock.holder.ttl_remaining_ms,
                        ttl_ms=0,
                        value="",
                    )
                    if lock.HasField("holder")
                    else None
                ),
                waiters=tuple(ListedWaiter(lease_id=w.lease_id, age_ms=w.age_ms) for w in lock.waiters),
            )
            for lock in reply.locks
        )

    # --- leases -----------------------------------------------------------

    async def lease_grant(self, ttl_s: float) -> LeaseGrantResult:
        """Creates a lease with no lock (1 s ..= 1 h). Retried across leader
        changes with one request id (S7)."""
        with await self.begin_request() as in_flight:
            request = lease_pb2.LeaseGrantRequest(header=self.header(in_flight), ttl_ms=ms(ttl_s, "ttl_ms"))
            reply: lease_pb2.LeaseGrantResponse = await self._unary(
                "lease grant", lambda n: n.lease.LeaseGrant, request
            )
        return LeaseGrantResult(lease_id=reply.lease_id, ttl_ms=reply.ttl_ms)

    async def renew(self, lease_id: int, *, deadline_s: float | None = None) -> RenewResult:
        """Renews ``lease_id`` (its countdown restarts once the renew commits,
        S4). Each attempt is a new renew with a new sequence number, which the
        reply must echo. LeaseNotFoundError when the lease is gone."""
        attempt_timeout = self._options.attempt_timeout_s

        async def attempt(_address: str, node: _Node) -> RenewResult:
            sequence = self.next_renew_sequence()
            request = warden_pb2.RenewRequest(lease_id=lease_id, client_id=self._client_id, sequence=sequence)
            reply: warden_pb2.RenewResponse = await node.lock.Renew(request, timeout=attempt_timeout)
            if reply.sequence != sequence:
                raise TransportError(f"renew reply carries sequence {reply.sequence} but the attempt sent {sequence}")
            return RenewResult(lease_id=reply.lease_id, ttl_ms=reply.ttl_ms, sequence=sequence)

        return await self.call("renew", self._deadline(deadline_s), attempt)

    async def keep_alive_once(self, lease_id: int) -> RenewResult:
        """One keep-alive of ``lease_id`` on a ``Lease/LeaseKeepAlive`` stream
        of its own (etcd's KeepAliveOnce); sessions keep one stream open
        instead. LeaseNotFoundError when the reply says the lease is not
        live."""
        attempt_timeout = self._options.attempt_timeout_s

        async def attempt(_address: str, node: _Node) -> RenewResult:
            sequence = self.next_renew_sequence()
            call = node.lease.LeaseKeepAlive()
            try:
                await call.write(lease_pb2.LeaseKeepAliveRequest(lease_id=lease_id, sequence=sequence))
                await call.done_writing()
                while True:
                    reply: lease_pb2.LeaseKeepAliveResponse = await read_within(call, attempt_timeout)
                    if reply.sequence == sequence:
                        break
            finally:
                call.cancel()
            if not reply.live:
                raise LeaseNotFoundError(f"lease_id: lease {lease_id} is not live")
            return RenewResult(lease_id=reply.lease_id, ttl_ms=reply.ttl_ms, sequence=sequence)

        return await self.call("keep-alive", self._deadline(), attempt)

    async def revoke(self, lease_id: int) -> int:
        """Revokes a lease: every lock it holds is released (no lock-delay) and
        its waits removed, in one entry. LeaseNotFoundError if not live."""
        with await self.begin_request() as in_flight:
            request = warden_pb2.LeaseRevokeRequest(header=self.header(in_flight), lease_id=lease_id)
            reply: warden_pb2.LeaseRevokeResponse = await self._unary("revoke", lambda n: n.lock.LeaseRevoke, request)
        return reply.lease_id

    async def release(
        self, lease_id: int, resource: str | None = None, fencing_token: int | None = None
    ) -> ReleaseResult:
        """Releases the grant of ``resource`` held by ``lease_id`` (``None``:
        the lease's single lock). With ``fencing_token`` only that exact grant
        (S6): a late release never frees a newer grant."""
        with await self.begin_request() as in_flight:
            request = warden_pb2.ReleaseRequest(
                header=self.header(in_flight),
                resource=resource or "",
                lease_id=lease_id,
                fencing_token=fencing_token or 0,
            )
            reply: warden_pb2.ReleaseResponse = await self._unary("release", lambda n: n.lock.Release, request)
        return ReleaseResult(resource=reply.resource, lease_id=reply.lease_id, released=reply.released)

    async def proclaim(self, resource: str, lease_id: int, fencing_token: int, value: str) -> None:
        """Publishes ``value`` for ``lease_id`` on ``resource`` (elections):
        token 0 is a candidate's value; otherwise the lease must hold exactly
        that grant (FailedPreconditionError if not). Idempotent."""
        request = warden_pb2.ProclaimRequest(
            resource=resource, lease_id=lease_id, fencing_token=fencing_token, value=value
        )
        await self._unary("proclaim", lambda n: n.lock.Proclaim, request)

    # --- acquire ----------------------------------------------------------

    async def acquire(
        self,
        resource: str,
        *,
        ttl_s: float | None = None,
        lease_id: int | None = None,
        wait_timeout_s: float = 0.0,
        lock_delay_s: float = 0.0,
        on_queued: Callable[[Queued], None] | None = None,
        mode: LockMode = LockMode.UNSPECIFIED,
        limit: int = 0,
        resources: Sequence[str] = (),
        max_hold_s: float | None = None,
    ) -> Granted | NotGranted:
        """Acquires ``resource`` on a new lease with ``ttl_s`` or on the
        existing ``lease_id``, waiting up to ``wait_timeout_s`` in the
        server's FIFO queue (0 = try once). A refusal because of the
        resource's state is an answer (NotGranted), not an exception.

        The lock kind (docs/semantics.md "Lock kinds"): ``mode`` SHARED or
        EXCLUSIVE for a read-write lock's reader or writer; ``limit`` > 0 for
        one permit of a semaphore of ``limit`` permits (the grant's ``slot``);
        neither for a mutex. ``resources``: a multi-lock of these mutexes, all
        or none (``resource`` is then "" or the first of them; the grant's
        ``grants`` has a token each). ``max_hold_s``: the grant ends no later
        than this long after it was made however often the lease is renewed
        (1 s ..= 24 h, longer than the wait). Bad values are refused by the
        server with InvalidArgumentError / FailedPreconditionError naming the
        field.

        While a new lease waits, it is renewed every TTL/3 (a waiter whose
        lease dies is removed, S8); renewing it after the grant is the
        caller's job (or use a Session). If the caller abandons the call (the
        task is cancelled), a CancelWait is sent for it (see
        :meth:`acquire_controlled`)."""
        return await self.acquire_controlled(
            resource,
            ttl_ms=ms(ttl_s, "ttl_ms") if ttl_s is not None else 0,
            lease_id=lease_id or 0,
            wait_timeout_ms=ms(wait_timeout_s, "wait_timeout_ms"),
            lock_delay_ms=ms(lock_delay_s, "lock_delay_ms"),
            on_queued=on_queued,
            renew_while_waiting=lease_id is None,
            control=AcquireControl(),
            mode=mode,
            limit=limit,
            resources=resources,
            max_hold_ms=ms(max_hold_s, "max_hold_ms") if max_hold_s is not None else 0,
        )

    async def acquire_controlled(
        self,
        resource: str,
        *,
        ttl_ms: int,
        lease_id: int,
        wait_timeout_ms: int,
        lock_delay_ms: int,
        on_queued: Callable[[Queued], None] | None,
        renew_while_waiting: bool,
        control: AcquireControl,
        mode: LockMode = LockMode.UNSPECIFIED,
        limit: int = 0,
        resources: Sequence[str] = (),
        max_hold_ms: int = 0,
    ) -> Granted | NotGranted:
        """The acquire behind :meth:`acquire` and ``Session.lock``.

        Abandoning it (cancelling the task) after an attempt was sent sends
        ``Lock/CancelWait`` naming this acquire's request id (committed,
        exactly once; if the grant won the race the cancel releases it), and
        with ``control.await_cancel_wait`` the CancelledError propagates only
        once that cancel has been answered; a second cancellation stops the
        waiting, not the cancel. The acquire's request id stays in flight
        until the cancel is answered, so the watermark the cancel carries is
        below it (the server still knows the acquire)."""
        in_flight = await self.begin_request()
        request = warden_pb2.AcquireRequest(
            header=self.header(in_flight),
            resource=resource,
            ttl_ms=ttl_ms,
            lease_id=lease_id,
            wait_timeout_ms=wait_timeout_ms,
            lock_delay_ms=lock_delay_ms,
            mode=mode.value,  # type: ignore[arg-type]
            limit=limit,
            resources=list(resources),
            max_hold_ms=max_hold_ms,
        )
        loop = asyncio.get_running_loop()
        wait_deadline = loop.time() + wait_timeout_ms / 1000
        deadline = wait_deadline + self._options.deadline_s
        attempt_timeout = self._options.attempt_timeout_s
        sent = False
        waiting_lease: asyncio.Future[int] = loop.create_future()

        def report(q: warden_pb2.Queued) -> None:
            if not waiting_lease.done():
                waiting_lease.set_result(q.lease_id)
            if on_queued is not None:
                on_queued(Queued(position=q.position, lease_id=q.lease_id))

        async def attempt(_address: str, node: _Node) -> Granted | NotGranted:
            nonlocal sent
            call = node.lock.Acquire(request)
            sent = True
            try:
                budget = attempt_timeout
                while True:
                    message: warden_pb2.AcquireResponse = await read_within(call, budget)
                    kind = message.WhichOneof("event")
                    if kind == "queued":
                        report(message.queued)
                        # The final answer may take the rest of the wait; after
                        # it, one attempt timeout (the server reports a timeout
                        # once its removal committed).
                        budget = max(wait_deadline - loop.time(), 0.0) + attempt_timeout
                        continue
                    if kind == "granted":
                        g = message.granted
                        return Granted(
                            resource=g.resource,
                            lease_id=g.lease_id,
                            fencing_token=g.fencing_token,
                            ttl_ms=g.ttl_ms,
                            log_index=g.log_index,
                            slot=g.slot if g.HasField("slot") else None,
                            mode=LockMode(g.mode) if g.mode in (1, 2) else LockMode.UNSPECIFIED,
                            grants=tuple(ResourceToken(t.resource, t.fencing_token) for t in g.grants),
                            max_hold_ms=g.max_hold_ms,
                        )
                    if kind == "not_granted":
                        n = message.not_granted
                        try:
                            reason = NotGrantedReason(n.reason)
                        except ValueError:
                            raise TransportError(f"not_granted with an unknown reason {n.reason!r}") from None
                        return NotGranted(resource=n.resource, holder_lease_id=n.holder_lease_id, reason=reason)
                    raise TransportError("acquire answer without an event")
            finally:
                call.cancel()

        keep_alive: asyncio.Task[None] | None = None
        if renew_while_waiting and ttl_ms > 0 and wait_timeout_ms > 0:
            keep_alive = asyncio.ensure_future(self._renew_waiting_lease(waiting_lease, ttl_ms))
        handed_over = False
        try:
            return await self.call("acquire", deadline, attempt)
        except asyncio.CancelledError:
            if sent:
                handed_over = True
                # A multi-lock's cancel names its first resource (it takes back all).
                cancel = self.spawn(self._abandon(in_flight, resource or next(iter(resources), "")))
                if control.await_cancel_wait:
                    try:
                        await asyncio.shield(cancel)
                    except asyncio.CancelledError:
                        pass  # cancelled again: the cancel goes on in the background
            raise
        finally:
            if keep_alive is not None:
                keep_alive.cancel()
            if not handed_over:
                in_flight.finish()

    async def _renew_waiting_lease(self, lease: asyncio.Future[int], ttl_ms: int) -> None:
        """Renews a new lease every TTL/3 while its acquire waits."""
        lease_id = await lease
        period_s = ttl_ms / 3000
        while True:
            await asyncio.sleep(period_s)
            try:
                renewed = await self.renew(lease_id)
                period_s = max(renewed.ttl_ms / 3000, 0.1)
            except WardenError as e:
                if e.reason == "LEASE_NOT_LIVE" or e.code is grpc.StatusCode.NOT_FOUND:
                    return
                log.debug("keep-alive of waiting lease %d failed (%s); retrying", lease_id, e)
                period_s = self._options.backoff_cap_s

    async def _abandon(self, acquire: InFlight, resource: str) -> None:
        """Takes back an abandoned acquire with CancelWait; then the acquire's
        request id counts as answered."""
        try:
            result = await self.cancel_wait(resource, acquire.request_id)
            log.debug("abandoned acquire %d of %r: cancel outcome %s", acquire.request_id, resource, result.outcome)
        except UnimplementedError:
            if not self._warned_no_cancel_wait:
                self._warned_no_cancel_wait = True
                log.warning(
                    "the server does not implement Lock/CancelWait: an abandoned waiter (on %r) stays "
                    "queued until its lease ends",
                    resource,
                )
        except WardenError as e:
            log.warning("CancelWait for the abandoned acquire of %r failed: %s", resource, e)
        finally:
            acquire.finish()

    async def cancel_wait(self, resource: str, acquire_request_id: int) -> CancelWaitResult:
        """Removes this client's waiting acquire ``acquire_request_id`` on
        ``resource`` (committed, exactly once with its own request id); if
        the grant won the race, releases it. UnimplementedError on a server
        without CancelWait."""
        with await self.begin_request() as in_flight:
            request = warden_pb2.CancelWaitRequest(
                header=self.header(in_flight), acquire_request_id=acquire_request_id, resource=resource
            )
            reply: warden_pb2.CancelWaitResponse = await self._unary(
                "cancel wait", lambda n: n.lock.CancelWait, request, unimplemented_is_final=True
            )
        return CancelWaitResult(
            resource=reply.resource,
            lease_id=reply.lease_id,
            outcome=reply.outcome,
            fencing_token=reply.fencing_token,
        )

    # --- sessions, watches, elections ------------------------------------

    async def session(self, ttl_s: float = 10.0, *, clock: Clock | None = None) -> Session:
        """Opens a session: a lease kept alive in the background every TTL/3
        (see :class:`~warden_client.aio.Session`)."""
        from .session import Session

        session = await Session.open(self, ttl_s, clock)
        self._sessions.add(session)
        return session

    async def watch(self, *, resource: str | None = None, prefix: str | None = None, start_index: int = 0) -> Watcher:
        """Watches one resource or a prefix from ``start_index`` (0 = from
        now); see :class:`~warden_client.aio.Watcher`. CompactedError when
        the start is older than the node's retained window."""
        from .watch import Watcher

        return await Watcher.open(self, resource=resource, prefix=prefix, start_index=start_index)

    async def observe(self, election: str) -> Observer:
        """Follows election ``election``'s leaders (no session needed)."""
        from .watch import Observer

        return await Observer.open(self, election)

    async def election_key(self, name: str) -> str:
        """The lock-table key of election ``name``."""
        return await self.election_prefix() + name

    async def leader(self, election: str) -> Any:
        """The current leader of ``election`` (LeaderInfo), or ``None``."""
        from .election import leader_of

        return await leader_of(self, await self.election_key(election))
