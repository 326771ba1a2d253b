"""Issue 12 on the real kube-apiserver: every rendered pod passes the `restricted` Pod Security
Standard, the shard's NetworkPolicy selects exactly its own pods (and the agent of the install
bundle, through its namespace), and the CRD refuses hostile settings naming the offending keys.

The apiserver evaluates the label selectors here; nothing on this machine enforces a NetworkPolicy
(the process kubelet has no network plugin), so what traffic it admits is checked in
tests/unit/render/test_security.py from the rendered ports.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
import yaml
from ansible_collections.multigres.pools.plugins.module_utils.core import keys, labels
from ansible_collections.multigres.pools.plugins.module_utils.render import shard as render
from ansible_collections.multigres.pools.plugins.module_utils.spec import model
from kubernetes import client

from multigres_pools.install import bundle
from tests import render_corpus as corpus
from tests.integration.render.test_render_apiserver import ApiError, apply, crd_installed, create  # noqa: F401

pytestmark = pytest.mark.cluster


def _desired(namespace: str, patch: dict[str, Any], name: str = "demo") -> render.Desired:
    return render.desired_state(model.load_spec(corpus.spec(patch)), namespace, owner={"name": name, "uid": "u"})


def _as_pod(template: dict[str, Any], name: str, namespace: str) -> dict[str, Any]:
    """A Deployment's pod template as the Pod its ReplicaSet would create."""
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace, "labels": template["metadata"]["labels"]},
            "spec": copy.deepcopy(template["spec"])}


def _pods(desired: render.Desired) -> list[dict[str, Any]]:
    """Every pod the shard runs: pool pods (without the finalizer, so cleanup is plain) and one pod
    per rendered Deployment."""
    pods = []
    for obj in render.manifests(desired):
        if obj["kind"] == "Pod":
            pod = copy.deepcopy(obj)
            pod["metadata"].pop("finalizers", None)
            pod["metadata"].pop("ownerReferences", None)
            pods.append(pod)
        elif obj["kind"] == "Deployment":
            pods.append(_as_pod(obj["spec"]["template"], f"{obj['metadata']['name']}-x", desired.namespace))
    return pods


@pytest.mark.parametrize("patch", [
    {"multigateway": {"enabled": True}, "monitoring": {"postgresExporter": {"enabled": True}}},
    {**corpus.ERA_A, "monitoring": {"postgresExporter": {"enabled": True}}},
], ids=["v0.1", "era-a"])
def test_every_rendered_pod_is_admitted_under_the_restricted_pod_security_standard(kube, namespace, patch):
    core = client.CoreV1Api(kube.api_client())
    core.patch_namespace(namespace, {"metadata": {"labels": {"pod-security.kubernetes.io/enforce": "restricted",
                                                             "pod-security.kubernetes.io/enforce-version": "latest"}}})
    api = kube.api_client()
    pods = _pods(_desired(namespace, patch))
    assert {c["name"] for p in pods for c in p["spec"]["containers"]} >= {"postgres-exporter", "multiorch"}
    for pod in pods:
        create(api, pod, dry_run=True)
    # The namespace really enforces: the same exporter without runAsNonRoot is refused.
    bad = copy.deepcopy(pods[0])
    for c in bad["spec"]["containers"] + bad["spec"].get("initContainers", []):
        c["securityContext"].pop("runAsNonRoot")
    bad["spec"]["securityContext"].pop("runAsNonRoot")
    with pytest.raises(ApiError) as info:
        create(api, bad, dry_run=True)
    assert info.value.status == 403 and "restricted" in info.value.text, info.value.text


def _selector(sel: dict[str, Any]) -> str:
    return labels.selector_string(sel.get("matchLabels") or {})


def _list(core: client.CoreV1Api, namespace: str, selector: dict[str, Any]) -> set[str]:
    return {p.metadata.name for p in core.list_namespaced_pod(namespace, label_selector=_selector(selector)).items}


