"""Who may read /metrics, and over what, for the operator's and the agent's HTTP servers.

- The address: `--health-addr` (operator) / `--http` (agent) default to 127.0.0.1:8080. The install
  bundle binds 0.0.0.0 because the kubelet's probes and Prometheus reach the pod's address.
- `--metrics-auth kubernetes`: /metrics needs a bearer token the API server authenticates
  (TokenReview) for a user allowed `get` on the non-resource URL /metrics (SubjectAccessReview), the
  scheme kube-rbac-proxy and controller-runtime use: Prometheus sends its ServiceAccount token and is
  bound to the bundle's `multigres-pools-metrics-reader` ClusterRole. Verdicts are cached for
  REVIEW_TTL seconds so a scrape costs no API request. `none`: anyone who reaches the port.
  `auto` (default): `kubernetes` unless the address is a loopback one.
- `--metrics-tls-cert/--metrics-tls-key`: the server speaks HTTPS (probes included; set the probes'
  scheme to HTTPS). The files are read again when they change, e.g. when cert-manager renews them.
- /healthz and /readyz never need a token: the kubelet has none.
"""

from __future__ import annotations

import argparse
import ipaddress
import os
import ssl
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from ansible_collections.multigres.pools.plugins.module_utils.core import keys
from ansible_collections.multigres.pools.plugins.module_utils.kube.client import KubeClient

DEFAULT_ADDR = "127.0.0.1:8080"
METRICS_PATH = "/metrics"
AUTH_MODES = ("auto", "kubernetes", "none")
REVIEW_TTL = 60.0
_CACHE_LIMIT = 1024


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--metrics-auth", choices=AUTH_MODES, default=os.environ.get("METRICS_AUTH", "auto"),
                   help="who may read /metrics: kubernetes (a bearer token allowed `get` on the non-resource URL "
                        "/metrics, checked with TokenReview and SubjectAccessReview), none, or auto (kubernetes "
                        "unless the address is loopback) [env METRICS_AUTH]")
    p.add_argument("--metrics-tls-cert", default=os.environ.get("METRICS_TLS_CERT"),
                   help="serve HTTPS with this certificate (PEM, re-read when it changes) [env METRICS_TLS_CERT]")
    p.add_argument("--metrics-tls-key", default=os.environ.get("METRICS_TLS_KEY"),
                   help="the key of --metrics-tls-cert [env METRICS_TLS_KEY]")


def split_addr(addr: str, flag: str) -> tuple[str, int]:
    """host:port (IPv6 in brackets); a clear error naming `flag` otherwise."""
    host, sep, port = addr.rpartition(":")
    if not sep or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"{flag}: {addr!r} is not host:port")
    return (host.strip("[]") or "0.0.0.0"), int(port)


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_arguments(args: argparse.Namespace, flag: str, addr: str) -> str | None:
    """The problem with the metrics flags, naming the flag, or None."""
    try:
        split_addr(addr, flag)
    except ValueError as exc:
        return str(exc)
    if bool(args.metrics_tls_cert) != bool(args.metrics_tls_key):
        return "--metrics-tls-cert and --metrics-tls-key: give both or neither"
    for name in ("metrics_tls_cert", "metrics_tls_key"):
        path = getattr(args, name)
        if path and not os.path.isfile(path):
            return f"--{name.replace('_', '-')}: {path} is not a readable file"
    return None


Review = Callable[[str], tuple[bool | None, str]]  # token -> (None: not authenticated | allowed, who/why)


def kubernetes_review(kube: KubeClient) -> Review:
    """TokenReview, then SubjectAccessReview for `get /metrics`, through the engine's KubeClient."""

    def review(token: str) -> tuple[bool | None, str]:
        tr = kube.create({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "metadata": {},
                          "spec": {"token": token}}, field_manager=keys.FIELD_MANAGER)
        status = tr.get("status") or {}
        user = status.get("user") or {}
        if not status.get("authenticated") or not user:
            return None, status.get("error") or "token not authenticated"
        spec = {k: user[k] for k in ("groups", "uid", "extra") if user.get(k)}
        sar = kube.create({"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview", "metadata": {},
                           "spec": {**spec, "user": user.get("username"),
                                    "nonResourceAttributes": {"path": METRICS_PATH, "verb": "get"}}},
                          field_manager=keys.FIELD_MANAGER)
        allowed = bool((sar.get("status") or {}).get("allowed"))
        return allowed, f"{user.get('username')} {'may' if allowed else 'may not'} get {METRICS_PATH}"
    return review


@dataclass
class Gate:
    """Decides a /metrics request from its Authorization header: (HTTP status, reason)."""

    review: Review | None  # None: open
    ttl: float = REVIEW_TTL
    _cache: dict[str, tuple[float, tuple[bool | None, str]]] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def check(self, authorization: str | None) -> tuple[int, str]:
        if self.review is None:
            return 200, "open"
        scheme, _, token = (authorization or "").partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            return 401, "a bearer token is required"
        verdict = self._verdict(token.strip())
        if verdict[0] is None:
            return 401, verdict[1]
        return (200 if verdict[0] else 403), verdict[1]

    def _verdict(self, token: str) -> tuple[bool | None, str]:
        review = self.review
        if review is None:
            return True, "open"
        now = time.monotonic()
        with self._lock:
            hit = self._cache.get(token)
            if hit and hit[0] > now:
                return hit[1]
        try:
            verdict = review(token)
        except Exception as exc:  # the API server is unreachable: refuse, do not cache
            return False, f"token review failed: {exc}"
        with self._lock:
            if len(self._cache) >= _CACHE_LIMIT:
                self._cache.clear()
            self._cache[token] = (now + self.ttl, verdict)
        return verdict


class ReloadingTLS:
    """A server SSLContext whose certificate is loaded again when its files change (new handshakes
    get the new one)."""

    def __init__(self, cert: str, key: str) -> None:
        self.cert, self.key = cert, key
        self.context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.context.minimum_version = ssl.TLSVersion.TLSv1_2
        self._stamp: tuple[float, float] | None = None
        self._lock = threading.Lock()
        self.maybe_reload()

    def maybe_reload(self) -> None:
        stamp = (os.stat(self.cert).st_mtime, os.stat(self.key).st_mtime)
        with self._lock:
            if stamp != self._stamp:
                self.context.load_cert_chain(self.cert, self.key)
                self._stamp = stamp


def build(args: argparse.Namespace, addr: str, kube: Callable[[], KubeClient]) -> tuple[Gate, ReloadingTLS | None]:
    """The gate and TLS for the parsed flags; `kube` makes the client the reviews use (its own)."""
    host, _ = split_addr(addr, "address")
    mode = args.metrics_auth
    if mode == "auto":
        mode = "none" if is_loopback(host) else "kubernetes"
    gate = Gate(kubernetes_review(kube()) if mode == "kubernetes" else None)
    tls = ReloadingTLS(args.metrics_tls_cert, args.metrics_tls_key) if args.metrics_tls_cert else None
    return gate, tls
