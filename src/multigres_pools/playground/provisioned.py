"""Multigres v0.1.0 as its own local provisioner runs it, inside a private network namespace.

`multigres cluster init/start/stop --config-path DIR` brings up etcd, multiadmin and, per cell
(zone1..zone3), pgctld + PostgreSQL 17 + a pgBackRest server + multipooler + multiorch (500 ms health
and recovery intervals) + multigateway; one primary and two synchronous standbys
(shared/reference/multigres-v0.1.md §5, §7). This is the real data plane the agent's v0.1.0 adapter
is tested against.

Why a namespace: the provisioner binds etcd and pgBackRest to 0.0.0.0. In a fresh namespace that is
joined to this machine only by a veth pair on a private /30 (no route out), those listeners are
reachable from here and nowhere else, and the provisioner's fixed default ports cannot clash with
anything else running on the machine (several clusters can run side by side). The records say
`localhost`, so clients map every hostname to the namespace's address (`dial_host`).

    with ProvisionedCluster(toolchain) as mg:        # ~25 s on 2 cores
        dp = V0_1(dial_host=mg.dial_host)
        poolers = dp.list_poolers(mg.topology())
        mg.signal_pooler("zone3", signal.SIGKILL)

Every process the cluster starts lives in the namespace, so `stop()` can always find and kill the
stragglers (`ip netns pids`), whatever state a failed test left behind.
"""

from __future__ import annotations

import contextlib
import ipaddress
import json
import os
import secrets
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from multigres_pools.dataplane.base import ShardTopology

CELLS = ("zone1", "zone2", "zone3")
GLOBAL_ROOT = "/multigres/global"
DATABASE, TABLEGROUP, SHARD = "postgres", "default", "0-inf"
ETCD_PORT = 2379
# Private /30s are carved out of this range; one per cluster.
SUBNETS = ipaddress.ip_network("10.251.0.0/16")


class UserToolchain(Protocol):
    """What this module needs of `playground.toolchain.Toolchain`."""

    user: str

    def as_user(self, argv: list[str]) -> list[str]: ...


class ClusterError(RuntimeError):
    pass


