"""What the planner sees of one shard's live objects (`Observed`), and that view after a pass's writes.

Pure: kube/observe.py fills it from the API server (or the operator's caches); the planner and the
status read it."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from ..core import keys
from ..core.manifest import Manifest
from . import facts

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
    # Objects with the shard's labels that are not the shard's (state/ownership.py), each with its kind.
    foreign: tuple[Manifest, ...] = ()
    # Other live MultigresShards (name -> uid) that control pods or PVCs with this shard's labels.
    rivals: Mapping[str, str] = field(default_factory=dict)
    # The nodes of the shard's pool pods that are cordoned (spec.unschedulable): plan/maintenance.py.
    cordoned: frozenset[str] = frozenset()
    # The restore drill's pod (plan/drill.py), when the shard has drills and one exists.
    drill_pod: Manifest | None = None
    # The clone's copy pod (plan/clone.py), while the shard copies its source's repository.
    clone_pod: Manifest | None = None

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
    tasks = tuple(p for p in (observed.drill_pod, observed.clone_pod) if p)
    for kind, objs in (("Pod", observed.pods + tasks), ("PersistentVolumeClaim", observed.pvcs),
                       *observed.others.items()):
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
    drill_pod, clone_pod = (_pop_task(pods, c) for c in (keys.COMPONENT_RESTORE_DRILL, keys.COMPONENT_CLONE_COPY))
    others = {kind: tuple(objs.values()) for kind, objs in pools.items()}
    return Observed(cr=cr, pods=tuple(pods.values()), pvcs=tuple(pvcs.values()), others=others,
                    foreign=observed.foreign, rivals=observed.rivals, cordoned=observed.cordoned,
                    drill_pod=drill_pod, clone_pod=clone_pod)


def _pop_task(pods: dict[str, Manifest], component: str) -> Manifest | None:
    """Take the drill's or the clone copy's pod out of `pods` (they are no pool pods)."""
    found = [name for name, pod in pods.items() if facts.labels(pod).get(keys.LABEL_APP_COMPONENT) == component]
    return pods.pop(found[0]) if found else None
