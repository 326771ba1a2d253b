"""A delete whose object changed between the planner's read and the write (409), on the real API
server: a drained pod is still deleted in the same pass when only something else changed (the kubelet
wrote its status), and never when the reason for the delete went away or it is another object."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from ansible_collections.multigres.pools.plugins.module_utils.core import keys
from ansible_collections.multigres.pools.plugins.module_utils.core.manifest import Manifest
from ansible_collections.multigres.pools.plugins.module_utils.kube.apply import Applier
from ansible_collections.multigres.pools.plugins.module_utils.kube.client import KubeClient
from ansible_collections.multigres.pools.plugins.module_utils.plan import actions
from ansible_collections.multigres.pools.plugins.module_utils.plan.actions import Phase

pytestmark = pytest.mark.cluster

READY = {keys.ANN_DRAIN_STATE: str(keys.DrainState.READY_FOR_DELETION)}


def _pod(client: KubeClient, namespace: str, name: str = "p-0") -> Manifest:
    return client.create({"apiVersion": "v1", "kind": "Pod",
                          "metadata": {"name": name, "namespace": namespace, "annotations": dict(READY)},
                          "spec": {"containers": [{"name": "c", "image": "busybox:1.36"}]}},
                         field_manager="test")


def _annotate(client: KubeClient, namespace: str, name: str, annotations: dict[str, str | None]) -> None:
    client.merge_patch("v1", "Pod", namespace, name, {"metadata": {"annotations": annotations}},
                       field_manager="someone-else")


def _delete_after(client: KubeClient, namespace: str, read: Manifest, meanwhile: Callable[[], None],
                  still: dict[str, str] | None = READY) -> str:
    planned = actions.delete(read, "delete pod: drain complete", Phase.DELETE_POD, still_annotated=still)
    meanwhile()
    [outcome] = Applier(client, namespace, dry_run=False, stamp="2026-11-27T00:00:00Z").run([planned])
    return outcome.result


def test_a_drained_pod_changed_by_someone_else_is_deleted_in_the_same_pass(kube_client, namespace) -> None:
    read = _pod(kube_client, namespace)
    result = _delete_after(kube_client, namespace, read,
                           lambda: _annotate(kube_client, namespace, "p-0", {"kubelet.example/seen": "now"}))
    assert result == "done"
    assert kube_client.counts["get"] == 1  # read once more, then deleted
    assert kube_client.get("v1", "Pod", namespace, "p-0") is None


def test_a_drain_cancelled_meanwhile_is_a_conflict_and_the_pod_stays(kube_client, namespace) -> None:
    read = _pod(kube_client, namespace)
    cancelled: dict[str, str | None] = {keys.ANN_DRAIN_STATE: None}  # how a cancelled drain looks
    assert _delete_after(kube_client, namespace, read,
                         lambda: _annotate(kube_client, namespace, "p-0", cancelled)) == "conflict"
    live = kube_client.get("v1", "Pod", namespace, "p-0")
    assert live is not None and live["metadata"].get("deletionTimestamp") is None


def test_a_pod_recreated_under_the_same_name_is_a_conflict(kube_client, namespace) -> None:
    read = _pod(kube_client, namespace)

    def recreate() -> None:
        kube_client.delete("v1", "Pod", namespace, "p-0")
        _pod(kube_client, namespace)

    assert _delete_after(kube_client, namespace, read, recreate) == "conflict"
    live = kube_client.get("v1", "Pod", namespace, "p-0")
    assert live is not None and live["metadata"]["uid"] != read["metadata"]["uid"]


def test_a_delete_without_its_reasons_is_a_conflict_when_the_object_changed(kube_client, namespace) -> None:
    read = _pod(kube_client, namespace)
    assert _delete_after(kube_client, namespace, read,
                         lambda: _annotate(kube_client, namespace, "p-0", {"kubelet.example/seen": "now"}),
                         still=None) == "conflict"
    assert kube_client.get("v1", "Pod", namespace, "p-0") is not None
