"""Rendered objects against the real kube-apiserver and kube-controller-manager.

The CRD is accepted and its CEL rules (including transition rules on update) reject the same bad
specs the Python model rejects; everything the renderer emits passes server-side-apply dry-run with
strict field validation; applying twice changes nothing; and the PDB, with Ready pods, allows
exactly one disruption.
"""

from __future__ import annotations

import json
import re
import time
import urllib.parse
from typing import Any

import pytest
from ansible_collections.multigres.pools.plugins.module_utils.core import keys, labels
from ansible_collections.multigres.pools.plugins.module_utils.render import shard as render
from ansible_collections.multigres.pools.plugins.module_utils.spec import model

from multigres_pools.install import crd
from tests import render_corpus as corpus

pytestmark = pytest.mark.cluster

_PLURALS = {
    "Pod": "pods", "PersistentVolumeClaim": "persistentvolumeclaims", "Service": "services",
    "ConfigMap": "configmaps", "PodDisruptionBudget": "poddisruptionbudgets", "Deployment": "deployments",
    "NetworkPolicy": "networkpolicies",
    keys.SHARD_KIND: keys.SHARD_PLURAL, "CustomResourceDefinition": "customresourcedefinitions",
}


class ApiError(Exception):
    def __init__(self, status: int, body: dict[str, Any]):
        super().__init__(f"HTTP {status}: {body.get('message')}")
        self.status = status
        self.body = body

    @property
    def text(self) -> str:
        """Message and causes with map keys spelled like the model's paths (`a[k].b` -> `a.k.b`)."""
        details = self.body.get("details", {}).get("causes", [])
        causes = [f"{c.get('field', '')}: {c.get('message', '')}" for c in details]
        joined = " | ".join([self.body.get("message", ""), *causes])
        return re.sub(r"\[([^\]\d][^\]]*)\]", r".\1", joined)


def _path(obj: dict[str, Any], with_name: bool = True) -> str:
    version = obj["apiVersion"]
    prefix = "/api/v1" if version == "v1" else f"/apis/{version}"
    namespace = obj["metadata"].get("namespace")
    base = f"{prefix}/namespaces/{namespace}" if namespace else prefix
    path = f"{base}/{_PLURALS[obj['kind']]}"
    return f"{path}/{obj['metadata']['name']}" if with_name else path


def _call(api, method: str, path: str, body: Any = None, query=(), content_type="application/json") -> dict:
    url = api.configuration.host + path + (f"?{urllib.parse.urlencode(list(query))}" if query else "")
    headers = {"Accept": "application/json", "Content-Type": content_type}
    api.update_params_for_auth(headers, [], ["BearerToken"], path, method, body)
    response = api.call_api(method, url, header_params=headers, body=body)
    response.read()
    data = json.loads(response.data or b"{}")
    if response.status >= 300:
        raise ApiError(response.status, data)
    return data


def apply(api, obj: dict[str, Any], *, dry_run: bool = False) -> dict:
    query = [("fieldManager", keys.FIELD_MANAGER), ("force", "true"), ("fieldValidation", "Strict")]
    if dry_run:
        query.append(("dryRun", "All"))
    return _call(api, "PATCH", _path(obj), obj, query, "application/apply-patch+yaml")


def create(api, obj: dict[str, Any], *, dry_run: bool = True) -> dict:
    """A plain create (what `kubectl create --dry-run=server` sends); rejected input comes back as 400/422,
    where server-side apply reports type errors as 500 'failed to create typed patch object'."""
    query = [("fieldValidation", "Strict")] + ([("dryRun", "All")] if dry_run else [])
    return _call(api, "POST", _path(obj, with_name=False), obj, query)


def get(api, obj: dict[str, Any]) -> dict:
    return _call(api, "GET", _path(obj))


@pytest.fixture(scope="session")
def crd_installed(kube):
    api = kube.api_client()
    apply(api, crd.shard_crd())
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        conditions = (get(api, crd.shard_crd()).get("status") or {}).get("conditions") or []
        if any(c["type"] == "Established" and c["status"] == "True" for c in conditions):
            return api
        time.sleep(0.2)
    raise AssertionError(f"CRD not established: {conditions}")


def _shard(namespace: str, patch=None, name="demo") -> dict[str, Any]:
    return corpus.document(name, namespace, corpus.spec(patch))


