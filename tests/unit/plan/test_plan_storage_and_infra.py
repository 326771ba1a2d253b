"""PVC policy, growth and shrink refusal, append-only topology, shared infrastructure."""

from __future__ import annotations

from ansible_collections.multigres.pools.plugins.module_utils.core import keys, labels, naming
from ansible_collections.multigres.pools.plugins.module_utils.state.desired import PVCPolicy

from .plan_factories import NOW, SID, desired, desired_pool, healthy, live_pvc, observed, plan, shard_cr, writes


def test_policy_change_retain_to_delete_adds_owner_references():
    dp = desired_pool(replicas=2, when_deleted=PVCPolicy.DELETE)
    pods, pvcs = healthy(dp)
    result = plan(desired(dp), observed(pods, pvcs, cr=shard_cr()), NOW)
    assert writes(result, "patch", "PersistentVolumeClaim") == [p["metadata"]["name"] for p in pvcs]
    refs = result.actions[0].body["metadata"]["ownerReferences"]
    assert [r["uid"] for r in refs] == ["cr-uid-1"]
    assert result.actions[0].resource_version == pvcs[0]["metadata"]["resourceVersion"]


def test_policy_change_delete_to_retain_removes_only_our_owner_reference():
    dp = desired_pool(replicas=1, when_deleted=PVCPolicy.RETAIN)
    pods, _ = healthy(dp)
    pvc = live_pvc(dp, 0, owned=True)
    pvc["metadata"]["ownerReferences"].append({"apiVersion": "v1", "kind": "ConfigMap", "name": "x", "uid": "u"})
    result = plan(desired(dp), observed(pods, [pvc], cr=shard_cr()), NOW)
    assert result.actions[0].body["metadata"]["ownerReferences"] == [
        {"apiVersion": "v1", "kind": "ConfigMap", "name": "x", "uid": "u"}]


def test_storage_growth_patches_pvcs_in_place():
    dp = desired_pool(replicas=2, size="2Gi")
    pods, _ = healthy(dp)
    pvcs = [live_pvc(dp, i, size="1Gi") for i in range(2)]
    result = plan(desired(dp), observed(pods, pvcs), NOW)
    grows = [a for a in result.actions if a.verb == "patch"]
    assert [a.body for a in grows] == [{"spec": {"resources": {"requests": {"storage": "2Gi"}}}}] * 2
    assert writes(result, "apply") == [] and writes(result, "delete") == []


def test_equal_quantities_in_other_units_are_not_growth():
    dp = desired_pool(replicas=1, size="1024Mi")
    pods, _ = healthy(dp)
    assert plan(desired(dp), observed(pods, [live_pvc(dp, 0, size="1Gi")]), NOW).actions == []


def test_shrink_is_refused_with_the_field_path_and_nothing_is_written():
    dp = desired_pool(replicas=2, size="1Gi")
    pods, _ = healthy(dp)
    result = plan(desired(dp), observed(pods, [live_pvc(dp, i, size="5Gi") for i in range(2)]), NOW)
    assert result.actions == []
    assert result.errors[0].startswith("spec.pools.main.storage.size: 1Gi is smaller than PVC")


def test_removed_cell_is_refused():
    kept = desired_pool("main", "z1")
    gone = desired_pool("main", "z2")
    pods, pvcs = healthy(kept)
    gpods, gpvcs = healthy(gone)
    result = plan(desired(kept), observed(pods + gpods, pvcs + gpvcs), NOW)
    assert result.actions == []
    assert result.errors == ["spec.pools.main.cells: cell z2 still has pods but is missing; cells are append-only"]


def _service(port: int) -> dict:
    return {"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": naming.headless_service_name(SID, "main", "z1"), "namespace": "db",
                         "labels": labels.pool_labels(SID, "main", "z1")},
            "spec": {"clusterIP": "None", "ports": [{"name": "grpc", "port": port}]}}


