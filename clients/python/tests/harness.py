"""A real three-node cluster for the conformance tests, and a loopback TCP
proxy (clients/conformance/README.md "The cluster a test run starts").

- ``warden server`` children from ``WARDEN_BIN`` (default: the workspace's
  ``target/debug/warden``) on 127.0.0.1, ports from :0, data in a temp dir,
  ``--initial-cluster-state new`` and ``--admin-listen`` (for ``/readyz``).
- Security: the cluster runs on mutual TLS. The run mints a CA, node
  certificates (SANs 127.0.0.1, localhost) and client certificates for root,
  alice and bob with ``warden cert``, starts the nodes with ``--certs-dir``
  and every client connects with mTLS. A binary without ``--certs-dir`` (one
  that predates TLS) is refused with a message saying so.
- The binary runs without the CLI's ``WARDEN_*`` settings of the caller's
  environment (endpoints, certs dir, user, insecure): only its flags count.
- One cluster per run; the scenarios that kill a node bring it back
  (:meth:`Cluster.restore`).
- Everything waits with deadlines; nothing sleeps to synchronise.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from warden_client import ClientOptions, TlsOptions, WardenError, aio

T = TypeVar("T")

PACKAGE_ROOT = Path(__file__).resolve().parent.parent

#: Each node snapshots after this many entries, so that a restarted node has
#: entries it never applied in this process (C09's compacted watch).
SNAPSHOT_THRESHOLD = 32

#: Principals every run mints certificates for.
PRINCIPALS = ("root", "alice", "bob")


def warden_bin() -> Path:
    """The binary under test: ``WARDEN_BIN``, else the workspace's debug build."""
    raw = os.environ.get("WARDEN_BIN")
    path = Path(raw) if raw else PACKAGE_ROOT / ".." / ".." / "target" / "debug" / "warden"
    return path.resolve()


_help_cache: dict[tuple[str, ...], str] = {}


def bin_help(*command: str) -> str:
    """``warden COMMAND --help`` of the binary under test ('' if it fails)."""
    if command not in _help_cache:
        out = subprocess.run(
            [str(warden_bin()), *command, "--help"], capture_output=True, text=True, timeout=30, check=False
        )
        _help_cache[command] = out.stdout if out.returncode == 0 else ""
    return _help_cache[command]


def server_has_tls() -> bool:
    """Whether this binary serves TLS (``warden server --help`` names ``--certs-dir``)."""
    return "--certs-dir" in bin_help("server")


def binary_env(**settings: str) -> dict[str, str]:
    """This process's environment without the CLI's ``WARDEN_*`` settings
    (``WARDEN_BIN`` stays), plus ``settings``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("WARDEN_") or k == "WARDEN_BIN"}
    env.update(settings)
    return env


_given_ports: set[int] = set()


def free_port() -> int:
    """A loopback port from a bind to :0 that this process has not handed out
    before (a released port can come back from the next bind to :0)."""
    while True:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.bind(("127.0.0.1", 0))
            port = int(s.getsockname()[1])
        if port not in _given_ports:
            _given_ports.add(port)
            return port


async def wait_for(
    what: str, probe: Callable[[], Awaitable[T | None]], *, deadline_s: float, every_s: float = 0.02
) -> T:
    """Polls ``probe`` until it returns something other than None (or False),
    failing with ``what`` once ``deadline_s`` has passed. The pause between
    probes is a poll interval, not a synchronisation: the deadline decides."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + deadline_s
    last: BaseException | None = None
    while True:
        try:
            value = await probe()
            if value is not None and value is not False:
                return value
        except WardenError as e:
            last = e
        if loop.time() >= deadline:
            raise AssertionError(f"timed out after {deadline_s} s waiting until {what} (last error: {last})")
        await asyncio.sleep(every_s)


@dataclass
class Node:
    id: int
    addr: str
    admin_addr: str
    data_dir: Path
    log: Path
    certs_dir: Path
    proc: subprocess.Popen[bytes] | None = None


