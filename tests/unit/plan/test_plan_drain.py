"""Scale-down through the drain state machine (seed 000 "Drain State Machine", "Pod Selection";
contract §3.4), DRAINED pods and their stand-ins."""

from __future__ import annotations

from ansible_collections.multigres.pools.plugins.module_utils.core import keys
from ansible_collections.multigres.pools.plugins.module_utils.state.desired import PVCPolicy

from .plan_factories import (
    NOW,
    desired,
    desired_pool,
    drains,
    events,
    healthy,
    live_pod,
    live_pvc,
    observed,
    plan,
    writes,
)


def _name(pod):  # type: ignore[no-untyped-def]
    return pod["metadata"]["name"]


def test_scale_down_drains_the_highest_index_replica_with_a_reason():
    dp = desired_pool(replicas=2)
    pods, pvcs = healthy(dp, 3)
    result = plan(desired(dp), observed(pods, pvcs), NOW)
    assert drains(result) == {_name(pods[2]): "scale-down"}
    action = next(a for a in result.actions if a.verb == "patch")
    assert action.reason.startswith(f"drain pod {_name(pods[2])}: scale-down, highest index, not primary")
    ann = action.body["metadata"]["annotations"]
    assert ann[keys.ANN_DRAIN_REQUESTED_AT] == "2026-05-01T12:00:00Z"
    assert action.resource_version == pods[2]["metadata"]["resourceVersion"]
    assert "DrainRequested" in events(result)


def test_scale_down_never_picks_the_primary_when_a_replica_can_go():
    dp = desired_pool(replicas=2)
    pods, pvcs = healthy(dp, 3, primary=2)
    assert drains(plan(desired(dp), observed(pods, pvcs), NOW)) == {_name(pods[1]): "scale-down"}


def test_scale_down_prefers_a_not_ready_pod_over_the_highest_index():
    dp = desired_pool(replicas=2)
    pods, pvcs = healthy(dp, 3)
    pods[1] = live_pod(dp, 1, ready=False, role=keys.Role.REPLICA)
    result = plan(desired(dp), observed(pods, pvcs), NOW)
    assert drains(result) == {_name(pods[1]): "scale-down"}
    assert "not ready, not primary" in result.actions[0].reason


def test_scale_down_skips_a_standby_taking_a_backup_unless_it_is_the_only_one():
    dp = desired_pool(replicas=2)
    pods, pvcs = healthy(dp, 3)
    pods[2]["metadata"]["annotations"][keys.ANN_BACKUP_RUNNING] = '{"jobId": "j"}'
    assert drains(plan(desired(dp), observed(pods, pvcs), NOW)) == {_name(pods[1]): "scale-down"}
    dp = desired_pool(replicas=1)
    pods, pvcs = healthy(dp, 2)
    pods[1]["metadata"]["annotations"][keys.ANN_BACKUP_RUNNING] = '{"jobId": "j"}'
    result = plan(desired(dp), observed(pods, pvcs), NOW)
    assert drains(result) == {_name(pods[1]): "scale-down"}  # never the primary instead
    assert "taking a backup" in result.actions[0].reason


def test_health_gate_blocks_a_drain_while_a_remaining_pod_is_not_ready():
    dp = desired_pool(replicas=3)
    pods, pvcs = healthy(dp, 5)
    pods[1] = live_pod(dp, 1, ready=False, role=keys.Role.REPLICA)
    pods[2] = live_pod(dp, 2, ready=False, role=keys.Role.REPLICA)
    result = plan(desired(dp), observed(pods, pvcs), NOW)
    assert drains(result) == {}
    assert result.blocked and _name(pods[1]) in result.blocked[0]


def test_only_one_drain_per_pool_at_a_time():
    dp = desired_pool(replicas=1)
    pods, pvcs = healthy(dp, 3)
    pods[2] = live_pod(dp, 2, drain="draining", reason="scale-down", role=keys.Role.REPLICA)
    result = plan(desired(dp), observed(pods, pvcs), NOW)
    assert drains(result) == {}
    assert result.requeue_after == 2.0


def test_drain_still_requested_is_cancelled_when_replicas_rise_again():
    dp = desired_pool(replicas=3)
    pods, pvcs = healthy(dp, 3)
    pods[2] = live_pod(dp, 2, drain="requested", reason="scale-down", role=keys.Role.REPLICA)
    result = plan(desired(dp), observed(pods, pvcs), NOW)
    cancel = next(a for a in result.actions if a.verb == "patch")
    assert cancel.name == _name(pods[2])
    assert cancel.body["metadata"]["annotations"][keys.ANN_DRAIN_STATE] is None
    assert "DrainCancelled" in events(result)
    assert writes(result, "apply") == []  # the pod keeps its slot: nothing is created


