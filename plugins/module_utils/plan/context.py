"""What every part of the planner shares: the inputs of one pass and the pool views built from them."""

from __future__ import annotations

import copy
import datetime as dt
from dataclasses import dataclass, field

from ..core import keys, naming
from ..core.manifest import Manifest
from ..spec import maintenance
from ..state import bootstrap, facts
from ..state.desired import Desired, DesiredPool, PVCPolicy
from ..state.facts import PodFacts
from ..state.observed import Observed
from . import actions

# Contract §3.10: the drain state machine and waits on the agent requeue after 2 s; waiting on
# pods (kubelet, image pulls, restores) is slower, 5 s.
REQUEUE_DRAIN = 2.0
REQUEUE_PODS = 5.0
# Waiting for a maintenance window requeues at its opening, but at least once an hour: a timer of days
# is only as good as the process holding it, and an hourly look costs nothing (no change, no request).
MAX_WINDOW_REQUEUE = 3600.0


@dataclass(frozen=True)
class Context:
    desired: Desired
    observed: Observed
    now: dt.datetime

    @property
    def namespace(self) -> str:
        return self.desired.namespace

    @property
    def stamp(self) -> str:
        return facts.format_time(self.now)

    def window_opens(self) -> dt.datetime | None:
        """None when disruptive actions may start now, else when the next maintenance window opens."""
        return maintenance.next_opening(self.desired.windows, self.now)

    def defer(self, what: str) -> tuple[str, float] | None:
        """Outside the maintenance windows: the waiting line for `what` and the seconds until the
        window opens (the requeue); None inside a window or without windows."""
        opens = self.window_opens()
        if opens is None:
            return None
        return (f"{what} waits for the maintenance window opening at {facts.format_time(opens)}",
                min(MAX_WINDOW_REQUEUE, max(1.0, (opens - self.now).total_seconds())))

    def recorded_backup(self) -> str | None:
        """What proves the shard had a backup (bootstrap.recorded_backup), for its bootstrap guard."""
        return bootstrap.guard_evidence(self.desired.bootstrap, self.observed)

    @property
    def owner(self) -> Manifest | None:
        """The ownerReference to the MultigresShard, when the pass is driven by one."""
        cr = self.observed.cr
        if not cr or not facts.uid(cr):
            return None
        return {"apiVersion": keys.API_GROUP_VERSION, "kind": keys.SHARD_KIND, "name": facts.name(cr),
                "uid": facts.uid(cr), "controller": True, "blockOwnerDeletion": True}

    def event(self, target: Manifest, event_type: str, reason: str, message: str) -> actions.Action:
        """Shard-level events go on the CR; without one (vars mode) on the object concerned."""
        return actions.event(self.observed.cr or target, event_type, reason, message)

    def owned(self, manifest: Manifest, *, owner: bool = True) -> Manifest:
        """A copy placed in our namespace; its reference to the shard CR present iff `owner` (and a
        CR drives the pass). For data PVCs only (whenDeleted): everything else is owned as rendered."""
        out = copy.deepcopy(manifest)
        md = out.setdefault("metadata", {})
        md["namespace"] = self.namespace
        ref = self.owner
        if ref:
            refs = [r for r in md.get("ownerReferences") or [] if r.get("uid") != ref["uid"]]
            if owner:
                refs.append(ref)
            if refs:
                md["ownerReferences"] = refs
            else:
                md.pop("ownerReferences", None)
        return out


def claim_pvc(ctx: Context, pvc: Manifest) -> Manifest:
    """A PVC manifest marked as the driving MultigresShard's (keys.ANN_OWNER_SHARD), so it stays
    recognisable when whenDeleted=Retain leaves it without an ownerReference (state/ownership.py)."""
    if ctx.observed.cr is not None:
        pvc.setdefault("metadata", {}).setdefault("annotations", {})[keys.ANN_OWNER_SHARD] = facts.name(ctx.observed.cr)
    return pvc


def has_owner_ref(obj: Manifest, owner: Manifest) -> bool:
    return any(r.get("uid") == owner["uid"] for r in facts.meta(obj).get("ownerReferences") or [])


def owner_refs_patch(obj: Manifest, owner: Manifest, *, keep: bool) -> Manifest:
    """A merge patch setting `obj`'s ownerReferences with or without `owner`; other owners stay."""
    refs = [r for r in facts.meta(obj).get("ownerReferences") or [] if r.get("uid") != owner["uid"]]
    return {"metadata": {"ownerReferences": [*refs, owner] if keep else refs}}


