"""The agent's passes: one shard at a time, serialised per shard, each a fresh read of pods and records.

A shard pass: list pods (to learn the topology) -> list pooler records -> list pods again (so every
record we saw was written before the pod list was taken, and pruning cannot delete a pooler whose pod
was created a moment ago) -> finalize deleted pods -> advance drains -> publish roles -> (a clone's first
primary) -> prune -> register the database and cells (rate-limited).
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from typing import cast

from ansible_collections.multigres.pools.plugins.module_utils.core import keys, labels
from ansible_collections.multigres.pools.plugins.module_utils.core.manifest import Manifest

from ..dataplane.base import RefusalReason, TopologyUnavailable, VersionMismatch
from . import (
    backup_health,
    fence,
    podinfo,
    recovery_gate,
    restore_watch,
    roles,
    settling,
    stuck_start,
    topology,
    topology_health,
    trust,
)
from .backup_runner import BackupRunner
from .clone_election import CloneElections
from .context import Context, NotLeader, ShardView
from .drain_runner import discard_force, finalize, report_unknown_state, restore_eligibility, run_drain
from .handover import Handovers
from .kube import Conflict, KubeUnavailable

_SHARD_LABELS = (keys.LABEL_CLUSTER, keys.LABEL_DATABASE, keys.LABEL_TABLEGROUP, keys.LABEL_SHARD)
ShardRef = tuple[str, tuple[tuple[str, str], ...]]


class Agent:
    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self._guard = threading.Lock()
        self._locks: dict[ShardRef, threading.Lock] = {}
        self._known: set[ShardRef] = set()
        self._settling: set[ShardRef] = set()  # their last pass saw a pod in motion (settling.py)
        self._waiting: set[ShardRef] = set()  # a pass waits for the shard's lock and has read nothing yet
        self._crs: dict[tuple[str, str], float] = {}  # (ns, name) -> last backup check
        self._registered: dict[tuple[str, ...], tuple[float, object]] = {}
        # Topologies a MultigresShard's deletion cleaned up -> that shard's uid (see _maybe_register).
        self._retired: dict[tuple[str, ...], str] = {}
        self._mismatched: set[tuple[str, ...]] = set()  # shards already warned about a version mismatch
        self._topology_failing: dict[tuple[str, str], float] = {}  # (ns, shard) -> first failed read
        # Pods already reported as not ours to act on (trust.py).
        self._untrusted: set[tuple[str, str, str | None]] = set()
        self.passes = 0
        self.last_error: str = ""
        self.backups = BackupRunner(ctx, self._backup_done)
        self.handovers = Handovers(ctx)
        self.clones = CloneElections(ctx)

    def _backup_done(self, namespace: str, shard_name: str) -> None:
        """A backup ended: check backup health at the next pass of the shard instead of in minutes."""
        with self._guard:
            if (namespace, shard_name) in self._crs:
                self._crs[(namespace, shard_name)] = float("-inf")

    def is_leader(self) -> bool:
        """Whether this agent holds its Lease (always, standalone): every entry point asks first,
        and every side effect again (`Context.effect`, the Kube writes)."""
        return self.ctx.may_act()

    @contextlib.contextmanager
    def _leader_only(self) -> Iterator[None]:
        """Ends a pass quietly at the first side effect refused because leadership is in doubt."""
        try:
            yield
        except NotLeader as refused:
            self.ctx.log.warning("not acting: this agent's leadership is in doubt", extra={"effect": str(refused)})

    @contextlib.contextmanager
    def _kube_retried(self, namespace: str) -> Iterator[None]:
        """Ends a pass at a Kubernetes call that timed out or could not connect: a warning, no
        traceback; the next event or periodic pass retries."""
        try:
            yield
        except KubeUnavailable as exc:
            self._kube_failed(namespace, exc)

    def _kube_failed(self, namespace: str, exc: KubeUnavailable) -> None:
        self.last_error = f"KubeUnavailable: {exc}"
        self.ctx.metrics.reconcile_errors.labels("KubeUnavailable").inc()
        self.ctx.log.warning("Kubernetes API unavailable; retrying next pass",
                             extra={"namespace": namespace, "detail": str(exc)})

    # --- entry points (the watches, watches.py, and the periodic loop call these) -------------------
    def remember(self, pod: Manifest) -> ShardRef:
        """Note the pod's shard for the periodic pass."""
        ref = self._ref(podinfo.namespace(pod), {k: v for k, v in podinfo.labels(pod).items() if k in _SHARD_LABELS})
        with self._guard:
            self._known.add(ref)
        return ref

    def on_pod(self, pod: Manifest) -> None:
        self.reconcile(self.remember(pod))

    def on_shard(self, shard: Manifest) -> ShardRef | None:
        """The shard's pass; returns the pool pods' selector it reconciled (None: none)."""
        if not self.is_leader() or not trust.shard_selected(shard, self.ctx.config.shard_selector):
            return None
        with self._leader_only(), self._kube_retried(podinfo.namespace(shard)):
            return self._on_shard(shard)
        return None  # refused, or the API server did not answer

    def _on_shard(self, shard: Manifest) -> ShardRef | None:
        ns, name = podinfo.namespace(shard), podinfo.name(shard)
        topology.cleanup(self.ctx, shard)
        if podinfo.annotations(shard).get(keys.ANN_TOPOLOGY_CLEANUP) or podinfo.deleting(shard):
            topo = podinfo.cr_topology(shard)
            if topo is not None:
                with self._guard:
                    # its pods must not re-register what was cleaned up
                    self._retired[topo.key] = str(podinfo.meta(shard).get("uid") or "")
            return None
        ref = self._ref(ns, labels.shard_selector(podinfo.cr_shard_id(shard)))
        with self._guard:
            self._known.add(ref)
            due = self.ctx.clock() - self._crs.get((ns, name), float("-inf")) >= self.ctx.config.backup_interval_s
            if due:
                self._crs[(ns, name)] = self.ctx.clock()
        self.reconcile(ref)
        if due:
            backup_health.check(self.ctx, shard)
        return ref

    def tick(self) -> None:
        """One periodic round: etcd changes (roles, failovers) produce no Kubernetes events. Each
        shard's pods get one pass: through their MultigresShard (which also checks its backups), or
        by their selector alone (pods no shard the agent knows of names)."""
        if not self.is_leader():
            return
        done: set[ShardRef] = set()
        for ns, name in list(self._crs):
            if not self.is_leader():
                return
            try:
                shard = self.ctx.kube.get_shard(ns, name)
            except KubeUnavailable as exc:
                self._kube_failed(ns, exc)
                return  # the API server is not answering: the next round asks again
            if shard is None:
                self._crs.pop((ns, name), None)
            elif (ref := self.on_shard(shard)) is not None:
                done.add(ref)
        with self._guard:
            refs = sorted(self._known - done)
        for ref in refs:
            self.reconcile(ref)

    # --- the shard pass ------------------------------------------------------------------------------
    @staticmethod
    def _ref(namespace: str, selector: dict[str, str]) -> ShardRef:
        return namespace, tuple(sorted(selector.items()))

    def reconcile(self, ref: ShardRef) -> list[ShardView]:
        if not self.is_leader():
            return []
        with self._guard:
            if ref in self._waiting:
                # That pass starts after this call and reads the pods and the topology afresh, so a second
                # one would only repeat it: a burst of events (the agent's own writes among them) costs
                # one pass behind the running one, not one each.
                return []
            self._waiting.add(ref)
            lock = self._locks.setdefault(ref, threading.Lock())
        views: list[ShardView] = []
        asked = time.monotonic()
        with lock, self._leader_only():
            with self._guard:
                self._waiting.discard(ref)
            started = time.monotonic()
            try:
                views = self._reconcile(ref)
                self.last_error = ""
                return views
            except KubeUnavailable as exc:
                self._kube_failed(ref[0], exc)
                return []
            except Exception as exc:
                self.last_error = f"{type(exc).__name__}: {exc}"
                self.ctx.metrics.reconcile_errors.labels(type(exc).__name__).inc()
                self.ctx.log.exception("shard pass failed", extra={"namespace": ref[0]})
                return []
            finally:
                self.passes += 1
                self._note_motion(ref, views)  # a failed pass waits for the periodic round
                # Where a step's latency goes (--log-level DEBUG): behind the running pass, or in this one.
                self.ctx.log.debug("shard pass", extra={
                    "namespace": ref[0], "shard": dict(ref[1]).get(keys.LABEL_SHARD),
                    "waited_s": round(started - asked, 3), "took_s": round(time.monotonic() - started, 3)})
        return []  # refused: leadership in doubt

    def settle(self) -> None:
        """Between periodic rounds: a pass for each shard whose last pass saw a pod in motion."""
        if not self.is_leader():
            return
        with self._guard:
            refs = sorted(self._settling)
        for ref in refs:
            self.reconcile(ref)

    def _note_motion(self, ref: ShardRef, views: list[ShardView]) -> None:
        now = self.ctx.clock()
        moving = any(settling.in_motion(pod, now) for view in views for pod in view.pods)
        with self._guard:
            (self._settling.add if moving else self._settling.discard)(ref)

    def _groups(self, namespace: str, selector: dict[str, str], shards: dict[str, Manifest | None],
                ) -> dict[tuple[str, ...], list[Manifest]]:
        """The trusted pool pods by shard key; `shards` keeps each MultigresShard read on the way (by
        name, None: not there), so the pass reads each once."""
        groups: dict[tuple[str, ...], list[Manifest]] = {}
        config = self.ctx.config

        def live_uid(name: str) -> str | None:
            if name not in shards:
                shards[name] = self.ctx.kube.get_shard(namespace, name)
            shard = shards[name]
            selected = shard is not None and trust.shard_selected(shard, config.shard_selector)
            return podinfo.meta(shard).get("uid") if shard is not None and selected else None

        unowned = config.allow_unowned_pods and not config.shard_selector
        for pod in self.ctx.kube.list_pool_pods(namespace, selector):
            if not trust.pod_trusted(pod, live_uid, allow_unowned=unowned):
                self._ignored(pod)
                continue
            top = podinfo.pod_topology(pod)
            if top is not None:
                groups.setdefault(top.shard_key, []).append(pod)
        return groups

    def _ignored(self, pod: Manifest) -> None:
        """A pod with pool labels the agent may not act on (trust.py): logged once per pod."""
        key = (podinfo.namespace(pod), podinfo.name(pod), podinfo.meta(pod).get("uid"))
        with self._guard:
            if key in self._untrusted:
                return
            self._untrusted.add(key)
        self.ctx.metrics.reconcile_errors.labels("untrusted-pod").inc()
        self.ctx.log.warning("ignoring a pool pod that no MultigresShard it names controls",
                             extra={"namespace": key[0], "pod": key[1]})

    def _reconcile(self, ref: ShardRef) -> list[ShardView]:
        namespace, selector = ref[0], dict(ref[1])
        views = []
        shards: dict[str, Manifest | None] = {}
        for key, first_pods in self._groups(namespace, selector, shards).items():
            view = self._observe(namespace, selector, key, first_pods, shards)
            if view is not None:
                self._act(view)
                views.append(view)
        return views

    def _observe(self, namespace: str, selector: dict[str, str], key: tuple[str, ...],
                 first_pods: list[Manifest], shards: dict[str, Manifest | None]) -> ShardView | None:
        ctx = self.ctx
        owner = next((n for p in first_pods if (n := podinfo.owner_shard_name(p))), None)
        if owner and owner not in shards:
            shards[owner] = ctx.kube.get_shard(namespace, owner)
        shard = shards[owner] if owner else None
        extra_cells = podinfo.cr_cells(shard) if shard else ()
        # _groups keeps only pods whose flags give a topology.
        tops = [cast(podinfo.PodTopology, podinfo.pod_topology(p)) for p in first_pods]
        topo = podinfo.shard_topology(tops, extra_cells)
        view = ShardView(namespace, topo, [], None, shard=shard)
        try:
            view.dataplane = ctx.plane_for(shard)
            view.poolers = view.dataplane.list_poolers(topo)
            view.listed_at = ctx.clock()
            self._mismatched.discard(topo.key)
            topology_health.observed(ctx, self._topology_failing, view, None)
        except TopologyUnavailable as exc:
            view.topology_error = exc.message
            topology_health.observed(ctx, self._topology_failing, view, exc.message)
            ctx.metrics.reconcile_errors.labels("topology-unavailable").inc()
            ctx.log.warning("topology unavailable", extra={"namespace": namespace, "detail": exc.message})
        except (VersionMismatch, ValueError) as exc:
            # The declared version is not what etcd holds: no step is taken on a shard we misread.
            view.topology_error = exc.message if isinstance(exc, VersionMismatch) else str(exc)
            view.topology_reason = RefusalReason.VERSION_MISMATCH.value
            ctx.metrics.reconcile_errors.labels(view.topology_reason).inc()
            ctx.log.warning("version mismatch", extra={"namespace": namespace, "detail": view.topology_error})
        view.pods = self._groups(namespace, selector, shards).get(key, [])  # read after the poolers
        ctx.pod_addresses.note((namespace, topo.key), view.pods)
        if view.pods and view.topology_reason == RefusalReason.VERSION_MISMATCH and topo.key not in self._mismatched:
            self._mismatched.add(topo.key)
            ctx.kube.event(shard or view.pods[0], "VersionMismatch", f"{view.topology_error}; the agent takes no "
                           "drain, role or topology step on this shard until spec.multigres.version matches",
                           warning=True)
        return view if view.pods else None

    def _act(self, view: ShardView) -> None:
        ctx = self.ctx
        touched = False
        fenced = fence.listed_pods(view.shard)
        for pod in view.pods:
            reading = podinfo.drain_reading(pod)
            if reading.unknown is None:
                ctx.unknown_drains.pop((view.namespace, podinfo.name(pod)), None)
            if podinfo.deleting(pod) and view.poolers is not None:
                self.handovers.primary_leaving(view, pod)  # before finalize: the record may go
            try:
                if podinfo.deleting(pod) and podinfo.has_finalizer(pod, keys.FINALIZER_POD):
                    finalize(ctx, view, pod)
                    touched = True
                elif reading.unknown is not None:
                    report_unknown_state(ctx, view, pod, reading.unknown)  # left alone, others go on
                elif podinfo.drain_under_way(pod):
                    run_drain(ctx, view, pod)
                    touched = True
                elif podinfo.drain_state(pod) is keys.DrainState.READY_FOR_DELETION and not podinfo.deleting(pod):
                    # v0.1.0 looks again until the engine deletes it; only a step back changes anything.
                    touched = run_drain(ctx, view, pod) is not keys.DrainState.READY_FOR_DELETION or touched
                elif podinfo.drain_state(pod) is None and not podinfo.deleting(pod) and fence.concerns(pod, fenced):
                    # Before the cancelled-drain restore: a fenced pod stays ineligible.
                    touched = fence.run_fence(ctx, view, pod, fenced) or touched
                elif podinfo.drain_state(pod) is None and podinfo.annotations(pod).get(keys.ANN_DRAIN_INELIGIBLE):
                    restore_eligibility(ctx, view, pod)  # a drain was cancelled after its standby left
                    touched = True
                elif podinfo.drain_state(pod) is None and keys.ANN_DRAIN_FORCE in podinfo.annotations(pod):
                    discard_force(ctx, view, pod, f"{keys.ANN_DRAIN_FORCE} is set but the pod has no drain")
                    touched = True
            except Conflict as exc:
                # Someone (the engine) changed the pod since we read it: decide again on the next pass.
                ctx.log.info("pod changed underneath; retrying next pass", extra={"detail": str(exc)})
                touched = True
        if touched and view.poolers is not None:
            # Drains and deletions change records and pods: read both again before roles and pruning.
            top = cast(podinfo.PodTopology, podinfo.pod_topology(view.pods[0]))  # a grouped pod (_groups)
            fresh = self._observe(view.namespace, {}, top.shard_key, view.pods, {})
            if fresh is None:
                return
            view.take(fresh)
        roles.publish_roles(ctx, view)
        recovery_gate.publish_recovery_gate(ctx, view)
        restore_watch.publish_restores(ctx, view)
        self.clones.step(view)  # a clone's first primary, once its pods restored the copy
        stuck_start.publish_stuck_starts(ctx, view)
        roles.prune(ctx, view)
        self._maybe_register(view)
        self.backups.step(view)

    def _maybe_register(self, view: ShardView) -> None:
        ctx = self.ctx
        if not ctx.config.register_topology or view.poolers is None or view.dataplane is None:
            return
        retired_by = self._retired.get(view.topology.key)
        # Another live MultigresShard of the same topology (a copy asked for the cleanup) still registers.
        retired = retired_by is not None and (view.shard is None or podinfo.meta(view.shard).get("uid") == retired_by)
        if retired or (view.shard is not None and (
                podinfo.deleting(view.shard) or podinfo.annotations(view.shard).get(keys.ANN_TOPOLOGY_CLEANUP))):
            return  # never re-register what a shard deletion is cleaning up
        generation = (podinfo.meta(view.shard).get("generation") if view.shard else None, view.topology.cells)
        last = self._registered.get(view.topology.key)
        if last and last[1] == generation and ctx.clock() - last[0] < ctx.config.register_interval_s:
            return
        topology.register(ctx, view)
        self._registered[view.topology.key] = (ctx.clock(), generation)
