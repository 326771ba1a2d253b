"""A registry of the process groups a test run starts, and a reaper for those of runs that died.

Every server the harness spawns runs in its own process group (start_new_session). While a run
has `enable()`d the registry (the pytest plugin in tests/conftest.py does, at session start), each
spawn is recorded in `<run dir>/<owner pid>-<owner start>.jsonl`: the group id and its leader's
start time. `reap_dead_runs()` kills the recorded groups of every owner that is no longer alive,
so a run killed with SIGKILL leaves nothing behind once the next run starts. It only ever signals
groups this registry recorded, checks that a live leader is still the recorded process (start time,
against pid reuse), and never looks at process ancestry: processes of live runs, and detached
ones nobody recorded (`cluster up`), are left alone.

The run dir is `$MULTIGRES_POOLS_RUN_DIR`, else `~/.cache/multigres-pools/run/`.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger("multigres_pools.playground")
ENV_RUN_DIR = "MULTIGRES_POOLS_RUN_DIR"
_owner: tuple[int, int] | None = None  # (pid, start time) of the run recording spawns, once enabled


def run_dir() -> Path:
    return Path(os.environ.get(ENV_RUN_DIR) or Path.home() / ".cache" / "multigres-pools" / "run")


def _stat(pid: int) -> list[str] | None:
    """The fields of /proc/<pid>/stat after the command name; None when there is no such process."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return text[text.rindex(")") + 2:].split()


def start_time(pid: int) -> int | None:
    """When `pid` started (clock ticks since boot): with the pid, it names one process for good."""
    fields = _stat(pid)
    return int(fields[19]) if fields else None


def _running(pid: int, started: int) -> bool:
    fields = _stat(pid)
    return fields is not None and fields[0] != "Z" and int(fields[19]) == started


def _group_members(pgid: int) -> list[int]:
    """Live (not zombie) processes in process group `pgid`."""
    members = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and (fields := _stat(int(entry.name))) and fields[0] != "Z" and int(fields[2]) == pgid:
            members.append(int(entry.name))
    return members


def enable(owner: int | None = None) -> Path:
    """Record every later spawn of this process under `owner` (default: this process)."""
    global _owner
    pid = owner or os.getpid()
    started = start_time(pid)
    assert started is not None, f"no process {pid}"
    _owner = (pid, started)
    directory = run_dir()
    directory.mkdir(parents=True, exist_ok=True)
    return directory / f"{pid}-{started}.jsonl"


def disable() -> None:
    global _owner
    _owner = None


def spawned(popen: subprocess.Popen[bytes] | subprocess.Popen[str], argv: list[str]) -> None:
    """Record a process started with start_new_session=True (its pid is its group id); no-op unless enabled."""
    if _owner is None:
        return
    started = start_time(popen.pid)
    if started is None:
        return  # already gone
    line = json.dumps({"pgid": popen.pid, "start": started, "argv": argv[:3]}) + "\n"
    path = run_dir() / f"{_owner[0]}-{_owner[1]}.jsonl"
    # One write of one short line with O_APPEND: threads spawning at once never interleave.
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        os.write(descriptor, line.encode())
    finally:
        os.close(descriptor)


@dataclass(frozen=True)
class Group:
    pgid: int
    start: int
    argv: tuple[str, ...]


def _groups(path: Path) -> list[Group]:
    out = []
    for line in path.read_text().splitlines():
        with contextlib.suppress(ValueError, KeyError, TypeError):
            rec = json.loads(line)
            out.append(Group(int(rec["pgid"]), int(rec["start"]), tuple(rec.get("argv") or ())))
    return out


def _kill_group(group: Group, grace: float) -> bool:
    """SIGTERM, then SIGKILL after `grace`, to a recorded group; False when it was gone or its id now
    belongs to another process (the leader's pid reused: a group id cannot be reused while any member
    of the old group lives, so members without a live leader are still ours)."""
    leader = start_time(group.pgid)
    if leader is not None and leader != group.start:
        return False
    if not _group_members(group.pgid):
        return False
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 5.0)):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(group.pgid, sig)
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline and _group_members(group.pgid):
            time.sleep(0.1)
        if not _group_members(group.pgid):
            break
    return True


def _owner_of(path: Path) -> tuple[int, int] | None:
    pid, _, started = path.stem.partition("-")
    try:
        return int(pid), int(started)
    except ValueError:
        return None


def reap(path: Path, grace: float = 5.0) -> list[Group]:
    """Kill every live group recorded in `path` and remove it; the groups that were killed."""
    killed = [g for g in _groups(path) if _kill_group(g, grace)]
    path.unlink(missing_ok=True)
    for group in killed:
        log.warning("reaped process group %d (%s) left by run %s", group.pgid, " ".join(group.argv), path.stem)
    return killed


def reap_dead_runs(directory: Path | None = None, grace: float = 5.0) -> list[Group]:
    """Reap the records of every owner that is no longer running; live runs are left alone."""
    directory = directory or run_dir()
    if not directory.is_dir():
        return []
    killed: list[Group] = []
    for path in sorted(directory.glob("*.jsonl")):
        owner = _owner_of(path)
        if owner is not None and _running(*owner):
            continue
        killed += reap(path, grace)
    return killed


def reap_own(grace: float = 5.0) -> list[Group]:
    """At the end of a run: whatever this run recorded and did not stop is killed now."""
    if _owner is None:
        return []
    path = run_dir() / f"{_owner[0]}-{_owner[1]}.jsonl"
    disable()
    return reap(path, grace) if path.exists() else []
