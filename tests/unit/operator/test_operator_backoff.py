import pytest

from multigres_pools.operator.backoff import Backoff


def test_nominal_doubles_and_caps() -> None:
    b = Backoff(base=1, cap=60)
    assert [b.nominal(n) for n in range(0, 9)] == [0, 1, 2, 4, 8, 16, 32, 60, 60]
    assert b.nominal(10_000) == 60  # no overflow on very long failure streaks


@pytest.mark.parametrize("r", [0.0, 0.25, 0.999])
def test_jitter_stays_between_half_and_full_delay(r: float) -> None:
    b = Backoff(base=2, cap=100, rand=lambda: r)
    for failures in range(1, 10):
        nominal = b.nominal(failures)
        delay = b.jittered(failures)
        assert nominal / 2 <= delay <= nominal
        assert delay == pytest.approx(nominal / 2 + nominal / 2 * r)


def test_failures_are_counted_per_key_and_reset_on_success() -> None:
    b = Backoff(base=1, cap=100, rand=lambda: 1.0)
    assert b.failure("a") == 1
    assert b.failure("a") == 2
    assert b.failure("b") == 1
    assert b.failure("a") == 4
    b.success("a")
    assert b.failures("a") == 0
    assert b.failure("a") == 1
    assert b.failures("b") == 1


def test_jitter_spreads_retries_of_shards_failing_together() -> None:
    import random

    b = Backoff(base=8, cap=100, rand=random.Random(7).random)
    delays = {round(b.failure(f"shard-{i}"), 3) for i in range(20)}
    assert len(delays) == 20
    assert all(4 <= d <= 8 for d in delays)