RICH = {
    "pools": {"default": {"cells": ["zone1", "zone2"], "replicasPerCell": 3,
                          "tolerations": [{"key": "db", "operator": "Exists", "effect": "NoSchedule"}],
                          "affinity": {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{
                              "weight": 100, "podAffinityTerm": {"topologyKey": "kubernetes.io/hostname",
                                                                 "labelSelector": {"matchLabels": {"a": "b"}}}}]}},
                          "postgres": {"resources": {"requests": {"cpu": "500m", "memory": "1Gi"}}}},
              "reporting": {"cells": ["zone1"], "replicasPerCell": 1, "storage": {"size": "2Gi", "class": "fast"}}},
    "cellTopologyLabels": {"zone1": {"topology.kubernetes.io/zone": "a"},
                           "zone2": {"topology.kubernetes.io/zone": "b"}},
    "postgresConfig": {"max_connections": "200"},
    "postgresConfigRef": {"name": "pg-template"},
    "initdbArgs": "--data-checksums",
    "images": {"imagePullSecrets": [{"name": "regcred"}]},
    "multiorch": {"podLabels": {"team": "db"}, "podAnnotations": {"note": "x"}},
    "backup": {"pgbackrestTLS": {"mode": "secret", "secretName": "my-tls"}},
}
S3 = {"backup": {"type": "s3", "s3": {"bucket": "bkt", "region": "eu-west-1", "serviceAccountName": "pg"}}}
# v0.1.0 (the default) with everything it alone renders: the gateway, the intervals, no exporter.
RICH_V0_1 = {**RICH, "multigateway": {"enabled": True, "cells": ["zone2"], "tolerations": RICH["pools"]["default"][
    "tolerations"]}, "multiorch": {**RICH["multiorch"], "poolerHealthCheckInterval": "500ms",
                                   "recoveryCycleInterval": "500ms"},
             "monitoring": {"postgresExporter": {"enabled": False}}}
RICH_ERA_A = {**RICH, **corpus.ERA_A}


def test_generated_crd_is_established(crd_installed):
    served = get(crd_installed, crd.shard_crd())
    assert served["spec"]["versions"][0]["subresources"] == {"status": {}}


@pytest.mark.parametrize("patch", [{}, RICH, RICH_V0_1, S3, corpus.ERA_A, RICH_ERA_A, {**S3, **corpus.ERA_A}],
                         ids=["minimal", "rich", "rich-v0.1-gateway", "s3", "era-a", "era-a-rich", "era-a-s3"])
def test_everything_rendered_passes_server_side_apply_dry_run(crd_installed, namespace, patch):
    cr = _shard(namespace, patch)
    created = apply(crd_installed, cr)
    spec = model.load_spec(cr["spec"])
    desired = render.desired_state(spec, namespace, owner={"name": "demo", "uid": created["metadata"]["uid"]},
                                   referenced_config_hash="0" * 64)
    objects = render.manifests(desired)
    assert len(objects) > 10
    for obj in objects:
        apply(crd_installed, obj, dry_run=True)


@pytest.mark.parametrize("patch", [RICH_V0_1, RICH_ERA_A], ids=["v0.1", "era-a"])
def test_applying_twice_changes_nothing(crd_installed, namespace, patch):
    cr = _shard(namespace, patch)
    created = apply(crd_installed, cr)
    desired = render.desired_state(model.load_spec(cr["spec"]), namespace,
                                   owner={"name": "demo", "uid": created["metadata"]["uid"]})
    objects = [cr, *render.manifests(desired)]
    for obj in objects:
        apply(crd_installed, obj)
    changed = [(o["kind"], o["metadata"]["name"]) for o in objects if _second_apply_writes(crd_installed, o)]
    assert changed == []
    # ... and a fresh render of the same spec is identical, so the next reconcile is a no-op too.
    again = render.manifests(render.desired_state(model.load_spec(cr["spec"]), namespace,
                                                  owner={"name": "demo", "uid": created["metadata"]["uid"]}))
    assert again == objects[1:]


def _second_apply_writes(api, obj: dict[str, Any]) -> bool:
    """Whether re-applying `obj` bumps its resourceVersion. kube-controller-manager also writes some
    objects (the PV controller annotates PVCs), so a bump between our read and our apply is retried."""
    for _ in range(3):
        before = get(api, obj)["metadata"]["resourceVersion"]
        if apply(api, obj)["metadata"]["resourceVersion"] == before:
            return False
        time.sleep(1)
    return True


def _pdb_status(api, pdb) -> dict[str, Any]:
    return get(api, pdb).get("status", {})


