"""The asyncio :class:`Watcher` (a resumable stream of lock-table events) and
:class:`Observer` (an election's leaders).

Any node serves a watch (followers apply the same committed entries; one may
lag the leader). The watcher remembers where it is (the last index it returned
and how many events of that index it returned) and, when its node goes away,
reconnects to another endpoint and resumes there without gaps or duplicates:
it asks for the last index again and skips the events of that index it
already returned (every node derives the same events, in the same order, from
the same entry). A start below a node's retained window raises
:class:`~warden_client.errors.CompactedError` with the oldest retained index.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from typing import TYPE_CHECKING, Any

import grpc
from grpc import aio

from .._proto import watch_pb2
from ..errors import (
    CompactedError,
    InvalidArgumentError,
    error_from_status,
    is_retryable,
    status_of,
)
from ..types import LeaderInfo, WatchEvent
from .client import AttemptFailed, _Node

if TYPE_CHECKING:
    from .client import Client

log = logging.getLogger("warden_client")

#: Response metadata entry with the first index a stream covers.
START_INDEX_METADATA = "warden-start-index"


async def _open_stream(call: Any, timeout_s: float) -> int:
    """Waits for a watch stream's response headers; returns the first index
    it covers. A refused watch raises its status as AioRpcError."""
    try:
        initial = await asyncio.wait_for(call.initial_metadata(), timeout_s)
    except TimeoutError:
        call.cancel()
        raise AttemptFailed(f"no answer within {round(timeout_s * 1000)} ms") from None
    start = dict((k, v) for k, v in initial if isinstance(v, str)).get(START_INDEX_METADATA)
    if start is not None:
        return int(start)
    # Every stream the server accepts names its start: this one was refused
    # (a trailers-only status).
    try:
        code = await asyncio.wait_for(call.code(), timeout_s)
    except TimeoutError:
        call.cancel()
        raise AttemptFailed("watch opened without naming its start index") from None
    if code is grpc.StatusCode.OK:
        raise AttemptFailed("watch stream ended at once")
    raise aio.AioRpcError(code, initial, await call.trailing_metadata(), await call.details())


class Watcher:
    """A running watch: ``async for event in watcher`` (or ``await
    watcher.next()``). A background task reads the stream and reconnects
    across node failures within the client's deadline, so abandoning a
    ``next()`` (a timeout of the caller) loses nothing; an error ends the
    watch and is raised by ``next()``. ``close()`` (or ``async with``) stops
    it."""

    def __init__(self, client: Client, request_target: dict[str, str], start_index: int) -> None:
        self._client = client
        self._target = request_target
        self._resume_index = start_index
        self._seen_at_resume = 0
        self._received_at_resume = 0
        self._call: Any = None
        self._events: asyncio.Queue[WatchEvent | BaseException] = asyncio.Queue()
        self._pump: asyncio.Task[None] | None = None
        self._ended: BaseException | None = None

    @classmethod
    async def open(cls, client: Client, *, resource: str | None, prefix: str | None, start_index: int) -> Watcher:
        if (resource is None) == (prefix is None):
            raise InvalidArgumentError("resource: set exactly one of resource and prefix", field="resource")
        target = {"resource": resource} if resource is not None else {"prefix": prefix or ""}
        watcher = cls(client, target, start_index)
        await watcher._connect()
        watcher._pump = asyncio.ensure_future(watcher._run())
        return watcher

    @property
    def resume_index(self) -> int:
        """The index the watch would resume from now."""
        return self._resume_index

    async def _connect(self) -> None:
        request = watch_pb2.WatchRequest(start_index=self._resume_index, **self._target)
        attempt_timeout = self._client.options.attempt_timeout_s

        async def attempt(_address: str, node: _Node) -> tuple[Any, int]:
            call = node.watch.Watch(request)
            return call, await _open_stream(call, attempt_timeout)

        loop = asyncio.get_running_loop()
        call, start = await self._client.call("watch", loop.time() + self._client.options.deadline_s, attempt)
        if self._resume_index == 0:
            # "From now": pin "now" so that a reconnect leaves no gap.
            self._resume_index = start
        self._received_at_resume = 0
        self._call = call

    async def _run(self) -> None:
        try:
            while True:
                self._events.put_nowait(await self._read())
        except asyncio.CancelledError:
            raise
        except BaseException as e:  # the watch's end, handed to next()
            self._events.put_nowait(e)

    async def _read(self) -> WatchEvent:
        while True:
            if self._call is None:
                await self._connect()
                continue
            try:
                message = await self._call.read()
            except aio.AioRpcError as e:
                status = status_of(e)
                self._call = None
                if not is_retryable(status):
                    raise error_from_status(status) from None
                log.debug("watch stream lost (%s); resuming at %d", status.describe(), self._resume_index)
                continue
            if message is aio.EOF:
                # The node closed the stream (shutting down): go elsewhere.
                self._call = None
                continue
            if message.index == self._resume_index:
                self._received_at_resume += 1
                if self._received_at_resume <= self._seen_at_resume:
                    continue  # already returned before the reconnect
                self._seen_at_resume = self._received_at_resume
            else:
                self._resume_index = message.index
                self._received_at_resume = 1
                self._seen_at_resume = 1
            return WatchEvent(
                index=message.index,
                resource=message.resource,
                event=message.event,
                lease_id=message.lease_id,
                fencing_token=message.fencing_token,
            )

    async def next(self) -> WatchEvent:
        """The next event (waits as long as it takes). Raises the error that
        ended the watch (CompactedError, ClusterUnavailableError, ...)."""
        if self._ended is not None:
            raise self._ended
        item = await self._events.get()
        if isinstance(item, BaseException):
            self._ended = item
            raise item
        return item

    def __aiter__(self) -> Watcher:
        return self

    async def __anext__(self) -> WatchEvent:
        return await self.next()

    def close(self) -> None:
        if self._pump is not None:
            self._pump.cancel()
        if self._call is not None:
            self._call.cancel()
            self._call = None

    async def __aenter__(self) -> Watcher:
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.close()


class Observer:
    """An election's leaders (etcd ``Observe``): the current one first (if
    any), then each new leader or new value, in commit order. Between two
    reports several very short terms may pass unseen; the tokens of reported
    leaders always grow."""

    def __init__(self, client: Client, key: str, watcher: Watcher) -> None:
        self._client = client
        self._key = key
        self._watcher = watcher
        self._last: LeaderInfo | None = None
        self._pending: deque[LeaderInfo] = deque()

    @classmethod
    async def open(cls, client: Client, election: str) -> Observer:
        from .election import leader_of

        key = await client.election_key(election)
        # Watch first, then read: a change in between shows up as an event
        # and is read again (duplicates are filtered).
        watcher = await client.watch(resource=key)
        observer = cls(client, key, watcher)
        observer._offer(await leader_of(client, key))
        return observer

    def _offer(self, now: LeaderInfo | None) -> None:
        if now is None or now == self._last:
            return
        if self._last is not None and now.fencing_token < self._last.fencing_token:
            return
        self._last = now
        self._pending.append(now)

    async def next(self) -> LeaderInfo:
        """The next leader (or the current leader's new value)."""
        from .election import leader_of

        while True:
            if self._pending:
                return self._pending.popleft()
            event = await self._watcher.next()
            if event.event in ("granted", "proclaimed"):
                self._offer(await leader_of(self._client, self._key))

    def __aiter__(self) -> Observer:
        return self

    async def __anext__(self) -> LeaderInfo:
        return await self.next()

    def close(self) -> None:
        self._watcher.close()

    async def __aenter__(self) -> Observer:
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.close()


__all__ = ["CompactedError", "Observer", "Watcher"]
