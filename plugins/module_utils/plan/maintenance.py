"""Node maintenance: pool pods leave a cordoned node through our drain, never by eviction.

`kubectl drain` (or a cloud's node upgrade) cordons the node, then evicts its pods. The pool's
PodDisruptionBudget refuses every eviction of a pool pod (render_infra.pod_disruption_budget), so
instead the planner drains the pods of cordoned nodes the way a rolling update does: one at a time
in the whole shard, only while every pool is settled (the previous replacement is Ready), replicas
first and the primary last with a switchover request. Each drained pod is recreated at its index on
its PVC; the scheduler places it elsewhere, or, when its volume is bound to that node (local
storage) or no other node fits, it waits Pending until the node is uncordoned. The eviction loop of
`kubectl drain` sees each pod gone and goes on.

No maintenance window holds it back: cordoning a node is itself the operator's decision to move work
off it now, and a drain waiting hours for a window would hang `kubectl drain`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..core import keys
from ..state import facts
from ..state.facts import PodFacts
from .actions import Action
from .context import Context
from .drain import restart
from .pool import PoolOutcome


@dataclass
class MaintenanceOutcome:
    # Pool pods (not being deleted) on a cordoned node, as "pod (node)".
    leaving: list[str] = field(default_factory=list)
    actions: list[Action] = field(default_factory=list)
    waiting: str | None = None

    @property
    def in_progress(self) -> bool:
        return bool(self.leaving)


def _unscheduled(outcomes: list[PoolOutcome]) -> list[str]:
    """Pods the scheduler could not place, with its reason: what a stalled maintenance waits for."""
    out = []
    for outcome in outcomes:
        for pod in outcome.view.ordered():
            scheduled = facts.condition(pod.obj, "PodScheduled")
            if scheduled is not None and scheduled.get("status") == "False":
                why = str(scheduled.get("message") or scheduled.get("reason") or "").rstrip(".")
                out.append(f"{pod.name} is not scheduled: {why}")
    return out


def plan_maintenance(ctx: Context, outcomes: list[PoolOutcome]) -> MaintenanceOutcome:
    cordoned = ctx.observed.cordoned
    if not cordoned:
        return MaintenanceOutcome()
    on_cordoned: list[PodFacts] = [p for o in outcomes for p in o.view.members()
                                   if p.node in cordoned and not p.terminating]
    result = MaintenanceOutcome(leaving=[f"{p.name} ({p.node})" for p in on_cordoned])
    if not on_cordoned:
        return result
    what = f"node maintenance ({len(on_cordoned)} pod(s) on cordoned nodes {', '.join(sorted(cordoned))})"
    busy = [o for o in outcomes if o.busy]
    if busy:
        unscheduled = _unscheduled(busy)
        result.waiting = (f"{what} waits for pools to settle: {', '.join(o.view.label for o in busy)}"
                          + (f" ({'; '.join(unscheduled)}; uncordon the node or make room elsewhere)"
                             if unscheduled else ""))
        return result
    drainable = [p for p in on_cordoned if not p.drain_unknown]
    if not drainable:
        result.waiting = f"{what} waits: pods with an unknown drain state are left alone"
        return result
    replicas = [p for p in drainable if not p.is_primary]
    victim = replicas[0] if replicas else drainable[0]
    why = f"its node {victim.node} is cordoned" + (" (replicas first)" if replicas else " (primary last)")
    result.actions = restart(ctx, victim, keys.DrainReason.NODE_MAINTENANCE, why)
    return result
