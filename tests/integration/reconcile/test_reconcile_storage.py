"""Volumes, PVC policies, the MultigresShard status and shard deletion, on the real apiserver."""

from __future__ import annotations

import pytest
from ansible_collections.multigres.pools.plugins.module_utils.core import keys, naming
from ansible_collections.multigres.pools.plugins.module_utils.state import facts

from tests.integration.reconcile.rig import CELL, POOL, spec

pytestmark = pytest.mark.cluster
SID = naming.ShardId("demo", "postgres", "default", "0-inf")


def _pvc(i: int) -> str:
    return naming.data_pvc_name(SID, POOL, CELL, i)


def _owned_by(obj, cr) -> bool:  # type: ignore[no-untyped-def]
    return any(r.get("uid") == facts.uid(cr) for r in facts.meta(obj).get("ownerReferences") or [])


def test_storage_growth_patches_pvcs_in_place_and_resize_pending_drains(rig, expandable_class):  # type: ignore[no-untyped-def]
    small = spec(2, storage={"size": "1Gi", "class": expandable_class})
    rig.settle(small)
    uids = {n: facts.uid(p) for n, p in rig.pvcs().items()}
    big = spec(2, storage={"size": "2Gi", "class": expandable_class})
    grown = rig.run(big)
    assert [a["name"] for a in grown.actions if a["verb"] == "patch"] == [_pvc(0), _pvc(1)]
    pvcs = rig.pvcs()
    for i in range(2):
        assert pvcs[_pvc(i)]["spec"]["resources"]["requests"]["storage"] == "2Gi"
        assert facts.uid(pvcs[_pvc(i)]) == uids[_pvc(i)]  # patched, not recreated
    rig.kubelet.resize_pending(rig.namespace, _pvc(1))
    replica = naming.pod_name(SID, POOL, CELL, 1)
    rig.agent.publish_roles(primary=naming.pod_name(SID, POOL, CELL, 0))
    drain = rig.run(big)
    assert any(a["name"] == replica and "filesystem-resize" in a["reason"] for a in drain.actions)


def test_shrink_is_refused_and_nothing_is_written(rig):  # type: ignore[no-untyped-def]
    rig.settle(spec(2, storage={"size": "2Gi"}))
    from ansible_collections.multigres.pools.plugins.module_utils.reconcile.shard import Request, run_pass

    rig.client.counts.clear()
    request = Request(namespace=rig.namespace, definition={
        "apiVersion": keys.API_GROUP_VERSION, "kind": keys.SHARD_KIND,
        "metadata": {"name": "demo", "namespace": rig.namespace}, "spec": spec(2, storage={"size": "1Gi"})})
    result = run_pass(rig.client, request)
    assert result.failed and result.writes == 0
    assert result.errors[0].startswith("spec.pools.main.storage.size: 1Gi is smaller than PVC")


def test_cr_status_and_a_second_pass_without_writes(rig, shard_crd):  # type: ignore[no-untyped-def]
    rig.create_cr(spec(2))
    rig.settle(name="demo")
    cr = rig.cr()
    assert keys.FINALIZER_SHARD in facts.finalizers(cr)
    status = cr["status"]
    assert status["phase"] == "Healthy" and status["readyReplicas"] == 2 and status["poolsReady"] is True
    assert sorted(status["podRoles"].values()) == ["PRIMARY", "REPLICA"]
    conditions = {c["type"]: c for c in status["conditions"]}
    assert conditions["Ready"]["status"] == "True" and conditions["Reconciling"]["status"] == "False"
    assert conditions["RollingUpdate"]["message"] == "2/2 pods updated"
    again = rig.run(name="demo")
    assert again.writes == 0 and set(again.requests) <= {"get", "list"}


def test_policy_change_retain_to_delete_adds_owner_references(rig, shard_crd):  # type: ignore[no-untyped-def]
    rig.create_cr(spec(2))
    rig.settle(name="demo")
    cr = rig.cr()
    assert not any(_owned_by(p, cr) for n, p in rig.pvcs().items() if n.startswith("data-"))
    rig.update_cr({"pvcDeletionPolicy": {"whenDeleted": "Delete"}})
    rig.settle(name="demo")
    assert all(_owned_by(p, cr) for n, p in rig.pvcs().items() if n.startswith("data-"))


@pytest.mark.parametrize("policy", ["Retain", "Delete"])
def test_shard_deletion_deletes_pods_directly_and_pvcs_per_policy(rig, shard_crd, policy):  # type: ignore[no-untyped-def]
    rig.create_cr({**spec(2), "pvcDeletionPolicy": {"whenDeleted": policy}})
    rig.settle(name="demo")
    data = sorted(n for n in rig.pvcs() if n.startswith("data-"))
    rig.client.delete(keys.API_GROUP_VERSION, keys.SHARD_KIND, rig.namespace, "demo")
    first = rig.run(name="demo")
    assert not any(a["reason"].startswith("drain pod") for a in first.actions)  # no drain on shard deletion
    assert rig.cr()["metadata"]["annotations"][keys.ANN_TOPOLOGY_CLEANUP] == "requested"
    assert rig.pods() == {}
    assert rig.agent.complete_topology_cleanup("demo")
    last = rig.run(name="demo")
    assert last.finished
    assert rig.cr() is None  # finalizer released, the CR is gone
    left = sorted(n for n in rig.pvcs() if n.startswith("data-"))
    if policy == "Retain":
        assert left == data
        assert not any(facts.meta(p).get("ownerReferences") for p in rig.pvcs().values() if
                       facts.name(p).startswith("data-"))
    else:
        assert left == []


def test_topology_cleanup_is_skipped_after_the_timeout(rig, shard_crd):  # type: ignore[no-untyped-def]
    rig.create_cr(spec(2))
    rig.settle(name="demo")
    rig.client.delete(keys.API_GROUP_VERSION, keys.SHARD_KIND, rig.namespace, "demo")
    rig.run(name="demo", cleanup_timeout=0)
    last = rig.run(name="demo", cleanup_timeout=0)
    assert any(a.get("event", {}).get("reason") == "CleanupSkipped" for a in last.actions)
    assert rig.cr() is None


def test_state_absent_with_a_cr_deletes_the_cr_and_cleans_up(rig, shard_crd):  # type: ignore[no-untyped-def]
    rig.create_cr(spec(2))
    rig.settle(name="demo")
    first = rig.run(name="demo", state="absent", cleanup_timeout=0)
    assert first.changed and rig.pods() == {}
    last = rig.run(name="demo", state="absent", cleanup_timeout=0)
    assert last.finished and rig.cr() is None
