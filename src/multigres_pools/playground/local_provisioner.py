"""Multigres v0.1.0's own local provisioner (`multigres cluster init/start/stop`), run safely here.

The provisioner's defaults (etcd 2379, postgres 25432-25434, 15xxx service ports) clash with
anything else on the machine, so after `cluster init` every port in the generated config is
replaced by a free one; and (as root) everything runs in a private network namespace with only
loopback, because the provisioner binds etcd, PostgreSQL and pgBackRest on all addresses.
Every command runs as the toolchain's unprivileged user with a marker variable in its
environment; the provisioner puts each service in its own process group and pg_ctl detaches
postgres, so the marker (inherited by every descendant) is how leftovers are found and killed,
without touching anybody else's Multigres processes.

    cluster = LocalProvisionerCluster(toolchain.ensure(), workdir)
    cluster.init(); cluster.start()
    ... cluster.psql(cluster.postgres_ports()["zone1"], "SELECT 1") ...
    cluster.stop()          # `multigres cluster stop`, then kills whatever is left
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import yaml

from . import podnet
from .ports import free_ports
from .toolchain import Toolchain

MARKER = "MULTIGRES_POOLS_RUN"
CONFIG_FILE = "multigres.yaml"


def _port_fields(node: Any) -> Iterator[tuple[dict[str, Any], str]]:
    if isinstance(node, dict):
        for key, value in node.items():
            if isinstance(key, str) and key.endswith("port") and isinstance(value, int):
                yield node, key
            else:
                yield from _port_fields(value)


def repoint_ports(config: dict[str, Any]) -> dict[int, int]:
    """Replace every port in a local-provisioner config with a free one, in place. Equal old
    ports get the same new port, which keeps pairs that must agree (a cell's pgctld and
    multipooler pg-port) agreeing. etcd's peer port defaults to client port + 1, so it is set
    explicitly. Returns old -> new."""
    etcd = config["provisioner-config"]["etcd"]
    etcd.setdefault("peer-port", etcd["port"] + 1)
    fields = list(_port_fields(config))
    old = sorted({node[key] for node, key in fields})
    mapping = dict(zip(old, free_ports(len(old)), strict=True))
    for node, key in fields:
        node[key] = mapping[node[key]]
    return mapping


def processes_with_marker(value: str) -> list[int]:
    """Pids whose environment carries MARKER=value (readable for root or the same user)."""
    needle = f"{MARKER}={value}".encode()
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if needle in (entry / "environ").read_bytes().split(b"\0"):
                pids.append(int(entry.name))
        except OSError:
            continue  # gone, or not ours to read
    return pids


class LocalProvisionerCluster:
    def __init__(self, toolchain: Toolchain, workdir: Path) -> None:
        self.toolchain = toolchain
        self.workdir = workdir
        self.log = workdir / "provisioner.log"
        # v0.1.0's provisioner binds etcd, PostgreSQL, pgBackRest and the gRPC servers on all
        # addresses; in a private network namespace "all" is its loopback plus one address on a
        # private bridge (podnet), which is how callers here reach etcd and the poolers.
        self.net: podnet.PodNet | None = None
        self.bridge: podnet.Bridge | None = None
        self.netns: str | None = None
        self.address = "127.0.0.1"

    def run(self, argv: list[str], timeout: float, extra_env: dict[str, str] | None = None,
            **kwargs: Any) -> subprocess.CompletedProcess[str]:
        """Run argv as the toolchain user, in the cluster's network namespace, with the marker."""
        env = {MARKER: str(self.workdir), **(extra_env or {})}
        if self.netns:
            argv = ["ip", "netns", "exec", self.netns, *self.toolchain.as_user(argv, env)]
        else:
            kwargs.update(self.toolchain.process_kwargs())
            kwargs["env"] = {**kwargs["env"], **env}
        return subprocess.run(argv, text=True, timeout=timeout, start_new_session=True, **kwargs)

    def _multigres(self, *args: str, timeout: float) -> None:
        argv = [str(self.toolchain.multigres_bin / "multigres"), "cluster", *args,
                "--config-path", str(self.workdir)]
        with self.log.open("a") as log:
            log.write(f"$ {' '.join(argv)}\n")
            log.flush()
            done = self.run(argv, timeout, stdout=log, stderr=subprocess.STDOUT, cwd=self.workdir)
        if done.returncode != 0:
            tail = "\n".join(self.log.read_text().splitlines()[-30:])
            raise RuntimeError(f"multigres cluster {args[0]} exited {done.returncode}; log tail:\n{tail}")

    def psql(self, port: int, sql: str) -> str | None:
        """One query to the PostgreSQL on `port` as the provisioner's superuser; None while the
        server does not answer."""
        pgctld = next(iter(self.config["provisioner-config"]["cells"].values()))["pgctld"]
        done = self.run(["psql", "-h", "127.0.0.1", "-p", str(port), "-U", pgctld["pg-user"], "-d", "postgres",
                         "-XAtc", sql], 30, {"PGPASSWORD": pgctld["pg-password"], "PGCONNECT_TIMEOUT": "3"},
                        capture_output=True)
        return done.stdout.strip() if done.returncode == 0 else None

    @property
    def config(self) -> dict[str, Any]:
        return cast(dict[str, Any], yaml.safe_load((self.workdir / CONFIG_FILE).read_text()))  # a mapping we wrote

    def init(self) -> dict[str, Any]:
        """The network namespace, `multigres cluster init`, then free ports everywhere. The
        workdir must exist and be writable by the toolchain user."""
        if os.geteuid() == 0:
            self.bridge = podnet.create_bridge(podnet.new_instance_id())
            self.net = podnet.create_pod_net(self.bridge, 2)
            self.netns, self.address = self.net.netns, self.net.ip
        self._multigres("init", timeout=60)
        config = self.config
        repoint_ports(config)
        (self.workdir / CONFIG_FILE).write_text(yaml.safe_dump(config, sort_keys=False))
        return config

    def start(self, timeout: float = 300) -> None:
        """`multigres cluster start`: returns once the gateways answer SQL."""
        self._multigres("start", timeout=timeout)

    def postgres_ports(self) -> dict[str, int]:
        """Cell name -> the port of that cell's PostgreSQL (loopback of the namespace: reach it
        with run()/psql())."""
        cells = self.config["provisioner-config"]["cells"]
        return {name: cell["pgctld"]["pg-port"] for name, cell in cells.items()}

    def processes(self) -> list[int]:
        return processes_with_marker(str(self.workdir))

    def stop(self, timeout: float = 120, grace: float = 60) -> list[str]:
        """`multigres cluster stop`, then SIGKILL (process group and process) whatever is left.
        Returns a description of each process still alive `grace` seconds after the graceful
        stop (pid, state, start time relative to the end of the stop, command line), so tests
        can assert that there were none."""
        # A failed stop is not fatal here: the kill below cleans up and callers see the leftovers.
        with contextlib.suppress(RuntimeError, subprocess.TimeoutExpired):
            self._multigres("stop", timeout=timeout)
        # Stragglers get a grace period: under load a postgres shutdown checkpoint can outlast
        # the 2 s the provisioner gives each service.
        stopped = time.monotonic()
        while self.processes() and time.monotonic() < stopped + grace:
            time.sleep(0.2)
        leftovers = [_describe(pid, stopped) for pid in self.processes()]
        for pid in self.processes():
            _kill_group_and_process(pid)
        if self.net is not None:
            podnet.delete_pod_net(self.net)
        if self.bridge is not None:
            podnet.delete_bridge(self.bridge)
        self.net = self.bridge = self.netns = None
        return leftovers


def _describe(pid: int, since: float) -> str:
    """pid, state, when it started relative to `since` (monotonic), and its command line."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        uptime = float(Path("/proc/uptime").read_text().split()[0])
        started = time.monotonic() - (uptime - int(fields[19]) / os.sysconf("SC_CLK_TCK"))
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode().strip()
    except OSError:
        return f"{pid} (gone)"
    return f"{pid} state={fields[0]} started={started - since:+.1f}s {cmdline}"


def _kill_group_and_process(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        group = os.getpgid(pid)
        if group != os.getpgrp():  # never our own group
            os.killpg(group, signal.SIGKILL)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, signal.SIGKILL)
