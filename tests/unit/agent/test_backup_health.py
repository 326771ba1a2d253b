"""Picking the newest complete backup and judging it."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from types import SimpleNamespace
from typing import Any

from ansible_collections.multigres.pools.plugins.module_utils.core import keys

from multigres_pools.agent import backup_health
from multigres_pools.agent.backup_health import backup_time, evaluate, newest_complete
from multigres_pools.dataplane.base import Backup

NOW = datetime(2026, 3, 10, 12, 0, tzinfo=UTC)


def test_diff_label_time_is_its_own_not_the_base_full() -> None:
    assert backup_time("20260301-010000F_20260309-010000D") == datetime(2026, 3, 9, 1, 0, tzinfo=UTC)
    assert backup_time("garbage") is None


def test_newest_complete_ignores_incomplete_and_order() -> None:
    backups = [Backup("20260308-010000F", True, "full"), Backup("20260308-010000F_20260310-010000D", False, "diff"),
               Backup("20260308-010000F_20260309-010000I", True, "incr"), Backup("20260301-010000F", True, "full")]
    best, when = newest_complete(backups)
    assert best.backup_id == "20260308-010000F_20260309-010000I" and when.day == 9


def test_verdicts() -> None:
    assert evaluate([], NOW, 25 * 3600)["message"] == "No backups found"
    assert evaluate([Backup("20260310-010000F", False, "full")], NOW, 90000)["message"] == "No completed backups found"
    fresh = evaluate([Backup("20260310-010000F", True, "full")], NOW, 25 * 3600)
    assert fresh["healthy"] and fresh["reason"] == "BackupRecent" and fresh["lastBackupTime"] == "2026-03-10T01:00:00Z"
    assert fresh["lastBackupType"] == "full"
    stale = evaluate([Backup("20260308-010000F", True, "full")], NOW, 25 * 3600)
    assert not stale["healthy"] and stale["message"] == "Last backup is 59.0h old (threshold: 25h)"


def _clone(election: dict[str, Any] | None) -> dict[str, Any]:
    annotations = {keys.ANN_CLONE_ELECTION: json.dumps(election)} if election else {}
    return {"apiVersion": keys.API_GROUP_VERSION, "kind": keys.SHARD_KIND,
            "metadata": {"name": "copy", "namespace": "db", "annotations": annotations},
            "spec": {"clusterName": "copy", "globalTopoServer": {"address": "etcd:2379"},
                     "pools": {"default": {"cells": ["zone1"]}}, "backup": {"cloneFrom": {"shard": "orders"}}}}


def test_a_clone_waiting_for_its_first_primary_is_not_checked_and_raises_no_warning() -> None:
    events: list[str] = []
    asked: list[str] = []

    def plane_for(shard: dict[str, Any]) -> Any:
        asked.append("plane")
        return SimpleNamespace(list_poolers=lambda topo: [], leader=lambda poolers: None)

    ctx = SimpleNamespace(clock=lambda: NOW.timestamp(), plane_for=plane_for,
                          kube=SimpleNamespace(event=lambda obj, reason, message, warning=False: events.append(reason)))
    for waiting in (None, {"state": keys.ElectionState.WAITING, "message": "replaying"},
                    {"state": keys.ElectionState.FAILED, "message": "refused", "attempt": 0}):
        assert backup_health.awaits_first_primary(_clone(waiting))
        assert backup_health.check(ctx, _clone(waiting)) is None  # type: ignore[arg-type]
    assert events == [] and asked == []
    # Once elected it is a shard like any other: no primary is a failed check again.
    elected = _clone({"state": keys.ElectionState.ELECTED, "leader": "zone1_p-1"})
    assert not backup_health.awaits_first_primary(elected)
    assert backup_health.check(ctx, elected) is None  # type: ignore[arg-type]
    assert events == ["BackupCheckFailed"] and asked == ["plane"]
    # A shard that is no clone never waits for one.
    plain = _clone(None)
    del plain["spec"]["backup"]["cloneFrom"]
    assert not backup_health.awaits_first_primary(plain)

