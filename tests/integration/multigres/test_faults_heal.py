"""The held fault injectors undo themselves when the test around them fails mid-fault: run against
a real network namespace of their own with real processes in it (root, iproute2 and nft, as the
process kubelet needs), no Multigres."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from multigres_pools.playground import claimfs, slowdisk
from multigres_pools.playground.faults import (
    FaultError,
    freeze_netns,
    netns_pids,
    partition_group,
    partition_netns,
    stopped_pids,
    tables,
)
from multigres_pools.playground.localstack import free_port, wait_for
from multigres_pools.playground.podnet import ip, kill_netns_processes

CONNECT = "import socket, sys; socket.create_connection(('127.0.0.1', int(sys.argv[1])), timeout=1)"


class FailedMidFault(Exception):
    pass


@contextlib.contextmanager
def own_netns(number: int) -> Iterator[str]:
    name = f"mgpheal{os.getpid()}n{number}"  # not the process kubelet's prefix: its sweep never touches it
    ip("netns", "add", name)
    try:
        ip("link", "set", "lo", "up", netns=name)
        yield name
    finally:
        kill_netns_processes(name)
        ip("netns", "del", name, check=False)


@pytest.fixture
def netns() -> Iterator[str]:
    with own_netns(0) as name:
        yield name


@pytest.fixture
def other_netns() -> Iterator[str]:
    with own_netns(1) as name:
        yield name


def in_netns(netns: str, *argv: str) -> list[str]:
    return ["ip", "netns", "exec", netns, *argv]


def connects(netns: str, port: int) -> bool:
    return subprocess.run(in_netns(netns, sys.executable, "-c", CONNECT, str(port)), capture_output=True,
                          check=False, timeout=30).returncode == 0


def test_a_frozen_namespace_is_thawed_when_the_test_fails(netns: str) -> None:
    sleeper = subprocess.Popen(in_netns(netns, "sleep", "300"))
    try:
        # In the namespace: `ip netns exec` joins it a moment after Popen returns.
        wait_for(lambda: sleeper.pid in netns_pids(netns) and not stopped_pids(netns) and sleeper.poll() is None,
                 10, "the sleeper to run in the namespace")
        with pytest.raises(FailedMidFault), freeze_netns(netns) as frozen:
            assert sleeper.pid in frozen
            wait_for(lambda: stopped_pids(netns) == [sleeper.pid], 10, "the sleeper to stop")
            raise FailedMidFault
        assert stopped_pids(netns) == []
    finally:
        sleeper.kill()
        sleeper.wait(10)


def test_a_partition_is_removed_when_the_test_fails(netns: str) -> None:
    port = free_port()
    server = subprocess.Popen(in_netns(netns, sys.executable, "-m", "http.server", "--bind", "127.0.0.1", str(port)),
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for(lambda: connects(netns, port), 30, "the server in the namespace", interval=0.2)
        with pytest.raises(FailedMidFault), partition_netns(netns, ["127.0.0.1"]) as table:
            assert tables(netns) == [table]
            assert not connects(netns, port)
            raise FailedMidFault
        assert tables(netns) == []
        assert connects(netns, port)
    finally:
        server.kill()
        server.wait(10)


def test_a_partition_of_many_namespaces_is_removed_from_each_when_the_test_fails(netns: str,
                                                                                 other_netns: str) -> None:
    with pytest.raises(FailedMidFault), partition_group([netns, other_netns], ["10.0.0.1", "10.0.0.2"]) as made:
        assert [tables(netns), tables(other_netns)] == [[made[0]], [made[1]]]
        raise FailedMidFault
    assert tables(netns) == [] and tables(other_netns) == []


def test_a_partition_of_many_namespaces_undoes_its_first_cuts_when_a_later_one_fails(netns: str) -> None:
    with pytest.raises(FaultError, match="mgpheal-no-such"), partition_group([netns, "mgpheal-no-such"], ["10.0.0.1"]):
        pass
    assert tables(netns) == []


def test_a_slow_disk_lets_go_of_its_processes_when_the_test_fails(netns: str) -> None:
    sleeper = subprocess.Popen(in_netns(netns, "sleep", "300"))
    try:
        wait_for(lambda: sleeper.pid in netns_pids(netns), 10, "the sleeper to run in the namespace")
        with pytest.raises(FailedMidFault), slowdisk.throttled(netns, claimfs.device(Path("/")), 5) as what:
            (group,) = slowdisk.groups(os.getpid())
            assert str(sleeper.pid) in (group / "cgroup.procs").read_text().split(), what
            raise FailedMidFault
        assert slowdisk.groups(os.getpid()) == []
        assert str(sleeper.pid) in (slowdisk.BLKIO / "cgroup.procs").read_text().split()
    finally:
        sleeper.kill()
        sleeper.wait(10)


def test_the_sweep_releases_the_throttles_of_a_run_that_died(netns: str) -> None:
    sleeper = subprocess.Popen(in_netns(netns, "sleep", "300"))
    dead = subprocess.Popen(["true"])
    dead.wait(10)  # a pid that no longer runs: the owner of a throttle it never released
    group = slowdisk.BLKIO / f"{slowdisk.PREFIX}{dead.pid}-1"
    try:
        wait_for(lambda: sleeper.pid in netns_pids(netns), 10, "the sleeper to run in the namespace")
        group.mkdir()
        (group / "cgroup.procs").write_text(str(sleeper.pid))
        assert slowdisk.sweep() == [group.name]
        assert not group.exists() and str(sleeper.pid) in (slowdisk.BLKIO / "cgroup.procs").read_text().split()
    finally:
        if group.exists():
            slowdisk.release(group)
        sleeper.kill()
        sleeper.wait(10)
