"""What every agent step gets: configuration, the Kubernetes and data-plane edges, metrics, a clock,
and one shard's observed state (`ShardView`)."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, cast

from ansible_collections.multigres.pools.plugins.module_utils.core import keys
from ansible_collections.multigres.pools.plugins.module_utils.core.manifest import Manifest
from ansible_collections.multigres.pools.plugins.module_utils.spec.reader import ShardReader
from ansible_collections.multigres.pools.plugins.module_utils.state import facts

from ..dataplane.base import (
    STUCK_START_S,
    DataPlane,
    Leadership,
    Pooler,
    PoolerId,
    ShardTopology,
    SyncReplication,
    match_pod,
)
from ..podaddress import PodAddresses
from . import podinfo, trust
from .kube import Kube
from .metrics import Metrics


@dataclass(frozen=True)
class AgentConfig:
    stall_after_s: float = 300.0
    topology_stall_after_s: float = 60.0  # failing topology reads before TopologyUnreachable
    poll_interval_s: float = 5.0
    register_interval_s: float = 60.0
    backup_interval_s: float = 300.0
    backup_read_limit: int = 0  # 0 = all; era A's limit keeps the OLDEST entries (contract §1.3)
    backup_stale_after_s: float = 25 * 3600.0
    prune: bool = True
    register_topology: bool = True
    # Act on pool pods that have no controller at all (shards driven from vars, without a
    # MultigresShard). Pods controlled by a MultigresShard must match its live uid either way (trust.py).
    allow_unowned_pods: bool = True
    # Equality-based label selector on MultigresShards (trust.py): only matching shards are served.
    shard_selector: str = ""
    # Ask multiorch to replace a leaving primary now rather than after its failover grace (handover.py).
    hurry_handover: bool = True
    # v0.1.0: seconds a primary's drain waits in `requested` for every other standby to stream (drain_runner).
    primary_drain_settle_s: float = 30.0
    # Seconds a pooler may be starting a PostgreSQL that is not running before its pod is marked for
    # replacement (stuck_start.py).
    stuck_start_after_s: float = STUCK_START_S


class SimulatedCrash(BaseException):
    """Raised by a test's `before_effect` hook to stop the agent between two side effects.

    A BaseException, so no `except Exception` in the agent can swallow it, exactly like a kill.
    """


class NotLeader(BaseException):
    """Raised by `Context.effect` when this agent's Lease leadership is in doubt.

    A BaseException, so no `except Exception` between the effect and the agent's entry point turns
    it into a recorded failure (which would be one more write); the entry points catch it."""


def memory_key(pod: Manifest) -> str:
    """The key of what the agent remembers of a pod (Context.restores, stuck_marks, down_since): its
    uid, else its name."""
    return facts.uid(pod) or podinfo.name(pod)


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
    # (namespace, pod) of every drain stalled past the threshold -> its (namespace, shard) metric labels.
    stalled: dict[tuple[str, str], tuple[str, str]] = field(default_factory=dict)
    # (namespace, pod) -> the unknown drain-state value already reported, so it is reported once.
    unknown_drains: dict[tuple[str, str], str] = field(default_factory=dict)
    # Pod uid -> the restore fact this process last wrote on it (restore_watch.py): a pod object listed
    # before that write must not make it start the story again.
    restores: dict[str, dict[str, Any]] = field(default_factory=dict)
    # Pod uid -> the stuck mark this agent last wrote ("" once taken away): a pod listed before our
    # own write must not be marked twice (stuck_start.py).
    stuck_marks: dict[str, str] = field(default_factory=dict)
    # Pod uid -> since when (clock) its PostgreSQL has been seen down (stuck_start.py).
    down_since: dict[str, float] = field(default_factory=dict)
    # Builds the adapter for a Multigres version a MultigresShard declares (spec.multigres.version)
    # when it is not `dataplane`'s; None = every shard is served by `dataplane`.
    plane_factory: Callable[[keys.MultigresVersion], DataPlane] | None = None
    _planes: dict[keys.MultigresVersion, DataPlane] = field(default_factory=dict)
    # True while this agent holds its Lease (always, standalone); asked before every side effect.
    may_act: Callable[[], bool] = lambda: True
    # The IPs of the pool pods each pass listed: what the adapters dial (podaddress.py says why).
    pod_addresses: PodAddresses = field(default_factory=PodAddresses)

    def __post_init__(self) -> None:
        self.kube.fence = self.fence

    def forget_pod(self, pod: Manifest) -> None:
        """What this process remembers of a pod, dropped once its finalizer is: a uid never comes back."""
        for remembered in (self.restores, self.stuck_marks, self.down_since):
            remembered.pop(memory_key(pod), None)

    def effect(self, name: str) -> None:
        if self.before_effect is not None:
            self.before_effect(name)
        self.fence(name)

    def fence(self, name: str) -> None:
        """Refuse `name` unless this agent holds its Lease (every Kubernetes write checks it too)."""
        if not self.may_act():
            raise NotLeader(name)

    def plane_for(self, shard: Manifest | None) -> DataPlane:
        """The adapter for the version the MultigresShard declares; `dataplane` when it declares none
        (or there is no MultigresShard). ValueError for a version no adapter speaks."""
        declared = declared_version(shard)
        if declared is None or declared == self.dataplane.version or self.plane_factory is None:
            return self.dataplane
        if declared not in self._planes:
            self._planes[declared] = self.plane_factory(declared)
        return self._planes[declared]

    def close(self) -> None:
        self.dataplane.close()
        for plane in self._planes.values():
            plane.close()


def declared_version(shard: Manifest | None) -> keys.MultigresVersion | None:
    """`spec.multigres.version` of a MultigresShard, read leniently from the raw object (spec/reader.py),
    so a spec the engine refuses for another reason still names its adapter (ValueError if unknown)."""
    value = ShardReader.of(shard).multigres_version
    if not value:
        return None
    try:
        return keys.MultigresVersion(value)
    except ValueError:
        known = ", ".join(v.value for v in keys.MultigresVersion)
        raise ValueError(f"spec.multigres.version {value!r} is not supported; known: {known}") from None


@dataclass
class ShardView:
    """One shard as observed in one pass: its pods (all of them, deleting ones included) and records."""

    namespace: str
    topology: ShardTopology
    pods: list[Manifest]
    poolers: list[Pooler] | None  # None when the topology could not be read
    topology_error: str = ""
    shard: Manifest | None = None
    listed_at: float = 0.0
    dataplane: DataPlane | None = None
    # Why `poolers` is None: topology-unavailable, or version-mismatch (the declared version is wrong).
    topology_reason: str = "topology-unavailable"
    _leaders: dict[PoolerId | None, Leadership] = field(default_factory=dict, repr=False)

    def take(self, fresh: ShardView) -> None:
        """Adopt a later observation of the same shard (the pods and records after this pass acted)."""
        self.poolers, self.pods, self.listed_at = fresh.poolers, fresh.pods, fresh.listed_at
        self.topology_error, self.topology_reason = fresh.topology_error, fresh.topology_reason
        self.dataplane, self._leaders = fresh.dataplane, {}

    def own(self, pod: Manifest) -> Pooler | None:
        """The pod's record: one of this namespace's records of the shard (trust.py) that names it."""
        ours = [r for r in self.poolers or [] if trust.record_belongs(r, self.topology, self.namespace)]
        return match_pod(ours, podinfo.name(pod))

    def asked_pods(self) -> list[tuple[Manifest, PoolerId, str, Leadership]]:
        """Every live pod with its pooler id, its key (uid, else name) and the round of Status calls
        that asked it, when the adapter asks the poolers themselves (v0.1.0); else none."""
        if self.poolers is None or self.dataplane is None or not self.dataplane.confirms_leader:
            return []
        live = [(pod, pooler) for pod in self.pods
                if not podinfo.deleting(pod) and (pooler := self.own_id(pod)) is not None]
        round_ = self.leadership() if live else None
        return [(pod, pooler, memory_key(pod), cast(Leadership, round_)) for pod, pooler in live]

    def own_id(self, pod: Manifest) -> PoolerId | None:
        """The pod's pooler id: its record's, else the one its flags name, unless a record of that id
        is another pod's (the flags are the pod author's: they never make another record this pod's)."""
        rec = self.own(pod)
        if rec is not None:
            return rec.id
        top = podinfo.pod_topology(pod)
        if top is None:
            return None
        taken = next((r for r in self.poolers or [] if r.id == top.pooler_id), None)
        return None if taken is not None else top.pooler_id

    def _leadership(self, me: Pooler | None) -> Leadership:
        """Leadership among the records other than `me`; era A trusts the records, v0.1.0 asks the
        poolers (one round of Status calls per pass, cached in this view)."""
        key = me.id if me is not None else None
        if key not in self._leaders:
            assert self.dataplane is not None, "a ShardView with poolers has an adapter"
            self._leaders[key] = self.dataplane.leadership([p for p in self.poolers or [] if p != me])
        return self._leaders[key]

    def primary_other_than(self, pod: Manifest) -> Pooler | None:
        """The shard's confirmed primary unless it is the pod's own pooler."""
        return self._leadership(self.own(pod)).confirmed

    def sync_replication(self, primary: Pooler, pod: Manifest) -> SyncReplication:
        """What `primary` says of synchronous replication, with only the followers that stream counted as
        connected (`Leadership.silent`, from the round that leaves `pod`'s own pooler out)."""
        assert self.dataplane is not None, "a ShardView with poolers has an adapter"
        return self.dataplane.sync_replication(primary).without(self._leadership(self.own(pod)).silent)

    def leader(self) -> Pooler | None:
        """The shard's confirmed primary."""
        return self._leadership(None).confirmed

    def leadership(self) -> Leadership:
        """The whole round's verdict: the leader, and who runs PostgreSQL in or out of recovery."""
        return self._leadership(None)

    def is_primary(self, pod: Manifest) -> bool:
        """Era A: the pod's record says PRIMARY. From v0.1.0 on: the pod's pooler is the leader the newest
        rule names, even when its record is already gone (a primary drain deletes it before the pod)."""
        own = self.own(pod)
        assert self.dataplane is not None, "a ShardView with poolers has an adapter"
        if not self.dataplane.confirms_leader:
            return own is not None and own.role is keys.Role.PRIMARY
        named = self._leadership(None).named
        return named is not None and named == self.own_id(pod)

    def pod_for(self, pooler: Pooler) -> Manifest | None:
        return next((p for p in self.pods if pooler.matches_pod(podinfo.name(p))), None)

    def event_targets(self, pod: Manifest | None = None) -> list[Manifest]:
        """Where a user looks: the pod (if any) and the MultigresShard (if any)."""
        return [o for o in (pod, self.shard) if o is not None]
