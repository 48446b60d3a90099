"""The synchronous API, on top of the asyncio one.

Each synchronous :class:`Client` runs its :class:`warden_client.aio.Client` on
a private event loop in a daemon thread ("warden-client"); every method hands
its coroutine to that loop and blocks until it ends. The keep-alive of every
session runs there too, so a session stays alive while the calling thread
does something else, and its lost signal (a ``threading.Event`` and the
callbacks) fires from there, no later than ``valid_until``.

Interrupting a blocking call (KeyboardInterrupt) cancels its coroutine; a
waiting lock then sends CancelWait, and the interrupt propagates once the
cancel has been answered (at most the call deadline).

Do not call this API from an ``on_lost`` callback (it runs on the client's
loop): set a flag or an event instead.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Coroutine, Iterator, Sequence
from typing import Any, TypeVar

from . import aio
from .clock import Clock
from .errors import SessionLostError
from .types import (
    CancelWaitResult,
    ClientOptions,
    ClusterStatus,
    Granted,
    LeaderInfo,
    LeaseGrantResult,
    LeaseInfo,
    ListedLock,
    LockMode,
    Lost,
    LostKind,
    NotGranted,
    Queued,
    ReleaseResult,
    RenewResult,
    ResourceStatus,
    ResourceToken,
    ValidateResult,
    WatchEvent,
)

T = TypeVar("T")


class _Loop:
    """An event loop in a daemon thread."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._run, name="warden-client", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()

    def run(self, coro: Coroutine[Any, Any, T], *, interrupt_grace_s: float = 6.0) -> T:
        """Runs ``coro`` on the loop and waits for it. If the wait is
        interrupted (KeyboardInterrupt), the coroutine is cancelled and given
        ``interrupt_grace_s`` to finish (a waiting lock's CancelWait)."""
        if threading.current_thread() is self._thread:
            coro.close()
            raise RuntimeError("the synchronous warden_client API was called from its own event loop")
        finished = threading.Event()

        async def guarded() -> T:
            try:
                return await coro
            finally:
                finished.set()

        future = asyncio.run_coroutine_threadsafe(guarded(), self.loop)
        try:
            return future.result()
        except BaseException:
            if not future.done():
                future.cancel()
                finished.wait(interrupt_grace_s)
            raise

    def stop(self) -> None:
        if self.loop.is_closed():
            return
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join()
        self.loop.close()


