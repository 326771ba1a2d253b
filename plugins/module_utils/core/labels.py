"""Label sets for shard objects (contract §3.2): the full set, the pod selector and the shard-wide selector."""

from __future__ import annotations

from collections.abc import Mapping

from . import keys
from .naming import ShardId


def shard_selector(sid: ShardId) -> dict[str, str]:
    """Labels that every pool pod of one shard carries; used for shard-wide lists (drain, roles, prune)."""
    return {
        keys.LABEL_CLUSTER: sid.cluster,
        keys.LABEL_DATABASE: sid.database,
        keys.LABEL_TABLEGROUP: sid.tablegroup,
        keys.LABEL_SHARD: sid.shard,
    }


def pool_selector(sid: ShardId, pool: str, cell: str) -> dict[str, str]:
    """The immutable selector of one pool in one cell (headless Service, PDB)."""
    return {
        keys.LABEL_APP_COMPONENT: keys.COMPONENT_POOL,
        keys.LABEL_APP_INSTANCE: sid.cluster,
        **shard_selector(sid),
        keys.LABEL_POOL: pool,
        keys.LABEL_CELL: cell,
    }


def dns_selector(sid: ShardId, pool: str, cell: str) -> dict[str, str]:
    """The headless Service's selector: the pool's pods that are still published in DNS (keys.LABEL_DNS)."""
    return {**pool_selector(sid, pool, cell), keys.LABEL_DNS: keys.DNS_PUBLISHED}


def component_labels(sid: ShardId, component: str, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The full label set of a shard object; the standard keys win over user-supplied extras."""
    labels = dict(extra or {})
    labels.update({
        keys.LABEL_APP_NAME: keys.APP_NAME,
        keys.LABEL_APP_INSTANCE: sid.cluster,
        keys.LABEL_APP_COMPONENT: component,
        keys.LABEL_APP_PART_OF: keys.PART_OF,
        keys.LABEL_APP_MANAGED_BY: keys.MANAGED_BY,
        **shard_selector(sid),
    })
    return labels


def pool_labels(sid: ShardId, pool: str, cell: str, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    labels = component_labels(sid, keys.COMPONENT_POOL, extra)
    labels.update({keys.LABEL_POOL: pool, keys.LABEL_CELL: cell})
    return labels


def selector_string(labels: Mapping[str, str]) -> str:
    """A label selector string for list calls, in sorted key order so requests are reproducible."""
    return ",".join(f"{k}={labels[k]}" for k in sorted(labels))
