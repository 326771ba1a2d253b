"""Shard deletion: no drain, PVCs per whenDeleted, topology cleanup handshake with a timeout."""

from __future__ import annotations

import datetime as dt

from ansible_collections.multigres.pools.plugins.module_utils.core import keys
from ansible_collections.multigres.pools.plugins.module_utils.state.desired import PVCPolicy

from .plan_factories import (
    NOW,
    desired,
    desired_pool,
    drains,
    events,
    healthy,
    live_pvc,
    observed,
    plan,
    shard_cr,
    writes,
)

REQUESTED = {keys.ANN_TOPOLOGY_CLEANUP: "requested", keys.ANN_TOPOLOGY_CLEANUP_REQUESTED_AT: "2026-05-01T11:59:00Z"}


def test_pods_are_deleted_directly_and_released_without_a_drain():
    dp = desired_pool()
    pods, pvcs = healthy(dp)
    result = plan(desired(dp), observed(pods, pvcs, cr=shard_cr(deleting=True)), NOW)
    assert drains(result) == {}
    names = [p["metadata"]["name"] for p in pods]
    assert writes(result, "delete", "Pod") == names
    assert writes(result, "unfinalize", "Pod") == names
    assert writes(result, "patch", keys.SHARD_KIND) == ["demo"]  # topology cleanup requested
    assert writes(result, "delete", "PersistentVolumeClaim") == []  # not before the pods are gone
    assert not result.finished


def test_pvcs_follow_when_deleted_once_pods_are_gone():
    keep = desired_pool("main", "z1", when_deleted=PVCPolicy.RETAIN)
    drop = desired_pool("main", "z2", when_deleted=PVCPolicy.DELETE)
    kept = [live_pvc(keep, 0, owned=True)]
    dropped = [live_pvc(drop, 0, owned=True)]
    cr = shard_cr(deleting=True, annotations={keys.ANN_TOPOLOGY_CLEANUP: "done"})
    result = plan(desired(keep, drop), observed([], kept + dropped, cr=cr), NOW)
    assert writes(result, "delete", "PersistentVolumeClaim") == [dropped[0]["metadata"]["name"]]
    strip = next(a for a in result.actions if a.verb == "patch")
    assert strip.name == kept[0]["metadata"]["name"] and strip.body == {"metadata": {"ownerReferences": []}}
    assert result.actions[-1].verb == "unfinalize" and result.actions[-1].kind == keys.SHARD_KIND
    assert result.finished


def test_finalizer_waits_for_the_agent_cleanup_then_skips_after_the_timeout():
    dp = desired_pool()
    cr = shard_cr(deleting=True, annotations=REQUESTED)
    waiting = plan(desired(dp), observed([], [], cr=cr), NOW)
    assert writes(waiting, "unfinalize") == [] and waiting.requeue_after == 2.0
    late = NOW + dt.timedelta(minutes=3)
    skipped = plan(desired(dp), observed([], [], cr=cr), late)
    assert "CleanupSkipped" in events(skipped)
    assert writes(skipped, "unfinalize") == ["demo"]


def test_vars_mode_deletion_removes_objects_without_a_cr():
    dp = desired_pool(when_deleted=PVCPolicy.DELETE)
    _, pvcs = healthy(dp)
    svc = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "svc", "uid": "s", "resourceVersion": "1"}}
    result = plan(desired(dp), observed([], pvcs, others={"Service": (svc,)}), NOW, delete=True)
    assert writes(result, "delete") == [p["metadata"]["name"] for p in pvcs] + ["svc"]
    assert result.finished
