"""The readiness gate that keeps a writable non-leader out of service (docs/agent.md, "Readiness gate").

A pool pod's containers can all be ready while its PostgreSQL is out of recovery although another
pooler leads the shard: an old primary restarted without standby.signal, a standby promoted by hand,
an upstream race (docs/agent.md, "Primary handover"). multipooler's own /ready cannot tell, because
the pooler only knows its own, possibly stale, rule. The agent asks every pooler of the shard in one
round (the same round the role labels use), so it can: each v0.1.0 pool pod carries the readiness gate
`keys.POD_READINESS_GATE`, and the agent sets it True for the named leader and for poolers in recovery,
False for a writable pooler that is not the leader. A pod whose pooler does not answer keeps what it
has: not knowing is not a verdict.
"""

from __future__ import annotations

from dataclasses import dataclass

from ansible_collections.multigres.pools.plugins.module_utils.core import keys
from ansible_collections.multigres.pools.plugins.module_utils.core.manifest import Manifest
from ansible_collections.multigres.pools.plugins.module_utils.state import facts

from ..dataplane.base import Leadership, PoolerId
from . import podinfo
from .context import Context, ShardView

Reason = keys.RecoveryGateReason


@dataclass(frozen=True)
class Verdict:
    ready: bool
    reason: Reason
    message: str


def gated(pod: Manifest) -> bool:
    """Whether the pod's spec carries our readiness gate (v0.1.0 pool pods rendered since it exists)."""
    gates = (pod.get("spec") or {}).get("readinessGates") or []
    return any(g.get("conditionType") == keys.POD_READINESS_GATE for g in gates)


def verdict(pooler: PoolerId | None, leadership: Leadership) -> Verdict | None:
    """What the gate says for one pooler, or None when the round does not tell (no answer, starting)."""
    if pooler is None:
        return None
    if pooler in leadership.in_recovery:
        return Verdict(True, Reason.STANDBY, f"{pooler}: PostgreSQL is in recovery")
    if pooler not in leadership.writable or leadership.named is None:
        return None
    if pooler == leadership.named:
        return Verdict(True, Reason.LEADER, f"{pooler}: PostgreSQL is out of recovery and leads the newest rule")
    return Verdict(False, Reason.WRITABLE_STANDBY, f"{pooler}: PostgreSQL is out of recovery but "
                   f"{leadership.named} leads the shard; kept unready until it is back in recovery")


def publish_recovery_gate(ctx: Context, view: ShardView) -> int:
    """Set the gate on every live gated pod whose verdict changed; the number of pods written."""
    plane = view.dataplane
    if view.poolers is None or plane is None or not plane.confirms_leader:
        return 0
    pods = [p for p in view.pods if gated(p) and not podinfo.deleting(p)]
    if not pods:
        return 0
    leadership = view.leadership()
    written = 0
    for pod in pods:
        found = verdict(view.own_id(pod), leadership)
        before = facts.condition(pod, keys.POD_READINESS_GATE) or {}
        if found is None or (before.get("status"), before.get("reason")) == (str(found.ready), found.reason.value):
            continue
        ctx.effect("write:recovery-gate")
        ctx.kube.set_pod_condition(pod, keys.POD_READINESS_GATE, str(found.ready), found.reason.value, found.message)
        written += 1
        if not found.ready:
            ctx.log.warning("writable standby kept unready", extra={"pod": podinfo.name(pod), "detail": found.message})
            for target in view.event_targets(pod):
                ctx.kube.event(target, keys.ShardCondition.WRITABLE_STANDBY.value, found.message, warning=True)
        elif before.get("status") == "False":
            ctx.log.info("standby back in recovery", extra={"pod": podinfo.name(pod)})
            for target in view.event_targets(pod):
                ctx.kube.event(target, "BackInRecovery", found.message)
    return written
