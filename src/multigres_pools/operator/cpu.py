"""How many shards to reconcile at once, from the container's CPU limit (never the node's CPU count),
capped by its memory limit.

A controller sized by the node's CPU count runs 128 playbooks at once on a 128-core node and gets
OOM-killed under a 4 GiB limit (ansible-operator-plugins#222); the cgroup limits are what the pod
may actually use. Each run is an ansible-playbook process plus the module's (~120 MiB together,
measured by bench/operator_loop.py), so the memory limit caps the CPU-derived number.
"""

from __future__ import annotations

import math
from pathlib import Path

CGROUP_ROOT = Path("/sys/fs/cgroup")
# Each reconcile is mostly a Python process starting up (CPU) plus API round-trips (waiting), so a
# core can keep about two runs busy.
RUNS_PER_CORE = 2.0
# Used when the container has no CPU limit: a safe, small number rather than the node's cores.
UNLIMITED_DEFAULT = 4
MAX_CONCURRENCY = 16
MIB = 1024 * 1024
OPERATOR_BASE_MEMORY = 128 * MIB  # the operator process itself (~70 MiB measured) plus headroom
RUN_MEMORY = 128 * MIB  # one ansible-playbook process and its module process


def parse_cpu_max(text: str) -> float | None:
    """Cores allowed by a cgroup v2 `cpu.max` ("<quota> <period>" or "max <period>"); None if unlimited."""
    fields = text.split()
    if not fields:
        raise ValueError("cpu.max is empty")
    if fields[0] == "max":
        return None
    quota = int(fields[0])
    period = int(fields[1]) if len(fields) > 1 else 100_000
    if quota <= 0 or period <= 0:
        raise ValueError(f"cpu.max has a non-positive quota or period: {text.strip()!r}")
    return quota / period


def parse_cfs(quota_text: str, period_text: str) -> float | None:
    """Cores allowed by cgroup v1 `cpu.cfs_quota_us` / `cpu.cfs_period_us`; None if unlimited (-1)."""
    quota = int(quota_text.strip())
    period = int(period_text.strip())
    if quota < 0:
        return None
    if quota == 0 or period <= 0:
        raise ValueError(f"cfs quota {quota} / period {period} is not a usable limit")
    return quota / period


def cpu_limit(root: Path = CGROUP_ROOT) -> float | None:
    """The CPU limit in cores from cgroup v2, else cgroup v1; None when unlimited or unreadable."""
    v2 = root / "cpu.max"
    if v2.is_file():
        return parse_cpu_max(v2.read_text())
    for v1 in (root / "cpu", root / "cpu,cpuacct"):
        quota, period = v1 / "cpu.cfs_quota_us", v1 / "cpu.cfs_period_us"
        if quota.is_file() and period.is_file():
            return parse_cfs(quota.read_text(), period.read_text())
    return None


def parse_memory_max(text: str) -> int | None:
    """Bytes allowed by cgroup v2 `memory.max` or v1 `memory.limit_in_bytes`; None if unlimited."""
    value = text.strip()
    if value == "max":
        return None
    limit = int(value)
    # cgroup v1 reports "unlimited" as a huge page-aligned number.
    return None if limit >= 1 << 60 else limit


def memory_limit(root: Path = CGROUP_ROOT) -> int | None:
    for path in (root / "memory.max", root / "memory" / "memory.limit_in_bytes"):
        if path.is_file():
            return parse_memory_max(path.read_text())
    return None


def concurrency_for(cores: float | None, memory: int | None = None, runs_per_core: float = RUNS_PER_CORE) -> int:
    """Concurrent reconciles for a limit of `cores` and `memory` bytes (None = unlimited), at least 1."""
    by_cpu = UNLIMITED_DEFAULT if cores is None else math.ceil(cores * runs_per_core)
    by_memory = MAX_CONCURRENCY if memory is None else (memory - OPERATOR_BASE_MEMORY) // RUN_MEMORY
    return max(1, min(MAX_CONCURRENCY, by_cpu, by_memory))


def default_concurrency(root: Path = CGROUP_ROOT) -> int:
    return concurrency_for(cpu_limit(root), memory_limit(root))
