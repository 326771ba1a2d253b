"""Day-2 operations on the real apiserver: pause, maintenance windows, targeted decommission.

The CR drives every pass (as under the operator); the fake agent and the kubelet helper play the
outside world between passes (tests/integration/reconcile/rig.py)."""

from __future__ import annotations

import datetime as dt

import pytest
from ansible_collections.multigres.pools.plugins.module_utils.core import keys, naming
from ansible_collections.multigres.pools.plugins.module_utils.plan.context import MAX_WINDOW_REQUEUE
from ansible_collections.multigres.pools.plugins.module_utils.spec import maintenance
from ansible_collections.multigres.pools.plugins.module_utils.state import facts

from tests.integration.reconcile.rig import CELL, POOL, spec

pytestmark = pytest.mark.cluster
SID = naming.ShardId("demo", "postgres", "default", "0-inf")


def _pod(i: int) -> str:
    return naming.pod_name(SID, POOL, CELL, i)


def _annotate_cr(rig, value: str | None) -> None:  # type: ignore[no-untyped-def]
    rig.client.merge_patch(keys.API_GROUP_VERSION, keys.SHARD_KIND, rig.namespace, "demo",
                           {"metadata": {"annotations": {keys.ANN_PAUSED: value}}}, field_manager="test")


def _condition(rig, ctype: str) -> dict:  # type: ignore[no-untyped-def]
    cr = rig.cr()
    assert cr is not None
    return next(c for c in cr["status"]["conditions"] if c["type"] == ctype)


def _pod_writes(result) -> list[dict]:  # type: ignore[no-untyped-def]
    return [a for a in result.actions if a["verb"] != "event"]


def test_pause_withholds_scale_up_and_deletion_until_lifted(rig, shard_crd):  # type: ignore[no-untyped-def]
    rig.create_cr(spec(2))
    rig.settle(name="demo")
    before = {n: facts.uid(p) for n, p in rig.pods().items()}
    _annotate_cr(rig, "true")
    rig.update_cr({"pools": {POOL: {"replicasPerCell": 3}}})
    for _ in range(3):
        result = rig.run(name="demo")
        assert _pod_writes(result) == [] and result.requeue_after == 0
        rig.world()
    assert {n: facts.uid(p) for n, p in rig.pods().items()} == before  # nothing created, nothing touched
    paused = _condition(rig, "Paused")
    assert paused["status"] == "True" and f"create pod {_pod(2)}" in paused["message"]
    assert rig.cr()["status"]["message"] == paused["message"]

    _annotate_cr(rig, "maybe")  # a typo stays paused, and status names the annotation and its values
    rig.run(name="demo")
    paused = _condition(rig, "Paused")
    assert paused["reason"] == "InvalidAnnotation" and "'true' and 'false'" in paused["message"]
    assert sorted(rig.pods()) == sorted(before)

    _annotate_cr(rig, None)  # lifted: the withheld scale-up happens
    rig.settle(name="demo")
    assert sorted(rig.pods()) == [_pod(i) for i in range(3)]
    assert _condition(rig, "Paused")["status"] == "False"

    _annotate_cr(rig, "true")
    rig.client.delete(keys.API_GROUP_VERSION, keys.SHARD_KIND, rig.namespace, "demo")
    result = rig.run(name="demo")
    assert _pod_writes(result) == []
    cr = rig.cr()
    assert cr is not None and keys.FINALIZER_SHARD in facts.finalizers(cr)  # the finalizer waits
    assert "shard deletion waits (finalizer kept)" in cr["status"]["message"]
    assert len(rig.pods()) == 3
    _annotate_cr(rig, "false")
    for _ in range(40):
        if rig.cr() is None:
            break
        rig.run(name="demo", cleanup_timeout=0)
        rig.world()
    assert rig.cr() is None and rig.pods() == {}


def _passes(rig, rounds: int = 6) -> list:  # type: ignore[no-untyped-def]
    """A few passes with world turns between them (the deferral requeues for hours, so no settle)."""
    out = []
    for _ in range(rounds):
        out.append(rig.run(name="demo"))
        rig.world()
    return out


