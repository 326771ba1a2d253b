"""Fencing: a pod listed in `spec.pools.<pool>.fenced` is kept out of the synchronous set, not deleted.

Multigres v0.1.0 has one lever for this (shared/reference/multigres-v0.1.md §2): StopReplication with a
receiver-stopping mode makes the pooler report INELIGIBLE, multiorch removes it from the cohort (so from
synchronous_standby_names) and never adds it back; StartReplication undoes it. The flag lives in the
pooler's memory only, so every pass looks again and fences a restarted pooler anew.

`decide` is pure; `run_fence` gathers its facts, acts, and reports on the pod (condition Fenced, the
marker annotation keys.ANN_FENCED, events); the engine repeats the pod conditions on the shard.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from ansible_collections.multigres.pools.plugins.module_utils.core import keys
from ansible_collections.multigres.pools.plugins.module_utils.core.manifest import Manifest
from ansible_collections.multigres.pools.plugins.module_utils.state import facts

from ..dataplane.base import DataPlaneError, Eligibility
from . import podinfo
from .context import Context, ShardView

Reason = keys.FenceReason


class Step(StrEnum):
    NONE = "none"  # not listed and never fenced: nothing to do
    FENCE = "fence"  # StopReplication (after writing the marker)
    UNFENCE = "unfence"  # StartReplication, then drop the marker
    REPORT = "report"  # only the condition: fenced already, refused, or waiting


@dataclass(frozen=True)
class Facts:
    listed: bool
    applied: bool  # keys.ANN_FENCED is on the pod: this agent fenced it
    supported: bool = True  # the data plane can make a standby ineligible (v0.1.0)
    is_primary: bool = False
    eligibility: Eligibility | None = None  # None: the pooler has no record or did not answer
    in_sync_set: bool | None = None  # None: the primary could not be read
    durable_without: bool = True  # the cohort still meets its durability policy without the pod
    detail: str = ""  # why something could not be read


@dataclass(frozen=True)
class Decision:
    step: Step
    fenced: bool  # the condition's status
    reason: keys.FenceReason
    message: str


def decide(f: Facts) -> Decision:
    if not f.listed:
        if f.applied:
            return Decision(Step.UNFENCE, False, Reason.UNFENCED, "no longer listed: replication restarted, "
                            "multiorch adds the standby back to the synchronous set")
        return Decision(Step.NONE, False, Reason.UNFENCED, "not listed in spec.pools.<pool>.fenced")
    if not f.supported:
        return Decision(Step.REPORT, False, Reason.UNSUPPORTED, "this Multigres version cannot take a standby "
                        f"out of the synchronous set (fencing needs {keys.MultigresVersion.V0_1_0}); nothing changed")
    if f.is_primary:
        return Decision(Step.REPORT, False, Reason.PRIMARY, "it is the primary: fencing it would stop every write; "
                        "nothing changed (replace it through a rolling update or decommission instead)")
    if f.eligibility is None or f.in_sync_set is None:
        return Decision(Step.REPORT, False, Reason.PENDING, f"cannot be fenced now: {f.detail}; retried")
    if f.eligibility is Eligibility.INELIGIBLE:
        if f.in_sync_set:
            return Decision(Step.REPORT, False, Reason.PENDING, "ineligible, waiting for multiorch to take it out "
                            "of the synchronous set")
        return Decision(Step.REPORT, True, Reason.FENCED, "out of the synchronous set, WAL receiver stopped; "
                        "the pod keeps running")
    if f.in_sync_set and not f.durable_without:
        return Decision(Step.REPORT, False, Reason.DURABILITY, "the synchronous set would fall below the "
                        f"durability policy without it, and writes would block; nothing changed ({f.detail})")
    return Decision(Step.FENCE, False, Reason.PENDING, "being fenced")


def listed_pods(shard: Manifest | None) -> set[str]:
    """Every pod name in spec.pools.<pool>.fenced of the shard."""
    return podinfo.cr_pod_list(shard, "fenced")


def concerns(pod: Manifest, listed: set[str]) -> bool:
    """Whether fencing has anything to do or report for this pod."""
    cond = facts.condition(pod, keys.POD_CONDITION_FENCED)
    return (podinfo.name(pod) in listed or keys.ANN_FENCED in podinfo.annotations(pod)
            or (cond is not None and cond.get("reason") != Reason.UNFENCED))


def gather(view: ShardView, pod: Manifest, listed: bool) -> Facts:
    applied = keys.ANN_FENCED in podinfo.annotations(pod)
    plane = view.dataplane
    if plane is None or view.poolers is None:
        return Facts(listed, applied, detail=f"topology unreadable ({view.topology_error})")
    if not plane.supports_eligibility:
        return Facts(listed, applied, supported=False)
    if not listed:
        return Facts(listed, applied)
    if view.is_primary(pod):
        return Facts(listed, applied, is_primary=True)
    own, own_id = view.own(pod), view.own_id(pod)
    if own is None or own_id is None:
        return Facts(listed, applied, detail="its pooler has no topology record")
    try:
        eligibility = plane.standby_state(own).eligibility
    except DataPlaneError as exc:
        return Facts(listed, applied, detail=f"its pooler did not answer ({exc.reason})")
    primary = view.primary_other_than(pod)
    if primary is None:
        return Facts(listed, applied, eligibility=eligibility, detail="no confirmed primary")
    try:
        sync = view.sync_replication(primary, pod)
    except DataPlaneError as exc:
        return Facts(listed, applied, eligibility=eligibility, detail=f"the primary did not answer ({exc.reason})")
    policy = sync.durability
    detail = (f"synchronous set {len(sync.cohort)} with the primary, policy at least {policy.required}"
              if policy else "")
    return Facts(listed, applied, eligibility=eligibility, in_sync_set=sync.lists(own_id),
                 durable_without=sync.durable_without(own_id), detail=detail)


def run_fence(ctx: Context, view: ShardView, pod: Manifest, listed: set[str]) -> bool:
    """Apply, hold, undo or refuse the fence of one pod; returns True when something was changed."""
    name = podinfo.name(pod)
    d = decide(gather(view, pod, name in listed))
    acted = False
    if d.step is Step.NONE:
        cond = facts.condition(pod, keys.POD_CONDITION_FENCED)
        if cond is None or cond.get("reason") == Reason.UNFENCED:
            return False
    elif d.step is Step.FENCE:
        if keys.ANN_FENCED not in podinfo.annotations(pod):
            # Written before the RPC, so an unfence after a crash at any point undoes it.
            ctx.effect("write:fenced")
            pod = ctx.kube.patch_pod_meta(pod, annotations={keys.ANN_FENCED: "true"}, precondition=True) or pod
        own = view.own(pod)
        assert own is not None and view.dataplane is not None, "gather found the pod's pooler"
        ctx.effect("fence")
        try:
            view.dataplane.make_ineligible(own)
        except DataPlaneError as exc:
            d = Decision(Step.REPORT, False, Reason.PENDING, f"StopReplication failed ({exc.message}); retried")
        else:
            _leave_cohort(ctx, view, pod)
        acted = True
    elif d.step is Step.UNFENCE:
        own = view.own(pod)
        if own is None or view.dataplane is None or view.poolers is None:
            d = Decision(Step.REPORT, False, Reason.PENDING, "unfence waits for the pooler's topology record")
        else:
            ctx.effect("unfence")
            try:
                view.dataplane.make_eligible(own)
            except DataPlaneError as exc:
                d = Decision(Step.REPORT, False, Reason.PENDING, f"StartReplication failed ({exc.message}); retried")
            else:
                ctx.effect("write:fenced")
                pod = ctx.kube.patch_pod_meta(pod, annotations={keys.ANN_FENCED: None}) or pod
                acted = True
    _report(ctx, view, pod, d)
    return acted


def _leave_cohort(ctx: Context, view: ShardView, pod: Manifest) -> None:
    """The INELIGIBLE standby's REMOVE, sent at once rather than left to multiorch: multiorch's
    ReplicaNotReplicating runs before its cohort check and, while the rule has not moved, restarts the
    standby's PostgreSQL (RewindToSource) first, measured at 13 s. With the rule advanced its
    SetTermPrimary is refused ("replication manually stopped") and nothing restarts. Multiorch cannot
    race us back in: it never adds an INELIGIBLE pooler. A refusal (durability) leaves it to multiorch."""
    primary, own_id = view.primary_other_than(pod), view.own_id(pod)
    if primary is None or own_id is None or view.dataplane is None:
        return
    ctx.effect("remove-standby")
    try:
        view.dataplane.remove_standby(primary, own_id)
    except DataPlaneError as exc:
        ctx.log.info("fence: REMOVE left to multiorch", extra={"pod": podinfo.name(pod), "detail": exc.message})


def _report(ctx: Context, view: ShardView, pod: Manifest, d: Decision) -> None:
    """The pod condition, and an event whenever its status or reason changes."""
    before = facts.condition(pod, keys.POD_CONDITION_FENCED) or {}
    status = "True" if d.fenced else "False"
    if (before.get("status"), before.get("reason")) == (status, d.reason.value):
        return
    name = podinfo.name(pod)
    ctx.effect("write:fence-condition")
    ctx.kube.set_pod_condition(pod, keys.POD_CONDITION_FENCED, status, d.reason.value, f"{name}: {d.message}")
    event, warning = {Reason.FENCED: ("Fenced", False), Reason.UNFENCED: ("Unfenced", False),
                      Reason.PENDING: ("FencePending", False)}.get(d.reason, ("FenceRefused", True))
    ctx.log.info("fence", extra={"pod": name, "reason": d.reason.value, "detail": d.message})
    for target in view.event_targets(pod):
        ctx.kube.event(target, event, f"{name}: {d.message}", warning=warning)
