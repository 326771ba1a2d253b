"""Maintenance windows: disruptive drains start only inside one; creation and scale-up never wait."""

from __future__ import annotations

import dataclasses
import datetime as dt

import pytest
from ansible_collections.multigres.pools.plugins.module_utils.core import keys
from ansible_collections.multigres.pools.plugins.module_utils.plan.context import MAX_WINDOW_REQUEUE
from ansible_collections.multigres.pools.plugins.module_utils.spec import maintenance, model
from ansible_collections.multigres.pools.plugins.module_utils.status import shard as status

from .plan_factories import NOW, desired, desired_pool, drains, healthy, observed, plan, shard_cr, writes

# NOW is Friday 2026-05-01 12:00 UTC.
SAT_2AM = maintenance.window(["Sat"], "02:00", dt.timedelta(hours=2))
FRI_NOON = maintenance.window(["Fri"], "11:30", dt.timedelta(hours=1))
LATE_THU = maintenance.window(["Thu"], "23:00", dt.timedelta(hours=14))  # Thu 23:00 -> Fri 13:00




@pytest.mark.parametrize(("windows", "opens"), [
    ((), None),
    ((FRI_NOON,), None),
    ((LATE_THU,), None),  # opened yesterday, still open
    ((SAT_2AM,), dt.datetime(2026, 5, 2, 2, 0, tzinfo=dt.UTC)),
    ((maintenance.window(["Fri"], "12:00", dt.timedelta(minutes=1)),), None),  # the start is inside
    ((maintenance.window(["Fri"], "11:00", dt.timedelta(hours=1)),),  # the end is outside: next week
     dt.datetime(2026, 5, 8, 11, 0, tzinfo=dt.UTC)),
    ((SAT_2AM, maintenance.window(["Mon", "Fri"], "18:15", dt.timedelta(hours=1))),
     dt.datetime(2026, 5, 1, 18, 15, tzinfo=dt.UTC)),
])
def test_next_opening(windows, opens):  # type: ignore[no-untyped-def]
    assert maintenance.next_opening(windows, NOW) == opens


def _with_windows(dp, *windows):  # type: ignore[no-untyped-def]
    return dataclasses.replace(desired(dp), windows=tuple(windows))


def test_scale_down_waits_for_the_window_and_requeues_for_its_opening():
    dp = desired_pool(replicas=2)
    pods, pvcs = healthy(dp, 3)
    result = plan(_with_windows(dp, SAT_2AM), observed(pods, pvcs, cr=shard_cr()), NOW)
    assert drains(result) == {}
    assert result.deferred == ["scale-down of main/z1 to 2 waits for the maintenance window opening at "
                               "2026-05-02T02:00:00Z"]
    assert result.requeue_after == MAX_WINDOW_REQUEUE  # opens in 14 h: looked at hourly until then
    st = status.compute(desired(dp), observed(pods, pvcs, cr=shard_cr()), result, stamp="2026-05-01T12:00:00Z")
    cond = {c["type"]: c for c in st["conditions"]}["WaitingForMaintenanceWindow"]
    assert cond["status"] == "True" and "2026-05-02T02:00:00Z" in cond["message"]
    assert st["message"] == result.deferred[0]
    # Inside the window the same drain starts.
    inside = plan(_with_windows(dp, FRI_NOON), observed(pods, pvcs, cr=shard_cr()), NOW)
    assert list(drains(inside).values()) == ["scale-down"] and inside.deferred == []


def test_creation_and_scale_up_never_wait():
    dp = desired_pool(replicas=3)
    pods, pvcs = healthy(dp, 1)
    result = plan(_with_windows(dp, SAT_2AM), observed(pods, pvcs, cr=shard_cr()), NOW)
    assert len(writes(result, "apply", "Pod")) == 2 and result.deferred == []


def test_rolling_update_waits_for_the_window():
    dp = desired_pool(replicas=3, spec_hash="new")
    pods, pvcs = healthy(dp)
    for pod in pods:
        pod["metadata"]["annotations"][keys.ANN_SPEC_HASH] = "old"
    result = plan(_with_windows(dp, SAT_2AM), observed(pods, pvcs), NOW)
    assert drains(result) == {} and result.rolling.in_progress
    assert result.deferred and "rolling update (0/3 pods updated" in result.deferred[0]
    assert result.requeue_after == MAX_WINDOW_REQUEUE  # opens in 14 h: looked at hourly until then
    assert drains(plan(_with_windows(dp, FRI_NOON), observed(pods, pvcs), NOW))


