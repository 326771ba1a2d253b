"""The restore in the status: what each v0.1.0 pooler's manager does on an empty data directory.

v0.1.0 restores by itself (the newest complete backup, then the archived WAL) or, with no backup in
the repository, runs initdb and the shard's first backup; its Status answers say so in
`postgres_action` (reference §1.2, field 11), in the same round of Status calls the role labels and
the readiness gate use. The agent keeps the story on the pod as keys.ANN_RESTORE (JSON): `restoring`
or `first-backup` with `startedAt` while it runs, then `restored` or `initialized` with `finishedAt`,
the backup id (the newest complete backup the agent's health check saw, which is what v0.1.0
restores) and the WAL position the pooler reported when it was done. The engine turns the pods'
facts into the condition Restoring and status.restore (state/bootstrap.py). A pooler that does not answer
keeps what it has: not knowing is not a verdict.
"""

from __future__ import annotations

import json
from typing import Any

from ansible_collections.multigres.pools.plugins.module_utils.core import keys
from ansible_collections.multigres.pools.plugins.module_utils.core.manifest import Manifest
from ansible_collections.multigres.pools.plugins.module_utils.state import facts

from ..dataplane.base import PostgresAction
from . import podinfo
from .context import Context, ShardView
from .kube import now_rfc3339

State = keys.RestoreState
_RUNNING = {PostgresAction.RESTORING: State.RESTORING, PostgresAction.FIRST_BACKUP: State.FIRST_BACKUP}
_DONE = {State.RESTORING: State.RESTORED, State.FIRST_BACKUP: State.INITIALIZED}


def next_fact(previous: dict[str, Any] | None, action: PostgresAction | None, done: bool, now: str,
              backup_id: str | None, position: str | None) -> dict[str, Any] | None:
    """The pod's new fact (None: keep `previous`). `action`: what the pooler reported it runs; `done`:
    it answered with PostgreSQL running and no action (a restore or first backup is then over)."""
    state = (previous or {}).get("state")
    if action is not None:
        running = _RUNNING[action]
        return None if state == running else {"state": running.value, "startedAt": now}
    if not done or state not in _DONE:
        return None
    out = {**(previous or {}), "state": _DONE[State(state)].value, "finishedAt": now}
    if state == State.RESTORING and backup_id:
        out["backupId"] = backup_id
    if position:
        out["walPosition"] = position
    return out


def _newest_backup(shard: Manifest | None) -> str | None:
    verdict = facts.json_annotation(shard, keys.ANN_BACKUP_HEALTH) or {}
    return str(verdict["lastBackupId"]) if verdict.get("lastBackupId") else None


def publish_restores(ctx: Context, view: ShardView) -> int:
    """Write every live pool pod's changed fact; the number of pods written."""
    written = 0
    for pod, pooler, uid, round_ in view.asked_pods():
        previous = ctx.restores.get(uid) or facts.json_annotation(pod, keys.ANN_RESTORE)
        done = pooler in round_.in_recovery or pooler in round_.writable
        fact = next_fact(previous, round_.actions.get(pooler), done, now_rfc3339(ctx.clock()),
                         _newest_backup(view.shard), round_.positions.get(pooler))
        if fact is None:
            continue
        ctx.effect("write:restore")
        ctx.kube.patch_pod_meta(pod, annotations={keys.ANN_RESTORE: json.dumps(fact, sort_keys=True)})
        ctx.restores[uid] = fact
        written += 1
        message = _describe(podinfo.name(pod), fact)
        ctx.log.info("restore", extra={"pod": podinfo.name(pod), "detail": message})
        for target in view.event_targets(pod):
            ctx.kube.event(target, "RestoreStarted" if "finishedAt" not in fact else "RestoreCompleted", message)
    return written


def _describe(pod: str, fact: dict[str, Any]) -> str:
    state = fact["state"]
    if state == State.RESTORING:
        return f"{pod}: restoring the newest complete backup from the repository"
    if state == State.FIRST_BACKUP:
        return f"{pod}: no backup in the repository: initdb and the shard's first backup (a new, empty shard)"
    if state == State.RESTORED:
        return (f"{pod}: restored backup {fact.get('backupId', '(unknown)')} and the archived WAL, "
                f"at {fact.get('walPosition', '(unknown)')}")
    return f"{pod}: initialised with the shard's first backup"
