"""The seeded fault schedule: the same seed gives the same schedule, every kind comes equally often."""

from __future__ import annotations

from collections import Counter

import pytest

from multigres_pools.playground.faults import choose_kinds, plan

KINDS = ("postgres-kill", "freeze", "partition")


def test_one_seed_one_schedule_and_another_seed_another() -> None:
    assert plan(7, KINDS, 9) == plan(7, KINDS, 9)
    assert plan(7, KINDS, 9) != plan(8, KINDS, 9)


def test_every_kind_equally_often_and_kills_hold_nothing() -> None:
    faults = plan(3, KINDS, 9, instant=("postgres-kill",), pause_s=(1.0, 2.0), hold_s=(4.0, 5.0))
    assert Counter(f.kind for f in faults) == dict.fromkeys(KINDS, 3)
    assert all(1.0 <= f.pause_s <= 2.0 for f in faults)
    assert all((f.hold_s == 0.0) == (f.kind == "postgres-kill") for f in faults)
    assert all(4.0 <= f.hold_s <= 5.0 for f in faults if f.kind != "postgres-kill")


def test_a_count_that_is_not_a_multiple_differs_by_one_at_most() -> None:
    for seed in range(20):
        counts = Counter(dict.fromkeys(KINDS, 0))  # a kind never drawn counts 0
        counts.update(f.kind for f in plan(seed, KINDS, 4))
        assert sum(counts.values()) == 4 and max(counts.values()) - min(counts.values()) <= 1


def test_fault_kinds_narrow_the_schedule_and_an_unknown_one_is_named() -> None:
    assert choose_kinds("", KINDS) == KINDS
    assert choose_kinds("freeze, partition", KINDS) == ("freeze", "partition")
    with pytest.raises(ValueError, match="FAULT_KINDS: frezze, slow-disk not among postgres-kill, freeze, partition"):
        choose_kinds("frezze,freeze,slow-disk", KINDS)
