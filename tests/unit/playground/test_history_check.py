"""The fault-run checker on hand-made histories: ones that hold, and ones each claim must reject."""

from __future__ import annotations

import pytest

from multigres_pools.playground.history import Deletion, History, RoleSample, SyncSample, Term
from multigres_pools.playground.history_check import NO_FAULT, check, standby_names

OLD, NEW = Term(1, "pod-a@t0"), Term(2, "pod-b@t5")


def writes(history: History, ident: int, sent: float, done: float, result: str = "ok",
           term: Term | None = OLD) -> None:
    history.op("invoke", ident, at=sent)
    history.op(result, ident, term=term if result == "ok" else None, at=done)  # type: ignore[arg-type]


def steady(history: History, first: int, start: float, stop: float, term: Term = OLD) -> list[int]:
    """One acknowledged write per second from `start` to `stop`; returns their ids."""
    idents = list(range(first, first + int(stop - start)))
    for n, ident in enumerate(idents):
        writes(history, ident, start + n, start + n + 0.1, term=term)
    return idents


def test_a_clean_failover_holds_and_measures_the_outage() -> None:
    history = History()
    acked = steady(history, 1, 0, 10)  # acks at 0.1 .. 9.1
    history.fault("postgres-kill-primary", "start", "pod-a", at=9.5)
    writes(history, 100, 9.6, 12.0, "info")  # the COMMIT in flight when the primary died
    writes(history, 101, 12.5, 12.6, "fail")  # refused before COMMIT: not written
    history.fault("postgres-kill-primary", "end", "pod-a", at=10.0)
    acked += steady(history, 200, 15, 20, term=NEW)  # first ack after the fault at 15.1
    history.roles += [RoleSample(9.0, ("pod-a",), 3), RoleSample(13.0, (), 2), RoleSample(16.0, ("pod-b",), 3)]

    verdict = check(history, present=set(acked) | {100})
    assert verdict.problems() == []
    assert verdict.acknowledged == len(acked) and verdict.indeterminate == [100]
    assert verdict.indeterminate_present == [100]  # written after all: reported, not a problem
    [fault] = verdict.faults
    assert fault.survived and fault.unavailable_s == pytest.approx(15.1 - 9.1, abs=0.05)
    row = verdict.rows["postgres-kill-primary"]
    assert (row.injected, row.survived, row.acknowledged, row.lost, row.indeterminate) == (1, 1, 5, 0, 1)
    assert verdict.rows[NO_FAULT].acknowledged == 10
    assert "| postgres-kill-primary | 1 | 1 | 5 | 0 | 1 | 6.0 / 6.0 |" in verdict.table()


def test_a_missing_acknowledged_write_is_lost_but_a_missing_indeterminate_one_is_not() -> None:
    history = History()
    acked = steady(history, 1, 0, 5)
    writes(history, 50, 5.0, 8.0, "info")
    history.op("invoke", 51, at=8.5)  # never answered: the run ended
    verdict = check(history, present=set(acked) - {3})
    assert verdict.lost == [3] and verdict.indeterminate == [50, 51] and verdict.indeterminate_present == []
    assert "1 acknowledged writes lost: [3]" in verdict.problems()


def test_a_failed_write_that_is_present_is_reported() -> None:
    history = History()
    writes(history, 1, 0, 1, "fail")
    assert check(history, present={1}).failed_but_present == [1]


def test_two_writable_servers_in_one_sample_is_a_split_brain() -> None:
    history = History()
    history.roles += [RoleSample(1.0, ("pod-a",), 3), RoleSample(1.2, ("pod-a", "pod-b"), 3)]
    verdict = check(history, present=set())
    assert verdict.two_primaries == [(1.2, ("pod-a", "pod-b"))]
    assert len(verdict.problems()) == 1
    assert verdict.problems(two_writable_allowed=True) == []


def test_allowing_two_writable_servers_still_catches_an_old_primary_that_acknowledges() -> None:
    history = History()
    history.roles += [RoleSample(1.0, ("pod-a", "pod-b"), 3)]
    writes(history, 1, 0, 1, term=NEW)
    writes(history, 2, 2, 3, term=OLD)  # the revoked primary acknowledged after the new one did
    problems = check(history, present={1, 2}).problems(two_writable_allowed=True)
    assert len(problems) == 1 and "1 writes acknowledged in an older term" in problems[0]


