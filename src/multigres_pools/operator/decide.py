"""The in-process half of a reconcile: run the engine's `decide` on the watch caches and tell
whether the shard needs a playbook run at all.

A shard needs a run when its plan has an action, when its spec is refused, or when its periodic
full check is due. Otherwise the pass ends here, with no process started, and its outcome
(converged, progressing with a requeue) is the one the module would have returned. When only the
status would change (a pod turned Ready, the agent moved a drain on), the verdict carries the
decision and the operator writes that status itself (`reconcile.shard.execute`: the same status
server-side-applied with the same field manager, and the same transition events): the playbook
would compute it from the same snapshot and write the same bytes, after an ansible-playbook
start-up that is most of a pass's CPU, and in a roll it held up the pass that deletes the next
drained pod by seconds. When a run is needed, the list answers the decision read are written to
a snapshot that the module replays, so the run does not list the shard's objects again.
"""

from __future__ import annotations

import datetime as dt
import logging
import time
from dataclasses import dataclass, field
from pathlib import Path

from ansible_collections.multigres.pools.plugins.module_utils.kube import snapshot
from ansible_collections.multigres.pools.plugins.module_utils.reconcile.shard import Decision, Request, decide
from ansible_collections.multigres.pools.plugins.module_utils.spec.policy import SpecPolicy

from .cache import CacheView
from .outcome import Outcome, Result
from .relevance import ShardKey

log = logging.getLogger(__name__)


@dataclass
class Verdict:
    key: ShardKey
    run: bool
    # Why a run is needed ("actions", "invalid", "full check", "decision failed"), or not: "status"
    # (the operator writes it, `status`), "no-op".
    reason: str
    outcome: Outcome | None = None  # the pass's outcome when no run is needed
    status: Decision | None = None  # a status-only decision the operator carries out itself
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
                 now: dt.datetime | None = None, policy: SpecPolicy | None = None,
                 claim_namespaces: tuple[str, ...] = ()) -> Verdict | None:
    """The verdict for one shard from the caches; None when the cache has no such shard."""
    started = time.perf_counter()
    cr = view.cache.shard(key)
    if cr is None:
        return None
    namespace, name = key
    recorder = snapshot.Recorder(view)
    try:
        decision = decide(recorder, Request(namespace=namespace, name=name, policy=policy or SpecPolicy(),
                                                   claim_namespaces=claim_namespaces), cr,
                          now or dt.datetime.now(dt.UTC))
    except Exception as exc:  # the playbook is the authority: let it try, list live, and report
        log.warning("%s/%s: in-process decision failed, handing it to the playbook: %s", namespace, name, exc)
        return Verdict(key, True, "decision failed", seconds=time.perf_counter() - started)
    plan = decision.result.plan
    if full_check:
        return Verdict(key, True, "full check", plan=plan, seconds=time.perf_counter() - started)
    actions = decision.plan is not None and bool(decision.plan.actions) and not decision.invalid
    if actions or (decision.writes and decision.invalid):
        # A refused spec goes to the playbook too: its run reports the refusal (the module's failure).
        path = recorder.write(snapshot_dir / f"{namespace}.{name}.json")
        return Verdict(key, True, "actions" if actions else "invalid", snapshot=path, plan=plan,
                       seconds=time.perf_counter() - started)
    outcome = _outcome(decision.result.errors, decision.invalid, decision.result.requeue_after)
    if decision.writes:
        return Verdict(key, False, "status", outcome=outcome, status=decision, plan=plan,
                       seconds=time.perf_counter() - started)
    return Verdict(key, False, "no-op", outcome=outcome, plan=plan, seconds=time.perf_counter() - started)
