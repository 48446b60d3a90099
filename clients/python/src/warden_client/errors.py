"""Typed exceptions, and the one place a gRPC status becomes one of them.

The server attaches structured details to every status it chooses
(``grpc-status-details-bin``: a ``google.rpc.ErrorInfo`` with domain
``warden.v1`` and a reason, and for an invalid argument a
``google.rpc.BadRequest`` naming the field). They are read here with
grpcio-status (:func:`grpc_status.rpc_status.from_call`); the class of an
exception comes from the ErrorInfo reason, and without details from the gRPC
code. Nothing is ever parsed out of a message text.

Whether an attempt is retried is decided here too (:func:`is_retryable`):
"not the leader", "no quorum", timeouts and dropped connections are; a
server's refusal is final.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Protocol

import grpc
from google.rpc import error_details_pb2
from grpc_status import rpc_status

from .types import Lost, NotGrantedReason

#: The ErrorInfo domain of every Warden error.
ERROR_DOMAIN = "warden.v1"

#: Metadata entry of an ``Unavailable`` naming the leader's client address.
LEADER_METADATA = "warden-leader"

#: Metadata entry naming the oldest retained index on a ``COMPACTED`` error.
OLDEST_INDEX_METADATA = "warden-oldest-index"


@dataclass(frozen=True)
class FieldViolation:
    """One ``google.rpc.BadRequest`` field violation."""

    field: str
    description: str


@dataclass(frozen=True)
class StatusInfo:
    """What a failed call said: its code and message, and its structured
    details (``reason`` is the ErrorInfo reason when its domain is
    ``warden.v1``)."""

    code: grpc.StatusCode
    message: str
    reason: str | None = None
    info_metadata: Mapping[str, str] = field(default_factory=dict)
    violations: tuple[FieldViolation, ...] = ()
    #: Text metadata of the response (initial and trailing).
    metadata: Mapping[str, str] = field(default_factory=dict)

    @property
    def has_details(self) -> bool:
        """True when the status carried Warden's ErrorInfo: the server (not
        the transport) chose it."""
        return self.reason is not None

    @property
    def field(self) -> str | None:
        """The first field violation's field, if any."""
        return self.violations[0].field if self.violations else None

    def describe(self) -> str:
        name = self.code.name
        tag = f"{name}/{self.reason}" if self.reason and self.reason != name else name
        return f"{tag}: {self.message}" if self.message else tag


class _CallLike(Protocol):
    def code(self) -> grpc.StatusCode: ...

    def details(self) -> str | None: ...

    def trailing_metadata(self) -> object: ...

    def initial_metadata(self) -> object: ...


def _text_metadata(*groups: object) -> dict[str, str]:
    out: dict[str, str] = {}
    for group in groups:
        if not group:
            continue
        items: Iterable[tuple[str, object]] = group.items() if isinstance(group, Mapping) else group  # type: ignore[assignment]
        for key, value in items:
            if isinstance(value, str) and not key.endswith("-bin"):
                out.setdefault(key, value)
    return out


def status_of(call: _CallLike) -> StatusInfo:
    """Reads a failed call (``grpc.aio.AioRpcError``, or a finished
    ``grpc.aio.Call``) into a :class:`StatusInfo`."""
    code = call.code()
    message = call.details() or ""
    metadata = _text_metadata(call.initial_metadata(), call.trailing_metadata())
    try:
        rich = rpc_status.from_call(call)  # type: ignore[arg-type]
    except ValueError:
        # Code or message of the details disagree with the status: not Warden's.
        rich = None
    if rich is None:
        return StatusInfo(code=code, message=message, metadata=metadata)
    reason: str | None = None
    info_metadata: dict[str, str] = {}
    violations: list[FieldViolation] = []
    for detail in rich.details:
        if detail.Is(error_details_pb2.ErrorInfo.DESCRIPTOR):
            info = error_details_pb2.ErrorInfo()
            detail.Unpack(info)
            if info.domain == ERROR_DOMAIN:
                reason = info.reason
                info_metadata = dict(info.metadata)
        elif detail.Is(error_details_pb2.BadRequest.DESCRIPTOR):
            bad = error_details_pb2.BadRequest()
            detail.Unpack(bad)
            violations.extend(FieldViolation(field=v.field, description=v.description) for v in bad.field_violations)
    return StatusInfo(
        code=code,
        message=message,
        reason=reason,
        info_metadata=info_metadata,
        violations=tuple(violations),
        metadata=metadata,
    )


# --- the exceptions -------------------------------------------------------


