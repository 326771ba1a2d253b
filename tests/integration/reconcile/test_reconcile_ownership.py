"""Ownership, not labels, on the real apiserver: a pod, a PVC and a MultigresShard made with copied
labels (in the shard's namespace and in another) leave every object of the real shard untouched,
and a second MultigresShard for the same cluster/database/shard takes nothing over."""

from __future__ import annotations

import copy

import pytest
from ansible_collections.multigres.pools.plugins.module_utils.core import keys, naming
from ansible_collections.multigres.pools.plugins.module_utils.reconcile.shard import Request, run_pass
from ansible_collections.multigres.pools.plugins.module_utils.state import facts

from tests.helpers.polling import eventually
from tests.integration.reconcile.rig import CELL, POOL, spec

pytestmark = pytest.mark.cluster
SID = naming.ShardId("demo", "postgres", "default", "0-inf")


def _state(rig) -> dict[str, tuple[str, str | None]]:  # type: ignore[no-untyped-def]
    """Every object of the shard's kinds in its namespace: name -> (uid, resourceVersion). A PDB's
    status is the disruption controller's (it counts every pod its selector matches, forged ones
    too), so for PDBs the generation stands in: it moves only when someone writes the spec."""
    out = {}
    for kind in ("Pod", "PersistentVolumeClaim", "Service", "ConfigMap", "PodDisruptionBudget", "Secret"):
        for obj in rig.client.list("v1" if kind != "PodDisruptionBudget" else "policy/v1", kind, rig.namespace):
            version = str(facts.meta(obj).get("generation")) if kind == "PodDisruptionBudget" else \
                facts.resource_version(obj)
            out[f"{kind}/{facts.name(obj)}"] = (facts.uid(obj), version)
    return out


def _forge(rig, namespace: str, index: int) -> list[str]:  # type: ignore[no-untyped-def]
    """A pod and a PVC copied from the real shard's index 0 (labels, annotations, spec), under the
    names the shard would give index `index`, without its ownership."""
    real_pod = rig.pods()[naming.pod_name(SID, POOL, CELL, 0)]
    real_pvc = rig.pvcs()[naming.data_pvc_name(SID, POOL, CELL, 0)]
    pvc_name = naming.data_pvc_name(SID, POOL, CELL, index)
    pvc = {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
           "metadata": {"name": pvc_name, "namespace": namespace,
                        "labels": {**facts.labels(real_pvc), keys.LABEL_INDEX: str(index)},
                        # the mark names the shard, but a forger from another namespace cannot make it ours
                        "annotations": dict(facts.annotations(real_pvc))},
           "spec": copy.deepcopy(real_pvc["spec"])}
    pvc["spec"].pop("volumeName", None)
    if namespace == rig.namespace:
        pvc["metadata"]["annotations"].pop(keys.ANN_OWNER_SHARD, None)
    pod_spec = copy.deepcopy(real_pod["spec"])
    pod_spec.pop("nodeName", None)
    for vol in pod_spec.get("volumes") or []:
        if vol.get("persistentVolumeClaim"):
            vol["persistentVolumeClaim"]["claimName"] = pvc_name
    pod = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": naming.pod_name(SID, POOL, CELL, index), "namespace": namespace,
                        "labels": {**facts.labels(real_pod), keys.LABEL_INDEX: str(index)},
                        "annotations": dict(facts.annotations(real_pod))},
           "spec": pod_spec}
    rig.client.create(pvc, field_manager="forger")
    rig.client.create(pod, field_manager="forger")
    return [f"Pod/{pod['metadata']['name']}", f"PersistentVolumeClaim/{pvc_name}"]


def _cr(namespace: str, name: str, body: dict) -> dict:
    return {"apiVersion": keys.API_GROUP_VERSION, "kind": keys.SHARD_KIND,
            "metadata": {"name": name, "namespace": namespace}, "spec": copy.deepcopy(body)}


def _touched(result) -> list[str]:  # type: ignore[no-untyped-def]
    return [f"{a['kind']}/{a['name']}" for a in result.actions if a["verb"] != "event"]


