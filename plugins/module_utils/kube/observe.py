"""Read the live state of one shard: one list request per kind, by the shard's label selector.

The reader is the API client, the operator's watch caches or a snapshot of them (`snapshot.Reader`).
What the labels select is then split by ownership (state/ownership.py): the planner sees only the shard's
own objects; the others are kept apart in `foreign`, to be reported and never touched. The result
(`Observed`, state/observed.py) is pure data: the planner never imports this module."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from ..core import keys, labels
from ..core.manifest import Manifest
from ..core.naming import ShardId
from ..state import facts, ownership
from ..state.observed import INFRA_KINDS, Observed
from .client import KubeError

if TYPE_CHECKING:
    from .snapshot import Reader


def read_shard(client: Reader, namespace: str, name: str) -> Manifest | None:
    return client.get(keys.API_GROUP_VERSION, keys.SHARD_KIND, namespace, name)


def observe(client: Reader, sid: ShardId, namespace: str, *, cr: Manifest | None,
            kinds: Iterable[tuple[str, str]] = INFRA_KINDS,
            metadata_kinds: Iterable[tuple[str, str]] = (), drill_pod: str | None = None,
            clone_pod: str | None = None) -> Observed:
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
                    rivals=rivals, cordoned=cordoned_nodes(client, parts.pods),
                    drill_pod=_task_pod(client, sid, namespace, cr, drill_pod, keys.COMPONENT_RESTORE_DRILL)
                    if drill_pod else None,
                    clone_pod=_task_pod(client, sid, namespace, cr, clone_pod, keys.COMPONENT_CLONE_COPY)
                    if clone_pod else None)


def _task_pod(client: Reader, sid: ShardId, namespace: str, cr: Manifest | None, name: str,
              component: str) -> Manifest | None:
    """The restore drill's (plan/drill.py) or the clone copy's (plan/clone.py) pod `name` when this
    MultigresShard controls it; listed only for shards that have one, so others pay no request for it."""
    selector = labels.selector_string({**labels.shard_selector(sid), keys.LABEL_APP_COMPONENT: component})
    owner = facts.uid(cr) if cr else None
    return next((p for p in client.list("v1", "Pod", namespace, selector) if facts.name(p) == name
                 and (ownership.controller_ref(p) or {}).get("uid") == owner), None)


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