def test_scale_down_and_rolling_update_wait_for_the_maintenance_window(rig, shard_crd):  # type: ignore[no-untyped-def]
    now = dt.datetime.now(dt.UTC).replace(microsecond=0)
    opening = dt.datetime.combine(now.date() + dt.timedelta(days=3), dt.time(2, 0), tzinfo=dt.UTC)
    window = {"days": [maintenance.WEEKDAYS[opening.weekday()]], "start": "02:00", "duration": "2h"}
    rig.clock = now
    rig.create_cr({**spec(3), "maintenanceWindows": [window]})
    rig.settle(name="demo")  # creating pods never waits for a window
    assert sorted(rig.pods()) == [_pod(i) for i in range(3)]

    rig.update_cr({"pools": {POOL: {"replicasPerCell": 2}}})
    results = _passes(rig)  # the first pass updates the PodDisruptionBudget (not disruptive)
    assert all(_pod_writes(r) == [] for r in results[1:])
    # At the opening, but at least hourly (the opening is days away).
    assert results[-1].requeue_after == min(MAX_WINDOW_REQUEUE, (opening - now).total_seconds())
    assert rig.drained_pods() == [] and len(rig.pods()) == 3
    waiting = _condition(rig, "WaitingForMaintenanceWindow")
    assert waiting["status"] == "True" and facts.format_time(opening) in waiting["message"]
    assert "scale-down of main/z1 to 2" in waiting["message"]

    rig.clock = opening + dt.timedelta(minutes=5)  # inside the window: the drain runs
    rig.settle(name="demo")
    assert len(rig.pods()) == 2 and len(rig.drained_pods()) == 1
    assert _condition(rig, "WaitingForMaintenanceWindow")["status"] == "False"

    rig.clock = opening + dt.timedelta(hours=3)  # closed again: a rolling update waits
    rig.update_cr({"postgresConfig": {"work_mem": "8MB"}})
    before = {n: facts.uid(p) for n, p in rig.pods().items()}
    _passes(rig)
    assert {n: facts.uid(p) for n, p in rig.pods().items()} == before
    message = _condition(rig, "WaitingForMaintenanceWindow")["message"]
    assert "rolling update (0/2 pods updated" in message
    assert facts.format_time(opening + dt.timedelta(days=7)) in message


def _ready_in_service(rig) -> int:  # type: ignore[no-untyped-def]
    """Ready pods not in a drain: what serves the pool."""
    return sum(facts.condition_true(p, "Ready") and not facts.annotations(p).get(keys.ANN_DRAIN_STATE)
               and not facts.is_terminating(p) for p in rig.pods().values())


def test_decommission_replaces_then_drains_exactly_the_named_pod(rig, shard_crd):  # type: ignore[no-untyped-def]
    rig.create_cr(spec(3))
    rig.settle(name="demo")
    rig.agent.publish_roles(primary=_pod(0))

    rig.update_cr({"pools": {POOL: {"decommission": [_pod(1)]}}})
    lowest = 3
    for _ in range(40):
        result = rig.run(name="demo")
        lowest = min(lowest, _ready_in_service(rig))
        if result.writes == 0 and result.requeue_after == 0:
            break
        rig.world()
    assert sorted(rig.pods()) == [_pod(0), _pod(2), _pod(3)]  # replaced at a new index
    assert rig.drained_pods() == [_pod(1)]  # exactly the named pod, through the drain
    assert f"data-{_pod(1)}" not in rig.pvcs()  # its volume went with it
    assert lowest >= 3  # the replacement was Ready before the drain started
    assert _condition(rig, "DecommissionValid")["status"] == "True"

    # The entry stays listed: a no-op now, and index 1 is not handed out again on scale-up.
    rig.update_cr({"pools": {POOL: {"replicasPerCell": 4}}})
    rig.settle(name="demo")
    assert sorted(rig.pods()) == [_pod(0), _pod(2), _pod(3), _pod(4)]

    rig.update_cr({"pools": {POOL: {"decommission": ["demo-typo-1"]}}})  # not a pod of this pool
    result = rig.run(name="demo")
    assert _pod_writes(result) == []
    invalid = _condition(rig, "DecommissionValid")
    assert invalid["status"] == "False" and "spec.pools.main.decommission: 'demo-typo-1'" in invalid["message"]
    assert len(rig.pods()) == 4
