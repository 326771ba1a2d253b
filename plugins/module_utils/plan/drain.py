"""Drain requests, cancellations, victim choice and the primary's switchover.

The engine never talks to Multigres: it asks the agent to drain a pod by annotating it (contract
§3.3/§3.4: state=requested plus requested-at, and our reason), and the agent walks the pod through
draining → acknowledged → ready-for-deletion, unregistering it from the topology on the way.
"""

from __future__ import annotations

from ..core import keys
from ..core.manifest import Manifest
from ..state import drain_annotations, facts
from ..state.facts import PodFacts
from . import actions
from .actions import Action, Phase
from .context import Context, PoolView

PRIMARY_PENALTY = -1000  # seed 000 "Pod Selection for Scale-Down": strongly disfavour the primary
NOT_READY_BONUS = 500  # contract §3.4: a not-ready pod beats any index
# A pod taking a base backup: its drain would wait for the backup (agent), so another standby goes
# first; still preferred to the primary, and a not-ready one still goes first.
BACKUP_PENALTY = -250
DRAIN_REQUESTED = "DrainRequested"  # the event reason of every drain request (plan/stuck.py looks for it)


def score(pod: PodFacts) -> int:
    """Seed 000 / contract §3.4 `selectPodToDrain`: the highest score is drained first."""
    return (pod.index + (PRIMARY_PENALTY if pod.is_primary else 0) + (0 if pod.ready else NOT_READY_BONUS)
            + (BACKUP_PENALTY if pod.backing_up else 0))


def pick_victim(candidates: list[PodFacts]) -> tuple[PodFacts, str]:
    """The scale-down victim and the words that explain the choice."""
    victim = max(candidates, key=lambda p: (score(p), p.index))
    if victim.is_primary:
        why = "primary, no other candidate"
    elif not victim.ready:
        why = "not ready, not primary"
    elif victim.backing_up:
        why = "taking a backup, but no other standby is a candidate"
    else:
        why = "highest index, not primary"
    return victim, why


def request_drain(ctx: Context, pod: PodFacts, reason: keys.DrainReason, why: str) -> list[Action]:
    """Annotate the pod (conditional on its resourceVersion) and record a DrainRequested event. The
    primary also gets the switchover annotation: the agent hands its role over before (or, where
    Multigres has no switchover API, through failover after) the drain (docs/agent.md)."""
    ann = {
        keys.ANN_DRAIN_STATE: str(keys.DrainState.REQUESTED),
        keys.ANN_DRAIN_REQUESTED_AT: ctx.stamp,
        keys.ANN_DRAIN_REASON: str(reason),
    }
    if pod.is_primary:
        ann[keys.ANN_SWITCHOVER] = ctx.stamp
    text = f"drain pod {pod.name}: {reason}, {why}"
    return [actions.patch(pod.obj, {"metadata": {"annotations": ann}}, text, Phase.ANNOTATE),
            ctx.event(pod.obj, "Normal", DRAIN_REQUESTED, text)]


def stuck_again(pod: PodFacts, pvc: Manifest | None) -> bool:
    """Is `pod`'s PostgreSQL stuck down (keys.ANN_POSTGRES_STUCK) on a volume an earlier stuck pod was
    already recreated on (keys.ANN_POSTGRES_STUCK_ON, plan/stuck.py)? Then its data is what fails."""
    if pvc is None or not pod.postgres_stuck:
        return False
    earlier = facts.annotations(pvc).get(keys.ANN_POSTGRES_STUCK_ON)
    return bool(earlier) and earlier != pod.uid