def test_shared_objects_are_created_then_left_alone_until_they_differ():
    dp = desired_pool()
    pods, pvcs = healthy(dp)
    want = _service(15270)
    created = plan(desired(dp, objects=(want,)), observed(pods, pvcs, cr=shard_cr()), NOW)
    assert [(a.verb, a.kind) for a in created.actions] == [("apply", "Service")]
    assert created.actions[0].body["metadata"]["ownerReferences"][0]["uid"] == "cr-uid-1"
    live = created.actions[0].body | {"status": {}}
    live["spec"] = {**live["spec"], "ports": [{"name": "grpc", "port": 15270, "protocol": "TCP",
                                                "targetPort": 15270}], "sessionAffinity": "None"}
    same = plan(desired(dp, objects=(want,)), observed(pods, pvcs, cr=shard_cr(), others={"Service": (live,)}), NOW)
    assert same.actions == []
    changed = plan(desired(dp, objects=(_service(15271),)),
                   observed(pods, pvcs, cr=shard_cr(), others={"Service": (live,)}), NOW)
    assert changed.actions[0].reason.endswith("spec.ports[0].port differs from desired")


def test_the_dns_selector_waits_until_no_serving_pod_lacks_the_dns_label():
    """A headless Service created before keys.LABEL_DNS: the new selector would take every pod's name
    out of DNS at once. The pods get the label in place first (one that waits for its turn in a roll
    too, that label only); the selector follows once none that serves lacks it, and a pod whose drain
    has finished (out of DNS on purpose) does not hold it back."""
    dp = desired_pool()
    pods, pvcs = healthy(dp)
    old_selector = labels.pool_selector(SID, "main", "z1")
    want = {**_service(15270), "spec": {**_service(15270)["spec"],
                                        "selector": {**old_selector, keys.LABEL_DNS: keys.DNS_PUBLISHED}}}
    live = {**want, "metadata": {**want["metadata"], "uid": "s", "resourceVersion": "4",
                                 "ownerReferences": [{"uid": "cr-uid-1", "kind": keys.SHARD_KIND}]},
            "spec": {**want["spec"], "selector": old_selector}}
    for pod in pods:
        del pod["metadata"]["labels"][keys.LABEL_DNS]
    pods[1]["metadata"]["annotations"][keys.ANN_SPEC_HASH] = "h0"  # its turn in the roll is still to come

    def run(pods: list) -> object:
        return plan(desired(dp, objects=(want,)), observed(pods, pvcs, cr=shard_cr(), others={"Service": (live,)}),
                    NOW)

    first = run(pods)
    assert writes(first, "apply", "Service") == []
    labelled = {a.name: a.body["metadata"]["labels"] for a in first.actions
                if a.verb == "patch" and a.kind == "Pod" and "labels" in a.body["metadata"]}
    assert sorted(labelled) == [p["metadata"]["name"] for p in pods]
    assert labelled[pods[1]["metadata"]["name"]] == {keys.LABEL_DNS: keys.DNS_PUBLISHED}
    assert all(body[keys.LABEL_DNS] == keys.DNS_PUBLISHED for body in labelled.values())

    for pod in pods[1:]:
        pod["metadata"]["labels"][keys.LABEL_DNS] = keys.DNS_PUBLISHED
    pods[0]["metadata"]["annotations"][keys.ANN_DRAIN_STATE] = str(keys.DrainState.READY_FOR_DELETION)
    second = run(pods)
    (apply,) = [a for a in second.actions if a.verb == "apply" and a.kind == "Service"]
    assert apply.body["spec"]["selector"] == want["spec"]["selector"]
    assert "spec.selector" in apply.reason

    # Once the Service has it, a pod without the label never narrows it back.
    live["spec"]["selector"] = want["spec"]["selector"]
    pods[0]["metadata"]["annotations"].pop(keys.ANN_DRAIN_STATE)
    assert writes(run(pods), "apply", "Service") == []


def test_retained_backup_pvc_loses_our_owner_reference():
    dp = desired_pool(when_deleted=PVCPolicy.RETAIN)
    pods, pvcs = healthy(dp)
    backup = {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
              "metadata": {"name": naming.backup_pvc_name(SID, "z1"), "namespace": "db",
                           "labels": labels.component_labels(SID, keys.COMPONENT_BACKUP)},
              "spec": {"resources": {"requests": {"storage": "10Gi"}}}}
    live = {**backup, "metadata": {**backup["metadata"], "uid": "b", "resourceVersion": "5",
                                   "annotations": {keys.ANN_OWNER_SHARD: "demo"},  # as the engine creates it
                                   "ownerReferences": [{"uid": "cr-uid-1", "kind": keys.SHARD_KIND}]}}
    result = plan(desired(dp, objects=(backup,)), observed(pods, [*pvcs, live], cr=shard_cr()), NOW)
    assert [(a.verb, a.body) for a in result.actions] == [("patch", {"metadata": {"ownerReferences": []}})]
