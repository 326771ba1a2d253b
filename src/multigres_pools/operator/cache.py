"""The operator's watch-fed caches: one informer per kind (and watched namespace) for every kind a
reconcile pass reads, and a read-only view of them that answers the engine's get/list calls.

The engine reads through `snapshot.Reader`; `CacheView` is one, so the same `reconcile.decide`
that the module runs against the API runs here against memory. A request the caches cannot
answer exactly (a kind or selector they do not hold, a user's ConfigMap read by name) goes to
the API server: a cache may only save requests, never answer differently.

Objects are shared, not copied: the planner is pure and never modifies what it observed
(tests/unit/operator/test_operator_cache.py checks that a decision leaves the cache as it was).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from ansible_collections.multigres.pools.plugins.module_utils.core import keys
from ansible_collections.multigres.pools.plugins.module_utils.core.manifest import Manifest
from ansible_collections.multigres.pools.plugins.module_utils.kube import snapshot
from ansible_collections.multigres.pools.plugins.module_utils.kube.client import KubeClient
from ansible_collections.multigres.pools.plugins.module_utils.state import facts, observed

from ..watch import Informer, Kind
from .relevance import ShardKey

SHARD = Kind(keys.API_GROUP_VERSION, keys.SHARD_KIND)
# Every object a pass lists carries the shard label: the child watches are filtered on it
# server-side, so the operator never holds unrelated pods, Secrets or ConfigMaps.
POD = Kind("v1", "Pod", keys.LABEL_SHARD)
CHILDREN: tuple[Kind, ...] = (
    POD,
    Kind("v1", "PersistentVolumeClaim", keys.LABEL_SHARD),
    *(Kind(api_version, kind, keys.LABEL_SHARD) for api_version, kind in observed.INFRA_KINDS),
    # Secrets: metadata only, so no key material is ever held in the operator's memory.
    Kind("v1", "Secret", keys.LABEL_SHARD, metadata_only=True),
)
WATCHED: tuple[Kind, ...] = (SHARD, *CHILDREN)
# Watched cluster-wide whatever the namespaces: a cordoned node moves pool pods (plan/maintenance.py).
NODE = Kind("v1", "Node", keep=("spec",), optional=True)
CLUSTER_WATCHED: tuple[Kind, ...] = (NODE,)

Bucket = tuple[str, str]  # (namespace, value of the cluster label): where a shard's objects live


def _bucket(obj: Manifest) -> Bucket:
    meta = obj.get("metadata") or {}
    return meta.get("namespace", ""), (meta.get("labels") or {}).get(keys.LABEL_CLUSTER, "")


@dataclass
class Cache:
    """Objects by kind, indexed by namespace and cluster label; fed by the informers' events (on
    the event loop) and read by decisions (in worker threads), hence the lock."""

    _index: dict[Kind, dict[Bucket, dict[str, Manifest]]] = field(default_factory=dict)
    _shards: dict[ShardKey, Manifest] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    informers: list[Informer] = field(default_factory=list)

    def apply(self, kind: Kind, event_type: str, obj: Manifest, old: Manifest | None) -> None:
        name = (obj.get("metadata") or {}).get("name", "")
        if kind == SHARD:
            key = (obj.get("metadata") or {}).get("namespace", ""), name
            with self._lock:
                if event_type == "DELETED":
                    self._shards.pop(key, None)
                else:
                    self._shards[key] = obj
            return
        with self._lock:
            buckets = self._index.setdefault(kind, {})
            if old is not None:
                bucket = buckets.get(_bucket(old))
                if bucket is not None:
                    bucket.pop(name, None)
                    if not bucket:
                        del buckets[_bucket(old)]
            if event_type != "DELETED":
                buckets.setdefault(_bucket(obj), {})[name] = obj

    def objects(self, kind: Kind, namespace: str | None, cluster: str | None = None) -> list[Manifest]:
        """The cached objects of `kind` in `namespace` (None: all), narrowed to the cluster label's bucket
        when both are given (MultigresShards are kept by key, not bucketed: the caller's selector narrows)."""
        if kind == SHARD:
            return [s for s in self.shards() if namespace in (None, facts.meta(s).get("namespace"))]
        with self._lock:
            buckets = self._index.get(kind, {})
            if cluster is not None and namespace is not None:
                return list(buckets.get((namespace, cluster), {}).values())
            return [obj for (ns, _), objs in buckets.items() if namespace in (None, ns) for obj in objs.values()]

    def shard(self, key: ShardKey) -> Manifest | None:
        return self._shards.get(key)

    def node(self, name: str) -> Manifest | None:
        with self._lock:
            return self._index.get(NODE, {}).get(("", ""), {}).get(name)

    def pods_on(self, node: str) -> list[Manifest]:
        """The cached pods of shards bound to `node`."""
        with self._lock:
            return [pod for objs in self._index.get(POD, {}).values() for pod in objs.values()
                    if facts.node_name(pod) == node]

    def shards(self) -> list[Manifest]:
        with self._lock:
            return list(self._shards.values())

    def watches(self, kind: Kind) -> bool:
        return any(i.kind == kind for i in self.informers)

    def synced(self) -> bool:
        return bool(self.informers) and all(i.synced.is_set() for i in self.informers)

    def size(self) -> int:
        with self._lock:
            return len(self._shards) + sum(len(objs) for buckets in self._index.values() for objs in buckets.values())


def covers(kind: Kind, terms: Iterable[tuple[str, str, str | None]]) -> bool:
    """Whether a selector only matches objects the informer of `kind` holds."""
    if not kind.selector:
        return True
    return any(key == kind.selector and op in ("=", "exists") for key, op, _ in terms)


class CacheView:
    """A `snapshot.Reader` over the caches; what they cannot answer goes to `live()` (one client
    per thread: decisions run in worker threads and a KubeClient holds one connection)."""

    def __init__(self, cache: Cache, live: Callable[[], KubeClient], watched: Iterable[Kind] = WATCHED) -> None:
        self.cache = cache
        self._live = live
        self._local = threading.local()
        self._kinds = {(k.api_version, k.kind, k.metadata_only): k for k in watched}
        self.misses = 0

    def live(self) -> KubeClient:
        client = getattr(self._local, "client", None)
        if client is None:
            client = self._local.client = self._live()
        return client

    def get(self, api_version: str, kind: str, namespace: str | None, name: str) -> Manifest | None:
        if (api_version, kind) == (SHARD.api_version, SHARD.kind) and namespace:
            return self.cache.shard((namespace, name))
        if (api_version, kind) == (NODE.api_version, NODE.kind) and self.cache.watches(NODE):
            return self.cache.node(name)
        self.misses += 1
        return self.live().get(api_version, kind, namespace, name)

    def list(self, api_version: str, kind: str, namespace: str | None, selector: str = "", *,
             metadata_only: bool = False) -> list[Manifest]:
        watched = self._kinds.get((api_version, kind, metadata_only))
        try:
            terms = snapshot.parse_selector(selector)
        except snapshot.SelectorError:
            watched = None
        if watched is None or not covers(watched, terms):
            self.misses += 1
            return self.live().list(api_version, kind, namespace, selector, metadata_only=metadata_only)
        cluster = next((v for k, op, v in terms if k == keys.LABEL_CLUSTER and op == "="), None)
        return [obj for obj in self.cache.objects(watched, namespace, cluster)
                if snapshot.matches((obj.get("metadata") or {}).get("labels") or {}, terms)]
