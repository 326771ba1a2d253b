"""Small factories for planner tests: a `Desired` built by hand (not by the renderer, so these tests
pin the planner alone) and live objects shaped as the API server returns them.

`plan` completes the hand-built manifests the way the renderer completes what it renders for the
observed MultigresShard (ownership, finalizer, index label) before planning: the renderer
decides those, the planner only compares (test_render_decides checks both agree)."""

from __future__ import annotations

import copy
import dataclasses
import datetime as dt
import itertools
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

from ansible_collections.multigres.pools.plugins.module_utils.core import keys, labels, naming
from ansible_collections.multigres.pools.plugins.module_utils.core.manifest import Manifest
from ansible_collections.multigres.pools.plugins.module_utils.plan import shard as planner
from ansible_collections.multigres.pools.plugins.module_utils.render.context import owner_reference
from ansible_collections.multigres.pools.plugins.module_utils.state import facts
from ansible_collections.multigres.pools.plugins.module_utils.state.desired import Desired, DesiredPool, PVCPolicy
from ansible_collections.multigres.pools.plugins.module_utils.state.observed import Observed

SID = naming.ShardId("demo", "postgres", "default", "0-inf")
NS = "db"
NOW = dt.datetime(2026, 5, 1, 12, 0, 0, tzinfo=dt.UTC)
CR_UID = "cr-uid-1"
_uids = itertools.count(1)


def _pod_factory(pool: str, cell: str, spec_hash: str, image: str):  # type: ignore[no-untyped-def]
    def build(index: int) -> Manifest:
        name = naming.pod_name(SID, pool, cell, index)
        return {
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": NS,
                         "labels": {**labels.pool_labels(SID, pool, cell), keys.LABEL_DNS: keys.DNS_PUBLISHED},
                         "annotations": {keys.ANN_SPEC_HASH: spec_hash}},
            "spec": {"hostname": name, "containers": [{"name": "pgctld", "image": image}]},
        }
    return build


def _pvc_factory(pool: str, cell: str, size: str):  # type: ignore[no-untyped-def]
    def build(index: int) -> Manifest:
        return {
            "apiVersion": "v1", "kind": "PersistentVolumeClaim",
            "metadata": {"name": naming.data_pvc_name(SID, pool, cell, index), "namespace": NS,
                         "labels": labels.pool_labels(SID, pool, cell)},
            "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": size}}},
        }
    return build


def desired_pool(pool: str = "main", cell: str = "z1", *, replicas: int = 3, spec_hash: str = "h1",
                 size: str = "1Gi", when_scaled: PVCPolicy = PVCPolicy.DELETE,
                 when_deleted: PVCPolicy = PVCPolicy.RETAIN) -> DesiredPool:
    return DesiredPool(pool=pool, cell=cell, replicas=replicas, spec_hash=spec_hash, storage_size=size,
                       when_scaled=when_scaled, when_deleted=when_deleted,
                       pod=_pod_factory(pool, cell, spec_hash, f"postgres:{spec_hash}"),
                       pvc=_pvc_factory(pool, cell, size))


def desired(*pools: DesiredPool, objects: tuple[Manifest, ...] = ()) -> Desired:
    return Desired(shard=SID, namespace=NS, objects=objects, pools=pools or (desired_pool(),))


def _owned(obj: Manifest, cr: Manifest | None, *, owned: bool) -> Manifest:
    """`obj` with `cr`'s controller reference iff `owned`, as rendered for `cr`."""
    out = copy.deepcopy(obj)
    md = out["metadata"]
    if cr is not None and facts.uid(cr):
        ref = owner_reference({"name": facts.name(cr), "uid": facts.uid(cr) or ""})
        refs = [r for r in md.get("ownerReferences") or [] if r.get("uid") != ref["uid"]] + ([ref] if owned else [])
        md["ownerReferences"] = refs
        if not refs:
            del md["ownerReferences"]
    return out


def _rendered_pod(build: Callable[[int], Manifest], cr: Manifest | None, index: int) -> Manifest:
    pod = _owned(build(index), cr, owned=True)
    md = pod["metadata"]
    md.setdefault("labels", {})[keys.LABEL_INDEX] = str(index)
    md["finalizers"] = [*(f for f in md.get("finalizers") or [] if f != keys.FINALIZER_POD), keys.FINALIZER_POD]
    return pod


def _rendered_pvc(build: Callable[[int], Manifest], index: int) -> Manifest:
    pvc = build(index)
    pvc["metadata"].setdefault("labels", {})[keys.LABEL_INDEX] = str(index)
    return pvc


def rendered(want: Desired, cr: Manifest | None) -> Desired:
    """`want` as the renderer produces it for `cr` (render.desired_state's `owner`): pods with the index
    label, our finalizer and the controller reference; data PVCs with the index label (their owner
    follows whenDeleted in the planner); every shared object owned, a shared PVC iff built with a
    reference (the renderer's backup_pvc_policy)."""
    pools = tuple(dataclasses.replace(dp, pod=partial(_rendered_pod, dp.pod, cr), pvc=partial(_rendered_pvc, dp.pvc))
                  for dp in want.pools)
    objects = tuple(_owned(o, cr, owned=o["kind"] != "PersistentVolumeClaim"
                           or bool(o["metadata"].get("ownerReferences"))) for o in want.objects)
    return dataclasses.replace(want, pools=pools, objects=objects)