class Client:
    """A synchronous client of a Warden cluster; see
    :class:`warden_client.aio.Client` for the calls' promises. Use ``with
    Client(...) as client:`` or call :meth:`close`."""

    def __init__(self, endpoints: str | Sequence[str], options: ClientOptions | None = None) -> None:
        self._loop = _Loop()

        async def build() -> aio.Client:
            return aio.Client(endpoints, options)

        try:
            self._aio = self._loop.run(build())
        except BaseException:
            self._loop.stop()
            raise

    @property
    def aio(self) -> aio.Client:
        """The asyncio client underneath (use it only on its own loop)."""
        return self._aio

    @property
    def client_id(self) -> int:
        return self._aio.client_id

    @property
    def endpoints(self) -> tuple[str, ...]:
        return self._aio.endpoints

    def _run(self, coro: Coroutine[Any, Any, T]) -> T:
        return self._loop.run(coro)

    def close(self) -> None:
        """Closes the channels and stops the client's thread."""
        try:
            self._run(self._aio.close())
        finally:
            self._loop.stop()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def session(self, ttl_s: float = 10.0, *, clock: Clock | None = None) -> Session:
        """Opens a session (a lease kept alive in the background every TTL/3)."""
        return Session(self, self._run(self._aio.session(ttl_s, clock=clock)))

    def acquire(
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
        """See :meth:`warden_client.aio.Client.acquire`."""
        return self._run(
            self._aio.acquire(
                resource,
                ttl_s=ttl_s,
                lease_id=lease_id,
                wait_timeout_s=wait_timeout_s,
                lock_delay_s=lock_delay_s,
                on_queued=on_queued,
                mode=mode,
                limit=limit,
                resources=resources,
                max_hold_s=max_hold_s,
            )
        )

    def status(self, resource: str) -> ResourceStatus:
        return self._run(self._aio.status(resource))

    def validate(self, resource: str, fencing_token: int) -> ValidateResult:
        return self._run(self._aio.validate(resource, fencing_token))

    def cluster_status(self) -> ClusterStatus:
        return self._run(self._aio.cluster_status())

    def lease_grant(self, ttl_s: float) -> LeaseGrantResult:
        return self._run(self._aio.lease_grant(ttl_s))

    def lease_time_to_live(self, lease_id: int) -> LeaseInfo:
        return self._run(self._aio.lease_time_to_live(lease_id))

    def renew(self, lease_id: int) -> RenewResult:
        return self._run(self._aio.renew(lease_id))

    def keep_alive_once(self, lease_id: int) -> RenewResult:
        return self._run(self._aio.keep_alive_once(lease_id))

    def revoke(self, lease_id: int) -> int:
        return self._run(self._aio.revoke(lease_id))

    def release(self, lease_id: int, resource: str | None = None, fencing_token: int | None = None) -> ReleaseResult:
        return self._run(self._aio.release(lease_id, resource, fencing_token))

    def proclaim(self, resource: str, lease_id: int, fencing_token: int, value: str) -> None:
        self._run(self._aio.proclaim(resource, lease_id, fencing_token, value))

    def cancel_wait(self, resource: str, acquire_request_id: int) -> CancelWaitResult:
        return self._run(self._aio.cancel_wait(resource, acquire_request_id))

    def list_locks(self, prefix: str = "") -> tuple[ListedLock, ...]:
        return self._run(self._aio.list_locks(prefix))

    def watch(self, *, resource: str | None = None, prefix: str | None = None, start_index: int = 0) -> Watcher:
        return Watcher(self, self._run(self._aio.watch(resource=resource, prefix=prefix, start_index=start_index)))

    def observe(self, election: str) -> Observer:
        return Observer(self, self._run(self._aio.observe(election)))

    def leader(self, election: str) -> LeaderInfo | None:
        result: LeaderInfo | None = self._run(self._aio.leader(election))
        return result


class Session:
    """A synchronous :class:`warden_client.aio.Session`: same promises; the
    keep-alive runs on the client's thread. ``with client.session(10) as
    session:`` closes it on exit."""

    def __init__(self, client: Client, session: aio.Session) -> None:
        self._client = client
        self._aio = session
        self._lost_event = threading.Event()
        client._loop.loop.call_soon_threadsafe(session.on_lost, lambda _lost: self._lost_event.set())

    @property
    def aio(self) -> aio.Session:
        return self._aio

    @property
    def client(self) -> Client:
        return self._client

    @property
    def lease_id(self) -> int:
        return self._aio.lease_id

    @property
    def ttl_ms(self) -> int:
        return self._aio.ttl_ms

    @property
    def valid_until(self) -> float:
        """Seconds on the session clock (CLOCK_BOOTTIME) until which the
        session is certainly held (S5)."""
        return self._aio.valid_until

    @property
    def lost(self) -> Lost | None:
        return self._aio.lost

    @property
    def lost_event(self) -> threading.Event:
        """Set once the session is lost (no later than ``valid_until``)."""
        return self._lost_event

    def on_lost(self, callback: Callable[[Lost], None]) -> None:
        """Calls ``callback(lost)`` once, on the client's thread, when the
        session is lost (at once if it already is)."""
        self._client._loop.loop.call_soon_threadsafe(self._aio.on_lost, callback)

    def wait_lost(self, timeout_s: float | None = None) -> Lost | None:
        """Blocks until the session is lost (or ``timeout_s`` passes: then
        ``None``)."""
        self._lost_event.wait(timeout_s)
        return self._aio.lost

    def time_left_s(self) -> float:
        return self._aio.time_left_s()

    def check(self) -> None:
        """Raises SessionLostError unless the session is certainly still held
        (synchronous; reads the session clock). A failure marks the session
        lost (on the client's thread)."""
        verdict = self._aio.assess()
        if verdict is not None:
            self._client._loop.loop.call_soon_threadsafe(self._aio.check_and_lose)
            raise SessionLostError(verdict)

    def renew(self) -> float:
        return self._client._run(self._aio.renew())

    def close(self) -> None:
        self._client._run(self._aio.close())

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def lock(
        self,
        resource: str,
        *,
        wait_timeout_s: float | None = None,
        lock_delay_s: float = 0.0,
        on_queued: Callable[[Queued], None] | None = None,
        max_hold_s: float | None = None,
    ) -> Lock:
        """Takes ``resource`` (waiting in the FIFO queue, at most
        ``wait_timeout_s`` if given: then WaitTimeoutError). ``with
        session.lock("orders") as lock:`` releases it on exit. ``max_hold_s``
        as in :meth:`warden_client.aio.Session.lock`."""

        async def take() -> aio.Lock:
            return await self._aio.lock(
                resource,
                wait_timeout_s=wait_timeout_s,
                lock_delay_s=lock_delay_s,
                on_queued=on_queued,
                max_hold_s=max_hold_s,
            )

        return Lock(self, self._client._run(take()))

    def try_lock(self, resource: str, *, lock_delay_s: float = 0.0, max_hold_s: float | None = None) -> Lock:
        """Takes ``resource`` if free now; else HeldError (naming the holder's
        lease) or LockDelayError."""

        async def take() -> aio.Lock:
            return await self._aio.try_lock(resource, lock_delay_s=lock_delay_s, max_hold_s=max_hold_s)

        return Lock(self, self._client._run(take()))

    def read_lock(
        self,
        resource: str,
        *,
        wait_timeout_s: float | None = None,
        lock_delay_s: float = 0.0,
        on_queued: Callable[[Queued], None] | None = None,
        max_hold_s: float | None = None,
    ) -> Lock:
        """A reader's (shared) grant of the read-write lock ``resource``;
        see :meth:`warden_client.aio.Session.read_lock`."""

        async def take() -> aio.Lock:
            return await self._aio.read_lock(
                resource,
                wait_timeout_s=wait_timeout_s,
                lock_delay_s=lock_delay_s,
                on_queued=on_queued,
                max_hold_s=max_hold_s,
            )

        return Lock(self, self._client._run(take()))

    def write_lock(
        self,
        resource: str,
        *,
        wait_timeout_s: float | None = None,
        lock_delay_s: float = 0.0,
        on_queued: Callable[[Queued], None] | None = None,
        max_hold_s: float | None = None,
    ) -> Lock:
        """The writer's (exclusive) grant of the read-write lock ``resource``;
        see :meth:`warden_client.aio.Session.write_lock`."""

        async def take() -> aio.Lock:
            return await self._aio.write_lock(
                resource,
                wait_timeout_s=wait_timeout_s,
                lock_delay_s=lock_delay_s,
                on_queued=on_queued,
                max_hold_s=max_hold_s,
            )

        return Lock(self, self._client._run(take()))

    def semaphore(self, resource: str, limit: int) -> Semaphore:
        """The semaphore ``resource`` of ``limit`` permits on this session;
        see :meth:`warden_client.aio.Session.semaphore`."""
        return Semaphore(self, self._aio.semaphore(resource, limit))

    def lock_all(
        self,
        resources: Sequence[str],
        *,
        wait_timeout_s: float | None = None,
        on_queued: Callable[[Queued], None] | None = None,
    ) -> MultiLock:
        """Takes ``resources`` together, all or none; see
        :meth:`warden_client.aio.Session.lock_all`."""

        async def take() -> aio.MultiLock:
            return await self._aio.lock_all(resources, wait_timeout_s=wait_timeout_s, on_queued=on_queued)

        return MultiLock(self, self._client._run(take()))

    def election(self, name: str) -> Election:
        return Election(self, self._aio.election(name))


class Lock:
    """A synchronous :class:`warden_client.aio.Lock`."""

    def __init__(self, session: Session, lock: aio.Lock) -> None:
        self._session = session
        self._aio = lock

    def __repr__(self) -> str:
        return repr(self._aio)

    @property
    def resource(self) -> str:
        return self._aio.resource

    @property
    def fencing_token(self) -> int:
        return self._aio.fencing_token

    @property
    def lease_id(self) -> int:
        return self._aio.lease_id

    @property
    def valid_until(self) -> float:
        return self._aio.valid_until

    @property
    def session(self) -> Session:
        return self._session

    @property
    def slot(self) -> int | None:
        """A semaphore permit's slot in ``0..limit``; ``None`` otherwise."""
        return self._aio.slot

    @property
    def mode(self) -> LockMode:
        return self._aio.mode

    @property
    def max_hold_until(self) -> float | None:
        """The max-hold bound on the session clock; ``None`` without one."""
        return self._aio.max_hold_until

    def check(self) -> None:
        """See :meth:`Session.check`; also fails past :attr:`max_hold_until`
        (Lost kind MAX_HOLD)."""
        if self._aio.released:
            self._aio.check()
        self._session.check()
        until = self._aio.max_hold_until
        if until is not None and self._session.aio.clock.now() >= until:
            raise SessionLostError(Lost(LostKind.MAX_HOLD, self.lease_id, until))

    def release(self) -> ReleaseResult:
        return self._session.client._run(self._aio.release())

    def __enter__(self) -> Lock:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, *exc: object) -> None:
        self._session.client._run(self._aio.exit_block(exc_type is not None))


