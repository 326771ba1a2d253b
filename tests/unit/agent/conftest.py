"""A private etcd for the agent's data-plane tests (no Kubernetes needed).

Imported by the tests that need it (not a conftest.py: tests/integration/agent has one, and both
would be imported as `agent.conftest`)."""

from __future__ import annotations

import shutil
import socket
import tempfile
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from multigres_pools.playground.cluster import Etcd, stop_process


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
        stop_process(etcd.process)
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


@pytest.fixture
def closed_port() -> Iterator[str]:
    """host:port bound but not listening: connections are refused, and no one else can take it."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    try:
        yield f"127.0.0.1:{sock.getsockname()[1]}"
    finally:
        sock.close()


@pytest.fixture
def silent_port() -> Iterator[str]:
    """host:port that accepts connections and never answers (a blackholed endpoint)."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    accepted: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        sock.settimeout(0.2)
        while not stop.is_set():
            try:
                accepted.append(sock.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield f"127.0.0.1:{sock.getsockname()[1]}"
    finally:
        stop.set()
        thread.join()
        for conn in accepted:
            conn.close()
        sock.close()
