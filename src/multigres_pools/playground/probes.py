"""Container probes as the kubelet runs them: httpGet and tcpSocket from the root namespace to the pod
IP, exec inside the container. Scheduling (initialDelay, period, thresholds) lives in `Prober`."""

from __future__ import annotations

import http.client
import socket
import ssl
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ansible_collections.multigres.pools.plugins.module_utils.core.manifest import Manifest

KINDS = ("httpGet", "tcpSocket", "exec")
Exec = Callable[[Sequence[str], float], int]  # argv, timeout -> exit code (raises TimeoutError)


def unsupported(probe: Manifest | None) -> str | None:
    """The handler kind of `probe` the process kubelet cannot run, if any."""
    if not probe:
        return None
    kinds = [k for k in probe if k in (*KINDS, "grpc")]
    if kinds and kinds[0] == "grpc":
        return "grpc"
    return None if kinds else "(no handler)"


def resolve_port(port: int | str, container: Manifest) -> int:
    if isinstance(port, int) or str(port).isdigit():
        return int(port)
    for entry in container.get("ports") or []:
        if entry.get("name") == port:
            return int(entry["containerPort"])
    raise ValueError(f"port name {port!r} is not declared in container {container.get('name')!r}")


def http_get(handler: Manifest, pod_ip: str, container: Manifest, timeout: float) -> tuple[bool, str]:
    host = handler.get("host") or pod_ip
    port = resolve_port(handler["port"], container)
    if handler.get("scheme", "HTTP").upper() == "HTTPS":
        context = ssl.create_default_context()
        context.check_hostname, context.verify_mode = False, ssl.CERT_NONE  # the kubelet does not verify either
        conn: http.client.HTTPConnection = http.client.HTTPSConnection(host, port, timeout=timeout, context=context)
    else:
        conn = http.client.HTTPConnection(host, port, timeout=timeout)
    headers = {h["name"]: h["value"] for h in handler.get("httpHeaders") or []}
    headers.setdefault("User-Agent", "kube-probe/process-kubelet")
    try:
        conn.request("GET", handler.get("path") or "/", headers=headers)
        status = conn.getresponse().status
    except OSError as err:
        return False, f"Get {host}:{port}: {err}"
    finally:
        conn.close()
    return 200 <= status < 400, f"HTTP probe failed with statuscode: {status}"


def tcp_socket(handler: Manifest, pod_ip: str, container: Manifest, timeout: float) -> tuple[bool, str]:
    host = handler.get("host") or pod_ip
    port = resolve_port(handler["port"], container)
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True, ""
    except OSError as err:
        return False, f"dial tcp {host}:{port}: {err}"


def run(probe: Manifest, pod_ip: str, container: Manifest, exec_in: Exec) -> tuple[bool, str]:
    """One probe attempt: (success, message)."""
    timeout = float(probe.get("timeoutSeconds") or 1)
    if "httpGet" in probe:
        return http_get(probe["httpGet"], pod_ip, container, timeout)
    if "tcpSocket" in probe:
        return tcp_socket(probe["tcpSocket"], pod_ip, container, timeout)
    try:
        code = exec_in(probe["exec"]["command"], timeout)
    except TimeoutError:
        return False, f"command timed out after {timeout:g}s"
    return code == 0, f"command exited with {code}"


@dataclass
class Prober:
    """One probe of one container run: when it is due and what its thresholds say."""

    probe: Manifest
    started_at: float
    next_at: float = 0.0
    successes: int = 0
    failures: int = 0
    last_message: str = ""

    def __post_init__(self) -> None:
        self.next_at = self.started_at + float(self.probe.get("initialDelaySeconds") or 0)

    @property
    def period(self) -> float:
        return float(self.probe.get("periodSeconds") or 10)

    def due(self, now: float) -> bool:
        return now >= self.next_at

    def record(self, ok: bool, message: str, now: float) -> None:
        self.next_at = now + self.period
        if ok:
            self.successes, self.failures = self.successes + 1, 0
        else:
            self.successes, self.failures = 0, self.failures + 1
            self.last_message = message

    @property
    def succeeded(self) -> bool:
        return self.successes >= int(self.probe.get("successThreshold") or 1)

    @property
    def failed(self) -> bool:
        return self.failures >= int(self.probe.get("failureThreshold") or 3)