class MultiLock(Lock):
    """A synchronous :class:`warden_client.aio.MultiLock`."""

    def __init__(self, session: Session, lock: aio.MultiLock) -> None:
        super().__init__(session, lock)
        self._multi = lock

    @property
    def grants(self) -> tuple[ResourceToken, ...]:
        """Every resource with its fencing token, in the order asked."""
        return self._multi.grants

    def token(self, resource: str) -> int | None:
        return self._multi.token(resource)


class Semaphore:
    """A synchronous :class:`warden_client.aio.Semaphore`."""

    def __init__(self, session: Session, semaphore: aio.Semaphore) -> None:
        self._session = session
        self._aio = semaphore

    def __repr__(self) -> str:
        return repr(self._aio)

    @property
    def resource(self) -> str:
        return self._aio.resource

    @property
    def limit(self) -> int:
        return self._aio.limit

    def acquire(
        self,
        *,
        wait_timeout_s: float | None = None,
        lock_delay_s: float = 0.0,
        on_queued: Callable[[Queued], None] | None = None,
        max_hold_s: float | None = None,
    ) -> Lock:
        """Takes one permit (a :class:`Lock` with a ``slot``)."""

        async def take() -> aio.Lock:
            return await self._aio.acquire(
                wait_timeout_s=wait_timeout_s, lock_delay_s=lock_delay_s, on_queued=on_queued, max_hold_s=max_hold_s
            )

        return Lock(self._session, self._session.client._run(take()))

    def try_acquire(self, *, lock_delay_s: float = 0.0, max_hold_s: float | None = None) -> Lock:
        """Takes one permit if one is free now; else HeldError."""

        async def take() -> aio.Lock:
            return await self._aio.try_acquire(lock_delay_s=lock_delay_s, max_hold_s=max_hold_s)

        return Lock(self._session, self._session.client._run(take()))


