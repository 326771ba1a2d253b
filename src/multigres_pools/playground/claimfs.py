"""A filesystem of its own for each PersistentVolumeClaim the process kubelet serves, sized to the
claim's request, so a volume can fill up as a real one does (ENOSPC) and a fault can fill it or slow
its disk down.

An ext4 filesystem in a sparse image file on a loop device, mounted at the claim's host directory
before any container binds it: the containers see it through their bind mounts, it holds its
request at most, its writes and fsyncs go to a block device of its own (which a blkio throttle can
slow: faults.slow_disk), and it lives as long as the kubelet that mounted it (stop() unmounts it and
deletes the image: fit for tests, not for keeping). The image's name carries the kubelet instance
(`mgp-claim-<instance>-<digest>.img` in IMAGES), so `sweep()` can unmount what a kubelet whose owner
died left mounted.
"""

from __future__ import annotations

import errno
import hashlib
import os
import subprocess
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path

from ansible_collections.multigres.pools.plugins.module_utils.core.manifest import Manifest
from ansible_collections.multigres.pools.plugins.module_utils.spec import quantity

from .podexec import MNT_DETACH, umount

SOURCE_PREFIX = "mgp-claim-"
IMAGES = Path(tempfile.gettempdir()) / "mgp-claimfs"
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
    """Make and mount an ext4 filesystem of `size` bytes at `path` unless something is mounted there
    already; True if mounted now. Its root belongs to uid:gid (what fsGroup gives the pod)."""
    with _mounting:
        if os.path.ismount(path):
            return False
        IMAGES.mkdir(mode=0o700, exist_ok=True)
        image = IMAGES / f"{SOURCE_PREFIX}{instance}-{hashlib.sha256(str(path).encode()).hexdigest()[:12]}.img"
        with open(image, "wb") as out:
            out.truncate(size)
        try:
            _run("mkfs.ext4", "-q", "-F", "-m", "0", "-E",
                 f"lazy_itable_init=1,lazy_journal_init=1,root_owner={uid}:{gid}", str(image))
            _run("mount", "-t", "ext4", "-o", "loop,nosuid,nodev", str(image), str(path))  # the loop autoclears
        except ClaimfsError:
            image.unlink(missing_ok=True)
            raise
        os.chmod(path, 0o750)
        return True


class ClaimfsError(RuntimeError):
    pass


def _run(*argv: str) -> None:
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise ClaimfsError(f"{' '.join(argv)}: exit {done.returncode}: {done.stderr.strip()}")


def _backing_file(device: str) -> str:
    try:
        return Path(f"/sys/block/{os.path.basename(device)}/loop/backing_file").read_text().strip()
    except OSError:
        return ""


def _tag(image: str) -> str:
    """`mgp-claim-<instance>` from an image path ("" for a file that is no claim image)."""
    name = os.path.basename(image)
    if os.path.dirname(image) != str(IMAGES) or not name.startswith(SOURCE_PREFIX) or not name.endswith(".img"):
        return ""
    return name.removesuffix(".img").rsplit("-", 1)[0]


def _claim_mounts() -> list[tuple[str, str, str]]:
    """(tag, mount point, image) of every claim filesystem on this machine, deepest first."""
    found = []
    with open("/proc/self/mountinfo") as info:
        for line in info:
            fields = line.split()
            after = fields.index("-")
            source, point = fields[after + 2], fields[4].replace("\\040", " ")
            image = _backing_file(source) if source.startswith("/dev/loop") else ""
            if _tag(image):
                found.append((_tag(image), point, image))
    return sorted(found, key=lambda f: f[1].count("/"), reverse=True)


def mounts(source_prefix: str = SOURCE_PREFIX) -> list[tuple[str, str]]:
    """(tag, mount point) of every claim filesystem whose tag starts with `source_prefix`, deepest first."""
    return [(tag, point) for tag, point, _ in _claim_mounts() if tag.startswith(source_prefix)]


def device(path: Path) -> str:
    """`major:minor` of the block device the claim filesystem at `path` lives on."""
    dev = os.stat(path).st_dev
    return f"{os.major(dev)}:{os.minor(dev)}"


def unmount(point: str) -> None:
    """Detach the mount at `point` and delete its image (the loop device goes with the last user);
    one already gone (another sweep got there first) is no error."""
    images = [image for _, p, image in _claim_mounts() if p == point]
    try:
        umount(point, MNT_DETACH)
    except OSError as exc:
        if exc.errno not in (errno.EINVAL, errno.ENOENT):
            raise
    for image in images:
        Path(image).unlink(missing_ok=True)


def unmount_instance(instance: str) -> list[str]:
    """Unmount every claim filesystem the kubelet `instance` mounted; returns their mount points."""
    points = [p for s, p in mounts() if s == f"{SOURCE_PREFIX}{instance}"]
    for point in points:
        unmount(point)
    return points


def sweep(owner_alive: Callable[[str], bool]) -> list[str]:
    """Unmount the claim filesystems of every kubelet instance whose owner is gone, and delete the
    images such a kubelet made but never mounted."""
    removed = []
    for tag, point in mounts():
        if not owner_alive(tag.removeprefix(SOURCE_PREFIX)):
            unmount(point)
            removed.append(point)
    for image in IMAGES.glob(f"{SOURCE_PREFIX}*.img") if IMAGES.is_dir() else ():
        if not owner_alive(_tag(str(image)).removeprefix(SOURCE_PREFIX)):
            image.unlink(missing_ok=True)
    return removed
