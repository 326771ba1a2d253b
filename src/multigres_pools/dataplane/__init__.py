"""Data-plane adapters: the interface (`base`) and one implementation per Multigres version.

`for_version(keys.MultigresVersion)` is how the agent picks one for a shard (its declared
`spec.multigres.version`); `make(era)` is the older spelling by era letter.
"""

from __future__ import annotations

from collections.abc import Callable

from ansible_collections.multigres.pools.plugins.module_utils.core import keys

from .base import DataPlane
from .etcd import EtcdTLS
from .grpc_tls import GrpcTLS

ERAS = ("a", "v0.1")
_ERA_VERSION = {"a": keys.MultigresVersion.ERA_A, "v0.1": keys.MultigresVersion.V0_1_0}


def for_version(version: str | keys.MultigresVersion = keys.DEFAULT_MULTIGRES_VERSION,
                etcd_tls: EtcdTLS | None = None, rpc_timeout: float = 10.0,
                dial_host: Callable[[str], str] | None = None, grpc_tls: GrpcTLS | None = None) -> DataPlane:
    """The adapter for a declared Multigres version; ValueError names the known ones."""
    try:
        declared = keys.MultigresVersion(version)
    except ValueError:
        known = ", ".join(v.value for v in keys.MultigresVersion)
        raise ValueError(f"spec.multigres.version {version!r} is not supported; known: {known}") from None
    if declared is keys.MultigresVersion.ERA_A:
        from .era_a import EraA

        return EraA(etcd_tls=etcd_tls, rpc_timeout=rpc_timeout, dial_host=dial_host, grpc_tls=grpc_tls)
    from .v0_1 import V0_1

    return V0_1(etcd_tls=etcd_tls, rpc_timeout=rpc_timeout, dial_host=dial_host, grpc_tls=grpc_tls)


def make(era: str = "a", etcd_tls: EtcdTLS | None = None, rpc_timeout: float = 10.0,
         dial_host: Callable[[str], str] | None = None) -> DataPlane:
    """The adapter for a Multigres era letter (`a` = d782aa06, `v0.1` = the v0.1.0 release)."""
    if era not in _ERA_VERSION:
        raise ValueError(f"unknown data-plane era {era!r}; known: {', '.join(ERAS)}")
    return for_version(_ERA_VERSION[era], etcd_tls=etcd_tls, rpc_timeout=rpc_timeout, dial_host=dial_host)
