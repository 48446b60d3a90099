"""A scripted, in-process stand-in for a Warden node (grpc.aio server on
127.0.0.1:0), for the client behaviours a real cluster cannot be made to show
on demand: a redirect, a reply that says a lease is gone, a server without
CancelWait (an older one), a reply with the wrong sequence."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import grpc
from google.protobuf import any_pb2
from google.rpc import code_pb2, error_details_pb2, status_pb2
from grpc import aio

from warden_client._proto import lease_pb2, lease_pb2_grpc, warden_pb2, warden_pb2_grpc


def details_trailer(
    code: int, message: str, reason: str, field_name: str | None = None
) -> tuple[tuple[str, bytes], ...]:
    """The ``grpc-status-details-bin`` trailer Warden attaches: ErrorInfo
    (domain warden.v1) and, with a field, BadRequest."""
    status = status_pb2.Status(code=code, message=message)
    info = any_pb2.Any()
    info.Pack(error_details_pb2.ErrorInfo(reason=reason, domain="warden.v1"))
    status.details.append(info)
    if field_name is not None:
        bad = any_pb2.Any()
        bad.Pack(
            error_details_pb2.BadRequest(
                field_violations=[error_details_pb2.BadRequest.FieldViolation(field=field_name, description=message)]
            )
        )
        status.details.append(bad)
    return (("grpc-status-details-bin", status.SerializeToString()),)


@dataclass
class Script:
    """What the fake node does, and what it saw."""

    #: Answer every Lock call with "not the leader, it is at REDIRECT".
    redirect: str | None = None
    #: Answer Status with this (code, message, reason, field) instead.
    status_error: tuple[grpc.StatusCode, str, str | None, str | None] | None = None
    #: Keep-alive replies say the lease is (not) live.
    lease_live: bool = True
    #: Renew replies carry this sequence instead of the request's.
    renew_sequence: int | None = None
    #: Serve CancelWait (else UNIMPLEMENTED, like an older server).
    cancel_wait: bool = True
    #: What ClusterStatus publishes for clients: (max_requests_in_flight,
    #: election_prefix); 0 / "" as a server that publishes none.
    published: tuple[int, str] = (0, "")
    #: Seen: every method called, in order.
    calls: list[str] = field(default_factory=list)
    acquires: list[Any] = field(default_factory=list)
    cancels: list[Any] = field(default_factory=list)
    cancel_seen: asyncio.Event = field(default_factory=asyncio.Event)
    next_lease: int = 100


class _Lock(warden_pb2_grpc.LockServicer):
    def __init__(self, script: Script) -> None:
        self.s = script

    async def _redirect(self, context: Any) -> None:
        if self.s.redirect is not None:
            message = f"not the leader; the leader is at {self.s.redirect}"
            await context.abort(
                grpc.StatusCode.UNAVAILABLE,
                message,
                trailing_metadata=(
                    ("warden-leader", self.s.redirect),
                    *details_trailer(code_pb2.UNAVAILABLE, message, "NOT_LEADER"),
                ),
            )

    async def Status(self, request: Any, context: Any) -> Any:
        self.s.calls.append("Status")
        await self._redirect(context)
        if self.s.status_error is not None:
            code, message, reason, field_name = self.s.status_error
            trailer = details_trailer(code.value[0], message, reason, field_name) if reason else ()
            await context.abort(code, message, trailing_metadata=trailer)
        return warden_pb2.StatusResponse(resource=request.resource, read_index=7)

    async def ClusterStatus(self, request: Any, context: Any) -> Any:
        self.s.calls.append("ClusterStatus")
        await self._redirect(context)
        window, prefix = self.s.published
        return warden_pb2.ClusterStatusResponse(
            cluster_id="fake", leader_id=1, term=1, node_id=1, max_requests_in_flight=window, election_prefix=prefix
        )

    async def Renew(self, request: Any, context: Any) -> Any:
        self.s.calls.append("Renew")
        sequence = self.s.renew_sequence if self.s.renew_sequence is not None else request.sequence
        return warden_pb2.RenewResponse(lease_id=request.lease_id, ttl_ms=5000, sequence=sequence)

    async def LeaseRevoke(self, request: Any, context: Any) -> Any:
        self.s.calls.append("LeaseRevoke")
        return warden_pb2.LeaseRevokeResponse(lease_id=request.lease_id, revoked=True)

    async def Acquire(self, request: Any, context: Any) -> AsyncIterator[Any]:
        self.s.calls.append("Acquire")
        self.s.acquires.append(request)
        yield warden_pb2.AcquireResponse(queued=warden_pb2.Queued(position=1, lease_id=request.lease_id))
        await asyncio.Event().wait()  # waits until the client goes away

    async def CancelWait(self, request: Any, context: Any) -> Any:
        self.s.calls.append("CancelWait")
        if not self.s.cancel_wait:
            await context.abort(grpc.StatusCode.UNIMPLEMENTED, "")
        self.s.cancels.append(request)
        self.s.cancel_seen.set()
        return warden_pb2.CancelWaitResponse(resource=request.resource, lease_id=0, outcome="removed")


class _Lease(lease_pb2_grpc.LeaseServicer):
    def __init__(self, script: Script) -> None:
        self.s = script

    async def LeaseGrant(self, request: Any, context: Any) -> Any:
        self.s.calls.append("LeaseGrant")
        self.s.next_lease += 1
        return lease_pb2.LeaseGrantResponse(lease_id=self.s.next_lease, ttl_ms=request.ttl_ms)

    async def LeaseKeepAlive(self, request_iterator: Any, context: Any) -> AsyncIterator[Any]:
        async for request in request_iterator:
            self.s.calls.append("KeepAlive")
            live = self.s.lease_live
            yield lease_pb2.LeaseKeepAliveResponse(
                lease_id=request.lease_id, ttl_ms=5000 if live else 0, sequence=request.sequence, live=live
            )


class FakeNode:
    """Serve with ``async with FakeNode() as node:``; ``node.addr`` is its address."""

    def __init__(self, script: Script | None = None, credentials: grpc.ServerCredentials | None = None) -> None:
        self.script = script or Script()
        self.addr = ""
        self._credentials = credentials
        self._server: aio.Server | None = None

    async def __aenter__(self) -> FakeNode:
        server = aio.server()
        lock = _Lock(self.script)  # type: ignore[abstract]  # unscripted methods answer UNIMPLEMENTED
        warden_pb2_grpc.add_LockServicer_to_server(lock, server)
        lease_pb2_grpc.add_LeaseServicer_to_server(_Lease(self.script), server)  # type: ignore[abstract]
        if self._credentials is not None:
            port = server.add_secure_port("127.0.0.1:0", self._credentials)
        else:
            port = server.add_insecure_port("127.0.0.1:0")
        await server.start()
        self._server = server
        self.addr = f"127.0.0.1:{port}"
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._server is not None:
            await self._server.stop(grace=None)