def test_drain_past_requested_is_never_cancelled():
    dp = desired_pool(replicas=3)
    pods, pvcs = healthy(dp, 3)
    pods[2] = live_pod(dp, 2, drain="draining", reason="scale-down", role=keys.Role.REPLICA)
    result = plan(desired(dp), observed(pods, pvcs), NOW)
    assert writes(result, "patch") == []
    # ...and the slot it leaves is filled by a new pod at the next free index.
    assert len(writes(result, "apply", "Pod")) == 1


def test_scaled_down_pod_pvc_is_deleted_per_when_scaled():
    dp = desired_pool(replicas=2, when_scaled=PVCPolicy.DELETE)
    pods, pvcs = healthy(dp, 3)
    result = plan(desired(dp), observed(pods[:2], pvcs), NOW)
    assert writes(result, "delete", "PersistentVolumeClaim") == [pvcs[2]["metadata"]["name"]]
    retain = desired_pool(replicas=2, when_scaled=PVCPolicy.RETAIN)
    assert plan(desired(retain), observed(pods[:2], pvcs), NOW).actions == []


def test_pvc_is_never_deleted_while_its_pod_exists():
    dp = desired_pool(replicas=2, when_scaled=PVCPolicy.DELETE)
    pods, pvcs = healthy(dp, 3)
    pods[2] = live_pod(dp, 2, drain="ready-for-deletion", reason="scale-down", role=keys.Role.REPLICA)
    result = plan(desired(dp), observed(pods, pvcs), NOW)
    assert writes(result, "delete", "Pod") == [_name(pods[2])]
    assert writes(result, "delete", "PersistentVolumeClaim") == []


def test_drained_pod_is_kept_and_a_stand_in_created_at_the_next_free_index():
    dp = desired_pool(replicas=3)
    pods, pvcs = healthy(dp, 3)
    pods[1] = live_pod(dp, 1, role=keys.Role.DRAINED, ready=False)
    result = plan(desired(dp), observed(pods, pvcs), NOW)
    assert writes(result, "delete") == []
    created = writes(result, "apply", "Pod")
    assert created == [_name(pods[0]).rsplit("-", 1)[0] + "-3"]


def test_drained_pod_pvc_is_marked_and_unmarked_if_it_recovers():
    dp = desired_pool(replicas=3)
    pods, pvcs = healthy(dp, 4)
    pods[1] = live_pod(dp, 1, role=keys.Role.DRAINED, ready=False)
    result = plan(desired(dp), observed(pods, pvcs), NOW)
    mark = next(a for a in result.actions if a.kind == "PersistentVolumeClaim")
    assert mark.body["metadata"]["annotations"][keys.ANN_DELETE_WITH_POD] == pods[1]["metadata"]["uid"]
    pods[1] = live_pod(dp, 1, role=keys.Role.REPLICA)
    marked = live_pvc(dp, 1, annotations={keys.ANN_DELETE_WITH_POD: pods[1]["metadata"]["uid"]})
    again = plan(desired(dp), observed(pods[:3], [pvcs[0], marked, pvcs[2]]), NOW)
    unmark = next(a for a in again.actions if a.kind == "PersistentVolumeClaim")
    assert unmark.body["metadata"]["annotations"][keys.ANN_DELETE_WITH_POD] is None


def test_deleting_a_drained_pod_by_hand_drains_it_then_deletes_its_pvc():
    dp = desired_pool(replicas=3, when_scaled=PVCPolicy.RETAIN)
    pods, pvcs = healthy(dp, 4)
    pods[1] = live_pod(dp, 1, role=keys.Role.DRAINED, ready=False, terminating=True)
    pvcs[1] = live_pvc(dp, 1, annotations={keys.ANN_DELETE_WITH_POD: pods[1]["metadata"]["uid"]})
    result = plan(desired(dp), observed(pods, pvcs), NOW)
    assert drains(result) == {_name(pods[1]): "drained-discard"}
    assert writes(result, "delete") == []
    # once the pod is gone, the marked PVC goes even though whenScaled=Retain, and nothing is recreated
    after = plan(desired(dp), observed([pods[0], pods[2], pods[3]], pvcs), NOW)
    assert writes(after) == [pvcs[1]["metadata"]["name"]]


def test_filesystem_resize_pending_drains_that_pod():
    dp = desired_pool(replicas=3)
    pods, pvcs = healthy(dp, 3)
    pvcs[2] = live_pvc(dp, 2, resize_pending=True)
    assert drains(plan(desired(dp), observed(pods, pvcs), NOW)) == {_name(pods[2]): "filesystem-resize"}


def test_primary_with_pending_resize_is_drained_with_a_switchover_request():
    dp = desired_pool(replicas=3)
    pods, pvcs = healthy(dp, 3, primary=1)
    pvcs[1] = live_pvc(dp, 1, resize_pending=True)
    result = plan(desired(dp), observed(pods, pvcs), NOW)
    assert drains(result) == {_name(pods[1]): "filesystem-resize"}
    assert keys.ANN_SWITCHOVER in result.actions[0].body["metadata"]["annotations"]
