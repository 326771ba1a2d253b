"""Which shards the agent passes again sooner than `--poll-interval` (every `--settle-interval`): those
with a pod whose next step waits on something no Kubernetes event announces. multiorch taking a
drained standby out of the cohort, or a new pod's multipooler first reporting its PostgreSQL (v0.1.0
looks 5 s after it starts), are seen only by asking; at the periodic 5 s, each such step of a pod's
replacement waited up to that long. Bounded: a drain that waits on a backup, or a pod that never gets
its verdict, goes back to the periodic pass after SETTLE_WINDOW_S."""

from __future__ import annotations

from collections.abc import Callable, Iterator

from ansible_collections.multigres.pools.plugins.module_utils.core import keys
from ansible_collections.multigres.pools.plugins.module_utils.core.manifest import Manifest
from ansible_collections.multigres.pools.plugins.module_utils.state import facts

from . import podinfo
from .recovery_gate import gated

SETTLE_WINDOW_S = 120.0


def in_motion(pod: Manifest, now: float) -> bool:
    """A drain under way for less than the window, or a pod created less than the window ago whose
    containers run but which has no verdict yet (readiness gate not True; no role label when ungated).
    A pod still starting is not: the kubelet's status update when it runs is an event."""
    if podinfo.deleting(pod):
        return False  # the finalizer's pass and the primary's handover do their own waiting
    if podinfo.drain_under_way(pod):
        return now - podinfo.drain_since(pod, now) < SETTLE_WINDOW_S
    created = podinfo.epoch(facts.meta(pod).get("creationTimestamp"))
    if created is None or now - created >= SETTLE_WINDOW_S or not podinfo.containers_ready(pod):
        return False
    if gated(pod):
        return (facts.condition(pod, keys.POD_READINESS_GATE) or {}).get("status") != "True"
    return not podinfo.labels(pod).get(keys.LABEL_ROLE)


def rounds(poll_s: float, settle_s: float, wait: Callable[[float], bool],
           clock: Callable[[], float]) -> Iterator[bool]:
    """The periodic loop's beat until `wait` returns True (stop): True when a full round is due
    (every `poll_s`), False for a settle pass in between (every `settle_s`; 0 turns them off)."""
    step = min(poll_s, settle_s) if settle_s > 0 else poll_s
    due = clock() + poll_s
    while not wait(step):
        if clock() >= due - step / 2:
            due = clock() + poll_s
            yield True
        else:
            yield False
