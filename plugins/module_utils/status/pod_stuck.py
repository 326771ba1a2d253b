"""The shard condition PodsStuck: pool pods whose containers wait for something that will not come
by itself (a bad image, a missing Secret or ConfigMap key, a crash loop), named on the MultigresShard
so that `kubectl get mgs` and `multigres-pools status` show it without reading every pod.

Pure: the time comes from the pass's stamp. ContainerCreating and PodInitializing are what every pod
goes through, so they count only once they last longer than STARTING_STUCK_AFTER_S; the other
reasons count at once. Messages name times, never ages, so an unchanged situation produces an
identical status.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from ..core import keys
from ..core.conditions import MESSAGE_MAX
from ..core.conditions import shard_condition as _cond
from ..core.manifest import Manifest
from ..state import facts
from . import stalls

# Waiting reasons that do not resolve without a change (the kubelet's image and container errors).
STUCK_REASONS = frozenset({
    "ErrImagePull", "ImagePullBackOff", "InvalidImageName", "ErrImageNeverPull",
    "CreateContainerConfigError", "CreateContainerError", "RunContainerError", "CrashLoopBackOff",
})
# Waiting reasons of a normal start, stuck only past STARTING_STUCK_AFTER_S.
STARTING_REASONS = frozenset({"ContainerCreating", "PodInitializing"})
STARTING_STUCK_AFTER_S = 300.0
# One container's waiting message is cut here, so one verbose error cannot hide the other pods.
WAITING_MESSAGE_MAX = 1024

# Status list -> how the message names its containers; the order in which a pod's containers are listed.
_KINDS = (("initContainerStatuses", "init container"), ("containerStatuses", "container"),
          ("ephemeralContainerStatuses", "ephemeral container"))


@dataclass(frozen=True)
class Stuck:
    pod: str
    container: str  # "container postgres", "init container postgres"
    reason: str
    message: str
    since: dt.datetime | None  # set for the starting reasons only

    def describe(self) -> str:
        detail = self.message if len(self.message) <= WAITING_MESSAGE_MAX else self.message[:WAITING_MESSAGE_MAX] + "…"
        since = f" since {facts.format_time(self.since)}" if self.since else ""
        return f"{self.pod}: {self.container} waiting: {self.reason}{since}" + (f" ({detail})" if detail else "")


def waiting(pod: Mapping[str, Any]) -> Iterator[tuple[str, str, str]]:
    """(how the container is named, its waiting reason, its waiting message), in a fixed order."""
    status = pod.get("status") or {}
    for field, kind in _KINDS:
        for entry in sorted(status.get(field) or [], key=lambda s: str(s.get("name", ""))):
            state = (entry.get("state") or {}).get("waiting") or {}
            if state.get("reason"):
                yield f"{kind} {entry.get('name', '')}", str(state["reason"]), str(state.get("message") or "")


def _starting_since(pod: Manifest) -> dt.datetime | None:
    """When the pod began to start its containers: scheduled (the kubelet starts from there), else created."""
    scheduled = facts.condition(pod, "PodScheduled") or {}
    return (facts.parse_time(scheduled.get("lastTransitionTime")) if scheduled.get("status") == "True" else None) \
        or facts.parse_time(facts.meta(pod).get("creationTimestamp"))


def waits(pods: Iterable[Manifest]) -> list[Stuck]:
    """Every container waiting with a stuck reason or a start reason, by pod name (starting ones
    carry their `since`; a pod without any time is never judged stuck on a start reason). Pods
    being deleted are left out: they are going away, and are not counted as replicas either."""
    out = []
    for pod in sorted((p for p in pods if not facts.is_terminating(p)), key=facts.name):
        for container, reason, message in waiting(pod):
            if reason in STUCK_REASONS:
                out.append(Stuck(facts.name(pod), container, reason, message, None))
            elif reason in STARTING_REASONS and (since := _starting_since(pod)) is not None:
                out.append(Stuck(facts.name(pod), container, reason, message, since))
    return out


def stuck(pods: Iterable[Manifest], now: dt.datetime, after_s: float = STARTING_STUCK_AFTER_S) -> list[Stuck]:
    return [w for w in waits(pods) if w.since is None or (now - w.since).total_seconds() >= after_s]


# What a message names: "<pod>: [init |ephemeral ]container <name> waiting: " at each entry's start.
_SUBJECT = re.compile(r"(?:^|; )([a-z0-9.-]+: (?:(?:init|ephemeral) )?container [a-z0-9-]+) waiting: ")


def subjects(message: str) -> frozenset[str]:
    """The pods and containers a PodsStuck message names (whatever their reasons)."""
    return frozenset(_SUBJECT.findall(message))


def _fit(parts: list[str]) -> str:
    """Join the entries; when they exceed the CRD's limit, keep the first ones and count the rest."""
    text = "; ".join(parts)
    kept = len(parts)
    while len(text) > MESSAGE_MAX and kept > 1:
        kept -= 1
        text = "; ".join(parts[:kept]) + f"; and {len(parts) - kept} more"
    return text


def condition(pods: Iterable[Manifest], now: dt.datetime, after_s: float = STARTING_STUCK_AFTER_S) -> Manifest:
    found = stuck(pods, now, after_s)
    if not found:
        return _cond(keys.ShardCondition.PODS_STUCK, False, "NoPodStuck", "")
    return _cond(keys.ShardCondition.PODS_STUCK, True, found[0].reason, _fit([s.describe() for s in found]))


def recheck_after(pods: Iterable[Manifest], now: dt.datetime, after_s: float = STARTING_STUCK_AFTER_S) -> float:
    """Seconds until a starting container crosses the threshold (0: none pending), so the shard is
    decided again then even if nothing else changes."""
    return stalls.seconds_until_stuck((w.since for w in waits(pods) if w.since is not None), now, after_s)
