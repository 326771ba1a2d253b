"""The shard conditions Fenced and FenceRefused (keys.ShardCondition), from spec.pools.<pool>.fenced and
the pod condition Fenced that the agent keeps on each listed pod (src/multigres_pools/agent/fence.py).

Pure. The engine does not fence: it repeats what the agent proved (a pod is Fenced=True only once its
pooler reported INELIGIBLE and the primary no longer lists it) and names what was refused and why.
"""

from __future__ import annotations

from collections.abc import Iterable

from ..core import keys
from ..core.conditions import shard_condition as _cond
from ..core.manifest import Manifest
from ..plan.context import unknown_pod_names
from ..state import facts
from ..state.desired import Desired

_WAITING = {keys.FenceReason.PENDING.value, keys.FenceReason.FENCED.value, keys.FenceReason.UNFENCED.value}


def conditions(desired: Desired, pods: Iterable[Manifest]) -> list[Manifest]:
    listed = {name for dp in desired.pools for name in dp.fenced}
    fenced, pending, refused = [], [], unknown_pod_names(desired, "fenced")
    reasons = ["UnknownPod"] if refused else []
    for pod in sorted(pods, key=facts.name):
        name, cond = facts.name(pod), facts.condition(pod, keys.POD_CONDITION_FENCED) or {}
        if name not in listed:
            continue
        reason, message = str(cond.get("reason") or ""), str(cond.get("message") or "")
        if cond.get("status") == "True":
            fenced.append(name)
        elif reason and reason not in _WAITING:
            refused.append(message or f"{name}: {reason}")
            reasons.append(reason)
        else:
            pending.append(message if reason == keys.FenceReason.PENDING else f"{name}: waiting for the agent")
    text = (f"fenced (out of the synchronous set, still running): {', '.join(fenced)}" if fenced else "")
    if pending:
        text = "; ".join([t for t in (text,) if t] + [f"not yet: {p}" for p in pending])
    return [
        _cond(keys.ShardCondition.FENCED, bool(fenced), "PodsFenced" if fenced else "NoneFenced", text),
        _cond(keys.ShardCondition.FENCE_REFUSED, bool(refused), reasons[0] if refused else "NoneRefused",
              "; ".join(refused)),
    ]
