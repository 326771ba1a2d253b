"""Rolling update on spec-hash drift, for the whole shard (seed 000 "Rolling Updates"; seed 002 §9).

- A pod whose `multigres.com/spec-hash` differs from the desired hash is drifted.
- Nothing starts while any pool is changing: a drain in any state, a terminating pod, a missing
  or surplus replica, or a pod that is not Ready. That last gate is what makes "the next pod only
  after the replacement is Ready" hold (the Go operator lacks it).
- One victim at a time in the whole shard: replicas first (pool order, then lowest index), the
  primary last, through a switchover request to the agent before its drain.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..core import keys
from ..state.facts import PodFacts
from .actions import Action
from .context import Context, PoolView
from .drain import restart
from .pool import PoolOutcome


@dataclass
class RollingOutcome:
    updated: int = 0
    total: int = 0
    drifted: list[str] = field(default_factory=list)
    actions: list[Action] = field(default_factory=list)
    waiting: str | None = None
    # Set when the next restart waits for the maintenance window: seconds until it opens.
    deferred_for: float = 0.0
    # Set when the pools it waits for are held only by work deferred to the maintenance window: they
    # settle no sooner than their own requeue (the window's opening), so neither does the roll.
    waits_for_window: bool = False

    @property
    def in_progress(self) -> bool:
        return bool(self.drifted)

    @property
    def progress(self) -> str:
        return f"{self.updated}/{self.total} pods updated"


def plan_rolling(ctx: Context, outcomes: list[PoolOutcome], held_by: str | None = None) -> RollingOutcome:
    """`held_by` names work that goes first (node maintenance): the roll then only reports progress."""
    drifted: list[tuple[PoolView, PodFacts]] = []
    total = 0
    for outcome in outcomes:
        view = outcome.view
        for pod in view.members():
            total += 1
            if pod.spec_hash != view.dp.spec_hash:
                drifted.append((view, pod))
    result = RollingOutcome(updated=total - len(drifted), total=total, drifted=[p.name for _view, p in drifted])
    if not drifted:
        return result
    if held_by:
        result.waiting = f"rolling update ({result.progress}) waits for {held_by}"
        return result
    busy = [o for o in outcomes if o.busy]
    if busy:
        result.waiting = (f"rolling update ({result.progress}) waits for pools to settle: "
                          f"{', '.join(o.view.label for o in busy)}")
        result.waits_for_window = all(o.deferred for o in busy)
        return result
    # A pod with an unknown drain-state value is left alone (reported in status), never restarted.
    drainable = [(v, p) for v, p in drifted if not p.drain_unknown]
    if not drainable:
        result.waiting = (f"rolling update ({result.progress}) waits: pods with an unknown drain state are left "
                          f"alone: {', '.join(p.name for _view, p in drifted)}")
        return result
    replicas = [(v, p) for v, p in drainable if not p.is_primary]
    view, victim = replicas[0] if replicas else drainable[0]
    deferral = ctx.defer(f"rolling update ({result.progress}, pod {victim.name} next)")
    if deferral is not None:
        result.waiting, result.deferred_for = deferral
        return result
    why = f"spec-hash {victim.spec_hash} != {view.dp.spec_hash} ({result.progress}" + (
        ", replicas first)" if replicas else ", primary last)")
    result.actions = restart(ctx, victim, keys.DrainReason.ROLLING_UPDATE, why)
    return result
