"""A private etcd for the agent's data-plane tests (no Kubernetes needed).

Imported by the tests that need it (not a conftest.py: tests/integration/agent has one, and both
would be imported as `agent.conftest`)."""

from __future__ import annotations

import shutil
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from multigres_pools.playground.cluster import Etcd, _stop


def _etcd_binary() -> Path:
    """The harness's etcd if it is already built (never build it from here), else the system one."""
    from multigres_pools.playground import binaries

    built = binaries.cache_dir() / "etcd"
    return built if built.is_file() else Path(shutil.which("etcd") or "/usr/bin/etcd")


@pytest.fixture(scope="session")
def private_etcd() -> Iterator[Etcd]:
    work = Path(tempfile.mkdtemp(prefix="agent-etcd-"))
    etcd = Etcd(_etcd_binary(), work / "data", work / "etcd.log")
    etcd.start()
    try:
        etcd.wait_ready()
        yield etcd
    finally:
        _stop(etcd.process)
        shutil.rmtree(work, ignore_errors=True)


@pytest.fixture
def root(private_etcd: Etcd) -> Iterator[str]:
    """A fresh global root per test; its keys are deleted afterwards."""
    from multigres_pools.dataplane.etcd import Etcd as Client

    path = f"/t-{uuid.uuid4().hex[:8]}/global"
    yield path
    client = Client(private_etcd.endpoint)
    for key, _ in client.get_prefix(path.rsplit("/", 1)[0] + "/"):
        client.delete(key)
