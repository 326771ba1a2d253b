"""The election's pure decisions (client-go semantics), its timing checks and the write fence.

Times are plain numbers on a clock the test passes in: nothing here reads a real clock."""

from __future__ import annotations

import subprocess
import sys

import pytest
from ansible_collections.multigres.pools.plugins.module_utils.core import keys
from ansible_collections.multigres.pools.plugins.module_utils.kube import write_fence

from multigres_pools.lease import ElectionTiming, LeaseRecord, Observation, holds, may_take, observe

OTHER = LeaseRecord("other", 15, "2026-01-01T00:00:00.000000Z", "2026-01-01T00:00:00.000000Z", 0)


def renewed(record: LeaseRecord, stamp: str) -> LeaseRecord:
    return LeaseRecord(record.holder, record.duration, record.acquire_time, stamp, record.transitions)


def test_free_or_own_lease_is_taken_at_once() -> None:
    assert may_take(observe(None, None, 100.0), "me", 100.0, 15)
    assert may_take(observe(None, LeaseRecord(None, 1, None, None, 3), 100.0), "me", 100.0, 15)
    assert may_take(observe(None, LeaseRecord("me", 15, None, None, 0), 100.0), "me", 100.0, 15)


def test_expiry_counts_from_when_the_candidate_saw_the_record_change() -> None:
    # The record's renewTime is far in the past by any wall clock: irrelevant, it was just seen.
    seen = observe(None, OTHER, 1000.0)
    assert not may_take(seen, "me", 1014.9, 15)
    # An unchanged record keeps its first sighting; the holder expires lease_duration after it.
    again = observe(seen, OTHER, 1010.0)
    assert again.seen_at == 1000.0
    assert may_take(again, "me", 1015.0, 15)


def test_a_renewal_restarts_the_candidates_wait() -> None:
    seen = observe(None, OTHER, 1000.0)
    later = observe(seen, renewed(OTHER, "2026-01-01T00:00:02.000000Z"), 1012.0)
    assert later.seen_at == 1012.0
    assert not may_take(later, "me", 1020.0, 15)
    assert may_take(later, "me", 1027.0, 15)


def test_a_record_without_duration_uses_the_candidates_own() -> None:
    odd = LeaseRecord("other", None, None, None, 0)
    seen = Observation(odd, 50.0)
    assert not may_take(seen, "me", 60.0, 15)
    assert may_take(seen, "me", 65.0, 15)


def test_the_holder_acts_only_within_the_renew_deadline_of_its_last_renewal_start() -> None:
    assert not holds(None, 0.0, 10)
    assert holds(100.0, 109.9, 10)
    assert not holds(100.0, 110.0, 10)


def test_the_holder_stops_before_any_candidate_may_start() -> None:
    """The holder renews at start S; a candidate sees the change at C >= S. The holder stops at
    S + renew_deadline, the candidate may start at C + lease_duration: always later."""
    timing = ElectionTiming()
    for start, seen_at in ((0.0, 0.0), (5.0, 5.001), (7.0, 9.5)):
        stop = start + timing.renew_deadline
        assert not holds(start, stop, timing.renew_deadline)
        assert not may_take(Observation(OTHER, seen_at), "me", stop, timing.lease_duration)


@pytest.mark.parametrize(("timing", "flag"), [
    ((10, 10, 2), "--lease-duration"),
    ((15, 2, 2), "--renew-deadline"),
    ((15, 10, 0), "--retry-period"),
])
def test_bad_timing_names_the_flag(timing: tuple[int, float, float], flag: str) -> None:
    with pytest.raises(ValueError, match=flag):
        ElectionTiming(*timing)


def test_every_call_fits_the_renew_deadline() -> None:
    for timing in (ElectionTiming(), ElectionTiming(4, 3, 1), ElectionTiming(60, 40, 10)):
        assert 2 * timing.call_timeout <= timing.renew_deadline


@pytest.mark.parametrize("program", ["multigres_pools.operator", "multigres_pools.agent"])
def test_bad_timing_is_a_usage_error(program: str) -> None:
    proc = subprocess.run([sys.executable, "-m", program, "--lease-duration", "5", "--renew-deadline", "8"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert "--lease-duration (5s) must be longer than --renew-deadline (8.0s)" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_write_fence(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    fence = tmp_path / "fence"
    monkeypatch.delenv(keys.ENV_WRITE_FENCE, raising=False)
    assert write_fence.refusal(now=5.0) is None  # no fence configured: a plain client
    monkeypatch.setenv(keys.ENV_WRITE_FENCE, str(fence))
    assert "unreadable" in (write_fence.refusal(now=5.0) or "")  # fails closed
    write_fence.publish(fence, 10.0)
    assert write_fence.refusal(now=9.9) is None
    assert "in doubt" in (write_fence.refusal(now=10.0) or "")
    write_fence.publish(fence, 0)
    assert write_fence.refusal(now=1.0) is not None
