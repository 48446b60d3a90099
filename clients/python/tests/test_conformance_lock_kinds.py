"""Conformance scenarios C14-C17 (clients/conformance/scenarios.md): the lock
kinds (semaphores, read-write locks), multi-locks and max-hold of
docs/semantics.md, against the real three-node cluster."""

from __future__ import annotations

import asyncio
import itertools

import pytest

from harness import Cluster, boot_now, until_lock_kinds_are_served
from warden_client import (
    FailedPreconditionError,
    HeldError,
    InvalidArgumentError,
    LockMode,
    LostKind,
    NotGrantedReason,
    Queued,
    SessionLostError,
    aio,
)
from warden_client.clock import DRIFT_RHO_PPM

RHO = DRIFT_RHO_PPM / 1_000_000


def _named_field(error: FailedPreconditionError) -> str:
    """The field a failed-precondition refusal names: the server starts its
    message with it (``limit: ...``), as it names the field of a bad
    argument; BadRequest details carry it when present."""
    assert error.field is not None, error.message
    return error.field


@pytest.mark.conformance("C14-semaphore-permits-in-slots")
async def test_c14_semaphore_permits_in_slots(cluster: Cluster) -> None:
    """conformance: C14-semaphore-permits-in-slots ("Lock kinds"): at most N
    holders of a semaphore of N, each with a slot and a fresh fencing token;
    a freed permit goes to the oldest waiter, in the freed slot; another
    limit or kind is refused naming the field."""
    async with cluster.client() as client:
        await until_lock_kinds_are_served(client)
        sessions = [await client.session(ttl_s=10.0) for _ in range(4)]
        s1, s2, s3, s4 = sessions
        try:
            permits = [await s.semaphore("c14-r", 3).try_acquire() for s in (s1, s2, s3)]
            assert [p.slot for p in permits] == [0, 1, 2]
            tokens = [p.fencing_token for p in permits]
            assert all(a < b for a, b in itertools.pairwise(tokens)), tokens
            assert [p.lease_id for p in permits] == [s1.lease_id, s2.lease_id, s3.lease_id]

            queued = asyncio.Event()

            def on_queued(q: Queued) -> None:
                assert q.lease_id == s4.lease_id
                queued.set()

            waiting = asyncio.ensure_future(s4.semaphore("c14-r", 3).acquire(wait_timeout_s=30.0, on_queued=on_queued))
            await asyncio.wait_for(queued.wait(), 10.0)
            status = await client.status("c14-r")
            assert (status.kind, status.limit, status.waiters) == ("semaphore", 3, 1)
            assert status.holder is None
            assert sorted((h.lease_id, h.slot, h.fencing_token) for h in status.holders) == sorted(
                (p.lease_id, p.slot, p.fencing_token) for p in permits
            )
            assert not waiting.done()

            await permits[1].release()
            fourth = await asyncio.wait_for(waiting, 10.0)
            assert fourth.slot == 1, "the freed slot goes to the oldest waiter"
            assert fourth.lease_id == s4.lease_id
            assert fourth.fencing_token > tokens[2]
            fourth.check()

            with pytest.raises(FailedPreconditionError) as other_limit:
                await s2.semaphore("c14-r", 4).try_acquire()
            assert _named_field(other_limit.value) in ("kind", "limit"), other_limit.value.status
            assert "3" in other_limit.value.message, "the refusal names the current limit"
            with pytest.raises(FailedPreconditionError) as as_mutex:
                await s2.try_lock("c14-r")
            assert _named_field(as_mutex.value) in ("kind", "limit"), as_mutex.value.message
            assert "semaphore" in as_mutex.value.message, "the refusal names the current kind"
            status = await client.status("c14-r")
            assert sorted(h.slot or 0 for h in status.holders) == [0, 1, 2], "the refusals changed nothing"
            assert all(h.slot is not None for h in status.holders)
        finally:
            for s in sessions:
                await s.close()


