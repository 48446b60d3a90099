"""The synchronous API against the real cluster, and the README's example."""

from __future__ import annotations

import contextlib
import io
import os
import re
import signal
import sqlite3
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness import Cluster
from warden_client import Client, HeldError, Lost, LostKind, Queued, WardenError

README = Path(__file__).resolve().parent.parent / "README.md"


def _sync_client(cluster: Cluster, user: str = "root") -> Client:
    return Client(cluster.endpoints, cluster.options(user))


@contextlib.contextmanager
def _env(**values: str) -> Iterator[None]:
    saved = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def test_with_session_lock_gives_a_fenced_lock_and_releases_it(cluster: Cluster) -> None:
    """S1, S2, S6 through the synchronous API: ``with session.lock(...) as
    lock`` holds the resource (another session is refused, naming the
    holder), carries the token and lease, and releases it on exit."""
    with _sync_client(cluster) as client, _sync_client(cluster) as other:
        with client.session(ttl_s=5.0) as session, other.session(ttl_s=5.0) as rival:
            with session.lock("py-sync-r") as lock:
                lock.check()
                assert lock.lease_id == session.lease_id and lock.fencing_token >= 1
                assert lock.valid_until == session.valid_until > time.clock_gettime(time.CLOCK_BOOTTIME)
                holder = client.status("py-sync-r").holder
                assert holder is not None and (holder.lease_id, holder.fencing_token) == (
                    lock.lease_id,
                    lock.fencing_token,
                )
                with pytest.raises(HeldError) as held:
                    rival.try_lock("py-sync-r")
                assert held.value.holder_lease_id == session.lease_id
            assert client.status("py-sync-r").holder is None
            with rival.try_lock("py-sync-r") as second:
                assert second.fencing_token > lock.fencing_token


def test_a_revoked_lease_sets_the_lost_event_and_calls_back(cluster: Cluster) -> None:
    """S5 through the synchronous API: when the server no longer has the
    session's lease, the threading.Event is set and the callback runs (on
    the client's thread), and check() fails."""
    with _sync_client(cluster) as client, _sync_client(cluster) as admin:
        session = client.session(ttl_s=3.0)
        seen: list[Lost] = []
        session.on_lost(seen.append)
        admin.revoke(session.lease_id)
        lost = session.wait_lost(timeout_s=5.0)
        assert lost is not None and lost.kind is LostKind.LEASE_GONE
        assert session.lost_event.is_set() and [x.kind for x in seen] == [LostKind.LEASE_GONE]
        with pytest.raises(WardenError):
            session.check()
        session.close()


@pytest.mark.conformance("C11-abandoned-wait-leaves-no-waiter")
def test_c11_ctrl_c_on_a_waiting_sync_lock_leaves_no_waiter(cluster: Cluster) -> None:
    """conformance: C11-abandoned-wait-leaves-no-waiter (S8), the synchronous
    way: Ctrl-C (KeyboardInterrupt) while a lock waits sends CancelWait, and
    no waiter stays queued."""
    with _sync_client(cluster) as client, _sync_client(cluster) as holder:
        with holder.session(ttl_s=10.0) as h, client.session(ttl_s=10.0) as w:
            held = h.try_lock("c11-sync")

            def interrupt(_q: Queued) -> None:
                # As Ctrl-C would, once the wait is queued.
                signal.pthread_kill(threading.main_thread().ident or 0, signal.SIGINT)

            with pytest.raises(KeyboardInterrupt):
                w.lock("c11-sync", wait_timeout_s=30.0, on_queued=interrupt)
            assert client.status("c11-sync").waiters == 0
            held.release()
            assert client.status("c11-sync").holder is None
            info = client.lease_time_to_live(w.lease_id)
            assert info.waits == () and info.locks == ()


def _readme_example() -> str:
    text = README.read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    assert blocks, "the README has a python example"
    example: str = blocks[0]
    assert len(example.strip().splitlines()) <= 25
    return example


def test_the_readme_example_takes_a_lock_and_writes_with_its_token(cluster: Cluster, tmp_path: Path) -> None:
    """The README's example runs as written against a cluster: it writes the
    row with its lock's token, and a second run writes with a larger one."""
    example = _readme_example()
    env = {"WARDEN_ENDPOINTS": ",".join(cluster.endpoints)}
    env["WARDEN_CERTS_DIR"] = str(cluster.client_certs)
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        tokens = []
        for _ in range(2):
            out = io.StringIO()
            with _env(**env), contextlib.redirect_stdout(out):
                exec(compile(example, str(README), "exec"), {"__name__": "readme_example"})
            match = re.fullmatch(r"token (\d+): written\n", out.getvalue())
            assert match, out.getvalue()
            tokens.append(int(match.group(1)))
        row = sqlite3.connect(tmp_path / "orders.db").execute("SELECT state, fence FROM orders").fetchall()
        assert row == [("paid", tokens[1])] and tokens[1] > tokens[0]
    finally:
        os.chdir(cwd)
