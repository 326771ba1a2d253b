"""How many shards to reconcile at once, from the container's CPU limit (never the node's CPU count).

A controller sized by the node's CPU count runs 128 playbooks at once on a 128-core node and gets
OOM-killed under a 4 GiB limit (ansible-operator-plugins#222); the cgroup limit is what the pod
may actually use.
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


def concurrency_for(cores: float | None, runs_per_core: float = RUNS_PER_CORE) -> int:
    """Concurrent reconciles for a limit of `cores` (None = unlimited), between 1 and MAX_CONCURRENCY."""
    if cores is None:
        return UNLIMITED_DEFAULT
    return max(1, min(MAX_CONCURRENCY, math.ceil(cores * runs_per_core)))


def default_concurrency(root: Path = CGROUP_ROOT) -> int:
    return concurrency_for(cpu_limit(root))
