"""The client's behaviour against a scripted node (tests/fake_server.py): the
paths a real cluster cannot be made to take on demand."""

from __future__ import annotations

import asyncio

import grpc
import pytest

from fake_server import FakeNode, Script
from warden_client import (
    ClientOptions,
    FailedPreconditionError,
    InvalidArgumentError,
    LostKind,
    RequestExpiredError,
    SessionLostError,
    TransportError,
    aio,
)


async def test_abandoning_a_waiting_lock_sends_cancel_wait_before_the_cancellation_propagates() -> None:
    """S8 (C11's client side, on a server that has CancelWait): cancelling a
    waiting lock sends Lock/CancelWait naming the acquire's request id and
    resource, with its own request id; the acquire's id is still
    unacknowledged in the cancel's header (the server still knows it); and
    CancelledError reaches the caller only after the cancel was answered."""
    async with FakeNode() as node, aio.Client([node.addr]) as client:
        session = await client.session(ttl_s=5.0)
        queued = asyncio.Event()
        waiting = asyncio.ensure_future(session.lock("r", on_queued=lambda _q: queued.set()))
        await asyncio.wait_for(queued.wait(), 5.0)
        waiting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiting
        assert node.script.cancel_seen.is_set(), "the cancel was answered before CancelledError propagated"
        [acquire] = node.script.acquires
        [cancel] = node.script.cancels
        assert acquire.lease_id == session.lease_id and acquire.wait_timeout_ms == 3_600_000
        assert (cancel.acquire_request_id, cancel.resource) == (acquire.header.request_id, "r")
        assert cancel.header.client_id == acquire.header.client_id == client.client_id
        assert cancel.header.request_id > acquire.header.request_id
        assert cancel.header.acked_request_id < acquire.header.request_id
        # Both are answered now: the watermark passed them.
        assert client.request_ids.acked >= cancel.header.request_id
        await session.close()


async def test_a_caller_timeout_on_a_waiting_lock_sends_cancel_wait() -> None:
    """S8: the caller's own timeout (asyncio.timeout) abandons the wait the
    same way: CancelWait is sent, and TimeoutError reaches the caller."""
    async with FakeNode() as node, aio.Client([node.addr]) as client:
        session = await client.session(ttl_s=5.0)
        with pytest.raises(TimeoutError):
            async with asyncio.timeout(0.3):
                await session.lock("r")
        assert [c.resource for c in node.script.cancels] == ["r"]
        await session.close()


async def test_a_server_without_cancel_wait_is_not_asked_again_and_again() -> None:
    """An older server answers CancelWait UNIMPLEMENTED: the abandoning caller
    is not held up for the call deadline (UNIMPLEMENTED is final for it)."""
    async with FakeNode(Script(cancel_wait=False)) as node, aio.Client([node.addr]) as client:
        session = await client.session(ttl_s=5.0)
        loop = asyncio.get_running_loop()
        with pytest.raises(TimeoutError):
            async with asyncio.timeout(0.3):
                await session.lock("r")
        started = loop.time()
        await client.close()  # waits for cancels in flight: there are none left
        assert loop.time() - started < 1.0
        assert node.script.calls.count("CancelWait") == 1


@pytest.mark.parametrize(
    ("published", "window", "prefix"),
    [((3, "\x01votes/"), 3, "\x01votes/"), ((0, ""), 64, "\x01election/")],
    ids=["published", "zero-values"],
)
async def test_the_window_and_election_prefix_are_what_the_server_publishes(
    published: tuple[int, str], window: int, prefix: str
) -> None:
    """S7 and elections: the in-flight window and the election key prefix come
    from ClusterStatus (max_requests_in_flight, election_prefix), read before
    the first mutating call; a server that sends 0 / "" leaves the defaults
    (64, U+0001 "election/")."""
    async with FakeNode(Script(published=published)) as node, aio.Client([node.addr]) as client:
        session = await client.session(ttl_s=5.0)
        assert node.script.calls.index("ClusterStatus") < node.script.calls.index("LeaseGrant")
        assert client.max_requests_in_flight == window
        assert await client.election_prefix() == prefix
        await session.close()


