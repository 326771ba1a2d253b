"""`status -o json`, pure: the screen's content as plain JSON values under stable keys (docs/cli.md
lists them). Times are RFC 3339 strings in UTC, sizes and positions bytes, unknowns null."""

from __future__ import annotations

import json
from typing import Any

from . import units, verdict
from .model import BackupRun, Drill, PodRow, Report, Sync


def document(report: Report) -> dict[str, Any]:
    judged = verdict.judge(report)
    rep, backups, plane = report.replication, report.backups, report.data_plane
    return {
        "shard": report.shard, "namespace": report.namespace, "multigres_version": report.version,
        "generation": report.generation, "observed_generation": report.observed_generation,
        "phase": report.phase or None, "message": report.message or None,
        "observed_at": units.stamp(report.observed_at),
        "state": judged.state, "reasons": judged.reasons, "headline": judged.headline(report),
        "pods": [_pod(p, report) for p in report.pods],
        "replication": {
            "primary": rep.primary, "named_leader": rep.named_leader or None,
            "synchronous": [{"pooler": n, "pod": report.pod_of(n)} for n in rep.synchronous],
            "cohort": [{"pooler": n, "pod": report.pod_of(n)} for n in rep.cohort],
            "durability": None if rep.durability is None else {
                "required": rep.durability.required, "multi_cell": rep.durability.multi_cell,
                "text": verdict.durability_words(rep.durability.required, rep.durability.multi_cell),
                "met": rep.durable},
        },
        "backups": {
            "running": _run(backups.running), "last": _run(backups.last), "waiting": backups.waiting or None,
            "newest_complete": None if backups.newest_complete_at is None else {
                "type": backups.newest_complete_type or None, "finished_at": units.stamp(backups.newest_complete_at)},
            "next_scheduled": None if backups.next_at is None else {
                "type": backups.next_type, "at": units.stamp(backups.next_at)},
            "repository": [{"id": b.id, "type": b.type, "complete": b.complete, "size_bytes": b.size_bytes,
                            "final_lsn": b.final_lsn or None} for b in backups.repository],
            "repository_total": backups.repository_total, "repository_error": backups.repository_error or None,
            "drill": {"running": _drill(backups.drill_running), "last": _drill(backups.drill_last),
                      "last_verified": units.stamp(backups.last_verified)},
            "first_recoverable": None if backups.first_recoverable is None else {
                "backup_id": backups.first_recoverable.id, "lsn": backups.first_recoverable.final_lsn or None},
            "wal_archiving": None,  # not published by Multigres v0.1.0 (screen.WAL_ARCHIVING)
        },
        "clone": None if report.clone is None else {
            "source": report.clone.source, "state": report.clone.state, "message": report.clone.message or None,
            "leader": report.clone.leader or None, "term": report.clone.term,
            "elected_at": units.stamp(report.clone.elected)},
        "data_plane": {
            "reached": plane.reached, "error": plane.error or None, "hint": plane.hint or None,
            "unanswered": [{"pooler": p.pooler, "pod": p.pod, "address": p.address or None, "error": p.error}
                           for p in plane.unanswered],
        },
        "conditions": [{"type": c.type, "status": c.status, "reason": c.reason, "message": c.message,
                        "since": units.stamp(c.since)} for c in verdict.conditions_needing_attention(report)],
        "attention": verdict.attention(report),
    }


def _pod(pod: PodRow, report: Report) -> dict[str, Any]:
    age = None if pod.created is None else int((report.observed_at - pod.created).total_seconds())
    return {
        "name": pod.name, "pool": pod.pool, "cell": pod.cell, "phase": pod.phase, "ready": pod.ready,
        "role": pod.role or None, "sync": None if pod.sync is Sync.UNKNOWN else pod.sync.value,
        "pooler": pod.pooler or None, "lsn": pod.lsn or None, "lag_bytes": pod.lag_bytes, "node": pod.node or None,
        "state": None if pod.state == "-" else pod.state, "drain": None if not pod.drain else {
            "state": pod.drain, "reason": pod.drain_reason or None, "blocked": pod.blocked or None},
        "fenced": pod.fenced, "decommission": pod.decommission, "terminating": pod.terminating,
        "restarts": pod.restarts, "created_at": units.stamp(pod.created), "age_seconds": age,
    }


def _run(run: BackupRun | None) -> dict[str, Any] | None:
    if run is None:
        return None
    return {"type": run.type, "trigger": run.trigger, "pod": run.pod, "force_primary": run.force_primary,
            "started_at": units.stamp(run.started), "finished_at": units.stamp(run.finished),
            "backup_id": run.backup_id or None, "size_bytes": run.size_bytes, "error": run.error or None}


def _drill(drill: Drill | None) -> dict[str, Any] | None:
    if drill is None:
        return None
    return {"backup_id": drill.backup_id or None, "trigger": drill.trigger, "started_at": units.stamp(drill.started),
            "finished_at": units.stamp(drill.finished), "result": drill.result or None,
            "reason": drill.reason or None, "message": drill.message or None}


def render(report: Report) -> str:
    return json.dumps(document(report), indent=2, ensure_ascii=False) + "\n"
