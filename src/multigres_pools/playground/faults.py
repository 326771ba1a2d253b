"""Data-plane faults for a MultigresStack on the process kubelet, each one undone by itself.

Every injector is a context manager: entering injects, leaving heals, also when the body raises, so
a failing test leaves no nftables rule and no stopped process behind. Kills need no healing (the
pod's own supervisor restarts what died: pgctld and multipooler restart PostgreSQL, the kubelet
restarts multiorch); leaving them returns at once.

| Kind | What | Healed by |
|---|---|---|
| postgres-kill | SIGKILL of a pod's postmaster (its backends exit with it) | the pod's pgctld/multipooler |
| multiorch-kill | SIGKILL of every multiorch of the namespace | the kubelet (container restart) |
| freeze | SIGSTOP of every process in the pod's network namespace | SIGCONT to the same processes |
| partition | nftables in the pod's netns: drop all traffic to and from the given peers | deleting the table |
| topology-isolation | nftables on this machine: drop what is sent from here to the topology | deleting |
|   | etcd (only the agent and the test connect from here; pods reach it over the bridge) | the table |
| disk-full | a file filling a pod's data volume to its last byte (the claim is a | deleting the file |
|   | filesystem of its own: `MultigresStack(sized_claims=True)`, claimfs) | |
| corrupt-volume | a pod's pg_control deleted, then its postmaster SIGKILLed: every start fails | replacing |
|   | on that volume | the volume |
| slow-disk | a pod's processes may write to its data volume's block device (a sized | the processes back |
|   | claim's loop device) only `iops` times a second (slowdisk: blkio throttle) | to the root cgroup |

Tables are named `mgp_fault_<pid>_<n>` (pid: this test process), so `sweep_tables()` can remove
those of a run that was killed before it could heal (tables in a pod's netns go with the pod).

Not here, and why (docs/reliability.md says the same): a clock offset for one pod cannot be made:
time namespaces offset CLOCK_MONOTONIC and CLOCK_BOOTTIME only, never the wall clock PostgreSQL and
Multigres timestamp with.
"""

from __future__ import annotations

import contextlib
import errno
import ipaddress
import itertools
import json
import os
import random
import signal
import subprocess
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from ansible_collections.multigres.pools.plugins.module_utils.render import layout

from . import claimfs, slowdisk
from .multigres_stack import MultigresStack
from .podnet import netns_pids

TABLE_PREFIX = "mgp_fault_"
FILLER = ".mgp-fault-disk-full"  # in the volume's root, beside the pooler's own directories
# PostgreSQL's control file, relative to the data volume's root (layout.PGDATA is <volume>/pg_data).
CONTROL_FILE = f"{Path(layout.PGDATA).relative_to(layout.POOLER_DIR)}/global/pg_control"
_numbers = itertools.count(1)


class FaultError(RuntimeError):
    pass


# --- where things are ---------------------------------------------------------------------------------
def pod_netns(stack: MultigresStack, pod_ip: str) -> str:
    """The network namespace of the pod at `pod_ip` (podnet names it after the address's host part)."""
    bridge = stack.kubelet.bridge if stack.kubelet is not None else None
    if bridge is None:
        raise FaultError("faults need the process kubelet (per-pod network namespaces)")
    index = int(ipaddress.IPv4Address(pod_ip)) - int(bridge.subnet.network_address)
    return f"{bridge.instance}-p{index}"


def _exe(pid: int) -> str:
    with contextlib.suppress(OSError):
        return os.path.basename(os.readlink(f"/proc/{pid}/exe"))
    return ""


def _ppid(pid: int) -> int:
    with contextlib.suppress(OSError, IndexError, ValueError):
        # The fields after the command's closing parenthesis: state, ppid, ...
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    return 0


def postmaster_pid(netns: str) -> int | None:
    """The postgres process of the pod whose parent is not a postgres (its backends' parent)."""
    for pid in netns_pids(netns):
        if _exe(pid) == "postgres" and _exe(_ppid(pid)) != "postgres":
            return pid
    return None


def stopped_pids(netns: str) -> list[int]:
    """Processes in `netns` stopped by a signal (state T)."""
    stopped = []
    for pid in netns_pids(netns):
        with contextlib.suppress(OSError, IndexError):
            if Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "T":
                stopped.append(pid)
    return stopped


# --- nftables -------------------------------------------------------------------------------------------
def _nft(script: str, netns: str | None = None) -> None:
    argv = [*(("ip", "netns", "exec", netns) if netns else ()), "nft", "-f", "-"]
    out = subprocess.run(argv, input=script, capture_output=True, text=True, check=False)
    if out.returncode != 0:
        raise FaultError(f"`{' '.join(argv)}` failed: {out.stderr.strip()}\n{script}")