@pytest.mark.conformance("C15-readers-share-writer-waits")
async def test_c15_readers_share_writer_waits(cluster: Cluster) -> None:
    """conformance: C15-readers-share-writer-waits ("Lock kinds"): readers
    hold together, a writer alone, in FIFO order: a reader queued behind a
    waiting writer does not overtake it."""
    async with cluster.client() as client:
        await until_lock_kinds_are_served(client)
        sessions = [await client.session(ttl_s=10.0) for _ in range(4)]
        r1, r2, r3, w = sessions
        try:
            read1 = await r1.read_lock("c15-r", wait_timeout_s=5.0)
            read2 = await r2.read_lock("c15-r", wait_timeout_s=5.0)
            assert read1.mode is LockMode.SHARED and read2.mode is LockMode.SHARED
            assert read2.fencing_token > read1.fencing_token
            status = await client.status("c15-r")
            assert status.kind == "read_write"
            assert status.holder is None
            assert sorted(h.lease_id for h in status.holders) == sorted([r1.lease_id, r2.lease_id])
            assert all(h.mode is LockMode.SHARED for h in status.holders)

            w_queued = asyncio.Event()
            writer = asyncio.ensure_future(
                w.write_lock("c15-r", wait_timeout_s=30.0, on_queued=lambda _q: w_queued.set())
            )
            await asyncio.wait_for(w_queued.wait(), 10.0)
            r3_queued = asyncio.Event()
            reader3 = asyncio.ensure_future(
                r3.read_lock("c15-r", wait_timeout_s=30.0, on_queued=lambda _q: r3_queued.set())
            )
            await asyncio.wait_for(r3_queued.wait(), 10.0)
            status = await client.status("c15-r")
            assert status.waiters == 2 and len(status.holders) == 2
            assert not reader3.done(), "a reader never overtakes a queued writer"

            await read1.release()
            await read2.release()
            write = await asyncio.wait_for(writer, 10.0)
            assert write.mode is LockMode.EXCLUSIVE and write.lease_id == w.lease_id
            assert write.fencing_token > read2.fencing_token
            status = await client.status("c15-r")
            assert status.holder is not None and status.holder.lease_id == w.lease_id
            assert [h.lease_id for h in status.holders] == [w.lease_id], "the writer holds alone"
            assert status.waiters == 1
            assert not reader3.done(), "no reader beside a writer"

            await write.release()
            read3 = await asyncio.wait_for(reader3, 10.0)
            assert read3.lease_id == r3.lease_id
            assert read3.fencing_token > write.fencing_token
            await read3.release()
        finally:
            for s in sessions:
                await s.close()


@pytest.mark.conformance("C16-multi-lock-all-or-none")
async def test_c16_multi_lock_all_or_none(cluster: Cluster) -> None:
    """conformance: C16-multi-lock-all-or-none ("Multi-locks"): all
    resources granted in one entry with a token each, or none; a release
    naming one frees all; takers in opposite orders never deadlock."""
    async with cluster.client() as a_client, cluster.client() as b_client:
        await until_lock_kinds_are_served(a_client)
        async with await a_client.session(ttl_s=10.0) as a, await b_client.session(ttl_s=10.0) as b:
            names = ["c16-a", "c16-b", "c16-c"]
            multi = await a.lock_all(names, wait_timeout_s=0.0)
            assert [g.resource for g in multi.grants] == names, "one token per resource, in the order asked"
            tokens = [g.fencing_token for g in multi.grants]
            assert len(set(tokens)) == 3 and all(t >= 1 for t in tokens)
            assert (multi.resource, multi.fencing_token) == ("c16-a", tokens[0])
            assert multi.token("c16-b") == tokens[1] and multi.token("c16-z") is None
            for name, token in zip(names, tokens, strict=True):
                status = await a_client.status(name)
                assert status.holder is not None
                assert (status.holder.lease_id, status.holder.fencing_token) == (a.lease_id, token)

            with pytest.raises(HeldError) as refused:
                await b.try_lock("c16-b")
            assert refused.value.not_granted_reason is NotGrantedReason.HELD
            assert refused.value.holder_lease_id == a.lease_id

            released = await multi.release()  # names c16-a with its token
            assert released.released and released.resource == "c16-a"
            for name in names:
                status = await a_client.status(name)
                assert status.holder is None and status.holders == () and status.kind == ""

            held_both: list[tuple[str, int, int]] = []

            async def loop(session: aio.Session, order: list[str]) -> None:
                for _ in range(5):
                    lock = await session.lock_all(order, wait_timeout_s=10.0)
                    assert [g.resource for g in lock.grants] == order
                    status_x = await a_client.status("c16-x")
                    status_y = await a_client.status("c16-y")
                    assert status_x.holder is not None and status_y.holder is not None
                    assert status_x.holder.lease_id == status_y.holder.lease_id == session.lease_id
                    held_both.append((order[0], lock.grants[0].fencing_token, lock.grants[1].fencing_token))
                    await lock.release()

            await asyncio.wait_for(asyncio.gather(loop(a, ["c16-x", "c16-y"]), loop(b, ["c16-y", "c16-x"])), 30.0)
            assert len(held_both) == 10, "both loops finished (no deadlock)"