def _wait_pdb(api, pdb, allowed: int, healthy: int = 3) -> dict[str, Any]:
    """Until the disruption controller has counted `healthy` of the 3 pods (0 disruptions are allowed
    before that too, so the count is what says it has seen them all Ready)."""
    deadline = time.monotonic() + 90
    status: dict[str, Any] = {}
    while time.monotonic() < deadline:
        status = _pdb_status(api, pdb)
        if status.get("observedGeneration") == get(api, pdb)["metadata"]["generation"] and \
                status.get("disruptionsAllowed") == allowed and status.get("expectedPods") == 3 and \
                status.get("currentHealthy") == healthy:
            return status
        time.sleep(0.5)
    raise AssertionError(f"PDB never allowed {allowed} disruption(s) with {healthy} healthy pods: {status}")


def test_pdb_refuses_every_eviction_even_with_all_pods_ready(crd_installed, namespace, kubelet):
    """Pool pods leave only through our drain (plan/maintenance.py for cordoned nodes), never by eviction."""
    cr = _shard(namespace, {"pools": {"default": {"replicasPerCell": 3}}})
    created = apply(crd_installed, cr)
    desired = render.desired_state(model.load_spec(cr["spec"]), namespace,
                                   owner={"name": "demo", "uid": created["metadata"]["uid"]})
    for obj in render.manifests(desired):
        apply(crd_installed, obj)
    (pdb,) = [o for o in desired.objects if o["kind"] == "PodDisruptionBudget"]
    selector = labels.selector_string(labels.pool_selector(desired.shard, "default", "zone1"))
    kubelet.mark_all_ready(namespace, selector)
    status = _wait_pdb(crd_installed, pdb, 0)
    assert (status["currentHealthy"], status["desiredHealthy"]) == (3, 3)
    # The eviction API says so to `kubectl drain`: 429, which it retries while our drain moves the pod.
    name = desired.pools[0].pod(2)["metadata"]["name"]
    with pytest.raises(ApiError) as refused:
        _call(crd_installed, "POST", f"/api/v1/namespaces/{namespace}/pods/{name}/eviction",
              {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": name, "namespace": namespace}})
    assert refused.value.status == 429 and "disruption budget" in refused.value.body["message"], refused.value.body


@pytest.mark.parametrize("case", corpus.cases("invalid"))
def test_apiserver_rejects_every_bad_spec(crd_installed, namespace, case):
    with pytest.raises(ApiError) as info:
        create(crd_installed, _shard(namespace, case["patch"]))
    assert info.value.status in (400, 422), info.value.body
    text = info.value.text
    assert case["path"] in text, text
    if case.get("rule"):
        assert f"(rule: {case['rule']})" in text, text


@pytest.mark.parametrize("case", corpus.cases("forbidden_updates"))
def test_apiserver_enforces_transition_rules(crd_installed, namespace, case):
    apply(crd_installed, _shard(namespace, case["old"]))
    with pytest.raises(ApiError) as info:
        apply(crd_installed, _shard(namespace, case["new"]), dry_run=True)
    assert info.value.status == 422, info.value.body
    assert f"(rule: {case['rule']})" in info.value.text and case["path"] in info.value.text, info.value.text


@pytest.mark.parametrize("case", corpus.cases("allowed_updates"))
def test_apiserver_allows_the_allowed_updates(crd_installed, namespace, case):
    apply(crd_installed, _shard(namespace, case["old"]))
    apply(crd_installed, _shard(namespace, case["new"]), dry_run=True)


def test_the_go_operators_max_unavailable_would_never_allow_a_disruption(crd_installed, namespace, kubelet):
    """Why the PDB uses minAvailable: for maxUnavailable the disruption controller needs the pods'
    controller with a scale subresource, and a MultigresShard has none; it fails to sync."""
    cr = _shard(namespace, {"pools": {"default": {"replicasPerCell": 3}}})
    created = apply(crd_installed, cr)
    desired = render.desired_state(model.load_spec(cr["spec"]), namespace,
                                   owner={"name": "demo", "uid": created["metadata"]["uid"]})
    (pdb,) = [o for o in desired.objects if o["kind"] == "PodDisruptionBudget"]
    pdb = {**pdb, "spec": {"maxUnavailable": 1, "selector": pdb["spec"]["selector"]}}
    for obj in [o for o in render.manifests(desired) if o["kind"] != "PodDisruptionBudget"] + [pdb]:
        apply(crd_installed, obj)
    kubelet.mark_all_ready(namespace, labels.selector_string(labels.pool_selector(desired.shard, "default", "zone1")))
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        status = _pdb_status(crd_installed, pdb)
        reasons = {c["type"]: c.get("reason") for c in status.get("conditions") or []}
        if reasons.get("DisruptionAllowed") == "SyncFailed":
            assert status.get("disruptionsAllowed", 0) == 0
            return
        assert status.get("disruptionsAllowed", 0) == 0, status
        time.sleep(0.5)
    raise AssertionError(f"expected the disruption controller to fail to sync: {status}")
