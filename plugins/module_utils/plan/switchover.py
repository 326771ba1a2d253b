"""Moving the primary away on demand: `pools.multigres.com/switchover-request` on the MultigresShard.

Multigres v0.1.0 has no switchover RPC: a primary leaves when its pod goes. So an accepted request is
a drain of the primary (reason `switchover`), the step a rolling update ends with: the agent lets the
primary go only while it has a connected synchronous standby (fail closed), hurries multiorch's
election while the pod terminates, and the pod comes back on its volume as a standby (docs/agent.md,
"Primary handover"). multiorch picks the new primary: the synchronous standby with the most advanced
WAL position. A named target is validated like `any` and then refused, because v0.1.0 cannot elect
a chosen pod.

An annotation, not a spec field: a switchover is an act, not a state to keep. A field held in Git
would ask for a switchover on every sync, and the engine clearing it would show as drift. The engine
decides once per request, removes the annotation and writes its decision to
`pools.multigres.com/switchover-state` (status.switchover); a refusal changes nothing else.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from ..core import keys
from ..core.manifest import Manifest
from ..state import facts
from ..state.facts import PodFacts
from . import actions
from .actions import Action, Phase
from .context import Context, PoolView
from .drain import request_drain, switchover_blocked
from .maintenance import MaintenanceOutcome
from .pool import PoolOutcome
from .rolling import RollingOutcome


@dataclass
class SwitchoverOutcome:
    actions: list[Action] = field(default_factory=list)
    refused: str | None = None  # why the request was refused (also in the event and the state)


@dataclass(frozen=True)
class Shard:
    """The pods of every pool with the view that holds each, and what else is going on."""

    pods: list[tuple[PoolView, PodFacts]]
    busy: str | None  # a drain, a rolling update, node maintenance, pods not Ready: why a switchover must wait

    def primaries(self) -> list[PodFacts]:
        return [p for _view, p in self.pods if p.is_primary and not p.terminating]


def _busy(outcomes: list[PoolOutcome], rolling: RollingOutcome, maintenance: MaintenanceOutcome) -> str | None:
    draining = [f"{p.name} ({p.drain_reason or 'drain'})" for o in outcomes for p in o.view.ordered()
                if p.in_drain or p.terminating]
    if draining:
        return f"a drain is running: {', '.join(draining)}"
    if rolling.in_progress:
        return f"a rolling update is in progress ({rolling.progress}); its last step replaces the primary"
    if maintenance.in_progress:
        return f"node maintenance is in progress: {', '.join(maintenance.leaving)}"
    unsettled = [o.view.label for o in outcomes if o.busy]
    if unsettled:
        return f"pools are changing: {', '.join(unsettled)} (every replica must be Ready)"
    return None


def _standby_problem(view: PoolView, pod: PodFacts) -> str | None:
    """Why this pod cannot take over (the engine's view: the agent checks replication itself)."""
    if pod.is_primary:
        return "is the primary"
    if pod.terminating or pod.in_drain:
        return "is being drained"
    if pod.is_drained or view.decommissioned(pod):
        return "is DRAINED or decommissioned"
    if view.fenced(pod):
        return f"is fenced (spec.pools.{view.dp.pool}.fenced)"
    if not pod.ready:
        return "is not Ready"
    return None


def _refusal(request: str, shard: Shard) -> str | None:
    """Why the request is refused, or None. What is wrong with a named target comes first (the most
    specific reason), then whatever is going on in the shard."""
    if not request:
        return f"the value is empty: use {keys.SWITCHOVER_ANY!r} or the name of a pool pod"
    problems = {p.name: _standby_problem(view, p) for view, p in shard.pods}
    named = request != keys.SWITCHOVER_ANY
    if named and request not in problems:
        return f"{request!r} is not a pod of this shard (its pods: {', '.join(sorted(problems))})"
    if named and problems[request] is not None:
        problem = problems[request]
        return f"{request} {'is already the primary' if problem == 'is the primary' else problem}"
    if shard.busy:
        return shard.busy
    primaries = shard.primaries()
    if len(primaries) != 1:
        return ("no pod is labelled PRIMARY" if not primaries else
                f"more than one pod is labelled PRIMARY ({', '.join(p.name for p in primaries)})")
    if named:
        return (f"Multigres v0.1.0 cannot elect a chosen pod: multiorch promotes the synchronous standby with the "
                f"most advanced WAL position; ask for {keys.SWITCHOVER_ANY!r}")
    if any(problem is None for problem in problems.values()):
        return None
    why = "; ".join(f"{name} {problem}" for name, problem in problems.items() if name != primaries[0].name)
    return f"no standby can take over ({why or 'the shard has no other pod'})"


def _decided(ctx: Context, cr: Manifest, request: str, decision: str, message: str,
             primary: PodFacts | None) -> Action:
    """Remove the request and record the decision in one conditional patch of the MultigresShard."""
    state: dict[str, str | None] = {"request": request, "decision": decision, "message": message, "at": ctx.stamp}
    if primary is not None:
        state |= {"from": primary.name, "fromUid": primary.uid}
    body = {"metadata": {"annotations": {keys.ANN_SWITCHOVER_REQUEST: None,
                                         keys.ANN_SWITCHOVER_STATE: json.dumps(state, sort_keys=True)}}}
    return actions.patch(cr, body, f"switchover request {request!r}: {decision.lower()}: {message}",
                         Phase.SHARD)


def _given_up(ctx: Context, pods: list[PodFacts]) -> SwitchoverOutcome:
    """An accepted switchover whose drain the agent blocks (the primary has no standby it may hand over
    to: plan_drain.switchover_blocked) was cancelled by the pool's planner in this pass: say so."""
    cr = ctx.observed.cr
    for pod in pods:
        blocked = switchover_blocked(pod)
        if blocked is None or cr is None:
            continue
        state = facts.json_annotation(cr, keys.ANN_SWITCHOVER_STATE) or {}
        why = f"the agent will not let the primary {pod.name} go: {blocked}; its drain was cancelled"
        request = str(state.get("request") or keys.SWITCHOVER_ANY)
        message = f"{keys.ANN_SWITCHOVER_REQUEST}={request!r} refused: {why}"
        return SwitchoverOutcome([_decided(ctx, cr, request, "Refused", why, pod),
                                  ctx.event(cr, "Warning", "SwitchoverRefused", message)], refused=why)
    return SwitchoverOutcome()


def plan_switchover(ctx: Context, outcomes: list[PoolOutcome], rolling: RollingOutcome,
                    maintenance: MaintenanceOutcome) -> SwitchoverOutcome:
    cr = ctx.observed.cr
    pods = [(o.view, p) for o in outcomes for p in o.view.ordered()]
    raw = facts.annotations(cr).get(keys.ANN_SWITCHOVER_REQUEST) if cr else None
    given_up = _given_up(ctx, [p for _view, p in pods])
    if cr is None or raw is None or given_up.actions:
        return given_up  # a request made while the last one was being given up is answered by that
    request = raw.strip()
    shard = Shard(pods, _busy(outcomes, rolling, maintenance))
    running = [p for _view, p in shard.pods if p.drain_reason == keys.DrainReason.SWITCHOVER
               and (p.in_drain or p.terminating)]
    if running:
        # This request's own drain, whose record a conflict kept from being written, or a second
        # request while the first runs: either way the primary is already leaving.
        return SwitchoverOutcome([_decided(ctx, cr, request, "Accepted",
                                           f"draining the primary {running[0].name}", running[0])])
    refusal = _refusal(request, shard)
    if refusal is not None:
        message = f"{keys.ANN_SWITCHOVER_REQUEST}={raw!r} refused: {refusal}"
        return SwitchoverOutcome([_decided(ctx, cr, request, "Refused", refusal, None),
                                  ctx.event(cr, "Warning", "SwitchoverRefused", message)], refused=refusal)
    primary = shard.primaries()[0]
    why = f"{keys.ANN_SWITCHOVER_REQUEST}={request}: multiorch elects a synchronous standby"
    return SwitchoverOutcome([_decided(ctx, cr, request, "Accepted", f"draining the primary {primary.name}",
                                       primary),
                              *request_drain(ctx, primary, keys.DrainReason.SWITCHOVER, why)])