def test_forged_pod_pvc_and_cr_leave_the_real_shard_untouched(rig, shard_crd, other_namespace):  # type: ignore[no-untyped-def]
    body = spec(2)
    rig.create_cr(body)
    rig.settle(name="demo")
    before = _state(rig)
    forged = _forge(rig, rig.namespace, 2) + _forge(rig, other_namespace, 0)
    rig.client.create(_cr(other_namespace, "demo", body), field_manager="forger")
    rig.client.create(_cr(rig.namespace, "copycat", body), field_manager="forger")
    forged_state = {k: v for k, v in _state(rig).items() if k not in before}
    assert sorted(forged_state) == sorted(forged[:2])

    # The real shard: two passes; the first reports the foreigners, neither touches anything else.
    first = rig.run(name="demo")
    assert [t for t in _touched(first) if not t.startswith(keys.SHARD_KIND)] == []
    assert any(e.get("reason") == "ForeignObjects" and forged[0].split("/")[1] in e.get("message", "")
               for e in rig.client.list("v1", "Event", rig.namespace))
    cond = {c["type"]: c for c in rig.cr()["status"]["conditions"]}[keys.ShardCondition.FOREIGN_OBJECTS]
    assert cond["status"] == "True" and forged[0].split("/")[1] in cond["message"]
    assert rig.cr()["status"]["readyReplicas"] == 2
    second = rig.run(name="demo")
    assert second.writes == 0
    after = _state(rig)
    assert {k: after[k] for k in before} == before  # same uid, same resourceVersion: untouched
    assert {k: after[k] for k in forged_state} == forged_state  # the forged ones too: not adopted, not deleted

    # The copycat MultigresShard (same cluster/database/shard, other name) is refused and writes nothing else.
    copy_result = run_pass(rig.client, Request(namespace=rig.namespace, name="copycat"))
    assert copy_result.failed and "already run by MultigresShard demo" in copy_result.errors[0]
    assert [t for t in _touched(copy_result) if not t.startswith(keys.SHARD_KIND)] == []
    copycat = rig.client.get(keys.API_GROUP_VERSION, keys.SHARD_KIND, rig.namespace, "copycat")
    conditions = {c["type"]: c for c in copycat["status"]["conditions"]}
    assert conditions["ConfigurationValid"]["status"] == "False" and conditions["Stalled"]["status"] == "True"
    assert keys.FINALIZER_SHARD not in facts.finalizers(copycat)
    # ... and deleting it deletes nothing of the real shard.
    rig.client.delete(keys.API_GROUP_VERSION, keys.SHARD_KIND, rig.namespace, "copycat")
    assert rig.client.get(keys.API_GROUP_VERSION, keys.SHARD_KIND, rig.namespace, "copycat") is None

    # The MultigresShard in the other namespace sees only its namespace.
    run_pass(rig.client, Request(namespace=other_namespace, name="demo", check_mode=True))
    final = _state(rig)
    assert {k: final[k] for k in before} == before


def test_shard_deletion_deletes_only_its_own_pods_and_pvcs(rig, shard_crd):  # type: ignore[no-untyped-def]
    rig.create_cr({**spec(2), "pvcDeletionPolicy": {"whenDeleted": "Delete"}})
    rig.settle(name="demo")
    forged = _forge(rig, rig.namespace, 3)
    forged_before = {k: v for k, v in _state(rig).items() if k in forged}
    rig.client.delete(keys.API_GROUP_VERSION, keys.SHARD_KIND, rig.namespace, "demo")
    for _ in range(5):
        if rig.run(name="demo", cleanup_timeout=0).finished:
            break
    assert rig.cr() is None
    left = _state(rig)
    assert {k: left.get(k) for k in forged} == forged_before
    assert naming.pod_name(SID, POOL, CELL, 0) not in rig.pods()


def test_retained_pvcs_are_taken_back_by_a_shard_recreated_under_the_same_name(rig, shard_crd):  # type: ignore[no-untyped-def]
    rig.create_cr(spec(2))
    rig.settle(name="demo")
    data = naming.data_pvc_name(SID, POOL, CELL, 0)
    uid = facts.uid(rig.pvcs()[data])
    rig.client.delete(keys.API_GROUP_VERSION, keys.SHARD_KIND, rig.namespace, "demo")
    for _ in range(5):
        if rig.run(name="demo", cleanup_timeout=0).finished:
            break
    assert rig.cr() is None and facts.uid(rig.pvcs()[data]) == uid
    rig.create_cr(spec(2))
    # The deleted shard's generated Secrets hold the names the new one generates: until the garbage
    # collector removes them, a pass waits (it neither fails nor takes them over). The collector may
    # already be done (it reacts within seconds once it watches the CRD): then the pass just proceeds.
    first = rig.run(name="demo")
    if any("garbage-collected" in line for line in first.waiting):
        assert [a for a in first.actions if a["verb"] != "event"] == []  # status and events only

    def collected() -> bool:
        return not [s for s in rig.client.list("v1", "Secret", rig.namespace)
                    if any(r.get("kind") == keys.SHARD_KIND and r.get("uid") != facts.uid(rig.cr())
                           for r in facts.meta(s).get("ownerReferences") or [])]
    eventually(collected, 180, "the garbage collector to remove the deleted shard's Secrets", interval=1)
    rig.settle(name="demo")
    # On their old PVCs, not at new indices.
    assert sorted(rig.pods()) == [naming.pod_name(SID, POOL, CELL, i) for i in range(2)]
    assert facts.uid(rig.pvcs()[data]) == uid
