"""What cluster DNS answers for a pod FQDN, for callers outside the cluster network.

v0.1.0 poolers register `<pod>.<headless service>.<namespace>.svc.<domain>`; in-cluster that name
resolves, from a laptop or the playground it does not, so the pod's IP is read from the API server.
"""

from __future__ import annotations

import functools
import socket

from ansible_collections.multigres.pools.plugins.module_utils.kube.client import KubeClient


def pod_address(kube: KubeClient, hostname: str) -> str:
    """The pod's IP for a pod FQDN; any other name (or a pod without an IP yet) is returned as it is."""
    parts = hostname.split(".")
    if len(parts) >= 3:
        pod = kube.get("v1", "Pod", parts[2], parts[0])
        ip = ((pod or {}).get("status") or {}).get("podIP")
        if ip:
            return str(ip)
    return hostname


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
