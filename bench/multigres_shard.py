"""A 3-replica shard on real Multigres v0.1.0: time to serving and its idle CPU and memory, beside the
anchor measured in the same run, Multigres' own local provisioner (`multigres cluster start`) with
the same 1 primary + 2 synchronous standbys.

    python -m bench.multigres_shard [--idle-seconds 20]

"Serving" is the same test for both: one PostgreSQL that is not in recovery and streams
synchronously to two standbys. Idle CPU is the share of one core used by the data-plane processes
(everything run as the toolchain user) over the idle window; memory is their summed PSS, so pages
shared between processes count once.
"""

from __future__ import annotations

import argparse
import os
import pwd
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from bench.context import print_context
from multigres_pools.playground import toolchain as toolchain_module
from multigres_pools.playground.local_provisioner import LocalProvisionerCluster
from multigres_pools.playground.localstack import wait_for
from multigres_pools.playground.multigres_stack import MultigresStack

TICKS = os.sysconf("SC_CLK_TCK")


@dataclass
class Figures:
    serving_s: float
    idle_cpu_pct: float
    pss_mib: float
    processes: int


def _user_pids(uid: int) -> list[int]:
    pids = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if os.stat(f"/proc/{entry}").st_uid == uid:
                    pids.append(int(entry))
            except OSError:
                continue
    return pids


def _cpu_ticks(pid: int) -> int:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0
    return int(fields[11]) + int(fields[12])  # utime + stime


def _pss_kib(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def idle(uid: int, seconds: float) -> tuple[float, float, int]:
    """(% of one core, PSS MiB, processes) of everything `uid` runs, over `seconds`."""
    pids = _user_pids(uid)
    before = {pid: _cpu_ticks(pid) for pid in pids}
    time.sleep(seconds)
    used = sum(_cpu_ticks(pid) - ticks for pid, ticks in before.items() if _cpu_ticks(pid) >= ticks)
    pss = sum(_pss_kib(pid) for pid in _user_pids(uid))
    return 100.0 * used / TICKS / seconds, pss / 1024, len(pids)


def ours(idle_seconds: float) -> Figures:
    tool = toolchain_module.ensure(progress=lambda _line: None)
    stack = MultigresStack(Path(tempfile.mkdtemp(prefix="mgp-bench-")), progress=lambda _line: None).start()
    try:
        started = time.monotonic()
        stack.apply_shard(stack.sample_shard(replicas=3))
        stack.wait_serving("play", replicas=3, timeout=600)
        serving = time.monotonic() - started
        cpu, pss, count = idle(tool.uid, idle_seconds)
        return Figures(serving, cpu, pss, count)
    finally:
        stack.stop()


def anchor(idle_seconds: float) -> Figures:
    tool = toolchain_module.ensure(progress=lambda _line: None)
    workdir = Path(tempfile.mkdtemp(prefix="mgp-lp-"))
    os.chown(workdir, tool.uid, tool.gid)
    cluster = LocalProvisionerCluster(tool, workdir)
    try:
        cluster.init()
        started = time.monotonic()
        cluster.start()
        ports = cluster.postgres_ports()

        def serving() -> bool:
            for port in ports.values():
                if cluster.psql(port, "SELECT pg_is_in_recovery()") == "f":
                    rows = cluster.psql(port, "SELECT count(*) FROM pg_stat_replication "
                                              "WHERE sync_state IN ('sync', 'quorum')")
                    return rows == "2"
            return False

        wait_for(serving, 600, "the provisioner's primary with two synchronous standbys", interval=0.5)
        elapsed = time.monotonic() - started
        cpu, pss, count = idle(tool.uid, idle_seconds)
        return Figures(elapsed, cpu, pss, count)
    finally:
        cluster.stop()
        shutil.rmtree(workdir, ignore_errors=True)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--idle-seconds", type=float, default=20)
    args = p.parse_args()
    if os.geteuid() != 0:
        raise SystemExit("bench.multigres_shard: run as root (pods get network namespaces)")
    user = toolchain_module.ensure(progress=lambda _line: None).user
    print(f"3-replica shard on Multigres v0.1.0 (data-plane processes run as {user!r}, "
          f"uid {pwd.getpwnam(user).pw_uid})")
    base = anchor(args.idle_seconds)
    mine = ours(args.idle_seconds)
    rows = [("up to serving (s)", base.serving_s, mine.serving_s),
            ("idle CPU (% of a core)", base.idle_cpu_pct, mine.idle_cpu_pct),
            ("PSS (MiB)", base.pss_mib, mine.pss_mib),
            ("processes", float(base.processes), float(mine.processes))]
    print_context()
    print(f"{'':26}{'local provisioner':>20}{'multigres.pools':>18}{'ratio':>8}")
    for name, a, b in rows:
        print(f"{name:26}{a:20.1f}{b:18.1f}{(b / a if a else float('nan')):8.2f}")


if __name__ == "__main__":
    main()
