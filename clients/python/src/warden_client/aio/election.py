"""Leader election on a :class:`~warden_client.aio.Session` (etcd's
``concurrency.Election``: campaign, proclaim, leader, observe, resign), with a
fencing token for each term of office.

An election named ``N`` is the lock-table key ``prefix + N``, the prefix being
what the server publishes (``ClusterStatusResponse.election_prefix``; by
default U+0001 then ``election/``, which no lock name can start with), so
elections live apart from locks. A campaigner publishes its value as a
candidate (Proclaim with token 0), then waits in the key's FIFO queue (S8:
first come, first elected); its grant is its term of office and the grant's
fencing token is the term's token.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..types import LeaderInfo, ReleaseResult
from .watch import Observer

if TYPE_CHECKING:
    from .client import Client
    from .session import Lock, Session


async def leader_of(client: Client, key: str) -> LeaderInfo | None:
    status = await client.status(key)
    if status.holder is None:
        return None
    h = status.holder
    return LeaderInfo(lease_id=h.lease_id, fencing_token=h.fencing_token, value=h.value)


class Election:
    """One election, campaigned in with a session."""

    def __init__(self, session: Session, name: str) -> None:
        self._session = session
        self.name = name

    @property
    def session(self) -> Session:
        return self._session

    async def campaign(self, value: str) -> Leadership:
        """Stands with ``value`` (at most 4,096 bytes) and waits until
        elected. The wait survives leader changes of the cluster (S8);
        cancelling it withdraws the candidacy's place in the queue
        (CancelWait). SessionLostError if the session is lost first."""
        self._session.check()
        client = self._session.client
        key = await client.election_key(self.name)
        await client.proclaim(key, self._session.lease_id, 0, value)
        lock = await self._session.lock(key)
        return Leadership(self.name, key, lock)

    async def leader(self) -> LeaderInfo | None:
        """The current leader, if any (linearizable read)."""
        client = self._session.client
        return await leader_of(client, await client.election_key(self.name))

    async def observe(self) -> Observer:
        """Follows this election's leaders."""
        return await Observer.open(self._session.client, self.name)


class Leadership:
    """A term of office: the election's lock, held by the session. Valid
    while the session is (:meth:`check` before each act of the leader); pass
    :attr:`fencing_token` with every write so that a deposed leader's writes
    are rejected (S2). ``async with`` resigns on exit."""

    def __init__(self, name: str, key: str, lock: Lock) -> None:
        self.name = name
        self._key = key
        self._lock = lock

    def __repr__(self) -> str:
        return f"Leadership(name={self.name!r}, lease_id={self.lease_id}, fencing_token={self.fencing_token})"

    @property
    def fencing_token(self) -> int:
        """The token of this term: larger than every earlier term's."""
        return self._lock.fencing_token

    @property
    def lease_id(self) -> int:
        return self._lock.lease_id

    @property
    def valid_until(self) -> float:
        return self._lock.valid_until

    def check(self) -> None:
        """See :meth:`Session.check`."""
        self._lock.check()

    async def proclaim(self, value: str) -> None:
        """Publishes a new value for this term (FailedPreconditionError if the
        term has ended: a deposed leader cannot proclaim)."""
        self.check()
        await self._lock.session.client.proclaim(self._key, self.lease_id, self.fencing_token, value)

    async def resign(self) -> ReleaseResult:
        """Steps down: releases this term's grant (the next campaigner is
        elected in the same committed entry)."""
        return await self._lock.release()

    async def __aenter__(self) -> Leadership:
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, *exc: object) -> None:
        await self._lock.exit_block(exc_type is not None)
