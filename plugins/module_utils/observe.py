"""Read the live state of one shard: one list request per kind, by the shard's label selector.

The reader is the API client, the operator's watch caches or a snapshot of them (`snapshot.Reader`).
What the labels select is then split by ownership (ownership.py): the planner sees only the shard's
own objects; the others are kept apart in `foreign`, to be reported and never touched."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from . import facts, keys, labels, ownership
from .kube import KubeError
from .naming import ShardId

if TYPE_CHECKING:
    from .snapshot import Reader

Manifest = dict[str, Any]

# Kinds listed on every pass besides pods and PVCs: what a shard's shared infrastructure is made of.
INFRA_KINDS: tuple[tuple[str, str], ...] = (
    ("v1", "Service"),
    ("policy/v1", "PodDisruptionBudget"),
    ("v1", "ConfigMap"),
    ("apps/v1", "Deployment"),
    # Listed even when security.networkPolicy is off: the operator watches it, and deleting the shard
    # removes one made while it was on.
    ("networking.k8s.io/v1", "NetworkPolicy"),
)


@dataclass(frozen=True)
class Observed:
    """Everything the planner may look at. `cr` is the MultigresShard, None when driven from vars."""

    cr: Manifest | None
    pods: tuple[Manifest, ...] = ()
    pvcs: tuple[Manifest, ...] = ()
    others: Mapping[str, tuple[Manifest, ...]] = field(default_factory=dict)
    # Objects with the shard's labels that are not the shard's (ownership.py), each with its kind.
    foreign: tuple[Manifest, ...] = ()
    # Other live MultigresShards (name -> uid) that control pods or PVCs with this shard's labels.
    rivals: Mapping[str, str] = field(default_factory=dict)
    # The nodes of the shard's pool pods that are cordoned (spec.unschedulable): plan_maintenance.py.
    cordoned: frozenset[str] = frozenset()

    def find_foreign(self, kind: str, name: str) -> Manifest | None:
        return next((o for o in self.foreign if o.get("kind") == kind and facts.name(o) == name), None)

    def find(self, kind: str, name: str) -> Manifest | None:
        pool = {"Pod": self.pods, "PersistentVolumeClaim": self.pvcs}.get(kind) or self.others.get(kind, ())
        for obj in pool:
            if (obj.get("metadata") or {}).get("name") == name:
                return obj
        return None

    def all_objects(self) -> Iterable[Manifest]:
        yield from self.pods
        yield from self.pvcs
        for objs in self.others.values():
            yield from objs


def kinds_to_list(desired_objects: Iterable[Manifest]) -> list[tuple[str, str]]:
    """The infrastructure kinds plus any other kind the renderer produced (Secrets, ...)."""
    kinds = list(INFRA_KINDS)
    for obj in desired_objects:
        key = (obj.get("apiVersion", "v1"), obj["kind"])
        if key not in kinds and obj["kind"] not in ("Pod", "PersistentVolumeClaim"):
            kinds.append(key)
    return kinds


def read_shard(client: Reader, namespace: str, name: str) -> Manifest | None:
    return client.get(keys.API_GROUP_VERSION, keys.SHARD_KIND, namespace, name)


def observe(client: Reader, sid: ShardId, namespace: str, *, cr: Manifest | None,
            kinds: Iterable[tuple[str, str]] = INFRA_KINDS,
            metadata_kinds: Iterable[tuple[str, str]] = ()) -> Observed:
    shard_sel = labels.selector_string(labels.shard_selector(sid))
    pod_sel = labels.selector_string({**labels.shard_selector(sid),
                                      keys.LABEL_APP_COMPONENT: keys.COMPONENT_POOL})
    pods = client.list("v1", "Pod", namespace, pod_sel)
    pvcs = client.list("v1", "PersistentVolumeClaim", namespace, shard_sel)
    others = {kind: tuple(client.list(api_version, kind, namespace, shard_sel)) for api_version, kind in kinds}
    others.update({kind: tuple(client.list(api_version, kind, namespace, shard_sel, metadata_only=True))
                   for api_version, kind in metadata_kinds})
    parts = ownership.split(ownership.Owner.of(cr), pods, pvcs, others)
    rivals = {}
    for rival, uid in ownership.rival_refs(parts.foreign).items():
        live = read_shard(client, namespace, rival)  # a reference to a made-up uid proves nothing
        if live is not None and facts.uid(live) == uid:
            rivals[rival] = uid
    return Observed(cr=cr, pods=parts.pods, pvcs=parts.pvcs, others=parts.others, foreign=parts.foreign,
                    rivals=rivals, cordoned=cordoned_nodes(client, parts.pods))


def cordoned_nodes(client: Reader, pods: Iterable[Manifest]) -> frozenset[str]:
    """Which of the pods' nodes are cordoned. A node that cannot be read (gone, or no RBAC to read
    nodes) counts as not cordoned: node maintenance then waits, nothing else does."""
    names = {facts.node_name(p) for p in pods} - {""}
    cordoned = set()
    for name in sorted(names):
        try:
            node = client.get("v1", "Node", None, name)
        except KubeError:
            continue
        if node and (node.get("spec") or {}).get("unschedulable"):
            cordoned.add(name)
    return frozenset(cordoned)


def _gone(obj: Manifest | None, kind: str) -> bool:
    if not obj or obj.get("kind") != kind:
        return True  # a delete answered with a Status: the object is gone
    meta = obj.get("metadata") or {}
    return bool(meta.get("deletionTimestamp")) and not meta.get("finalizers")


def with_writes(observed: Observed, writes: Iterable[tuple[str, str, str, Manifest | None]]) -> Observed:
    """`observed` with the API server's answers to a pass's writes (verb, kind, name, answer) put
    in: applied and patched objects replaced or added, deleted ones removed or left terminating,
    generated Secrets (answered as a List of their metadata) added."""
    cr = observed.cr
    pools: dict[str, dict[str, Manifest]] = {}
    for kind, objs in (("Pod", observed.pods), ("PersistentVolumeClaim", observed.pvcs), *observed.others.items()):
        pools[kind] = {(o.get("metadata") or {}).get("name", ""): o for o in objs}
    for verb, kind, name, answer in writes:
        if verb == "event":
            continue
        if kind == keys.SHARD_KIND:
            if answer and answer.get("kind") == kind:
                cr = answer
            continue
        items = answer.get("items") if answer and answer.get("kind") == "List" else None
        for obj in items if items is not None else [answer]:
            obj_kind = (obj or {}).get("kind", kind)
            obj_name = ((obj or {}).get("metadata") or {}).get("name", name)
            pool = pools.setdefault(obj_kind, {})
            if verb in ("delete", "prune") and _gone(obj, obj_kind):
                pool.pop(obj_name, None)
            elif obj:
                pool[obj_name] = obj
    pods, pvcs = pools.pop("Pod"), pools.pop("PersistentVolumeClaim")
    others = {kind: tuple(objs.values()) for kind, objs in pools.items()}
    return Observed(cr=cr, pods=tuple(pods.values()), pvcs=tuple(pvcs.values()), others=others,
                    foreign=observed.foreign, rivals=observed.rivals)
