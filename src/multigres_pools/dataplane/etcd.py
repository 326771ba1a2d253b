"""Thin etcd v3 access through etcd3gw (the HTTP gateway): bytes in, bytes out, typed errors.

etcd3gw quirks handled here (shared/reference/deps.md §1): `requests` would let REQUESTS_CA_BUNDLE
override our CA, so every client gets its own session with trust_env=False; transactions take raw
gateway JSON, so the two we need (create-if-absent, compare-and-swap on mod revision) are built here.
"""

from __future__ import annotations

import base64
import threading
from dataclasses import dataclass
from urllib.parse import urlsplit

import etcd3gw
import requests
from etcd3gw import exceptions as etcd_exc

from .base import TopologyUnavailable

DEFAULT_TIMEOUT_S = 5.0


@dataclass(frozen=True)
class EtcdTLS:
    ca_file: str | None = None
    cert_file: str | None = None
    key_file: str | None = None


def _b64(data: str | bytes) -> str:
    return base64.b64encode(data.encode() if isinstance(data, str) else data).decode()


def parse_address(address: str) -> tuple[str, str, int]:
    """'host:port', 'http://host:port' or 'https://host:port' -> (protocol, host, port)."""
    if "://" not in address:
        address = "http://" + address
    parts = urlsplit(address)
    return parts.scheme or "http", parts.hostname or "localhost", parts.port or 2379


class Etcd:
    """One etcd endpoint. Every failure to reach it raises TopologyUnavailable."""

    def __init__(self, address: str, tls: EtcdTLS | None = None, timeout: float = DEFAULT_TIMEOUT_S) -> None:
        protocol, host, port = parse_address(address)
        session = requests.Session()
        session.trust_env = False
        if tls and tls.ca_file:
            session.verify = tls.ca_file
        if tls and tls.cert_file and tls.key_file:
            session.cert = (tls.cert_file, tls.key_file)
        self.address = address
        self._client = etcd3gw.client(host=host, port=port, protocol=protocol, timeout=timeout, session=session)

    def _call(self, fn, *args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except (etcd_exc.Etcd3Exception, requests.RequestException, OSError) as exc:
            raise TopologyUnavailable(f"etcd {self.address}: {exc}") from exc

    def get(self, key: str) -> tuple[bytes, int] | None:
        """(value, mod_revision) or None when absent."""
        items = self._call(self._client.get, key, metadata=True)
        if not items:
            return None
        value, meta = items[0]
        return value, int(meta.get("mod_revision", 0))

    def get_prefix(self, prefix: str) -> list[tuple[str, bytes]]:
        items = self._call(self._client.get_prefix, prefix, sort_order="ascend", sort_target="key")
        return [(meta["key"].decode(), value) for value, meta in items]

    def put(self, key: str, value: bytes) -> None:
        self._call(self._client.put, key, value)

    def delete(self, key: str) -> bool:
        return bool(self._call(self._client.delete, key))

    def _txn(self, key: str, compare: dict, value: bytes) -> bool:
        txn = {
            "compare": [{"key": _b64(key), "result": "EQUAL", **compare}],
            "success": [{"request_put": {"key": _b64(key), "value": _b64(value)}}],
            "failure": [],
        }
        return bool(self._call(self._client.transaction, txn).get("succeeded", False))

    def create(self, key: str, value: bytes) -> bool:
        """Put only if the key does not exist (topo Create); False when it already existed."""
        return self._txn(key, {"target": "VERSION", "version": "0"}, value)

    def compare_and_put(self, key: str, value: bytes, mod_revision: int) -> bool:
        """Put only if the key is unchanged since `mod_revision` (topo Update with a version)."""
        return self._txn(key, {"target": "MOD", "mod_revision": str(mod_revision)}, value)


class EtcdPool:
    """One Etcd client per address, shared by threads (requests sessions are used one call at a time)."""

    def __init__(self, tls: EtcdTLS | None = None, timeout: float = DEFAULT_TIMEOUT_S) -> None:
        self._tls, self._timeout = tls, timeout
        self._clients: dict[str, Etcd] = {}
        self._lock = threading.Lock()

    def get(self, address: str) -> Etcd:
        with self._lock:
            if address not in self._clients:
                self._clients[address] = Etcd(address, self._tls, self._timeout)
            return self._clients[address]
