"""The client side of lock kinds, multi-locks and max-hold (docs/semantics.md
"Lock kinds", "Multi-locks", "Max-hold"), against the real cluster: a lock's
max-hold bound on a clock the test steps, and the synchronous API."""

from __future__ import annotations

import asyncio
import time

import pytest

from harness import Cluster, boot_now, until_lock_kinds_are_served
from warden_client import (
    BOOT_CLOCK,
    Client,
    FailedPreconditionError,
    HeldError,
    InvalidArgumentError,
    LockMode,
    LostKind,
    SessionLostError,
    WardenError,
    aio,
    validity_s,
)


class SteppedClock:
    """The boot clock plus an offset the test moves forward."""

    name = "stepped boot clock"

    def __init__(self) -> None:
        self.offset_s = 0.0

    def now(self) -> float:
        return BOOT_CLOCK.now() + self.offset_s


async def test_a_lock_past_its_max_hold_fails_check_while_its_session_stays_valid(cluster: Cluster) -> None:
    """ "Max-hold": the lock's valid_until is the earlier of the session's and
    the acquire's send + validity(max-hold); once the session clock passes
    that bound check() raises SessionLostError (kind MAX_HOLD), the session
    itself still passes check() and is not marked lost."""
    clock = SteppedClock()
    async with cluster.client() as client:
        await until_lock_kinds_are_served(client)
        session = await client.session(ttl_s=10.0, clock=clock)
        sent_at = clock.now()
        lock = await session.try_lock("py-max-hold-r", max_hold_s=2.0)
        after = clock.now()
        assert lock.max_hold_until is not None
        assert sent_at + validity_s(2000) <= lock.max_hold_until <= after + validity_s(2000)
        assert lock.valid_until == min(session.valid_until, lock.max_hold_until) == lock.max_hold_until
        lock.check()

        clock.offset_s = lock.max_hold_until - BOOT_CLOCK.now() + 0.001  # just past the bound
        session.check()
        with pytest.raises(SessionLostError) as ended:
            lock.check()
        assert (ended.value.lost.kind, ended.value.lost.valid_until) == (LostKind.MAX_HOLD, lock.max_hold_until)
        assert session.lost is None
        await lock.release()

        plain = await session.try_lock("py-max-hold-plain")
        assert plain.max_hold_until is None and plain.valid_until == session.valid_until
        await plain.release()
        await session.close()


def _until_kinds_are_served(client: Client, deadline_s: float = 30.0) -> None:
    """Waits (with a deadline) until a freshly started cluster grants the new
    kinds: they are refused until every member reports the log format."""
    deadline = time.monotonic() + deadline_s
    with client.session(ttl_s=5.0) as session:
        while True:
            try:
                session.semaphore("py-sync-format-probe", 1).try_acquire().release()
                session.lock_all(["py-sync-format-1", "py-sync-format-2"], wait_timeout_s=0.0).release()
                session.try_lock("py-sync-format-3", max_hold_s=60.0).release()
                return
            except WardenError:
                if time.monotonic() >= deadline:
                    raise
                time.sleep(0.05)  # a poll interval; the deadline decides


def test_the_sync_api_takes_permits_readers_writers_and_multi_locks(cluster: Cluster) -> None:
    """ "Lock kinds" and "Multi-locks" through the synchronous wrapper: permits
    in slots up to the limit, readers together and a writer refused beside
    them, a multi-lock with a token per resource freed by one release, and a
    max-hold bound on the lock."""
    with Client(cluster.endpoints, cluster.options("root")) as client:
        _until_kinds_are_served(client)
        with client.session(ttl_s=5.0) as a, client.session(ttl_s=5.0) as b, client.session(ttl_s=5.0) as c:
            first = a.semaphore("py-sync-sem", 2).try_acquire()
            second = b.semaphore("py-sync-sem", 2).acquire(wait_timeout_s=5.0)
            assert (first.slot, second.slot) == (0, 1)
            assert second.fencing_token > first.fencing_token
            with pytest.raises(HeldError):
                c.semaphore("py-sync-sem", 2).try_acquire()
            status = client.status("py-sync-sem")
            assert (status.kind, status.limit, len(status.holders), status.holder) == ("semaphore", 2, 2, None)
            first.release()
            second.release()

            with a.read_lock("py-sync-rw") as r1, b.read_lock("py-sync-rw") as r2:
                assert r1.mode is LockMode.SHARED and r2.mode is LockMode.SHARED and r1.slot is None
                with pytest.raises(HeldError):
                    c.write_lock("py-sync-rw", wait_timeout_s=0.0)
                with pytest.raises(FailedPreconditionError):
                    c.try_lock("py-sync-rw")  # a mutex on a read-write lock
            with c.write_lock("py-sync-rw", wait_timeout_s=5.0) as w:
                assert w.mode is LockMode.EXCLUSIVE
                holder = client.status("py-sync-rw").holder
                assert holder is not None and holder.lease_id == c.lease_id

            multi = a.lock_all(["py-sync-m1", "py-sync-m2"], wait_timeout_s=5.0)
            assert [g.resource for g in multi.grants] == ["py-sync-m1", "py-sync-m2"]
            assert multi.token("py-sync-m2") == multi.grants[1].fencing_token != multi.fencing_token
            multi.check()
            assert multi.release().released
            assert client.status("py-sync-m2").holder is None

            sent_at = boot_now()
            bounded = b.lock("py-sync-hold", max_hold_s=30.0)
            assert bounded.max_hold_until is not None
            assert sent_at + validity_s(30_000) <= bounded.max_hold_until <= boot_now() + validity_s(30_000)
            bounded.check()
            bounded.release()


async def test_cancelling_a_waiting_multi_lock_leaves_no_waiter(cluster: Cluster) -> None:
    """S8 and "Multi-locks": abandoning a waiting multi-lock sends CancelWait
    naming its first resource, which takes back the whole waiter: once the
    cancellation reaches the caller nothing waits on, or holds, any of them."""
    async with cluster.client() as client:
        await until_lock_kinds_are_served(client)
        async with await client.session(ttl_s=5.0) as holder, await client.session(ttl_s=5.0) as taker:
            held = await holder.try_lock("py-multi-cancel-y")
            queued = asyncio.Event()
            waiting = asyncio.ensure_future(
                taker.lock_all(
                    ["py-multi-cancel-x", "py-multi-cancel-y"], wait_timeout_s=30.0, on_queued=lambda _q: queued.set()
                )
            )
            await asyncio.wait_for(queued.wait(), 10.0)
            waiting.cancel()
            with pytest.raises(asyncio.CancelledError):
                await waiting
            for name in ("py-multi-cancel-x", "py-multi-cancel-y"):
                status = await client.status(name)
                assert status.waiters == 0, name
            assert (await client.status("py-multi-cancel-x")).holder is None
            info = await client.lease_time_to_live(taker.lease_id)
            assert info.waits == () and info.locks == ()
            await held.release()


async def test_an_empty_multi_lock_is_refused_naming_the_field(client: aio.Client) -> None:
    """ "What bad input gets" and "Multi-locks": an empty resource list would
    be a plain mutex acquire on the wire, so the client refuses it, naming
    ``resources``, before sending anything."""
    async with await client.session(ttl_s=5.0) as session:
        with pytest.raises(InvalidArgumentError) as refused:
            session.lock_all([])
        assert refused.value.field == "resources"
        info = await client.lease_time_to_live(session.lease_id)
        assert info.waits == () and info.locks == ()