class WardenError(Exception):
    """Every error this client raises. ``status`` is the server's status when
    one ended the call (``None`` for a client-side error); ``field`` is the
    field its BadRequest details name, if any."""

    def __init__(self, message: str, status: StatusInfo | None = None, field: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.field = field if field is not None else (status.field if status else None)

    @property
    def code(self) -> grpc.StatusCode | None:
        return self.status.code if self.status else None

    @property
    def reason(self) -> str | None:
        """The ErrorInfo reason (``INVALID_ARGUMENT``, ``LEASE_NOT_LIVE``, ...)."""
        return self.status.reason if self.status else None


class InvalidArgumentError(WardenError, ValueError):
    """A request (or a client-side argument) was refused as malformed or out of
    bounds; ``field`` names it (from the status's BadRequest, e.g. ``ttl_ms``,
    ``resource``, ``wait_timeout_ms``). Nothing was changed."""


class NotFoundError(WardenError):
    """The lease or resource named does not exist."""


class LeaseNotFoundError(NotFoundError):
    """The lease is not live (expired, revoked, released or never granted)."""


class FailedPreconditionError(WardenError):
    """The request does not fit the current state (a stale fencing token,
    another holder; docs/semantics.md S6)."""


class RequestExpiredError(FailedPreconditionError):
    """The server no longer remembers the outcome of this retried request: it
    may or may not have taken effect, and was not executed twice (S7)."""


class PermissionDeniedError(WardenError):
    """The caller's principal may not do this (e.g. lock outside its roles'
    prefixes). Another principal's lease answers as one that does not exist."""


class AdminDisabledError(PermissionDeniedError):
    """An admin call on a node that does not allow it (``--allow-admin``)."""


class UnauthenticatedError(WardenError):
    """The server requires a client certificate and got none it accepts."""


class ResourceExhaustedError(WardenError):
    """A table, counter or quota is full (or the client's in-flight window
    stayed full until the deadline)."""


class UnimplementedError(WardenError):
    """The server does not serve this method (an older server)."""


class CompactedError(WardenError):
    """A watch's start index is older than the node's retained window;
    ``oldest_index`` is the oldest index it still retains."""

    def __init__(self, message: str, status: StatusInfo | None, oldest_index: int) -> None:
        super().__init__(message, status)
        self.oldest_index = oldest_index


class TransportError(WardenError):
    """The server or the transport failed in a way that is not retried (an
    unexpected code, a malformed reply)."""


class ClusterUnavailableError(WardenError):
    """The call kept failing over (leader hints, every endpoint, backoff)
    until its deadline. ``tried``: each address in order of first attempt;
    ``last_error``: the last failure, prefixed with its address;
    ``last_reason``: its ErrorInfo reason (e.g. ``NOT_LEADER``,
    ``NO_LEADER``), if the server sent one."""

    def __init__(
        self,
        message: str,
        *,
        tried: tuple[str, ...],
        waited_ms: int,
        last_error: str,
        last_status: StatusInfo | None,
    ) -> None:
        super().__init__(message, last_status)
        self.tried = tried
        self.waited_ms = waited_ms
        self.last_error = last_error

    @property
    def last_reason(self) -> str | None:
        return self.reason


class NoQuorumError(ClusterUnavailableError):
    """Servers answered, but none could serve the call before the deadline
    (no leader elected, no quorum reachable; docs/semantics.md L3)."""


class UnavailableError(ClusterUnavailableError):
    """No server could be reached before the deadline."""


class SessionLostError(WardenError):
    """The session the call depends on is lost (S5): its locks can no longer
    be trusted. ``lost`` says why."""

    def __init__(self, lost: Lost) -> None:
        super().__init__(str(lost))
        self.lost = lost


class NotGrantedError(WardenError):
    """An acquire was answered "not granted": ``reason`` says why and
    ``holder_lease_id`` names the lease holding the resource (0 if none)."""

    def __init__(self, resource: str, holder_lease_id: int, reason: NotGrantedReason) -> None:
        holder = f" (held by lease {holder_lease_id})" if holder_lease_id else ""
        super().__init__(f"{resource!r} not granted: {reason.value}{holder}")
        self.resource = resource
        self.holder_lease_id = holder_lease_id
        self.not_granted_reason = reason


class HeldError(NotGrantedError):
    """Not granted: another lease holds the resource (a try-lock)."""


class LockDelayError(NotGrantedError):
    """Not granted: the resource is in lock-delay after an involuntary loss."""


class WaitTimeoutError(NotGrantedError, TimeoutError):
    """Not granted: the wait ran out; the waiter's removal has committed (S8)."""


def not_granted_error(resource: str, holder_lease_id: int, reason: NotGrantedReason) -> NotGrantedError:
    cls: type[NotGrantedError] = {
        NotGrantedReason.HELD: HeldError,
        NotGrantedReason.LOCK_DELAY: LockDelayError,
        NotGrantedReason.WAIT_TIMEOUT: WaitTimeoutError,
    }.get(reason, NotGrantedError)
    return cls(resource, holder_lease_id, reason)


class ClockError(WardenError):
    """The session clock could not be read; ``clock`` names it."""

    def __init__(self, clock: str, detail: str) -> None:
        super().__init__(f"clock {clock} cannot be read: {detail}")
        self.clock = clock


class TlsConfigError(WardenError):
    """A TLS file is missing or unusable; ``path`` names it. (Key contents are
    never included.)"""

    def __init__(self, path: str, problem: str) -> None:
        super().__init__(f"{path}: {problem}")
        self.path = path


# --- the mapping ----------------------------------------------------------

_BY_REASON: dict[str, type[WardenError]] = {
    "INVALID_ARGUMENT": InvalidArgumentError,
    "NOT_FOUND": NotFoundError,
    "LEASE_NOT_LIVE": LeaseNotFoundError,
    "FAILED_PRECONDITION": FailedPreconditionError,
    "REQUEST_EXPIRED": RequestExpiredError,
    "PERMISSION_DENIED": PermissionDeniedError,
    "ADMIN_DISABLED": AdminDisabledError,
    "UNAUTHENTICATED": UnauthenticatedError,
    "RESOURCE_EXHAUSTED": ResourceExhaustedError,
}

_BY_CODE: dict[grpc.StatusCode, type[WardenError]] = {
    grpc.StatusCode.INVALID_ARGUMENT: InvalidArgumentError,
    grpc.StatusCode.OUT_OF_RANGE: InvalidArgumentError,
    grpc.StatusCode.NOT_FOUND: NotFoundError,
    grpc.StatusCode.FAILED_PRECONDITION: FailedPreconditionError,
    grpc.StatusCode.PERMISSION_DENIED: PermissionDeniedError,
    grpc.StatusCode.UNAUTHENTICATED: UnauthenticatedError,
    grpc.StatusCode.RESOURCE_EXHAUSTED: ResourceExhaustedError,
    grpc.StatusCode.UNIMPLEMENTED: UnimplementedError,
}


def _oldest_index(status: StatusInfo) -> int | None:
    raw = status.metadata.get(OLDEST_INDEX_METADATA) or status.info_metadata.get("oldest_index")
    if raw is None:
        return None
    try:
        return int(raw)
    except ValueError:
        return None


def error_from_status(status: StatusInfo) -> WardenError:
    """The typed exception for a final status: by ErrorInfo reason, else by
    gRPC code. The message is the server's (it names the field and limit)."""
    oldest = _oldest_index(status)
    if status.reason == "COMPACTED" or (
        status.reason is None and status.code is grpc.StatusCode.OUT_OF_RANGE and oldest is not None
    ):
        return CompactedError(status.message, status, oldest if oldest is not None else 0)
    cls = _BY_REASON.get(status.reason or "") or _BY_CODE.get(status.code) or TransportError
    if cls is TransportError:
        return TransportError(status.describe(), status)
    return cls(status.message, status)


def is_retryable(status: StatusInfo) -> bool:
    """Whether a failed attempt is tried again (leader hint, next endpoint or
    backoff; the same request id, so never twice in effect, S7)."""
    code = status.code
    if code in (
        grpc.StatusCode.UNAVAILABLE,
        grpc.StatusCode.CANCELLED,
        grpc.StatusCode.DEADLINE_EXCEEDED,
        grpc.StatusCode.ABORTED,
    ):
        return True
    if code in (grpc.StatusCode.UNKNOWN, grpc.StatusCode.INTERNAL):
        # A server-chosen status carries Warden's details; a broken
        # connection or stream does not.
        return not status.has_details
    # Not a Warden node (another HTTP/2 service answered): try the next one.
    # Calls for which Unimplemented is final (CancelWait) say so to the loop.
    return code is grpc.StatusCode.UNIMPLEMENTED


def server_answered(status: StatusInfo) -> bool:
    """True when a Warden node itself answered Unavailable (not leader, no
    quorum, bootstrapping), as opposed to the transport failing to reach it."""
    return status.code is grpc.StatusCode.UNAVAILABLE and status.has_details
