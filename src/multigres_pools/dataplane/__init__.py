"""Data-plane adapters: the interface (`base`) and one implementation per Multigres era."""

from __future__ import annotations

from collections.abc import Callable

from .base import DataPlane
from .etcd import EtcdTLS

ERAS = ("a",)


def make(era: str = "a", etcd_tls: EtcdTLS | None = None, rpc_timeout: float = 10.0,
         dial_host: Callable[[str], str] | None = None) -> DataPlane:
    """The adapter for a Multigres era; only era A (multigres d782aa06) exists so far."""
    if era == "a":
        from .era_a import EraA

        return EraA(etcd_tls=etcd_tls, rpc_timeout=rpc_timeout, dial_host=dial_host)
    raise ValueError(f"unknown data-plane era {era!r}; known: {', '.join(ERAS)}")
