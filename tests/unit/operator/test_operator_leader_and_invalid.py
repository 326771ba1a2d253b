import datetime as dt

from multigres_pools.lease import LeaseView, can_take
from multigres_pools.operator.invalid import invalid_conditions, with_condition

NOW = dt.datetime(2026, 1, 1, 12, 0, 0, tzinfo=dt.UTC)


def test_lease_free_or_ours_can_be_taken() -> None:
    assert can_take(None, "me", NOW)
    assert can_take(LeaseView(None, None, None), "me", NOW)
    assert can_take(LeaseView("me", NOW, 15), "me", NOW)


def test_lease_of_another_holder_only_after_expiry() -> None:
    fresh = LeaseView("other", NOW - dt.timedelta(seconds=10), 15)
    assert not can_take(fresh, "me", NOW)
    stale = LeaseView("other", NOW - dt.timedelta(seconds=16), 15)
    assert can_take(stale, "me", NOW)


def test_invalid_condition_is_added_then_unchanged() -> None:
    cond, stalled = invalid_conditions("spec.pools: required", 3)
    assert stalled["type"] == "Stalled" and stalled["status"] == "True"
    conds = with_condition([{"type": "Ready", "status": "False"}], cond, "t1")
    assert conds is not None
    assert conds[-1] == {**cond, "lastTransitionTime": "t1"} and conds[0]["type"] == "Ready"
    assert with_condition(conds, cond, "t2") is None  # no write when nothing changed


def test_transition_time_moves_only_when_status_flips() -> None:
    old = [{"type": "ConfigurationValid", "status": "False", "reason": "Invalid", "message": "a",
            "lastTransitionTime": "t0"}]
    updated = with_condition(old, invalid_conditions("b", 4)[0], "t1")
    assert updated is not None and updated[0]["lastTransitionTime"] == "t0" and updated[0]["message"] == "b"
    flipped = with_condition([{**old[0], "status": "True"}], invalid_conditions("b", 4)[0], "t1")
    assert flipped is not None and flipped[0]["lastTransitionTime"] == "t1"
