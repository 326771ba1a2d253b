"""What every agent step gets: configuration, the Kubernetes and data-plane edges, metrics, a clock,
and one shard's observed state (`ShardView`)."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..dataplane.base import DataPlane, Pooler, PoolerId, ShardTopology, find_primary, match_pod
from . import podinfo
from .kube import Kube
from .metrics import Metrics

Obj = dict[str, Any]


@dataclass(frozen=True)
class AgentConfig:
    stall_after_s: float = 300.0
    poll_interval_s: float = 5.0
    register_interval_s: float = 60.0
    backup_interval_s: float = 300.0
    backup_read_limit: int = 0  # 0 = all; era A's limit keeps the OLDEST entries (contract §1.3)
    backup_stale_after_s: float = 25 * 3600.0
    prune: bool = True
    register_topology: bool = True


class SimulatedCrash(BaseException):
    """Raised by a test's `before_effect` hook to stop the agent between two side effects.

    A BaseException, so no `except Exception` in the agent can swallow it, exactly like a kill.
    """


@dataclass
class Context:
    kube: Kube
    dataplane: DataPlane
    config: AgentConfig = field(default_factory=AgentConfig)
    metrics: Metrics = field(default_factory=Metrics)
    clock: Callable[[], float] = time.time
    # Called with a short name before every side effect (pod/CR writes, RPCs that change state, etcd
    # deletes). Tests use it to crash the agent between any two of them.
    before_effect: Callable[[str], None] | None = None
    log: logging.Logger = field(default_factory=lambda: logging.getLogger("multigres_pools.agent"))
    stalled: set[tuple[str, str]] = field(default_factory=set)

    def effect(self, name: str) -> None:
        if self.before_effect is not None:
            self.before_effect(name)


@dataclass
class ShardView:
    """One shard as observed in one pass: its pods (all of them, deleting ones included) and records."""

    namespace: str
    topology: ShardTopology
    pods: list[Obj]
    poolers: list[Pooler] | None  # None when the topology could not be read
    topology_error: str = ""
    shard: Obj | None = None
    listed_at: float = 0.0

    def own(self, pod: Obj) -> Pooler | None:
        return match_pod(self.poolers or [], podinfo.name(pod))

    def own_id(self, pod: Obj) -> PoolerId | None:
        rec = self.own(pod)
        if rec is not None:
            return rec.id
        top = podinfo.pod_topology(pod)
        return top.pooler_id if top else None

    def primary_other_than(self, pod: Obj) -> Pooler | None:
        me = self.own(pod)
        return find_primary(p for p in self.poolers or [] if p != me)

    def pod_for(self, pooler: Pooler) -> Obj | None:
        return next((p for p in self.pods if pooler.matches_pod(podinfo.name(p))), None)

    def event_targets(self, pod: Obj | None = None) -> list[Obj]:
        """Where a user looks: the pod (if any) and the MultigresShard (if any)."""
        return [o for o in (pod, self.shard) if o is not None]
