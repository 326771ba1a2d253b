"""The line every bench prints beside its figures: when, at which commit, on how busy a machine.

A figure without them cannot be compared with another run or placed in docs/performance.md, which
records all three; they are read at print time, never typed in."""

from __future__ import annotations

import datetime
import os
import subprocess
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
