"""What a real node needs from this machine, checked before anything starts: each missing piece is
named with what to do, so a node never half-starts for a reason known in advance."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

NODES = ("process", "real")  # who runs the pods: the process kubelet, or a real kubelet (node.py)

# Debian packages tools/setup.sh installs: containerd, runc, containernetworking-plugins, iptables, ipset.
COMMANDS = {"containerd": "containerd", "containerd-shim-runc-v2": "containerd", "ctr": "containerd",
            "runc": "runc", "iptables": "iptables", "iptables-restore": "iptables", "ipset": "ipset", "ip": "iproute2"}
CNI_DIR = Path("/usr/lib/cni")
CNI_PLUGINS = ("bridge", "host-local", "portmap", "loopback")
# Kernel features, as files the kernel exposes when they are built in.
KERNEL = {
    "bridge netfilter (br_netfilter)": Path("/proc/sys/net/bridge/bridge-nf-call-iptables"),
    "the memory cgroup controller": Path("/sys/fs/cgroup/memory"),
    "the pids cgroup controller": Path("/sys/fs/cgroup/pids"),
}


def problems() -> list[str]:
    """Everything that stops a real node from starting here; empty when it can start."""
    found = []
    if os.geteuid() != 0:
        found.append("it needs root (network namespaces, mounts, iptables): run as root")
    for command, package in COMMANDS.items():
        if shutil.which(command) is None:
            found.append(f"`{command}` is missing: apt-get install {package} (make setup does)")
    for plugin in CNI_PLUGINS:
        if not (CNI_DIR / plugin).is_file():
            found.append(f"CNI plugin {CNI_DIR / plugin} is missing: apt-get install containernetworking-plugins")
    for feature, path in KERNEL.items():
        if not path.exists():
            found.append(f"the kernel lacks {feature} ({path} does not exist)")
    if "overlay" not in Path("/proc/filesystems").read_text():
        found.append("the kernel lacks overlayfs (containerd's snapshotter)")
    return found


def choose(requested: str) -> tuple[str, str]:
    """(node, why) for `requested` in ("auto", *NODES): auto takes the real node when this machine can
    run one, else the process kubelet, and says why."""
    if requested != "auto":
        return requested, f"--node {requested}"
    missing = problems()
    if missing:
        return "process", "the real node cannot start here: " + "; ".join(missing)
    return "real", "this machine can run a real node"
