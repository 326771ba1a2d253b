"""The restore drill's steps (state/drill.py says what the pod does): start one when the schedule is
due or a human asks, end it when its pod ended or ran out of time, and keep the record.

One drill at a time per shard, the pod named by naming.restore_drill_pod_name. Every step writes the
record (keys.ANN_RESTORE_DRILL on the MultigresShard) before it creates or deletes the pod, with a
conditional patch: two passes that raced cannot both start a drill, and a pass that dies between the
two writes leaves a record the next pass finishes (a running drill whose pod is missing is lost; a
drill pod while no drill runs is deleted).

The schedule works as the backups' do (agent/backup_schedule.py): a due time is handled once, a
schedule seen for the first time is only recorded, and due times missed while nothing ran collapse
into one. A drill waits while a base backup runs (pgBackRest may expire the backup it restores).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
from dataclasses import dataclass, field
from typing import Any

from ..core import keys
from ..core.manifest import Manifest
from ..spec import cron
from ..state import drill, facts
from ..state.desired import RestoreDrill
from . import actions
from .actions import Action, Phase
from .context import Context

POLL = 10.0  # seconds between passes while a drill runs: its pod's end wakes no one


@dataclass
class DrillOutcome:
    actions: list[Action] = field(default_factory=list)
    requeue_after: float = 0.0


def _newest_backup(cr: Manifest) -> str | None:
    """The newest complete backup the agent knows of: the newest its health check saw, or the last one it
    ran successfully if that is newer (the health check runs every --backup-interval)."""
    health = facts.json_annotation(cr, keys.ANN_BACKUP_HEALTH) or {}
    last = (facts.json_annotation(cr, keys.ANN_BACKUP_STATE) or {}).get("last") or {}
    ran = last.get("backupId") if isinstance(last, dict) and last.get("finishedAt") and not last.get("error") else None
    return drill.newest(str(b) for b in (health.get("lastBackupId"), ran) if b)


def _backup_running(cr: Manifest) -> bool:
    return bool((facts.json_annotation(cr, keys.ANN_BACKUP_STATE) or {}).get("running"))


def _write(cr: Manifest, rec: dict[str, Any], reason: str, *, request_done: bool = False) -> Action:
    annotations: dict[str, str | None] = {keys.ANN_RESTORE_DRILL: json.dumps(rec, sort_keys=True)}
    if request_done:
        annotations[keys.ANN_RESTORE_DRILL_REQUEST] = None
    return dataclasses.replace(actions.patch(cr, {"metadata": {"annotations": annotations}}, reason, Phase.SHARD),
                               guards_rest=True)


def _finish(ctx: Context, cr: Manifest, rec: dict[str, Any], pod: Manifest | None, verified: bool, reason: str,
            message: str, finished_at: str) -> list[Action]:
    running = rec.get("running") or {}
    last = {"result": keys.DrillResult.VERIFIED if verified else keys.DrillResult.FAILED, "reason": reason,
            "message": message, "finishedAt": finished_at or ctx.stamp,
            **{k: running[k] for k in ("backupId", "startedAt", "trigger", "pod") if running.get(k)}}
    done = {k: v for k, v in rec.items() if k != "running"} | {"last": last}
    if verified:
        done["lastVerified"] = last["finishedAt"]
    what = f"restore drill of backup {running.get('backupId', '?')}"
    out = [_write(cr, done, f"{what}: {reason}")]
    if pod is not None and not facts.is_terminating(pod):
        out.append(actions.delete(pod, f"{what} is over: nothing of it stays", Phase.DELETE_OTHER))
    out.append(ctx.event(cr, "Normal" if verified else "Warning",
                         "BackupVerified" if verified else "BackupVerificationFailed", f"{what}: {message}"))
    return out


def _running(ctx: Context, cr: Manifest, rec: dict[str, Any], spec: RestoreDrill | None,
             pod: Manifest | None) -> DrillOutcome:
    running = rec["running"]
    started = facts.parse_time(str(running.get("startedAt") or "")) or ctx.now
    if spec is None:
        return DrillOutcome(_finish(ctx, cr, rec, pod, False, "Cancelled",
                                    "spec.backup.verify was removed while the drill ran", ""))
    if pod is None:
        if ctx.now - started < drill.LOST_AFTER:
            return DrillOutcome(requeue_after=POLL)  # created a moment ago: a cache may not have it yet
        return DrillOutcome(_finish(ctx, cr, rec, None, False, "PodLost",
                                    f"the drill pod {spec.pod_name} disappeared before it ended", ""))
    outcome = drill.ended(pod)
    if outcome is not None:
        return DrillOutcome(_finish(ctx, cr, rec, pod, outcome.succeeded, outcome.reason, outcome.message,
                                    outcome.finished_at))
    if (ctx.now - started).total_seconds() > spec.timeout_s:
        return DrillOutcome(_finish(ctx, cr, rec, pod, False, "Timeout",
                                    f"still running after spec.backup.verify.timeout ({spec.timeout_s:g} s)", ""))
    return DrillOutcome(requeue_after=POLL)


def _due(ctx: Context, spec: RestoreDrill, rec: dict[str, Any]) -> tuple[dt.datetime | None, float]:
    """(the due time to handle now or None, seconds until the next one) for spec.schedule."""
    if spec.schedule is None:
        return None, 0.0
    latest = cron.last_due(spec.schedule, ctx.now)
    until = max(1.0, (cron.next_due(spec.schedule, ctx.now) - ctx.now).total_seconds())
    return latest, until


def _start(ctx: Context, cr: Manifest, spec: RestoreDrill, rec: dict[str, Any], trigger: str,
           due: dt.datetime | None) -> DrillOutcome:
    request = trigger == "request"
    handled = {"handled": facts.format_time(due)} if due is not None else {}
    backup = _newest_backup(cr)
    if backup is None:
        why = ("no complete backup is known to restore (status.lastBackupTime is unset: the agent has not seen "
               "one in the repository)")
        last = {"result": keys.DrillResult.FAILED, "reason": "NoBackup", "message": why, "trigger": trigger,
                "finishedAt": ctx.stamp}
        return DrillOutcome([_write(cr, rec | handled | {"last": last}, f"restore drill ({trigger}): {why}",
                                    request_done=request),
                             ctx.event(cr, "Warning", "BackupVerificationFailed", f"restore drill: {why}")])
    pod = spec.pod(backup)
    running = {"trigger": trigger, "backupId": backup, "startedAt": ctx.stamp, "pod": spec.pod_name}
    return DrillOutcome([
        _write(cr, rec | handled | {"running": running}, f"restore drill of backup {backup} starts ({trigger})",
               request_done=request),
        actions.apply(pod, f"restore drill of backup {backup}: a throwaway pod restores it and runs the query",
                      Phase.POD),
        ctx.event(cr, "Normal", "RestoreDrillStarted", f"restoring backup {backup} in pod {spec.pod_name} ({trigger})"),
    ], requeue_after=POLL)


def plan_drill(ctx: Context, spec: RestoreDrill | None, pod: Manifest | None) -> DrillOutcome:
    """The drill's step in this pass; `pod` is the live pod under the drill's name, if any."""
    cr = ctx.observed.cr
    if cr is None:
        return DrillOutcome()  # vars mode: no record to keep
    rec = drill.record(cr)
    if rec.get("running"):
        return _running(ctx, cr, rec, spec, pod)
    if pod is not None:  # no drill runs: a leftover (a pass died after the record was written)
        stray = [] if facts.is_terminating(pod) else [actions.delete(pod, "a restore drill pod no drill owns",
                                                                     Phase.DELETE_OTHER)]
        return DrillOutcome(stray, requeue_after=POLL)
    if spec is None:
        return DrillOutcome()
    requested = keys.ANN_RESTORE_DRILL_REQUEST in facts.annotations(cr)
    latest, until = _due(ctx, spec, rec)
    handled = drill.handled(rec)
    if latest is not None and handled is None and not requested:
        return DrillOutcome([_write(cr, rec | {"handled": facts.format_time(latest)},
                                    f"restore drill schedule {spec.schedule!r} noted: the first drill is at its "
                                    "next time")], requeue_after=until)
    due = latest is not None and handled is not None and latest > handled
    if not (requested or due):
        return DrillOutcome(requeue_after=until)
    if _backup_running(cr):
        return DrillOutcome(requeue_after=POLL)  # pgBackRest may expire the backup a drill would restore
    return _start(ctx, cr, spec, rec, "request" if requested else "schedule", latest if due else None)
