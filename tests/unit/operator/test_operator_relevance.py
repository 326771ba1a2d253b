import copy

from ansible_collections.multigres.pools.plugins.module_utils.core import keys, labels
from ansible_collections.multigres.pools.plugins.module_utils.core.naming import ShardId

from multigres_pools.operator.relevance import Router, fingerprint, shard_id_from_spec

SID = ShardId("demo", "postgres", "default", "0-inf")


def shard(generation: int = 1, **status: object) -> dict:
    return {"apiVersion": keys.API_GROUP_VERSION, "kind": keys.SHARD_KIND,
            "metadata": {"name": "s1", "namespace": "ns", "generation": generation},
            "spec": {"clusterName": "demo"}, "status": status}


def pod(name: str = "p0", owner: bool = True, **status: object) -> dict:
    meta: dict = {"name": name, "namespace": "ns", "labels": labels.pool_labels(SID, "main", "z1"),
                  "resourceVersion": "1"}
    if owner:
        meta["ownerReferences"] = [{"apiVersion": keys.API_GROUP_VERSION, "kind": keys.SHARD_KIND, "name": "s1"}]
    return {"metadata": meta, "spec": {"containers": [{"name": "pg", "image": "pg:1"}]}, "status": status}


def test_shard_id_defaults_follow_the_spec() -> None:
    assert shard_id_from_spec({"clusterName": "demo"}) == SID
    assert shard_id_from_spec({}) is None


def test_status_only_changes_of_the_shard_are_ignored() -> None:
    r = Router()
    assert r.shard_event(None, shard()) == (("ns", "s1"), True, False)
    # our own status write: must never trigger a run (it would loop forever)
    assert r.shard_event("MODIFIED", shard(phase="Healthy", readyReplicas=3)) is None
    assert r.shard_event("MODIFIED", shard(generation=2)) == (("ns", "s1"), True, False)


def test_metadata_changes_of_the_shard_trigger_without_spec_change() -> None:
    r = Router()
    r.shard_event(None, shard())
    deleting = shard()
    deleting["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    assert r.shard_event("MODIFIED", deleting) == (("ns", "s1"), False, False)
    assert r.shard_event("DELETED", deleting) == (("ns", "s1"), False, True)
    assert not r.knows(("ns", "s1"))


def test_pod_noise_is_dropped_and_meaningful_changes_kept() -> None:
    r = Router()
    r.shard_event(None, shard())
    assert r.child_event("Pod", None, pod()) == ("ns", "s1")
    noisy = pod()
    noisy["metadata"]["resourceVersion"] = "2"
    noisy["metadata"]["managedFields"] = [{"manager": "x"}]
    assert r.child_event("Pod", "MODIFIED", noisy) is None
    ready = pod(phase="Running", conditions=[{"type": "Ready", "status": "True", "lastTransitionTime": "t1"}])
    assert r.child_event("Pod", "MODIFIED", ready) == ("ns", "s1")
    heartbeat = copy.deepcopy(ready)
    heartbeat["status"]["conditions"][0]["lastTransitionTime"] = "t2"
    assert r.child_event("Pod", "MODIFIED", heartbeat) is None
    drained = copy.deepcopy(ready)
    drained["metadata"]["annotations"] = {keys.ANN_DRAIN_STATE: "acknowledged"}
    assert r.child_event("Pod", "MODIFIED", drained) == ("ns", "s1")
    assert r.child_event("Pod", "DELETED", drained) == ("ns", "s1")


def test_pvc_without_owner_is_found_by_labels() -> None:
    r = Router()
    r.shard_event(None, shard())
    pvc = pod("data-p0", owner=False)
    assert r.child_event("PersistentVolumeClaim", None, pvc) == ("ns", "s1")
    stranger = pod("x", owner=False)
    stranger["metadata"]["labels"] = labels.pool_labels(ShardId("other", "postgres", "default", "0-inf"), "m", "z")
    assert r.child_event("PersistentVolumeClaim", None, stranger) is None


def test_fingerprint_ignores_resource_version_but_not_images() -> None:
    a, b = pod(), pod()
    b["metadata"]["resourceVersion"] = "99"
    assert fingerprint("Pod", a) == fingerprint("Pod", b)
    b["spec"]["containers"][0]["image"] = "pg:2"
    assert fingerprint("Pod", a) != fingerprint("Pod", b)


def test_fingerprint_sees_a_container_start_waiting_for_its_image() -> None:
    # Phase and pod conditions stay the same (Pending, ContainersNotReady); only the waiting reason says it.
    a, b = pod(), pod()
    for p in (a, b):
        p["status"] = {"phase": "Pending", "containerStatuses": [
            {"name": "multipooler", "state": {"waiting": {"reason": "ContainerCreating"}}}]}
    assert fingerprint("Pod", a) == fingerprint("Pod", b)
    b["status"]["containerStatuses"][0]["state"]["waiting"] = {"reason": "ErrImagePull", "message": "not found"}
    assert fingerprint("Pod", a) != fingerprint("Pod", b)
