"""Role labels from pooler records (contract §2.6) and pruning of records that no pod backs."""

from __future__ import annotations

from collections.abc import Iterable

from ansible_collections.multigres.pools.plugins.module_utils import keys

from ..dataplane.base import DataPlaneError, Pooler, match_pod
from . import podinfo
from .context import Context, Obj, ShardView


def desired_roles(pods: Iterable[Obj], poolers: list[Pooler]) -> dict[str, str | None]:
    """Pod name -> role label value, or None when the pod has no record (the label must go)."""
    out = {}
    for pod in pods:
        rec = match_pod(poolers, podinfo.name(pod))
        out[podinfo.name(pod)] = rec.role.value if rec is not None and rec.role is not None else None
    return out


def role_changes(pods: Iterable[Obj], poolers: list[Pooler]) -> list[tuple[Obj, str | None]]:
    """(pod, new value) for every live pod whose label differs from its record."""
    live = [p for p in pods if not podinfo.deleting(p)]
    wanted = desired_roles(live, poolers)
    return [(p, wanted[podinfo.name(p)]) for p in live
            if podinfo.labels(p).get(keys.LABEL_ROLE) != wanted[podinfo.name(p)]]


def publish_roles(ctx: Context, view: ShardView) -> int:
    if view.poolers is None:
        return 0  # unknown is not "gone": keep the labels until the topology answers again
    changed = 0
    for pod, role in role_changes(view.pods, view.poolers):
        ctx.effect("write:role")
        ctx.kube.patch_pod_meta(pod, labels_={keys.LABEL_ROLE: role})
        ctx.metrics.role_publish_lag.observe(max(0.0, ctx.clock() - view.listed_at))
        ctx.metrics.role_changes.labels(role or "none").inc()
        ctx.log.info("role published", extra={"pod": podinfo.name(pod), "role": role})
        changed += 1
    return changed


def prunable(poolers: list[Pooler], pods: list[Obj]) -> list[Pooler]:
    """Records of the shard that match no pod (deleting pods count as present).

    A PRIMARY record is never pruned: the primary's pod may be momentarily absent while it is being
    recreated, and deleting its record would hide the primary from everyone until it re-registers.
    """
    names = [podinfo.name(p) for p in pods]
    return [r for r in poolers
            if r.role is not keys.Role.PRIMARY and not any(r.matches_pod(n) for n in names)]


def prune(ctx: Context, view: ShardView) -> list[str]:
    if not ctx.config.prune or view.poolers is None or view.dataplane is None or not view.pods:
        return []
    gone = []
    for rec in prunable(view.poolers, view.pods):
        ctx.effect("prune")
        try:
            view.dataplane.unregister(view.topology, rec.id)
        except DataPlaneError as exc:
            ctx.log.warning("prune failed", extra={"pooler": str(rec.id), "detail": exc.message})
            continue
        gone.append(str(rec.id))
    if gone:
        ctx.metrics.poolers_pruned.inc(len(gone))
        msg = f"pruned pooler records with no pod: {', '.join(gone)}"
        ctx.log.info("poolers pruned", extra={"poolers": gone})
        target = view.shard or view.pods[0]
        ctx.kube.event(target, "PoolersPruned", msg)
    return gone
