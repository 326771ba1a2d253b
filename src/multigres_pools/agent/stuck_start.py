"""The mark on a pool pod whose PostgreSQL stays down, so the engine has the pod replaced.

Multigres v0.1.0 leaves PostgreSQL down for ever, its liveness probe passing, in two ways measured
here (docs/reliability.md): its manager, once the PostgreSQL it started died again, waits for it
without end (a full standby's disk: Status says action STARTING, not running, and for how long);
and a demoted old primary whose WAL went past the new primary's fork fails every start as a standby
(not running, no action). The round of Status calls the role labels use says which poolers are
down (`Leadership.down`); the agent remembers since when it has seen each so (`Context.down_since`,
or earlier when the manager says its start began earlier). Past --stuck-start-after it marks the pod
(keys.ANN_POSTGRES_STUCK: since when) and records a warning; the engine drains it and recreates it
(plan/stuck.py). When PostgreSQL runs again before that, the mark goes. A pooler that does not
answer keeps what it has: not knowing is not a verdict.
"""

from __future__ import annotations

from ansible_collections.multigres.pools.plugins.module_utils.core import keys
from ansible_collections.multigres.pools.plugins.module_utils.core.manifest import Manifest

from . import podinfo
from .context import Context, ShardView
from .kube import now_rfc3339


def down_since(seen_since: float | None, reported_s: float, now: float) -> float:
    """Since when PostgreSQL is down: the earlier of when we first saw it so and when its manager says
    its current start began (a manager that keeps retrying starts anew each time)."""
    reported = now - reported_s
    return reported if seen_since is None else min(seen_since, reported)


def next_mark(marked: str | None, down_s: float | None, running: bool, now: float, after_s: float) -> str | None:
    """The pod's new mark, "" to take it away, or None to leave the pod as it is. `down_s`: how long
    its PostgreSQL has been down (None: it is not, or the pooler did not answer); `running`: the pooler
    answered with PostgreSQL in or out of recovery."""
    if down_s is not None and down_s >= after_s:
        return None if marked else now_rfc3339(now - down_s)
    if marked and running:
        return ""
    return None


def publish_stuck_starts(ctx: Context, view: ShardView) -> int:
    """Mark or unmark every live pool pod whose PostgreSQL's state changed; the number of pods written."""
    written = 0
    for pod, pooler, uid, round_ in view.asked_pods():
        now = ctx.clock()
        marked = ctx.stuck_marks.get(uid, podinfo.annotations(pod).get(keys.ANN_POSTGRES_STUCK))
        running = pooler in round_.in_recovery or pooler in round_.writable
        down_s = None
        if pooler in round_.down:
            ctx.down_since[uid] = down_since(ctx.down_since.get(uid), round_.down[pooler], now)
            down_s = now - ctx.down_since[uid]
        elif running:
            ctx.down_since.pop(uid, None)
        mark = next_mark(marked, down_s, running, now, ctx.config.stuck_start_after_s)
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
        message = (f"{name}: PostgreSQL has not been running since {mark} and Multigres v0.1.0 does not bring "
                   "it back: the pod is drained and recreated")
    else:
        message = f"{name}: PostgreSQL runs again"
    ctx.log.warning("postgres stuck" if mark else "postgres running", extra={"pod": name, "detail": message})
    for target in view.event_targets(pod):
        ctx.kube.event(target, "PostgresStuck" if mark else "PostgresRunning", message, warning=bool(mark))
