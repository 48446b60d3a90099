"""Request ids and the acknowledged watermark (docs/semantics.md S7).

Each new mutating request takes the next id (1, 2, ...); its retries reuse it.
The watermark (``acked_request_id``) is the highest id such that it and every
lower id have been answered: the client will never retry them, so the server
may forget their outcomes. A request counts as answered when its call returns
(with any result) or is abandoned. At most ``window`` ids are handed out past
the watermark (the server keeps that many outcomes per client; with more in
flight, one slow request could arrive after its outcome slot was reused and be
refused although it never ran). A further request waits for the oldest to
return, as a TCP sender waits for its window.
"""

from __future__ import annotations

import asyncio
import types

from .errors import ResourceExhaustedError


class RequestIds:
    """The id bookkeeping of one client (used from one event loop)."""

    def __init__(self, window: int) -> None:
        if window < 1:
            raise ValueError(f"window must be at least 1; got {window}")
        self._window = window
        self._last_issued = 0
        self._in_flight: set[int] = set()
        # Futures of requests waiting for room, woken when any request returns.
        self._waiting: list[asyncio.Future[None]] = []

    @property
    def window(self) -> int:
        return self._window

    def set_window(self, window: int) -> None:
        """Adopts the window the server published (takes effect for the next
        request; ids already out stay out)."""
        if window >= 1:
            self._window = window

    @property
    def acked(self) -> int:
        """The highest id such that it and every lower id were answered."""
        if self._in_flight:
            return min(self._in_flight) - 1
        return self._last_issued

    def has_room(self) -> bool:
        return self._last_issued - self.acked < self._window

    def try_begin(self) -> InFlight | None:
        """The next id if the window has room, else ``None``."""
        if not self.has_room():
            return None
        acked = self.acked
        self._last_issued += 1
        self._in_flight.add(self._last_issued)
        assert self._last_issued - acked <= self._window, "in-flight window exceeded"
        return InFlight(self, self._last_issued, acked)

    async def begin(self, timeout_s: float | None = None) -> InFlight:
        """Takes the next id, first waiting (at most ``timeout_s``) until it
        is within the window of the watermark.

        Raises ResourceExhaustedError when the window stays full that long."""
        loop = asyncio.get_running_loop()
        deadline = None if timeout_s is None else loop.time() + timeout_s
        while (ticket := self.try_begin()) is None:
            woken: asyncio.Future[None] = loop.create_future()
            self._waiting.append(woken)
            left = None if deadline is None else deadline - loop.time()
            try:
                if left is not None and left <= 0:
                    raise TimeoutError
                await asyncio.wait_for(woken, left)
            except TimeoutError:
                raise ResourceExhaustedError(
                    f"{self._window} requests of this client are in flight above its "
                    f"acknowledged request {self.acked}, and none returned within {timeout_s} s"
                ) from None
            finally:
                if woken in self._waiting:
                    self._waiting.remove(woken)
        return ticket

    def _finish(self, request_id: int) -> None:
        self._in_flight.discard(request_id)
        waiting, self._waiting = self._waiting, []
        for woken in waiting:
            if not woken.done():
                woken.set_result(None)


class InFlight:
    """A request id in flight; :meth:`finish` (or leaving the ``with`` block)
    marks it answered. Finishing twice is harmless."""

    def __init__(self, ids: RequestIds, request_id: int, acked_request_id: int) -> None:
        self._ids = ids
        self.request_id = request_id
        #: The watermark sent with every attempt of this request (fixed here,
        #: so every retry is byte-identical).
        self.acked_request_id = acked_request_id
        self.finished = False

    def finish(self) -> None:
        if not self.finished:
            self.finished = True
            self._ids._finish(self.request_id)

    def __enter__(self) -> InFlight:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: types.TracebackType | None,
    ) -> None:
        self.finish()
