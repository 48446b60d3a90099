"""Conformance scenarios C10-C11 (clients/conformance/scenarios.md): bad input
gets a typed error naming the field, and an abandoned wait leaves no waiter."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import pytest

from harness import Cluster, wait_for
from warden_client import InvalidArgumentError, aio


@pytest.mark.conformance("C10-bad-input-typed-error")
async def test_c10_bad_input_typed_error(client: aio.Client) -> None:
    """conformance: C10-bad-input-typed-error ("What bad input gets",
    docs/semantics.md): a TTL below the minimum, a 600-byte resource and a
    2 h wait each get InvalidArgumentError whose field comes from the status's
    google.rpc.BadRequest (and ErrorInfo reason INVALID_ARGUMENT, domain
    warden.v1), and nothing is created."""
    session = await client.session(ttl_s=5.0)
    cases: list[tuple[str, Callable[[], Awaitable[object]]]] = [
        ("ttl_ms", lambda: client.acquire("c10-ttl", ttl_s=0.5)),
        ("resource", lambda: session.try_lock("c10-" + "x" * 596)),
        ("wait_timeout_ms", lambda: session.lock("c10-wait", wait_timeout_s=2 * 3600.0)),
    ]
    for field, call in cases:
        with pytest.raises(InvalidArgumentError) as refused:
            await call()
        error = refused.value
        assert error.status is not None, "a server refusal, not a client-side check"
        # The field and the reason come from the structured details.
        assert [v.field for v in error.status.violations] == [field]
        assert error.field == field
        assert error.reason == "INVALID_ARGUMENT"  # set only for domain warden.v1
    with pytest.raises(InvalidArgumentError) as short_session:
        await client.session(ttl_s=0.5)
    assert short_session.value.field == "ttl_ms"
    assert await client.list_locks("c10-") == ()
    info = await client.lease_time_to_live(session.lease_id)
    assert info.locks == () and info.waits == ()
    await session.close()


async def _abandon_and_check(cluster: Cluster, resource: str, abandon: str) -> None:
    async with cluster.client() as h_client, cluster.client() as w_client:
        h = await h_client.session(ttl_s=10.0)
        w = await w_client.session(ttl_s=10.0)
        held = await h.try_lock(resource)
        queued = asyncio.Event()
        if abandon == "cancel":
            waiting = asyncio.ensure_future(_lock(w, resource, queued))
            await asyncio.wait_for(queued.wait(), 10.0)
            waiting.cancel()
            with pytest.raises(asyncio.CancelledError):
                await waiting
        else:
            # The caller's own timeout, set to fire shortly after the wait is
            # reported queued.
            loop = asyncio.get_running_loop()
            with pytest.raises(TimeoutError):
                async with asyncio.timeout(None) as deadline:

                    def on_queued(_q: object) -> None:
                        queued.set()
                        deadline.reschedule(loop.time() + 0.2)

                    await w.lock(resource, wait_timeout_s=30.0, on_queued=on_queued)
            assert queued.is_set()

        async def no_waiter() -> bool:
            return (await h_client.status(resource)).waiters == 0

        await wait_for("the abandoned waiter is gone", no_waiter, deadline_s=5.0)
        await held.release()
        status = await h_client.status(resource)
        assert status.holder is None, f"nobody is granted the resource: {status.holder}"
        info = await w_client.lease_time_to_live(w.lease_id)
        assert info.locks == () and info.waits == ()
        await h.close()
        await w.close()


async def _lock(session: aio.Session, resource: str, queued: asyncio.Event) -> aio.Lock:
    return await session.lock(resource, wait_timeout_s=30.0, on_queued=lambda _q: queued.set())


@pytest.mark.conformance("C11-abandoned-wait-leaves-no-waiter")
async def test_c11_cancelled_task_leaves_no_waiter(cluster: Cluster) -> None:
    """conformance: C11-abandoned-wait-leaves-no-waiter (S8): a waiting lock
    whose task is cancelled sends CancelWait; no waiter stays queued and
    nobody is granted the resource for it."""
    await _abandon_and_check(cluster, "c11-r", "cancel")


@pytest.mark.conformance("C11-abandoned-wait-leaves-no-waiter")
async def test_c11_caller_timeout_leaves_no_waiter(cluster: Cluster) -> None:
    """conformance: C11-abandoned-wait-leaves-no-waiter (S8), abandoned by the
    caller's own timeout (asyncio.timeout) rather than the server's wait."""
    await _abandon_and_check(cluster, "c11-t", "timeout")
