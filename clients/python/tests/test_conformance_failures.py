"""Conformance scenarios C05-C07 (clients/conformance/scenarios.md): a killed
leader, a client cut off, a dropped reply."""

from __future__ import annotations

import asyncio

import pytest

from harness import Cluster, Proxy, boot_now, wait_for
from warden_client import Granted, Lost, LostKind, SessionLostError, aio


@pytest.mark.conformance("C05-leader-kill-keeps-lock-and-session")
async def test_c05_leader_kill_keeps_lock_and_session(cluster: Cluster) -> None:
    """conformance: C05-leader-kill-keeps-lock-and-session (S3, L3, L4): after
    SIGKILL of the leader the lock is still held by the session's lease with
    the same token, the session was never lost, and a new lock on it gets a
    larger token. The killed node (of the run's one cluster) is started again
    at the end, and ready, for the scenarios after this one."""
    async with cluster.client() as client:
        session = await client.session(ttl_s=10.0)
        lock = await session.try_lock("c05-r")
        failures: list[str] = []

        async def check_throughout() -> None:
            while True:
                try:
                    session.check()
                except SessionLostError as e:
                    failures.append(str(e))
                    return
                await asyncio.sleep(0.02)

        checker = asyncio.ensure_future(check_throughout())
        old_leader = await cluster.leader_id(client)
        cluster.kill(old_leader)
        try:
            await _failover_keeps_lock_and_session(cluster, client, session, lock, old_leader)
        finally:
            checker.cancel()
            await cluster.restore(old_leader)
        assert failures == [], f"the session was lost during the failover: {failures}"
        assert session.lost is None
        session.check()
        await session.close()


async def _failover_keeps_lock_and_session(
    cluster: Cluster, client: aio.Client, session: aio.Session, lock: aio.Lock, old_leader: int
) -> None:
    new_leader = await cluster.wait_leader(deadline_s=10.0, not_id=old_leader)
    assert new_leader != old_leader
    status = await client.status("c05-r")
    assert status.holder is not None
    assert (status.holder.lease_id, status.holder.fencing_token) == (session.lease_id, lock.fencing_token)
    other = await session.try_lock("c05-other")
    assert other.fencing_token > lock.fencing_token
    # A keep-alive on the new leader is acknowledged: the session lives on.
    await session.renew()


@pytest.mark.conformance("C06-cut-off-client-sees-lost-first")
async def test_c06_cut_off_client_sees_lost_first(cluster: Cluster) -> None:
    """conformance: C06-cut-off-client-sees-lost-first (S5, L1): a client cut
    off by the proxy signals lost (event and callback) and fails check() no
    later than its valid_until, and only after that moment is another client
    granted its lock, with a larger token."""
    async with cluster.client() as b_client:
        leader = await cluster.leader_id(b_client)
        proxy = await Proxy(cluster.nodes[leader].addr).start()
        try:
            # A reaches the cluster only through the proxy (in front of the
            # leader, so no redirect takes it around the proxy).
            async with cluster.client([proxy.addr]) as a_client:
                a = await a_client.session(ttl_s=3.0)
                a_lock = await a.try_lock("c06-r")
                lost_at: list[tuple[float, float, Lost]] = []  # (when, valid_until then, why)

                def on_lost(lost: Lost) -> None:
                    lost_at.append((boot_now(), a.valid_until, lost))

                a.on_lost(on_lost)
                proxy.cut()
                async with await b_client.session(ttl_s=10.0) as b:
                    b_lock = await b.lock("c06-r", wait_timeout_s=20.0)
                    b_granted_seen = boot_now()
                    await asyncio.wait_for(a.lost_event.wait(), 1.0)
                    assert lost_at, "the callback ran"
                    when, valid_until, why = lost_at[0]
                    assert why.kind is LostKind.EXPIRED
                    assert when <= valid_until, f"lost at {when}, after valid_until {valid_until}"
                    assert when < b_granted_seen, "B was granted only after A saw its loss"
                    assert b_lock.fencing_token > a_lock.fencing_token
                    with pytest.raises(SessionLostError):
                        a.check()
                    with pytest.raises(SessionLostError):
                        a_lock.check()
                await a.close()
        finally:
            await proxy.close()


@pytest.mark.conformance("C07-dropped-acquire-reply-one-grant")
async def test_c07_dropped_acquire_reply_one_grant(cluster: Cluster) -> None:
    """conformance: C07-dropped-acquire-reply-one-grant (S7): an acquire on a
    new lease whose first reply is swallowed is retried with the same request
    id into exactly one grant: the call returns the grant the first attempt
    made, and no second lease is left behind."""
    async with cluster.client() as observer:
        leader = await cluster.leader_id(observer)
        proxy = await Proxy(cluster.nodes[leader].addr).start()
        try:
            async with cluster.client([proxy.addr]) as client:
                await client.cluster_status()  # the connection is up
                proxy.swallow()
                acquire = asyncio.ensure_future(client.acquire("c07-r", ttl_s=5.0))

                async def first_attempt_applied() -> bool:
                    return (await observer.status("c07-r")).holder is not None

                # The first attempt reached the leader and took effect while
                # its reply was dropped; then the proxy forwards again.
                await wait_for("the first attempt's grant is visible", first_attempt_applied, deadline_s=4.0)
                assert not acquire.done()
                proxy.heal()
                result = await asyncio.wait_for(acquire, 10.0)
                assert proxy.swallowed_bytes > 0, "a reply was dropped"
                assert isinstance(result, Granted), result
                status = await observer.status("c07-r")
                assert status.holder is not None
                assert (status.holder.lease_id, status.holder.fencing_token) == (result.lease_id, result.fencing_token)
                listed = await observer.list_locks("c07-")
                assert [(lk.resource, lk.holder.lease_id if lk.holder else 0, lk.waiters) for lk in listed] == [
                    ("c07-r", result.lease_id, ())
                ]
                info = await observer.lease_time_to_live(result.lease_id)
                assert info.locks == ("c07-r",)
                await observer.revoke(result.lease_id)
        finally:
            await proxy.close()
