"""Starts one container process for the process kubelet. Standard library only: it runs as a script.

The kubelet runs, as root:
    nsenter --net=/run/netns/<pod> -- unshare --mount --uts --propagation private -- python -I podexec.py SPEC
SPEC is a JSON file (read, then deleted: it holds the container's secrets) with argv, path, env,
uid, gid, hostname, workingDir, root and mounts ([{source, target, readOnly, file}], shallowest first).

This process sets the pod hostname, unshares a PID namespace and forks the container's pid 1. The
child builds the container's filesystem view and execs the command as the unprivileged user; this
parent stays outside, forwards the kubelet's signals to the child and exits with its status (128+n
for a signal), so the kubelet's Popen behaves like the container. When pid 1 exits the kernel kills
the rest of its namespace: postgres daemonises with setsid, so a process group would not catch it.

The filesystem view: a tmpfs at `root` with every top-level host entry bound in (recursively), then
chroot into it. A mountPath whose parent does not exist is created on tmpfs, never on the host: the
deepest existing host directory on the way is "shadowed" (a tmpfs over it, its entries bound back in),
so /certs/pgbackrest, /var/lib/pooler or /etc/pgctld appear only inside this mount namespace. Volume
sources are opened before any mount, so they stay reachable when a mount hides their host path.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import signal
import socket
import stat
import sys
from typing import Any

MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_BIND, MS_REC = 32, 4096, 16384
MNT_DETACH = 2
CLONE_NEWPID = 0x20000000
PR_SET_PDEATHSIG, PR_SET_NO_NEW_PRIVS = 1, 38
FORWARDED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2)

_libc = ctypes.CDLL(None, use_errno=True)


def _check(rc: int, what: str) -> None:
    if rc != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def mount(source: str | None, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    def enc(s: str | None) -> bytes | None:
        return s.encode() if s is not None else None

    _check(_libc.mount(enc(source), enc(target), enc(fstype), ctypes.c_ulong(flags), enc(data)),
           f"mount {source or fstype} on {target}")


def umount(target: str, flags: int = 0) -> None:
    _check(_libc.umount2(target.encode(), flags), f"umount {target}")


def _bind_entry(source: str, target: str) -> None:
    """Bind `source` (any inode but a symlink, which is copied) at `target`, creating a stub for it."""
    st = os.lstat(source)
    if stat.S_ISLNK(st.st_mode):
        os.symlink(os.readlink(source), target)
        return
    if stat.S_ISDIR(st.st_mode):
        os.mkdir(target)
    else:
        open(target, "a").close()
    mount(source, target, None, MS_BIND | MS_REC)


def _shadow(directory: str) -> None:
    """A tmpfs over `directory` that still shows its entries, so new entries can be made on it."""
    st = os.stat(directory)
    fd = os.open(directory, os.O_PATH | os.O_DIRECTORY)
    try:
        entries = os.listdir(f"/proc/self/fd/{fd}")
        mount("tmpfs", directory, "tmpfs", MS_NOSUID,
              f"mode={stat.S_IMODE(st.st_mode):o},uid={st.st_uid},gid={st.st_gid}")
        for entry in entries:
            _bind_entry(f"/proc/self/fd/{fd}/{entry}", os.path.join(directory, entry))
    finally:
        os.close(fd)


def _ensure(path: str, is_file: bool, owned: set[str]) -> str:
    """`path` inside the view, creating what is missing on our own tmpfs/volumes only."""
    current = "/"
    parts = [p for p in path.split("/") if p]
    for i, part in enumerate(parts):
        nxt = os.path.join(current, part)
        if os.path.lexists(nxt):
            current = os.path.realpath(nxt)
            continue
        if current not in owned:
            _shadow(current)
            owned.add(current)
        if is_file and i == len(parts) - 1:
            open(nxt, "a").close()
        else:
            os.mkdir(nxt, 0o755)
        owned.add(nxt)
        current = nxt
    return current


def build_view(spec: dict[str, Any]) -> None:
    # Open every source first: a later mount may hide its host path (a volume at /tmp, say).
    sources = [os.open(m["source"], os.O_PATH) for m in spec["mounts"]]
    root = spec["root"]
    mount("tmpfs", root, "tmpfs", MS_NOSUID, "mode=0755")
    for entry in sorted(os.listdir("/")):
        target = os.path.join(root, entry)
        if entry == "proc":
            os.mkdir(target)
        else:
            _bind_entry(os.path.join("/", entry), target)
    os.chroot(root)
    os.chdir("/")
    mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)  # this PID namespace's view
    owned = {"/"}
    for entry, fd in zip(spec["mounts"], sources, strict=True):
        target = _ensure(entry["target"], entry["file"], owned)
        mount(f"/proc/self/fd/{fd}", target, None, MS_BIND | MS_REC)
        if entry["readOnly"]:
            mount(None, target, None, MS_REMOUNT | MS_BIND | MS_RDONLY)
        if not entry["file"]:
            owned.add(target)
        os.close(fd)


def run_container(spec: dict[str, Any]) -> None:
    build_view(spec)
    uid, gid = spec["uid"], spec["gid"]
    if uid == 0:
        raise SystemExit("podexec: refusing to run a container as root")
    os.setgroups([gid])
    os.setresgid(gid, gid, gid)
    os.setresuid(uid, uid, uid)
    # Cleared by the credential change above, so set here: if our parent dies, so does the container.
    _libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    _libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)  # allowPrivilegeEscalation: false
    os.chdir(spec.get("workingDir") or "/")
    signal.pthread_sigmask(signal.SIG_SETMASK, set())
    os.execve(spec["path"], spec["argv"], spec["env"])


def main(spec_path: str) -> int:
    with open(spec_path) as handle:
        spec = json.load(handle)
    os.unlink(spec_path)
    socket.sethostname(spec["hostname"])
    _check(_libc.unshare(CLONE_NEWPID), "unshare(CLONE_NEWPID)")
    signal.pthread_sigmask(signal.SIG_BLOCK, FORWARDED)  # until the child's pid is known
    child = os.fork()
    if child == 0:
        try:
            run_container(spec)
        except BaseException as err:  # report anything, then fail like a failed exec
            print(f"podexec: cannot start {spec['argv'][0]!r}: {err}", file=sys.stderr, flush=True)
        os._exit(128)
    def forward(signum: int, _frame: object) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(child, signum)

    for sig in FORWARDED:
        signal.signal(sig, forward)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, FORWARDED)
    _, status = os.waitpid(child, 0)
    code = os.waitstatus_to_exitcode(status)
    return code if code >= 0 else 128 - code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
