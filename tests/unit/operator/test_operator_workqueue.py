import asyncio
import math

from multigres_pools.operator.workqueue import AsyncWorkQueue, WorkQueue

A, B = ("ns", "a"), ("ns", "b")


def test_burst_of_events_becomes_one_run() -> None:
    q = WorkQueue()
    for i in range(50):
        q.add(A, at=1.0 + i * 0.001)
    assert q.depth() == 1
    assert q.pop(now=0.5) is None  # not due yet
    assert q.pop(now=1.0) == A
    assert q.pop(now=2.0) is None  # nothing else queued


def test_a_later_event_never_postpones_an_earlier_deadline() -> None:
    q = WorkQueue()
    q.add(A, at=1.0)
    q.add(A, at=5.0)
    assert q.next_deadline() == 1.0
    q.add(A, at=0.5)
    assert q.next_deadline() == 0.5


def test_earliest_deadline_first() -> None:
    q = WorkQueue()
    q.add(B, at=2.0)
    q.add(A, at=1.0)
    assert q.pop(now=3.0) == A
    assert q.pop(now=3.0) == B


def test_events_during_a_run_cause_exactly_one_more_run() -> None:
    q = WorkQueue()
    q.add(A, at=0)
    assert q.pop(now=0) == A
    for _ in range(10):
        q.add(A, at=1.0)
    assert q.pop(now=5) is None  # never two workers on one shard
    assert q.depth() == 1
    q.done(A)
    assert q.pop(now=5) == A
    q.done(A)
    assert q.pop(now=100) is None
    assert A not in q


def test_gate_holds_back_events_until_it_expires() -> None:
    q = WorkQueue()
    q.gate(A, until=10.0)
    q.add(A, at=1.0)  # e.g. a pod event caused by the failed run itself
    assert q.pop(now=5.0) is None
    assert q.next_deadline() == 10.0
    assert q.pop(now=10.0) == A


def test_gate_applies_to_dirty_keys_and_pending_deadlines() -> None:
    q = WorkQueue()
    q.add(A, at=0)
    q.pop(now=0)
    q.add(A, at=1.0)  # dirty while running
    q.gate(A, until=30.0)
    q.done(A)
    assert q.pop(now=29) is None
    assert q.pop(now=30) == A


def test_infinite_gate_is_lifted_only_by_a_forced_add() -> None:
    q = WorkQueue()
    q.gate(A, until=math.inf)
    q.add(A, at=1.0)
    assert q.next_deadline() is None
    assert q.pop(now=1e9) is None
    q.add(A, at=2.0, force=True)  # the spec changed
    assert q.gated_until(A) is None
    assert q.pop(now=2.0) == A


def test_a_spec_change_during_the_run_that_finds_the_spec_invalid_is_not_gated() -> None:
    """The user fixes a refused spec while the pass that refuses it still runs (seen with our operator:
    the fix was never reconciled until the next spec change)."""
    q = WorkQueue()
    q.add(A, at=0)
    assert q.pop(now=0) == A
    q.add(A, at=1.0, force=True)  # the fix, while the pass that read the bad spec runs
    q.gate(A, until=math.inf)  # that pass ends: invalid
    q.done(A)
    assert q.gated_until(A) is None
    assert q.pop(now=1.0) == A
    q.gate(A, until=math.inf)  # the next invalid pass without a change since: gated again
    q.done(A)
    q.add(A, at=2.0)
    assert q.pop(now=1e9) is None


def test_forget_drops_queue_dirty_and_gate() -> None:
    q = WorkQueue()
    q.add(A, at=0)
    q.gate(B, until=math.inf)
    q.add(B, at=0)
    q.forget(A)
    q.forget(B)
    assert q.depth() == 0
    q.add(B, at=1)
    assert q.pop(now=1) == B


def test_async_queue_coalesces_and_wakes_workers() -> None:
    async def scenario() -> list[object]:
        q = AsyncWorkQueue(coalesce=0.05)
        got: list[object] = []

        async def worker() -> None:
            while (key := await q.get()) is not None:
                got.append(key)
                q.done(key)

        task = asyncio.create_task(worker())
        for _ in range(20):
            q.add(A)
        q.add(B, delay=0.2)
        await asyncio.sleep(0.4)
        q.close()
        await task
        return got

    assert asyncio.run(scenario()) == [A, B]


C, D = ("ns", "c"), ("ns", "d")