@pytest.mark.parametrize(("own", "published", "window"), [(2, 3, 2), (10, 3, 3), (10, 0, 10)])
async def test_a_window_of_the_callers_own_only_narrows_the_servers(own: int, published: int, window: int) -> None:
    """S7: ClientOptions.max_requests_in_flight never widens the window past
    what the server keeps outcomes for; with nothing published it holds."""
    async with (
        FakeNode(Script(published=(published, ""))) as node,
        aio.Client([node.addr], ClientOptions(max_requests_in_flight=own)) as client,
    ):
        session = await client.session(ttl_s=5.0)
        assert client.max_requests_in_flight == window
        await session.close()


async def test_a_lease_gone_reply_loses_the_session_and_ends_its_waits() -> None:
    """S5: a keep-alive answered live=false loses the session at once (event,
    callback, check()), a lost session stays lost, and a lock waiting on it
    ends with SessionLostError rather than a generic cancellation."""
    async with FakeNode() as node, aio.Client([node.addr]) as client:
        session = await client.session(ttl_s=5.0)
        seen: list[LostKind] = []
        session.on_lost(lambda lost: seen.append(lost.kind))
        queued = asyncio.Event()
        waiting = asyncio.ensure_future(session.lock("r", on_queued=lambda _q: queued.set()))
        await asyncio.wait_for(queued.wait(), 5.0)
        node.script.lease_live = False
        with pytest.raises(SessionLostError) as lost:
            await session.renew()
        assert lost.value.lost.kind is LostKind.LEASE_GONE
        assert session.lost_event.is_set() and seen == [LostKind.LEASE_GONE]
        with pytest.raises(SessionLostError):
            await asyncio.wait_for(waiting, 5.0)
        node.script.lease_live = True
        with pytest.raises(SessionLostError):
            session.check()
        assert session.time_left_s() == 0.0
        await session.close()


async def test_a_failing_session_clock_loses_the_session() -> None:
    """S5 and "Time": a session clock that cannot be read loses the session
    (CLOCK_FAILED, naming the clock); no validity is made up."""
    from warden_client import ClockError

    class FailingClock:
        name = "test-clock"
        fail = False

        def now(self) -> float:
            if self.fail:
                raise ClockError(self.name, "no such device")
            return 1000.0

    clock = FailingClock()
    async with FakeNode() as node, aio.Client([node.addr]) as client:
        session = await client.session(ttl_s=5.0, clock=clock)
        assert session.valid_until == pytest.approx(1000.0 + 4.85)
        clock.fail = True
        with pytest.raises(SessionLostError) as lost:
            session.check()
        assert lost.value.lost.kind is LostKind.CLOCK_FAILED
        assert "test-clock" in str(lost.value)
        await asyncio.wait_for(session.lost_event.wait(), 1.0)
        await session.close()


async def test_a_follower_redirect_is_followed_at_once() -> None:
    """L3: a node that is not the leader answers Unavailable naming the leader
    in warden-leader; the call goes there at once (no backoff pause) and the
    leader is cached for the next call."""
    async with FakeNode() as leader, FakeNode() as follower:
        follower.script.redirect = leader.addr
        async with aio.Client([follower.addr], ClientOptions(backoff_cap_s=5.0)) as client:
            loop = asyncio.get_running_loop()
            started = loop.time()
            status = await client.status("x")
            assert status.read_index == 7
            assert loop.time() - started < 1.0
            assert client.cached_leader == leader.addr
            await client.status("y")
        assert follower.script.calls.count("Status") == 1
        assert leader.script.calls.count("Status") == 2


