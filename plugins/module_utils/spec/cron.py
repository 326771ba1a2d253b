"""Cron schedules (five fields, UTC) of spec.backup.schedules, read with cronsim.

cronsim is imported inside the functions so this module imports without it (ansible-test's import
sanity check runs module_utils with only the standard library).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta


def problem(expression: str) -> str | None:
    """Why `expression` is not a schedule cronsim accepts, or None."""
    from cronsim import CronSim, CronSimError

    try:
        CronSim(expression, datetime(2000, 1, 1, tzinfo=UTC))
    except CronSimError as exc:
        return f"not a valid cron expression {expression!r}: {exc}"
    return None


def last_due(expression: str, now: datetime) -> datetime:
    """The latest time at or before `now` that `expression` names (UTC)."""
    from cronsim import CronSim

    # cronsim's start is exclusive in both directions; one second later makes `now` itself count.
    return next(CronSim(expression, now.astimezone(UTC) + timedelta(seconds=1), reverse=True))


def next_due(expression: str, now: datetime) -> datetime:
    """The first time after `now` that `expression` names (UTC)."""
    from cronsim import CronSim

    return next(CronSim(expression, now.astimezone(UTC)))