def drained_pvc_marks(view: PoolView) -> list[Action]:
    """Seed 000: a DRAINED pod's data is known-bad, so its PVC goes with it regardless of whenScaled.
    The PVC is marked while the pod is DRAINED (and unmarked if it recovers), so the decision
    survives the pod even when it is deleted and unregistered between two passes. So does the volume
    of a pod stuck on it a second time (stuck_again); a Ready pod clears that volume's stuck mark."""
    out = []
    for pod in view.ordered():
        pvc = view.pvcs.get(pod.index)
        if pvc is None or facts.is_terminating(pvc):
            continue
        mark = facts.annotations(pvc).get(keys.ANN_DELETE_WITH_POD)
        name = facts.name(pvc)
        if pod.ready and not pod.postgres_stuck and keys.ANN_POSTGRES_STUCK_ON in facts.annotations(pvc):
            cleared = {"metadata": {"annotations": {keys.ANN_POSTGRES_STUCK_ON: None}}}
            out.append(actions.patch(pvc, cleared, f"PVC {name}: PostgreSQL runs on it again in pod {pod.name}",
                                     Phase.ANNOTATE))
        # A decommissioned pod's volume goes too: its replacement starts on a fresh one, and the index
        # is not reused while the name stays listed.
        again = stuck_again(pod, pvc)
        goes = pod.is_drained or view.decommissioned(pod) or again
        why = ("DRAINED pod {} (its data is known-bad)" if pod.is_drained else
               "pod {}, whose PostgreSQL stayed down on it twice (its data is what fails)" if again else
               "decommissioned pod {}")
        if goes and mark != pod.uid:
            body = {"metadata": {"annotations": {keys.ANN_DELETE_WITH_POD: pod.uid}}}
            out.append(actions.patch(pvc, body, f"mark PVC {name} for deletion with {why.format(pod.name)}",
                                     Phase.ANNOTATE))
        elif not goes and mark and mark == pod.uid:
            body = {"metadata": {"annotations": {keys.ANN_DELETE_WITH_POD: None}}}
            out.append(actions.patch(pvc, body, f"unmark PVC {name}: pod {pod.name} is no longer DRAINED, "
                                                "decommissioned or stuck", Phase.ANNOTATE))
    return out


def switchover_blocked(pod: PodFacts) -> str | None:
    """Why the agent will not let the primary go on a requested switchover, or None. Such a request
    ends there, refused, rather than holding the shard's drains until someone notices (plan_switchover)."""
    if pod.drain_reason != keys.DrainReason.SWITCHOVER or pod.drain_state != keys.DrainState.REQUESTED:
        return None
    return facts.annotations(pod.obj).get(keys.ANN_DRAIN_BLOCKED) or None


def cancel_reason(view: PoolView, pod: PodFacts, cordoned: frozenset[str] = frozenset()) -> str | None:
    """Why a drain still in `requested` is no longer wanted, or None to keep it (contract §3.4a).
    Once `draining`, the agent has acted on the primary: never cancelled (seed 000)."""
    if pod.drain_state != keys.DrainState.REQUESTED or pod.terminating or pod.is_drained:
        return None
    if pod.drain_reason == keys.DrainReason.SCALE_DOWN:
        others = [p for p in view.members() if p.name != pod.name]
        if len(others) < view.dp.replicas:
            return f"desired replicas of {view.label} rose to {view.dp.replicas} again"
    elif pod.drain_reason == keys.DrainReason.ROLLING_UPDATE:
        if pod.spec_hash == view.dp.spec_hash:
            return "its spec matches the desired spec again"
    elif pod.drain_reason == keys.DrainReason.FILESYSTEM_RESIZE and not view.resize_pending(pod.index):
        return "its volume no longer waits for a filesystem resize"
    elif pod.drain_reason == keys.DrainReason.DECOMMISSION and not view.decommissioned(pod):
        return f"it left spec.pools.{view.dp.pool}.decommission"
    elif pod.drain_reason == keys.DrainReason.NODE_MAINTENANCE and pod.node not in cordoned:
        return f"its node {pod.node} is schedulable again"
    elif pod.drain_reason == keys.DrainReason.POSTGRES_STUCK and not pod.postgres_stuck:
        return "its PostgreSQL runs again"
    elif blocked := switchover_blocked(pod):
        return f"the switchover was refused: the agent will not let the primary go ({blocked})"
    return None


def cancel_drain(ctx: Context, pod: PodFacts, why: str) -> list[Action]:
    """Every annotation the drain left goes with it (the agent's blocked-reason, state-since, a force
    not yet used); only made-ineligible stays, for the agent to undo (drain_annotations.CANCEL_CLEARS)."""
    body = {"metadata": {"annotations": dict.fromkeys(drain_annotations.CANCEL_CLEARS)}}
    text = f"cancel drain of pod {pod.name}: {why}"
    return [actions.patch(pod.obj, body, text, Phase.ANNOTATE), ctx.event(pod.obj, "Normal", "DrainCancelled", text)]


def restart(ctx: Context, pod: PodFacts, reason: keys.DrainReason, why: str) -> list[Action]:
    """Drain a pod so it is recreated (rolling update, filesystem resize). For the primary the
    reason says so; the drain request itself carries the switchover annotation."""
    if pod.is_primary:
        why = f"{why}; primary: switchover requested"
    return request_drain(ctx, pod, reason, why)
