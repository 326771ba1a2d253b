"""A pod whose PostgreSQL stays down is recreated on its volume.

Multigres v0.1.0's manager starts PostgreSQL again after a crash, but once the one it started has
died as well it waits for it for ever (docs/reliability.md, a full standby's disk): the pod stays
not Ready with its liveness probe passing, and nothing in Kubernetes restarts it. The agent marks
such a pod (keys.ANN_POSTGRES_STUCK, after its --stuck-start-after); the planner drains it like a
rolling update drains a pod, so the agent takes it out of the synchronous set and the topology
before it goes, and it is recreated at its index on its PVC, where a fresh multipooler starts
PostgreSQL again.

It is healing, not a change: no maintenance window holds it back, and it does not wait for the
pools to settle (the stuck pod itself is what keeps them unsettled). One at a time in the shard:
nothing starts while any pod is in a drain or terminating, or a pool asks for a drain in this pass.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..core import keys
from ..state.facts import PodFacts
from .actions import Action
from .context import Context
from .drain import restart
from .pool import PoolOutcome

DRAIN_REQUESTED = "DrainRequested"  # the event reason request_drain records


@dataclass
class StuckOutcome:
    stuck: list[str] = field(default_factory=list)  # pods carrying the agent's mark, not yet in a drain
    actions: list[Action] = field(default_factory=list)
    waiting: str | None = None

    @property
    def in_progress(self) -> bool:
        return bool(self.stuck)


def plan_stuck(ctx: Context, outcomes: list[PoolOutcome]) -> StuckOutcome:
    pods = [p for o in outcomes for p in o.view.members()]
    marked = [p for p in pods if p.postgres_stuck and not p.in_drain and not p.terminating and not p.drain_unknown]
    result = StuckOutcome(stuck=[p.name for p in marked])
    if not marked:
        return result
    what = f"replacing pods whose PostgreSQL stays down ({', '.join(result.stuck)})"
    changing = [p.name for p in pods if p.in_drain or p.terminating]
    if changing or any(a.event_reason == DRAIN_REQUESTED for o in outcomes for a in o.actions):
        result.waiting = f"{what} waits for the drain in progress" + (f" ({', '.join(changing)})" if changing else "")
        return result
    victim = next((p for p in marked if not p.is_primary), marked[0])
    result.actions = restart(ctx, victim, keys.DrainReason.POSTGRES_STUCK, _why(victim))
    return result


def _why(pod: PodFacts) -> str:
    since = pod.obj.get("metadata", {}).get("annotations", {}).get(keys.ANN_POSTGRES_STUCK, "")
    return (f"its PostgreSQL is not running and Multigres does not start it again ({keys.ANN_POSTGRES_STUCK}: "
            f"{since}); it is recreated on its volume")
