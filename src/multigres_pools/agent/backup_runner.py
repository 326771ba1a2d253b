"""Runs the base backups `backup_schedule.decide` asks for: marks the pod, calls Backup in a thread
(the RPC returns when pgBackRest is done), then removes the mark and records the outcome.

`step` runs at the end of a shard pass, under that shard's lock, so it never interleaves with a
drain pass of the same shard; the mark is written with the pod's resourceVersion as precondition,
so a drain requested since the pods were listed makes the write fail and the backup waits.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import threading
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from ansible_collections.multigres.pools.plugins.module_utils.core import keys
from ansible_collections.multigres.pools.plugins.module_utils.core.keys import BackupType
from ansible_collections.multigres.pools.plugins.module_utils.core.manifest import Manifest
from ansible_collections.multigres.pools.plugins.module_utils.spec.reader import ShardReader
from ansible_collections.multigres.pools.plugins.module_utils.state import facts

from ..dataplane.base import DataPlane, DataPlaneError, Eligibility, Pooler
from . import backup_schedule, podinfo
from .backup_schedule import Decision, Inputs, Mark, PodFacts
from .context import Context, NotLeader, ShardView
from .kube import Conflict, KubeUnavailable

BACKUP_RPC_TIMEOUT_S = backup_schedule.MARK_EXPIRY.total_seconds() - 120  # past v0.1.0's own 30 min


def read_state(shard: Manifest) -> dict[str, Any]:
    return facts.json_annotation(shard, keys.ANN_BACKUP_STATE) or {}


def schedules(shard: Manifest) -> dict[BackupType, str]:
    """spec.backup.schedules with the model's defaults for what the CR leaves out."""
    parsed = ShardReader.of(shard).backup_schedules()
    if parsed is None:
        return {}  # the engine refuses the spec and says why (ConfigurationValid); nothing runs
    return {BackupType.FULL: parsed.full, BackupType.DIFFERENTIAL: parsed.differential}


def rolling_update(shard: Manifest) -> bool:
    return facts.condition_true(shard, keys.ShardCondition.ROLLING_UPDATE.value)


def _requested(raw: str | None) -> BackupType | None:
    try:
        return BackupType(raw) if raw else None
    except ValueError:
        return None


