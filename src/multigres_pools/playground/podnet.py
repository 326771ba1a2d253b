"""Pod networking for the process kubelet: one Linux bridge per kubelet instance, one network
namespace + veth pair per pod, addresses from a private /24 that no other interface or route on
this machine uses.

The bridge holds the subnet's .1 in the root namespace, so processes there (tests, the agent, a
topology etcd bound to that address) reach every pod and every pod reaches the bridge address.
Nothing is routed or NATed beyond the subnet: a pod has no default route.

Every name we create starts with the instance id (`mgk` + 5 hex digits): bridge `<id>-br`, host-side
veth `<id>-<n>`, netns `<id>-p<n>`. An instance records its owner pid in `/run/multigres-pools/kubelet/`
so `sweep()` removes only what a dead instance left behind, never a live one's.
"""

from __future__ import annotations

import contextlib
import fcntl
import ipaddress
import json
import os
import random
import signal
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

PREFIX = "mgk"
STATE_DIR = Path("/run/multigres-pools/kubelet")
NETNS_DIR = Path("/run/netns")
# 10.0/16 and 10.96/16 stay clear: common Kubernetes defaults (our apiserver's service range is 10.96.0.0/24).
_SECOND_OCTETS = range(200, 250)


class NetError(RuntimeError):
    pass


def ip(*args: str, netns: str | None = None, check: bool = True) -> subprocess.CompletedProcess[str]:
    argv = ["ip", *(("-n", netns) if netns else ()), *args]
    out = subprocess.run(argv, capture_output=True, text=True, check=False)
    if check and out.returncode != 0:
        raise NetError(f"`{' '.join(argv)}` failed: {out.stderr.strip()}")
    return out


def ip_json(*args: str) -> list[dict[str, Any]]:
    return cast(list[dict[str, Any]], json.loads(ip("-j", *args).stdout or "[]"))  # `ip -j` prints a list


def new_instance_id() -> str:
    return f"{PREFIX}{random.getrandbits(20):05x}"


