"""The run time's readers of a MultigresShard (spec/reader.py): typed, and lenient with partial or refused
objects: nothing an API server could hand the agent makes them raise."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from ansible_collections.multigres.pools.plugins.module_utils.spec import reader
from ansible_collections.multigres.pools.plugins.module_utils.spec.model import (
    BackupRun,
    MultigresShardStatus,
    status_to_dict,
)

GOLDEN = Path(__file__).parent.parent / "plan" / "status_golden.json"


def _shard(spec: object = None, status: object = None) -> dict[str, object]:
    return {"apiVersion": "pools.multigres.com/v1alpha1", "kind": "MultigresShard", "metadata": {"name": "s"},
            "spec": spec, "status": status}


@pytest.mark.parametrize("obj", [None, {}, _shard(), _shard(spec=[], status="x"),
                                 _shard(spec={"pools": [], "backup": "x", "multigres": 3}),
                                 _shard(spec={"pools": {"main": None, "other": {"cells": None}}})])
def test_a_partial_or_odd_object_reads_as_defaults(obj: object) -> None:
    shard = reader.ShardReader.of(obj)  # type: ignore[arg-type]
    assert shard.cells() == () and shard.pods_listed("fenced") == set()
    assert shard.multigres_version is None and shard.backup_health_threshold is None
    schedules = shard.backup_schedules()
    assert schedules is not None and schedules.full == "0 1 * * 0"
    assert shard.status == MultigresShardStatus() and shard.condition("Ready") is None


def test_pools_cells_and_listed_pods() -> None:
    shard = reader.ShardReader.of(_shard(spec={"pools": {
        "main": {"cells": ["z2", "z1"], "replicasPerCell": 2, "fenced": ["p-1"], "decommission": ["p-0"]},
        "bulk": {"cells": ["z1", "z3"], "replicasPerCell": "2", "fenced": ["q-0"]}}}))
    assert [(p.name, p.cells, p.replicas_per_cell) for p in shard.pools] == [
        ("main", ("z2", "z1"), 2), ("bulk", ("z1", "z3"), None)]
    assert shard.cells() == ("z1", "z2", "z3")
    assert shard.pods_listed("fenced") == {"p-1", "q-0"} and shard.pods_listed("decommission") == {"p-0"}


def test_backup_settings_and_version_as_written() -> None:
    shard = reader.ShardReader.of(_shard(spec={"multigres": {"version": "v0.1.0"}, "backup": {
        "healthThreshold": "2h", "schedules": {"full": "0 2 * * *"}}}))
    assert shard.multigres_version == "v0.1.0" and shard.backup_health_threshold == "2h"
    schedules = shard.backup_schedules()
    assert schedules is not None and (schedules.full, schedules.differential) == ("0 2 * * *", "0 1 * * 1-6")
    refused = reader.ShardReader.of(_shard(spec={"backup": {"schedules": {"full": "every day"}}}))
    assert refused.backup_schedules() is None  # the engine refuses it; the agent runs no schedule


def test_every_pinned_status_reads_back_to_the_same_wire_dict() -> None:
    for name, written in json.loads(GOLDEN.read_text()).items():
        assert status_to_dict(reader.read_status(written)) == written, name


def test_a_field_or_condition_that_does_not_fit_hides_only_itself() -> None:
    raw = {"phase": "Sideways", "readyReplicas": "3", "message": "m", "unknownField": {"kept": True},
           "conditions": [{"type": "Ready", "status": "True"}, {"type": "Stalled", "status": "maybe"},
                          {"status": "False"}, "junk", {"type": "Available", "status": "False", "reason": "R"}],
           "switchover": {"request": "any"}}
    status = reader.read_status(raw)
    assert status_to_dict(status) == {
        "message": "m", "unknownField": {"kept": True},
        "conditions": [{"type": "Ready", "status": "True"}, {"type": "Available", "status": "False", "reason": "R"}]}
    assert reader.ShardReader.of(_shard(status=raw)).condition("Available") is not None
    assert reader.read_status({"conditions": "all good"}) == MultigresShardStatus()
    assert reader.read_status(["not", "a", "status"]) == MultigresShardStatus()


def test_parse_is_strict_and_returns_none_for_what_does_not_fit() -> None:
    run = {"type": "full", "trigger": "request", "pod": "p", "jobId": "j", "startedAt": "t"}
    assert reader.parse(BackupRun, run) is not None
    assert reader.parse(BackupRun, run | {"sizeBytes": "1024"}) is None  # not read as 1024
    assert reader.parse(BackupRun, None) is None