class BackupRunner:
    def __init__(self, ctx: Context, on_done: Callable[[str, str], None]) -> None:
        self.ctx = ctx
        self.holder = uuid.uuid4().hex[:12]  # this process: its marks are stale once their job ends
        self._on_done = on_done  # (namespace, shard): ask for a backup-health check
        self._guard = threading.Lock()
        # The state annotation is read, changed and written by passes and by finishing threads.
        self._state_locks: dict[tuple[str, str], threading.Lock] = {}
        self.running: dict[str, threading.Thread] = {}  # job id -> its thread

    def _state_lock(self, namespace: str, shard_name: str) -> threading.Lock:
        with self._guard:
            return self._state_locks.setdefault((namespace, shard_name), threading.Lock())

    def _now(self) -> datetime:
        return datetime.fromtimestamp(self.ctx.clock(), UTC)

    # --- the pass step ---------------------------------------------------------------------------
    def step(self, view: ShardView) -> None:
        shard = view.shard
        if shard is None or view.poolers is None or view.dataplane is None or podinfo.deleting(shard):
            return
        if podinfo.annotations(shard).get(keys.ANN_TOPOLOGY_CLEANUP):
            return
        with self._state_lock(view.namespace, podinfo.name(shard)):
            fresh = self.ctx.kube.get_shard(view.namespace, podinfo.name(shard))  # the view's may predate a finish
            if fresh is not None:
                self._step(view, fresh)

    def _step(self, view: ShardView, shard: Manifest) -> None:
        now = self._now()
        marks = self._live_marks(view, now)
        state = read_state(shard)
        raw_request = podinfo.annotations(shard).get(keys.ANN_BACKUP_REQUEST)
        request = _requested(raw_request)
        if raw_request and request is None:
            self._refuse_request(shard, raw_request)
        pods = [self._pod_facts(view, pod, None) for pod in view.pods]
        inputs = Inputs(now=now, schedules=schedules(shard), handled=backup_schedule.read_handled(state),
                        request=request, pods=pods, marks=marks, rolling_update=rolling_update(shard))
        decision = backup_schedule.decide(inputs)
        if decision.start is not None and not decision.force_primary:
            # Only now ask the standbys whether they replicate (one RPC each), and decide again.
            pods = [self._pod_facts(view, pod, view.dataplane) for pod in view.pods]
            decision = backup_schedule.decide(dataclasses.replace(inputs, pods=pods))
        if decision.start is None:
            self._record(shard, state, decision, None)
            return
        self._start(view, shard, state, decision, now)

    def _live_marks(self, view: ShardView, now: datetime) -> list[Mark]:
        live = []
        for pod in view.pods:
            mark = backup_schedule.read_mark(podinfo.name(pod), podinfo.annotations(pod).get(keys.ANN_BACKUP_RUNNING))
            if mark is None:
                continue
            with self._guard:
                running = set(self.running)
            if not backup_schedule.stale(mark, self.holder, running, now):
                live.append(mark)
                continue
            self.ctx.effect("write:backup-mark")
            self.ctx.kube.patch_pod_meta(pod, annotations={keys.ANN_BACKUP_RUNNING: None}, missing_ok=True)
            for target in view.event_targets(pod):
                self.ctx.kube.event(target, "BackupMarkCleared", f"{mark.pod}: removed the backup mark of job "
                                    f"{mark.job_id or '?'}: no agent runs it any more", warning=True)
        return live

    @staticmethod
    def _pod_facts(view: ShardView, pod: Manifest, plane: DataPlane | None) -> PodFacts:
        primary = view.is_primary(pod)
        replicating = True
        if plane is not None and not primary:
            own = view.own(pod)
            replicating = own is not None and _replicating(plane, own)
        reading = podinfo.drain_reading(pod)
        return PodFacts(name=podinfo.name(pod), primary=primary, ready=podinfo.containers_ready(pod),
                        replicating=replicating, draining=reading.state is not None or reading.unknown is not None,
                        terminating=podinfo.deleting(pod))

    def _refuse_request(self, shard: Manifest, raw: str) -> None:
        known = ", ".join(t.value for t in BackupType)
        self.ctx.effect("write:backup-request")
        self.ctx.kube.patch_shard_annotations(shard, {keys.ANN_BACKUP_REQUEST: None})
        self.ctx.kube.event(shard, "BackupRequestRefused", f"{keys.ANN_BACKUP_REQUEST}={raw!r} is not one of "
                            f"{known}; removed, nothing started", warning=True)

    def _record(self, shard: Manifest, state: dict[str, Any], decision: Decision, running: dict[str, Any] | None,
                request_done: bool = False) -> None:
        """Write the state annotation when it changes (and remove an acknowledged request with it)."""
        new = dict(state)
        schedule = dict(new.get("schedule") or {})
        schedule.update({k.value: facts.format_time(t) for k, t in decision.handled.items()})
        new["schedule"] = schedule
        new.pop("waiting", None)
        if decision.wait:
            new["waiting"] = decision.wait
        if running is not None:
            new["running"] = running
        patch: dict[str, str | None] = {}
        if new != state:
            patch[keys.ANN_BACKUP_STATE] = json.dumps(new, sort_keys=True)
        if request_done:
            patch[keys.ANN_BACKUP_REQUEST] = None
        if patch:
            self.ctx.effect("write:backup-state")
            self.ctx.kube.patch_shard_annotations(shard, patch)
        if decision.wait and decision.wait != state.get("waiting"):
            self.ctx.kube.event(shard, "BackupWaiting", decision.wait)

    def _start(self, view: ShardView, shard: Manifest, state: dict[str, Any], d: Decision, now: datetime) -> None:
        assert d.start is not None and view.dataplane is not None
        pod = next(p for p in view.pods if podinfo.name(p) == d.pod)
        pooler = view.own(pod)
        if pooler is None:
            return  # its record is not listed yet: the next pass decides again
        stamp = now.strftime("%Y%m%dT%H%M%SZ")
        job_id = f"{podinfo.name(shard)}-{d.start.value}-{stamp}"
        started = facts.format_time(now)
        mark = {"jobId": job_id, "type": d.start.value, "startedAt": started, "holder": self.holder}
        self.ctx.effect("write:backup-mark")
        try:
            # The precondition: a drain requested since the pods were listed fails this write.
            self.ctx.kube.patch_pod_meta(pod, annotations={keys.ANN_BACKUP_RUNNING: json.dumps(mark, sort_keys=True)},
                                         precondition=True)
        except Conflict:
            return
        run = {"type": d.start.value, "trigger": d.trigger, "pod": d.pod, "forcePrimary": d.force_primary,
               "jobId": job_id, "startedAt": started}
        self._record(shard, state, d, run, request_done=d.trigger == "request")
        where = "on the PRIMARY (force_primary): no ready, replicating standby" if d.force_primary else "on a standby"
        for target in view.event_targets(pod):
            self.ctx.kube.event(target, "BackupStarted", f"{d.start.value} backup ({d.trigger}) started on "
                                f"{d.pod} {where}; job {job_id}", warning=d.force_primary)
        thread = threading.Thread(target=self._run, name=f"backup-{job_id}", daemon=True,
                                  args=(view.dataplane, pooler, view.leader(), view.namespace,
                                        podinfo.name(shard), d, job_id, run))
        with self._guard:
            self.running[job_id] = thread
        thread.start()

    # --- the backup thread -----------------------------------------------------------------------
    def _run(self, plane: DataPlane, pooler: Pooler, leader: Pooler | None, namespace: str, shard_name: str,
             d: Decision, job_id: str, run: dict[str, Any]) -> None:
        assert d.start is not None
        result = dict(run)
        try:
            self.ctx.effect("backup")
            result["backupId"] = plane.take_backup(pooler, d.start.value, job_id, d.force_primary,
                                                   timeout_s=BACKUP_RPC_TIMEOUT_S)
            with contextlib.suppress(DataPlaneError):  # the size is a nicety; the backup is done
                listed = plane.get_backups(leader or pooler, 0)
                size = next((b.size_bytes for b in listed if b.backup_id == result["backupId"]), None)
                if size:
                    result["sizeBytes"] = size
        except DataPlaneError as exc:
            result["error"] = f"{exc.reason}: {exc.message}"
        except NotLeader:
            result["error"] = "this agent lost its leadership before the backup started"
        except Exception as exc:  # the thread must always clear its mark
            result["error"] = f"{type(exc).__name__}: {exc}"
        result["finishedAt"] = facts.format_time(self._now())
        try:
            with self._state_lock(namespace, shard_name):
                self._finish(namespace, shard_name, d.pod, job_id, result)
        except (NotLeader, KubeUnavailable, Conflict) as exc:
            # The mark stays; the next pass (ours: the job is no longer running) or a new leader
            # (after MARK_EXPIRY) removes it.
            self.ctx.log.warning("backup outcome not recorded", extra={"job": job_id, "detail": str(exc)})
        finally:
            with self._guard:
                self.running.pop(job_id, None)
        self._on_done(namespace, shard_name)

    def _finish(self, namespace: str, shard_name: str, pod_name: str, job_id: str, result: dict[str, Any]) -> None:
        kube = self.ctx.kube
        pod = kube.get_pod(namespace, pod_name)
        if pod is not None:
            mark = backup_schedule.read_mark(pod_name, podinfo.annotations(pod).get(keys.ANN_BACKUP_RUNNING))
            if mark is not None and mark.job_id == job_id:
                self.ctx.effect("write:backup-mark")
                kube.patch_pod_meta(pod, annotations={keys.ANN_BACKUP_RUNNING: None}, missing_ok=True)
        shard = kube.get_shard(namespace, shard_name)
        if shard is None:
            return
        state = read_state(shard)
        if (state.get("running") or {}).get("jobId") == job_id:
            state.pop("running")
        state["last"] = result
        self.ctx.effect("write:backup-state")
        kube.patch_shard_annotations(shard, {keys.ANN_BACKUP_STATE: json.dumps(state, sort_keys=True)})
        kind, error = result["type"], result.get("error")
        targets = [o for o in (pod, shard) if o is not None]
        for target in targets:
            if error:
                kube.event(target, "BackupFailed", f"{kind} backup on {pod_name} failed: {error}", warning=True)
            else:
                kube.event(target, "BackupCompleted", f"{kind} backup {result['backupId']} completed on {pod_name} "
                           f"(job {job_id})")


def _replicating(plane: DataPlane, pooler: Pooler) -> bool:
    """Eligible, its WAL receiver running and told who the primary is (v0.1.0's Backup on a standby
    refuses without that); era A publishes none of it: trust the REPLICA record."""
    if not plane.supports_eligibility:
        return True
    try:
        state = plane.standby_state(pooler)
    except DataPlaneError:
        return False
    return state.replicating and state.knows_primary and state.eligibility is not Eligibility.INELIGIBLE
