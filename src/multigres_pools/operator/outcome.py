"""What one run of the reconcile playbook means for the queue.

| result      | cause                                              | next run                          |
|-------------|----------------------------------------------------|-----------------------------------|
| converged   | the module succeeded and asked for nothing more    | on the next relevant event/resync |
| progressing | the module succeeded and returned `requeue_after`  | after `requeue_after`             |
| invalid     | the spec is invalid (ConfigurationValid=False)     | only when the spec changes        |
| error       | anything else: API errors, conflicts, runner crash | exponential backoff with jitter   |
| canceled    | the operator is shutting down                      | by the next leader                |
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from ansible_collections.multigres.pools.plugins.module_utils.core import keys
from ansible_collections.multigres.pools.plugins.module_utils.reconcile import task_result
from ansible_collections.multigres.pools.plugins.module_utils.reconcile.task_result import TaskResult
from ansible_collections.multigres.pools.plugins.module_utils.spec import reader


class Result(StrEnum):
    CONVERGED = "converged"
    PROGRESSING = "progressing"
    INVALID = "invalid"
    ERROR = "error"
    CANCELED = "canceled"


@dataclass(frozen=True)
class Outcome:
    result: Result
    message: str = ""
    requeue_after: float | None = None
    changed: bool = False
    # True when the module already wrote ConfigurationValid=False; otherwise the operator does.
    status_written: bool = False


def _validation_message(res: TaskResult) -> tuple[str, bool] | None:
    """(message, status already written) if `res` reports an invalid spec, else None."""
    cond = reader.condition(reader.read_status(res["status"]), keys.ShardCondition.CONFIGURATION_VALID)
    if cond is not None and cond.status == "False":
        return cond.message or res["msg"] or "invalid spec", True
    if res["failed"] and res["errors"]:
        return "; ".join(res["errors"]), False
    return None


def _requeue(res: TaskResult) -> float | None:
    seconds = res["requeue_after"]
    return seconds if seconds > 0 else None


def classify(runner_status: str, module_result: Mapping[str, Any] | None,
             failures: Sequence[str] = ()) -> Outcome:
    """Turn an ansible-runner status and the reconcile module's result into an Outcome."""
    if runner_status == "canceled":
        return Outcome(Result.CANCELED, "canceled at shutdown")
    res = task_result.read(module_result or {})
    invalid = _validation_message(res)
    if invalid is not None:
        return Outcome(Result.INVALID, invalid[0], status_written=invalid[1])
    if runner_status != "successful" or res["failed"] or not module_result:
        detail = res["msg"] or "; ".join(failures)
        if not module_result and not detail:
            detail = f"the playbook ended '{runner_status}' before the reconcile task reported"
        return Outcome(Result.ERROR, str(detail or f"runner status {runner_status}"))
    requeue = _requeue(res)
    return Outcome(Result.PROGRESSING if requeue else Result.CONVERGED, res["msg"],
                   requeue_after=requeue, changed=res["changed"])


def action_summary(module_result: Mapping[str, Any] | None) -> str:
    """The writes of one pass, counted by verb and kind: "apply Pod x3, apply PersistentVolumeClaim x3"."""
    actions = task_result.read(module_result or {})["actions"]
    counts = Counter(f"{a.get('verb', '?')} {a.get('kind', '?')}" for a in actions)
    return ", ".join(f"{what} x{n}" for what, n in counts.items()) or "none"