def test_pop_batch_takes_only_due_keys_earliest_first() -> None:
    q = WorkQueue()
    q.add(C, at=3.0)
    q.add(A, at=1.0)
    q.add(D, at=9.0)  # not due at 5
    q.add(B, at=2.0)
    q.gate(B, until=6.0)  # held back by a backoff
    assert q.pop_batch(now=5.0, limit=10) == [A, C]
    assert q.processing() == {A, C}
    assert q.pop_batch(now=5.0, limit=10) == []  # never a key that is not due, nor one running
    assert q.pop_batch(now=9.0, limit=1) == [B]  # the limit holds; the earliest deadline goes first
    assert q.pop_batch(now=9.0, limit=1) == [D]


def test_pop_batch_never_takes_a_running_key_twice() -> None:
    q = WorkQueue()
    q.add(A, at=0)
    assert q.pop_batch(now=0, limit=5) == [A]
    q.add(A, at=0)  # an event during the run: dirty, not due
    q.add(B, at=0)
    assert q.pop_batch(now=1, limit=5) == [B]
    q.done(A)
    assert q.pop_batch(now=1, limit=5) == [A]


def test_get_batch_does_not_wait_for_keys_that_are_not_due() -> None:
    async def scenario() -> list[list[object]]:
        q = AsyncWorkQueue(coalesce=0.0)
        q.add(A)
        q.add(B)
        q.add(C, delay=0.3)
        first = await q.get_batch(10)
        # C became due later; it comes in a batch of its own instead of holding up A and B.
        second = await q.get_batch(10)
        q.close()
        return [first, second, await q.get_batch(10)]

    assert asyncio.run(scenario()) == [[A, B], [C], []]


def test_spec_change_goes_ahead_of_a_backlog_of_due_requeues() -> None:
    q = WorkQueue()
    for i, key in enumerate(("requeue-a", "requeue-b", "resync-c")):
        q.add(key, at=float(i))
    q.add("changed", at=5.0, force=True)
    assert q.pop_batch(now=10.0, limit=2) == ["changed", "requeue-a"]
    # Urgency is spent by the run it asked for; the next add is ordinary again.
    q.done("changed")
    q.add("changed", at=0.5)
    assert q.pop_batch(now=10.0, limit=3) == ["changed", "requeue-b", "resync-c"]


def test_spec_change_during_a_run_stays_urgent_for_the_next_run() -> None:
    q = WorkQueue()
    q.add("changed", at=0.0)
    assert q.pop(now=0.0) == "changed"
    q.add("other", at=1.0)
    q.add("changed", at=2.0, force=True)  # arrives while it runs: marked dirty, and urgent
    q.done("changed")
    assert q.pop(now=3.0) == "changed"


def test_a_resync_never_goes_before_an_event_and_can_be_refused() -> None:
    q = WorkQueue()
    resync = [("ns", f"r{i}") for i in range(500)]
    for key in resync:
        q.add(key, at=0.0, background=True)
    q.add(A, at=1.0)  # a real event, queued after the whole resync and due later
    assert q.pop_batch(now=2.0, limit=1) == [A]
    # A consumer that refuses background work sees nothing to do, and no deadline to wake for.
    assert q.pop_batch(now=2.0, limit=10, background=False) == []
    assert q.next_deadline(background=False) is None
    assert len(q.pop_batch(now=2.0, limit=10)) == 10


def test_an_event_on_a_resync_only_key_promotes_it() -> None:
    q = WorkQueue()
    q.add(A, at=0.0, background=True)
    q.add(B, at=0.5, background=True)
    q.add(B, at=5.0)  # an event on B: it is no longer background work; its deadline stays the earlier
    assert q.pop_batch(now=1.0, limit=5, background=False) == [B]
    assert q.pop_batch(now=1.0, limit=5) == [A]


def test_background_is_kept_for_a_dirty_key_and_lost_by_an_event() -> None:
    q = WorkQueue()
    q.add(A, at=0.0)
    assert q.pop(now=0) == A
    q.add(A, at=1.0, background=True)  # a resync while it runs
    q.done(A)
    assert q.pop_batch(now=2.0, limit=1, background=False) == []
    q.add(A, at=1.0)
    assert q.pop_batch(now=2.0, limit=1, background=False) == [A]


def test_urgent_beats_normal_beats_background() -> None:
    q = WorkQueue()
    q.add(("ns", "bg"), at=0.0, background=True)
    q.add(("ns", "ev"), at=0.1)
    q.add(("ns", "spec"), at=0.2, force=True)
    assert q.pop_batch(now=1.0, limit=3) == [("ns", "spec"), ("ns", "ev"), ("ns", "bg")]
