"""Thin etcd v3 access through etcd3gw (the HTTP gateway): bytes in, bytes out, typed errors.

etcd3gw quirks handled here (shared/reference/deps.md §1): `requests` would let REQUESTS_CA_BUNDLE
override our CA, so every client gets its own session with trust_env=False; transactions take raw
gateway JSON, so the two we need (create-if-absent, compare-and-swap on mod revision) are built here.
"""

from __future__ import annotations

import base64
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import etcd3gw
import requests
from etcd3gw import exceptions as etcd_exc

from .base import TopologyUnavailable

DEFAULT_TIMEOUT_S = 5.0
# Failures that say "this endpoint is not reachable now" (etcd3gw maps 503 to ConnectionFailedError):
# another endpoint of the same cluster may answer.
_UNREACHABLE = (etcd_exc.ConnectionFailedError, etcd_exc.ConnectionTimeoutError, requests.ConnectionError,
                requests.Timeout, ConnectionError)


@dataclass(frozen=True)
class EtcdTLS:
    ca_file: str | None = None
    cert_file: str | None = None
    key_file: str | None = None


def _b64(data: str | bytes) -> str:
    return base64.b64encode(data.encode() if isinstance(data, str) else data).decode()


def parse_address(address: str, default_scheme: str = "http") -> tuple[str, str, int]:
    """'host:port', 'http://host:port' or 'https://host:port' -> (protocol, host, port); a bare
    host:port takes `default_scheme`."""
    if "://" not in address:
        address = f"{default_scheme}://{address}"
    parts = urlsplit(address)
    return parts.scheme or "http", parts.hostname or "localhost", parts.port or 2379


def _describe(exc: BaseException) -> str:
    """The first non-empty message along the chain: etcd3gw re-raises a failed TLS handshake as a
    ConnectionFailedError with no text of its own."""
    seen: BaseException | None = exc
    while seen is not None:
        if str(seen):
            return f"{type(seen).__name__}: {seen}" if seen is not exc else str(seen)
        seen = seen.__cause__ or seen.__context__
    return type(exc).__name__


class Etcd:
    """One etcd cluster reached through its endpoints, dialled in order: a connection failure (refused,
    timed out, 503) moves on to the next endpoint and the one that answered is tried first next time.
    When none answers: TopologyUnavailable naming each endpoint's failure.

    A write that timed out may have been applied before the next endpoint is asked: `put` and `delete`
    are idempotent, and `create`/`compare_and_put` then answer False, after which callers re-read.
    """

    def __init__(self, address: str | Sequence[str], tls: EtcdTLS | None = None,
                 timeout: float = DEFAULT_TIMEOUT_S) -> None:
        parts = address.split(",") if isinstance(address, str) else list(address)
        self.endpoints = tuple(dict.fromkeys(a.strip() for a in parts if a.strip()))
        if not self.endpoints:
            raise ValueError("etcd: no endpoint given")
        self.address = ",".join(self.endpoints)
        self._tls, self._timeout = tls, timeout
        self._clients: dict[str, etcd3gw.Etcd3Client] = {}
        self._preferred = 0
        self._lock = threading.Lock()

    def _client_for(self, endpoint: str) -> etcd3gw.Etcd3Client:
        if endpoint not in self._clients:
            # Multigres writes bare host:port addresses and turns TLS on with its --topo-etcd-tls-* flags:
            # with our TLS flags, a bare address is https too.
            protocol, host, port = parse_address(endpoint, "https" if self._tls else "http")
            session = requests.Session()
            session.trust_env = False
            if self._tls and self._tls.ca_file:
                session.verify = self._tls.ca_file
            if self._tls and self._tls.cert_file and self._tls.key_file:
                session.cert = (self._tls.cert_file, self._tls.key_file)
            self._clients[endpoint] = etcd3gw.client(host=host, port=port, protocol=protocol,
                                                     timeout=self._timeout, session=session)
        return self._clients[endpoint]

    def _call(self, method: str, *args: Any, **kwargs: Any) -> Any:  # Any: whatever `method` returns
        with self._lock:
            start = self._preferred
        failures = []
        for i in range(len(self.endpoints)):
            index = (start + i) % len(self.endpoints)
            endpoint = self.endpoints[index]
            try:
                result = getattr(self._client_for(endpoint), method)(*args, **kwargs)
            except _UNREACHABLE as exc:
                failures.append(f"{endpoint}: {_describe(exc)}")
                continue
            except (etcd_exc.Etcd3Exception, requests.RequestException, OSError) as exc:
                raise TopologyUnavailable(f"etcd {endpoint}: {exc}") from exc
            with self._lock:
                self._preferred = index
            return result
        raise TopologyUnavailable(f"etcd: no endpoint answered ({'; '.join(failures)})")

    def get(self, key: str) -> tuple[bytes, int] | None:
        """(value, mod_revision) or None when absent."""
        items = self._call("get", key, metadata=True)
        if not items:
            return None
        value, meta = items[0]
        return value, int(meta.get("mod_revision", 0))

    def get_prefix(self, prefix: str) -> list[tuple[str, bytes]]:
        items = self._call("get_prefix", prefix, sort_order="ascend", sort_target="key")
        return [(meta["key"].decode(), value) for value, meta in items]

    def put(self, key: str, value: bytes) -> None:
        self._call("put", key, value)

    def delete(self, key: str) -> bool:
        return bool(self._call("delete", key))

    def _txn(self, key: str, compare: dict[str, Any], value: bytes) -> bool:
        txn = {
            "compare": [{"key": _b64(key), "result": "EQUAL", **compare}],
            "success": [{"request_put": {"key": _b64(key), "value": _b64(value)}}],
            "failure": [],
        }
        return bool(self._call("transaction", txn).get("succeeded", False))

    def create(self, key: str, value: bytes) -> bool:
        """Put only if the key does not exist (topo Create); False when it already existed."""
        return self._txn(key, {"target": "VERSION", "version": "0"}, value)

    def compare_and_put(self, key: str, value: bytes, mod_revision: int) -> bool:
        """Put only if the key is unchanged since `mod_revision` (topo Update with a version)."""
        return self._txn(key, {"target": "MOD", "mod_revision": str(mod_revision)}, value)


class EtcdPool:
    """One Etcd client per endpoint list, shared by threads (requests sessions are used one call at a time)."""

    def __init__(self, tls: EtcdTLS | None = None, timeout: float = DEFAULT_TIMEOUT_S) -> None:
        self._tls, self._timeout = tls, timeout
        self._clients: dict[str, Etcd] = {}
        self._lock = threading.Lock()

    def get(self, address: str | Sequence[str]) -> Etcd:
        key = address if isinstance(address, str) else ",".join(address)
        with self._lock:
            if key not in self._clients:
                self._clients[key] = Etcd(address, self._tls, self._timeout)
            return self._clients[key]
