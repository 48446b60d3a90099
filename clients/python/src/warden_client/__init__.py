"""Warden's Python client: sessions, fenced locks, elections and watches on a
Warden cluster, with the promises of docs/semantics.md (S3, S5, S6, S7, S8,
L1, L3).

Synchronous API (this module)::

    from warden_client import Client

    with Client(["127.0.0.1:7001", "127.0.0.1:7002", "127.0.0.1:7003"]) as client:
        with client.session(ttl_s=10) as session:
            with session.lock("orders") as lock:
                lock.check()                      # certainly still ours?
                write_orders(lock.fencing_token)  # the resource rejects older tokens

asyncio API: :mod:`warden_client.aio` (the same names, ``await`` and ``async
with``).

Module map:

- ``aio/client.py``: :class:`aio.Client`, the retry loop (leader hints,
  rotation, backoff, deadlines) and every call; request headers (S7); the
  acquire and its CancelWait when abandoned.
- ``aio/session.py``: :class:`aio.Session` (keep-alive on the LeaseKeepAlive
  stream every TTL/3, ``valid_until``, ``check()``, the lost event and
  callbacks, ``close()``), :class:`aio.Lock`.
- ``aio/election.py``: :class:`aio.Election`, :class:`aio.Leadership`.
- ``aio/watch.py``: :class:`aio.Watcher`, :class:`aio.Observer`.
- ``sync.py``: the synchronous API on a private event-loop thread.
- ``errors.py``: the typed exceptions and the one place a gRPC status
  (with its ``google.rpc`` details) becomes one, and is judged for a retry.
- ``routing.py``: endpoints, the ``warden-leader`` hint, the per-call plan of
  targets and backoff (pure).
- ``requests.py``: request ids, the acknowledged watermark, the in-flight
  window (S7).
- ``clock.py``: the session clock (CLOCK_BOOTTIME) and ``validity_s`` (S5).
- ``tls.py``: mutual TLS options (files, or a certs dir and a user).
- ``types.py``: options and results.
- ``_proto/``: code generated from crates/warden-proto/proto
  (``scripts/regen_proto.py``).
"""

from . import aio
from .clock import BOOT_CLOCK, BootClock, Clock, validity_s
from .errors import (
    AdminDisabledError,
    ClockError,
    ClusterUnavailableError,
    CompactedError,
    FailedPreconditionError,
    FieldViolation,
    HeldError,
    InvalidArgumentError,
    LeaseNotFoundError,
    LockDelayError,
    NoQuorumError,
    NotFoundError,
    NotGrantedError,
    PermissionDeniedError,
    RequestExpiredError,
    ResourceExhaustedError,
    SessionLostError,
    StatusInfo,
    TlsConfigError,
    TransportError,
    UnauthenticatedError,
    UnavailableError,
    UnimplementedError,
    WaitTimeoutError,
    WardenError,
)
from .sync import Client, Election, Leadership, Lock, MultiLock, Observer, Semaphore, Session, Watcher
from .tls import TlsOptions
from .types import (
    CancelWaitResult,
    ClientOptions,
    ClusterStatus,
    Granted,
    Holder,
    LeaderInfo,
    LeaseGrantResult,
    LeaseInfo,
    ListedLock,
    ListedWaiter,
    LockMode,
    Lost,
    LostKind,
    NotGranted,
    NotGrantedReason,
    Queued,
    ReleaseResult,
    RenewResult,
    ResourceStatus,
    ResourceToken,
    TokenState,
    ValidateResult,
    WatchEvent,
)

__all__ = [
    "BOOT_CLOCK",
    "AdminDisabledError",
    "BootClock",
    "CancelWaitResult",
    "Client",
    "ClientOptions",
    "Clock",
    "ClockError",
    "ClusterStatus",
    "ClusterUnavailableError",
    "CompactedError",
    "Election",
    "FailedPreconditionError",
    "FieldViolation",
    "Granted",
    "HeldError",
    "Holder",
    "InvalidArgumentError",
    "LeaderInfo",
    "Leadership",
    "LeaseGrantResult",
    "LeaseInfo",
    "LeaseNotFoundError",
    "ListedLock",
    "ListedWaiter",
    "Lock",
    "LockDelayError",
    "LockMode",
    "Lost",
    "LostKind",
    "MultiLock",
    "NoQuorumError",
    "NotFoundError",
    "NotGranted",
    "NotGrantedError",
    "NotGrantedReason",
    "Observer",
    "PermissionDeniedError",
    "Queued",
    "ReleaseResult",
    "RenewResult",
    "RequestExpiredError",
    "ResourceExhaustedError",
    "ResourceStatus",
    "ResourceToken",
    "Semaphore",
    "Session",
    "SessionLostError",
    "StatusInfo",
    "TlsConfigError",
    "TlsOptions",
    "TokenState",
    "TransportError",
    "UnauthenticatedError",
    "UnavailableError",
    "UnimplementedError",
    "ValidateResult",
    "WaitTimeoutError",
    "WardenError",
    "WatchEvent",
    "Watcher",
    "aio",
    "validity_s",
]
