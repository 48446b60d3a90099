"""Conformance scenarios C12-C13 (clients/conformance/scenarios.md): lease
owners, and gRPC's standard health and reflection services.

Both need server features a binary may not have yet: they detect them (no
``--certs-dir`` in ``warden server --help``, no ``warden role`` command, an
UNIMPLEMENTED service) and skip with a reason naming what is missing."""

from __future__ import annotations

import asyncio
from typing import Any

import grpc
import pytest
from grpc import aio as grpc_aio
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2

from harness import Cluster, bin_help, server_has_tls, wait_for
from warden_client import PermissionDeniedError, TlsOptions

REFLECTION_METHODS = (
    "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo",
    "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo",
)


def _require_tls() -> None:
    if not server_has_tls():
        pytest.skip("the server serves no TLS yet: `warden server --help` has no --certs-dir")


@pytest.mark.conformance("C12-other-principal-lease-refused")
async def test_c12_other_principal_lease_refused(cluster: Cluster) -> None:
    """conformance: C12-other-principal-lease-refused (leases have owners,
    docs/security.md; etcd PR 8031): bob, with alice's exact lease id and
    token, cannot release, renew (unary and keep-alive stream), revoke or
    acquire on alice's lease: each is a typed PermissionDeniedError naming
    the lease, and alice still holds with the same token."""
    _require_tls()
    if "grant" not in bin_help("role"):
        pytest.skip("the server has no roles yet: `warden role --help` has no `grant`")
    cluster.cli("role", "grant", "c12-locker", "--prefix", "c12-", "--permission", "lock")
    for principal in ("alice", "bob"):
        cluster.cli("user", "grant-role", principal, "c12-locker")
    async with cluster.client(user="alice") as alice, cluster.client(user="bob") as bob:
        session = await alice.session(ttl_s=10.0)
        lock = await session.try_lock("c12-r")
        lease, token = session.lease_id, lock.fencing_token
        attempts: list[tuple[str, Any]] = [
            ("release", lambda: bob.release(lease, "c12-r", token)),
            ("renew", lambda: bob.renew(lease)),
            ("keep-alive", lambda: bob.keep_alive_once(lease)),
            ("revoke", lambda: bob.revoke(lease)),
            ("acquire", lambda: bob.acquire("c12-r2", lease_id=lease)),
        ]
        for what, call in attempts:
            with pytest.raises(PermissionDeniedError) as refused:
                await call()
            error = refused.value
            assert error.reason == "PERMISSION_DENIED", (what, error.reason)
            named = error.status is not None and (
                error.status.info_metadata.get("lease_id") == str(lease) or str(lease) in error.message
            )
            assert named, f"{what}: the refusal names lease {lease}: {error.message}"
        status = await alice.status("c12-r")
        assert status.holder is not None
        assert (status.holder.lease_id, status.holder.fencing_token) == (lease, token)
        lock.check()
        await session.close()


async def _health(address: str, tls: TlsOptions | None) -> int:
    creds = tls.channel_credentials() if tls else None
    channel = grpc_aio.secure_channel(address, creds) if creds else grpc_aio.insecure_channel(address)
    async with channel:
        stub: Any = health_pb2_grpc.HealthStub(channel)
        reply = await stub.Check(health_pb2.HealthCheckRequest(service=""), timeout=2.0)
        return int(reply.status)


async def _reflected_services(address: str, tls: TlsOptions | None) -> set[str]:
    """The services a node lists through server reflection (v1, else v1alpha;
    their messages are the same on the wire)."""
    creds = tls.channel_credentials() if tls else None
    channel = grpc_aio.secure_channel(address, creds) if creds else grpc_aio.insecure_channel(address)
    async with channel:
        last: grpc_aio.AioRpcError | None = None
        for method in REFLECTION_METHODS:
            info = channel.stream_stream(
                method,
                request_serializer=reflection_pb2.ServerReflectionRequest.SerializeToString,
                response_deserializer=reflection_pb2.ServerReflectionResponse.FromString,
            )
            call = info()
            try:
                await call.write(reflection_pb2.ServerReflectionRequest(list_services=""))
                await call.done_writing()
                reply: Any = await asyncio.wait_for(call.read(), 5.0)
                return {s.name for s in reply.list_services_response.service}
            except grpc_aio.AioRpcError as e:
                if e.code() is not grpc.StatusCode.UNIMPLEMENTED:
                    raise
                last = e
        assert last is not None
        raise last


@pytest.mark.conformance("C13-grpc-health-and-reflection")
async def test_c13_grpc_health_and_reflection(cluster: Cluster) -> None:
    """conformance: C13-grpc-health-and-reflection (gRPC's standard services,
    docs/operations.md): every node answers grpc.health.v1.Health/Check
    SERVING once /readyz says ready (over TLS without a client certificate
    when the server has TLS), and server reflection lists Warden's public
    services."""
    health_tls = None
    if cluster.secure and cluster.client_certs is not None:
        health_tls = TlsOptions(ca_file=cluster.client_certs / "ca.crt")  # no client certificate
    first = cluster.nodes[1].addr
    try:
        await _health(first, health_tls)
    except grpc_aio.AioRpcError as e:
        if e.code() is grpc.StatusCode.UNIMPLEMENTED:
            pytest.skip("the server does not serve grpc.health.v1.Health (UNIMPLEMENTED)")
        if e.code() is not grpc.StatusCode.UNAVAILABLE:
            raise
    for node_id, node in cluster.nodes.items():

        async def ready(node_id: int = node_id) -> bool:
            return await asyncio.to_thread(cluster.readyz, node_id) == 200

        await wait_for(f"node {node_id}'s /readyz says ready", ready, deadline_s=10.0)

        async def serving(address: str = node.addr) -> bool:
            try:
                return await _health(address, health_tls) == health_pb2.HealthCheckResponse.SERVING
            except grpc_aio.AioRpcError:
                return False

        await wait_for(f"node {node_id} answers SERVING", serving, deadline_s=10.0)

    try:
        services = await _reflected_services(first, cluster.tls("root"))
    except grpc_aio.AioRpcError as e:
        if e.code() is grpc.StatusCode.UNIMPLEMENTED:
            pytest.skip("the server does not serve gRPC server reflection (UNIMPLEMENTED for v1 and v1alpha)")
        raise
    assert {"warden.v1.Lock", "warden.v1.Lease", "warden.v1.Watch", "warden.v1.Admin"} <= services, services
