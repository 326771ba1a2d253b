"""The status the engine writes, pinned byte for byte (json.dumps, sorted keys) over a spread of shards:
converged, empty, scaling, vars mode, the agent's reports (backup health and state, restore, topology),
switchover decisions, stalls and a refused spec over a previous status with unknown fields.

status_golden.json was written by the dict-building status code that preceded the typed model
(MultigresShardStatus); the typed code must write the same bytes. A deliberate change of the status
regenerates it: `UPDATE_STATUS_GOLDEN=1 pytest tests/unit/plan/test_status_golden.py`, and the diff of
the JSON file is the change to review.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest
from ansible_collections.multigres.pools.plugins.module_utils.core import keys
from ansible_collections.multigres.pools.plugins.module_utils.core.manifest import Manifest
from ansible_collections.multigres.pools.plugins.module_utils.status import shard as status

from .plan_factories import NOW, desired, desired_pool, healthy, live_pod, live_pvc, observed, plan, shard_cr

GOLDEN = Path(__file__).with_name("status_golden.json")
STAMP, LATER = "2026-05-01T12:00:00Z", "2026-05-01T12:05:00Z"


def _compute(pods: list[Manifest], pvcs: list[Manifest], cr: Manifest | None, *, stamp: str = STAMP,
             config_errors: list[str] | None = None, replicas: int = 3) -> Manifest:
    dp = desired_pool(replicas=replicas)
    obs = observed(pods, pvcs, cr=cr)
    return status.compute(desired(dp), obs, plan(desired(dp), obs, NOW), stamp=stamp, config_errors=config_errors)


def _healthy(**cr: object) -> Manifest:
    pods, pvcs = healthy(desired_pool())
    return _compute(pods, pvcs, shard_cr(**cr))  # type: ignore[arg-type]


def _converged_then_unchanged() -> Manifest:
    first = _healthy()
    pods, pvcs = healthy(desired_pool())
    return _compute(pods, pvcs, shard_cr(status=first), stamp=LATER)


def _one_not_ready_then_ready() -> Manifest:
    dp = desired_pool()
    pods, pvcs = healthy(dp)
    pods[1] = live_pod(dp, 1, ready=False, role=keys.Role.REPLICA)
    first = _compute(pods, pvcs, shard_cr())
    pods2, pvcs2 = healthy(dp)
    return _compute(pods2, pvcs2, shard_cr(status=first), stamp=LATER)


def _scaling_up() -> Manifest:
    pods, pvcs = healthy(desired_pool(), 2)
    return _compute(pods, pvcs, shard_cr())


def _no_roles() -> Manifest:
    dp = desired_pool()
    return _compute([live_pod(dp, i) for i in range(3)], [live_pvc(dp, i) for i in range(3)], shard_cr())


def _draining_and_terminating() -> Manifest:
    dp = desired_pool()
    pods, pvcs = healthy(dp)
    pods[1] = live_pod(dp, 1, role=keys.Role.REPLICA, drain=keys.DrainState.REQUESTED, reason="scale-down")
    pods[2] = live_pod(dp, 2, role=keys.Role.DRAINED, terminating=True)
    return _compute(pods, pvcs, shard_cr())


def _agent_reports() -> Manifest:
    dp = desired_pool()
    pods, pvcs = healthy(dp)
    health = {"healthy": False, "reason": "BackupStale", "message": "Last full backup 9d ago",
              "lastBackupTime": "2026-04-22T01:00:00Z", "lastBackupType": "full"}
    state = {"schedule": {"full": "2026-04-26T01:00:00Z"},
             "running": {"type": "full", "trigger": "request", "pod": "p-1", "jobId": "j-1",
                         "startedAt": "2026-05-01T11:00:00Z", "someday": {"x": [1, None]}},
             "last": {"type": "differential", "trigger": "schedule", "pod": "p-2", "forcePrimary": True,
                      "jobId": "j-0", "startedAt": "2026-05-01T01:00:01Z", "finishedAt": "2026-05-01T01:00:09Z",
                      "backupId": "20260426-010002F", "sizeBytes": 1024, "error": "boom"},
             "waiting": "full backup waits"}
    topology = {"reachable": False, "reason": "Timeout", "message": "etcd did not answer"}
    pods[0]["metadata"]["annotations"][keys.ANN_RESTORE] = json.dumps(
        {"state": keys.RestoreState.RESTORED, "startedAt": "2026-05-01T10:00:00Z",
         "finishedAt": "2026-05-01T10:10:00Z", "backupId": "b1", "walPosition": "0/3000000"})
    pods[1]["metadata"]["annotations"][keys.ANN_RESTORE] = json.dumps(
        {"state": keys.RestoreState.RESTORED, "startedAt": "2026-05-01T10:01:00Z",
         "finishedAt": "2026-05-01T10:11:00Z", "backupId": "b2", "walPosition": "0/2000000"})
    return _compute(pods, pvcs, shard_cr(annotations={
        keys.ANN_BACKUP_HEALTH: json.dumps(health), keys.ANN_BACKUP_STATE: json.dumps(state),
        keys.ANN_TOPOLOGY_HEALTH: json.dumps(topology)}))


def _restoring_and_unreadable_reports() -> Manifest:
    dp = desired_pool()
    pods, pvcs = healthy(dp)
    pods[2]["metadata"]["annotations"][keys.ANN_RESTORE] = json.dumps(
        {"state": keys.RestoreState.RESTORING, "startedAt": "2026-05-01T11:50:00Z"})
    return _compute(pods, pvcs, shard_cr(annotations={keys.ANN_BACKUP_HEALTH: "{", keys.ANN_BACKUP_STATE: "[",
                                                      keys.ANN_TOPOLOGY_HEALTH: "{}"}))


def _switchover(state: dict[str, object], primary: int = 0) -> Callable[[], Manifest]:
    def build() -> Manifest:
        dp = desired_pool()
        pods, pvcs = healthy(dp, primary=primary)
        decided = dict(state)
        if decided.get("fromUid") == "first-pod":
            decided["fromUid"] = pods[0]["metadata"]["uid"]
        return _compute(pods, pvcs, shard_cr(annotations={keys.ANN_SWITCHOVER_STATE: json.dumps(decided)}))
    return build


_ACCEPTED = {"request": "any", "decision": "Accepted", "message": "moving the primary", "at": "2026-05-01T11:59:00Z",
             "from": "p-0", "fromUid": "first-pod"}


def _refused_over_previous() -> Manifest:
    previous = _healthy() | {"someFutureField": {"kept": [1, 2]}, "podRoles": {"p-0": "PRIMARY"}}
    previous["conditions"].append({"type": "SomethingNew", "status": "True", "reason": "X", "extra": 1})
    return status.refused(previous, ["spec.pools: required", "second"], 4, LATER)


def _refused_twice_without_generation() -> Manifest:
    once = status.refused({}, ["x"], None, STAMP)
    return status.refused(once, ["y"], None, LATER)


SCENARIOS: dict[str, Callable[[], Manifest]] = {
    "converged": _healthy,
    "converged-then-unchanged": _converged_then_unchanged,
    "one-not-ready-then-ready": _one_not_ready_then_ready,
    "empty": lambda: _compute([], [], shard_cr()),
    "vars-mode": lambda: _compute(*healthy(desired_pool()), None),
    "scaling-up": _scaling_up,
    "no-roles": _no_roles,
    "draining-and-terminating": _draining_and_terminating,
    "config-errors": lambda: _compute(*healthy(desired_pool()), shard_cr(), config_errors=["spec.x: bad", "y"]),
    "agent-reports": _agent_reports,
    "restoring-and-unreadable-reports": _restoring_and_unreadable_reports,
    "switchover-in-progress": _switchover(_ACCEPTED),
    "switchover-completed": _switchover(_ACCEPTED | {"fromUid": "gone"}, primary=1),
    "switchover-refused": _switchover({"request": "p-9", "decision": "Refused", "message": "no such pod",
                                       "at": "2026-05-01T11:59:00Z"}),
    "refused-over-previous": _refused_over_previous,
    "refused-twice-without-generation": _refused_twice_without_generation,
}


def _written(name: str) -> str:
    return json.dumps(SCENARIOS[name](), sort_keys=True)


def test_golden_file_covers_every_scenario() -> None:
    if os.environ.get("UPDATE_STATUS_GOLDEN"):
        GOLDEN.write_text(json.dumps({n: json.loads(_written(n)) for n in SCENARIOS}, indent=1, sort_keys=True) + "\n")
    assert set(json.loads(GOLDEN.read_text())) == set(SCENARIOS)


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_status_is_written_byte_for_byte_as_pinned(name: str) -> None:
    assert _written(name) == json.dumps(json.loads(GOLDEN.read_text())[name], sort_keys=True)
