"""Shard deletion (seed 000 "Shard deletion handling", "Topology cleanup on deletion").

No drain: the topology goes with the shard, so pods are deleted directly and our pod finalizer is
removed by the engine. The agent is asked to clean the shard's topology entries (annotation on the
CR); when it has not answered after the timeout (2 min, seed 000 `topoCleanupTimeout`) the cleanup
is skipped with a CleanupSkipped warning. Data PVCs follow whenDeleted: Delete removes them,
Retain strips our ownerReference first so the garbage collector can never take them. Last, the
shard's finalizer is released.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..core import keys
from ..state import facts
from ..state.desired import PVCPolicy, backup_pvc_policy
from . import actions
from .actions import Action, Phase
from .context import REQUEUE_DRAIN, Context, PoolView, has_owner_ref, owner_refs_patch

CLEANUP_TIMEOUT = 120.0


@dataclass
class DeleteOutcome:
    actions: list[Action] = field(default_factory=list)
    waiting: list[str] = field(default_factory=list)
    finished: bool = False

    @property
    def requeue_after(self) -> float:
        return REQUEUE_DRAIN if self.waiting else 0.0


def _pods(ctx: Context, out: DeleteOutcome) -> None:
    for pod in sorted(ctx.observed.pods, key=facts.name):
        name = facts.name(pod)
        if not facts.is_terminating(pod):
            out.actions.append(actions.delete(pod, f"delete pod {name}: shard deleted (no drain)",
                                              Phase.DELETE_POD))
        if keys.FINALIZER_POD in facts.finalizers(pod):
            out.actions.append(actions.unfinalize(pod, keys.FINALIZER_POD,
                                                  f"pod {name}: release finalizer, shard deleted",
                                                  Phase.DELETE_POD))
    if ctx.observed.pods:
        out.waiting.append(f"{len(ctx.observed.pods)} pods still exist")


def _topology_cleanup(ctx: Context, out: DeleteOutcome, timeout: float) -> bool:
    """True once the agent cleaned up, or the cleanup was skipped."""
    cr = ctx.observed.cr
    if cr is None:
        return True
    ann = facts.annotations(cr)
    state = ann.get(keys.ANN_TOPOLOGY_CLEANUP)
    if state in (keys.TopologyCleanup.DONE, keys.TopologyCleanup.SKIPPED):
        return True
    if not state:
        body = {"metadata": {"annotations": {keys.ANN_TOPOLOGY_CLEANUP: str(keys.TopologyCleanup.REQUESTED),
                                             keys.ANN_TOPOLOGY_CLEANUP_REQUESTED_AT: ctx.stamp}}}
        out.actions.append(actions.patch(cr, body, "request topology cleanup from the agent", Phase.SHARD,
                                         conditional=False))
        out.waiting.append("topology cleanup requested")
        return False
    since = facts.parse_time(ann.get(keys.ANN_TOPOLOGY_CLEANUP_REQUESTED_AT)) or ctx.now
    waited = (ctx.now - since).total_seconds()
    if waited < timeout:
        out.waiting.append(f"topology cleanup requested {int(waited)}s ago; waiting for the agent")
        return False
    text = f"topology cleanup not confirmed by the agent after {int(waited)}s; skipped, entries may remain"
    body = {"metadata": {"annotations": {keys.ANN_TOPOLOGY_CLEANUP: str(keys.TopologyCleanup.SKIPPED)}}}
    out.actions += [actions.patch(cr, body, text, Phase.SHARD, conditional=False),
                    ctx.event(cr, "Warning", "CleanupSkipped", text)]
    return True


def _volumes(ctx: Context, views: list[PoolView], out: DeleteOutcome) -> None:
    policy_of: dict[str, PVCPolicy] = {}
    for view in views:
        for pvc in view.pvcs.values():
            policy_of[facts.name(pvc)] = view.dp.when_deleted
    shared = backup_pvc_policy(p.when_deleted for p in ctx.desired.pools)
    owner = ctx.owner
    for pvc in sorted(ctx.observed.pvcs, key=facts.name):
        if facts.is_terminating(pvc):
            continue
        name = facts.name(pvc)
        policy = policy_of.get(name, shared)
        if policy is PVCPolicy.DELETE:
            out.actions.append(actions.delete(pvc, f"delete PVC {name}: shard deleted, whenDeleted=Delete",
                                              Phase.DELETE_PVC))
        elif owner and has_owner_ref(pvc, owner):
            out.actions.append(actions.patch(pvc, owner_refs_patch(pvc, owner, keep=False),
                                             f"PVC {name}: whenDeleted=Retain, owner reference removed "
                                             "so it outlives the shard", Phase.DELETE_PVC))


def _others(ctx: Context, out: DeleteOutcome) -> None:
    owner = ctx.owner
    for kind in sorted(ctx.observed.others):
        for obj in sorted(ctx.observed.others[kind], key=facts.name):
            # With a MultigresShard, only what it controls: an unowned object with copied labels stays.
            if not facts.is_terminating(obj) and (owner is None or has_owner_ref(obj, owner)):
                out.actions.append(actions.delete(obj, f"delete {kind} {facts.name(obj)}: shard deleted",
                                                  Phase.DELETE_OTHER))


def plan_delete(ctx: Context, views: list[PoolView], timeout: float = CLEANUP_TIMEOUT) -> DeleteOutcome:
    out = DeleteOutcome()
    _pods(ctx, out)
    cleaned = _topology_cleanup(ctx, out, timeout)
    if ctx.observed.pods:
        return out
    _volumes(ctx, views, out)
    _others(ctx, out)
    cr = ctx.observed.cr
    if cleaned:
        if cr is not None and keys.FINALIZER_SHARD in facts.finalizers(cr):
            out.actions.append(actions.unfinalize(cr, keys.FINALIZER_SHARD,
                                                  "all pods gone, PVCs handled per whenDeleted: release the shard",
                                                  Phase.RELEASE))
        out.finished = True
    return out
