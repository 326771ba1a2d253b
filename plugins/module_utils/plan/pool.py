"""One pool in one cell: pods and data PVCs from creation to removal.

Rules (seed 000 "Pod Lifecycle", "Drain State Machine", "PVC Management"; seed 002 §6-§8;
contract §3.4):
- every missing replica gets its PVC and then its pod, all in one pass, at the lowest free index
  (an index that still has a usable PVC first, so a recreated pod finds its PGDATA);
- terminal pods (Failed/Succeeded) are deleted one per pass;
- at most one drain per pool; a pod is deleted only in `ready-for-deletion`;
- DRAINED pods are kept and do not hold a replica slot, so a stand-in is created;
- a pod deleted from outside is drained (our finalizer holds it until the agent unregistered it).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field

from ..core import keys
from ..core.manifest import Manifest
from ..spec import quantity
from ..state import bootstrap, drain_annotations, facts
from ..state.desired import PVCPolicy
from ..state.facts import PodFacts
from . import actions, compare
from .actions import Action, Phase
from .context import (
    REQUEUE_DRAIN,
    REQUEUE_PODS,
    Context,
    PoolView,
    claim_pvc,
    has_owner_ref,
    owner_refs_patch,
    pvc_owner_wanted,
)
from .drain import cancel_drain, cancel_reason, drained_pvc_marks, pick_victim, request_drain, restart


@dataclass
class PoolOutcome:
    view: PoolView
    actions: list[Action] = field(default_factory=list)
    waiting: list[str] = field(default_factory=list)
    blocked: str | None = None  # why a wanted scale-down drain is held back (health gate)
    requeue_after: float = 0.0
    busy: bool = False  # pods are changing in this pool: rolling updates wait
    # Pods left alone for an unknown drain-state value (drain_annotations.unknown_state_message).
    unknown_drains: list[str] = field(default_factory=list)
    # Disruptive actions held back until the maintenance window opens (also in `waiting`).
    deferred: list[str] = field(default_factory=list)

    def wait(self, why: str, after: float) -> None:
        self.waiting.append(why)
        self.requeue_after = min(self.requeue_after or after, after)

    def add(self, new: list[Action]) -> None:
        self.actions.extend(new)


def pod_manifest(ctx: Context, view: PoolView, index: int) -> Manifest:
    """The pod as rendered: its index label, our finalizer (the agent unregisters the pooler before
    the pod may vanish) and the owner reference are the renderer's decisions (desired.DesiredPool).
    One observed fact is the planner's: whether the shard recorded a backup, which turns the bootstrap
    guard's `auto` into `recovery` (state/bootstrap.py; an annotation, patched in place)."""
    pod = copy.deepcopy(view.dp.pod(index))
    pod["metadata"].setdefault("annotations", {}).update(
        bootstrap.pod_annotation(ctx.desired.bootstrap, ctx.recorded_backup()))
    return pod


def pvc_manifest(ctx: Context, view: PoolView, index: int) -> Manifest:
    """The data PVC as rendered, claimed for the driving shard: its reference per whenDeleted and
    its mark (the one part of ownership the planner adds: `render.manifests` leaves data PVCs unowned)."""
    return claim_pvc(ctx, ctx.owned(view.dp.pvc(index), owner=pvc_owner_wanted(view.dp.when_deleted)))


def _usable(pvc: Manifest) -> bool:
    return not facts.is_terminating(pvc) and keys.ANN_DELETE_WITH_POD not in facts.annotations(pvc)