class Election:
    def __init__(self, session: Session, election: aio.Election) -> None:
        self._session = session
        self._aio = election

    @property
    def name(self) -> str:
        return self._aio.name

    def campaign(self, value: str) -> Leadership:
        """Stands with ``value`` and blocks until elected."""
        return Leadership(self._session, self._session.client._run(self._aio.campaign(value)))

    def leader(self) -> LeaderInfo | None:
        return self._session.client._run(self._aio.leader())

    def observe(self) -> Observer:
        return Observer(self._session.client, self._session.client._run(self._aio.observe()))


class Leadership:
    def __init__(self, session: Session, leadership: aio.Leadership) -> None:
        self._session = session
        self._aio = leadership

    def __repr__(self) -> str:
        return repr(self._aio)

    @property
    def name(self) -> str:
        return self._aio.name

    @property
    def fencing_token(self) -> int:
        return self._aio.fencing_token

    @property
    def lease_id(self) -> int:
        return self._aio.lease_id

    @property
    def valid_until(self) -> float:
        return self._aio.valid_until

    def check(self) -> None:
        """See :meth:`Session.check`."""
        self._session.check()

    def proclaim(self, value: str) -> None:
        self._session.client._run(self._aio.proclaim(value))

    def resign(self) -> ReleaseResult:
        return self._session.client._run(self._aio.resign())

    def __enter__(self) -> Leadership:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, *exc: object) -> None:
        self._session.client._run(self._aio.__aexit__(exc_type, None, None))


class Watcher:
    """A synchronous watch: ``for event in watcher`` or ``watcher.next(timeout_s)``."""

    def __init__(self, client: Client, watcher: aio.Watcher) -> None:
        self._client = client
        self._aio = watcher

    def next(self, timeout_s: float | None = None) -> WatchEvent:
        """The next event; TimeoutError after ``timeout_s`` (nothing is lost:
        the stream is read in the background)."""

        async def one() -> WatchEvent:
            return await asyncio.wait_for(self._aio.next(), timeout_s)

        return self._client._run(one())

    def __iter__(self) -> Iterator[WatchEvent]:
        while True:
            yield self.next()

    def close(self) -> None:
        self._client._loop.loop.call_soon_threadsafe(self._aio.close)

    def __enter__(self) -> Watcher:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Observer:
    """A synchronous election observer: ``for leader in observer``."""

    def __init__(self, client: Client, observer: aio.Observer) -> None:
        self._client = client
        self._aio = observer

    def next(self, timeout_s: float | None = None) -> LeaderInfo:
        async def one() -> LeaderInfo:
            return await asyncio.wait_for(self._aio.next(), timeout_s)

        return self._client._run(one())

    def __iter__(self) -> Iterator[LeaderInfo]:
        while True:
            yield self.next()

    def close(self) -> None:
        self._client._loop.loop.call_soon_threadsafe(self._aio.close)

    def __enter__(self) -> Observer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
