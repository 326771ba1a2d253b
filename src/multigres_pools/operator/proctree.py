"""Processes and the processes they started, read from /proc (Linux)."""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Iterable
from pathlib import Path

PROC = Path("/proc")


def children() -> dict[int, list[int]]:
    """Parent pid -> its child pids, for every process visible now."""
    out: dict[int, list[int]] = {}
    for entry in PROC.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            # The command name may hold spaces and parentheses: the fields start after the last ')'.
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue  # gone meanwhile
        out.setdefault(ppid, []).append(int(entry.name))
    return out


def tree(roots: Iterable[int], tree_of: dict[int, list[int]] | None = None) -> list[int]:
    """`roots` and all their descendants, parents before children."""
    links = children() if tree_of is None else tree_of
    out = list(roots)
    for pid in out:
        out.extend(links.get(pid, []))
    return out


def cmdline(pid: int) -> str:
    try:
        return (PROC / str(pid) / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def kill(pids: Iterable[int], sig: int = signal.SIGKILL) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, sig)
