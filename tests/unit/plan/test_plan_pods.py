"""Creation, recreation, terminal pods, drain completion and external deletion (seed 000 "Pod Lifecycle")."""

from __future__ import annotations

from ansible_collections.multigres.pools.plugins.module_utils.core import keys, naming

from .plan_factories import (
    NOW,
    SID,
    desired,
    desired_pool,
    drains,
    events,
    healthy,
    live_pod,
    live_pvc,
    observed,
    plan,
    shard_cr,
    writes,
)


def test_empty_pool_creates_every_pvc_then_every_pod_in_one_pass():
    dp = desired_pool(replicas=3)
    result = plan(desired(dp), observed(), NOW)
    kinds = [(a.verb, a.kind) for a in result.actions if a.verb != "event"]
    assert kinds == [("apply", "PersistentVolumeClaim")] * 3 + [("apply", "Pod")] * 3
    pods = [a.body for a in result.actions if a.kind == "Pod"]
    assert [p["metadata"]["name"] for p in pods] == [naming.pod_name(SID, "main", "z1", i)
                                                     for i in range(3)]
    for i, pod in enumerate(pods):
        assert keys.FINALIZER_POD in pod["metadata"]["finalizers"]
        assert pod["metadata"]["labels"][keys.LABEL_INDEX] == str(i)


def test_created_objects_are_owned_by_the_cr_but_retained_pvcs_are_not():
    dp = desired_pool(replicas=1)
    result = plan(desired(dp), observed(cr=shard_cr()), NOW)
    pod = next(a.body for a in result.actions if a.kind == "Pod")
    pvc = next(a.body for a in result.actions if a.kind == "PersistentVolumeClaim")
    assert pod["metadata"]["ownerReferences"][0]["uid"] == "cr-uid-1"
    assert "ownerReferences" not in pvc["metadata"]  # whenDeleted=Retain


def test_healthy_pool_is_a_no_op():
    dp = desired_pool()
    pods, pvcs = healthy(dp)
    result = plan(desired(dp), observed(pods, pvcs, cr=shard_cr()), NOW)
    assert result.actions == []
    assert result.requeue_after == 0.0


def test_missing_pod_is_recreated_on_its_existing_pvc_with_an_event():
    dp = desired_pool()
    pods, pvcs = healthy(dp)
    result = plan(desired(dp), observed([pods[0], pods[2]], pvcs), NOW)
    assert writes(result) == [pods[1]["metadata"]["name"]]
    assert "PodRecreated" in events(result)


def test_missing_pod_reuses_a_free_index_with_data_before_a_fresh_one():
    dp = desired_pool(replicas=3)
    pods = [live_pod(dp, 0), live_pod(dp, 1)]
    pvcs = [live_pvc(dp, 0), live_pvc(dp, 1), live_pvc(dp, 4)]
    result = plan(desired(dp), observed(pods, pvcs), NOW)
    assert writes(result, "apply") == [naming.pod_name(SID, "main", "z1", 4)]


def test_terminal_pods_are_deleted_one_per_pass():
    dp = desired_pool()
    pods, pvcs = healthy(dp)
    pods[1] = live_pod(dp, 1, phase="Failed", ready=False)
    pods[2] = live_pod(dp, 2, phase="Succeeded", ready=False)
    result = plan(desired(dp), observed(pods, pvcs), NOW)
    assert writes(result, "delete", "Pod") == [pods[1]["metadata"]["name"]]
    delete = next(a for a in result.actions if a.verb == "delete")
    assert delete.uid == pods[1]["metadata"]["uid"]
    assert delete.resource_version == pods[1]["metadata"]["resourceVersion"]


def test_pod_is_deleted_only_in_ready_for_deletion():
    dp = desired_pool(replicas=2)
    pods, pvcs = healthy(dp, 3)
    for state in ("requested", "draining", "acknowledged"):
        pods[2] = live_pod(dp, 2, drain=state, reason="scale-down")
        assert writes(plan(desired(dp), observed(pods, pvcs), NOW), "delete", "Pod") == []
    pods[2] = live_pod(dp, 2, drain="ready-for-deletion", reason="scale-down")
    assert writes(plan(desired(dp), observed(pods, pvcs), NOW), "delete", "Pod") == [pods[2]["metadata"]["name"]]


def test_terminating_ready_for_deletion_pod_is_left_to_the_agent():
    """The engine never strips the pod finalizer outside shard deletion: the agent removes it after
    unregistering the pooler."""
    dp = desired_pool(replicas=2)
    pods, pvcs = healthy(dp, 3)
    pods[2] = live_pod(dp, 2, drain="ready-for-deletion", reason="scale-down", terminating=True)
    result = plan(desired(dp), observed(pods, pvcs), NOW)
    assert writes(result) == []
    assert result.requeue_after == 2.0


def test_pod_deleted_from_outside_is_drained_then_recreated_at_its_index():
    dp = desired_pool()
    pods, pvcs = healthy(dp)
    pods[1] = live_pod(dp, 1, terminating=True)
    first = plan(desired(dp), observed(pods, pvcs), NOW)
    assert drains(first) == {pods[1]["metadata"]["name"]: "external-deletion"}
    assert "ExternalDeletion" in events(first)
    assert writes(first, "apply") == []  # it still holds its slot while terminating
    gone = [pods[0], pods[2]]
    second = plan(desired(dp), observed(gone, pvcs), NOW)
    assert writes(second, "apply") == [pods[1]["metadata"]["name"]]
    assert writes(second, "delete") == []  # its PVC is kept and reused


def test_external_deletions_are_drained_one_at_a_time():
    dp = desired_pool()
    pods, pvcs = healthy(dp)
    pods[1] = live_pod(dp, 1, terminating=True)
    pods[2] = live_pod(dp, 2, terminating=True)
    assert list(drains(plan(desired(dp), observed(pods, pvcs), NOW))) == [pods[1]["metadata"]["name"]]


def test_cr_gets_the_shard_finalizer():
    dp = desired_pool()
    pods, pvcs = healthy(dp)
    result = plan(desired(dp), observed(pods, pvcs, cr=shard_cr(finalizers=())), NOW)
    assert [(a.verb, a.kind) for a in result.actions] == [("patch", keys.SHARD_KIND)]
    assert result.actions[0].body == {"metadata": {"finalizers": [keys.FINALIZER_SHARD]}}


def test_pod_labels_are_patched_in_place_without_a_restart():
    dp = desired_pool()
    pods, pvcs = healthy(dp)
    del pods[0]["metadata"]["labels"][keys.LABEL_APP_MANAGED_BY]
    pods[1]["metadata"]["annotations"]["example.com/extra"] = "kept"
    result = plan(desired(dp), observed(pods, pvcs), NOW)
    assert writes(result) == [pods[0]["metadata"]["name"]]
    patch = result.actions[0]
    assert patch.verb == "patch" and patch.resource_version == pods[0]["metadata"]["resourceVersion"]
    assert patch.body["metadata"]["labels"][keys.LABEL_APP_MANAGED_BY] == keys.MANAGED_BY
