"""One reader of the drain annotations for the engine and the agent (module_utils/state/drain_annotations.py),
and what the planner does with it: unknown states are reported and left alone, cancellations clean up."""

from __future__ import annotations

import pytest
from ansible_collections.multigres.pools.plugins.module_utils.core import keys
from ansible_collections.multigres.pools.plugins.module_utils.core.keys import DrainState
from ansible_collections.multigres.pools.plugins.module_utils.state import drain_annotations as da
from ansible_collections.multigres.pools.plugins.module_utils.status import shard as status

from multigres_pools.agent import podinfo

from .plan_factories import NOW, desired, desired_pool, drains, healthy, live_pod, observed, plan, shard_cr, writes

STATE, FORCE = keys.ANN_DRAIN_STATE, keys.ANN_DRAIN_FORCE


@pytest.mark.parametrize(("value", "state", "unknown"), [
    (None, None, None), ("", None, None), ("draining", DrainState.DRAINING, None),
    ("ready-for-deletion", DrainState.READY_FOR_DELETION, None), ("drainig", None, "drainig"),
    ("Draining", None, "Draining"),
])
def test_one_reader_for_engine_and_agent(value, state, unknown) -> None:  # type: ignore[no-untyped-def]
    ann = {} if value is None else {STATE: value}
    reading = da.read_state(ann)
    assert (reading.state, reading.unknown, reading.active) == (state, unknown, state is not None)
    pod = {"metadata": {"annotations": ann}}
    assert podinfo.drain_state(pod) is state  # the agent reads through the same function


def test_unknown_state_message_names_pod_annotation_and_allowed_values() -> None:
    text = da.unknown_state_message("p-2", "drainig")
    assert "p-2" in text and f"{STATE}='drainig'" in text
    assert "requested, draining, acknowledged, ready-for-deletion" in text


@pytest.mark.parametrize(("force", "state", "target", "stale"), [
    (None, DrainState.DRAINING, None, False),
    ("draining", DrainState.DRAINING, DrainState.DRAINING, False),
    ("acknowledged", DrainState.DRAINING, None, False),  # set ahead: kept until the drain gets there
    ("requested", DrainState.DRAINING, None, True),  # the drain already left it
    ("draining", None, None, True),  # no drain to force
    ("ready-for-deletion", DrainState.ACKNOWLEDGED, None, True),  # nothing after it
    ("yes", DrainState.REQUESTED, None, True),
])
def test_force_is_one_shot(force, state, target, stale) -> None:  # type: ignore[no-untyped-def]
    reading = da.read_force({} if force is None else {FORCE: force}, state)
    assert reading.target is target and (reading.stale is not None) is stale


def test_forced_steps_are_recorded_in_order() -> None:
    first = da.forced_record(None, DrainState.REQUESTED, "2026-05-01T12:00:00Z")
    assert da.forced_record(first, DrainState.DRAINING, "2026-05-01T12:05:00Z") == (
        "requested@2026-05-01T12:00:00Z,draining@2026-05-01T12:05:00Z")


def test_unknown_state_is_left_alone_and_the_pool_goes_on():
    dp = desired_pool(replicas=2)
    pods, pvcs = healthy(dp, 3)
    pods[2] = live_pod(dp, 2, role=keys.Role.REPLICA, drain="drainig", reason="scale-down")
    result = plan(desired(dp), observed(pods, pvcs, cr=shard_cr()), NOW)
    name2 = pods[2]["metadata"]["name"]
    # The scale-down picks another pod; the typo'd one is neither drained, cancelled nor deleted.
    assert drains(result) == {pods[1]["metadata"]["name"]: "scale-down"}
    assert name2 not in writes(result)
    assert not any(name2 in w for w in result.waiting)
    assert result.unknown_drains == [da.unknown_state_message(name2, "drainig")]
    assert f"warning: {da.unknown_state_message(name2, 'drainig')}" in result.lines()


def test_unknown_state_is_in_status_and_raises_one_warning_event():
    dp = desired_pool()
    pods, pvcs = healthy(dp)
    pods[1] = live_pod(dp, 1, role=keys.Role.REPLICA, drain="gone")
    cr = shard_cr()
    obs = observed(pods, pvcs, cr=cr)
    st = status.compute(desired(dp), obs, plan(desired(dp), obs, NOW), stamp="2026-05-01T12:00:00Z")
    cond = {c["type"]: c for c in st["conditions"]}[keys.ShardCondition.DRAIN_ANNOTATIONS_VALID]
    assert (cond["status"], cond["reason"]) == ("False", "UnknownDrainState")
    assert pods[1]["metadata"]["name"] in cond["message"] and STATE in cond["message"]
    assert st["readyReplicas"] == 3  # not draining: it still serves
    assert [a.event_reason for a in status.transition_events(cr, {}, st)] == ["UnknownDrainState"]
    assert status.transition_events(cr, st, st) == []


def test_rolling_update_skips_pods_with_an_unknown_state():
    dp = desired_pool(spec_hash="h2")
    pods, pvcs = healthy(dp)
    for i, pod in enumerate(pods):
        pod["metadata"]["annotations"][keys.ANN_SPEC_HASH] = "h1"
        if i == 2:
            pod["metadata"]["annotations"][STATE] = "oops"
    result = plan(desired(dp), observed(pods, pvcs), NOW)
    assert list(drains(result)) == [pods[1]["metadata"]["name"]]
    only_unknown = [pods[0], pods[1], pods[2]]
    for pod in only_unknown:
        pod["metadata"]["annotations"][STATE] = "oops"
    blocked = plan(desired(dp), observed(only_unknown, pvcs), NOW)
    assert drains(blocked) == {} and "unknown drain state" in blocked.rolling.waiting


def test_cancel_removes_every_drain_annotation_but_made_ineligible():
    dp = desired_pool(replicas=3)
    pods, pvcs = healthy(dp)
    pod = live_pod(dp, 2, role=keys.Role.REPLICA, drain="requested", reason="scale-down")
    pod["metadata"]["annotations"].update({keys.ANN_DRAIN_BLOCKED: "no-primary", FORCE: "requested",
                                           keys.ANN_DRAIN_STATE_SINCE: "2026-05-01T11:59:30Z"})
    result = plan(desired(dp), observed([pods[0], pods[1], pod], pvcs), NOW)
    cancel = next(a for a in result.actions if a.verb == "patch")
    cleared = cancel.body["metadata"]["annotations"]
    assert cleared == dict.fromkeys(da.CANCEL_CLEARS)
    assert {keys.ANN_DRAIN_BLOCKED, keys.ANN_DRAIN_STATE_SINCE, FORCE, keys.ANN_DRAIN_FORCED} <= set(cleared)
    assert keys.ANN_DRAIN_INELIGIBLE not in cleared
