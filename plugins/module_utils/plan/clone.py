"""The clone's copy (state/clone.py says what the pod does): start it, end it, retry it, and hold the pool
pods until it is done.

No pool pod of a clone exists before its repository is copied: a pod would find an empty repository,
and the bootstrap guard would hold it in back-off for minutes after the copy ended. Every step writes
the record (keys.ANN_CLONE on the MultigresShard) before it creates or deletes the pod, as the restore
drill does (plan/drill.py): a pass that dies between the two writes leaves a record the next one
finishes. A failed copy is tried again after a back-off (the copy overwrites only an earlier attempt of
its own); a copy waits while the source's agent runs a base backup.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
from dataclasses import dataclass, field
from typing import Any

from ..core import keys
from ..core.manifest import Manifest
from ..state import clone, facts
from ..state.desired import CloneCopy
from . import actions
from .actions import Action, Phase
from .context import Context

POLL = 5.0  # seconds between passes while the copy runs: its pod's end wakes no one
RETRY_S, RETRY_MAX_S = 30.0, 600.0  # back-off after a failed copy: 30 s, doubling, at most 10 min


@dataclass
class CloneOutcome:
    actions: list[Action] = field(default_factory=list)
    requeue_after: float = 0.0
    holds_pools: bool = False
    waiting: str = ""


def _write(cr: Manifest, rec: dict[str, Any], reason: str) -> Action:
    body = {"metadata": {"annotations": {keys.ANN_CLONE: json.dumps(rec, sort_keys=True)}}}
    return dataclasses.replace(actions.patch(cr, body, reason, Phase.SHARD), guards_rest=True)


def _held(waiting: str, actions_: list[Action] | None = None, requeue: float = POLL) -> CloneOutcome:
    return CloneOutcome(actions_ or [], requeue_after=requeue, holds_pools=True, waiting=waiting)


def _retry_at(rec: dict[str, Any]) -> dt.datetime | None:
    finished = facts.parse_time(str(rec.get("finishedAt") or ""))
    if finished is None:
        return None
    attempts = max(1, int(rec.get("attempt") or 1))
    return finished + dt.timedelta(seconds=min(RETRY_MAX_S, RETRY_S * 2 ** (attempts - 1)))


def _finish(ctx: Context, cr: Manifest, rec: dict[str, Any], pod: Manifest | None, ok: bool, reason: str,
            message: str, finished_at: str) -> CloneOutcome:
    source = rec.get("source", "?")
    state = keys.CloneState.COPIED if ok else keys.CloneState.FAILED
    done = {k: v for k, v in rec.items() if k not in ("reason", "message")} | {
        "state": state.value, "reason": reason, "message": message, "finishedAt": finished_at or ctx.stamp}
    out = [_write(cr, done, f"copy of {source}'s repository: {reason}")]
    if pod is not None and not facts.is_terminating(pod):
        out.append(actions.delete(pod, "the clone's copy is over: nothing of it stays", Phase.DELETE_OTHER))
    out.append(ctx.event(cr, "Normal" if ok else "Warning", "CloneCopied" if ok else "CloneCopyFailed",
                         f"copy of {source}'s repository: {message}"))
    if ok:  # the pool pods are created in this same pass
        return CloneOutcome(out, requeue_after=POLL)
    return _held(f"the copy of {source}'s repository failed ({reason}: {message}); it is tried again", out)


def _running(ctx: Context, cr: Manifest, rec: dict[str, Any], copy: CloneCopy | None,
             pod: Manifest | None) -> CloneOutcome:
    source = rec.get("source", "?")
    if pod is None:
        started = facts.parse_time(str(rec.get("startedAt") or "")) or ctx.now
        if ctx.now - started < clone.LOST_AFTER:
            return _held(f"copying the repository of {source}")  # a cache may not have the new pod yet
        name = copy.pod_name if copy else "the copy pod"
        return _finish(ctx, cr, rec, None, False, "PodLost", f"{name} disappeared before it ended", "")
    outcome = clone.ended(pod)
    if outcome is None:
        return _held(f"copying the repository of {source} (pod {facts.name(pod)}, since {rec.get('startedAt')})")
    return _finish(ctx, cr, rec, pod, outcome.succeeded, outcome.reason, outcome.message, outcome.finished_at)


def _start(ctx: Context, cr: Manifest, rec: dict[str, Any], copy: CloneCopy) -> CloneOutcome:
    source = copy.source.name
    attempt = int(rec.get("attempt") or 0) + 1
    running = {"state": keys.CloneState.COPYING.value, "source": source, "pod": copy.pod_name,
               "startedAt": ctx.stamp, "attempt": attempt}
    return _held(f"copying the repository of {source}", [
        _write(cr, running, f"copy of {source}'s repository starts (attempt {attempt})"),
        actions.apply(copy.pod, f"copy the repository of {source} into this shard's backup volume", Phase.POD),
        ctx.event(cr, "Normal", "CloneCopyStarted",
                  f"copying the repository of {source} in pod {copy.pod_name} (attempt {attempt})"),
    ])


def plan_clone(ctx: Context, clone_from: str | None, copy: CloneCopy | None, pod: Manifest | None) -> CloneOutcome:
    """The copy's step in this pass; `pod` is the live copy pod, if any."""
    if clone_from is None:
        return CloneOutcome()
    cr = ctx.observed.cr
    if cr is None:
        return _held("spec.backup.cloneFrom needs a MultigresShard: the engine keeps the copy's record on it",
                     requeue=0.0)
    rec = clone.record(cr)
    state = rec.get("state")
    if state == keys.CloneState.COPIED:
        stray = [] if pod is None or facts.is_terminating(pod) else [
            actions.delete(pod, "a clone copy pod after the copy", Phase.DELETE_OTHER)]
        return CloneOutcome(stray)
    if state == keys.CloneState.COPYING:
        return _running(ctx, cr, rec, copy, pod)
    if ctx.observed.pods or clone.election(cr).get("state") == keys.ElectionState.ELECTED:
        # The record is gone but the shard runs: its repository is its own now, never copied over.
        return CloneOutcome()
    if pod is not None:  # no copy runs: a leftover (a pass died after the record was written)
        stray = [] if facts.is_terminating(pod) else [actions.delete(pod, "a clone copy pod no copy owns",
                                                                     Phase.DELETE_OTHER)]
        return _held(f"removing a leftover copy pod of {clone_from}", stray)
    if copy is None:  # decide() reads the source until the copy is recorded; here it could not
        return _held(f"the source {clone_from} could not be read")
    retry = _retry_at(rec) if state == keys.CloneState.FAILED else None
    if retry is not None and ctx.now < retry:
        return _held(f"the copy of {clone_from}'s repository failed ({rec.get('reason')}: {rec.get('message')}); "
                     f"next attempt at {facts.format_time(retry)}", requeue=(retry - ctx.now).total_seconds())
    if copy.source.backup_running:
        return _held(f"waiting for the base backup {clone_from} runs now to end before copying its repository")
    return _start(ctx, cr, rec, copy)
