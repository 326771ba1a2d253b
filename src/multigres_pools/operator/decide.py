"""The in-process half of a reconcile: run the engine's `decide` on the watch caches and tell
whether the shard needs a playbook run at all.

A shard needs a run when its plan has an action or its status would change (status writes are
writes: they go through the playbook like any other), or when its periodic full check is due.
Otherwise the pass ends here, with zero requests to the API server and no process started, and
its outcome (converged, progressing with a requeue, invalid) is the one the module would have
returned. When a run is needed, the list answers the decision read are written to a snapshot that
the module replays, so the run does not list the shard's objects again.
"""

from __future__ import annotations

import datetime as dt
import logging
import time
from dataclasses import dataclass, field
from pathlib import Path

from ansible_collections.multigres.pools.plugins.module_utils.kube import snapshot
from ansible_collections.multigres.pools.plugins.module_utils.reconcile.shard import Request, decide
from ansible_collections.multigres.pools.plugins.module_utils.spec.policy import SpecPolicy

from .cache import CacheView
from .outcome import Outcome, Result
from .relevance import ShardKey

log = logging.getLogger(__name__)


@dataclass
class Verdict:
    key: ShardKey
    run: bool
    # Why a run is needed ("actions", "status", "full check", "decision failed"), or "no-op".
    reason: str
    outcome: Outcome | None = None  # the pass's outcome when no run is needed
    snapshot: Path | None = None  # what the run replays; None: it lists live
    plan: list[str] = field(default_factory=list)
    seconds: float = 0.0


def _outcome(errors: list[str], invalid: bool, requeue_after: float) -> Outcome:
    if invalid:
        # Nothing to write means ConfigurationValid=False is already in the status.
        return Outcome(Result.INVALID, "; ".join(errors), status_written=True)
    if requeue_after > 0:
        return Outcome(Result.PROGRESSING, requeue_after=requeue_after)
    return Outcome(Result.CONVERGED)


def decide_shard(view: CacheView, key: ShardKey, snapshot_dir: Path, *, full_check: bool = False,
                 now: dt.datetime | None = None, policy: SpecPolicy | None = None) -> Verdict | None:
    """The verdict for one shard from the caches; None when the cache has no such shard."""
    started = time.perf_counter()
    cr = view.cache.shard(key)
    if cr is None:
        return None
    namespace, name = key
    recorder = snapshot.Recorder(view)
    try:
        decision = decide(recorder, Request(namespace=namespace, name=name, policy=policy or SpecPolicy()), cr,
                          now or dt.datetime.now(dt.UTC))
    except Exception as exc:  # the playbook is the authority: let it try, list live, and report
        log.warning("%s/%s: in-process decision failed, handing it to the playbook: %s", namespace, name, exc)
        return Verdict(key, True, "decision failed", seconds=time.perf_counter() - started)
    plan = decision.result.plan
    if full_check:
        return Verdict(key, True, "full check", plan=plan, seconds=time.perf_counter() - started)
    if decision.writes:
        reason = "actions" if decision.plan is not None and decision.plan.actions and not decision.invalid else "status"
        path = recorder.write(snapshot_dir / f"{namespace}.{name}.json")
        return Verdict(key, True, reason, snapshot=path, plan=plan, seconds=time.perf_counter() - started)
    outcome = _outcome(decision.result.errors, decision.invalid, decision.result.requeue_after)
    return Verdict(key, False, "no-op", outcome=outcome, plan=plan, seconds=time.perf_counter() - started)