def test_an_old_primary_acknowledging_after_the_new_one_did_is_caught_twice() -> None:
    history = History()
    writes(history, 1, 0, 1, term=OLD)
    writes(history, 2, 2, 3, term=NEW)
    writes(history, 3, 4, 5, term=OLD)  # sent after term 2 acknowledged, acknowledged in term 1
    verdict = check(history, present={1, 2, 3})
    assert verdict.stale_acks == [(3, OLD, NEW)]
    assert verdict.overlapping_reigns == [(OLD, NEW)]


def test_a_restart_of_the_same_primary_in_the_same_timeline_is_not_an_overlap() -> None:
    history = History()
    again = Term(1, "pod-a@t7")  # the same timeline, a new postmaster: a crash and restart, no promotion
    steady(history, 1, 0, 3, term=OLD)
    steady(history, 10, 7, 9, term=again)
    steady(history, 20, 12, 14, term=NEW)
    verdict = check(history, present=set(range(1, 40)))
    assert verdict.stale_acks == [] and verdict.overlapping_reigns == []


def test_a_standby_deleted_while_listed_is_reported_and_one_deleted_after_removal_is_not() -> None:
    history = History()
    history.sync += [SyncSample(1.0, 'ANY 1 ("zone1_a", "zone1_b", "zone1_c")'),
                     SyncSample(2.0, 'ANY 1 ("zone1_a", "zone1_b")')]
    history.deletions += [Deletion(1.5, "zone1_c"), Deletion(2.5, "zone1_c")]
    assert check(history, present=set()).deleted_in_sync_set == [
        (1.5, "zone1_c", 'ANY 1 ("zone1_a", "zone1_b", "zone1_c")')]


def test_a_fault_never_healed_or_never_followed_by_an_ack_is_not_survived() -> None:
    history = History()
    steady(history, 1, 0, 3)
    history.fault("freeze", "start", "pod-a", at=3.0)
    history.fault("freeze", "end", "pod-a", at=4.0)
    history.fault("partition", "start", "pod-a", at=5.0)  # no end: its heal never ran
    history.roles.append(RoleSample(9.0, ("pod-a",), 3))
    verdict = check(history, present={1, 2, 3})
    assert [(f.kind, f.survived) for f in verdict.faults] == [("freeze", False), ("partition", False)]
    assert verdict.faults[1].unavailable_s == pytest.approx(9.0 - 2.1, abs=0.05)  # to the last thing seen
    assert len(verdict.problems()) == 2


@pytest.mark.parametrize(("value", "names"), [
    ('ANY 1 ("zone1_a", zone1_b)', {"zone1_a", "zone1_b"}),
    ("FIRST 2 (a, b, c)", {"a", "b", "c"}),
    ("a, b", {"a", "b"}),
    ("", set()),
])
def test_standby_names(value: str, names: set[str]) -> None:
    assert standby_names(value) == names


def test_stale_acknowledgements_are_found_as_a_pairwise_comparison_would() -> None:
    """The checker keeps a running maximum (a soak's history holds tens of thousands of writes); on
    random interleavings it finds exactly the writes the plain all-pairs rule finds."""
    import random

    from multigres_pools.playground.history import Op
    from multigres_pools.playground.history_check import _stale_acks

    rng = random.Random(7)
    for _ in range(200):
        oks, invoked = [], {}
        for ident in range(rng.randint(1, 30)):
            sent = rng.uniform(0, 10)
            invoked[ident] = sent
            oks.append(Op(sent + rng.uniform(0, 2), "ok", ident, Term(rng.randint(1, 4), f"s{rng.randint(1, 2)}")))
        pairwise = []
        for op in sorted(oks, key=lambda o: o.at):
            earlier = [o.term for o in sorted(oks, key=lambda o: o.at) if o.at < invoked[op.ident] and o.term]
            newer = max(earlier, key=lambda t: t.timeline, default=None)
            if newer is not None and op.term is not None and newer.timeline > op.term.timeline:
                pairwise.append((op.ident, op.term, newer))
        assert _stale_acks(oks, invoked) == pairwise
