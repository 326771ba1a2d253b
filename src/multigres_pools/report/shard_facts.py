"""The API server's half of the report, pure: the MultigresShard and its pool pods as `model.Report`."""

from __future__ import annotations

import datetime as dt
from typing import Any

from ansible_collections.multigres.pools.plugins.module_utils.core import keys
from ansible_collections.multigres.pools.plugins.module_utils.core.manifest import Manifest
from ansible_collections.multigres.pools.plugins.module_utils.spec import cron
from ansible_collections.multigres.pools.plugins.module_utils.state import facts

from ..agent import backup_runner, podinfo
from .model import BackupRun, Backups, Condition, PodRow, Report


def report(cr: Manifest, pods: list[Manifest], now: dt.datetime) -> Report:
    meta, spec, status = facts.meta(cr), cr.get("spec") or {}, cr.get("status") or {}
    decommission = podinfo.cr_pod_list(cr, "decommission")
    return Report(
        shard=facts.name(cr), namespace=str(meta.get("namespace") or ""),
        version=(spec.get("multigres") or {}).get("version") or keys.DEFAULT_MULTIGRES_VERSION.value,
        generation=int(meta.get("generation") or 0), observed_generation=status.get("observedGeneration"),
        phase=status.get("phase") or "", message=status.get("message") or "", observed_at=now,
        conditions=[Condition(c.get("type", ""), c.get("status", ""), c.get("reason", ""), c.get("message", ""),
                              facts.parse_time(c.get("lastTransitionTime")))
                    for c in status.get("conditions") or []],
        pods=sorted((pod_row(p, facts.name(p) in decommission) for p in pods), key=lambda r: (r.pool, r.cell, r.name)),
        backups=backups(cr, now))


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


def _run(raw: Any) -> BackupRun | None:
    if not isinstance(raw, dict) or not raw:
        return None
    size = raw.get("sizeBytes")
    return BackupRun(
        type=str(raw.get("type") or "?"), trigger=str(raw.get("trigger") or "?"), pod=str(raw.get("pod") or "?"),
        started=facts.parse_time(raw.get("startedAt")), finished=facts.parse_time(raw.get("finishedAt")),
        force_primary=bool(raw.get("forcePrimary")), backup_id=str(raw.get("backupId") or ""),
        size_bytes=int(size) if isinstance(size, int | float) else None, error=str(raw.get("error") or ""))


def backups(cr: Manifest, now: dt.datetime) -> Backups:
    status = cr.get("status") or {}
    state = status.get("backup") or {}
    due = sorted((cron.next_due(expression, now), str(kind))
                 for kind, expression in backup_runner.schedules(cr).items())
    return Backups(running=_run(state.get("running")), last=_run(state.get("last")),
                   waiting=str(state.get("waiting") or ""), next_type=due[0][1] if due else "",
                   next_at=due[0][0] if due else None,
                   newest_complete_at=facts.parse_time(status.get("lastBackupTime")),
                   newest_complete_type=str(status.get("lastBackupType") or ""))
