"""Plain results and options: what the server answered, as frozen dataclasses.

Units are in the names (``ttl_ms``, ``wait_timeout_s``); ids and fencing tokens
are ints below 2**53.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .tls import TlsOptions

#: The most request ids a client keeps in flight above its acknowledged
#: watermark when the server does not publish its own number (the server keeps
#: this many outcomes per client, docs/semantics.md S7).
DEFAULT_MAX_REQUESTS_IN_FLIGHT = 64

#: The key prefix of every election when the server does not publish it:
#: U+0001 (which no lock name may contain), then ``election/``.
DEFAULT_ELECTION_PREFIX = "\x01election/"


@dataclass(frozen=True)
class ClientOptions:
    """How a client talks to the cluster.

    ``deadline_s``: the longest one call may take, retries included (a waiting
    acquire gets its wait on top). ``attempt_timeout_s``: the longest one
    attempt at one node may take. ``backoff_cap_s``: the longest pause between
    two rounds over the endpoints (the pause starts at 25 ms and doubles).
    ``max_requests_in_flight``: the in-flight window above the acknowledged
    watermark; ``None`` = what the server publishes in ClusterStatus, or
    :data:`DEFAULT_MAX_REQUESTS_IN_FLIGHT` if it publishes none. A value set
    here only narrows the server's: never more than the server keeps
    outcomes for (S7).
    ``tls``: mutual TLS (see :class:`~warden_client.tls.TlsOptions`); ``None``
    = plaintext, for a cluster started with ``--insecure``.
    """

    deadline_s: float = 5.0
    attempt_timeout_s: float = 0.5
    backoff_cap_s: float = 0.2
    max_requests_in_flight: int | None = None
    tls: TlsOptions | None = None


class NotGrantedReason(enum.Enum):
    """Why an acquire was not granted (the server's ``NotGranted.reason``)."""

    HELD = "held"
    LOCK_DELAY = "lock_delay"
    WAIT_TIMEOUT = "wait_timeout"
    #: This client's CancelWait reached the server before the acquire applied
    #: (outcome "preempted"): the acquire is refused when it does. Seen only
    #: by an acquire whose caller had abandoned it.
    CANCELLED = "cancelled"
    #: A try-lock on a resource that a waiting multi-lock at the head of its
    #: queue has reserved (docs/semantics.md "Multi-locks").
    RESERVED = "reserved"


class LockMode(enum.Enum):
    """The wire's ``LockMode``: a read-write lock's reader (SHARED) or writer
    (EXCLUSIVE); UNSPECIFIED for a mutex or a semaphore permit."""

    UNSPECIFIED = 0
    SHARED = 1
    EXCLUSIVE = 2


@dataclass(frozen=True)
class ResourceToken:
    """One resource of a multi-lock's grant with its own fencing token."""

    resource: str
    fencing_token: int


@dataclass(frozen=True)
class Queued:
    """A waiting acquire's place in the queue (1 = next in line)."""

    position: int
    lease_id: int


@dataclass(frozen=True)
class Granted:
    """An acquire that was granted."""

    resource: str
    lease_id: int
    fencing_token: int
    ttl_ms: int
    log_index: int
    #: A semaphore permit's slot in ``0..limit``; ``None`` for other grants.
    slot: int | None = None
    #: The mode asked for (UNSPECIFIED for a mutex or a permit).
    mode: LockMode = LockMode.UNSPECIFIED
    #: A multi-lock's grant: every resource with its token, in the order
    #: asked (the first is also ``resource``/``fencing_token``); empty for a
    #: single resource's grant.
    grants: tuple[ResourceToken, ...] = ()
    #: The grant's max-hold in milliseconds (0 = none).
    max_hold_ms: int = 0


@dataclass(frozen=True)
class NotGranted:
    """An acquire that was not granted: the resource is held (by
    ``holder_lease_id``), in lock-delay, or the wait ran out."""

    resource: str
    holder_lease_id: int
    reason: NotGrantedReason


@dataclass(frozen=True)
class Holder:
    """Who holds a resource, as the leader sees it."""

    lease_id: int
    fencing_token: int
    ttl_remaining_ms: int
    ttl_ms: int
    value: str
    #: SHARED for a reader, EXCLUSIVE for a writer, UNSPECIFIED for a mutex's
    #: holder or a permit.
    mode: LockMode = LockMode.UNSPECIFIED
    #: A permit's slot; ``None`` for other holders.
    slot: int | None = None


@dataclass(frozen=True)
class ResourceStatus:
    """A linearizable read of one resource. ``holder`` is the exclusive
    holder (absent when free, or held by readers or permits); ``holders``
    lists every holder; ``kind`` is ``"mutex"``, ``"read_write"`` or
    ``"semaphore"`` while anything is on the resource, ``""`` when free;
    ``limit`` a semaphore's number of permits (0 otherwise)."""

    resource: str
    holder: Holder | None
    waiters: int
    read_index: int
    kind: str = ""
    limit: int = 0
    holders: tuple[Holder, ...] = ()


@dataclass(frozen=True)
class LeaseGrantResult:
    lease_id: int
    ttl_ms: int


@dataclass(frozen=True)
class RenewResult:
    """An acknowledged renew: ``sequence`` is the attempt's, echoed (S5)."""

    lease_id: int
    ttl_ms: int
    sequence: int


@dataclass(frozen=True)
class ReleaseResult:
    resource: str
    lease_id: int
    released: bool


@dataclass(frozen=True)
class CancelWaitResult:
    """What a CancelWait did: ``outcome`` is ``removed`` (the waiter left the
    queue), ``released`` (the grant won the race and was released; its token is
    ``fencing_token``), ``preempted`` (the acquire had not applied yet; it is
    refused, reason "cancelled", when it does) or ``none`` (there was nothing
    to cancel: the acquire had been answered)."""

    resource: str
    lease_id: int
    outcome: str
    fencing_token: int


@dataclass(frozen=True)
class LeaseInfo:
    """A lease's TTL, time left, locks and waits (linearizable read)."""

    lease_id: int
    ttl_ms: int
    ttl_remaining_ms: int
    locks: tuple[str, ...]
    waits: tuple[str, ...]
    graced: bool


class TokenState(enum.Enum):
    UNSPECIFIED = 0
    CURRENT = 1
    STALE = 2
    UNKNOWN = 3


@dataclass(frozen=True)
class ValidateResult:
    resource: str
    fencing_token: int
    state: TokenState
    holder_token: int
    read_index: int


@dataclass(frozen=True)
class Member:
    id: int
    addr: str
    role: str
    applied_index: int


@dataclass(frozen=True)
class ClusterStatus:
    """Membership and indexes as the leader sees them, and what the server
    publishes for clients (``max_requests_in_flight``, ``election_prefix``:
    ``None`` when this server does not publish them)."""

    cluster_id: str
    leader_id: int
    term: int
    commit_index: int
    node_id: int
    members: tuple[Member, ...]
    max_requests_in_flight: int | None
    election_prefix: str | None


@dataclass(frozen=True)
class ListedWaiter:
    lease_id: int
    age_ms: int


@dataclass(frozen=True)
class ListedLock:
    """One resource of an Admin List: its holder (``None`` if free) and its
    waiters in queue order."""

    resource: str
    holder: Holder | None
    waiters: tuple[ListedWaiter, ...]


@dataclass(frozen=True)
class WatchEvent:
    """One lock-table change, in commit order (``index`` = its log entry)."""

    index: int
    resource: str
    event: str
    lease_id: int
    fencing_token: int


@dataclass(frozen=True)
class LeaderInfo:
    """An election's leader as the cluster reports it: its session lease,
    its term's fencing token, and the value it published."""

    lease_id: int
    fencing_token: int
    value: str


class LostKind(enum.Enum):
    """Why a session was lost."""

    #: No renew was acknowledged before ``valid_until`` passed (no server
    #: reachable, no quorum, or this process was paused).
    EXPIRED = "expired"
    #: The server no longer has the lease (expired or revoked elsewhere).
    LEASE_GONE = "lease_gone"
    #: The session clock could not be read.
    CLOCK_FAILED = "clock_failed"
    #: ``close()`` was called.
    CLOSED = "closed"
    #: A grant's max-hold bound passed (its session may still be valid):
    #: ``valid_until`` is that bound (docs/semantics.md "Max-hold").
    MAX_HOLD = "max_hold"


@dataclass(frozen=True)
class Lost:
    """Why a session (and every lock on it) can no longer be trusted."""

    kind: LostKind
    lease_id: int
    #: The ``valid_until`` that passed (EXPIRED), on the session clock.
    valid_until: float | None = None
    #: The clock's error (CLOCK_FAILED).
    detail: str = field(default="")

    def __str__(self) -> str:
        if self.kind is LostKind.EXPIRED:
            return (
                f"session lost: lease {self.lease_id} was valid until {self.valid_until:.3f} s "
                "on the session clock and no renew was acknowledged in time"
            )
        if self.kind is LostKind.LEASE_GONE:
            return f"session lost: the cluster no longer has lease {self.lease_id}"
        if self.kind is LostKind.MAX_HOLD:
            return (
                f"grant of lease {self.lease_id} passed its max-hold bound "
                f"({self.valid_until:.3f} s on the session clock)"
            )
        if self.kind is LostKind.CLOCK_FAILED:
            return f"session lost: {self.detail}; its validity cannot be measured"
        return f"session of lease {self.lease_id} closed"
