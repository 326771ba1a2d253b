"""The status goes through MultigresShardStatus: what the agent reports in annotations and does not fit
the model is read as unreadable (left out, or BackupHealthy=Unknown), as unreadable JSON always was,
instead of a status the API server would refuse."""

from __future__ import annotations

import json

from ansible_collections.multigres.pools.plugins.module_utils.core import keys
from ansible_collections.multigres.pools.plugins.module_utils.core.manifest import Manifest
from ansible_collections.multigres.pools.plugins.module_utils.spec.model import MultigresShardStatus
from ansible_collections.multigres.pools.plugins.module_utils.status import shard as status

from .plan_factories import NOW, desired, desired_pool, healthy, observed, plan, shard_cr

STAMP = "2026-05-01T12:00:00Z"


def _with(annotations: dict[str, str]) -> Manifest:
    dp = desired_pool()
    obs = observed(*healthy(dp), cr=shard_cr(annotations=annotations))
    written = status.compute(desired(dp), obs, plan(desired(dp), obs, NOW), stamp=STAMP)
    MultigresShardStatus.model_validate(written, strict=True)
    return written


def _backup_healthy(written: Manifest) -> Manifest:
    return next(c for c in written["conditions"] if c["type"] == keys.ShardCondition.BACKUP_HEALTHY)


def test_a_backup_verdict_of_another_shape_is_unreadable() -> None:
    for raw in ("[]", json.dumps({"healthy": True, "reason": 5}), json.dumps({"healthy": False, "message": None})):
        written = _with({keys.ANN_BACKUP_HEALTH: raw})
        cond = _backup_healthy(written)
        assert (cond["status"], cond["reason"]) == ("Unknown", "UnreadableReport"), raw
        assert "lastBackupTime" not in written


def test_backup_times_are_taken_only_as_text() -> None:
    verdict = {"healthy": True, "lastBackupTime": 1767225600, "lastBackupType": "full"}
    written = _with({keys.ANN_BACKUP_HEALTH: json.dumps(verdict)})
    assert _backup_healthy(written)["status"] == "True"
    assert "lastBackupTime" not in written and written["lastBackupType"] == "full"


def test_backup_and_switchover_state_that_do_not_fit_the_model_are_left_out() -> None:
    written = _with({keys.ANN_BACKUP_STATE: json.dumps({"running": {"type": "full"}}),
                     keys.ANN_SWITCHOVER_STATE: json.dumps({"request": "any", "decision": "Maybe"})})
    assert "backup" not in written and "switchover" not in written


def test_a_refusal_keeps_the_previous_fields_that_fit_and_drops_only_the_others() -> None:
    previous = {"phase": "Healthy", "readyReplicas": "3", "cells": ["z1"], "futureField": 1,
                "conditions": [{"type": "Available", "status": "True", "lastTransitionTime": STAMP}, "junk"]}
    written = status.refused(previous, ["spec.pools: required"], 4, "2026-05-01T13:00:00Z")
    assert "readyReplicas" not in written and written["cells"] == ["z1"] and written["futureField"] == 1
    assert written["conditions"][0] == previous["conditions"][0]
    assert [c["type"] for c in written["conditions"]] == ["Available", "Ready", "Reconciling", "Stalled",
                                                          "ConfigurationValid"]
