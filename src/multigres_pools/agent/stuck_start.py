"""The mark on a pool pod whose PostgreSQL stays down, so the engine has the pod replaced.

Multigres v0.1.0's manager, once the PostgreSQL it started has died again, waits for it for ever
and never starts it again, while its liveness probe keeps passing (docs/reliability.md, a full
standby's disk). Its Status says so: action STARTING with PostgreSQL not running, and for how long
(`Leadership.starting_dead`, from the same round of Status calls the role labels use). Past
--stuck-start-after the agent marks the pod (keys.ANN_POSTGRES_STUCK: when that start began) and
records a warning; the engine drains it and recreates it on its volume (plan/stuck.py). When
PostgreSQL answers again before that, the mark goes. A pooler that does not answer keeps what it
has: not knowing is not a verdict.
"""

from __future__ import annotations

from ansible_collections.multigres.pools.plugins.module_utils.core import keys
from ansible_collections.multigres.pools.plugins.module_utils.core.manifest import Manifest
from ansible_collections.multigres.pools.plugins.module_utils.state import facts

from . import podinfo
from .context import Context, ShardView
from .kube import now_rfc3339


def next_mark(marked: str | None, starting_dead_s: float | None, running: bool, now: float,
              after_s: float) -> str | None:
    """The pod's new mark, "" to take it away, or None to leave the pod as it is. `starting_dead_s`:
    how long the pooler has been starting a PostgreSQL that is not running (None: it is not);
    `running`: the pooler answered with PostgreSQL in or out of recovery."""
    if starting_dead_s is not None and starting_dead_s >= after_s:
        return None if marked else now_rfc3339(now - starting_dead_s)
    if marked and running:
        return ""
    return None


def publish_stuck_starts(ctx: Context, view: ShardView) -> int:
    """Mark or unmark every live pool pod whose PostgreSQL's state changed; the number of pods written."""
    plane = view.dataplane
    if view.poolers is None or plane is None or not plane.confirms_leader:
        return 0
    pods = [p for p in view.pods if not podinfo.deleting(p)]
    if not pods:
        return 0
    round_ = view.leadership()
    written = 0
    for pod in pods:
        pooler = view.own_id(pod)
        if pooler is None:
            continue
        uid = facts.uid(pod) or podinfo.name(pod)
        marked = ctx.stuck_marks.get(uid, podinfo.annotations(pod).get(keys.ANN_POSTGRES_STUCK))
        running = pooler in round_.in_recovery or pooler in round_.writable
        mark = next_mark(marked, round_.starting_dead.get(pooler), running, ctx.clock(), ctx.config.stuck_start_after_s)
        if mark is None:
            continue
        ctx.effect("write:postgres-stuck")
        ctx.kube.patch_pod_meta(pod, annotations={keys.ANN_POSTGRES_STUCK: mark or None})
        ctx.stuck_marks[uid] = mark
        written += 1
        _tell(ctx, view, pod, mark)
    return written


def _tell(ctx: Context, view: ShardView, pod: Manifest, mark: str) -> None:
    name = podinfo.name(pod)
    if mark:
        message = (f"{name}: its multipooler has been starting PostgreSQL since {mark} and PostgreSQL is not "
                   "running; Multigres v0.1.0 does not start it again: the pod is drained and recreated on its volume")
    else:
        message = f"{name}: PostgreSQL runs again"
    ctx.log.warning("postgres stuck" if mark else "postgres running", extra={"pod": name, "detail": message})
    for target in view.event_targets(pod):
        ctx.kube.event(target, "PostgresStuck" if mark else "PostgresRunning", message, warning=bool(mark))