@pytest.mark.conformance("C17-max-hold-ends-a-renewed-grant")
async def test_c17_max_hold_ends_a_renewed_grant(cluster: Cluster) -> None:
    """conformance: C17-max-hold-ends-a-renewed-grant ("Max-hold"): a grant
    ends no later than its max-hold after it was made however often its
    lease is renewed; the client's per-grant validity counts from the
    acquire's send and ends at send + 2 s x (1 - 2 rho) - 50 ms."""
    e_s = 2.5  # E with the default timing (scenarios.md)
    max_hold_s = 2.0
    async with cluster.client() as h_client, cluster.client() as w_client:
        await until_lock_kinds_are_served(h_client)
        async with await h_client.session(ttl_s=5.0) as h, await w_client.session(ttl_s=5.0) as w:
            sent_at = boot_now()
            held = await h.try_lock("c17-r", max_hold_s=max_hold_s)
            after = boot_now()
            validity = max_hold_s * (1 - 2 * RHO) - 0.05
            assert held.max_hold_until is not None
            assert sent_at + validity <= held.max_hold_until <= after + validity
            assert held.valid_until <= h.valid_until
            held.check()

            queued = asyncio.Event()
            waiter = asyncio.ensure_future(w.lock("c17-r", wait_timeout_s=30.0, on_queued=lambda _q: queued.set()))
            await asyncio.wait_for(queued.wait(), 5.0)
            handed = await asyncio.wait_for(waiter, max_hold_s + e_s + 5.0)
            granted_after = boot_now() - sent_at
            assert max_hold_s * (1 - 2 * RHO) <= granted_after <= max_hold_s + e_s, granted_after
            assert handed.fencing_token > held.fencing_token
            assert handed.lease_id == w.lease_id

            # H's session renewed all along and is still valid; its grant is not.
            h.check()
            assert h.valid_until > sent_at + max_hold_s
            with pytest.raises(SessionLostError) as ended:
                held.check()
            assert ended.value.lost.kind is LostKind.MAX_HOLD
            assert ended.value.lost.valid_until == held.max_hold_until
            assert h.lost is None
            info = await h_client.lease_time_to_live(h.lease_id)
            assert "c17-r" not in info.locks
            await handed.release()

            with pytest.raises(InvalidArgumentError) as too_short:
                await h.try_lock("c17-short", max_hold_s=0.5)
            assert too_short.value.field == "max_hold_ms"
            with pytest.raises(InvalidArgumentError) as wait_too_long:
                await h.lock("c17-short", wait_timeout_s=max_hold_s, max_hold_s=max_hold_s)
            assert wait_too_long.value.field in ("max_hold_ms", "wait_timeout_ms")
            status = await h_client.status("c17-short")
            assert status.holder is None and status.waiters == 0, "a refusal changes nothing"
