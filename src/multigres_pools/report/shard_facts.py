"""The API server's half of the report, pure: the MultigresShard and its pool pods as `model.Report`."""

from __future__ import annotations

import datetime as dt

from ansible_collections.multigres.pools.plugins.module_utils.core import keys
from ansible_collections.multigres.pools.plugins.module_utils.core.manifest import Manifest
from ansible_collections.multigres.pools.plugins.module_utils.spec import cron, model
from ansible_collections.multigres.pools.plugins.module_utils.spec.reader import ShardReader
from ansible_collections.multigres.pools.plugins.module_utils.state import facts

from ..agent import backup_runner, podinfo
from .model import BackupRun, Backups, Clone, Condition, Drill, PodRow, Report


def report(cr: Manifest, pods: list[Manifest], now: dt.datetime) -> Report:
    shard = ShardReader.of(cr)
    meta, status = facts.meta(cr), shard.status
    decommission = shard.pods_listed("decommission")
    return Report(
        shard=facts.name(cr), namespace=str(meta.get("namespace") or ""),
        version=shard.multigres_version or keys.DEFAULT_MULTIGRES_VERSION.value,
        generation=int(meta.get("generation") or 0), observed_generation=status.observed_generation,
        phase=status.phase or "", message=status.message or "", observed_at=now,
        conditions=[Condition(c.type, c.status, c.reason or "", c.message or "",
                              facts.parse_time(c.last_transition_time)) for c in status.conditions],
        pods=sorted((pod_row(p, facts.name(p) in decommission) for p in pods), key=lambda r: (r.pool, r.cell, r.name)),
        backups=backups(cr, now), clone=_clone(status.clone))


def _clone(found: model.CloneStatus | None) -> Clone | None:
    if found is None:
        return None
    return Clone(source=found.source, state=found.state, message=found.message or "", leader=found.leader or "",
                 term=found.term, elected=facts.parse_time(found.elected_at))


def _restarts(pod: Manifest) -> int:
    status = pod.get("status") or {}
    statuses = [*(status.get("initContainerStatuses") or []), *(status.get("containerStatuses") or [])]
    return sum(int(s.get("restartCount") or 0) for s in statuses)


def pod_row(pod: Manifest, decommission: bool) -> PodRow:
    labels, annotations = facts.labels(pod), facts.annotations(pod)
    top = podinfo.pod_topology(pod)
    terminating = facts.is_terminating(pod)
    return PodRow(
        name=facts.name(pod), pool=labels.get(keys.LABEL_POOL, ""), cell=labels.get(keys.LABEL_CELL, ""),
        phase=(pod.get("status") or {}).get("phase") or "Pending",
        ready=facts.condition_true(pod, "Ready") and not terminating, role=labels.get(keys.LABEL_ROLE, ""),
        node=facts.node_name(pod), created=facts.parse_time(facts.meta(pod).get("creationTimestamp")),
        restarts=_restarts(pod), pooler=f"{top.cell}_{top.service_id}" if top else "",
        drain=annotations.get(keys.ANN_DRAIN_STATE, ""), drain_reason=annotations.get(keys.ANN_DRAIN_REASON, ""),
        blocked=annotations.get(keys.ANN_DRAIN_BLOCKED, ""),
        fenced=facts.condition_true(pod, keys.POD_CONDITION_FENCED), decommission=decommission,
        terminating=terminating)


def _run(run: model.BackupRun | None) -> BackupRun | None:
    if run is None:
        return None
    return BackupRun(
        type=run.type, trigger=run.trigger, pod=run.pod, started=facts.parse_time(run.started_at),
        finished=facts.parse_time(run.finished_at), force_primary=run.force_primary, backup_id=run.backup_id or "",
        size_bytes=run.size_bytes, error=run.error or "")


def _drill(run: model.DrillRun | None) -> Drill | None:
    if run is None:
        return None
    return Drill(backup_id=run.backup_id or "", trigger=run.trigger, started=facts.parse_time(run.started_at),
                 finished=facts.parse_time(run.finished_at), result=run.result or "", reason=run.reason or "",
                 message=run.message or "")


def backups(cr: Manifest, now: dt.datetime) -> Backups:
    status = ShardReader.of(cr).status
    state = status.backup or model.BackupStatus()
    due = sorted((cron.next_due(expression, now), str(kind))
                 for kind, expression in backup_runner.schedules(cr).items())
    return Backups(running=_run(state.running), last=_run(state.last),
                   waiting=state.waiting or "", next_type=due[0][1] if due else "",
                   next_at=due[0][0] if due else None,
                   newest_complete_at=facts.parse_time(status.last_backup_time),
                   newest_complete_type=status.last_backup_type or "",
                   drill_running=_drill(state.drill.running if state.drill else None),
                   drill_last=_drill(state.drill.last if state.drill else None),
                   last_verified=facts.parse_time(state.last_verified))
