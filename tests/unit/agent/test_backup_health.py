"""Picking the newest complete backup and judging it."""

from __future__ import annotations

from datetime import UTC, datetime

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