def plan(want: Desired, seen: Observed, now: dt.datetime, **options: Any) -> planner.Plan:
    """The planner on `want` as rendered for the observed MultigresShard (see `rendered`)."""
    return planner.plan(rendered(want, seen.cr), seen, now, **options)


def live_pod(dp: DesiredPool, index: int, *, ready: bool = True, role: str | None = None,
             drain: str | None = None, reason: str | None = None, terminating: bool = False,
             phase: str = "Running", spec_hash: str | None = None, finalizer: bool = True,
             switchover: str | None = None) -> Manifest:
    pod = dp.pod(index)
    md = pod["metadata"]
    md["uid"] = f"pod-uid-{next(_uids)}"
    md["resourceVersion"] = str(next(_uids))
    md["labels"][keys.LABEL_INDEX] = str(index)
    if role:
        md["labels"][keys.LABEL_ROLE] = role
    if spec_hash is not None:
        md["annotations"][keys.ANN_SPEC_HASH] = spec_hash
    if drain:
        md["annotations"][keys.ANN_DRAIN_STATE] = drain
        md["annotations"][keys.ANN_DRAIN_REQUESTED_AT] = "2026-05-01T11:59:00Z"
        if reason:
            md["annotations"][keys.ANN_DRAIN_REASON] = reason
    if switchover:
        md["annotations"][keys.ANN_SWITCHOVER] = switchover
    if finalizer:
        md["finalizers"] = [keys.FINALIZER_POD]
    if terminating:
        md["deletionTimestamp"] = "2026-05-01T11:58:00Z"
    pod["status"] = {"phase": phase,
                     "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}
    return pod


def live_pvc(dp: DesiredPool, index: int, *, size: str | None = None, owned: bool = False,
             resize_pending: bool = False, annotations: dict[str, str | None] | None = None,
             terminating: bool = False) -> Manifest:
    pvc = dp.pvc(index)
    md = pvc["metadata"]
    md["uid"] = f"pvc-uid-{next(_uids)}"
    md["resourceVersion"] = str(next(_uids))
    if size:
        pvc["spec"]["resources"]["requests"]["storage"] = size
    if owned:
        md["ownerReferences"] = [{"apiVersion": keys.API_GROUP_VERSION, "kind": keys.SHARD_KIND, "name": "demo",
                                  "uid": CR_UID, "controller": True}]
    # As the engine creates them: marked as the shard's (state/ownership.py); None leaves the mark out.
    md["annotations"] = {keys.ANN_OWNER_SHARD: "demo", **(annotations or {})}
    md["annotations"] = {k: v for k, v in md["annotations"].items() if v is not None}
    if terminating:
        md["deletionTimestamp"] = "2026-05-01T11:58:00Z"
    pvc["status"] = {"phase": "Bound"}
    if resize_pending:
        pvc["status"]["conditions"] = [{"type": "FileSystemResizePending", "status": "True"}]
    return pvc


def shard_cr(*, finalizers: tuple[str, ...] = (keys.FINALIZER_SHARD,), deleting: bool = False,
             annotations: dict[str, str] | None = None, status: Manifest | None = None) -> Manifest:
    md: Manifest = {"name": "demo", "namespace": NS, "uid": CR_UID, "resourceVersion": "7", "generation": 3,
                    "finalizers": list(finalizers), "annotations": dict(annotations or {})}
    if deleting:
        md["deletionTimestamp"] = "2026-05-01T11:50:00Z"
    return {"apiVersion": keys.API_GROUP_VERSION, "kind": keys.SHARD_KIND, "metadata": md, "spec": {},
            "status": status or {}}


def healthy(dp: DesiredPool, count: int | None = None, *, primary: int = 0) -> tuple[list[Manifest], list[Manifest]]:
    """`count` (default: replicas) Ready pods with their PVCs; pod `primary` is the PRIMARY."""
    n = dp.replicas if count is None else count
    pods = [live_pod(dp, i, role=keys.Role.PRIMARY if i == primary else keys.Role.REPLICA) for i in range(n)]
    return pods, [live_pvc(dp, i) for i in range(n)]


def observed(pods: Sequence[Manifest] = (), pvcs: Sequence[Manifest] = (), *, cr: Manifest | None = None,
             others: dict[str, tuple[Manifest, ...]] | None = None) -> Observed:
    return Observed(cr=cr, pods=tuple(pods), pvcs=tuple(pvcs), others=others or {})


def drains(plan) -> dict[str, str]:  # type: ignore[no-untyped-def]
    """Pod name -> drain reason, for every drain the plan requests."""
    out = {}
    for action in plan.actions:
        ann = ((action.body or {}).get("metadata") or {}).get("annotations") or {}
        if action.kind == "Pod" and ann.get(keys.ANN_DRAIN_STATE) == keys.DrainState.REQUESTED:
            out[action.name] = ann[keys.ANN_DRAIN_REASON]
    return out


def writes(plan, verb: str | None = None, kind: str | None = None) -> list[str]:  # type: ignore[no-untyped-def]
    """Names touched by the plan's non-event actions, optionally of one verb and kind."""
    return [a.name for a in plan.actions
            if a.verb != "event" and (verb is None or a.verb == verb) and (kind is None or a.kind == kind)]


def events(plan) -> list[str]:  # type: ignore[no-untyped-def]
    return [a.event_reason for a in plan.actions if a.verb == "event"]
