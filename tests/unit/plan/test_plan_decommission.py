"""Targeted decommission: replace first, then drain the named pod through the normal drain."""

from __future__ import annotations

import dataclasses

from ansible_collections.multigres.pools.plugins.module_utils.core import keys
from ansible_collections.multigres.pools.plugins.module_utils.status import shard as status

from .plan_factories import (
    NOW,
    desired,
    desired_pool,
    drains,
    healthy,
    live_pod,
    live_pvc,
    observed,
    plan,
    shard_cr,
    writes,
)


def _pool(*names: str, replicas: int = 3):  # type: ignore[no-untyped-def]
    return dataclasses.replace(desired_pool(replicas=replicas), decommission=frozenset(names))


def _name(dp, i: int) -> str:  # type: ignore[no-untyped-def]
    return dp.pod(i)["metadata"]["name"]


def test_replacement_is_created_at_a_new_index_before_any_drain():
    dp = _pool()
    dp = dataclasses.replace(dp, decommission=frozenset({_name(dp, 1)}))
    pods, pvcs = healthy(dp)
    result = plan(desired(dp), observed(pods, pvcs), NOW)
    assert writes(result, "apply", "Pod") == [_name(dp, 3)]  # index 1 stays reserved
    assert drains(result) == {}
    marks = [a for a in result.actions if a.kind == "PersistentVolumeClaim" and a.verb == "patch"]
    assert [a.name for a in marks] == [f"data-{_name(dp, 1)}"] and "decommissioned pod" in marks[0].reason


def test_drain_starts_once_the_replacement_is_ready_and_never_below_the_floor():
    dp = _pool()
    dp = dataclasses.replace(dp, decommission=frozenset({_name(dp, 1)}))
    pods, pvcs = healthy(dp)
    pods.append(live_pod(dp, 3, ready=False, role=keys.Role.REPLICA))
    pvcs.append(live_pvc(dp, 3))
    waiting = plan(desired(dp), observed(pods, pvcs), NOW)
    assert drains(waiting) == {}
    assert any("waits for its replacement: 2/3" in w for w in waiting.waiting)

    pods[3] = live_pod(dp, 3, role=keys.Role.REPLICA)
    ready = plan(desired(dp), observed(pods, pvcs), NOW)
    assert drains(ready) == {_name(dp, 1): "decommission"}
    assert "listed in spec.pools.main.decommission" in next(a.reason for a in ready.actions if a.name == _name(dp, 1))


def test_primary_decommission_requests_a_switchover():
    dp = _pool()
    dp = dataclasses.replace(dp, decommission=frozenset({_name(dp, 0)}))
    pods, pvcs = healthy(dp, 4)  # the replacement (index 3) already runs and is Ready
    result = plan(desired(dp), observed(pods, pvcs), NOW)
    assert drains(result) == {_name(dp, 0): "decommission"}
    drain = next(a for a in result.actions if a.name == _name(dp, 0) and a.verb == "patch")
    assert keys.ANN_SWITCHOVER in drain.body["metadata"]["annotations"]


def test_drained_pod_is_deleted_with_its_pvc_and_its_index_is_not_reused():
    dp = _pool()
    dp = dataclasses.replace(dp, decommission=frozenset({_name(dp, 1)}))
    pods, pvcs = healthy(dp, 4)
    del pods[1]  # deleted after ready-for-deletion; its PVC carries the mark
    pvcs[1]["metadata"]["annotations"] = {keys.ANN_DELETE_WITH_POD: "gone-uid"}
    result = plan(desired(dp), observed(pods, pvcs), NOW)
    assert writes(result, "delete", "PersistentVolumeClaim") == [f"data-{_name(dp, 1)}"]
    assert writes(result, "apply") == [] and drains(result) == {}


def test_entry_already_gone_is_a_no_op():
    dp = _pool()
    dp = dataclasses.replace(dp, decommission=frozenset({_name(dp, 7)}))
    pods, pvcs = healthy(dp)
    result = plan(desired(dp), observed(pods, pvcs, cr=shard_cr()), NOW)
    assert result.actions == [] and result.decommission_problems == []


def test_entry_removed_before_the_drain_started_cancels_it():
    dp = _pool()
    pods, pvcs = healthy(dp, 4)
    pods[1] = live_pod(dp, 1, drain="requested", reason="decommission", role=keys.Role.REPLICA)
    result = plan(desired(dp), observed(pods, pvcs), NOW)
    cancel = next(a for a in result.actions if a.name == _name(dp, 1) and a.verb == "patch")
    assert "left spec.pools.main.decommission" in cancel.reason


def test_a_name_that_is_not_a_pod_of_the_pool_is_reported_and_ignored():
    dp = _pool("demo-postgres-typo-1", replicas=3)
    pods, pvcs = healthy(dp)
    obs = observed(pods, pvcs, cr=shard_cr())
    result = plan(desired(dp), obs, NOW)
    assert result.actions == [] and not result.errors
    assert result.decommission_problems[0].startswith(
        "spec.pools.main.decommission: 'demo-postgres-typo-1' is not a pod of pool main")
    st = status.compute(desired(dp), obs, result, stamp="2026-05-01T12:00:00Z")
    cond = {c["type"]: c for c in st["conditions"]}["DecommissionValid"]
    assert cond["status"] == "False" and cond["reason"] == "UnknownPod"
    assert [e.event_reason for e in status.transition_events(obs.cr, {}, st)] == ["DecommissionIgnored"]


def test_decommission_waits_for_the_maintenance_window_but_the_replacement_does_not():
    import datetime as dt

    from ansible_collections.multigres.pools.plugins.module_utils.spec import maintenance

    dp = _pool()
    dp = dataclasses.replace(dp, decommission=frozenset({_name(dp, 2)}))
    pods, pvcs = healthy(dp)
    closed = dataclasses.replace(desired(dp), windows=(maintenance.window(["Sat"], "02:00", dt.timedelta(hours=1)),))
    first = plan(closed, observed(pods, pvcs), NOW)
    assert writes(first, "apply", "Pod") == [_name(dp, 3)]
    pods2, pvcs2 = healthy(dp, 4)
    second = plan(closed, observed(pods2, pvcs2), NOW)
    assert drains(second) == {} and second.deferred == [
        f"decommission of pod {_name(dp, 2)} waits for the maintenance window opening at 2026-05-02T02:00:00Z"]
