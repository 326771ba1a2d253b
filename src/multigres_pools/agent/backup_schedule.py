"""Which base backup to start now, on which pod, or why it waits: pure, so every rule is unit-tested.

The rules (docs/operations.md, "Backups"):
* a schedule's due time is handled once: the latest due time at or before now is recorded when its
  backup starts, so an agent restart or a new leader neither repeats it nor runs every missed one
  (runs missed while no agent ran collapse into one); a schedule seen for the first time is only
  recorded (its first backup is the next due time, not an immediate catch-up);
* a request (annotation) goes first, then a due full (which also settles a due differential), then
  a due differential;
* nothing starts while a backup runs on the shard, any pod of the shard is draining or the engine
  is in a rolling update;
* a ready standby whose replication runs, that is not draining and not terminating, takes it; the
  primary (force_primary) only when no standby qualifies.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from ansible_collections.multigres.pools.plugins.module_utils.core.keys import BackupType
from ansible_collections.multigres.pools.plugins.module_utils.spec import cron
from ansible_collections.multigres.pools.plugins.module_utils.state import facts

# Multigres v0.1.0 ends a Backup after 30 minutes (backup.BackupTimeout); a mark left by another
# agent process is kept that long, plus a margin, before it counts as abandoned.
MARK_EXPIRY = timedelta(minutes=35)
SCHEDULED = (BackupType.FULL, BackupType.DIFFERENTIAL)


@dataclass(frozen=True)
class PodFacts:
    name: str
    primary: bool
    ready: bool
    replicating: bool  # a standby whose WAL receiver runs (meaningless for the primary)
    draining: bool  # carries a drain state
    terminating: bool


@dataclass(frozen=True)
class Mark:
    """The backup mark on a pod (keys.ANN_BACKUP_RUNNING)."""

    pod: str
    job_id: str
    holder: str
    started_at: datetime | None


@dataclass(frozen=True)
class Inputs:
    now: datetime
    schedules: Mapping[BackupType, str]  # full / differential -> cron
    handled: Mapping[BackupType, datetime]  # the latest due time already handled, per schedule
    request: BackupType | None
    pods: Sequence[PodFacts]
    marks: Sequence[Mark]  # live marks only (see stale)
    rolling_update: bool = False


@dataclass(frozen=True)
class Decision:
    start: BackupType | None = None
    trigger: str = ""  # "schedule" or "request"
    pod: str = ""
    force_primary: bool = False
    wait: str = ""  # why a due or requested backup does not start
    handled: dict[BackupType, datetime] = field(default_factory=dict)  # to record (with the start, or alone)


def read_mark(pod: str, raw: str | None) -> Mark | None:
    """The mark's JSON; an unreadable one counts as abandoned by another process (started_at None)."""
    if not raw:
        return None
    try:
        data = json.loads(raw)
    except ValueError:
        data = None
    if not isinstance(data, dict):
        return Mark(pod, "", "", None)
    return Mark(pod, str(data.get("jobId", "")), str(data.get("holder", "")),
                facts.parse_time(str(data.get("startedAt", ""))))


def read_handled(state: Mapping[str, object]) -> dict[BackupType, datetime]:
    """The schedule times already handled, from the agent's state annotation (unreadable ones dropped)."""
    schedule = state.get("schedule")
    handled: dict[BackupType, datetime] = {}
    for kind in SCHEDULED:
        when = facts.parse_time(str(schedule.get(kind.value, ""))) if isinstance(schedule, dict) else None
        if when is not None:
            handled[kind] = when
    return handled


def stale(mark: Mark, me: str, running_here: set[str], now: datetime) -> bool:
    """A mark nobody will remove: ours without a running job (we crashed or lost leadership between
    the RPC's end and the removal), or another process's older than the Backup RPC can last."""
    if mark.job_id in running_here:
        return False
    if mark.holder == me:
        return True
    return mark.started_at is None or now - mark.started_at > MARK_EXPIRY


def _due(inputs: Inputs) -> tuple[list[BackupType], dict[BackupType, datetime]]:
    """Schedules due now, and the due times to record (first sightings and those due)."""
    due: list[BackupType] = []
    record: dict[BackupType, datetime] = {}
    for kind in SCHEDULED:
        expression = inputs.schedules.get(kind)
        if not expression:
            continue
        latest = cron.last_due(expression, inputs.now)
        seen = inputs.handled.get(kind)
        if seen is None:
            record[kind] = inputs.now  # first sighting: start counting from now
        elif latest > seen:
            due.append(kind)
            record[kind] = latest
    return due, record


def _why_not_now(inputs: Inputs) -> str:
    if inputs.marks:
        return f"a backup is running on {inputs.marks[0].pod}"
    draining = sorted(p.name for p in inputs.pods if p.draining)
    if draining:
        return f"pod {draining[0]} is draining"
    if inputs.rolling_update:
        return "a rolling update is in progress"
    return ""


def choose_pod(pods: Sequence[PodFacts]) -> tuple[str, bool] | None:
    """(pod, force_primary): a qualifying standby, else the ready primary, else None."""
    usable = [p for p in pods if p.ready and not p.draining and not p.terminating]
    standbys = sorted(p.name for p in usable if not p.primary and p.replicating)
    if standbys:
        return standbys[0], False
    primary = next((p.name for p in usable if p.primary), None)
    return (primary, True) if primary else None


def decide(inputs: Inputs) -> Decision:
    due, record = _due(inputs)
    if inputs.request is not None:
        kind, trigger = inputs.request, "request"
    elif due:
        kind, trigger = due[0], "schedule"  # full first: SCHEDULED's order
    else:
        return Decision(handled=record)
    first_sightings = {k: t for k, t in record.items() if k not in inputs.handled}
    blocked = _why_not_now(inputs)
    if blocked:
        return Decision(wait=f"{kind} backup waits: {blocked}", handled=first_sightings)
    pick = choose_pod(inputs.pods)
    if pick is None:
        return Decision(wait=f"{kind} backup waits: no ready pod to take it", handled=first_sightings)
    if trigger == "request":
        record = first_sightings  # a request settles no schedule
    # A scheduled full also settles a differential due at the same time (both are in `record`).
    return Decision(start=kind, trigger=trigger, pod=pick[0], force_primary=pick[1], handled=record)
