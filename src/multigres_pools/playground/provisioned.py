"""One shard of real Multigres v0.1.0, as its local provisioner runs it, seen the way the agent sees it.

`LocalProvisionerCluster` (local_provisioner.py) runs `multigres cluster init/start/stop` on free ports;
this adds what data-plane tests need on top: the shard's topology for an adapter, and the pooler of a
cell as a process (signal it, wait for it to go, start it again). The provisioner puts one pooler in
each of zone1..zone3 of database `postgres`, table group `default`, shard `0-inf`, under the global
root `/multigres/global`, with multiorch at 500 ms intervals (shared/reference/multigres-v0.1.md §5, §7).

    with ProvisionedShard(toolchain.ensure()) as mg:
        dp = V0_1()
        poolers = dp.list_poolers(mg.topology())
        mg.signal_pooler("zone3", signal.SIGKILL)
"""

from __future__ import annotations

import os
import shutil
import signal
import tempfile
import time
from pathlib import Path

from ansible_collections.multigres.pools.plugins.module_utils.core import keys, naming

from multigres_pools.dataplane.base import Pooler, PoolerId, ShardTopology

from .local_provisioner import LocalProvisionerCluster
from .toolchain import Toolchain

CELLS = ("zone1", "zone2", "zone3")
GLOBAL_ROOT = "/multigres/global"
DATABASE, TABLEGROUP, SHARD = "postgres", "default", "0-inf"


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


class ProvisionedShard(LocalProvisionerCluster):
    """A provisioner cluster in its own temporary directory; a context manager that always stops it."""

    def __init__(self, toolchain: Toolchain, workdir: Path | None = None) -> None:
        # A short path under /tmp: reachable by the user, and postgres' socket path must fit in 108 bytes.
        self._own_workdir = workdir is None
        workdir = workdir or Path(tempfile.mkdtemp(prefix="mgp-dp-"))
        os.chown(workdir, toolchain.uid, toolchain.gid)
        super().__init__(toolchain, workdir)
        self._signalled: dict[str, int] = {}

    def __enter__(self) -> ProvisionedShard:
        try:
            self.init()
            self.start()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> list[str]:
        """Stop everything (leftovers are killed) and remove the work directory; returns the leftovers."""
        leftovers = self.stop()
        if self._own_workdir:
            shutil.rmtree(self.workdir, ignore_errors=True)
        return leftovers

    # --- what an adapter needs ---------------------------------------------------------------------
    @property
    def etcd_endpoint(self) -> str:
        return f"http://{self.address}:{self.config['provisioner-config']['etcd']['port']}"

    def topology(self) -> ShardTopology:
        return ShardTopology((self.etcd_endpoint,), GLOBAL_ROOT, DATABASE, TABLEGROUP, SHARD, CELLS)

    # --- poolers as processes ----------------------------------------------------------------------
    def pooler_pid(self, cell: str) -> int | None:
        """The running multipooler of `cell`, if any."""
        for pid in self.processes():
            argv = _cmdline(pid)
            if argv and Path(argv[0]).name == "multipooler" and _flag(argv, "--cell") == cell:
                return pid
        return None

    def service_id(self, cell: str) -> str:
        return str(self.config["provisioner-config"]["cells"][cell]["multipooler"]["service-id"])

    def pooler(self, cell: str) -> Pooler:
        """The cell's pooler as its record would describe it, from the provisioner's config: dialable
        even while its etcd record is gone."""
        config = self.config["provisioner-config"]
        conf, sid = config["cells"][cell]["multipooler"], config["cells"][cell]["multipooler"]["service-id"]
        root = next(c["root-path"] for c in config["topology"]["cells"] if c["name"] == cell)
        return Pooler(PoolerId(cell, sid), keys.Role.REPLICA, "localhost", conf["grpc-port"], DATABASE, TABLEGROUP,
                      SHARD, naming.pooler_key(root, cell, sid))

    def signal_pooler(self, cell: str, sig: signal.Signals) -> int:
        pid = self.pooler_pid(cell)
        if pid is None:
            raise RuntimeError(f"no multipooler runs in cell {cell}")
        os.kill(pid, sig)
        self._signalled[cell] = pid
        return pid

    def wait_pooler_gone(self, cell: str, timeout_s: float = 60.0) -> None:
        """Until the process is gone from /proc, zombie included: the provisioner's "already running"
        check (kill -0) still sees an unreaped zombie, and would not start the pooler again."""
        last = self._signalled.get(cell)
        deadline = time.monotonic() + timeout_s
        while self.pooler_pid(cell) is not None or (last is not None and Path(f"/proc/{last}").exists()):
            if time.monotonic() > deadline:
                raise RuntimeError(f"the multipooler of {cell} still runs after {timeout_s:g}s")
            time.sleep(0.1)

    def restart_missing(self) -> None:
        """`multigres cluster start` again: the provisioner starts only the services that stopped."""
        self.start()

    def multiorch_logs(self) -> list[Path]:
        return sorted((self.workdir / "logs" / "dbs" / DATABASE / "multiorch").glob("*.log"))
