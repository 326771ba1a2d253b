import datetime as dt

from multigres_pools.lease import LeaseView, can_take

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
