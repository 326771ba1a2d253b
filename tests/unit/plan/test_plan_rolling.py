"""Rolling updates on spec-hash drift (seed 000 "Rolling Updates"; seed 002 §9)."""

from __future__ import annotations

from ansible_collections.multigres.pools.plugins.module_utils.core import keys

from .plan_factories import NOW, desired, desired_pool, drains, healthy, live_pod, observed, plan, writes


def _drifted(dp, count=None, primary=0):  # type: ignore[no-untyped-def]
    pods, pvcs = healthy(dp, count, primary=primary)
    for pod in pods:
        pod["metadata"]["annotations"][keys.ANN_SPEC_HASH] = "old"
    return pods, pvcs


def test_replicas_first_one_at_a_time_with_progress():
    dp = desired_pool(replicas=3, spec_hash="new")
    pods, pvcs = _drifted(dp)
    result = plan(desired(dp), observed(pods, pvcs), NOW)
    assert drains(result) == {pods[1]["metadata"]["name"]: "rolling-update"}
    assert result.rolling.progress == "0/3 pods updated"


def test_next_pod_waits_until_the_replacement_is_ready():
    dp = desired_pool(replicas=3, spec_hash="new")
    pods, pvcs = _drifted(dp)
    pods[1] = live_pod(dp, 1, ready=False, role=keys.Role.REPLICA)  # recreated, new hash, not Ready yet
    result = plan(desired(dp), observed(pods, pvcs), NOW)
    assert drains(result) == {}
    assert result.rolling.progress == "1/3 pods updated"
    assert result.requeue_after > 0


def test_rolling_update_is_deferred_while_any_drain_runs():
    dp = desired_pool(replicas=3, spec_hash="new")
    other = desired_pool("main", "z2", replicas=2, spec_hash="new")
    pods, pvcs = _drifted(dp)
    opods, opvcs = healthy(other, 3, primary=9)
    opods[2] = live_pod(other, 2, drain="draining", reason="scale-down", role=keys.Role.REPLICA)
    result = plan(desired(dp, other), observed(pods + opods, pvcs + opvcs), NOW)
    assert drains(result) == {}
    assert "rolling update" in " ".join(result.waiting)


def test_primary_last_with_a_switchover_request_on_its_drain():
    dp = desired_pool(replicas=3, spec_hash="new")
    pods, pvcs = healthy(dp)
    pods[0]["metadata"]["annotations"][keys.ANN_SPEC_HASH] = "old"  # only the primary drifts
    result = plan(desired(dp), observed(pods, pvcs), NOW)
    assert drains(result) == {pods[0]["metadata"]["name"]: "rolling-update"}
    ann = result.actions[0].body["metadata"]["annotations"]
    assert ann[keys.ANN_SWITCHOVER] == "2026-05-01T12:00:00Z"
    assert "primary last" in result.actions[0].reason


def test_primary_waits_while_a_replica_still_drifts():
    dp = desired_pool(replicas=3, spec_hash="new")
    pods, pvcs = _drifted(dp)
    pods[1]["metadata"]["annotations"][keys.ANN_SPEC_HASH] = "new"
    result = plan(desired(dp), observed(pods, pvcs), NOW)
    assert drains(result) == {pods[2]["metadata"]["name"]: "rolling-update"}
    assert keys.ANN_SWITCHOVER not in result.actions[0].body["metadata"]["annotations"]


def test_never_two_rolling_update_victims_across_pools():
    a = desired_pool("main", "z1", spec_hash="new")
    b = desired_pool("main", "z2", spec_hash="new")
    pa, va = _drifted(a)
    pb, vb = _drifted(b, primary=9)
    assert len(drains(plan(desired(a, b), observed(pa + pb, va + vb), NOW))) == 1


def test_drain_for_a_reverted_spec_is_cancelled():
    dp = desired_pool(replicas=3, spec_hash="h1")
    pods, pvcs = healthy(dp)
    pods[2] = live_pod(dp, 2, drain="requested", reason="rolling-update", role=keys.Role.REPLICA)
    result = plan(desired(dp), observed(pods, pvcs), NOW)
    assert writes(result, "patch") == [pods[2]["metadata"]["name"]]
    assert result.actions[0].body["metadata"]["annotations"][keys.ANN_DRAIN_STATE] is None


def test_up_to_date_shard_reports_no_rolling_update():
    dp = desired_pool(spec_hash="h1")
    pods, pvcs = healthy(dp)
    result = plan(desired(dp), observed(pods, pvcs), NOW)
    assert not result.rolling.in_progress and result.rolling.progress == "3/3 pods updated"
