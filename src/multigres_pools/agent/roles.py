"""Role labels (contract §2.6) and pruning of records that no pod backs.

Era A labels a pod with its record's type. From v0.1.0 on the type is published asynchronously and a
restarted old primary keeps a PRIMARY record for tens of seconds, so PRIMARY goes only to the leader
the data plane confirms (`DataPlane.leadership`), REPLICA to every other pooler with a live record.
"""

from __future__ import annotations

from collections.abc import Iterable

from ansible_collections.multigres.pools.plugins.module_utils.core import keys
from ansible_collections.multigres.pools.plugins.module_utils.core.manifest import Manifest

from ..dataplane.base import DataPlaneError, Pooler, match_pod
from . import podinfo, trust
from .context import Context, ShardView

PRIMARY = keys.Role.PRIMARY.value


def _role(rec: Pooler | None, label: str | None, confirmed: bool, leader: Pooler | None) -> str | None:
    if rec is None or rec.role is None:
        return None  # no record, or one that announced its shutdown: the label goes
    if not confirmed or rec.role is keys.Role.DRAINED:
        return rec.role.value
    if leader is not None:
        return PRIMARY if rec.id == leader.id else keys.Role.REPLICA.value
    # No leader confirmed (a failover, or the primary did not answer): nobody is promoted, and a
    # PRIMARY label whose record still says PRIMARY stays: not knowing is not "demoted".
    return PRIMARY if label == PRIMARY and rec.role is keys.Role.PRIMARY else keys.Role.REPLICA.value


def desired_roles(pods: Iterable[Manifest], poolers: list[Pooler], confirmed: bool = False,
                  leader: Pooler | None = None) -> dict[str, str | None]:
    """Pod name -> role label value, or None when the pod has no record (the label must go).

    `confirmed` (v0.1.0): PRIMARY only for `leader`, the confirmed primary."""
    return {podinfo.name(pod): _role(match_pod(poolers, podinfo.name(pod)), podinfo.labels(pod).get(keys.LABEL_ROLE),
                                     confirmed, leader) for pod in pods}


def role_changes(pods: Iterable[Manifest], poolers: list[Pooler], confirmed: bool = False,
                 leader: Pooler | None = None) -> list[tuple[Manifest, str | None]]:
    """(pod, new value) for every live pod whose label differs from what it should be.

    With `confirmed`, a terminating pod still labelled PRIMARY loses the label too once it is not the
    leader, and every PRIMARY label is taken away before one is given: two pods never carry it at once.
    """
    pods = list(pods)
    wanted = desired_roles(pods, poolers, confirmed, leader)
    changes = []
    for pod in pods:
        label, want = podinfo.labels(pod).get(keys.LABEL_ROLE), wanted[podinfo.name(pod)]
        if label == want or (podinfo.deleting(pod) and not (confirmed and label == PRIMARY)):
            continue
        changes.append((pod, want))
    return sorted(changes, key=lambda change: change[1] == PRIMARY)


def publish_roles(ctx: Context, view: ShardView) -> int:
    if view.poolers is None or view.dataplane is None:
        return 0  # unknown is not "gone": keep the labels until the topology answers again
    confirmed = view.dataplane.confirms_leader
    leader = view.leader() if confirmed else None
    changed = 0
    for pod, role in role_changes(view.pods, view.poolers, confirmed, leader):
        ctx.effect("write:role")
        if ctx.kube.patch_pod_meta(pod, labels_={keys.LABEL_ROLE: role}, missing_ok=True) is None:
            continue  # a terminating pod that went away meanwhile
        ctx.metrics.role_publish_lag.observe(max(0.0, ctx.clock() - view.listed_at))
        ctx.metrics.role_changes.labels(role or "none").inc()
        ctx.log.info("role published", extra={"pod": podinfo.name(pod), "role": role})
        changed += 1
    return changed


def prunable(poolers: list[Pooler], pods: list[Manifest]) -> list[Pooler]:
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
    # Only this namespace's records of the shard (trust.py): pods elsewhere that copy its topology
    # have no say over them.
    ours = [r for r in view.poolers if trust.record_belongs(r, view.topology, view.namespace)]
    for rec in prunable(ours, view.pods):
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
