"""The pure backup decision (agent/backup_schedule.py): due times, missed runs, the pod, what waits."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from ansible_collections.multigres.pools.plugins.module_utils.core.keys import BackupType
from ansible_collections.multigres.pools.plugins.module_utils.spec import cron

from multigres_pools.agent.backup_schedule import (
    Inputs,
    Mark,
    PodFacts,
    choose_pod,
    decide,
    read_handled,
    read_mark,
    stale,
)

FULL, DIFF = BackupType.FULL, BackupType.DIFFERENTIAL
NOW = datetime(2026, 11, 24, 1, 0, 30, tzinfo=UTC)  # a Tuesday
SCHEDULES = {FULL: "0 1 * * 0", DIFF: "0 1 * * 1-6"}


def pod(name: str, primary: bool = False, ready: bool = True, replicating: bool = True, draining: bool = False,
        terminating: bool = False) -> PodFacts:
    return PodFacts(name, primary, ready, replicating, draining, terminating)


PODS = (pod("p-0", primary=True), pod("p-1"), pod("p-2"))


def inputs(**kw: object) -> Inputs:
    base: dict[str, object] = {"now": NOW, "schedules": SCHEDULES,
                               "handled": {FULL: NOW - timedelta(days=1), DIFF: NOW - timedelta(days=1)},
                               "request": None, "pods": PODS, "marks": ()}
    base.update(kw)
    return Inputs(**base)  # type: ignore[arg-type]


def test_a_due_differential_starts_on_the_first_qualifying_standby_and_records_its_due_time() -> None:
    d = decide(inputs())
    assert (d.start, d.trigger, d.pod, d.force_primary) == (DIFF, "schedule", "p-1", False)
    assert d.handled == {DIFF: datetime(2026, 11, 24, 1, 0, tzinfo=UTC)}


def test_a_handled_due_time_is_not_repeated_after_a_restart() -> None:
    d = decide(inputs(handled={FULL: NOW - timedelta(days=1), DIFF: datetime(2026, 11, 24, 1, 0, tzinfo=UTC)}))
    assert d.start is None and d.wait == "" and d.handled == {}


def test_missed_runs_collapse_into_one_and_record_only_the_latest() -> None:
    # Down for three days: one differential now, recorded at the latest due time.
    d = decide(inputs(handled={FULL: NOW - timedelta(days=1), DIFF: NOW - timedelta(days=3)}))
    assert d.start is DIFF and d.handled[DIFF] == datetime(2026, 11, 24, 1, 0, tzinfo=UTC)
    again = decide(inputs(handled={FULL: NOW - timedelta(days=1), DIFF: d.handled[DIFF]}))
    assert again.start is None


def test_a_schedule_seen_first_is_only_recorded() -> None:
    d = decide(inputs(handled={}))
    assert d.start is None and d.handled == {FULL: NOW, DIFF: NOW}


def test_a_due_full_goes_first_and_settles_a_differential_due_at_the_same_time() -> None:
    every = {FULL: "* * * * *", DIFF: "* * * * *"}
    d = decide(inputs(schedules=every))
    assert d.start is FULL and set(d.handled) == {FULL, DIFF}


def test_a_request_goes_first_and_settles_no_schedule() -> None:
    d = decide(inputs(request=BackupType.INCREMENTAL))
    assert (d.start, d.trigger) == (BackupType.INCREMENTAL, "request") and d.handled == {}


@pytest.mark.parametrize(("kw", "why"), [
    ({"marks": (Mark("p-2", "j", "other", NOW),)}, "a backup is running on p-2"),
    ({"pods": (pod("p-0", primary=True), pod("p-1"), pod("p-2", draining=True))}, "pod p-2 is draining"),
    ({"rolling_update": True}, "a rolling update is in progress"),
    ({"pods": (pod("p-0", primary=True, ready=False),)}, "no ready pod to take it"),
])
def test_a_due_backup_waits_and_says_why_without_recording_its_due_time(kw: dict[str, object], why: str) -> None:
    d = decide(inputs(**kw))
    assert d.start is None and d.wait == f"differential backup waits: {why}" and d.handled == {}


def test_the_standby_choice_skips_draining_terminating_unready_and_not_replicating_standbys() -> None:
    pods = [pod("p-0", primary=True), pod("p-1", terminating=True), pod("p-2", ready=False),
            pod("p-3", replicating=False), pod("p-4")]
    assert choose_pod(pods) == ("p-4", False)


def test_the_primary_takes_it_with_force_primary_only_when_no_standby_qualifies() -> None:
    assert choose_pod([pod("p-0", primary=True), pod("p-1", replicating=False)]) == ("p-0", True)
    d = decide(inputs(pods=(pod("p-0", primary=True),)))
    assert (d.pod, d.force_primary) == ("p-0", True)
    assert choose_pod([pod("p-0", primary=True, terminating=True)]) is None


def test_a_mark_is_stale_when_its_process_no_longer_runs_it_or_another_process_left_it_past_the_expiry() -> None:
    mine = Mark("p-1", "job", "me", NOW)
    assert not stale(mine, "me", {"job"}, NOW)
    assert stale(mine, "me", set(), NOW)
    theirs = Mark("p-1", "job", "them", NOW)
    assert not stale(theirs, "me", set(), NOW + timedelta(minutes=30))
    assert stale(theirs, "me", set(), NOW + timedelta(minutes=36))
    assert stale(Mark("p-1", "", "", None), "me", set(), NOW)


def test_marks_and_handled_times_are_read_back_from_their_json() -> None:
    assert read_mark("p-1", '{"jobId": "j", "holder": "h", "startedAt": "2026-11-24T01:00:00Z"}') == \
        Mark("p-1", "j", "h", datetime(2026, 11, 24, 1, 0, tzinfo=UTC))
    assert read_mark("p-1", "not json") == Mark("p-1", "", "", None)
    assert read_mark("p-1", None) is None
    assert read_handled({"schedule": {"full": "2026-11-22T01:00:00Z", "differential": "garbage"}}) == \
        {FULL: datetime(2026, 11, 22, 1, 0, tzinfo=UTC)}


def test_cron_due_times_are_utc_and_inclusive_of_now() -> None:
    at = datetime(2026, 11, 24, 4, 1, 0, tzinfo=UTC)
    assert cron.last_due("* * * * *", at) == at
    assert cron.next_due("* * * * *", at) == at + timedelta(minutes=1)
    assert cron.problem("61 * * * *") is not None and cron.problem("*/5 1 * * 1-5") is None
