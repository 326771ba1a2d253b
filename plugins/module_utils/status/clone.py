"""A clone's status (spec.backup.cloneFrom): status.clone and the condition Cloning, from the engine's
record of the copy (keys.ANN_CLONE, plan/clone.py) and the agent's of the first primary
(keys.ANN_CLONE_ELECTION, agent/clone_election.py). Pure."""

from __future__ import annotations

from typing import Any

from ..core import keys
from ..core.conditions import shard_condition
from ..core.manifest import Manifest
from ..state import clone

_RESTORING = "the pods restore the copied backup and archived WAL; then the agent elects this shard's first primary"


def status(clone_from: str | None, cr: Manifest | None) -> dict[str, Any] | None:
    """status.clone as a wire dict, None for a shard that is no clone."""
    if clone_from is None:
        return None
    rec, elected = clone.record(cr), clone.election(cr)
    out: dict[str, Any] = {"source": rec.get("source") or clone_from}
    if rec.get("attempt"):
        out["attempt"] = int(rec["attempt"])
    copy_state = rec.get("state")
    if copy_state == keys.CloneState.COPIED:
        out["copiedAt"] = rec.get("finishedAt")
    if elected.get("state") == keys.ElectionState.ELECTED:
        out |= {"state": "Cloned", "message": f"{elected.get('leader')} is the first primary of this shard's own "
                                              "cohort"}
        out |= {wire: elected[key] for key, wire in (("leader", "leader"), ("term", "term"),
                                                     ("frozenLsn", "frozenLsn"), ("at", "electedAt"))
                if elected.get(key) is not None}
    elif copy_state == keys.CloneState.COPIED:
        out |= {"state": "Restoring", "message": str(elected.get("message") or _RESTORING)}
    elif copy_state == keys.CloneState.FAILED:
        out |= {"state": "Failed", "message": f"{rec.get('reason')}: {rec.get('message')}"}
    else:
        out |= {"state": "Copying", "message": f"copying the repository of {out['source']}"}
    return {k: v for k, v in out.items() if v is not None}


_REASONS = {"Copying": "CopyingRepository", "Failed": "CopyFailed", "Restoring": "RestoringCopy"}


def condition(clone_status: dict[str, Any] | None) -> Manifest | None:
    """Cloning: True until the first primary is elected; absent for a shard that is no clone."""
    if clone_status is None:
        return None
    state = clone_status["state"]
    if state == "Cloned":
        return shard_condition(keys.ShardCondition.CLONING, False, "Cloned", clone_status.get("message", ""))
    return shard_condition(keys.ShardCondition.CLONING, True, _REASONS[state], clone_status.get("message", ""))