@dataclass
class PoolView:
    """The live pods (by index, including terminating ones) and data PVCs of one pool in one cell."""

    dp: DesiredPool
    pods: dict[int, PodFacts]
    pvcs: dict[int, Manifest]
    sid: naming.ShardId
    cancelled: set[str] = field(default_factory=set)
    # Indexes whose pod or PVC name is held by a foreign object (state/ownership.py): never created there,
    # since applying under that name would take the object over.
    foreign: set[int] = field(default_factory=set)

    @property
    def label(self) -> str:
        return f"{self.dp.pool}/{self.dp.cell}"

    def ordered(self) -> list[PodFacts]:
        return [self.pods[i] for i in sorted(self.pods)]

    @property
    def base(self) -> str:
        return naming.pool_base(self.sid, self.dp.pool, self.dp.cell)

    def decommissioned(self, pod: PodFacts) -> bool:
        """Listed in spec.pools.<pool>.decommission: to be replaced, then drained."""
        return pod.name in self.dp.decommission

    def fenced(self, pod: PodFacts) -> bool:
        """Listed in spec.pools.<pool>.fenced: the agent keeps it out of the synchronous set."""
        return pod.name in self.dp.fenced

    def healthy(self, pod: PodFacts) -> bool:
        """Ready and not fenced: what a gate that needs a working replica counts (a fenced pod is Ready
        but out of the synchronous set, so it cannot stand in for the pod a drain takes away)."""
        return pod.ready and not self.fenced(pod)

    def unhealthy_reason(self, pod: PodFacts) -> str:
        return f"{pod.name} (fenced)" if pod.ready and self.fenced(pod) else pod.name

    def reserved_indexes(self) -> set[int]:
        """Indexes named in the decommission list: never given to a new pod while listed, so a
        replacement cannot take the name of the pod it replaces."""
        prefix = f"{self.base}-"
        return {int(n[len(prefix):]) for n in self.dp.decommission
                if n.startswith(prefix) and n[len(prefix):].isdigit()}

    def is_member(self, pod: PodFacts) -> bool:
        """Holds one of the `replicas` slots: not DRAINED, not decommissioned, not on its way out for
        good. A drain cancelled in this pass gives its pod the slot back."""
        if pod.is_drained or self.decommissioned(pod):
            return False
        return not pod.leaving or pod.name in self.cancelled

    def members(self) -> list[PodFacts]:
        return [p for p in self.ordered() if self.is_member(p)]

    def draining(self) -> list[PodFacts]:
        return [p for p in self.ordered() if p.in_drain and p.name not in self.cancelled]

    def resize_pending(self, index: int) -> bool:
        pvc = self.pvcs.get(index)
        return pvc is not None and facts.condition_true(pvc, "FileSystemResizePending")


def pool_views(desired: Desired, observed: Observed) -> list[PoolView]:
    sid = desired.shard
    views = []
    for dp in desired.pools:
        base = naming.pool_base(sid, dp.pool, dp.cell)
        pods: dict[int, PodFacts] = {}
        for obj in observed.pods:
            lab = facts.labels(obj)
            if lab.get(keys.LABEL_POOL) != dp.pool or lab.get(keys.LABEL_CELL) != dp.cell:
                continue
            index = facts.index_of(obj, base)
            if index is not None and facts.name(obj) == naming.pod_name(sid, dp.pool, dp.cell, index):
                pods[index] = PodFacts.of(obj, index)
        pvcs: dict[int, Manifest] = {}
        for obj in observed.pvcs:
            index = facts.index_of(obj, base)
            if index is not None and facts.name(obj) == naming.data_pvc_name(sid, dp.pool, dp.cell, index):
                pvcs[index] = obj
        foreign = set()
        for obj in observed.foreign:
            index = facts.index_of(obj, base)
            if index is not None and facts.name(obj) in (naming.pod_name(sid, dp.pool, dp.cell, index),
                                                         naming.data_pvc_name(sid, dp.pool, dp.cell, index)):
                foreign.add(index)
        views.append(PoolView(dp, pods, pvcs, sid, foreign=foreign))
    return views


def decommission_problems(desired: Desired) -> list[str]:
    """Decommission entries that name no pod this pool could have (a typo, another pool's pod).
    They are reported and ignored: refusing the whole spec would also stop the healing of the shard."""
    return unknown_pod_names(desired, "decommission")


def unknown_pod_names(desired: Desired, field_name: str) -> list[str]:
    """Entries of the pod-name list spec.pools.<pool>.<field_name> (decommission, fenced) that name no
    pod this pool could have, each as a message naming the field and the expected names."""
    bases: dict[str, list[str]] = {}
    listed: dict[str, frozenset[str]] = {}
    for dp in desired.pools:
        bases.setdefault(dp.pool, []).append(naming.pool_base(desired.shard, dp.pool, dp.cell))
        listed[dp.pool] = getattr(dp, field_name)
    problems = []
    for pool in sorted(listed):
        for name in sorted(listed[pool]):
            if not any(name.startswith(f"{b}-") and name[len(b) + 1:].isdigit() for b in bases[pool]):
                problems.append(f"spec.pools.{pool}.{field_name}: {name!r} is not a pod of pool {pool} "
                                f"(its pods are named {' or '.join(f'{b}-<index>' for b in bases[pool])}); ignored")
    return problems


def pvc_owner_wanted(policy: PVCPolicy) -> bool:
    """Seed 000 "PVC Management": whenDeleted=Delete means an ownerRef to the shard (GC deletes the
    PVC with it); Retain means none, so the PVC outlives the shard."""
    return policy is PVCPolicy.DELETE