def _ip(*argv: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(["ip", *argv], capture_output=True, text=True, check=check, timeout=30)


def _used_networks() -> list[ipaddress.IPv4Network]:
    out = _ip("-4", "-o", "addr", "show").stdout.split()
    return [ipaddress.ip_interface(w).network for w in out if "/" in w and w[0].isdigit()]


@dataclass
class Namespace:
    """A network namespace with loopback up and a veth pair to the host on a private /30."""

    name: str
    host_if: str
    host_ip: str
    ns_ip: str

    @classmethod
    def create(cls) -> Namespace:
        tag = secrets.token_hex(4)
        used = _used_networks()
        for _ in range(64):
            net = ipaddress.ip_network((int(SUBNETS.network_address) + 4 * secrets.randbelow(2**14), 30))
            if not any(net.overlaps(u) for u in used):
                break
        else:
            raise ClusterError(f"no free /30 in {SUBNETS}")
        host_ip, ns_ip = (str(h) for h in net.hosts())
        ns = cls(f"mgp-{tag}", f"mgp{tag}h", host_ip, ns_ip)
        try:
            _ip("netns", "add", ns.name)
            _ip("netns", "exec", ns.name, "ip", "link", "set", "lo", "up")
            _ip("link", "add", ns.host_if, "type", "veth", "peer", "name", f"mgp{tag}n")
            _ip("link", "set", f"mgp{tag}n", "netns", ns.name)
            _ip("addr", "add", f"{host_ip}/30", "dev", ns.host_if)
            _ip("link", "set", ns.host_if, "up")
            _ip("netns", "exec", ns.name, "ip", "addr", "add", f"{ns_ip}/30", "dev", f"mgp{tag}n")
            _ip("netns", "exec", ns.name, "ip", "link", "set", f"mgp{tag}n", "up")
        except subprocess.CalledProcessError as exc:
            ns.delete()
            raise ClusterError(f"network namespace set-up failed: {exc.stderr.strip()}") from exc
        return ns

    def pids(self) -> list[int]:
        out = _ip("netns", "pids", self.name, check=False).stdout
        return [int(p) for p in out.split()]

    def exec_argv(self, argv: list[str]) -> list[str]:
        return ["ip", "netns", "exec", self.name, *argv]

    def delete(self) -> None:
        _ip("link", "del", self.host_if, check=False)  # removes the peer too
        _ip("netns", "del", self.name, check=False)


def _cmdline(pid: int) -> list[str]:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").split("\0")
    except OSError:
        return []


def _flag(argv: list[str], name: str) -> str | None:
    for i, arg in enumerate(argv):
        if arg == name and i + 1 < len(argv):
            return argv[i + 1]
        if arg.startswith(name + "="):
            return arg.split("=", 1)[1]
    return None


class ProvisionedCluster:
    """One `multigres cluster` (local provisioner) in its own namespace and temporary directory."""

    def __init__(self, toolchain: UserToolchain, workdir: Path | None = None, start_timeout_s: float = 240.0) -> None:
        self.toolchain = toolchain
        self._own_workdir = workdir is None
        self.workdir = workdir or Path(tempfile.mkdtemp(prefix="mgp-v01-"))
        self.start_timeout_s = start_timeout_s
        self.ns: Namespace | None = None

    # --- lifecycle ---------------------------------------------------------------------------------
    def __enter__(self) -> ProvisionedCluster:
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _run(self, *args: str, timeout: float) -> subprocess.CompletedProcess:
        assert self.ns is not None
        argv = self.ns.exec_argv(self.toolchain.as_user(["multigres", "cluster", *args,
                                                         "--config-path", str(self.workdir)]))
        # The servers exit by themselves if the work directory disappears (orphan detection).
        env = {**os.environ, "MULTIGRES_TESTDATA_DIR": str(self.workdir)}
        return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=env)

    def start(self) -> None:
        self.workdir.mkdir(parents=True, exist_ok=True)
        shutil.chown(self.workdir, user=self.toolchain.user)
        self.ns = Namespace.create()
        init = self._run("init", timeout=60)
        if init.returncode != 0:
            raise ClusterError(f"multigres cluster init failed: {init.stdout[-2000:]}{init.stderr[-2000:]}")
        self._tie_to_workdir()
        started = self._run("start", timeout=self.start_timeout_s)
        if started.returncode != 0:
            raise ClusterError(f"multigres cluster start failed (exit {started.returncode}): "
                               f"{started.stdout[-3000:]}{started.stderr[-2000:]}")

    def _tie_to_workdir(self) -> None:
        """`env -i` in as_user drops our environment, so orphan detection goes on the command line
        of every server through the provisioner's config: nothing to do when the toolchain keeps it.
        The work directory removal in stop() is the last resort either way."""

    def stop(self) -> None:
        """`multigres cluster stop`, then SIGKILL whatever still runs in the namespace, then remove
        the namespace and the work directory. Safe to call twice and after a failed start."""
        if self.ns is not None:
            with contextlib.suppress(subprocess.TimeoutExpired, OSError):
                self._run("stop", timeout=90)
            deadline = time.monotonic() + 10
            while self.ns.pids() and time.monotonic() < deadline:
                for pid in self.ns.pids():
                    with contextlib.suppress(ProcessLookupError, PermissionError):
                        os.kill(pid, signal.SIGKILL)
                time.sleep(0.2)
            self.ns.delete()
            self.ns = None
        if self._own_workdir:
            shutil.rmtree(self.workdir, ignore_errors=True)

    # --- addresses ---------------------------------------------------------------------------------
    @property
    def address(self) -> str:
        if self.ns is None:
            raise ClusterError("the cluster is not running")
        return self.ns.ns_ip

    def dial_host(self, hostname: str) -> str:
        """Every record says `localhost`: from here that is the namespace's address."""
        return self.address

    @property
    def etcd_endpoint(self) -> str:
        return f"http://{self.address}:{ETCD_PORT}"

    def topology(self) -> ShardTopology:
        return ShardTopology((self.etcd_endpoint,), GLOBAL_ROOT, DATABASE, TABLEGROUP, SHARD, CELLS)

    # --- processes ---------------------------------------------------------------------------------
    def processes(self, binary: str) -> dict[int, list[str]]:
        """pid -> argv of every running `binary` (e.g. "multipooler") in the namespace."""
        assert self.ns is not None
        found = {}
        for pid in self.ns.pids():
            argv = _cmdline(pid)
            if argv and Path(argv[0]).name == binary:
                found[pid] = argv
        return found

    def pooler_pid(self, cell: str) -> int | None:
        for pid, argv in self.processes("multipooler").items():
            if _flag(argv, "--cell") == cell:
                return pid
        return None

    def service_id(self, cell: str) -> str:
        """The cell's multipooler service id, from the provisioner's state file."""
        for path in (self.workdir / "state" / "dbs" / DATABASE).glob("multipooler_*.json"):
            state = json.loads(path.read_text())
            if state.get("metadata", {}).get("cell") == cell:
                return state["id"]
        raise ClusterError(f"no multipooler state for cell {cell}")

    def signal_pooler(self, cell: str, sig: signal.Signals) -> int:
        pid = self.pooler_pid(cell)
        if pid is None:
            raise ClusterError(f"no multipooler running in cell {cell}")
        os.kill(pid, sig)
        return pid

    def wait_pooler_gone(self, cell: str, timeout_s: float = 60.0) -> None:
        deadline = time.monotonic() + timeout_s
        while self.pooler_pid(cell) is not None:
            if time.monotonic() > deadline:
                raise ClusterError(f"the multipooler of {cell} still runs after {timeout_s:g}s")
            time.sleep(0.1)

    def restart_missing(self) -> None:
        """`multigres cluster start` again: the provisioner starts only what no longer runs."""
        started = self._run("start", timeout=self.start_timeout_s)
        if started.returncode != 0:
            raise ClusterError(f"multigres cluster start failed: {started.stdout[-3000:]}{started.stderr[-2000:]}")

    def log(self, binary: str, cell: str) -> Path:
        """The log file of a cell's multipooler or multiorch."""
        for path in (self.workdir / "state" / "dbs" / DATABASE).glob(f"{binary}_*.json"):
            state = json.loads(path.read_text())
            if state.get("metadata", {}).get("cell") == cell or binary == "multiorch" and cell in path.name:
                return Path(state["log-file"])
        raise ClusterError(f"no {binary} log for cell {cell}")

    def logs(self, binary: str) -> Iterator[Path]:
        yield from sorted((self.workdir / "logs" / "dbs" / DATABASE / binary).glob("*.log"))
