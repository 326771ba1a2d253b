"""Removing what a real node made: its containers, shims, mounts, pod network namespaces, bridge,
iptables rules and ipsets, cgroups and sysctls. Used by `NodeNet.release()` after an orderly stop,
and by the next `claim()` when a run died with its node up (its `node.json` is still there)."""

from __future__ import annotations

import contextlib
import fcntl
import json
import shlex
import shutil
import subprocess
from pathlib import Path
from typing import Any

from .. import node_binaries, podnet
from ..containerd import kill_shims, unmount_under

STATE_ROOT = Path("/run/multigres-pools/realnode")
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


def sweep_dead_run() -> bool:
    """Remove what a real node of a dead run left (shims, mounts, netns, bridge, iptables rules,
    sysctls), unless a live run holds the node; True when there was something. The test session
    calls it at start, after the reaper killed the dead run's processes."""
    if not (STATE_ROOT / RECORD).exists():
        return False
    with (STATE_ROOT / "lock").open("a+") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False  # a live node: not ours to touch
        return after_dead_run(STATE_ROOT)


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


# kube-router's NetworkPolicy chains and ipsets (its own --cleanup-config in v2.1.0 leaves them, then
# crashes in its service-proxy cleanup), and the kubelet's KUBE-FIREWALL, which kube-proxy's cleanup
# leaves: all removed here by name.
ROUTER_CHAINS = ("KUBE-ROUTER-", "KUBE-POD-FW-", "KUBE-NWPLCY-", "KUBE-FIREWALL")
ROUTER_SETS = ("KUBE-SRC-", "KUBE-DST-")


def _flush_router_rules() -> None:
    for tool in ("iptables", "ip6tables"):  # the kubelet makes KUBE-FIREWALL in both families
        _flush_chains(tool)
    sets = subprocess.run(["ipset", "list", "-n"], capture_output=True, text=True, check=False).stdout.split()
    for name in sets:
        if name.startswith(ROUTER_SETS):
            subprocess.run(["ipset", "destroy", name], capture_output=True, check=False)


def _flush_chains(tool: str) -> None:
    rules = subprocess.run([tool, "-t", "filter", "-S"], capture_output=True, text=True, check=False).stdout
    ours = {line.split()[1] for line in rules.splitlines()
            if line.startswith("-N ") and line.split()[1].startswith(ROUTER_CHAINS)}
    for line in rules.splitlines():
        words = shlex.split(line)
        if words[:1] == ["-A"] and words[1] not in ours and "-j" in words and words[words.index("-j") + 1] in ours:
            subprocess.run([tool, "-t", "filter", "-D", *words[1:]], capture_output=True, check=False)
    for flag in ("-F", "-X"):
        for chain in ours:
            subprocess.run([tool, "-t", "filter", flag, chain], capture_output=True, check=False)


def _flush_rules() -> None:
    """kube-proxy's own cleanup mode removes its chains (all tables); kube-router's are removed by name."""
    found = node_binaries.cached()
    if "kube-proxy" in found:
        subprocess.run([str(found["kube-proxy"]), "--cleanup"], capture_output=True, timeout=60, check=False)
    _flush_router_rules()


def sysctl(key: str, value: str | None = None) -> str:
    """Read a kernel setting (`net.ipv4.ip_forward`), after setting it to `value` if given."""
    path = Path("/proc/sys") / key.replace(".", "/")
    if value is not None:
        path.write_text(value)
    return path.read_text().strip()


def make_cgroups() -> None:
    """The kubelet's cgroupRoot in every v1 hierarchy (it refuses to start without); a new cpuset
    cgroup has no CPUs or memory nodes until given its parent's."""
    for hierarchy in CGROUP_ROOT.iterdir() if CGROUP_ROOT.is_dir() else ():
        if not hierarchy.is_dir() or hierarchy.is_symlink():
            continue
        top = hierarchy / CGROUP_PARENT
        top.mkdir(exist_ok=True)
        for name in ("cpuset.cpus", "cpuset.mems"):
            if (hierarchy / name).exists():
                (top / name).write_text((hierarchy / name).read_text())


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
    kill_shims(str(state / "containerd" / "containerd.sock"))
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
            sysctl(key, value)
    shutil.rmtree(state, ignore_errors=True)
    (state.parent / RECORD).unlink(missing_ok=True)
