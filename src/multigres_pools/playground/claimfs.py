"""A filesystem of its own for each PersistentVolumeClaim the process kubelet serves, sized to the
claim's request, so a volume can fill up as a real one does (ENOSPC) and a fault can fill it.

A tmpfs mounted at the claim's host directory before any container binds it: the containers see it
through their bind mounts, it holds `size=` bytes at most, and it lives as long as the kubelet that
mounted it (stop() unmounts it: the claim's data is in memory, fit for tests, not for keeping).
Its source names the kubelet instance (`mgp-claim-<instance>`), so `sweep()` can unmount what a
kubelet whose owner died left mounted.
"""

from __future__ import annotations

import errno
import os
import threading
from collections.abc import Callable
from pathlib import Path

from ansible_collections.multigres.pools.plugins.module_utils.core.manifest import Manifest
from ansible_collections.multigres.pools.plugins.module_utils.spec import quantity

from .podexec import MNT_DETACH, MS_NODEV, MS_NOSUID, mount, umount

SOURCE_PREFIX = "mgp-claim-"
_mounting = threading.Lock()  # pods sharing a claim start on threads of their own: one mount each


class ClaimSizeError(ValueError):
    pass


def requested_bytes(pvc: Manifest) -> int:
    """The claim's spec.resources.requests.storage, in bytes."""
    raw = (((pvc.get("spec") or {}).get("resources") or {}).get("requests") or {}).get("storage")
    size = quantity.try_parse(raw) if raw is not None else None
    if size is None or size <= 0:
        name = (pvc.get("metadata") or {}).get("name", "?")
        raise ClaimSizeError(f"persistentvolumeclaim {name!r}: spec.resources.requests.storage {raw!r} "
                             "is not a positive quantity; a sized claim needs one")
    return int(size)


def mount_sized(path: Path, size: int, uid: int, gid: int, instance: str) -> bool:
    """Mount a tmpfs of `size` bytes at `path` unless something is mounted there already; True if
    mounted now. The root of the filesystem belongs to uid:gid (what fsGroup gives the pod)."""
    with _mounting:
        if os.path.ismount(path):
            return False
        mount(f"{SOURCE_PREFIX}{instance}", str(path), "tmpfs", MS_NOSUID | MS_NODEV,
              f"size={size},mode=0750,uid={uid},gid={gid}")
        return True


def mounts(source_prefix: str = SOURCE_PREFIX) -> list[tuple[str, str]]:
    """(source, mount point) of every claim filesystem on this machine, deepest first."""
    found = []
    with open("/proc/self/mountinfo") as info:
        for line in info:
            fields = line.split()
            after = fields.index("-")
            source, point = fields[after + 2], fields[4].replace("\\040", " ")
            if fields[after + 1] == "tmpfs" and source.startswith(source_prefix):
                found.append((source, point))
    return sorted(found, key=lambda f: f[1].count("/"), reverse=True)


def unmount(point: str) -> None:
    """Detach the mount at `point`; one already gone (another sweep got there first) is no error."""
    try:
        umount(point, MNT_DETACH)
    except OSError as exc:
        if exc.errno not in (errno.EINVAL, errno.ENOENT):
            raise


def unmount_instance(instance: str) -> list[str]:
    """Unmount every claim filesystem the kubelet `instance` mounted; returns their mount points."""
    points = [p for s, p in mounts() if s == f"{SOURCE_PREFIX}{instance}"]
    for point in points:
        unmount(point)
    return points


def sweep(owner_alive: Callable[[str], bool]) -> list[str]:
    """Unmount the claim filesystems of every kubelet instance whose owner is gone."""
    removed = []
    for source, point in mounts():
        if not owner_alive(source.removeprefix(SOURCE_PREFIX)):
            unmount(point)
            removed.append(point)
    return removed
