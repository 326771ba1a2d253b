"""A pod whose PostgreSQL stays down is recreated: on its volume, and on a fresh one if that was tried.

Multigres v0.1.0 leaves PostgreSQL down for ever in two ways (docs/reliability.md): its manager,
once the PostgreSQL it started has died as well, waits for it without end (a full standby's disk);
and a demoted old primary whose WAL went past the new primary's fork fails every start as a
standby. The pod stays not Ready with its liveness probe passing, and nothing in Kubernetes restarts
it. The agent marks such a pod (keys.ANN_POSTGRES_STUCK, after its --stuck-start-after); the planner
drains it like a rolling update drains a pod, so the agent takes it out of the synchronous set and
the topology before it goes, and it is recreated at its index on its PVC, where a fresh multipooler
starts PostgreSQL again. The PVC remembers that (keys.ANN_POSTGRES_STUCK_ON): when the pod recreated
on it is stuck as well, the data itself is what fails, and the volume goes with that pod
(drain.drained_pvc_marks, which also clears the mark once a pod on the volume is Ready); its
replacement restores from the backup repository on a new one.

It is healing, not a change: no maintenance window holds it back, and it does not wait for the
pools to settle (the stuck pod itself is what keeps them unsettled). One at a time in the shard:
nothing starts while any pod is in a drain or terminating, or a pool asks for a drain in this pass.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..core import keys
from ..state import facts
from ..state.facts import PodFacts
from . import actions
from .actions import Action, Phase
from .context import Context
from .drain import DRAIN_REQUESTED, restart, stuck_again
from .pool import PoolOutcome


@dataclass
class StuckOutcome:
    stuck: list[str] = field(default_factory=list)  # pods carrying the agent's mark, not yet in a drain
    actions: list[Action] = field(default_factory=list)
    waiting: str | None = None

    @property
    def in_progress(self) -> bool:
        return bool(self.stuck)


def plan_stuck(ctx: Context, outcomes: list[PoolOutcome]) -> StuckOutcome:
    views = {p.name: o.view for o in outcomes for p in o.view.members()}
    marked = [p for o in outcomes for p in o.view.members()
              if p.postgres_stuck and not p.in_drain and not p.terminating and not p.drain_unknown]
    result = StuckOutcome(stuck=[p.name for p in marked])
    if not marked:
        return result
    what = f"replacing pods whose PostgreSQL stays down ({', '.join(result.stuck)})"
    changing = [p.name for o in outcomes for p in o.view.ordered() if p.in_drain or p.terminating]
    if changing or any(a.event_reason == DRAIN_REQUESTED for o in outcomes for a in o.actions):
        result.waiting = f"{what} waits for the drain in progress" + (f" ({', '.join(changing)})" if changing else "")
        return result
    victim = next((p for p in marked if not p.is_primary), marked[0])
    pvc = views[victim.name].pvcs.get(victim.index)
    again = stuck_again(victim, pvc)
    result.actions = restart(ctx, victim, keys.DrainReason.POSTGRES_STUCK, _why(victim, again))
    if pvc is not None and not again and facts.annotations(pvc).get(keys.ANN_POSTGRES_STUCK_ON) != victim.uid:
        body = {"metadata": {"annotations": {keys.ANN_POSTGRES_STUCK_ON: victim.uid}}}
        result.actions.append(actions.patch(pvc, body, f"PVC {facts.name(pvc)}: pod {victim.name}'s PostgreSQL "
                                                       "stayed down on it", Phase.ANNOTATE))
    return result


def _why(pod: PodFacts, again: bool) -> str:
    since = facts.annotations(pod.obj).get(keys.ANN_POSTGRES_STUCK, "")
    where = ("on a new volume: it was already recreated on this one and stayed down again (its data, e.g. a "
             "diverged old primary's WAL, is what fails)") if again else "on its volume"
    return (f"its PostgreSQL has not been running since {since} and Multigres does not bring it back; it is "
            f"recreated {where}")
