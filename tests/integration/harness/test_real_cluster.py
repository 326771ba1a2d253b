"""The harness is a real control plane: optimistic concurrency, garbage collection, the disruption
controller, CEL validation and server-side-apply conflicts all behave as in production."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

pytestmark = pytest.mark.cluster


def eventually(check: Callable[[], bool], timeout: float = 60, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.2)
    raise AssertionError(f"{what} not reached within {timeout}s")


def _pod(name: str, labels: dict[str, str] | None = None, owner: dict | None = None) -> dict:
    meta: dict = {"name": name, "labels": labels or {}}
    if owner:
        meta["ownerReferences"] = [owner]
    return {"metadata": meta, "spec": {"containers": [{"name": "c", "image": "busybox:1.36"}]}}


def test_update_with_stale_resource_version_conflicts(kube, namespace):
    core = client.CoreV1Api(kube.api_client())
    created = core.create_namespaced_config_map(namespace, {"metadata": {"name": "cm"}, "data": {"k": "1"}})
    stale = created.metadata.resource_version
    core.patch_namespaced_config_map("cm", namespace, {"data": {"k": "2"}})
    with pytest.raises(ApiException) as err:
        core.replace_namespaced_config_map("cm", namespace, {
            "metadata": {"name": "cm", "resourceVersion": stale}, "data": {"k": "3"}})
    assert err.value.status == 409
    assert core.read_namespaced_config_map("cm", namespace).data == {"k": "2"}


def test_create_with_resource_version_is_rejected(kube, namespace):
    core = client.CoreV1Api(kube.api_client())
    with pytest.raises(ApiException) as err:
        core.create_namespaced_config_map(namespace, {"metadata": {"name": "cm", "resourceVersion": "1"}})
    assert err.value.status in (409, 422, 500)
    assert "resourceVersion" in err.value.body


def test_deleting_owner_garbage_collects_pod(kube, namespace):
    core = client.CoreV1Api(kube.api_client())
    owner = core.create_namespaced_config_map(namespace, {"metadata": {"name": "owner"}})
    ref = {"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": owner.metadata.uid}
    core.create_namespaced_pod(namespace, _pod("child", owner=ref))
    core.delete_namespaced_config_map("owner", namespace, propagation_policy="Background")

    def gone() -> bool:
        return not any(p.metadata.name == "child" for p in core.list_namespaced_pod(namespace).items)

    eventually(gone, what="garbage collection of the owned pod")


def test_pdb_status_comes_from_disruption_controller(kube, namespace, kubelet):
    core = client.CoreV1Api(kube.api_client())
    policy = client.PolicyV1Api(kube.api_client())
    labels = {"app": "pdb-test"}
    for name in ("p0", "p1"):
        core.create_namespaced_pod(namespace, _pod(name, labels))
        kubelet.mark_ready(namespace, name)
    policy.create_namespaced_pod_disruption_budget(namespace, {
        "metadata": {"name": "pdb"},
        "spec": {"minAvailable": 1, "selector": {"matchLabels": labels}}})

    def allowed(n: int) -> Callable[[], bool]:
        def check() -> bool:
            status = policy.read_namespaced_pod_disruption_budget("pdb", namespace).status
            return status is not None and status.observed_generation == 1 and status.disruptions_allowed == n \
                and status.current_healthy == n + 1
        return check

    eventually(allowed(1), what="disruptionsAllowed=1 with two Ready pods")
    kubelet.mark_not_ready(namespace, "p1")
    eventually(allowed(0), what="disruptionsAllowed=0 once a pod is not Ready")


def test_crd_validation_rule_rejects_bad_object(kube, namespace):
    ext = client.ApiextensionsV1Api(kube.api_client())
    group, plural = "harness.multigres-pools.test", f"widgets{namespace.replace('-', '')}"
    crd = {
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{group}"},
        "spec": {"group": group, "scope": "Namespaced",
                 "names": {"plural": plural, "singular": plural[:-1], "kind": "Widget"},
                 "versions": [{"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {
                     "type": "object",
                     "properties": {"spec": {
                         "type": "object",
                         "properties": {"min": {"type": "integer"}, "max": {"type": "integer"}},
                         "x-kubernetes-validations": [{"rule": "self.min <= self.max",
                                                        "message": "min must not exceed max"}]}}}}}]}}
    ext.create_custom_resource_definition(crd)
    try:
        custom = client.CustomObjectsApi(kube.api_client())

        def established() -> bool:
            status = ext.read_custom_resource_definition(crd["metadata"]["name"]).status
            return any(c.type == "Established" and c.status == "True" for c in (status.conditions or []))

        eventually(established, what="CRD established")
        body = {"apiVersion": f"{group}/v1", "kind": "Widget", "metadata": {"name": "w"}}

        def create(spec: dict) -> object:
            return custom.create_namespaced_custom_object(group, "v1", namespace, plural, body | {"spec": spec})

        with pytest.raises(ApiException) as err:
            create({"min": 5, "max": 1})
        assert err.value.status == 422
        assert "min must not exceed max" in err.value.body
        assert create({"min": 1, "max": 5})
    finally:
        ext.delete_custom_resource_definition(crd["metadata"]["name"])


def test_server_side_apply_reports_conflict_with_other_manager(kube, namespace):
    api = kube.api_client()
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "shared"}, "data": {"owner": "a"}}

    core = client.CoreV1Api(api)

    def apply(manager: str, value: str, force: bool = False) -> object:
        return core.patch_namespaced_config_map(
            "shared", namespace, body | {"data": {"owner": value}}, field_manager=manager, force=force,
            _content_type="application/apply-patch+yaml")

    apply("manager-a", "a")
    with pytest.raises(ApiException) as err:
        apply("manager-b", "b")
    assert err.value.status == 409
    assert "manager-a" in err.value.body
    assert core.read_namespaced_config_map("shared", namespace).data == {"owner": "a"}
    apply("manager-b", "b", force=True)
    assert core.read_namespaced_config_map("shared", namespace).data == {"owner": "b"}