def test_external_deletion_is_drained_outside_the_window():
    dp = desired_pool(replicas=3)
    pods, pvcs = healthy(dp)
    pods[2]["metadata"]["deletionTimestamp"] = "2026-05-01T11:59:00Z"
    result = plan(_with_windows(dp, SAT_2AM), observed(pods, pvcs), NOW)
    assert list(drains(result).values()) == ["external-deletion"]


def test_deletion_of_the_shard_ignores_windows():
    dp = desired_pool()
    pods, pvcs = healthy(dp)
    result = plan(_with_windows(dp, SAT_2AM), observed(pods, pvcs, cr=shard_cr(deleting=True)), NOW)
    assert len(writes(result, "delete", "Pod")) == 3


BASE = {"clusterName": "demo", "globalTopoServer": {"address": "a:1", "rootPath": "/x"},
        "pools": {"main": {"cells": ["z1"]}}}


@pytest.mark.parametrize(("window", "error"), [
    ({"days": ["Mon"], "start": "24:00", "duration": "1h"}, "spec.maintenanceWindows[0].start: String should match"),
    ({"days": ["Mon"], "start": "02:00", "duration": "25h"},
     "spec.maintenanceWindows[0].duration: duration must be greater than zero and at most 24h"),
    ({"days": ["Mon"], "start": "02:00", "duration": "0m"}, "spec.maintenanceWindows[0].duration: duration must"),
    ({"days": ["Mon"], "start": "02:00", "duration": "2d"}, "spec.maintenanceWindows[0].duration: String should"),
    ({"days": ["monday"], "start": "02:00", "duration": "1h"}, "spec.maintenanceWindows[0].days[0]: Input should"),
    ({"days": ["Mon", "Mon"], "start": "02:00", "duration": "1h"}, "duplicate entries: Mon"),
    ({"days": [], "start": "02:00", "duration": "1h"}, "spec.maintenanceWindows[0].days: List should have at least"),
    ({"start": "02:00", "duration": "1h"}, "spec.maintenanceWindows[0].days: Field required"),
])
def test_window_validation_names_the_field(window, error):  # type: ignore[no-untyped-def]
    with pytest.raises(model.SpecError) as exc:
        model.load_spec({**BASE, "maintenanceWindows": [window]})
    assert any(e.startswith(error) or error in e for e in exc.value.errors), exc.value.errors


def test_render_carries_the_windows_into_desired():
    from ansible_collections.multigres.pools.plugins.module_utils.render import shard as render

    spec = model.load_spec({**BASE, "maintenanceWindows": [{"days": ["Sat", "Sun"], "start": "02:30",
                                                            "duration": "1h30m"}]})
    assert render.desired_state(spec, "db").windows == (
        maintenance.window(["Sat", "Sun"], "02:30", dt.timedelta(minutes=90)),)


SOON = maintenance.window(["Fri"], "12:10", dt.timedelta(hours=1))  # opens 10 minutes after NOW


def test_waiting_requeues_at_the_opening_not_every_few_seconds():
    dp = desired_pool(replicas=2)
    pods, pvcs = healthy(dp, 3)
    result = plan(_with_windows(dp, SOON), observed(pods, pvcs, cr=shard_cr()), NOW)
    assert result.deferred and result.requeue_after == 600


def test_a_rolling_update_behind_a_deferred_scale_down_sleeps_until_the_window_too():
    """The roll waits for the pool, which waits for the window: no pass every 2 s until it opens."""
    dp = desired_pool(replicas=2, spec_hash="new")
    pods, pvcs = healthy(dp, 3)
    for pod in pods:
        pod["metadata"]["annotations"][keys.ANN_SPEC_HASH] = "old"
    result = plan(_with_windows(dp, SOON), observed(pods, pvcs, cr=shard_cr()), NOW)
    assert drains(result) == {} and result.rolling.in_progress
    assert any("waits for pools to settle" in w for w in result.waiting)
    assert result.requeue_after == 600
    inside = plan(_with_windows(dp, FRI_NOON), observed(pods, pvcs, cr=shard_cr()), NOW)
    assert list(drains(inside).values()) == ["scale-down"]
