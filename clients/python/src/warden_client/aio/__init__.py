"""The asyncio API (grpc.aio): :class:`Client`, :class:`Session`,
:class:`Lock`, :class:`MultiLock`, :class:`Semaphore`, :class:`Election`, :class:`Leadership`, :class:`Watcher`,
:class:`Observer`.

    async with Client(["127.0.0.1:7001", "127.0.0.1:7002"]) as client:
        async with await client.session(ttl_s=10) as session:
            async with session.lock("orders") as lock:
                lock.check()
                write(lock.fencing_token)

Modules: ``client`` (the retry loop and every call), ``session`` (keep-alive,
``valid_until``, locks), ``election``, ``watch`` (watches and observers).
"""

from .client import Client
from .election import Election, Leadership
from .session import Lock, LockAcquire, MultiLock, Semaphore, Session
from .watch import Observer, Watcher

__all__ = [
    "Client",
    "Election",
    "Leadership",
    "Lock",
    "LockAcquire",
    "MultiLock",
    "Observer",
    "Semaphore",
    "Session",
    "Watcher",
]