@dataclass
class Cluster:
    """A cluster of ``warden server`` processes (start with :meth:`start`)."""

    root: Path
    size: int = 3
    nodes: dict[int, Node] = field(default_factory=dict)
    #: ca.crt and client.NAME.crt/.key for every principal of PRINCIPALS.
    client_certs: Path = Path()

    @classmethod
    def prepare(cls, size: int = 3) -> Cluster:
        if not server_has_tls():
            raise AssertionError(
                f"{warden_bin()} predates TLS (`warden server --help` has no --certs-dir): "
                "rebuild it from this checkout (cargo build -p warden) or set WARDEN_BIN"
            )
        root = Path(tempfile.mkdtemp(prefix="warden-py-"))
        cluster = cls(root=root, size=size)
        for node_id in range(1, size + 1):
            cluster.nodes[node_id] = Node(
                id=node_id,
                addr=f"127.0.0.1:{free_port()}",
                admin_addr=f"127.0.0.1:{free_port()}",
                data_dir=root / f"node-{node_id}",
                log=root / f"node-{node_id}.log",
                certs_dir=root / f"certs-node-{node_id}",
            )
        cluster._mint()
        return cluster

    def _warden(self, *args: str) -> subprocess.CompletedProcess[str]:
        out = subprocess.run(
            [str(warden_bin()), *args], capture_output=True, text=True, timeout=60, env=binary_env(), check=False
        )
        if out.returncode != 0:
            raise AssertionError(f"warden {' '.join(args)} failed ({out.returncode}): {out.stderr.strip()}")
        return out

    def _mint(self) -> None:
        """CA (key outside every certs dir), node certificates, client
        certificates for PRINCIPALS."""
        ca_key = self.root / "ca.key"
        certs = self.root / "certs"
        self._warden("cert", "create-ca", "--certs-dir", str(certs), "--ca-key", str(ca_key))
        for principal in PRINCIPALS:
            self._warden("cert", "create-client", principal, "--certs-dir", str(certs), "--ca-key", str(ca_key))
        for node in self.nodes.values():
            node.certs_dir.mkdir(parents=True)
            shutil.copy(certs / "ca.crt", node.certs_dir / "ca.crt")
            self._warden(
                "cert", "create-node", "--certs-dir", str(node.certs_dir), "--ca-key", str(ca_key),
                "--id", str(node.id), "127.0.0.1", "localhost",
            )  # fmt: skip
        self.client_certs = certs

    # --- processes ------------------------------------------------------

    def peers(self) -> str:
        return ",".join(f"{n.id}={n.addr}" for n in self.nodes.values())

    @property
    def endpoints(self) -> list[str]:
        return [n.addr for n in self.nodes.values()]

    def spawn(self, node_id: int) -> None:
        node = self.nodes[node_id]
        args = [
            str(warden_bin()), "server",
            "--id", str(node_id),
            "--listen", node.addr,
            "--peers", self.peers(),
            "--data-dir", str(node.data_dir),
            "--initial-cluster-state", "new",
            "--admin-listen", node.admin_addr,
            "--snapshot-threshold", str(SNAPSHOT_THRESHOLD),
            "--certs-dir", str(node.certs_dir),
        ]  # fmt: skip
        log = open(node.log, "ab")  # noqa: SIM115 - handed to the child
        env = binary_env(RUST_LOG="info,openraft=warn")
        node.proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=log, stderr=log, env=env)
        log.close()

    async def start(self) -> Cluster:
        for node_id in self.nodes:
            self.spawn(node_id)
        await self.wait_leader(deadline_s=20)
        return self

    def kill(self, node_id: int) -> None:
        """SIGKILL node ``node_id`` and reap it."""
        proc = self.nodes[node_id].proc
        if proc is not None and proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=30)
        self.nodes[node_id].proc = None

    def terminate(self, node_id: int) -> None:
        """SIGTERM node ``node_id``, SIGKILL after 10 s."""
        proc = self.nodes[node_id].proc
        if proc is not None and proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=30)
        self.nodes[node_id].proc = None

    async def restore(self, node_id: int, *, deadline_s: float = 30.0) -> None:
        """Starts node ``node_id`` again (after :meth:`kill` or
        :meth:`terminate`) on its data dir and waits until its ``/readyz``
        says ready and a node leads, for the scenarios that run after."""
        self.spawn(node_id)

        async def ready() -> bool:
            return await asyncio.to_thread(self.readyz, node_id) == 200

        await wait_for(f"restarted node {node_id} is ready", ready, deadline_s=deadline_s, every_s=0.05)
        await self.wait_leader(deadline_s=deadline_s)

    def stop(self) -> None:
        """Kills every node this cluster started and removes its files."""
        for node_id in self.nodes:
            self.kill(node_id)
        shutil.rmtree(self.root, ignore_errors=True)

    def log_tail(self, node_id: int, lines: int = 30) -> str:
        try:
            return "\n".join(self.nodes[node_id].log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    # --- clients --------------------------------------------------------

    def tls(self, user: str = "root") -> TlsOptions:
        return TlsOptions.from_certs_dir(self.client_certs, user)

    def options(self, user: str = "root", **overrides: float) -> ClientOptions:
        return ClientOptions(tls=self.tls(user), **overrides)  # type: ignore[arg-type]

    def client(self, endpoints: list[str] | None = None, user: str = "root", **overrides: float) -> aio.Client:
        return aio.Client(endpoints or self.endpoints, self.options(user, **overrides))

    async def leader_id(self, client: aio.Client | None = None) -> int:
        own = client is None
        c = client or self.client()
        try:
            return (await c.cluster_status()).leader_id
        finally:
            if own:
                await c.close()

    async def wait_leader(self, *, deadline_s: float, not_id: int | None = None) -> int:
        """Waits until a node leads (other than ``not_id``) and returns its id."""
        async with self.client(deadline_s=2.0) as client:

            async def probe() -> int | None:
                leader = (await client.cluster_status()).leader_id
                if leader and leader != not_id and self.nodes[leader].proc is not None:
                    return leader
                return None

            try:
                return await wait_for("a node leads", probe, deadline_s=deadline_s, every_s=0.05)
            except AssertionError as e:
                logs = "\n".join(f"--- node {i}\n{self.log_tail(i)}" for i in self.nodes)
                raise AssertionError(f"{e}\n{logs}") from None

    def readyz(self, node_id: int) -> int:
        """The HTTP status of node ``node_id``'s ``/readyz`` over HTTPS without a
        client certificate (0 if unreachable)."""
        node = self.nodes[node_id]
        context = ssl.create_default_context(cafile=str(self.client_certs / "ca.crt"))
        try:
            with urllib.request.urlopen(f"https://{node.admin_addr}/readyz", timeout=2, context=context) as r:
                return int(r.status)
        except urllib.error.HTTPError as e:
            return int(e.code)
        except OSError:
            return 0

    def cli(self, *args: str, user: str = "root") -> object:
        """Runs ``warden ARGS --endpoints ... --output json`` as ``user``;
        returns the JSON it printed."""
        out = subprocess.run(
            [
                str(warden_bin()), *args, "--endpoints", ",".join(self.endpoints),
                "--certs-dir", str(self.client_certs), "--user", user, "--output", "json",
            ],
            capture_output=True, text=True, timeout=60, env=binary_env(), check=False,
        )  # fmt: skip
        if out.returncode != 0:
            raise AssertionError(f"warden {' '.join(args)} failed ({out.returncode}): {out.stderr.strip()}")
        try:
            return json.loads(out.stdout) if out.stdout.strip() else None
        except json.JSONDecodeError:
            return out.stdout


# --- the proxy --------------------------------------------------------------


class Proxy:
    """A loopback TCP proxy in front of one node (accepts on 127.0.0.1:0).

    Modes: ``forward`` (both directions); :meth:`cut` stops forwarding in both
    directions, closes the client side's sockets and closes every new
    connection at once; :meth:`swallow` forwards client->node but drops
    node->client (counted in :attr:`swallowed_bytes`); :meth:`heal` closes
    every connection and forwards again."""

    def __init__(self, upstream: str) -> None:
        host, _, port = upstream.rpartition(":")
        self._upstream = (host, int(port))
        self._server: asyncio.Server | None = None
        self._conns: set[tuple[asyncio.StreamWriter, asyncio.StreamWriter]] = set()
        self._tasks: set[asyncio.Task[None]] = set()
        self.mode = "forward"
        self.swallowed_bytes = 0
        self.addr = ""

    async def start(self) -> Proxy:
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", 0)
        port = self._server.sockets[0].getsockname()[1]
        self.addr = f"127.0.0.1:{port}"
        return self

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self.mode == "cut":
            writer.close()
            return
        try:
            up_reader, up_writer = await asyncio.open_connection(*self._upstream)
        except OSError:
            writer.close()
            return
        pair = (writer, up_writer)
        self._conns.add(pair)
        for task in (
            asyncio.ensure_future(self._pipe(reader, up_writer, toward_node=True)),
            asyncio.ensure_future(self._pipe(up_reader, writer, toward_node=False)),
        ):
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, *, toward_node: bool) -> None:
        try:
            while True:
                data = await reader.read(65536)
                if not data or self.mode == "cut":
                    break
                if not toward_node and self.mode == "swallow":
                    self.swallowed_bytes += len(data)
                    continue
                writer.write(data)
                await writer.drain()
        except (OSError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()

    def _close_all(self) -> None:
        for client_side, node_side in list(self._conns):
            client_side.close()
            node_side.close()
        self._conns.clear()

    def cut(self) -> None:
        self.mode = "cut"
        self._close_all()

    def swallow(self) -> None:
        self.mode = "swallow"

    def heal(self) -> None:
        self._close_all()
        self.mode = "forward"

    async def close(self) -> None:
        self.mode = "cut"
        self._close_all()
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
        for task in list(self._tasks):
            task.cancel()


def boot_now() -> float:
    """The test process's shared monotonic clock (the session clock)."""
    return time.clock_gettime(time.CLOCK_BOOTTIME)


async def until_lock_kinds_are_served(client: aio.Client) -> None:
    """The kinds, multi-locks and max-hold are refused (FailedPrecondition,
    naming the log format) until every member of a freshly started cluster
    has reported the format that carries them: wait for that with a
    deadline, with one throw-away grant of each."""
    async with await client.session(ttl_s=5.0) as session:

        async def probe() -> bool:
            permit = await session.semaphore("c14-format-probe", 1).try_acquire()
            await permit.release()
            multi = await session.lock_all(["c16-format-probe-1", "c16-format-probe-2"], wait_timeout_s=0.0)
            await multi.release()
            bounded = await session.try_lock("c17-format-probe", max_hold_s=60.0)
            await bounded.release()
            return True

        await wait_for(
            "every member reads the log formats of lock kinds, multi-locks and max-hold", probe, deadline_s=30.0
        )
