"""Fixtures: the cluster of the conformance tests (one per run, so that no
two clusters run at once on a shared machine; the scenarios that kill a node
start it again), and clients on it."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from harness import Cluster, warden_bin
from warden_client import aio


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "conformance(id): a scenario of clients/conformance/scenarios.md")


def _require_binary() -> None:
    path = warden_bin()
    if not path.is_file():
        pytest.fail(
            f"the warden binary {path} does not exist: build it (cargo build -p warden) or set WARDEN_BIN",
            pytrace=False,
        )


@pytest.fixture(scope="session")
async def cluster() -> AsyncIterator[Cluster]:
    """The three-node cluster the scenarios share."""
    _require_binary()
    c = Cluster.prepare()
    try:
        await c.start()
        yield c
    finally:
        c.stop()


@pytest.fixture
async def client(cluster: Cluster) -> AsyncIterator[aio.Client]:
    async with cluster.client() as c:
        yield c
