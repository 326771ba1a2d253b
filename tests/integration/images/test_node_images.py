"""The real node's own images: the pod sandbox (pause) and busybox for helper and client pods.
Only these two are built here (seconds, cached by content), not the whole `make images` set."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from multigres_pools.images import catalog
from multigres_pools.images.build import Built, build
from multigres_pools.playground.containerd import Containerd, image_config
from tests.helpers.collection import REPO

pytestmark = pytest.mark.images


@pytest.fixture(scope="module")
def node_images() -> dict[str, Built]:
    return {item.name: item for item in build(("pause", "node-helper"), REPO, progress=lambda _line: None)}


@pytest.fixture(scope="module")
def node_ctrd(node_images: dict[str, Built]) -> Iterator[Containerd]:
    with Containerd.started() as ctrd:
        for item in node_images.values():
            ctrd.load(Path(item.archive))
        yield ctrd


def _status_field(pid: int, field: str) -> str:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return line.split(":", 1)[1].strip()
    raise AssertionError(f"no {field} in /proc/{pid}/status")


def _children(pid: int) -> list[tuple[int, str]]:
    """(pid, state) of the processes whose parent is `pid`."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            fields = stat.rsplit(")", 1)[1].split()
            if int(fields[1]) == pid:
                found.append((int(entry.name), fields[0]))
    return found


def test_pause_image_is_the_static_binary_alone(node_images: dict[str, Built]) -> None:
    image = node_images["pause"]
    assert image.ref == catalog.PAUSE_IMAGE == "localhost/multigres-pools/pause:3.10"
    config = image_config(Path(image.archive))
    assert config.entrypoint == ["/pause"] and config.cmd == [] and config.user == "65535:65535"
    assert config.labels["org.opencontainers.image.version"] == catalog.PAUSE_VERSION
    assert image.compressed_bytes < 2_000_000
    assert (Path(image.archive).parent / "packages.txt").read_text() == ""


def test_pause_holds_reaps_and_stops_on_sigterm(node_ctrd: Containerd, node_images: dict[str, Built]) -> None:
    image = node_images["pause"]
    assert node_ctrd.run(image.ref, ["/pause", "-v"]).strip() == f"pause {catalog.PAUSE_VERSION} (multigres-pools)"
    task = node_ctrd.spawn(image.ref)
    try:
        pid = task.pid()
        assert _status_field(pid, "Uid").split()[0] == "65535"
        assert _status_field(pid, "NSpid").split()[-1] == "1"  # PID 1 of the container's namespace
        # An orphan in its PID namespace is reparented to it and must not stay a zombie.
        subprocess.run(["nsenter", "-t", str(pid), "-p", "--", "sh", "-c", "sleep 0.2 & exit 0"], check=True)
        time.sleep(1)
        assert not [c for c in _children(pid) if c[1] == "Z"], _children(pid)
        assert task.popen.poll() is None
        task.kill("SIGTERM")
        assert task.wait(10) == 0
    finally:
        if task.popen.poll() is None:
            task.kill("SIGKILL")
            task.wait(10)


def test_node_helper_runs_busybox_as_nobody(node_ctrd: Containerd, node_images: dict[str, Built]) -> None:
    image = node_images["node-helper"]
    assert image.ref == catalog.NODE_HELPER_IMAGE == f"localhost/multigres-pools/node-helper:{catalog.BUSYBOX_VERSION}"
    config = image_config(Path(image.archive))
    assert config.entrypoint == ["/bin/sh"] and config.user == "65534:65534"
    archive = Path(image.archive)
    assert node_ctrd.run(image.ref, ["-c", "echo ok"], archive=archive, entrypoint=True).strip() == "ok"
    assert node_ctrd.run(image.ref, ["sh", "-c", "id -u; id -g"]).split() == ["65534", "65534"]
    # What local-path-provisioner's helper pods and test clients run.
    script = "set -e; mkdir -m 0777 -p /tmp/vol/a; rm -rf /tmp/vol; which wget nc; echo done"
    out = node_ctrd.run(image.ref, ["sh", "-c", script], read_only=True, tmpfs=("/tmp",)).split()
    assert out == ["/bin/wget", "/bin/nc", "done"], out
    assert f"BusyBox v{catalog.BUSYBOX_VERSION} " in node_ctrd.run(image.ref, ["busybox"], check=False)