@contextlib.contextmanager
def _machine_lock() -> Iterator[None]:
    """Serialises subnet choice across kubelet instances on this machine (check, then claim)."""
    STATE_DIR.mkdir(parents=True, exist_ok=True)
    with (STATE_DIR / ".lock").open("w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _networks_in_use() -> list[ipaddress.IPv4Network]:
    nets: list[ipaddress.IPv4Network] = []
    for link in ip_json("addr"):
        for addr in link.get("addr_info", []):
            if addr.get("family") == "inet":
                nets.append(ipaddress.IPv4Network(f"{addr['local']}/{addr['prefixlen']}", strict=False))
    for route in ip_json("route", "show", "table", "all"):
        dst = route.get("dst", "")
        if dst and dst != "default" and ":" not in dst:
            with contextlib.suppress(ValueError):
                nets.append(ipaddress.IPv4Network(dst if "/" in dst else f"{dst}/32", strict=False))
    return nets


def pick_subnet() -> ipaddress.IPv4Network:
    """A random unused 10.x.y.0/24 (x in 200..249)."""
    used = _networks_in_use()
    candidates = [ipaddress.IPv4Network(f"10.{x}.{y}.0/24") for x in _SECOND_OCTETS for y in range(256)]
    random.shuffle(candidates)
    for net in candidates:
        if not any(net.overlaps(other) for other in used):
            return net
    raise NetError("no unused 10.x.y.0/24 subnet left for the process kubelet's pod network")


@dataclass(frozen=True)
class Bridge:
    instance: str
    name: str
    subnet: ipaddress.IPv4Network

    @property
    def host_ip(self) -> str:
        return str(self.subnet.network_address + 1)


def create_bridge(instance: str) -> Bridge:
    """The instance's bridge with the subnet's .1; records this process as the owner first, so a
    crash between here and `delete_bridge` leaves something `sweep()` recognises."""
    with _machine_lock():
        (STATE_DIR / f"{instance}.pid").write_text(str(os.getpid()))
        subnet = pick_subnet()
        bridge = Bridge(instance, f"{instance}-br", subnet)
        ip("link", "add", bridge.name, "type", "bridge")
        try:
            ip("addr", "add", f"{bridge.host_ip}/{subnet.prefixlen}", "dev", bridge.name)
            ip("link", "set", bridge.name, "up")
        except NetError:
            ip("link", "del", bridge.name, check=False)
            raise
    return bridge


def delete_bridge(bridge: Bridge) -> None:
    ip("link", "del", bridge.name, check=False)
    (STATE_DIR / f"{bridge.instance}.pid").unlink(missing_ok=True)


@dataclass(frozen=True)
class PodNet:
    netns: str
    veth: str
    ip: str


def create_pod_net(bridge: Bridge, index: int) -> PodNet:
    """netns `<id>-p<index>` with `lo` up and `eth0` at subnet host `index` (2..254), its peer on the bridge."""
    address = str(bridge.subnet.network_address + index)
    net = PodNet(f"{bridge.instance}-p{index}", f"{bridge.instance}-{index}", address)
    ip("netns", "add", net.netns)
    try:
        ip("link", "add", net.veth, "type", "veth", "peer", "name", "eth0", "netns", net.netns)
        ip("link", "set", net.veth, "master", bridge.name)
        ip("link", "set", net.veth, "up")
        ip("link", "set", "lo", "up", netns=net.netns)
        ip("addr", "add", f"{address}/{bridge.subnet.prefixlen}", "dev", "eth0", netns=net.netns)
        ip("link", "set", "eth0", "up", netns=net.netns)
    except NetError:
        delete_pod_net(net)
        raise
    return net


def delete_pod_net(net: PodNet) -> None:
    kill_netns_processes(net.netns)
    ip("link", "del", net.veth, check=False)  # also gone with the netns; explicit for a half-made one
    ip("netns", "del", net.netns, check=False)


def netns_pids(netns: str) -> list[int]:
    """Every process inside `netns`."""
    try:
        target = (NETNS_DIR / netns).stat().st_ino
    except OSError:
        return []
    pids = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            with contextlib.suppress(OSError):
                if os.stat(f"/proc/{entry}/ns/net").st_ino == target:
                    pids.append(int(entry))
    return pids


def kill_netns_processes(netns: str) -> list[int]:
    """SIGKILL every process still inside `netns` (what a crashed run leaves behind)."""
    killed = []
    for pid in netns_pids(netns):
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
            killed.append(pid)
    return killed


def owner_alive(instance: str) -> bool:
    try:
        pid = int((STATE_DIR / f"{instance}.pid").read_text())
    except (OSError, ValueError):
        return False
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _instance_of(name: str, prefix: str) -> str | None:
    head = name.split("-", 1)[0]
    return head if head.startswith(prefix) and head.startswith(PREFIX) else None


def netns_names() -> list[str]:
    return [entry["name"] for entry in ip_json("netns", "list")]


def link_names() -> list[str]:
    return [entry["ifname"] for entry in ip_json("link")]


def sweep(prefix: str = PREFIX) -> list[str]:
    """Removes the network namespaces (killing their processes) and links of every kubelet instance
    whose id starts with `prefix` and whose owner process is gone. Returns what it removed."""
    removed = []
    dead: set[str] = set()
    for netns in netns_names():
        instance = _instance_of(netns, prefix)
        if instance and not owner_alive(instance):
            kill_netns_processes(netns)
            ip("netns", "del", netns, check=False)
            removed.append(f"netns/{netns}")
            dead.add(instance)
    for link in link_names():
        instance = _instance_of(link, prefix)
        if instance and not owner_alive(instance):
            ip("link", "del", link, check=False)
            removed.append(f"link/{link}")
            dead.add(instance)
    if STATE_DIR.is_dir():
        for record in STATE_DIR.glob(f"{prefix}*.pid"):
            if not owner_alive(record.stem):
                record.unlink(missing_ok=True)
    return removed
