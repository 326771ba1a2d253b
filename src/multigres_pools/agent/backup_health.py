"""Backup health: pick the newest complete backup and judge it, then publish the verdict on the shard.

Two era-A traps (contract §1.3, §1.5): GetBackups' `limit` keeps the OLDEST entries, so we read them
all (limit 0) and sort ourselves; and a diff/incr label `<full>_<ts>D` starts with its base full's
timestamp, so the time of a backup is the LAST timestamp in its label.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from ansible_collections.multigres.pools.plugins.module_utils.core import keys
from ansible_collections.multigres.pools.plugins.module_utils.core.manifest import Manifest
from ansible_collections.multigres.pools.plugins.module_utils.spec.reader import ShardReader
from ansible_collections.multigres.pools.plugins.module_utils.state import bootstrap, clone, facts

from ..dataplane.base import Backup, DataPlaneError, RefusalReason
from . import podinfo
from .context import Context


def backup_time(backup_id: str) -> datetime | None:
    try:
        return datetime.strptime(bootstrap.label_stamp(backup_id), "%Y%m%d-%H%M%S").replace(tzinfo=UTC)
    except ValueError:
        return None


def newest_complete(backups: list[Backup]) -> tuple[Backup, datetime] | None:
    dated = [(b, t) for b in backups if b.complete and (t := backup_time(b.backup_id)) is not None]
    return max(dated, key=lambda bt: bt[1]) if dated else None


def evaluate(backups: list[Backup], now: datetime, stale_after_s: float) -> dict[str, Any]:
    """The verdict published as JSON in ANN_BACKUP_HEALTH (camelCase, like CR status fields)."""
    verdict: dict[str, Any] = {"healthy": False, "checkedAt": facts.format_time(now)}
    if not backups:
        return {**verdict, "reason": "BackupStale", "message": "No backups found"}
    newest = newest_complete(backups)
    if newest is None:
        return {**verdict, "reason": "BackupStale", "message": "No completed backups found"}
    backup, when = newest
    age_h = (now - when).total_seconds() / 3600
    healthy = (now - when).total_seconds() <= stale_after_s
    verdict.update({
        "healthy": healthy,
        "reason": "BackupRecent" if healthy else "BackupStale",
        "lastBackupTime": facts.format_time(when),
        "lastBackupType": backup.type,
        "lastBackupId": backup.backup_id,
        "message": (f"Last {backup.type} backup completed {age_h:.1f}h ago" if healthy else
                    f"Last backup is {age_h:.1f}h old (threshold: {stale_after_s / 3600:g}h)"),
    })
    return verdict


def awaits_first_primary(shard: Manifest) -> bool:
    """A clone before the agent elected its first primary (agent/clone_election.py): no pooler is
    PRIMARY by design meanwhile, so a check could only fail, with a Warning every pass."""
    cloned = bool(ShardReader.of(shard).backup.get("cloneFrom"))
    return cloned and clone.election(shard).get("state") != keys.ElectionState.ELECTED


def check(ctx: Context, shard: Manifest) -> dict[str, Any] | None:
    """GetBackups on the shard's primary and publish the verdict; None when it could not be judged."""
    topo = podinfo.cr_topology(shard)
    if topo is None or awaits_first_primary(shard):
        return None
    now = datetime.fromtimestamp(ctx.clock(), UTC)
    previous = podinfo.annotations(shard).get(keys.ANN_BACKUP_HEALTH)
    try:
        plane = ctx.plane_for(shard)
        primary = plane.leader(plane.list_poolers(topo))
        if primary is None:
            raise DataPlaneError(RefusalReason.NO_PRIMARY, "no PRIMARY pooler in the topology")
        verdict = evaluate(plane.get_backups(primary, ctx.config.backup_read_limit), now,
                           podinfo.cr_backup_threshold_s(shard, ctx.config.backup_stale_after_s))
    except (DataPlaneError, ValueError) as exc:
        message = exc.message if isinstance(exc, DataPlaneError) else str(exc)
        ctx.kube.event(shard, "BackupCheckFailed", f"backup health check failed: {message}", warning=True)
        return None
    was = json.loads(previous) if previous else {}
    ctx.metrics.backup_healthy.labels(podinfo.namespace(shard), podinfo.name(shard)).set(int(verdict["healthy"]))
    last = facts.parse_time(verdict.get("lastBackupTime"))
    if last is not None:
        age = (now - last).total_seconds()
        ctx.metrics.last_backup_age.labels(podinfo.namespace(shard), podinfo.name(shard)).set(age)
    comparable = {k: v for k, v in verdict.items() if k != "checkedAt"}
    if comparable != {k: v for k, v in was.items() if k != "checkedAt"}:
        ctx.effect("write:backup-health")
        ctx.kube.patch_shard_annotations(shard, {keys.ANN_BACKUP_HEALTH: json.dumps(verdict, sort_keys=True)})
    if was.get("healthy") != verdict["healthy"]:
        ctx.kube.event(shard, "BackupHealthy" if verdict["healthy"] else "BackupStale", verdict["message"],
                       warning=not verdict["healthy"])
    return verdict
