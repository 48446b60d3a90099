"""Conformance scenarios C08-C09 (clients/conformance/scenarios.md): election
failover, and a watch that sees every grant in order."""

from __future__ import annotations

import asyncio
import itertools

import pytest

from harness import SNAPSHOT_THRESHOLD, Cluster, wait_for
from warden_client import CompactedError, LeaderInfo, WatchEvent


@pytest.mark.conformance("C08-election-failover-larger-token")
async def test_c08_election_failover_larger_token(cluster: Cluster) -> None:
    """conformance: C08-election-failover-larger-token (S2, L1): when the
    leader's session ends, the waiting campaigner is elected with a larger
    token; an observer sees both terms in order, each with its token."""
    async with cluster.client() as a_client, cluster.client() as b_client, cluster.client() as o_client:
        a = await a_client.session(ttl_s=3.0)
        b = await b_client.session(ttl_s=3.0)
        a_term = await a.election("c08-e").campaign("a")
        assert a_term.fencing_token >= 1
        assert await a.election("c08-e").leader() == LeaderInfo(a.lease_id, a_term.fencing_token, "a")

        b_campaign = asyncio.ensure_future(b.election("c08-e").campaign("b"))
        key = await b_client.election_key("c08-e")

        async def b_is_queued() -> bool:
            return (await o_client.status(key)).waiters == 1

        await wait_for("b waits in the election's queue", b_is_queued, deadline_s=5.0)
        observer = await o_client.observe("c08-e")
        seen = [await asyncio.wait_for(observer.next(), 5.0)]
        assert seen == [LeaderInfo(a.lease_id, a_term.fencing_token, "a")]

        await a.close()  # A's session ends: its term ends with it
        b_term = await asyncio.wait_for(b_campaign, 10.0)
        assert b_term.fencing_token > a_term.fencing_token
        seen.append(await asyncio.wait_for(observer.next(), 5.0))
        assert seen[1] == LeaderInfo(b.lease_id, b_term.fencing_token, "b")
        assert [s.value for s in seen] == ["a", "b"]
        assert await o_client.leader("c08-e") == LeaderInfo(b.lease_id, b_term.fencing_token, "b")

        # The new leader proclaims a new value; the observer follows it.
        await b_term.proclaim("b2")
        assert (await asyncio.wait_for(observer.next(), 5.0)).value == "b2"
        observer.close()
        await b_term.resign()
        assert await o_client.leader("c08-e") is None
        await b.close()


@pytest.mark.conformance("C09-watch-every-grant-in-order")
async def test_c09_watch_every_grant_in_order(cluster: Cluster) -> None:
    """conformance: C09-watch-every-grant-in-order (watch, docs/operations.md):
    a prefix watch from now sees four grants in commit order with growing
    tokens, each followed by its release; a start below a node's retained
    window is a typed "compacted" error naming the oldest retained index."""
    async with cluster.client() as client:
        watcher = await client.watch(prefix="c09-")
        session = await client.session(ttl_s=5.0)
        for resource in ("c09-a", "c09-a", "c09-a", "c09-b"):
            lock = await session.try_lock(resource)
            await lock.release()
        events: list[WatchEvent] = []
        while len([e for e in events if e.event in ("granted", "released")]) < 8:
            events.append(await asyncio.wait_for(watcher.next(), 5.0))
        watcher.close()
        kept = [e for e in events if e.event in ("granted", "released")]
        assert [(e.resource, e.event) for e in kept] == [
            ("c09-a", "granted"), ("c09-a", "released"),
            ("c09-a", "granted"), ("c09-a", "released"),
            ("c09-a", "granted"), ("c09-a", "released"),
            ("c09-b", "granted"), ("c09-b", "released"),
        ]  # fmt: skip
        indexes = [e.index for e in kept]
        assert indexes == sorted(indexes) and len(set(indexes)) == len(indexes), indexes
        grants, releases = kept[0::2], kept[1::2]
        tokens = [g.fencing_token for g in grants]
        assert all(x < y for x, y in itertools.pairwise(tokens)), tokens
        for g, r in zip(grants, releases, strict=True):
            assert (r.lease_id, r.fencing_token) == (g.lease_id, g.fencing_token) == (session.lease_id, g.fencing_token)

        # Compaction: enough entries that every node has taken a snapshot,
        # then a restarted follower starts its window after that snapshot:
        # index 1 is below it.
        for _ in range(SNAPSHOT_THRESHOLD // 2 + 2):
            await (await session.try_lock("c09-filler")).release()
        await session.close()
        leader = await cluster.leader_id(client)
        follower = next(i for i in cluster.nodes if i != leader)
        cluster.terminate(follower)
        await cluster.restore(follower)
        async with cluster.client([cluster.nodes[follower].addr], deadline_s=15.0) as direct:
            with pytest.raises(CompactedError) as compacted:
                await direct.watch(prefix="c09-", start_index=1)
        assert compacted.value.oldest_index > 1
        assert compacted.value.reason == "COMPACTED"
        # A watch from the oldest retained index is served.
        async with cluster.client([cluster.nodes[follower].addr], deadline_s=15.0) as direct:
            resumed = await direct.watch(prefix="c09-", start_index=compacted.value.oldest_index)
            assert resumed.resume_index == compacted.value.oldest_index
            resumed.close()
        await cluster.wait_leader(deadline_s=10.0)