def tables(netns: str | None = None) -> list[str]:
    """Our fault tables (`inet mgp_fault_*`) in `netns`, or on this machine."""
    argv = [*(("ip", "netns", "exec", netns) if netns else ()), "nft", "-j", "list", "tables"]
    out = subprocess.run(argv, capture_output=True, text=True, check=False)
    if out.returncode != 0:
        return []
    return [t["table"]["name"] for t in json.loads(out.stdout or "{}").get("nftables", [])
            if "table" in t and t["table"]["name"].startswith(TABLE_PREFIX)]


@contextlib.contextmanager
def _table(chains: str, netns: str | None = None) -> Iterator[str]:
    name = f"{TABLE_PREFIX}{os.getpid()}_{next(_numbers)}"
    _nft(f"table inet {name} {{\n{chains}\n}}\n", netns)
    try:
        yield name
    finally:
        with contextlib.suppress(FaultError):  # the pod (and its netns) may be gone: nothing left then
            _nft(f"delete table inet {name}\n", netns)


def sweep_tables() -> list[str]:
    """Delete the fault tables on this machine left by test processes that no longer run."""
    removed = []
    for name in tables():
        pid = int(name[len(TABLE_PREFIX):].split("_")[0])
        if not Path(f"/proc/{pid}").exists():
            with contextlib.suppress(FaultError):
                _nft(f"delete table inet {name}\n")
                removed.append(name)
    return removed


# --- the injectors ------------------------------------------------------------------------------------
@contextlib.contextmanager
def postgres_kill(stack: MultigresStack, pod_ip: str) -> Iterator[int]:
    netns = pod_netns(stack, pod_ip)
    pid = postmaster_pid(netns)
    if pid is None:
        raise FaultError(f"no postmaster in {netns} ({pod_ip})")
    os.kill(pid, signal.SIGKILL)
    yield pid


def _own_filesystem(path: Path) -> Path:
    if not os.path.ismount(path):
        raise FaultError(f"{path} is a plain directory, not a filesystem of its own that can fill up or slow "
                         "down: start the stack with sized_claims=True")
    return path


@contextlib.contextmanager
def corrupt_volume(stack: MultigresStack, pod: str, pod_ip: str) -> Iterator[int]:
    """Delete `pod`'s pg_control and SIGKILL its postmaster: PostgreSQL cannot start on that volume
    again (as a volume whose data is lost); yields the postmaster's pid. Nothing to heal here: only a
    new volume brings the pod back."""
    control = stack.claim_path(pod, layout.VOL_DATA) / CONTROL_FILE
    if not control.is_file():
        raise FaultError(f"{control} is not there: {pod} has no PostgreSQL data to corrupt")
    control.unlink()
    with postgres_kill(stack, pod_ip) as pid:
        yield pid


@contextlib.contextmanager
def disk_full(stack: MultigresStack, pod: str) -> Iterator[int]:
    """Fill `pod`'s data volume to its last byte; yields how many bytes the filler took."""
    with disk_full_at(stack.claim_path(pod, layout.VOL_DATA)) as taken:
        yield taken


@contextlib.contextmanager
def disk_full_at(path: Path) -> Iterator[int]:
    filler = _own_filesystem(path) / FILLER
    try:
        with filler.open("wb") as f:
            size = 0
            for chunk in (1 << 20, 4096):  # whole MiBs, then the last pages
                while True:
                    try:
                        os.posix_fallocate(f.fileno(), size, chunk)
                    except OSError as exc:
                        if exc.errno != errno.ENOSPC:
                            raise
                        break
                    size += chunk
        yield size
    finally:
        filler.unlink(missing_ok=True)


@contextlib.contextmanager
def slow_disk(stack: MultigresStack, pod: str, pod_ip: str, iops: int) -> Iterator[str]:
    """`pod`'s processes write to its data volume at most `iops` times a second; yields what was slowed."""
    path = _own_filesystem(stack.claim_path(pod, layout.VOL_DATA))
    with slowdisk.throttled(pod_netns(stack, pod_ip), claimfs.device(path), iops) as what:
        yield what


@contextlib.contextmanager
def multiorch_kill(stack: MultigresStack) -> Iterator[list[int]]:
    pids = stack.orchestrator_pids()
    if not pids:
        raise FaultError("no multiorch process runs")
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    yield pids


@contextlib.contextmanager
def freeze(stack: MultigresStack, pod_ip: str) -> Iterator[list[int]]:
    with freeze_netns(pod_netns(stack, pod_ip)) as pids:
        yield pids


@contextlib.contextmanager
def freeze_netns(netns: str) -> Iterator[list[int]]:
    """SIGSTOP every process in `netns`; on leaving, SIGCONT what was stopped and anything stopped
    since (a container restarted by a failed probe is new and runs; a leftover would be a bug of ours)."""
    pids = netns_pids(netns)
    try:
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGSTOP)
        yield pids
    finally:
        for pid in {*pids, *stopped_pids(netns)}:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCONT)


@contextlib.contextmanager
def partition(stack: MultigresStack, pod_ip: str, peers: Sequence[str]) -> Iterator[str]:
    with partition_netns(pod_netns(stack, pod_ip), peers) as name:
        yield name


