"""The line every bench prints beside its figures: when, at which commit, on how busy a machine.

A figure without them cannot be compared with another run or placed in docs/performance.md, which
records all three; they are read at print time, never typed in."""

from __future__ import annotations

import datetime
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def commit() -> str:
    """The checkout's short commit, or "unknown" outside a git checkout (or without git)."""
    try:
        done = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True,
                              text=True, timeout=10, check=True)
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return done.stdout.strip() or "unknown"


def load_average() -> str:
    try:
        return ", ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:  # the platform cannot tell
        return "unknown"


def context_line() -> str:
    now = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
    return f"date: {now}; commit: {commit()}; load average (1, 5, 15 min): {load_average()}"


def print_context() -> None:
    print(context_line(), flush=True)


@contextmanager
def scratch(prefix: str, keep: bool = False) -> Iterator[Path]:
    """A working directory for a bench's stack: removed when the bench ends well (a stack's volumes,
    logs and backups take gigabytes) unless `keep`, kept and named when it fails, for its logs. The
    stack's processes are recorded for playground/reaper.py, which `make test` and the playground run
    at their start."""
    from multigres_pools.playground import reaper

    reaper.enable()  # a bench killed before it stops its stack leaves it to the next run's reaper
    path = Path(tempfile.mkdtemp(prefix=prefix))
    try:
        yield path
    except BaseException:
        print(f"kept for its logs: {path}", flush=True)
        raise
    if keep:
        print(f"kept as asked: {path} (the stack is stopped; its pods' logs are under kubelet/logs)", flush=True)
        return
    shutil.rmtree(path, ignore_errors=True)
