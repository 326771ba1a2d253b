"""The agent hurries multiorch only once the old primary has stopped: no standby streams from it any
more, or its pod is gone, or its multipooler exited. A Recruit before the old primary's shutdown
checkpoint reached the standbys left it with WAL the new primary lacks, and it never rejoined
(agent/handover.py)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

from multigres_pools.agent.handover import Handovers, Leaving
from multigres_pools.dataplane.base import Leadership, Orchestrator, Pooler, PoolerId, ShardTopology

OLD, NEW = PoolerId("zone1", "p-old"), PoolerId("zone1", "p-new")
TOPO = ShardTopology(("etcd:2379",), "/multigres/global", "postgres", "default", "0-inf", ("zone1",))


def _pod(uid: str, multipooler_state: str) -> dict[str, Any]:
    return {"metadata": {"name": "pool-0", "uid": uid},
            "status": {"containerStatuses": [{"name": "multipooler", "state": {multipooler_state: {}}}]}}


class _Plane:
    """Elects NEW one poll after the first TriggerRecoveryNow; NEW streams until `streams_until`."""

    def __init__(self, streams_until: float = -1.0) -> None:
        self.asked_at: list[float] = []
        self.polls_after_ask = 0
        self.streams_until = streams_until

    def list_poolers(self, topology: ShardTopology) -> list[Pooler]:
        return []

    def leadership(self, poolers: list[Pooler]) -> Leadership:
        if self.asked_at:
            self.polls_after_ask += 1
        new = Pooler(NEW, None, "h", 1, "postgres", "default", "0-inf", "/k")
        streaming = frozenset({NEW}) if CLOCK[0] < self.streams_until else frozenset()
        return Leadership(new if self.polls_after_ask > 1 else None, NEW if self.polls_after_ask > 1 else OLD,
                          streaming=streaming)

    def orchestrators(self, topology: ShardTopology, names: dict[str, str]) -> list[Orchestrator]:
        return [Orchestrator("zone1", "orch-1", "h", 15370)]

    def trigger_recovery(self, orch: Orchestrator) -> tuple[str, ...]:
        self.asked_at.append(CLOCK[0])
        return ()


CLOCK = [0.0]


def _handovers(pods: list[dict[str, Any] | None]) -> tuple[Handovers, list[tuple[str, bool]]]:
    events: list[tuple[str, bool]] = []
    reads = iter(pods)
    last = [pods[-1]]

    def get_pod(namespace: str, name: str) -> dict[str, Any] | None:
        return next(reads, last[0])

    kube = SimpleNamespace(get_pod=get_pod, event=lambda target, reason, message, warning=False:
                           events.append((reason, warning)))
    metrics = SimpleNamespace(handover_seconds=SimpleNamespace(labels=lambda *a: SimpleNamespace(
        observe=lambda s: None)))
    log = SimpleNamespace(info=lambda *a, **k: None, warning=lambda *a, **k: None)
    ctx = SimpleNamespace(clock=lambda: CLOCK[0], kube=kube, metrics=metrics, log=log, effect=lambda n: None)

    def sleep(seconds: float) -> None:
        CLOCK[0] += seconds

    # Asks run in line here (in a thread of their own in the agent), so the fake clock orders everything.
    return Handovers(ctx, sleep=sleep, spawn=lambda run, name: run()), events  # type: ignore[arg-type]


def _leaving(plane: _Plane) -> Leaving:
    return Leaving(plane, TOPO, {"zone1": "orch-"}, OLD, "pool-0", "play", "uid-0", [{}], ("play", "play"))  # type: ignore[arg-type]


def test_multiorch_is_asked_only_once_no_standby_streams_from_the_old_primary() -> None:
    CLOCK[0] = 0.0
    plane = _Plane(streams_until=0.65)
    handovers, events = _handovers([_pod("uid-0", "running")])
    handovers._hurry(_leaving(plane))
    assert plane.asked_at and 0.65 <= plane.asked_at[0] < 0.65 + 0.1 + 1e-9, plane.asked_at
    assert events == [("PrimaryHandedOver", False)]


def test_or_once_the_old_primary_s_multipooler_exited() -> None:
    CLOCK[0] = 0.0
    plane = _Plane(streams_until=100.0)
    handovers, events = _handovers([_pod("uid-0", "running")] * 10 + [_pod("uid-0", "terminated")])
    handovers._hurry(_leaving(plane))
    assert plane.asked_at and 1.0 - 1e-9 <= plane.asked_at[0] < 1.2, plane.asked_at
    assert events == [("PrimaryHandedOver", False)]


def test_a_pod_already_gone_or_recreated_counts_as_exited() -> None:
    for pods in ([None], [_pod("uid-1", "running")]):
        CLOCK[0] = 0.0
        plane = _Plane(streams_until=100.0)
        handovers, events = _handovers(pods)
        handovers._hurry(_leaving(plane))
        assert plane.asked_at[:1] == [0.0] and events == [("PrimaryHandedOver", False)]


class _SlowPlane(_Plane):
    """multiorch promotes NEW at once, but its TriggerRecoveryNow answers only when its cycle ends (v0.1.0:
    15 s later, after the Recruit of the stopped old primary timed out): here, when the test says so."""

    def __init__(self) -> None:
        super().__init__()
        self.cycle_over = threading.Event()

    def trigger_recovery(self, orch: Orchestrator) -> tuple[str, ...]:
        self.asked_at.append(CLOCK[0])
        self.cycle_over.wait(10)
        return ()


def test_the_new_primary_is_confirmed_while_the_ask_still_waits_for_its_cycle() -> None:
    CLOCK[0] = 0.0
    plane = _SlowPlane()
    handovers, events = _handovers([None])
    asks: list[threading.Thread] = []

    def spawn(run: Callable[[], None], name: str) -> None:
        asks.append(threading.Thread(target=run, name=name))
        asks[-1].start()

    def sleep(seconds: float) -> None:
        CLOCK[0] += seconds
        time.sleep(0.001)  # let the ask's thread run

    handovers._spawn, handovers._sleep = spawn, sleep
    try:
        handovers._hurry(_leaving(plane))
        assert events == [("PrimaryHandedOver", False)]  # asked (the call in flight counts), and confirmed
        assert len(asks) == 1 and asks[0].is_alive(), "one ask at a time, and it had not returned yet"
    finally:
        plane.cycle_over.set()
        for ask in asks:
            ask.join(5)


class _RecordingPlane(_Plane):
    """Holds a record for each pooler and notes whom every Status round asks."""

    def __init__(self) -> None:
        super().__init__(streams_until=0.35)
        self.asked_ids: list[set[PoolerId]] = []

    def list_poolers(self, topology: ShardTopology) -> list[Pooler]:
        return [Pooler(i, None, "h", 1, "postgres", "default", "0-inf", "/k") for i in (OLD, NEW)]

    def leadership(self, poolers: list[Pooler]) -> Leadership:
        self.asked_ids.append({p.id for p in poolers})
        return super().leadership(poolers)


def test_the_stopping_old_primary_is_never_asked_for_its_status() -> None:
    # Its answer is not needed, and a Status to a multipooler that is stopping PostgreSQL (or whose
    # address is gone) can only slow the round that looks for the new primary.
    CLOCK[0] = 0.0
    plane = _RecordingPlane()
    handovers, events = _handovers([_pod("uid-0", "running")])
    handovers._hurry(_leaving(plane))
    assert events == [("PrimaryHandedOver", False)] and plane.asked_at
    assert plane.asked_ids and all(ids == {NEW} for ids in plane.asked_ids), plane.asked_ids