@contextlib.contextmanager
def partition_netns(netns: str, peers: Sequence[str]) -> Iterator[str]:
    """What runs in `netns` can neither send to nor hear from `peers` (established connections
    included: a dropped packet, not a reset, as a network partition would)."""
    if not peers:
        raise FaultError("a partition needs peers")
    addresses = ", ".join(peers)
    chains = (f"chain input {{ type filter hook input priority -10; ip saddr {{ {addresses} }} drop; }}\n"
              f"chain output {{ type filter hook output priority -10; ip daddr {{ {addresses} }} drop; }}")
    with _table(chains, netns) as name:
        yield name


@contextlib.contextmanager
def partition_group(namespaces: Sequence[str], peers: Sequence[str]) -> Iterator[list[str]]:
    """partition_netns for each of `namespaces` at once; whatever was put in place is removed on
    leaving, also when putting the rest in place failed."""
    with contextlib.ExitStack() as cuts:
        yield [cuts.enter_context(partition_netns(netns, peers)) for netns in namespaces]


@contextlib.contextmanager
def cell_partition(stack: MultigresStack, cell: str) -> Iterator[str]:
    """Every pod of `cell` (pool pods, multiorch, multigateway) cut off from the pods of the other
    cells, as when the link between two zones fails; both sides still reach the topology etcd and
    the API server, which run on this machine. A pod created during the cut is not cut off."""
    by_cell = stack.cell_addresses()
    inside = by_cell.get(cell, [])
    outside = [ip for other, ips in by_cell.items() if other != cell for ip in ips]
    if not inside or not outside:
        raise FaultError(f"a partition of cell {cell!r} needs pods in it and in another cell: {by_cell}")
    with partition_group([pod_netns(stack, ip) for ip in inside], outside):
        yield f"{len(inside)} pods of {cell} cut off from {len(outside)} of {', '.join(sorted(set(by_cell) - {cell}))}"


@contextlib.contextmanager
def topology_isolation(stack: MultigresStack) -> Iterator[str]:
    """Connections made from this machine's own network namespace to the topology etcd are dropped:
    the agent's (pods connect over the bridge and are not affected)."""
    host, port = stack.topo_address.rsplit(":", 1)
    chains = (f"chain output {{ type filter hook output priority -10; "
              f"ip daddr {host} tcp dport {port} drop; }}")
    with _table(chains) as name:
        yield name


# --- the schedule ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Planned:
    kind: str
    pause_s: float  # before it
    hold_s: float  # how long it stays injected (kills: 0)


def plan(seed: int, kinds: Sequence[str], count: int, instant: Sequence[str] = (),
         pause_s: tuple[float, float] = (1.0, 5.0), hold_s: tuple[float, float] = (2.0, 8.0)) -> list[Planned]:
    """`count` faults drawn from `seed`: every kind equally often (one more for some when `count` is
    not a multiple), in a shuffled order, with random pauses and holds; `instant` kinds hold 0 s."""
    rng = random.Random(seed)
    order: list[str] = []
    for _ in range(-(-count // len(kinds))):  # rounds of every kind once, each round shuffled
        order += rng.sample(list(kinds), len(kinds))
    return [Planned(kind, round(rng.uniform(*pause_s), 1), 0.0 if kind in instant else round(rng.uniform(*hold_s), 1))
            for kind in order[:count]]


def choose_kinds(spec: str, known: Sequence[str]) -> tuple[str, ...]:
    """The kinds a comma-separated `spec` names (FAULT_KINDS), all of `known` when it names none;
    ValueError naming every unknown one."""
    chosen = tuple(k.strip() for k in spec.split(",") if k.strip()) or tuple(known)
    unknown = [k for k in chosen if k not in known]
    if unknown:
        raise ValueError(f"FAULT_KINDS: {', '.join(unknown)} not among {', '.join(known)}")
    return chosen


def leftovers(stack: MultigresStack) -> list[str]:
    """What a healed fault must not leave: our nftables tables (here and in every pod's netns),
    stopped processes in any pod, a disk-full filler in any claim, and a throttle cgroup."""
    found = [f"table {t}" for t in tables() if t.startswith(f"{TABLE_PREFIX}{os.getpid()}_")]
    found += [f"cgroup {g}" for g in slowdisk.groups(os.getpid())]
    if stack.kubelet is not None:
        found += [f"filler {f}" for f in stack.kubelet.pvc_path(stack.namespace, "*").parent.glob(f"*/{FILLER}")]
    bridge = stack.kubelet.bridge if stack.kubelet is not None else None
    if bridge is not None:
        for netns in _pod_namespaces(bridge.instance):
            found += [f"table {t} in {netns}" for t in tables(netns)]
            found += [f"stopped pid {pid} in {netns}" for pid in stopped_pids(netns)]
    return found


def _pod_namespaces(instance: str) -> list[str]:
    return sorted(p.name for p in Path("/run/netns").glob(f"{instance}-p*"))
