"""The asyncio :class:`Session` (one lease kept alive in the background, with
an honest ``valid_until``, docs/semantics.md S5) and the :class:`Lock`\\ s
that hang on it.

Validity: ``valid_until`` is, on the session clock (CLOCK_BOOTTIME), the
*send* time of the keep-alive whose acknowledgement was last received (matched
by the echoed sequence number; for the lease grant, its first attempt) plus
``TTL x (1 - 2 rho) - 50 ms``. The server never expires the lease before
``send + TTL x (1 - rho)`` (S4), so while ``check()`` passes nobody else holds
this session's locks.

Loss: the lost event is set and the callbacks run no later than
``valid_until`` if no keep-alive was acknowledged by then (also when no server
can be reached), at once when the server says the lease is not live, when the
session clock cannot be read, or on ``close()``. A lost session stays lost.
A timer can fire late after a process pause, so call ``check()`` right before
each protected write: it compares the clock with ``valid_until`` itself.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Generator, Sequence
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import grpc
from grpc import aio

from .._proto import lease_pb2
from ..clock import BOOT_CLOCK, Clock, validity_s
from ..errors import (
    ClockError,
    InvalidArgumentError,
    LeaseNotFoundError,
    SessionLostError,
    WardenError,
    not_granted_error,
)
from ..types import (
    Granted,
    LockMode,
    Lost,
    LostKind,
    NotGrantedReason,
    Queued,
    ReleaseResult,
    ResourceToken,
)
from .client import AcquireControl, AttemptFailed, Client, _Node, ms, read_within

if TYPE_CHECKING:
    from .election import Election

log = logging.getLogger("warden_client")

#: The lost timer fires this much before ``valid_until``: asyncio timers never
#: fire early but may fire late when the loop is busy, and the loss must be
#: signalled no later than ``valid_until`` (S5).
LOST_TIMER_SLACK_S = 0.05

#: A timer never sleeps longer than this in one go: the event loop's clock
#: stops while the machine is suspended, the session's (boot) clock does not,
#: so a long sleep re-reads the session clock at least this often.
MAX_SLEEP_S = 1.0

#: The longest wait one acquire asks the server for (its bound, 1 h);
#: ``Session.lock`` without a wait timeout repeats it until granted.
MAX_WAIT_S = 3600.0


def _discard(task: asyncio.Task[Any]) -> None:
    """Cancels a task whose outcome no longer matters (it may still end with
    its own error, which is then dropped, not reported as unretrieved)."""
    task.cancel()
    task.add_done_callback(lambda t: t.cancelled() or t.exception())


class _KeepAliveStream:
    """The session's ``Lease/LeaseKeepAlive`` stream to one node, reopened
    (possibly elsewhere) when it fails."""

    def __init__(self) -> None:
        self.address: str | None = None
        self.call: Any = None

    def get(self, address: str, node: _Node) -> Any:
        if self.call is None or self.address != address or self.call.done():
            self.close()
            self.call = node.lease.LeaseKeepAlive()
            self.address = address
        return self.call

    def close(self) -> None:
        if self.call is not None:
            self.call.cancel()
        self.call = None
        self.address = None


class Session:
    """A lease kept alive by a background task (etcd's
    ``concurrency.Session``, ZooKeeper's session): one keep-alive for every
    lock and wait on it. Open with ``await client.session(ttl_s)``; use as
    ``async with`` (closes it) or call :meth:`close`."""

    def __init__(self, client: Client, lease_id: int, ttl_ms: int, clock: Clock, valid_until: float) -> None:
        self._client = client
        self._lease_id = lease_id
        self._ttl_ms = ttl_ms
        self._clock = clock
        self._valid_until = valid_until
        self._lost: Lost | None = None
        self._lost_event = asyncio.Event()
        self._callbacks: list[Callable[[Lost], None]] = []
        self._stream = _KeepAliveStream()
        self._renew_lock = asyncio.Lock()
        self._waits: dict[asyncio.Task[Any], AcquireControl] = {}
        self._keep_alive: asyncio.Task[None] | None = None

    @classmethod
    async def open(cls, client: Client, ttl_s: float, clock: Clock | None = None) -> Session:
        """Grants the lease and starts the keep-alive. The grant is retried
        with one request id: it took effect at or after the first attempt's
        send, so validity counts from there (S5)."""
        clock = clock or BOOT_CLOCK
        sent_at = clock.now()
        granted = await client.lease_grant(ttl_s)
        session = cls(client, granted.lease_id, granted.ttl_ms, clock, sent_at + validity_s(granted.ttl_ms))
        session._keep_alive = asyncio.ensure_future(session._keep_alive_loop(sent_at))
        return session

    # --- what a holder reads ---------------------------------------------

    @property
    def lease_id(self) -> int:
        return self._lease_id

    @property
    def ttl_ms(self) -> int:
        """The TTL the server granted, in milliseconds."""
        return self._ttl_ms

    @property
    def client(self) -> Client:
        return self._client

    @property
    def clock(self) -> Clock:
        """The clock ``valid_until`` is measured on."""
        return self._clock

    @property
    def valid_until(self) -> float:
        """The instant, in seconds on :attr:`clock`, until which the session
        (and every lock on it) is certainly still held, unless already lost
        (S5). Only moves forward."""
        return self._valid_until

    @property
    def lost(self) -> Lost | None:
        """Why the session was lost, or ``None`` while it is not."""
        return self._lost

    @property
    def lost_event(self) -> asyncio.Event:
        """Set once the session is lost (no later than ``valid_until``)."""
        return self._lost_event

    def on_lost(self, callback: Callable[[Lost], None]) -> None:
        """Calls ``callback(lost)`` once when the session is lost (at once if
        it already is). Runs on the event loop: keep it short."""
        if self._lost is not None:
            callback(self._lost)
        else:
            self._callbacks.append(callback)

    async def wait_lost(self) -> Lost:
        """Waits until the session is lost and says why."""
        await self._lost_event.wait()
        assert self._lost is not None
        return self._lost

    def time_left_s(self) -> float:
        """Seconds until ``valid_until``; 0 once lost."""
        if self.assess() is not None:
            return 0.0
        try:
            return max(self._valid_until - self._clock.now(), 0.0)
        except ClockError:
            return 0.0

    def assess(self) -> Lost | None:
        """Why the session cannot be trusted now, or ``None`` while it can:
        a pure read (it marks nothing; :meth:`check` does), safe from any
        thread."""
        if self._lost is not None:
            return self._lost
        try:
            now = self._clock.now()
        except ClockError as e:
            return Lost(LostKind.CLOCK_FAILED, self._lease_id, detail=str(e))
        if now >= self._valid_until:
            return Lost(LostKind.EXPIRED, self._lease_id, self._valid_until)
        return None

    def check(self) -> None:
        """Returns while the session is valid: not lost and the session clock
        is before ``valid_until``. Synchronous and cheap: call it right before
        each write the lock protects. Raises SessionLostError otherwise (and
        the session is then lost for good)."""
        verdict = self.assess()
        if verdict is not None:
            raise SessionLostError(self._lose(verdict))

    def check_and_lose(self) -> None:
        """:meth:`check`, keeping the verdict (marks the session lost if it
        is; raises nothing)."""
        try:
            self.check()
        except SessionLostError:
            pass

    # --- loss -------------------------------------------------------------

    def _lose(self, lost: Lost) -> Lost:
        """Marks the session lost (the first reason wins); returns the reason
        in force."""
        if self._lost is not None:
            return self._lost
        self._lost = lost
        self._lost_event.set()
        for task, control in list(self._waits.items()):
            control.await_cancel_wait = False
            control.cancelled_by_session = True
            task.cancel()
        callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            try:
                callback(lost)
            except Exception:
                log.exception("a session's on_lost callback raised")
        return lost

    def _now(self) -> float:
        """The session clock; a failed read loses the session."""
        try:
            return self._clock.now()
        except ClockError as e:
            raise SessionLostError(self._lose(Lost(LostKind.CLOCK_FAILED, self._lease_id, detail=str(e)))) from e

    async def _sleep_until(self, at: float) -> None:
        """Sleeps until ``at`` on the session clock (less the timer slack),
        re-reading it at least every MAX_SLEEP_S."""
        while True:
            left = at - self._now() - LOST_TIMER_SLACK_S
            if left <= 0:
                return
            await asyncio.sleep(min(left, MAX_SLEEP_S))

    # --- keep-alive -------------------------------------------------------

    async def renew(self) -> float:
        """Sends one keep-alive now and waits for its acknowledgement; returns
        the new ``valid_until``. Raises SessionLostError if the session is (or
        becomes) lost, or the call's error."""
        self.check()
        await self._renew_once(self._valid_until - self._now())
        self.check()
        return self._valid_until

    async def _renew_once(self, within_s: float) -> float:
        """One acknowledged keep-alive on the stream (retried, following the
        leader, for at most ``within_s``); moves ``valid_until`` to its send
        time + validity. Returns the send time."""
        client = self._client
        attempt_timeout = client.options.attempt_timeout_s
        loop = asyncio.get_running_loop()

        async def attempt(address: str, node: _Node) -> tuple[lease_pb2.LeaseKeepAliveResponse, float]:
            call = self._stream.get(address, node)
            sequence = client.next_renew_sequence()
            sent_at = self._now()
            started = loop.time()
            try:
                try:
                    await asyncio.wait_for(
                        call.write(lease_pb2.LeaseKeepAliveRequest(lease_id=self._lease_id, sequence=sequence)),
                        attempt_timeout,
                    )
                except TimeoutError:
                    raise AttemptFailed(f"keep-alive not sent within {round(attempt_timeout * 1000)} ms") from None
                except aio.AioRpcError:
                    raise
                except Exception as e:
                    # The stream ended before the write (its status is read next time).
                    raise AttemptFailed(f"keep-alive stream closed: {type(e).__name__}") from None
                while True:
                    reply: lease_pb2.LeaseKeepAliveResponse = await read_within(
                        call, attempt_timeout - (loop.time() - started)
                    )
                    # A late reply to an earlier attempt is skipped: validity
                    # counts only from the send of the attempt it echoes.
                    if reply.sequence == sequence:
                        return reply, sent_at
            except BaseException:
                self._stream.close()
                raise

        async with self._renew_lock:
            reply, sent_at = await client.call("keep-alive", loop.time() + within_s, attempt)
        if not reply.live:
            raise SessionLostError(self._lose(Lost(LostKind.LEASE_GONE, self._lease_id)))
        until = sent_at + validity_s(reply.ttl_ms)
        # Never after the loss (a lost session stays lost), never backwards.
        if self._lost is None and until > self._valid_until:
            self._valid_until = until
        return sent_at

    async def _keep_alive_loop(self, last_sent: float) -> None:
        """Renews every TTL/3 (from the last acknowledged send), retrying a
        failed renew at once (the call itself backs off), until the session
        is lost."""
        period_s = self._ttl_ms / 3000
        failed = False
        try:
            while self._lost is None:
                valid_until = self._valid_until
                # After a failed renew, try again at once (after a short
                # pause, in case the failure was a quick refusal).
                nxt = self._now() + self._client.options.backoff_cap_s if failed else last_sent + period_s
                if nxt < valid_until:
                    await self._sleep_until(nxt + LOST_TIMER_SLACK_S)
                now = self._now()
                if now + LOST_TIMER_SLACK_S >= valid_until:
                    self._lose(Lost(LostKind.EXPIRED, self._lease_id, valid_until))
                    break
                renew = asyncio.ensure_future(self._renew_once(valid_until - now))
                timer = asyncio.ensure_future(self._sleep_until(valid_until))
                try:
                    await asyncio.wait({renew, timer}, return_when=asyncio.FIRST_COMPLETED)
                except asyncio.CancelledError:
                    _discard(renew)
                    raise
                finally:
                    timer.cancel()
                if not renew.done():
                    _discard(renew)
                    self._lose(Lost(LostKind.EXPIRED, self._lease_id, valid_until))
                    break
                try:
                    last_sent = renew.result()
                    failed = False
                except SessionLostError:
                    break
                except LeaseNotFoundError:
                    self._lose(Lost(LostKind.LEASE_GONE, self._lease_id))
                    break
                except WardenError as e:
                    log.debug("session %d keep-alive failed (%s); retrying", self._lease_id, e)
                    failed = True
                except Exception:
                    log.exception("session %d keep-alive failed unexpectedly; retrying", self._lease_id)
                    failed = True
        except SessionLostError:
            pass
        except Exception:
            # Never leave a session that nobody renews looking alive: losing
            # it early is safe, not signalling the loss is not.
            log.exception("session %d keep-alive stopped", self._lease_id)
            self._lose(Lost(LostKind.EXPIRED, self._lease_id, self._valid_until))
        finally:
            self._stream.close()
        lost = self._lost
        if lost is not None and lost.kind in (LostKind.EXPIRED, LostKind.CLOCK_FAILED):
            # The lease may still be live on the server, and nobody here
            # trusts it any more: revoking frees its locks sooner (best effort).
            try:
                await asyncio.wait_for(self._client.revoke(self._lease_id), 1.0)
            except (WardenError, TimeoutError):
                pass

    async def stop(self) -> None:
        """Stops the keep-alive without revoking the lease (it expires after
        its TTL); the session is lost (CLOSED)."""
        self._lose(Lost(LostKind.CLOSED, self._lease_id))
        if self._keep_alive is not None:
            self._keep_alive.cancel()
            try:
                await self._keep_alive
            except asyncio.CancelledError:
                pass
        self._stream.close()

    async def close(self) -> None:
        """Ends the session: marks it lost (CLOSED), stops the keep-alive and
        revokes the lease, which releases every lock on it (no lock-delay) in
        one committed entry. A lease the server no longer has is no error;
        ClusterUnavailableError if the revoke did not commit in time (the
        lease then expires after its TTL). Closing a session that was already
        lost sends nothing and raises nothing: the loss was signalled, and the
        keep-alive already tried to revoke a lease it stopped trusting."""
        already = self._lost
        await self.stop()
        if already is not None:
            return
        try:
            await self._client.revoke(self._lease_id)
        except LeaseNotFoundError:
            pass
        except WardenError as e:
            if e.code is not grpc.StatusCode.NOT_FOUND:
                raise

    async def __aenter__(self) -> Session:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # --- locks ------------------------------------------------------------

    def lock(
        self,
        resource: str,
        *,
        wait_timeout_s: float | None = None,
        lock_delay_s: float = 0.0,
        on_queued: Callable[[Queued], None] | None = None,
        max_hold_s: float | None = None,
    ) -> LockAcquire[Lock]:
        """Takes the mutex ``resource`` on this session's lease, waiting in
        the server's FIFO queue: as long as it takes (``wait_timeout_s=None``),
        or at most ``wait_timeout_s`` (then WaitTimeoutError; the waiter's
        removal has committed, S8). ``await`` it for a :class:`Lock`, or
        ``async with`` it. Cancelling the waiting task sends CancelWait (no
        waiter is left behind). SessionLostError if the session is lost
        first.

        ``max_hold_s``: the grant ends no later than this long after it was
        made, however often the session renews (docs/semantics.md
        "Max-hold"; 1 s ..= 24 h and longer than ``wait_timeout_s``, else
        InvalidArgumentError naming ``max_hold_ms`` or ``wait_timeout_ms``);
        the lock's ``valid_until`` is then at most the acquire's send +
        ``max_hold_s x (1 - 2 rho) - 50 ms``."""
        return LockAcquire(
            self._lock(resource, wait_timeout_s, lock_delay_s, on_queued, try_once=False, max_hold_s=max_hold_s)
        )

    def try_lock(
        self, resource: str, *, lock_delay_s: float = 0.0, max_hold_s: float | None = None
    ) -> LockAcquire[Lock]:
        """Takes ``resource`` if it is free now; else HeldError naming the
        holder's lease (or LockDelayError, or NotGrantedError with reason
        RESERVED when a waiting multi-lock has reserved it)."""
        return LockAcquire(self._lock(resource, 0.0, lock_delay_s, None, try_once=True, max_hold_s=max_hold_s))

    def read_lock(
        self,
        resource: str,
        *,
        wait_timeout_s: float | None = None,
        lock_delay_s: float = 0.0,
        on_queued: Callable[[Queued], None] | None = None,
        max_hold_s: float | None = None,
    ) -> LockAcquire[Lock]:
        """Takes a reader's (shared) grant of the read-write lock
        ``resource`` (docs/semantics.md "Lock kinds"): beside other readers,
        never beside a writer, and never ahead of a writer queued before it.
        Waits, cancels and fails as :meth:`lock`; a resource held as another
        kind is refused with FailedPreconditionError (field ``kind``)."""
        return LockAcquire(
            self._lock(
                resource,
                wait_timeout_s,
                lock_delay_s,
                on_queued,
                try_once=False,
                max_hold_s=max_hold_s,
                mode=LockMode.SHARED,
            )
        )

    def write_lock(
        self,
        resource: str,
        *,
        wait_timeout_s: float | None = None,
        lock_delay_s: float = 0.0,
        on_queued: Callable[[Queued], None] | None = None,
        max_hold_s: float | None = None,
    ) -> LockAcquire[Lock]:
        """Takes the writer's (exclusive) grant of the read-write lock
        ``resource``: alone. As :meth:`read_lock` otherwise."""
        return LockAcquire(
            self._lock(
                resource,
                wait_timeout_s,
                lock_delay_s,
                on_queued,
                try_once=False,
                max_hold_s=max_hold_s,
                mode=LockMode.EXCLUSIVE,
            )
        )

    def semaphore(self, resource: str, limit: int) -> Semaphore:
        """The counting semaphore ``resource`` of ``limit`` permits
        (1..=10000) on this session: :meth:`Semaphore.acquire` takes one
        permit, a :class:`Lock` with a ``slot`` in ``0..limit``."""
        return Semaphore(self, resource, limit)

    def lock_all(
        self,
        resources: Sequence[str],
        *,
        wait_timeout_s: float | None = None,
        on_queued: Callable[[Queued], None] | None = None,
    ) -> LockAcquire[MultiLock]:
        """Takes the mutexes ``resources`` (1..=64 distinct) together, in one
        committed entry with a fencing token each, or none of them
        (docs/semantics.md "Multi-locks"): a multi-lock waits as one waiter,
        so takers in opposite orders never deadlock. ``wait_timeout_s=0``:
        only if all are free now. Releasing the :class:`MultiLock` frees
        all. Waits, cancels and fails as :meth:`lock`."""
        names = list(resources)
        if not names:
            # An empty list on the wire is no multi-lock at all (a mutex of "").
            raise InvalidArgumentError("resources: a multi-lock takes 1..=64 resources; got none", field="resources")
        return LockAcquire(self._lock_all(names, wait_timeout_s, on_queued))

    def election(self, name: str) -> Election:
        """Election ``name``, campaigned in with this session."""
        from .election import Election

        return Election(self, name)

    async def _lock(
        self,
        resource: str,
        wait_timeout_s: float | None,
        lock_delay_s: float,
        on_queued: Callable[[Queued], None] | None,
        *,
        try_once: bool,
        max_hold_s: float | None = None,
        mode: LockMode = LockMode.UNSPECIFIED,
        limit: int = 0,
    ) -> Lock:
        while True:
            wait_s = MAX_WAIT_S if wait_timeout_s is None else wait_timeout_s
            if wait_timeout_s is None and max_hold_s is not None:
                # A wait as long as the max-hold is refused (no grant may
                # arrive already invalid): wait a little less, again and again.
                wait_s = min(MAX_WAIT_S, max(max_hold_s - 0.001, 0.0))
            # The grant comes after the send: a max-hold counts from here on
            # the session clock (docs/semantics.md "Max-hold").
            sent_at = self._now()
            result = await self._acquire(
                resource,
                wait_s,
                lock_delay_s,
                on_queued,
                mode=mode,
                limit=limit,
                max_hold_ms=ms(max_hold_s, "max_hold_ms") if max_hold_s is not None else 0,
            )
            if isinstance(result, Granted):
                # Granted while the session may have been lost meanwhile: never
                # hand out a lock that cannot be trusted.
                self.check()
                until = sent_at + validity_s(ms(max_hold_s, "max_hold_ms")) if max_hold_s is not None else None
                return Lock(
                    self,
                    result.resource,
                    result.fencing_token,
                    slot=result.slot,
                    mode=mode,
                    max_hold_until=until,
                )
            if wait_timeout_s is None and not try_once and result.reason is NotGrantedReason.WAIT_TIMEOUT:
                continue
            raise not_granted_error(result.resource, result.holder_lease_id, result.reason)

    async def _lock_all(
        self,
        resources: list[str],
        wait_timeout_s: float | None,
        on_queued: Callable[[Queued], None] | None,
    ) -> MultiLock:
        first = resources[0] if resources else ""
        while True:
            wait_s = MAX_WAIT_S if wait_timeout_s is None else wait_timeout_s
            result = await self._acquire(first, wait_s, 0.0, on_queued, resources=resources)
            if isinstance(result, Granted):
                self.check()
                grants = result.grants or (ResourceToken(result.resource, result.fencing_token),)
                return MultiLock(self, grants)
            if wait_timeout_s is None and result.reason is NotGrantedReason.WAIT_TIMEOUT:
                continue
            raise not_granted_error(result.resource, result.holder_lease_id, result.reason)

    async def _acquire(
        self,
        resource: str,
        wait_s: float,
        lock_delay_s: float,
        on_queued: Callable[[Queued], None] | None,
        *,
        mode: LockMode = LockMode.UNSPECIFIED,
        limit: int = 0,
        resources: Sequence[str] = (),
        max_hold_ms: int = 0,
    ) -> Any:
        self.check()
        task = asyncio.current_task()
        assert task is not None
        control = AcquireControl()
        self._waits[task] = control
        try:
            return await self._client.acquire_controlled(
                resource,
                ttl_ms=0,
                lease_id=self._lease_id,
                wait_timeout_ms=ms(wait_s, "wait_timeout_ms"),
                lock_delay_ms=ms(lock_delay_s, "lock_delay_ms"),
                on_queued=on_queued,
                # The session's keep-alive renews the lease while it waits.
                renew_while_waiting=False,
                control=control,
                mode=mode,
                limit=limit,
                resources=resources,
                max_hold_ms=max_hold_ms,
            )
        except asyncio.CancelledError:
            if control.cancelled_by_session and task.uncancel() == 0:
                assert self._lost is not None
                raise SessionLostError(self._lost) from None
            raise
        finally:
            self._waits.pop(task, None)


class Semaphore:
    """A counting semaphore on a :class:`Session` (:meth:`Session.semaphore`):
    at most ``limit`` holders at once, each with a ``slot`` in ``0..limit``
    and a fresh fencing token; the resource-side fence checks a permit's
    token per (resource, slot) (docs/fencing.md). A freed permit goes to the
    oldest waiter. A session holds at most one permit of a semaphore; another
    limit than the resource's current one is refused with
    FailedPreconditionError (field ``limit``)."""

    def __init__(self, session: Session, resource: str, limit: int) -> None:
        self._session = session
        self.resource = resource
        self.limit = limit

    def __repr__(self) -> str:
        return f"Semaphore(resource={self.resource!r}, limit={self.limit})"

    def acquire(
        self,
        *,
        wait_timeout_s: float | None = None,
        lock_delay_s: float = 0.0,
        on_queued: Callable[[Queued], None] | None = None,
        max_hold_s: float | None = None,
    ) -> LockAcquire[Lock]:
        """Takes one permit, waiting as :meth:`Session.lock` does."""
        return LockAcquire(
            self._session._lock(
                self.resource,
                wait_timeout_s,
                lock_delay_s,
                on_queued,
                try_once=False,
                max_hold_s=max_hold_s,
                limit=self.limit,
            )
        )

    def try_acquire(self, *, lock_delay_s: float = 0.0, max_hold_s: float | None = None) -> LockAcquire[Lock]:
        """Takes one permit if one is free now; else HeldError."""
        return LockAcquire(
            self._session._lock(
                self.resource, 0.0, lock_delay_s, None, try_once=True, max_hold_s=max_hold_s, limit=self.limit
            )
        )


L = TypeVar("L", bound="Lock")


class LockAcquire(Generic[L]):
    """A lock being taken: ``await`` it for the :class:`Lock` (or
    :class:`MultiLock`), or use it as ``async with session.lock("orders") as
    lock:`` (released on exit)."""

    def __init__(self, acquire: Any) -> None:
        self._acquire = acquire
        self._lock: L | None = None

    def __await__(self) -> Generator[Any, None, L]:
        return self._acquire.__await__()  # type: ignore[no-any-return]

    async def __aenter__(self) -> L:
        self._lock = await self._acquire
        return self._lock

    async def __aexit__(self, exc_type: type[BaseException] | None, *exc: object) -> None:
        if self._lock is not None:
            await self._lock.exit_block(exc_type is not None)

    def close(self) -> None:
        """Discards an acquire that was never awaited."""
        self._acquire.close()


class Lock:
    """A lock held by a :class:`Session`'s lease, with the grant's fencing
    token. Valid while its session is: :meth:`check` before each protected
    write, and pass :attr:`fencing_token` with the write so the resource
    rejects it if the lock was lost anyway (S2).

    An operator's forced release of this one lock is not seen here (the
    session stays valid); the fence rejects the holder's next write.

    ``slot``: a semaphore permit's slot in ``0..limit`` (``None`` for other
    grants); ``mode``: SHARED / EXCLUSIVE for a read-write lock's grant.
    With a max-hold, ``max_hold_until`` bounds ``valid_until`` and
    :meth:`check` fails past it (Lost kind MAX_HOLD)."""

    def __init__(
        self,
        session: Session,
        resource: str,
        fencing_token: int,
        *,
        slot: int | None = None,
        mode: LockMode = LockMode.UNSPECIFIED,
        max_hold_until: float | None = None,
    ) -> None:
        self._session = session
        self.resource = resource
        self.fencing_token = fencing_token
        self.slot = slot
        self.mode = mode
        self.max_hold_until = max_hold_until
        self.released = False

    def __repr__(self) -> str:
        return f"Lock(resource={self.resource!r}, lease_id={self.lease_id}, fencing_token={self.fencing_token})"

    @property
    def lease_id(self) -> int:
        """The lease holding the lock (the session's)."""
        return self._session.lease_id

    @property
    def session(self) -> Session:
        return self._session

    @property
    def valid_until(self) -> float:
        """The earlier of :attr:`Session.valid_until` and
        :attr:`max_hold_until` (the acquire's send + validity of the
        max-hold, docs/semantics.md "Max-hold"), on the session clock."""
        session = self._session.valid_until
        return session if self.max_hold_until is None else min(session, self.max_hold_until)

    def check(self) -> None:
        """See :meth:`Session.check` (also fails once this lock is released,
        and past :attr:`max_hold_until` with Lost kind MAX_HOLD: the session
        itself stays valid)."""
        if self.released:
            raise SessionLostError(Lost(LostKind.CLOSED, self.lease_id, detail="lock released"))
        self._session.check()
        if self.max_hold_until is not None and self._session._now() >= self.max_hold_until:
            raise SessionLostError(Lost(LostKind.MAX_HOLD, self.lease_id, self.max_hold_until))

    async def release(self) -> ReleaseResult:
        """Releases this exact grant (S6) and waits for the commit.
        FailedPreconditionError / NotFoundError when the grant had already
        ended (expired, forced, lease gone)."""
        self.released = True
        return await self._session.client.release(self.lease_id, self.resource, self.fencing_token)

    async def exit_block(self, failing: bool) -> None:
        """Leaving ``async with``: releases, unless already released or the
        session is lost (nothing to release; the loss was signalled)."""
        if self.released or self._session.lost is not None:
            return
        try:
            await self.release()
        except WardenError:
            if not failing:
                raise
            log.warning("releasing %r on the way out of a failing block failed", self.resource)

    async def __aenter__(self) -> Lock:
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, *exc: object) -> None:
        await self.exit_block(exc_type is not None)


class MultiLock(Lock):
    """A multi-lock held by a :class:`Session`'s lease
    (:meth:`Session.lock_all`): every resource with its own fencing token, in
    the order asked (:attr:`grants`); :attr:`resource` and
    :attr:`fencing_token` are the first's. :meth:`release` frees all of them
    in one committed entry."""

    def __init__(self, session: Session, grants: tuple[ResourceToken, ...]) -> None:
        super().__init__(session, grants[0].resource, grants[0].fencing_token)
        self.grants = grants

    def __repr__(self) -> str:
        return f"MultiLock(grants={list(self.grants)!r}, lease_id={self.lease_id})"

    def token(self, resource: str) -> int | None:
        """The fencing token of ``resource`` in this grant, ``None`` if it is
        not one of its resources."""
        return next((g.fencing_token for g in self.grants if g.resource == resource), None)
