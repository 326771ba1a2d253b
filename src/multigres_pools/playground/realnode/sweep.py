"""Removing what a real node made: its containers, shims, mounts, pod network namespaces, bridge,
iptables rules and ipsets, cgroups and sysctls. Used by `NodeNet.release()` after an orderly stop,
and by the next `claim()` when a run died with its node up (its `node.json` is still there)."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
from pathlib import Path
from typing import Any

from .. import node_binaries, podnet

RECORD = "node.json"
CGROUP_ROOT = Path("/sys/fs/cgroup")
CGROUP_PARENT = "multigres-pools"  # the kubelet's cgroupRoot (config.kubelet_config)
CNI_NETNS_PREFIX = "cni-"  # containerd's CRI names every pod's network namespace so


def record(root: Path, info: dict[str, Any]) -> None:
    (root / RECORD).write_text(json.dumps(info))


def after_dead_run(root: Path) -> bool:
    """Clean up after a node whose run died (called with the machine lock held, so it is not running)."""
    path = root / RECORD
    if not path.exists():
        return False
    info = json.loads(path.read_text())
    clean(Path(info["state"]), info["bridge"], info.get("sysctls") or {})
    return True


def _ctr(socket: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["ctr", "--address", str(socket), "--namespace", "k8s.io", *args],
                          capture_output=True, text=True, timeout=60, check=False)


def remove_containers(socket: Path) -> None:
    """Kill and delete every container (pod sandboxes included) of a running containerd, so its kept
    root holds images only."""
    if not socket.exists():
        return
    for container in _ctr(socket, "containers", "list", "-q").stdout.split():
        _ctr(socket, "tasks", "kill", "--signal", "SIGKILL", container)
        _ctr(socket, "tasks", "delete", "--force", container)
        _ctr(socket, "containers", "delete", container)


def kill_shims(socket: Path) -> list[int]:
    """SIGKILL the runc shims of the containerd at `socket` (they outlive it, in their own sessions),
    which takes their containers with them."""
    killed = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                argv = (entry / "cmdline").read_bytes().split(b"\0")
                if argv and argv[0].endswith(b"containerd-shim-runc-v2") and str(socket).encode() in argv:
                    os.kill(int(entry.name), signal.SIGKILL)
                    killed.append(int(entry.name))
    return killed


def unmount_under(folder: Path) -> None:
    prefix = str(folder) + "/"
    mounts = [line.split()[4] for line in Path("/proc/self/mountinfo").read_text().splitlines()
              if line.split()[4].startswith(prefix)]
    for mount in sorted(mounts, key=len, reverse=True):
        subprocess.run(["umount", "-l", mount], capture_output=True, check=False)


def _flush_rules() -> None:
    """kube-proxy's and kube-router's own cleanup modes remove their chains, rules and ipsets."""
    found = node_binaries.cached()
    commands = [[str(found["kube-proxy"]), "--cleanup"]] if "kube-proxy" in found else []
    if "kube-router" in found:
        commands.append([str(found["kube-router"]), "--cleanup-config"])
    for argv in commands:
        subprocess.run(argv, capture_output=True, timeout=60, check=False)


def _remove_cgroups() -> None:
    for hierarchy in CGROUP_ROOT.iterdir() if CGROUP_ROOT.is_dir() else ():
        top = hierarchy / CGROUP_PARENT
        if not top.is_dir():
            continue
        for folder in sorted((p for p in top.rglob("*") if p.is_dir()), key=lambda p: len(p.parts), reverse=True):
            with contextlib.suppress(OSError):
                folder.rmdir()
        with contextlib.suppress(OSError):
            top.rmdir()


def clean(state: Path, bridge: str, sysctls: dict[str, str]) -> None:
    """Everything but the kept containerd root (images only: leftover container records there are
    deleted at the next start, by remove_containers)."""
    kill_shims(state / "containerd" / "containerd.sock")
    unmount_under(state)
    for netns in podnet.netns_names():
        if netns.startswith(CNI_NETNS_PREFIX):
            podnet.kill_netns_processes(netns)
            podnet.ip("netns", "del", netns, check=False)
    podnet.ip("link", "del", bridge, check=False)
    (podnet.STATE_DIR / f"{bridge.split('-', 1)[0]}.pid").unlink(missing_ok=True)
    _flush_rules()
    _remove_cgroups()
    for key, value in sysctls.items():
        with contextlib.suppress(OSError):
            (Path("/proc/sys") / key.replace(".", "/")).write_text(value)
    shutil.rmtree(state, ignore_errors=True)
    (state.parent / RECORD).unlink(missing_ok=True)
