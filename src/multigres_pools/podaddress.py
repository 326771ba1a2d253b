"""What cluster DNS answers for a pod FQDN, without asking cluster DNS.

v0.1.0 poolers register `<pod>.<headless service>.<namespace>.svc.<domain>`. From a laptop or the
playground that name does not resolve, so the pod's IP is read from the API server (`pod_address`).
In the cluster it resolves, but a replaced pod keeps its name and gets a new IP, and a gRPC channel
re-resolves a name at most every 30 s (its DNS resolver's floor), on top of the DNS caches: the
agent would not reach a successor for up to half a minute. So the agent dials the IP of the pod it
has just listed (`PodAddresses`), and the name only for a pod it has not seen with an IP.
"""

from __future__ import annotations

import functools
import ipaddress
import socket
import threading
from collections.abc import Iterable

from ansible_collections.multigres.pools.plugins.module_utils.core.manifest import Manifest
from ansible_collections.multigres.pools.plugins.module_utils.kube.client import KubeClient
from ansible_collections.multigres.pools.plugins.module_utils.state import facts


def pod_key(hostname: str) -> tuple[str, str] | None:
    """(namespace, pod) a pod FQDN names (`<pod>.<service>.<namespace>...`); None for any other name."""
    try:
        ipaddress.ip_address(hostname)
        return None  # an address already (multiorch and the gateways register their pod IP)
    except ValueError:
        parts = hostname.split(".")
        return (parts[2], parts[0]) if len(parts) >= 3 and all(parts[:3]) else None


def pod_ip(pod: Manifest | None) -> str:
    return str(((pod or {}).get("status") or {}).get("podIP") or "")


def pod_address(kube: KubeClient, hostname: str) -> str:
    """The pod's IP for a pod FQDN; any other name (or a pod without an IP yet) is returned as it is."""
    key = pod_key(hostname)
    if key is not None:
        ip = pod_ip(kube.get("v1", "Pod", *key))
        if ip:
            return ip
    return hostname


class PodAddresses:
    """The IPs of the pods the agent listed last, per group (a shard: its namespace and topology), for
    `dial_host`.

    Each observation replaces its group's pods, so a successor's new IP is dialed from the pass that
    first lists it, and a pod no group lists any more is forgotten."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._groups: dict[object, dict[tuple[str, str], str]] = {}
        self._ips: dict[tuple[str, str], str] = {}

    def note(self, group: object, pods: Iterable[Manifest]) -> None:
        """The pods one group has now (every pod of the shard, terminating ones included)."""
        seen = {(str(facts.meta(p).get("namespace", "")), facts.name(p)): ip for p in pods if (ip := pod_ip(p))}
        with self._lock:
            before = self._groups.get(group, {})
            self._groups[group] = seen
            for key in before.keys() - seen.keys():
                if self._ips.get(key) == before[key]:
                    del self._ips[key]
            self._ips.update(seen)

    def dial_host(self, hostname: str) -> str:
        """The IP of the pod a pod FQDN names, if a group listed it with one; else the name itself."""
        key = pod_key(hostname)
        with self._lock:
            return self._ips.get(key, hostname) if key is not None else hostname


@functools.lru_cache(maxsize=256)  # a resolver that times out is asked once per name, not per call
def resolvable(hostname: str) -> bool:
    try:
        socket.getaddrinfo(hostname, None)
    except (OSError, UnicodeError):
        return False
    return True


def pod_address_unless_resolvable(kube: KubeClient, hostname: str) -> str:
    """The name as it is where cluster DNS answers it (in the cluster), else the pod's IP: what a
    laptop or the playground needs, chosen per name so one command works in both places."""
    return hostname if resolvable(hostname) else pod_address(kube, hostname)