async def test_error_types_come_from_the_details_not_the_message() -> None:
    """ "What bad input gets" and S7: the exception class and field come from
    google.rpc ErrorInfo/BadRequest; a status without details falls back to
    its code, and a message text that looks like another error changes
    nothing."""
    script = Script()
    async with FakeNode(script) as node, aio.Client([node.addr]) as client:
        script.status_error = (grpc.StatusCode.INVALID_ARGUMENT, "resource: too long", "INVALID_ARGUMENT", "resource")
        with pytest.raises(InvalidArgumentError) as bad:
            await client.status("x")
        assert (bad.value.field, bad.value.reason, bad.value.message) == (
            "resource",
            "INVALID_ARGUMENT",
            "resource: too long",
        )
        script.status_error = (grpc.StatusCode.FAILED_PRECONDITION, "gone", "REQUEST_EXPIRED", None)
        with pytest.raises(RequestExpiredError):
            await client.status("x")
        script.status_error = (grpc.StatusCode.FAILED_PRECONDITION, "request_expired: looks like one", None, None)
        with pytest.raises(FailedPreconditionError) as plain:
            await client.status("x")
        assert not isinstance(plain.value, RequestExpiredError)
        assert plain.value.reason is None and plain.value.field is None


async def test_a_renew_reply_must_echo_the_attempt_sequence() -> None:
    """S5: an acknowledgement is matched to the send time of its own attempt
    by the echoed sequence; a reply with another sequence is refused."""
    async with FakeNode(Script(renew_sequence=999_999)) as node, aio.Client([node.addr]) as client:
        with pytest.raises(TransportError) as refused:
            await client.renew(5)
        assert "sequence" in str(refused.value)


def test_ctrl_c_on_a_waiting_sync_lock_sends_cancel_wait() -> None:
    """S8 through the synchronous API: KeyboardInterrupt while ``lock()``
    blocks cancels the wait with CancelWait before the interrupt reaches the
    caller, and the session stays usable."""
    import signal
    import threading

    from warden_client import Client

    ready = threading.Event()
    stop: asyncio.Future[None] | None = None
    holder: dict[str, object] = {}

    def serve() -> None:
        async def main() -> None:
            nonlocal stop
            stop = asyncio.get_running_loop().create_future()
            async with FakeNode() as node:
                holder["node"] = node
                ready.set()
                await stop

        asyncio.run(main())

    server = threading.Thread(target=serve, daemon=True)
    server.start()
    assert ready.wait(10.0)
    node = holder["node"]
    assert isinstance(node, FakeNode)
    # This test once hung with the main thread still waiting in lock() (the
    # interrupt never reached it): past 60 s, dump every thread's stack and
    # end the run, so a hang fails fast and says where, instead of holding
    # the suite until CI's own limit.
    import faulthandler

    faulthandler.dump_traceback_later(60.0, exit=True)
    try:
        with Client([node.addr]) as client, client.session(ttl_s=5.0) as session:

            def ctrl_c(_q: object) -> None:
                signal.pthread_kill(threading.main_thread().ident or 0, signal.SIGINT)

            with pytest.raises(KeyboardInterrupt):
                session.lock("r", on_queued=ctrl_c)
            assert [c.resource for c in node.script.cancels] == ["r"]
            assert session.lost is None
            session.check()
    finally:
        faulthandler.cancel_dump_traceback_later()
        assert stop is not None
        stop.get_loop().call_soon_threadsafe(stop.set_result, None)
        server.join(10.0)


async def test_closing_the_client_stops_its_sessions() -> None:
    """S5: once its client is closed nothing renews a session, so the session
    says so at once (lost, CLOSED) instead of looking valid until its
    valid_until; its lease is left to expire (no revoke is sent)."""
    async with FakeNode() as node:
        client = aio.Client([node.addr])
        session = await client.session(ttl_s=5.0)
        await client.close()
        assert session.lost is not None and session.lost.kind is LostKind.CLOSED
        with pytest.raises(SessionLostError):
            session.check()
        assert "LeaseRevoke" not in node.script.calls
