"""A slow disk for the processes of one pod: a cgroup-v1 blkio throttle on its claim's block device.

A claim filesystem lives on a loop device of its own (claimfs), so a throttle on that device slows
exactly that volume. Every process in the pod's network namespace moves into a blkio cgroup that
allows `iops` write operations per second on the device; what they fork later (PostgreSQL backends)
is born there. The writes and fsyncs they issue themselves queue behind the throttle, so a COMMIT's
WAL flush takes as long as a slow disk's would (cgroup v1 throttles I/O submitted by the task; the
kernel's background writeback is not slowed, as on a real disk whose cache still absorbs writes).
Leaving moves every process of the cgroup back to the root and removes it.

Cgroups are named `mgp-fault-slow-<pid>-<n>` (pid: this test process), so `sweep()` can undo those of
a run that was killed before it could heal.
"""

from __future__ import annotations

import contextlib
import errno
import itertools
import os
import time
from collections.abc import Iterator
from pathlib import Path

from .podnet import netns_pids

BLKIO = Path("/sys/fs/cgroup/blkio")
PREFIX = "mgp-fault-slow-"
_numbers = itertools.count(1)


class SlowDiskError(RuntimeError):
    pass


def groups(owner: int | None = None) -> list[Path]:
    """Our throttle cgroups (of test process `owner`, or of any)."""
    if not BLKIO.is_dir():
        return []
    prefix = f"{PREFIX}{owner}-" if owner is not None else PREFIX
    return sorted(p for p in BLKIO.iterdir() if p.is_dir() and p.name.startswith(prefix))


def _move(pid: int, group: Path) -> None:
    try:
        (group / "cgroup.procs").write_text(str(pid))
    except OSError as exc:
        if exc.errno != errno.ESRCH:  # it ended meanwhile
            raise


def _members(group: Path) -> list[int]:
    with contextlib.suppress(OSError):
        return [int(p) for p in (group / "cgroup.procs").read_text().split()]
    return []


def release(group: Path) -> None:
    """Every process of `group` back to the root cgroup, then the group removed."""
    for _ in range(50):  # a process forking while we move its siblings lands in the group late
        for pid in _members(group):
            _move(pid, BLKIO)
        try:
            group.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError as exc:
            if exc.errno != errno.EBUSY:
                raise
        time.sleep(0.02)
    raise SlowDiskError(f"{group} still has processes: {_members(group)}")


@contextlib.contextmanager
def throttled(netns: str, device: str, iops: int) -> Iterator[str]:
    """Every process in `netns` may issue `iops` writes per second to `device` (major:minor)."""
    if not (BLKIO / "blkio.throttle.write_iops_device").exists():
        raise SlowDiskError(f"no cgroup-v1 blkio throttle at {BLKIO} (a cgroup-v2 machine would need io.max)")
    pids = netns_pids(netns)
    if not pids:
        raise SlowDiskError(f"no process in {netns}")
    group = BLKIO / f"{PREFIX}{os.getpid()}-{next(_numbers)}"
    group.mkdir()
    try:
        (group / "blkio.throttle.write_iops_device").write_text(f"{device} {iops}")
        for pid in pids:
            _move(pid, group)
        yield f"{len(pids)} processes at {iops} write IOPS on {device}"
    finally:
        release(group)


def sweep() -> list[str]:
    """Release the throttle cgroups of test processes that are gone."""
    removed = []
    for group in groups():
        owner = group.name.removeprefix(PREFIX).split("-", 1)[0]
        if owner.isdigit() and not Path(f"/proc/{owner}").exists():
            release(group)
            removed.append(group.name)
    return removed