@pytest.fixture
def install_namespace(kube):
    """The install bundle's namespace with its operator and agent pods (made here if absent)."""
    core = client.CoreV1Api(kube.api_client())
    ns = keys.INSTALL_NAMESPACE
    made = not any(n.metadata.name == ns for n in core.list_namespace().items)
    if made:
        core.create_namespace({"metadata": {"name": ns}})
    files = bundle.files()
    pods = {}
    for component in ("agent", "operator"):
        template = yaml.safe_load(files[f"{component}-deployment.yaml"])["spec"]["template"]
        pods[component] = _as_pod(template, f"issue12-{component}", ns)
        core.create_namespaced_pod(ns, pods[component])
    try:
        yield ns
    finally:
        for pod in pods.values():
            core.delete_namespaced_pod(pod["metadata"]["name"], ns, grace_period_seconds=0)
        if made:
            core.delete_namespace(ns)


def test_the_network_policy_selects_exactly_the_shards_pods_and_the_bundles_agent(kube, namespace, install_namespace):
    api, core = kube.api_client(), client.CoreV1Api(kube.api_client())
    mine = _desired(namespace, {"multigateway": {"enabled": True}})
    other = _desired(namespace, {"clusterName": "other"}, name="other")
    policy = next(o for o in mine.objects if o["kind"] == "NetworkPolicy")
    apply(api, policy, dry_run=True)
    created = apply(api, {**policy, "metadata": {k: v for k, v in policy["metadata"].items()
                                                 if k != "ownerReferences"}})
    assert created["spec"] == policy["spec"]  # stored as rendered: nothing defaulted or reordered
    for pod in _pods(mine) + _pods(other):
        core.create_namespaced_pod(namespace, pod)
    stranger = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "stranger", "namespace": namespace},
                "spec": {"containers": [{"name": "c", "image": "busybox"}]}}
    core.create_namespaced_pod(namespace, stranger)

    shard_pods = {p["metadata"]["name"] for p in _pods(mine)}
    assert len(shard_pods) == 3 + 2  # three pool pods, multiorch, multigateway
    isolated = _list(core, namespace, policy["spec"]["podSelector"])
    assert isolated == shard_pods  # not the other shard's, not the stranger
    internal, agent, clients, _metrics = policy["spec"]["ingress"]
    assert _list(core, namespace, internal["from"][0]["podSelector"]) == shard_pods
    # The agent peer: a namespace by name (its label is set by the apiserver), then the bundle's agent only.
    (peer,) = agent["from"]
    namespaces = client.CoreV1Api(api).list_namespace(label_selector=_selector(peer["namespaceSelector"])).items
    assert [n.metadata.name for n in namespaces] == [install_namespace]
    assert _list(core, install_namespace, peer["podSelector"]) == {"issue12-agent"}
    # Default clients: every pod of the shard's namespace, the stranger included.
    assert clients["from"] == [{"podSelector": {}}]
    assert "stranger" in _list(core, namespace, clients["from"][0]["podSelector"])


@pytest.mark.parametrize(("patch", "words"), [
    ({"postgresConfig": {"work_mem": "8MB\nfsync = off", "search_path": "ok"}},
     ["spec.postgresConfig", ": work_mem (rule: postgres-config-single-line)"]),
    ({"postgresConfig": {"hba_file": "/tmp/x", "work_mem": "8MB"}},
     ["spec.postgresConfig", ": hba_file (rule: postgres-config-owned-settings)"]),
    ({"multiorch": {"podLabels": {"multigres.com/role": "PRIMARY", "team": "db"}}},
     ["spec.multiorch.podLabels", ": multigres.com/role (rule: pod-labels-not-owned)"]),
    ({"multiorch": {"podAnnotations": {"pools.multigres.com/switchover": "x", "note": "y"}}},
     ["spec.multiorch.podAnnotations", ": pools.multigres.com/switchover (rule: pod-annotations-not-owned)"]),
], ids=["newline", "owned-setting", "owned-label", "owned-annotation"])
def test_the_crd_names_the_offending_key(crd_installed, namespace, patch, words):  # noqa: F811
    with pytest.raises(ApiError) as info:
        create(crd_installed, corpus.document("demo", namespace, corpus.spec(patch)))
    assert info.value.status == 422
    for word in words:
        assert word in info.value.text, info.value.text
