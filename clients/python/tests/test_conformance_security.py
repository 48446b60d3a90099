"""Conformance scenarios C12-C13 (clients/conformance/scenarios.md): lease
owners (principals from client certificates, roles granted by root through
the CLI), and gRPC's standard health and reflection services over TLS
without a client certificate."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from grpc import aio as grpc_aio
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2

from harness import Cluster, wait_for
from warden_client import TlsOptions, WardenError

REFLECTION_METHOD = "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo"


@pytest.mark.conformance("C12-other-principal-lease-refused")
async def test_c12_other_principal_lease_refused(cluster: Cluster) -> None:
    """conformance: C12-other-principal-lease-refused (leases have owners and
    a lease id is no liveness oracle, docs/security.md; etcd PR 8031): bob,
    with alice's exact lease id and token, gets for release, renew (unary and
    keep-alive stream), revoke and an acquire on alice's lease exactly the
    answer the same call gets on a lease that does not exist (release and
    acquire: NotFoundError), and alice still holds with the same token."""
    cluster.cli("role", "grant", "c12-locker", "--prefix", "c12-", "--permission", "lock")
    for principal in ("alice", "bob"):
        cluster.cli("user", "grant-role", principal, "c12-locker")
    async with cluster.client(user="alice") as alice, cluster.client(user="bob") as bob:
        session = await alice.session(ttl_s=10.0)
        lock = await session.try_lock("c12-r")
        lease, token = session.lease_id, lock.fencing_token
        absent = lease + 1_000_000
        attempts: list[tuple[str, Any]] = [
            ("release", lambda i: bob.release(i, "c12-r", token)),
            ("renew", lambda i: bob.renew(i)),
            ("keep-alive", lambda i: bob.keep_alive_once(i)),
            ("revoke", lambda i: bob.revoke(i)),
            ("acquire", lambda i: bob.acquire("c12-r2", lease_id=i)),
        ]

        async def answer(call: Any, lease_id: int) -> str:
            """The answer as text, the id asked about written as ID."""
            try:
                result = await call(lease_id)
            except WardenError as e:
                return f"{type(e).__name__} {e.reason} {e.message}".replace(str(lease_id), "ID")
            return f"ok {result!r}".replace(str(lease_id), "ID")

        for what, call in attempts:
            owned, none = await answer(call, lease), await answer(call, absent)
            assert owned == none, f"{what}: alice's lease answers {owned!r}, none {none!r}"
            if what in ("release", "acquire"):
                assert owned.startswith("NotFoundError") or owned.startswith("LeaseNotFoundError"), owned
        status = await alice.status("c12-r")
        assert status.holder is not None
        assert (status.holder.lease_id, status.holder.fencing_token) == (lease, token)
        lock.check()
        await session.close()


def _probe_channel(cluster: Cluster, address: str) -> grpc_aio.Channel:
    """A TLS channel that trusts the cluster's CA and presents no client
    certificate (what a health probe or grpcurl without a certificate does)."""
    no_client_cert = TlsOptions(ca_file=cluster.client_certs / "ca.crt")
    return grpc_aio.secure_channel(address, no_client_cert.channel_credentials())


async def _health(cluster: Cluster, address: str) -> int:
    async with _probe_channel(cluster, address) as channel:
        stub: Any = health_pb2_grpc.HealthStub(channel)
        reply = await stub.Check(health_pb2.HealthCheckRequest(service=""), timeout=2.0)
        return int(reply.status)


async def _reflected_services(cluster: Cluster, address: str) -> set[str]:
    """The services a node lists through grpc.reflection.v1. grpcio-reflection
    ships the v1alpha messages only; v1 is the same protocol under a new
    package, so they are the same on the wire."""
    async with _probe_channel(cluster, address) as channel:
        info = channel.stream_stream(
            REFLECTION_METHOD,
            request_serializer=reflection_pb2.ServerReflectionRequest.SerializeToString,
            response_deserializer=reflection_pb2.ServerReflectionResponse.FromString,
        )
        call = info()
        await call.write(reflection_pb2.ServerReflectionRequest(list_services=""))
        await call.done_writing()
        reply: Any = await asyncio.wait_for(call.read(), 5.0)
        return {s.name for s in reply.list_services_response.service}


@pytest.mark.conformance("C13-grpc-health-and-reflection")
async def test_c13_grpc_health_and_reflection(cluster: Cluster) -> None:
    """conformance: C13-grpc-health-and-reflection (gRPC's standard services,
    docs/operations.md): every node answers grpc.health.v1.Health/Check
    SERVING once /readyz says ready (over TLS without a client certificate),
    and server reflection lists Warden's public services (also without a
    client certificate)."""
    last: list[object] = []  # the last health answer (a status or a code)
    for node_id, node in cluster.nodes.items():

        async def ready(node_id: int = node_id) -> bool:
            return await asyncio.to_thread(cluster.readyz, node_id) == 200

        await wait_for(f"node {node_id}'s /readyz says ready", ready, deadline_s=10.0)

        # /readyz said ready: the health check says SERVING (polled within a
        # deadline while the new channel connects).
        last.clear()

        async def serving(address: str = node.addr) -> bool:
            try:
                answer = await _health(cluster, address)
            except grpc_aio.AioRpcError as e:
                last[:] = [e.code()]
                return False
            last[:] = [answer]
            return answer == health_pb2.HealthCheckResponse.SERVING

        try:
            await wait_for(f"node {node_id} answers SERVING", serving, deadline_s=10.0)
        except AssertionError as e:
            raise AssertionError(f"{e}; last answer {last}") from None

        services = await _reflected_services(cluster, node.addr)
        assert {"warden.v1.Lock", "warden.v1.Lease", "warden.v1.Watch", "warden.v1.Admin"} <= services, (
            node_id,
            services,
        )
