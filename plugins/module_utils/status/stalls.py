"""Stall conditions of a MultigresShard: what is stuck, since when, and what to do (docs/reliability.md).

Pure, from the pods and the MultigresShard the engine already observes:
- AgentStalled: a pool pod waits for the agent past the threshold: Terminating with the agent's
  finalizer (it is not counted as a replica, and this says why it is still there), or a drain
  requested that the agent never took up (no state-since annotation). A dead agent, one without
  its Lease, or one that cannot reach the API server all look like this.
- DrainStalled: a pod carries the agent's DrainStalled=True condition (its drain step is blocked
  past the agent's --stall-after); the pod's own message says how to force that step.
- TopologyUnreachable: the agent's verdict in ANN_TOPOLOGY_HEALTH.

Messages name times, never ages, so an unchanged situation produces an identical status.
"""

from __future__ import annotations

import datetime as dt
import json
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from ..core import keys
from ..core.conditions import shard_condition as _cond
from ..core.manifest import Manifest
from ..state import drain_annotations, facts

DEFAULT_AGENT_STALL_AFTER_S = 300.0
_AGENT_CHECK = (f"check that an agent runs and holds Lease {keys.AGENT_LEASE_NAME} (kubectl -n "
                f"{keys.INSTALL_NAMESPACE} get lease {keys.AGENT_LEASE_NAME}) and read its log")


def configured_agent_stall_after() -> float:
    """The AgentStalled threshold: $MULTIGRES_POOLS_AGENT_STALL_AFTER (set by the operator's
    --agent-stall-after) or the default; ValueError naming the variable for anything else."""
    raw = os.environ.get(keys.ENV_AGENT_STALL_AFTER, "").strip()
    if not raw:
        return DEFAULT_AGENT_STALL_AFTER_S
    try:
        value = float(raw)
    except ValueError:
        value = float("nan")
    if not 0 < value < float("inf"):  # NaN fails both comparisons
        raise ValueError(f"{keys.ENV_AGENT_STALL_AFTER}: {raw!r} is not a positive number of seconds")
    return value


@dataclass(frozen=True)
class Wait:
    """One thing only the agent moves on: the pod, since when, and what it waits for."""

    pod: str
    since: dt.datetime
    what: str


def agent_waits(pods: Iterable[Manifest]) -> list[Wait]:
    out = []
    for pod in pods:
        name, ann = facts.name(pod), facts.annotations(pod)
        if facts.is_terminating(pod) and keys.FINALIZER_POD in facts.finalizers(pod):
            since = facts.parse_time(facts.meta(pod).get("deletionTimestamp"))
            if since is not None:
                out.append(Wait(name, since, f"Terminating with finalizer {keys.FINALIZER_POD}"))
            continue
        reading = drain_annotations.read_state(ann)
        if reading.state is keys.DrainState.REQUESTED and not ann.get(keys.ANN_DRAIN_STATE_SINCE):
            since = facts.parse_time(ann.get(keys.ANN_DRAIN_REQUESTED_AT))
            if since is not None:
                out.append(Wait(name, since, "drain requested, not taken up"))
    return sorted(out, key=lambda w: (w.since, w.pod))


def agent_condition(pods: Iterable[Manifest], now: dt.datetime, stall_after_s: float) -> Manifest:
    stuck = [w for w in agent_waits(pods) if (now - w.since).total_seconds() >= stall_after_s]
    if not stuck:
        return _cond(keys.ShardCondition.AGENT_STALLED, False, "AgentProgressing", "")
    listed = "; ".join(f"pod {w.pod}: {w.what} since {facts.format_time(w.since)}" for w in stuck)
    return _cond(keys.ShardCondition.AGENT_STALLED, True, "PodsWaitingForAgent",
                 f"the agent has not acted for {stall_after_s:g}s on: {listed}. Terminating pods are not "
                 f"counted as replicas. {_AGENT_CHECK.capitalize()}; if the topology etcd is down, "
                 "TopologyUnreachable says so")


def recheck_after(pods: Iterable[Manifest], now: dt.datetime, stall_after_s: float) -> float:
    """Seconds until the next wait crosses the threshold (0: none pending), so the shard is decided
    again then even if nothing else changes."""
    return seconds_until_stuck((w.since for w in agent_waits(pods)), now, stall_after_s)


def seconds_until_stuck(sinces: Iterable[dt.datetime], now: dt.datetime, after_s: float) -> float:
    """Seconds until the first wait that began at one of `sinces` crosses `after_s`, plus a second
    (0: none pending); a pass asks to be decided again then."""
    pending = [left for since in sinces if (left := after_s - (now - since).total_seconds()) > 0]
    return min(pending) + 1.0 if pending else 0.0


def drain_condition(pods: Iterable[Manifest]) -> Manifest:
    stalled = [(facts.name(p), facts.condition(p, keys.POD_CONDITION_DRAIN_STALLED) or {}) for p in pods
               if facts.condition_true(p, keys.POD_CONDITION_DRAIN_STALLED)]
    if not stalled:
        return _cond(keys.ShardCondition.DRAIN_STALLED, False, "DrainsProgressing", "")
    reason = stalled[0][1].get("reason") or "DrainBlocked"
    listed = "; ".join(c.get("message") or f"{name}: drain stalled" for name, c in sorted(stalled))
    return _cond(keys.ShardCondition.DRAIN_STALLED, True, reason, listed)


def topology_condition(cr: Manifest | None) -> Manifest:
    raw = facts.annotations(cr).get(keys.ANN_TOPOLOGY_HEALTH) if cr else None
    if not raw:
        return _cond(keys.ShardCondition.TOPOLOGY_UNREACHABLE, False, "NoErrorReported",
                     "the agent has reported no topology error")
    try:
        verdict = json.loads(raw)
        reachable = bool(verdict["reachable"])
    except (ValueError, TypeError, KeyError):
        return {"type": keys.ShardCondition.TOPOLOGY_UNREACHABLE, "status": "Unknown", "reason": "UnreadableReport",
                "message": f"annotation {keys.ANN_TOPOLOGY_HEALTH} is not the agent's JSON verdict"}
    message = str(verdict.get("message") or "")
    if reachable:
        return _cond(keys.ShardCondition.TOPOLOGY_UNREACHABLE, False, "Reachable", message)
    return _cond(keys.ShardCondition.TOPOLOGY_UNREACHABLE, True, str(verdict.get("reason") or "TopologyUnavailable"),
                 f"{message}. Drains, role labels and pruning wait until it answers: check the topology etcd "
                 "(spec.globalTopoServer) and the agent's network path and TLS to it")


def conditions(pods: Sequence[Manifest], cr: Manifest | None, now: dt.datetime,
               stall_after_s: float) -> list[Manifest]:
    return [agent_condition(pods, now, stall_after_s), drain_condition(pods), topology_condition(cr)]