class PoolPlanner:
    def __init__(self, ctx: Context, view: PoolView) -> None:
        self.ctx, self.view, self.dp = ctx, view, view.dp
        self.out = PoolOutcome(view)
        self.creating: set[int] = set()

    def plan(self) -> PoolOutcome:
        self.out.unknown_drains = [drain_annotations.unknown_state_message(p.name, p.drain_unknown)
                                   for p in self.view.ordered() if p.drain_unknown]
        self._terminal()
        self._drain_progress()
        self._pvc_sync()
        self._create_missing()
        self.out.add(drained_pvc_marks(self.view))
        self._orphan_pvcs()
        self._new_drain()
        self._pod_metadata()
        members = self.view.members()
        # A scale-down deferred to the window leaves a surplus that is not worth a pass every 5 s.
        surplus_waits = len(members) != self.dp.replicas and not self.out.deferred
        if any(not p.ready for p in members) or surplus_waits:
            self.out.busy = True
            self.out.wait(f"{self.view.label}: {sum(p.ready for p in members)}/{self.dp.replicas} "
                          "replicas ready", REQUEUE_PODS)
        return self.out

    # --- removal ---------------------------------------------------------------------------------
    def _terminal(self) -> None:
        """Seed 000: terminal pods are cleaned up sequentially, one per pass, to avoid cascades. The
        pod then goes through the drain like any pod deleted from outside."""
        for pod in self.view.ordered():
            if pod.terminal and not pod.terminating:
                phase = (pod.obj.get("status") or {}).get("phase")
                self.out.add([actions.delete(pod.obj, f"pod {pod.name} is {phase}: terminal pods are deleted "
                                                      "one per pass", Phase.DELETE_POD)])
                self.out.busy = True
                return

    def _drain_progress(self) -> None:
        for pod in self.view.ordered():
            if not pod.in_drain:
                continue
            self.out.busy = True
            if pod.drain_state == keys.DrainState.READY_FOR_DELETION:
                if not pod.terminating:
                    done = f"drain complete ({pod.drain_reason or 'no reason recorded'}), the agent unregistered it"
                    ready = {keys.ANN_DRAIN_STATE: str(keys.DrainState.READY_FOR_DELETION)}
                    self.out.add([actions.delete(pod.obj, f"delete pod {pod.name}: {done}", Phase.DELETE_POD,
                                                 still_annotated=ready)])
                else:
                    self.out.wait(f"pod {pod.name} is terminating; the agent removes its finalizer", REQUEUE_DRAIN)
                continue
            why = cancel_reason(self.view, pod, self.ctx.observed.cordoned)
            if why:
                self.view.cancelled.add(pod.name)
                self.out.add(cancel_drain(self.ctx, pod, why))
            else:
                self.out.wait(f"drain of pod {pod.name} is {pod.drain_state}", REQUEUE_DRAIN)

    # --- PVCs --------------------------------------------------------------------------------------
    def _pvc_sync(self) -> None:
        """Seed 000 "PVC Management": ownerRefs follow whenDeleted, also when the policy changes
        mid-life; a larger storage size is patched in place (shrinks are refused by validation)."""
        owner = self.ctx.owner
        want_owner = pvc_owner_wanted(self.dp.when_deleted)
        for _index, pvc in sorted(self.view.pvcs.items()):
            if facts.is_terminating(pvc):
                continue
            name = facts.name(pvc)
            body: Manifest = {}
            reasons = []
            if owner and has_owner_ref(pvc, owner) != want_owner:
                body.update(owner_refs_patch(pvc, owner, keep=want_owner))
                reasons.append(f"whenDeleted={self.dp.when_deleted}: "
                               + ("owner reference to the shard added, deleted with it" if want_owner
                                  else "owner reference removed, outlives the shard"))
            if owner and facts.annotations(pvc).get(keys.ANN_OWNER_SHARD) != owner["name"]:
                # Mounted by our pod but written by an older version, or re-taken by a re-created shard.
                body.setdefault("metadata", {})["annotations"] = {keys.ANN_OWNER_SHARD: owner["name"]}
                reasons.append(f"marked as MultigresShard {owner['name']}'s ({keys.ANN_OWNER_SHARD})")
            live_size = ((pvc.get("spec") or {}).get("resources") or {}).get("requests", {}).get("storage")
            if live_size and quantity.parse(self.dp.storage_size) > quantity.parse(live_size):
                body["spec"] = {"resources": {"requests": {"storage": self.dp.storage_size}}}
                reasons.append(f"storage grows {live_size} -> {self.dp.storage_size} in place")
            if body:
                text = f"PVC {name}: " + "; ".join(reasons)
                self.out.add([actions.patch(pvc, body, text, Phase.PVC)])
                if "spec" in body:
                    self.out.add([self.ctx.event(pvc, "Normal", "PVCExpanded", text)])

    def _create_missing(self) -> None:
        """Seed 000 "Parallel creation": every missing replica in this pass, PVCs before pods."""
        missing = self.dp.replicas - len(self.view.members())
        if missing <= 0:
            return
        occupied = set(self.view.pods) | self.view.reserved_indexes() | self.view.foreign
        free_with_pvc = sorted(i for i, pvc in self.view.pvcs.items() if i not in occupied and _usable(pvc))
        blocked = {i for i, pvc in self.view.pvcs.items() if not _usable(pvc)}
        candidates = iter(free_with_pvc + [i for i in range(len(occupied) + len(self.view.pvcs) + missing + 1)
                                           if i not in occupied and i not in self.view.pvcs])
        self.out.busy = True
        for _slot in range(missing):
            index = next(candidates)
            self.creating.add(index)
            pvc = self.view.pvcs.get(index)
            pod = pod_manifest(self.ctx, self.view, index)
            name = pod["metadata"]["name"]
            if pvc is None:
                new_pvc = pvc_manifest(self.ctx, self.view, index)
                self.out.add([actions.apply(new_pvc, f"create PVC {new_pvc['metadata']['name']} for index {index}",
                                            Phase.PVC),
                              actions.apply(pod, f"create pod {name}: {self.view.label} has "
                                                 f"{len(self.view.members())}/{self.dp.replicas} replicas",
                                            Phase.POD)])
            else:
                text = f"recreate pod {name} on its existing PVC {facts.name(pvc)}"
                self.out.add([actions.apply(pod, text, Phase.POD),
                              self.ctx.event(pod, "Normal", "PodRecreated", text)])
        for index in sorted(blocked - occupied):
            self.out.wait(f"PVC {facts.name(self.view.pvcs[index])} is being deleted", REQUEUE_DRAIN)

    def _orphan_pvcs(self) -> None:
        """A data PVC with no pod at its index goes when it was marked with a DRAINED pod, or per
        whenScaled=Delete (seed 000 `cleanupDrainedPod`). Never while any pod holds its index."""
        for index, pvc in sorted(self.view.pvcs.items()):
            if index in self.view.pods or index in self.creating or facts.is_terminating(pvc):
                continue
            name = facts.name(pvc)
            if keys.ANN_DELETE_WITH_POD in facts.annotations(pvc):
                why = "its DRAINED or decommissioned pod is gone"
            elif self.dp.when_scaled is PVCPolicy.DELETE:
                why = "no pod at its index after scale-down, whenScaled=Delete"
            else:
                continue
            self.out.add([actions.delete(pvc, f"delete PVC {name}: {why}", Phase.DELETE_PVC)])

    # --- drains ----------------------------------------------------------------------------------
    def _new_drain(self) -> None:
        """At most one drain per pool (seed 000); external deletions first, then scale-down, then a
        pending filesystem resize."""
        if self.view.draining() or self.view.cancelled:
            return
        for pod in self.view.ordered():
            # A pod with an unknown drain state is left alone; the agent's finalizer path unregisters it.
            if pod.terminating and pod.has_finalizer and not pod.in_drain and not pod.drain_unknown:
                # Seed 000: a pod deleted from outside enters the drain so its pooler is unregistered.
                reason = keys.DrainReason.DRAINED_DISCARD if pod.is_drained else keys.DrainReason.EXTERNAL_DELETION
                self.out.add(request_drain(self.ctx, pod, reason, "deleted from outside"))
                self.out.add([self.ctx.event(pod.obj, "Warning", "ExternalDeletion",
                                             f"pod {pod.name} was deleted from outside; the agent takes it out of "
                                             "synchronous replication and unregisters it before it goes")])
                self.out.busy = True
                return
        members = self.view.members()
        leaving = [p for p in self.view.ordered() if self.view.decommissioned(p) and not p.terminating
                   and not p.in_drain and not p.drain_unknown]
        if leaving:
            self._decommission(leaving[0], members)
            return
        candidates = [p for p in members if not p.terminating and not p.in_drain and not p.drain_unknown]
        if len(members) > self.dp.replicas and candidates:
            self._scale_down(members, candidates)
            return
        for pod in candidates:
            if self.view.resize_pending(pod.index):
                self._resize(pod, members)
                return

    def _outside_window(self, what: str) -> bool:
        """Disruptive drains start only inside a maintenance window (spec.maintenanceWindows)."""
        deferral = self.ctx.defer(what)
        if deferral is None:
            return False
        self.out.busy = True
        self.out.deferred.append(deferral[0])
        self.out.wait(*deferral)
        return True

    def _scale_down(self, members: list[PodFacts], candidates: list[PodFacts]) -> None:
        self.out.busy = True
        if self._outside_window(f"scale-down of {self.view.label} to {self.dp.replicas}"):
            return
        victim, why = pick_victim(candidates)
        # Health gate (seed 000): the pods that stay must all be Ready, or the pool is already degraded.
        not_ready = [self.view.unhealthy_reason(p) for p in members if p is not victim and not self.view.healthy(p)]
        if not_ready:
            self.out.blocked = (f"scale-down of {self.view.label} to {self.dp.replicas} waits: "
                                f"not Ready: {', '.join(not_ready)}")
            self.out.wait(self.out.blocked, REQUEUE_PODS)
            return
        text = f"{why} ({self.view.label} has {len(members)} replicas, wants {self.dp.replicas})"
        self.out.add(request_drain(self.ctx, victim, keys.DrainReason.SCALE_DOWN, text))

    def _decommission(self, pod: PodFacts, members: list[PodFacts]) -> None:
        """spec.pools.<pool>.decommission: the pod does not hold a replica slot, so its replacement
        was created (at a new index) by _create_missing; it is drained like a scale-down victim once
        every slot is held by a Ready pod, so the Ready count never drops below `replicas`."""
        self.out.busy = True
        if self._outside_window(f"decommission of pod {pod.name}"):
            return
        ready = sum(self.view.healthy(p) and not p.terminating for p in members)
        if ready < self.dp.replicas:
            self.out.wait(f"decommission of pod {pod.name} waits for its replacement: {ready}/{self.dp.replicas} "
                          "other replicas Ready", REQUEUE_PODS)
            return
        why = (f"listed in spec.pools.{self.dp.pool}.decommission, {ready}/{self.dp.replicas} other replicas "
               "Ready" + (", primary" if pod.is_primary else ""))
        self.out.add(request_drain(self.ctx, pod, keys.DrainReason.DECOMMISSION, why))

    def _resize(self, pod: PodFacts, members: list[PodFacts]) -> None:
        """Seed 000 "Volume expansion": a CSI driver that needs a restart leaves
        FileSystemResizePending; the pod is drained and recreated on the same PVC."""
        self.out.busy = True
        if self._outside_window(f"filesystem-resize restart of pod {pod.name}"):
            return
        if any(not self.view.healthy(p) for p in members if p is not pod):
            self.out.wait(f"filesystem resize of pod {pod.name} waits for the other replicas to be Ready",
                          REQUEUE_PODS)
            return
        self.out.add(restart(self.ctx, pod, keys.DrainReason.FILESYSTEM_RESIZE,
                             "its PVC reports FileSystemResizePending"))

    # --- in-place metadata -----------------------------------------------------------------------
    def _pod_metadata(self) -> None:
        """Seed 002 §9: labels and annotations are not part of the spec-hash; they are patched in place."""
        for pod in self.view.ordered():
            if pod.terminating or pod.in_drain or pod.index in self.creating:
                continue
            if pod.spec_hash != self.dp.spec_hash:
                # Waiting for its turn in a roll: only its place in DNS (a pod from before keys.LABEL_DNS),
                # so the headless Service's new selector (plan/infra.py) need not wait for the roll's end.
                sub: Manifest = {"labels": {keys.LABEL_DNS: keys.DNS_PUBLISHED}}
            else:
                want = pod_manifest(self.ctx, self.view, pod.index)["metadata"]
                sub = {k: want[k] for k in ("labels", "annotations") if want.get(k)}
            if not compare.contains(facts.meta(pod.obj), sub):
                self.out.add([actions.patch(pod.obj, {"metadata": copy.deepcopy(sub)},
                                            f"pod {pod.name}: labels/annotations differ, patched in place",
                                            Phase.ANNOTATE)])


def plan_pool(ctx: Context, view: PoolView) -> PoolOutcome:
    return PoolPlanner(ctx, view).plan()
