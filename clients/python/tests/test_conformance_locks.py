"""Conformance scenarios C01-C04 (clients/conformance/scenarios.md): locks on
sessions, refusals as typed answers, the FIFO queue, wait timeouts."""

from __future__ import annotations

import asyncio
import itertools

import pytest

from harness import Cluster, boot_now
from warden_client import (
    HeldError,
    LeaseNotFoundError,
    NotGranted,
    NotGrantedReason,
    Queued,
    WaitTimeoutError,
    aio,
)


@pytest.mark.conformance("C01-acquire-renew-release")
async def test_c01_acquire_renew_release(client: aio.Client) -> None:
    """conformance: C01-acquire-renew-release (S3, S4, S5, S6): a lock on a
    session names its lease and token in Status, valid_until lies inside
    (send, send + TTL) and moves forward on a renew, a release frees the
    resource, closing the session revokes the lease."""
    session = await client.session(ttl_s=5.0)
    sent_at = boot_now()
    lock = await session.try_lock("c01-orders")
    assert lock.fencing_token >= 1
    assert lock.lease_id >= 1 and lock.lease_id == session.lease_id
    assert lock.resource == "c01-orders"

    status = await client.status("c01-orders")
    assert status.holder is not None
    assert (status.holder.lease_id, status.holder.fencing_token) == (lock.lease_id, lock.fencing_token)

    before = lock.valid_until
    # validity counts from the session's last acknowledged send, which is no
    # later than the acquire's send: valid_until < send + TTL.
    assert sent_at < before < sent_at + 5.0
    lock.check()

    renewed = await session.renew()
    assert renewed > before, "an acknowledged renew moves valid_until forward"
    assert lock.valid_until == renewed
    assert renewed < boot_now() + 5.0

    result = await lock.release()
    assert result.released and result.resource == "c01-orders"
    status = await client.status("c01-orders")
    assert status.holder is None

    await session.close()
    with pytest.raises(LeaseNotFoundError) as gone:
        await client.lease_time_to_live(session.lease_id)
    assert gone.value.reason == "LEASE_NOT_LIVE"


@pytest.mark.conformance("C02-held-not-granted")
async def test_c02_held_not_granted(cluster: Cluster) -> None:
    """conformance: C02-held-not-granted (S1): a try-lock on a held resource
    is a typed "not granted: held" answer carrying the holder's lease id; the
    holder keeps it."""
    async with cluster.client() as a_client, cluster.client() as b_client:
        async with await a_client.session(ttl_s=5.0) as a, await b_client.session(ttl_s=5.0) as b:
            held = await a.try_lock("c02-r")
            with pytest.raises(HeldError) as refused:
                await b.try_lock("c02-r")
            assert refused.value.not_granted_reason is NotGrantedReason.HELD
            assert refused.value.holder_lease_id == a.lease_id
            # The same answer from the plain call is a value, not an exception.
            answer = await b_client.acquire("c02-r", lease_id=b.lease_id)
            assert answer == NotGranted(resource="c02-r", holder_lease_id=a.lease_id, reason=NotGrantedReason.HELD)
            status = await a_client.status("c02-r")
            assert status.holder is not None
            assert (status.holder.lease_id, status.holder.fencing_token) == (a.lease_id, held.fencing_token)
            held.check()


@pytest.mark.conformance("C03-fifo-five-waiters")
async def test_c03_fifo_five_waiters(cluster: Cluster) -> None:
    """conformance: C03-fifo-five-waiters (S2, S8): five waiters queued one
    after another are granted in that order, with strictly growing tokens
    above the holder's."""
    async with cluster.client() as h_client:
        holder_session = await h_client.session(ttl_s=10.0)
        held = await holder_session.try_lock("c03-r")
        clients = [cluster.client() for _ in range(5)]
        sessions = [await c.session(ttl_s=10.0) for c in clients]
        granted: list[tuple[int, int]] = []  # (waiter number, token)

        async def wait_then_release(i: int, queued: asyncio.Event) -> None:
            def on_queued(q: Queued) -> None:
                assert q.lease_id == sessions[i].lease_id
                queued.set()

            lock = await sessions[i].lock("c03-r", wait_timeout_s=30.0, on_queued=on_queued)
            granted.append((i, lock.fencing_token))
            await lock.release()

        waiters = []
        for i in range(5):
            queued = asyncio.Event()
            waiters.append(asyncio.ensure_future(wait_then_release(i, queued)))
            await asyncio.wait_for(queued.wait(), 10.0)  # reported queued: position known
        status = await h_client.status("c03-r")
        assert status.waiters == 5

        await held.release()
        await asyncio.wait_for(asyncio.gather(*waiters), 30.0)
        assert [i for i, _ in granted] == [0, 1, 2, 3, 4], "grants in the order the waiters queued"
        tokens = [t for _, t in granted]
        assert all(a < b for a, b in itertools.pairwise(tokens)), tokens
        assert tokens[0] > held.fencing_token
        for s in sessions:
            await s.close()
        for c in clients:
            await c.close()
        await holder_session.close()


@pytest.mark.conformance("C04-wait-timeout-leaves-no-waiter")
async def test_c04_wait_timeout_leaves_no_waiter(cluster: Cluster) -> None:
    """conformance: C04-wait-timeout-leaves-no-waiter (S8): a wait that runs
    out is a typed "wait timeout" answer after at least the wait, and leaves
    no waiter; the holder still holds."""
    async with cluster.client() as h_client, cluster.client() as w_client:
        async with await h_client.session(ttl_s=5.0) as h, await w_client.session(ttl_s=5.0) as w:
            held = await h.try_lock("c04-r")
            loop = asyncio.get_running_loop()
            started = loop.time()
            with pytest.raises(WaitTimeoutError) as timed_out:
                await w.lock("c04-r", wait_timeout_s=1.0)
            assert loop.time() - started >= 1.0
            assert timed_out.value.not_granted_reason is NotGrantedReason.WAIT_TIMEOUT
            status = await h_client.status("c04-r")
            assert status.waiters == 0
            assert status.holder is not None and status.holder.lease_id == h.lease_id
            assert status.holder.fencing_token == held.fencing_token
            info = await w_client.lease_time_to_live(w.lease_id)
            assert info.waits == () and info.locks == ()
