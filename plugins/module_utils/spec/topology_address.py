"""One spelling for a topology etcd address list (`spec.globalTopoServer.address`).

Multigres v0.1.0 reads `--topo-global-server-addresses` as a comma-separated string list and hands
it to the etcd client as its endpoints, which accepts `host:port` and `http(s)://host:port` alike.
So `ETCD:2379`, ` etcd:2379` and `http://etcd:2379` all name the same server; without one spelling
the agent groups the same shard under two topologies (and prunes the other group's live poolers).

`endpoints` keeps the user's order (the order they are dialled in); `identity` is the sorted form to
compare topologies with. Pure functions, no I/O.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable

FIELD = "spec.globalTopoServer.address"
_DNS_LABEL = re.compile(r"^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$")
_SCHEMES = ("http://", "https://")


class TopologyAddressError(ValueError):
    """An address list that no etcd client could dial; the message names the field."""


def _fail(endpoint: str, problem: str) -> TopologyAddressError:
    return TopologyAddressError(f"{FIELD}: endpoint {endpoint!r}: {problem}")


def _host(raw: str, endpoint: str) -> str:
    if raw.startswith("[") and raw.endswith("]"):
        try:
            return f"[{ipaddress.IPv6Address(raw[1:-1]).compressed}]"
        except ValueError:
            raise _fail(endpoint, "not a valid IPv6 address in brackets") from None
    host = raw.lower()
    if re.fullmatch(r"[0-9.]+", host):
        try:
            return str(ipaddress.IPv4Address(host))
        except ValueError:
            raise _fail(endpoint, "not a valid IPv4 address") from None
    labels = host[:-1].split(".") if host.endswith(".") else host.split(".")
    if not host or len(host) > 253 or not all(_DNS_LABEL.match(label) for label in labels):
        raise _fail(endpoint, "host must be a DNS name (letters, digits, '-', '.'), an IPv4 address or "
                              "a bracketed IPv6 address")
    return host


def _endpoint(raw: str) -> str:
    text = raw.strip()
    if not text:
        raise TopologyAddressError(f"{FIELD}: empty endpoint in a comma-separated list")
    scheme = next((s for s in _SCHEMES if text.lower().startswith(s)), "")
    rest = text[len(scheme):]
    if "://" in rest:
        raise _fail(text, "only http:// and https:// are supported")
    if any(c in rest for c in "/?#@"):
        raise _fail(text, "must be host:port (no path, query or user)")
    host, sep, port = rest.rpartition(":")
    if not sep or (host.count(":") and not host.startswith("[")):
        raise _fail(text, "missing port: write host:port (etcd clients listen on 2379)")
    if not port.isascii() or not port.isdigit() or not 1 <= int(port) <= 65535:
        raise _fail(text, f"port {port!r} is not a number from 1 to 65535")
    # http is what a bare host:port means to the etcd client: drop it so both spell the same.
    prefix = "https://" if scheme == "https://" else ""
    return f"{prefix}{_host(host, text)}:{int(port)}"


def endpoints(value: str | Iterable[str]) -> tuple[str, ...]:
    """The normalised endpoints in the user's order, duplicates dropped; TopologyAddressError if bad."""
    parts = value.split(",") if isinstance(value, str) else list(value)
    if not parts:
        raise TopologyAddressError(f"{FIELD}: no endpoint given")
    return tuple(dict.fromkeys(_endpoint(p) for p in parts))


def normalize(value: str) -> str:
    """The comma-separated normal form (what is rendered into `--topo-global-server-addresses`)."""
    return ",".join(endpoints(value))


def identity(value: str | Iterable[str]) -> str:
    """Order-free form: two address lists naming the same servers have the same identity."""
    return ",".join(sorted(endpoints(value)))
