"""Cluster DNS without a DNS server: the hosts file each pod sees as /etc/hosts.

Names, as cluster DNS answers them (no kube-proxy runs, so a Service name maps straight to its ready
endpoint pod IPs):
- the pod itself: `<ip> <hostname>.<subdomain>.<ns>.svc.<domain> <hostname>` first, as the kubelet
  writes it (Go's reverse lookup of the pod IP then yields the FQDN, which Multigres publishes);
- every Service: `<svc>.<ns>.svc.<domain>`, `<svc>.<ns>.svc`, `<svc>.<ns>` (and `<svc>` in the same
  namespace, which a search path would give);
- every endpoint pod of a headless Service whose subdomain is that Service: `<host>.<svc>.<ns>.svc.<domain>`,
  `<host>.<svc>.<ns>.svc`, `<host>.<svc>.<ns>`, and `<host>.<svc>` in the same namespace.
Pure functions over pod and Service dicts.
"""

from __future__ import annotations

from collections.abc import Iterable

from ansible_collections.multigres.pools.plugins.module_utils.core.manifest import Manifest

LOCAL = "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n"


def hostname(pod: Manifest) -> str:
    return str((pod.get("spec") or {}).get("hostname") or pod["metadata"]["name"])[:63]


def pod_fqdn(pod: Manifest, domain: str) -> str | None:
    subdomain = (pod.get("spec") or {}).get("subdomain")
    if not subdomain:
        return None
    return f"{hostname(pod)}.{subdomain}.{pod['metadata']['namespace']}.svc.{domain}"


def _selected(service: Manifest, pod: Manifest) -> bool:
    selector = (service.get("spec") or {}).get("selector") or {}
    labels = pod["metadata"].get("labels") or {}
    return bool(selector) and pod["metadata"]["namespace"] == service["metadata"]["namespace"] \
        and all(labels.get(k) == v for k, v in selector.items())


def _ready(pod: Manifest) -> bool:
    return any(c.get("type") == "Ready" and c.get("status") == "True"
               for c in (pod.get("status") or {}).get("conditions") or [])


def _terminal(pod: Manifest) -> bool:
    return (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")


def endpoints(service: Manifest, pods: Iterable[Manifest]) -> list[Manifest]:
    """The pods cluster DNS answers for, as the EndpointSlice controller lists them and CoreDNS reads
    them (only endpoints marked ready): selected, not terminal, with an IP; then either the Service
    publishes not-ready addresses, which marks every such pod ready, a terminating one too, or the pod
    is Ready and not terminating."""
    publish = bool((service.get("spec") or {}).get("publishNotReadyAddresses"))
    return [p for p in pods if _selected(service, p) and (p.get("status") or {}).get("podIP")
            and not _terminal(p) and (publish or (_ready(p) and not p["metadata"].get("deletionTimestamp")))]


def _names(base: str, ns: str, domain: str, same_namespace: bool) -> list[str]:
    names = [f"{base}.{ns}.svc.{domain}", f"{base}.{ns}.svc", f"{base}.{ns}"]
    return [*names, base] if same_namespace else names


def entries(pods: Iterable[Manifest], services: Iterable[Manifest], domain: str,
            namespace: str | None) -> list[tuple[str, list[str]]]:
    """(ip, names) for every Service and headless-Service pod; short forms for `namespace`."""
    pods = list(pods)
    out: list[tuple[str, list[str]]] = []
    for svc in sorted(services, key=lambda s: (s["metadata"]["namespace"], s["metadata"]["name"])):
        name, ns = svc["metadata"]["name"], svc["metadata"]["namespace"]
        same = ns == namespace
        headless = (svc.get("spec") or {}).get("clusterIP") == "None"
        for pod in sorted(endpoints(svc, pods), key=lambda p: p["metadata"]["name"]):
            ip = pod["status"]["podIP"]
            if headless and (pod.get("spec") or {}).get("subdomain") == name:
                out.append((ip, _names(f"{hostname(pod)}.{name}", ns, domain, same)))
            out.append((ip, _names(name, ns, domain, same)))
    return out


def hosts_file(pod: Manifest, pod_ip: str, pods: Iterable[Manifest], services: Iterable[Manifest],
               domain: str) -> str:
    own = [n for n in (pod_fqdn(pod, domain), hostname(pod)) if n]
    lines = [LOCAL, f"{pod_ip}\t{' '.join(own)}\n"]
    lines += [f"{ip}\t{' '.join(names)}\n" for ip, names in
              entries(pods, services, domain, pod["metadata"]["namespace"])]
    return "# Kubernetes-managed hosts file (process kubelet).\n" + "".join(lines)


def resolve(name: str, pods: Iterable[Manifest], services: Iterable[Manifest], domain: str) -> list[str]:
    """Every address `name` (a fully qualified or `<x>.<ns>[.svc]` form) has, from the root namespace:
    what cluster DNS answers (a pod's own hosts file also names the pod itself; hosts_file)."""
    ips: list[str] = []
    for ip, names in entries(pods, services, domain, None):
        if name in names and ip not in ips:
            ips.append(ip)
    return ips
